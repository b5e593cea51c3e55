//! The captured arms of a live run, on the run's own model.
//!
//! A captured arm is recorded when the schedule switches into it and replayed for the rest of
//! its visit (or of the settled run); the recording is dropped when the schedule switches away.
//! It never outlives another arm's steps: a recording's buffers take no writes from outside it,
//! so eager steps of a training model between two replays would leave the recording reading
//! stale state. A training step's recording runs real steps (its preparing launches) before the
//! recorded one; their outputs are handed out by the following calls, so every
//! call of `Live::step` is one step of the user's run.
//!
//! The recording method is verified before the run on side instances (the captured gate); a
//! recording or replay that fails on the run's own steps withdraws the arm, with one warning,
//! and the step runs eagerly.
use blaze_runtime::captured::{hold_state_in_place, record_on, replay_on};
use blaze_runtime::{Model, Recording, RecordingMemory, StepOutput};
use std::collections::VecDeque;

/// Captured execution of a live run's arms.
pub(crate) struct CapturedArms {
    /// Whether each arm is captured.
    captured: Vec<bool>,
    /// The model whose state is held in place (its address), once the run has one.
    held: Option<usize>,
    /// The live recording and the arm it belongs to.
    recording: Option<(usize, Box<dyn Recording>)>,
    /// Outputs of steps the last recording ran before the call that returns them.
    pending: VecDeque<StepOutput>,
    /// Per arm: recordings made, replays run, and the memory around its last recording.
    use_: Vec<CapturedUse>,
}

/// What one captured arm did on the run's own steps.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CapturedUse {
    pub recordings: u64,
    pub replays: u64,
    pub memory: Option<RecordingMemory>,
}

/// One step as the captured arms ran it.
pub(crate) enum Stepped {
    /// Not a captured arm (or none recorded): the caller steps the model eagerly.
    Eager,
    /// The step ran captured; `untimed` steps start here (a recording and the real steps it ran).
    Ran { out: StepOutput, untimed: u32 },
    /// The arm failed: withdraw it, then hand out the outputs owed (steps a failed recording
    /// ran) or step eagerly.
    Failed(String),
}

impl CapturedArms {
    pub(crate) fn new(captured: Vec<bool>) -> Self {
        let use_ = vec![CapturedUse::default(); captured.len()];
        Self { captured, held: None, recording: None, pending: VecDeque::new(), use_ }
    }

    /// Each captured arm's use so far.
    pub(crate) fn usage(&self) -> Vec<(usize, CapturedUse)> {
        self.captured.iter().enumerate().filter(|(_, c)| **c).map(|(arm, _)| (arm, self.use_[arm].clone())).collect()
    }

    pub(crate) fn any(&self) -> bool {
        self.captured.iter().any(|&c| c)
    }

    /// An output of a step the last recording already ran, if one is still owed.
    pub(crate) fn owed(&mut self) -> Option<StepOutput> {
        self.pending.pop_front()
    }

    /// Before any step on `model`: a model the run has not seen before (the first, or a fresh
    /// one after the conditions changed) drops the recording and gets its state held in place.
    /// `Err`: the captured arms cannot run on this model.
    pub(crate) fn adopt(&mut self, model: &mut dyn Model) -> Result<(), String> {
        let id = model as *mut dyn Model as *const () as usize;
        if !self.any() || self.held == Some(id) {
            return Ok(());
        }
        self.recording = None;
        self.pending.clear();
        self.held = Some(id);
        hold_state_in_place(model)
    }

    /// One step of `model` under `arm`.
    pub(crate) fn step(&mut self, arm: usize, model: &mut dyn Model) -> Stepped {
        if !self.captured.get(arm).copied().unwrap_or(false) {
            // Switching away: the recording goes before another arm's step writes the state.
            self.recording = None;
            return Stepped::Eager;
        }
        match &mut self.recording {
            Some((recorded, recording)) if *recorded == arm => match replay_on(model, recording.as_mut(), false) {
                Ok(out) => {
                    self.use_[arm].replays += 1;
                    Stepped::Ran { out, untimed: 1 }
                }
                Err(why) => {
                    self.recording = None;
                    Stepped::Failed(why)
                }
            },
            _ => self.record(arm, model),
        }
    }

    /// Records `arm`'s step on `model`: the recorded step and the real steps it ran first.
    fn record(&mut self, arm: usize, model: &mut dyn Model) -> Stepped {
        self.recording = None;
        let mut recording = match record_on(model) {
            Ok(r) => r,
            Err(failure) => {
                // Steps the state took before the failure are the next calls' outputs.
                self.pending = failure.ran.into();
                self.pending.iter_mut().for_each(|o| o.logits.clear());
                return Stepped::Failed(format!("recording: {}", failure.why));
            }
        };
        let mut outs: VecDeque<StepOutput> = recording.prepared().into();
        outs.push_back(recording.read(false));
        // A live run hands out losses only (as `Model::step(false)` does).
        outs.iter_mut().for_each(|o| o.logits.clear());
        let use_ = &mut self.use_[arm];
        use_.recordings += 1;
        use_.memory = Some(recording.memory());
        self.recording = Some((arm, recording));
        let untimed = outs.len() as u32;
        let out = outs.pop_front().expect("the recorded step's output");
        self.pending = outs;
        Stepped::Ran { out, untimed }
    }
}
