//! The interface between Blaze and a model: what a user implements so that blazec can trace,
//! confirm, verify and time plans on it. Deliberately free of Burn types, so it stays stable
//! across Burn's tensor API changes and any program can implement it.
use blaze_ir::plan::{DeviceInfo, Regime};

/// What a model is, for reports and plan contracts.
#[derive(Clone, Debug, PartialEq)]
pub struct Description {
    /// Workload name, e.g. `attention-d257`.
    pub name: String,
    /// Shapes, e.g. `batch=16 seq=256 d=257`.
    pub shapes: String,
    pub num_params: usize,
    pub regime: Regime,
    pub device: DeviceInfo,
}

/// What one step returns.
///
/// `logits` is the model's output for the step's batch, whatever the model predicts:
/// * a classifier or language model returns its logits, `classes` columns per row;
/// * a regression model (the built-in MLP and chain workloads, MSE loss) returns its
///   predictions, `classes` = the width of one output row (1 for a scalar target).
///
/// What verification then checks (`blazec verify`, `tune`, `doctor`): every step's loss and
/// every output value under the plan against Burn's plan, largest difference relative to the
/// largest magnitude within 1e-5, and for `classes` > 1 the row-wise argmax identical in every
/// row (for a regression model that is "the largest output column", harmless to require).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepOutput {
    /// The step's loss (read back, so the step is complete on the device).
    pub loss: f32,
    /// The model's output for the step's batch, row-major, `classes` values per row; empty
    /// unless the step was asked to read it (`Model::step`'s `read_logits`).
    pub logits: Vec<f32>,
    /// Values per output row: classes of a classifier, output width of a regression model.
    pub classes: usize,
}

/// One instance of a model in one regime, with its data and (in training) its optimiser.
///
/// Contract, so that operation indices mean the same in every step:
/// * `step` runs exactly one step (training: forward, loss, backward, optimiser update;
///   forward: one forward pass without gradient tracking and the loss) on the next batch and
///   reads the loss back before returning;
/// * `read_logits` (also read the step's outputs back, for verification) must not change the
///   operations the step registers: read them after the loss, from a tensor the step keeps
///   alive in either case;
/// * everything is registered from the calling thread.
pub trait Model {
    fn describe(&self) -> Description;
    fn step(&mut self, read_logits: bool) -> StepOutput;
    /// Wait until the device has finished all work (a fusion sync point).
    fn sync(&self);
    /// Every parameter's values now, in a fixed order (empty: the model does not say). The
    /// captured gate compares them at the end of a training run.
    fn parameters(&self) -> Vec<f32> {
        Vec::new()
    }
    /// The step in the form that can be recorded once and replayed (captured execution,
    /// [`crate::captured`]), or why this model cannot be recorded.
    fn recordable(&mut self) -> Result<&mut dyn RecordableStep, String> {
        Err(format!("{} does not offer a recordable step (Model::recordable)", self.describe().name))
    }
}

/// A step that can be recorded once and replayed.
///
/// Contract (what makes a replay compute what an eager step computes):
/// * the step's inputs live in device tensors the model holds for the whole run, and
///   `refresh_inputs` writes the next batch into those same buffers (in place; never a new
///   tensor: a recording reads the buffers it saw), outside any recording. The batches are the
///   ones [`Model::step`] would have used, in the same order;
/// * `record` registers the step's device work on those inputs and nothing else: no host
///   write, read or sync inside the recording, and it keeps the step's outputs in tensors of
///   the recording it returns;
/// * a step that changes state a later step reads (training: parameters, optimizer moments)
///   writes it back into the buffers it read it from, and takes its step-dependent scalars
///   (learning rate, bias corrections) from device tensors `refresh_inputs` writes; a forward
///   step changes no state.
pub trait RecordableStep {
    /// Writes the next batch into the step's input tensors; `Err` when it cannot be done in
    /// place (a clone of an input is alive elsewhere).
    fn refresh_inputs(&mut self) -> Result<(), String>;
    /// Records the step on the inputs as they are now (after warming the recorded form up).
    /// A failure hands back the outputs of the real steps that ran before it (a training
    /// step's preparing launches), so that no step the state took goes unreported.
    fn record(&mut self) -> Result<Box<dyn Recording>, RecordFailure>;
    /// Called once before the first step of a captured run, when the model is still fresh:
    /// moves the state a step writes to where a recording can write it in place (a training
    /// step's optimizer, see `blaze_burn::DeviceAdam`), or says why it cannot be recorded.
    /// Default: nothing to move (a forward step writes no state).
    fn hold_state_in_place(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// Why a recording could not be made, and the outputs of the real steps that ran before it
/// failed, oldest first (a training step's preparing launches: its state took those steps).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordFailure {
    pub why: String,
    pub ran: Vec<StepOutput>,
}

impl RecordFailure {
    /// A failure before any step ran.
    pub fn new(why: impl Into<String>) -> Self {
        Self { why: why.into(), ran: Vec::new() }
    }

    /// The same failure, its reason prefixed with where it happened.
    pub fn context(self, wherein: &str) -> Self {
        Self { why: format!("{wherein}: {}", self.why), ..self }
    }
}

impl From<String> for RecordFailure {
    fn from(why: String) -> Self {
        Self::new(why)
    }
}

impl From<&str> for RecordFailure {
    fn from(why: &str) -> Self {
        Self::new(why)
    }
}

impl std::fmt::Display for RecordFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)?;
        match self.ran.len() {
            0 => Ok(()),
            n => write!(f, " (after {n} real steps)"),
        }
    }
}

/// One live recording of a step.
pub trait Recording {
    /// Replays the recorded kernels on the inputs as they are now.
    fn replay(&mut self) -> Result<(), String>;
    /// Reads the loss (and with `capture` the outputs) of the last recording or replay.
    fn read(&mut self, capture: bool) -> StepOutput;
    /// What the recording holds on the device.
    fn memory(&self) -> RecordingMemory;
    /// The executed partition observed while recording (the plan's fusion in force), if observed.
    fn partition(&self) -> Option<blaze_ir::ExecutedPartition> {
        None
    }
    /// How many operations the recorded launch registered, if observed.
    fn registered_ops(&self) -> Option<usize> {
        None
    }
    /// Outputs of the steps that ran while the recording was prepared, oldest first, before
    /// the recorded step's (a training step's preparing launches are real steps, each on its
    /// own batch); taken once. Empty for a forward step, whose preparing launches repeat the
    /// recorded one.
    fn prepared(&mut self) -> Vec<StepOutput> {
        Vec::new()
    }
}

/// Device memory around a recording: a live recording pins every page it touched until it is
/// dropped, so what the pools reserve with it live is the memory to budget for.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RecordingMemory {
    /// Bytes the memory pools reserved before recording, and with the recording live (None:
    /// the backend does not report its pools).
    pub reserved_before: Option<u64>,
    pub reserved_live: Option<u64>,
    /// Bytes in live allocations with the recording live.
    pub in_use_live: Option<u64>,
}

/// Builds fresh model instances. Two instances built with the same regime start from the same
/// seeded weights and see the same batches, which is what verification relies on.
pub trait ModelFactory: Sync {
    /// The name plans and traces are filed under.
    fn name(&self) -> String;
    /// One-line description for `blazec list`.
    fn summary(&self) -> String;
    fn build(&self, regime: Regime) -> Result<Box<dyn Model>, String>;
}
