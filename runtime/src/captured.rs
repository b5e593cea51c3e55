//! Captured execution (plan setting `execution = captured`): a model's step recorded once after
//! warm-up and replayed for every later step, its inputs written in place before each replay.
//!
//! [`Captured`] wraps any [`Model`], so every harness that steps a model (runs, races, the
//! verification gate) steps a captured one unchanged. It never trusts a recording blindly:
//! * until `warm_steps` eager steps have run it steps eagerly (compilation, autotune and the
//!   plan's exploration happen there, outside any recording);
//! * then it records through the model's [`RecordableStep`]; a refusal (the model cannot be
//!   recorded, the backend refused, a host write or read inside the window, no room in the
//!   pools) leaves eager execution in force for the rest of the run with one warning naming
//!   the cause; that step runs eagerly on the batch after the one the recording consumed;
//! * a replay or an input refresh that fails does the same;
//! * a step that changes state (training) first moves that state where a recording writes it
//!   in place (`RecordableStep::hold_state_in_place`, before its first step); its recording
//!   runs real steps while preparing, whose outputs the next calls of `step` return in order.
//!   A recording refused after those steps ran loses their outputs (the steps did happen).
//!
//! Whether the replays compute what eager steps compute is not decided here: that is the
//! verification gate's (`blazec verify`, `tune`), which compares a captured instance with an
//! eager one over many steps with fresh inputs.
use crate::model::{Description, Model, RecordFailure, RecordableStep, Recording, RecordingMemory, StepOutput};
use crate::recorder::{RecordedStep, StepRecorder};
use blaze_ir::BoundaryId;
use blaze_ir::plan::{Regime, Settings};

mod cuts;
pub use cuts::record_plan_on;

/// Eager steps before recording by default: the first explores and compiles, the next ones
/// run cached plans (as the op-stream check and the harness's warm-up need them to).
pub const WARM_STEPS: usize = 3;

/// What a captured step made from a bundle does once its warm-up calls have run ([`decide`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    Record,
    /// Eager execution from now on, for this reason (not a failure: nothing to warn about).
    Eager(String),
}

/// The one rule for a captured step whose recording the bundle decides (`from_bundle`, and
/// blazec's runs with `--bundle`), after its warm-up calls. When the bundle's watch has
/// recognised the program's op stream as one of its entries, that entry decides: recorded if it
/// is a captured entry of the step's regime, eager if it runs eagerly or is of the other regime
/// (whatever else the bundle holds). When the watch recognises no entry (or has not judged
/// yet), the bundle's own captured entry of that regime for this device decides: a user's loop
/// rarely runs exactly the step `blazec trace` recorded (an evaluation step without the
/// model's loss, a batch made before the call, an optimizer writing its state in place), so its
/// stream is usually not recognised; its recording is then checked against eager calls like
/// any other. Without a bundle (`None`) the step records.
pub fn decide(bundle: Option<&(crate::CaptureSource, Regime)>) -> Decision {
    let Some((source, regime)) = bundle else { return Decision::Record };
    match source.captures(*regime) {
        crate::Captures::Yes(_) => Decision::Record,
        crate::Captures::No(why) => Decision::Eager(why),
        crate::Captures::Unrecognised(_) | crate::Captures::NotYetKnown => match source.holds_captured(*regime) {
            true => Decision::Record,
            false => Decision::Eager(format!(
                "the bundle holds no captured {regime} entry for this device, and no entry of it is installed for this step's op stream"
            )),
        },
    }
}

/// Where a captured model stands.
#[derive(Clone, Debug, PartialEq)]
pub enum CaptureState {
    /// Still warming up eagerly; records at the next step once `WARM_STEPS` have run.
    Warming { eager_steps: usize },
    /// Steps are replays of the recording.
    Replaying,
    /// Eager execution stays in force, for this reason (already warned about once).
    Eager(String),
}

/// How run reports say it: `captured`, `captured (warming up, …)` or `eager: <cause>`.
impl std::fmt::Display for CaptureState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureState::Replaying => write!(f, "captured"),
            CaptureState::Warming { .. } => write!(f, "captured (warming up, not recorded yet)"),
            CaptureState::Eager(why) => write!(f, "eager: {why}"),
        }
    }
}

/// A model whose steps are replayed from one recording (see the module docs).
pub struct Captured {
    inner: Box<dyn Model>,
    warm_steps: usize,
    state: CaptureState,
    recording: Option<Box<dyn Recording>>,
    replays: usize,
    warn: fn(&str),
    /// Held from recording until a fallback: the op-stream watch ignores captured steps.
    capturing: Option<crate::watch::Capturing>,
    /// Outputs of steps that already ran while the recording was prepared (training), handed
    /// out by the next calls of `step`.
    pending: std::collections::VecDeque<StepOutput>,
    /// The plan's cuts and settings when it has cuts ([`Captured::with_plan`]), and its last
    /// eager warm-up step as observed from its sync.
    plan: Option<(Vec<BoundaryId>, Settings)>,
    eager_step: Option<RecordedStep>,
    /// Records only when the bundle's entry for the program's op stream asks for it
    /// ([`Captured::decided_by`]).
    bundle: Option<(crate::CaptureSource, Regime)>,
}

impl Captured {
    pub fn new(inner: Box<dyn Model>) -> Self {
        Self::with_warm_steps(inner, WARM_STEPS)
    }

    pub fn with_warm_steps(inner: Box<dyn Model>, warm_steps: usize) -> Self {
        Self {
            inner,
            warm_steps,
            state: CaptureState::Warming { eager_steps: 0 },
            recording: None,
            replays: 0,
            warn: print_warning,
            capturing: None,
            pending: Default::default(),
            plan: None,
            eager_step: None,
            bundle: None,
        }
    }

    /// Records only if the entry the bundle installs for the program's op stream is a captured
    /// entry of `regime` ([`decide`]); otherwise steps stay eager, with the reason in
    /// [`Captured::execution`].
    pub fn decided_by(mut self, source: crate::CaptureSource, regime: Regime) -> Self {
        self.bundle = Some((source, regime));
        self
    }

    /// Records under a plan with `cuts` (installed eagerly by the caller) and `settings`: the
    /// last warm-up step is observed, and the recording is made as [`record_plan_on`] makes it
    /// (kept only if it executed the plan's partition).
    pub fn with_plan(mut self, cuts: &[BoundaryId], settings: &Settings) -> Self {
        self.plan = (!cuts.is_empty()).then(|| (cuts.to_vec(), *settings));
        self
    }

    /// Sends the one fallback warning to `warn` instead of stderr (tests).
    pub fn warn_with(mut self, warn: fn(&str)) -> Self {
        self.warn = warn;
        self
    }

    pub fn state(&self) -> &CaptureState {
        &self.state
    }

    /// `captured`, `captured (warming up)` or `eager: <cause>`, as run reports say it.
    pub fn execution(&self) -> String {
        self.state.to_string()
    }

    /// Replays run so far.
    pub fn replays(&self) -> usize {
        self.replays
    }

    pub fn memory(&self) -> Option<RecordingMemory> {
        self.recording.as_ref().map(|r| r.memory())
    }

    pub fn recorded_partition(&self) -> Option<blaze_ir::ExecutedPartition> {
        self.recording.as_ref().and_then(|r| r.partition())
    }

    fn fall_back(&mut self, cause: String) {
        (self.warn)(&fallback_warning(&cause));
        self.recording = None;
        self.capturing = None;
        self.state = CaptureState::Eager(cause);
    }

    /// Records, and returns the recorded step's output (the recording computed the next batch).
    fn record(&mut self, capture: bool) -> Option<StepOutput> {
        self.capturing = Some(crate::watch::Capturing::begin());
        let recorded = match (&self.plan, &self.eager_step) {
            (None, _) => record_on(self.inner.as_mut()),
            (Some((cuts, settings)), Some(eager)) => record_plan_on(self.inner.as_mut(), cuts, settings, eager),
            (Some(_), None) => Err(RecordFailure::new("no eager step of the plan was observed before recording")),
        };
        match recorded {
            Ok(mut recording) => {
                self.pending.extend(recording.prepared());
                self.pending.push_back(recording.read(capture));
                self.recording = Some(recording);
                self.state = CaptureState::Replaying;
                self.pending.pop_front()
            }
            Err(failure) => {
                self.fall_back(format!("recording refused: {}", failure.why));
                // The real steps that ran before the failure are this call's and the next ones'.
                self.pending.extend(failure.ran);
                self.pending.pop_front()
            }
        }
    }

    /// One eager step from a sync, observed.
    fn observed_step(&mut self, capture: bool) -> (RecordedStep, StepOutput) {
        self.inner.sync();
        let observer = StepRecorder::start();
        let out = self.inner.step(capture);
        self.inner.sync();
        (observer.finish(), out)
    }

    fn replay(&mut self, capture: bool) -> Option<StepOutput> {
        let recording = self.recording.as_mut().expect("replaying holds a recording");
        match replay_on(self.inner.as_mut(), recording.as_mut(), capture) {
            Ok(out) => {
                self.replays += 1;
                Some(out)
            }
            Err(cause) => {
                self.fall_back(cause);
                None
            }
        }
    }
}

/// Before a fresh model's first step: moves a training step's state to where a replay writes
/// it (`RecordableStep::hold_state_in_place`), or says why the model cannot be recorded.
pub fn hold_state_in_place(model: &mut dyn Model) -> Result<(), String> {
    model.recordable()?.hold_state_in_place()
}

/// Records one step of `model` on its next batch, under the fusion installed now (the step's
/// output is read from the recording). A plan with cuts is recorded by [`record_plan_on`]: the
/// recorded step does not register the operations that make its inputs from data, so its cut
/// positions are shifted there.
pub fn record_on(model: &mut dyn Model) -> Result<Box<dyn Recording>, RecordFailure> {
    let step = model.recordable()?;
    step.refresh_inputs().map_err(|e| format!("input refresh: {e}"))?;
    step.record()
}

/// One captured step: the next batch written into `model`'s inputs, `recording` replayed, its
/// outputs read.
pub fn replay_on(model: &mut dyn Model, recording: &mut dyn Recording, capture: bool) -> Result<StepOutput, String> {
    model.recordable()?.refresh_inputs().map_err(|e| format!("input refresh: {e}"))?;
    recording.replay().map_err(|e| format!("replay: {e}"))?;
    Ok(recording.read(capture))
}

/// The one line printed when captured execution is not (or no longer) in force.
pub fn fallback_warning(cause: &str) -> String {
    format!("warning: blaze: captured execution not in force ({cause}); steps run eagerly under the plan's fusion")
}

fn print_warning(line: &str) {
    eprintln!("{line}");
}

impl Model for Captured {
    fn describe(&self) -> Description {
        self.inner.describe()
    }

    fn step(&mut self, read_logits: bool) -> StepOutput {
        if let Some(mut out) = self.pending.pop_front() {
            if !read_logits {
                out.logits.clear();
            }
            return out;
        }
        if self.state == (CaptureState::Warming { eager_steps: 0 })
            && let Err(cause) = hold_state_in_place(self.inner.as_mut())
        {
            self.fall_back(format!("cannot be recorded: {cause}"));
        }
        let out = match self.state.clone() {
            CaptureState::Warming { eager_steps } if eager_steps < self.warm_steps => {
                self.state = CaptureState::Warming { eager_steps: eager_steps + 1 };
                // A plan with cuts: the last warm-up step is the eager step its recording is
                // checked against.
                if self.plan.is_some() && eager_steps + 1 == self.warm_steps {
                    let (eager, out) = self.observed_step(read_logits);
                    self.eager_step = Some(eager);
                    return out;
                }
                None
            }
            CaptureState::Warming { .. } => match decide(self.bundle.as_ref()) {
                Decision::Record => self.record(read_logits),
                Decision::Eager(why) => {
                    self.state = CaptureState::Eager(why);
                    None
                }
            },
            CaptureState::Replaying => self.replay(read_logits),
            CaptureState::Eager(_) => None,
        };
        // Eager whenever no recording ran this step: warming up, or fallen back (also in the
        // step where the recording or the replay failed, so no step is lost).
        out.unwrap_or_else(|| self.inner.step(read_logits))
    }

    fn sync(&self) {
        self.inner.sync()
    }

    fn parameters(&self) -> Vec<f32> {
        self.inner.parameters()
    }

    fn recordable(&mut self) -> Result<&mut dyn RecordableStep, String> {
        Err("already captured".into())
    }
}

#[cfg(test)]
mod tests;
