//! A user's own forward step (inference, evaluation), captured: recorded once after warm-up,
//! checked against eager execution on its first replays, then replayed with each call's
//! inputs written in place. Any failure or mismatch leaves eager execution in force for the
//! rest of the run with one warning; the caller always gets outputs.
//!
//! ```ignore
//! let mut eval = blaze_burn::CapturedForward::new(&device, |x: &Tensor<2, Int>| model.forward(x.clone()));
//! for batch in batches {
//!     let logits = eval.run(batch);          // eager, then recorded, checked, replayed
//!     let values = logits.into_data();       // read after the step, outside any recording
//! }
//! ```
//!
//! What the step must be: a function of its inputs and of state that does not change while it
//! runs (a model's parameters): no host write, read or sync inside it (read the outputs after
//! `run` returns), no gradient tracking (use the plain device, not `autodiff()`), and inputs
//! of the same shape every call.
use crate::capture::{Recorded, can_write_in_place, record_graph, write_in_place};
use blaze_ir::plan::Regime;
use blaze_runtime::captured::{Decision, decide};
use blaze_runtime::numerics::{VERIFY_TOLERANCE, max_rel_diff, same_numbers};
use burn::tensor::{Device, Tensor, kind::Basic};

/// Eager calls before recording (compilation, autotune and Burn's fusion exploration): the
/// harness's number of warm-up steps, one rule for every captured step.
pub const WARM_CALLS: usize = blaze_runtime::captured::WARM_STEPS;
/// Replays checked against an eager run of the step on the same inputs before replays are
/// trusted alone.
pub const CHECKED_REPLAYS: usize = 3;

/// Inputs of a captured step: device tensors written in place.
pub trait StepInputs: Sized {
    /// Why `fresh` cannot be written into `self` in place, if it cannot.
    fn check(&self, fresh: &Self) -> Result<(), String>;
    /// Writes `fresh` into `self`'s buffers in place (after `check`).
    fn write(&mut self, fresh: Self) -> Result<(), String>;
}

impl<const D: usize, K: Basic> StepInputs for Tensor<D, K> {
    fn check(&self, fresh: &Self) -> Result<(), String> {
        can_write_in_place(self, fresh)
    }

    fn write(&mut self, fresh: Self) -> Result<(), String> {
        write_in_place(self, fresh)
    }
}

impl<A: StepInputs, B: StepInputs> StepInputs for (A, B) {
    fn check(&self, fresh: &Self) -> Result<(), String> {
        self.0.check(&fresh.0)?;
        self.1.check(&fresh.1)
    }

    fn write(&mut self, fresh: Self) -> Result<(), String> {
        self.0.write(fresh.0)?;
        self.1.write(fresh.1)
    }
}

/// Outputs of a captured step: read back to compare the first replays with eager execution,
/// and copied out of the recording's buffers before they are handed to the caller.
pub trait StepOutputs: Clone {
    fn values(&self) -> Vec<f32>;
    /// The same values in new device buffers (a copy kernel, no sync). Every replay writes the
    /// recording's own output buffers, so outputs handed out without a copy would change under
    /// a caller that keeps them past the next call.
    fn copied(&self) -> Self;
}

impl<const D: usize> StepOutputs for Tensor<D> {
    fn values(&self) -> Vec<f32> {
        self.to_data().convert::<f32>().try_to_vec::<f32>().unwrap_or_default()
    }

    fn copied(&self) -> Self {
        crate::capture::device_copy(self)
    }
}

impl<A: StepOutputs, B: StepOutputs> StepOutputs for (A, B) {
    fn values(&self) -> Vec<f32> {
        let mut v = self.0.values();
        v.extend(self.1.values());
        v
    }

    fn copied(&self) -> Self {
        (self.0.copied(), self.1.copied())
    }
}

/// Where a captured step of a user's program stands (forward here, training in
/// `crate::captured_training`).
pub(crate) enum State<O> {
    /// Eager calls made so far, up to [`WARM_CALLS`].
    Warming(usize),
    /// Recorded; this many replays are still checked against eager execution.
    Checking(Recorded<O>, usize),
    Replaying(Recorded<O>),
    Eager(String),
}

impl<O> State<O> {
    /// `captured (N replays)`, `captured, checking (N replays)`, `warming up` or `eager: <cause>`.
    pub(crate) fn describe(&self, replays: usize) -> String {
        match self {
            State::Warming(_) => "warming up".into(),
            State::Checking(..) => format!("captured, checking ({replays} replays)"),
            State::Replaying(_) => format!("captured ({replays} replays)"),
            State::Eager(why) => format!("eager: {why}"),
        }
    }

    pub(crate) fn is_captured(&self) -> bool {
        matches!(self, State::Replaying(_) | State::Checking(..))
    }

    /// Device memory around the live recording.
    pub(crate) fn memory(&self) -> Option<blaze_runtime::RecordingMemory> {
        match self {
            State::Checking(g, _) | State::Replaying(g) => Some(g.memory()),
            _ => None,
        }
    }
}

/// A forward step captured for a user's program (see the module docs).
pub struct CapturedForward<I, O, F> {
    device: Device,
    step: F,
    inputs: Option<I>,
    state: State<O>,
    replays: usize,
    /// Held from recording until a fallback: the bundle's op-stream watch ignores captured steps.
    capturing: Option<blaze_runtime::watch::Capturing>,
    /// Made with [`CapturedForward::from_bundle`]: the bundle decides whether to record.
    bundle: Option<(blaze_runtime::CaptureSource, Regime)>,
    /// Replays hand out copies (always, except under the `measure` feature's hook).
    hand_out: HandOut,
}

/// How a replay's outputs reach the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HandOut {
    /// Copied out of the recording's buffers: the caller's to keep.
    Copy,
    /// The recording's own buffers, overwritten by the next replay. Only the `measure`
    /// feature's hook selects it, to time what [`HandOut::Copy`] costs.
    #[cfg_attr(not(feature = "measure"), allow(dead_code))]
    Shared,
}

impl HandOut {
    pub(crate) fn outputs<O: StepOutputs>(self, recorded: &O) -> O {
        match self {
            HandOut::Copy => recorded.copied(),
            HandOut::Shared => recorded.clone(),
        }
    }
}

impl<I: StepInputs, O: StepOutputs, F: Fn(&I) -> O> CapturedForward<I, O, F> {
    /// A captured step on `device` (the plain device the step's tensors live on).
    ///
    /// The step is `Fn`: while a call is recorded and checked it runs more than once (eager
    /// preparing launches, the recorded launch, the eager run it is compared with), so it must
    /// not change anything outside what it returns. A step that updates captured state (a
    /// counter, an optimizer) does not compile:
    ///
    /// ```compile_fail,E0594
    /// use burn::tensor::Tensor;
    /// let device = blaze_burn::default_device();
    /// let mut calls = 0;
    /// let mut eval = blaze_burn::CapturedForward::new(&device, |x: &Tensor<2>| {
    ///     calls += 1; // state outside the step: a recorded call would count several times
    ///     x.clone() * 2.0
    /// });
    /// ```
    pub fn new(device: &Device, step: F) -> Self {
        Self {
            device: device.clone(),
            step,
            inputs: None,
            state: State::Warming(0),
            replays: 0,
            capturing: None,
            bundle: None,
            hand_out: HandOut::Copy,
        }
    }

    /// Measuring only (the `measure` feature, never a user's build): replays hand out the
    /// recording's own output buffers, which the next call overwrites, so the cost of the
    /// copies [`CapturedForward::run`] makes can be timed against this.
    #[cfg(feature = "measure")]
    pub fn without_output_copies(mut self) -> Self {
        self.hand_out = HandOut::Shared;
        self
    }

    /// The step as the bundle of `blaze` says ([`blaze_runtime::captured::decide`]): recorded
    /// (as [`CapturedForward::new`]) when the entry installed for the op stream this step runs
    /// is a captured forward entry, eager when that entry runs eagerly; when no entry is
    /// recognised, recorded if the bundle holds a captured forward entry for this device. The bundle's watch
    /// recognises the step during the warm-up calls, so each eager call starts and ends at a
    /// device sync ([`crate::step_boundary`]); replays do not sync.
    pub fn from_bundle(blaze: &blaze_runtime::BundleHandle, device: &Device, step: F) -> Self {
        Self { bundle: Some((blaze.capture_source(), Regime::Forward)), ..Self::new(device, step) }
    }

    /// The same step never recorded (eager execution, e.g. when the bundle's entry for the
    /// forward regime does not ask for captured execution).
    pub fn eager(device: &Device, step: F, why: &str) -> Self {
        Self { state: State::Eager(why.into()), ..Self::new(device, step) }
    }

    /// Runs the step on `inputs` and returns its outputs (read them after this returns). The
    /// outputs are the caller's: a later call never changes them (a replay's outputs are copied
    /// out of the recording's buffers on the device).
    pub fn run(&mut self, inputs: I) -> O {
        // Made from a bundle: an eager call starts and ends at a device sync, so the bundle's
        // watch sees the step's operations as windows of their own (after the batch the caller
        // made before the call, which `blazec trace` records first in a step) and nothing the
        // program did before the loop runs into the first step.
        let sync = self.bundle.is_some() && !self.state.is_captured();
        if sync {
            crate::step_boundary(&self.device);
        }
        let out = self.call(inputs);
        if sync && !self.state.is_captured() {
            crate::step_boundary(&self.device);
        }
        out
    }

    fn call(&mut self, inputs: I) -> O {
        match std::mem::replace(&mut self.state, State::Eager(String::new())) {
            State::Warming(n) if n < WARM_CALLS => {
                self.state = State::Warming(n + 1);
                (self.step)(&inputs)
            }
            State::Warming(_) => match decide(self.bundle.as_ref()) {
                Decision::Record => self.record(inputs),
                Decision::Eager(why) => {
                    self.state = State::Eager(why);
                    (self.step)(&inputs)
                }
            },
            State::Checking(graph, left) => self.checked_replay(graph, left, inputs),
            State::Replaying(graph) => self.replay(graph, inputs),
            State::Eager(why) => {
                self.state = State::Eager(why);
                (self.step)(&inputs)
            }
        }
    }

    /// `captured (N replays)`, `captured, checking (N replays)`, `warming up` or `eager: <cause>`.
    pub fn execution(&self) -> String {
        self.state.describe(self.replays)
    }

    pub fn is_captured(&self) -> bool {
        self.state.is_captured()
    }

    /// Device memory around the live recording.
    pub fn memory(&self) -> Option<blaze_runtime::RecordingMemory> {
        self.state.memory()
    }

    fn record(&mut self, inputs: I) -> O {
        self.capturing = Some(blaze_runtime::watch::Capturing::begin());
        self.inputs = Some(inputs);
        let Self { device, step, inputs, .. } = self;
        let held = inputs.as_ref().expect("just set");
        let graph = match record_graph(device, || step(held)) {
            Ok(graph) => graph,
            Err(cause) => return self.fall_back(format!("recording refused: {cause}"), None),
        };
        // The recording call's own outputs are checked as a replay's are: a step that read a
        // value back inside the window (a read that failed softly) was recorded with what the
        // read returned there.
        let recorded = graph.outputs().copied();
        let eager = step(held);
        if let Some(diff) = difference(&eager.values(), &recorded.values()) {
            return self.give_eager(format!("the recorded call differs from eager execution ({diff})"), eager);
        }
        self.state = State::Checking(graph, CHECKED_REPLAYS);
        recorded
    }

    /// Writes `fresh` into the held inputs and replays. When `fresh` cannot be written in
    /// place, it is handed back with the reason (the call then runs eagerly on it).
    fn refresh_and_replay(&mut self, graph: &Recorded<O>, fresh: I) -> Result<O, (String, Option<I>)> {
        let held = self.inputs.as_mut().expect("recorded steps hold their inputs");
        if let Err(e) = held.check(&fresh) {
            return Err((format!("input refresh: {e}"), Some(fresh)));
        }
        held.write(fresh).map_err(|e| (format!("input refresh: {e}"), None))?;
        graph.replay().map_err(|e| (format!("replay: {e}"), None))?;
        self.replays += 1;
        Ok(self.hand_out.outputs(graph.outputs()))
    }

    fn checked_replay(&mut self, graph: Recorded<O>, left: usize, fresh: I) -> O {
        let replayed = match self.refresh_and_replay(&graph, fresh) {
            Ok(out) => out,
            Err((cause, unwritten)) => return self.fall_back(cause, unwritten),
        };
        let (ours, eager) = (replayed.values(), (self.step)(self.inputs.as_ref().expect("held")).values());
        if let Some(diff) = difference(&eager, &ours) {
            return self.fall_back(format!("replay {} differs from eager execution ({diff})", self.replays), None);
        }
        self.state = if left > 1 { State::Checking(graph, left - 1) } else { State::Replaying(graph) };
        replayed
    }

    fn replay(&mut self, graph: Recorded<O>, fresh: I) -> O {
        match self.refresh_and_replay(&graph, fresh) {
            Ok(out) => {
                self.state = State::Replaying(graph);
                out
            }
            Err((cause, unwritten)) => self.fall_back(cause, unwritten),
        }
    }

    /// Eager execution from now on, with one warning; `eager` (this call's outputs, computed
    /// eagerly) handed to the caller.
    fn give_eager(&mut self, cause: String, eager: O) -> O {
        eprintln!("{}", blaze_runtime::captured::fallback_warning(&cause));
        self.capturing = None;
        self.state = State::Eager(cause);
        eager
    }

    /// Eager execution from now on, with one warning; this call's outputs computed eagerly on
    /// `unwritten` inputs, or on the held ones when this call's inputs were already written.
    fn fall_back(&mut self, cause: String, unwritten: Option<I>) -> O {
        eprintln!("{}", blaze_runtime::captured::fallback_warning(&cause));
        self.capturing = None;
        self.state = State::Eager(cause);
        match unwritten {
            Some(inputs) => (self.step)(&inputs),
            None => (self.step)(self.inputs.as_ref().expect("inputs are held once recording starts")),
        }
    }
}

/// How a replay's numbers differ from eager execution's, if beyond the verification tolerance.
pub(crate) fn difference(eager: &[f32], ours: &[f32]) -> Option<String> {
    if same_numbers(eager, ours) {
        return None;
    }
    Some(match ours.len() == eager.len() {
        _ if ours.iter().any(|x| !x.is_finite()) => "values not finite".into(),
        true => format!("relative difference {:.2e}, tolerance {VERIFY_TOLERANCE:.0e}", max_rel_diff(eager, ours)),
        false => "outputs of another size".into(),
    })
}
