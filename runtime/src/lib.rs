//! blaze-runtime: the thin shim between a plan file and the patched Burn fuser.
//!
//! * [`load_plan`]: one call at start-up. Reads, validates and installs a plan; on any problem
//!   it leaves Burn's own plan in force and prints exactly one warning naming the reason. It
//!   never panics because of a plan.
//! * [`load_bundle`]: one call at start-up for a bundle: the entries made for this device are
//!   handed to the op-stream watch, which installs the one the program runs (and the other
//!   after a switch from training to evaluation). Never panics; one warning when nothing fits.
//! * [`CutSet`]: the cut policy installed into `burn_fusion::cut`; records which operations
//!   Burn explored (the live ones).
//! * [`settings`]: a plan's fusion-search and submission settings (plan version 2; how its plans
//!   are cached, version 3), applied at load: the beam width and the store per plan store, the
//!   submission batch before the device starts ([`preset_submission_batch`] for a program that
//!   checks the plan only after building its model).
//! * [`watch`]: confirms an installed plan's op stream by itself at the first step-sized
//!   window, and withdraws the plan with one warning if it differs.
//! * [`BlockTimer`]: a `FusionObserver` that times the host's work per executed block.
//! * [`StepRecorder`]: a `FusionObserver` that records one step's operations and executed
//!   blocks, for traces and partition fingerprints.
//! * [`Captured`]: captured execution (plan version 4): a model's step recorded once and
//!   replayed, eager execution kept with one warning whenever recording or replay fails.
//!
//! Invariant: nothing here runs tensor operations or touches a device (a captured model's
//! recording and replays are the model's own, through [`RecordableStep`]); it only configures the
//! fuser and listens to it.
mod block_timer;
pub mod captured;
pub mod fault;
mod init;
mod load;
pub mod model;
pub mod numerics;
mod policy;
mod recorder;
pub mod settings;
mod thread_clock;
pub mod watch;

pub use block_timer::{BlockTimer, BlockTimerGuard};
pub use captured::{CaptureState, Captured};
pub use init::{BundleHandle, CaptureSource, Captures, load_bundle, preset_submission_batch};
pub use load::{LoadOutcome, PlanHandle, fallback_warning, load_plan, load_plan_text};
pub use model::{
    Description, Model, ModelFactory, RecordFailure, RecordableStep, Recording, RecordingMemory, StepOutput,
};
pub use policy::{
    CutSet, Unfused, activate, activate_burn_default, activate_explore_probe, activate_explore_probe_with,
    activate_unfused, activate_with,
};
pub use recorder::{RecordedOp, RecordedStep, StepRecorder};

/// The Burn version the patched fuser comes from (checked against plan contracts).
pub const BURN_VERSION: &str = "0.22.1";
