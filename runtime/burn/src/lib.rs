//! blaze-burn: what a Burn program links to use Blaze.
//!
//! * [`init`]: one call at start-up. Loads a bundle (or a plan file), keeps the entries made for
//!   this device and Burn version, and installs the one whose op stream the program runs, from
//!   the sync after its second step; a switch from training to evaluation installs the other.
//!   Never panics; when nothing fits, Burn's own plan stays and one warning says why. Before
//!   that it imports the bundle's CubeCL autotune decisions for this device ([`seed_autotune`]).
//! * [`step_boundary`]: one device sync at the start of every step. Plans name operations by
//!   their index since the last sync (the patched fuser counts from there), and a step whose
//!   loss is read back does not always drain the stream, so without it a plan would apply to
//!   the first step only and the watch could not recognise a step.
//! * [`capture`]: recording a step with CubeCL's graph capture through the calls that return
//!   the real error ([`record`]), and [`StableInput`], a step input refreshed in place, for a
//!   model's `blaze_runtime::RecordableStep` (captured execution, plan version 4).
//! * [`DeviceAdam`]: Burn's Adam or AdamW (from `AdamConfig`/`AdamWConfig`: weight decay,
//!   AMSGrad, gradient clipping) whose parameters, moments and step scalars stay in their device
//!   buffers, so a recorded training step replays correctly; Burn's records, and, converted into
//!   Burn's `ModuleOptimizer`, usable wherever Burn's optimizers are ([`HeldAdam`] is its
//!   `burn::optim::Optimizer`).
//! * [`DeviceDropout`]: dropout whose masks are drawn on the device from a seed written before
//!   each step, so a recorded training step drops other units on every replay (Burn's
//!   dropout draws from a host seed, which a recording keeps); [`SeededDropout`]
//!   (`SeededDropoutConfig::new(p).init()`) is the same as a module in a model, its forward
//!   taking the step's seed.
//! * [`CapturedForward`]: a user's own forward step (an inference or evaluation loop)
//!   captured: recorded after warm-up, its first replays checked against eager execution,
//!   eager with one warning on any failure or mismatch. Made with `from_bundle`, the bundle
//!   decides: the entry its watch installed for the op stream the program runs, else its own
//!   captured entry of that regime ([`BundleHandle::captures`], [`Captures`]).
//! * [`CapturedTraining`]: the same for a user's own training step with [`DeviceAdam`]: its
//!   first replays are checked against an eager step from the same state (outputs and
//!   parameters).
//! * [`DeviceBlockTimer`]: device time of each executed block (CubeCL profile windows on the
//!   fusion thread), for `blazec profile`.
//! * [`init_params`], [`device_info`]: what an implementation of `blaze_runtime::Model`
//!   needs so that blazec can trace, verify and time it (seeded weights drawn at build time,
//!   the device described for plan contracts).
//!
//! Unlike blaze-runtime, this crate queries the wgpu adapter (to describe the device); it
//! still runs no tensor operation of its own except reading parameters in [`init_params`].
pub mod autotune;
pub mod capture;
pub mod captured_step;
pub mod captured_training;
pub mod device;
pub mod device_adam;
pub mod device_dropout;
pub mod device_timer;
mod params;
pub mod tunable;

pub use autotune::{Seeded, seed_autotune, seed_shipped};
pub use blaze_ir::plan::Regime;
pub use blaze_runtime::{BundleHandle, CaptureSource, Captures, Description, Model, ModelFactory, StepOutput};
pub use capture::{StableInput, record};
pub use captured_step::CapturedForward;
pub use captured_training::CapturedTraining;
pub use device::{COMPILER, default_device, device_details, device_info};
pub use device_adam::{DeviceAdam, HeldAdam};
pub use device_dropout::{DeviceDropout, SeededDropout, SeededDropoutConfig};
pub use device_timer::{DeviceBlockTimer, DeviceSpans};
pub use params::{init_params, parameter_values};
pub use tunable::Tunable;

/// What a `Model` step reports: the loss read back (a sync), then the logits when asked
/// (`read_logits`). The logits are read by reference from a tensor the step keeps alive either
/// way, so a step that reads them registers no operation a plain step does not; `classes` is
/// their values per row.
pub fn step_output<const D: usize>(
    loss: burn::tensor::Tensor<1>,
    logits: &burn::tensor::Tensor<D>,
    classes: usize,
    read_logits: bool,
) -> StepOutput {
    let loss = loss.into_data().try_to_vec::<f32>().ok().and_then(|v| v.first().copied()).unwrap_or(f32::NAN);
    let logits = match read_logits {
        true => logits.to_data().try_to_vec::<f32>().unwrap_or_default(),
        false => Vec::new(),
    };
    StepOutput { loss, logits, classes }
}

/// Marks the start of a step: syncs `device`, so the step's operations are indexed from here
/// (see the crate docs). After a step that read its loss back the device is idle anyway; the
/// cost is one empty drain.
pub fn step_boundary(device: &burn::tensor::Device) {
    let _ = device.sync();
}

/// Blaze at start-up, in Burn's idiom: `BlazeConfig::new("model.blaze").init(&device)` is
/// [`init`] (the handle to keep for the whole run); options as Burn's configs have them
/// (`.with_seed_autotune(false)`), and saved or loaded with Burn's `Config` like any other.
#[derive(burn::config::Config, Debug)]
pub struct BlazeConfig {
    /// The bundle (`blazec bundle`) or plan file to run with.
    pub bundle: String,
    /// Import the bundle's CubeCL autotune decisions for this device into CubeCL's cache
    /// before the first step ([`seed_autotune`]), so a fresh machine skips autotuning them.
    #[config(default = true)]
    pub seed_autotune: bool,
}

impl BlazeConfig {
    /// Loads the bundle for `device`; call it before the first tensor operation and keep the
    /// handle alive for the whole run. Never panics: when nothing fits, Burn's own plan stays
    /// and one warning says why.
    pub fn init(&self, device: &burn::tensor::Device) -> BundleHandle {
        start(device, &self.bundle, self.seed_autotune)
    }
}

/// Loads the bundle at `path` for `device` (see the crate docs). Call it before the first
/// tensor operation, so a submission setting in the entries can still apply, and keep the
/// handle alive for the whole run.
///
/// Entries are chosen for the adapter [`default_device`] runs on (wgpu's default
/// high-performance adapter, the one CubeCL picks for the default device). Given another
/// device (autodiff or not), it says so in one warning (also in the handle's notes) and still
/// chooses for the default adapter; for another adapter, call [`blaze_runtime::load_bundle`]
/// with its [`blaze_ir::plan::DeviceInfo`].
pub fn init(device: &burn::tensor::Device, path: impl AsRef<std::path::Path>) -> BundleHandle {
    start(device, path.as_ref(), true)
}

/// [`init`] and [`BlazeConfig::init`].
fn start(device: &burn::tensor::Device, path: impl AsRef<std::path::Path>, seed: bool) -> BundleHandle {
    let info = device_info();
    let seeded = if seed { seed_autotune(path.as_ref(), &info) } else { None };
    let mut handle = blaze_runtime::load_bundle(path, &info);
    handle.notes.extend(seeded.map(|s| {
        format!("autotune: {} decisions imported from {}, {} already present", s.imported, s.file, s.already_present)
    }));
    // Device equality is the hardware's (autodiff aside).
    if *device != default_device() {
        let warning = format!(
            "warning: blaze: init chooses the bundle's entries for {} (the default device), not for the \
             device it was given ({device:?}); for another adapter call blaze_runtime::load_bundle with its \
             DeviceInfo",
            info.adapter
        );
        eprintln!("{warning}");
        handle.notes.push(warning);
    }
    handle
}
