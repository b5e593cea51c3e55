//! The wrapper's state machine on a fake model: the "device" is a shared cell, a recording a
//! closure over it. What a real recording computes is the gate's business (compiler tests).
use super::*;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Mutex;

/// Loss of step n is n (the batch number); a recording reads the input cell when replayed.
struct Counter {
    batch: Rc<Cell<u32>>,
    eager_steps: u32,
    refuse: Option<&'static str>,
    fail_replay_at: Option<u32>,
    /// Real steps a refused recording runs first (a training step's preparing launches).
    steps_before_refusal: u32,
}

struct Tape {
    batch: Rc<Cell<u32>>,
    replays: u32,
    fail_at: Option<u32>,
}

impl Recording for Tape {
    fn replay(&mut self) -> Result<(), String> {
        self.replays += 1;
        if Some(self.replays) == self.fail_at { Err("device lost".into()) } else { Ok(()) }
    }
    fn read(&mut self, _capture: bool) -> StepOutput {
        StepOutput { loss: self.batch.get() as f32, ..Default::default() }
    }
    fn memory(&self) -> RecordingMemory {
        RecordingMemory { reserved_before: Some(10), reserved_live: Some(25), in_use_live: Some(20) }
    }
}

impl RecordableStep for Counter {
    fn refresh_inputs(&mut self) -> Result<(), String> {
        self.batch.set(self.batch.get() + 1);
        Ok(())
    }
    fn record(&mut self) -> Result<Box<dyn Recording>, RecordFailure> {
        match self.refuse {
            Some(why) => {
                // Each preparing step reads its batch, then the next batch is written.
                let ran = (0..self.steps_before_refusal)
                    .map(|_| {
                        let loss = self.batch.get() as f32;
                        self.batch.set(self.batch.get() + 1);
                        StepOutput { loss, ..Default::default() }
                    })
                    .collect();
                Err(RecordFailure { why: why.into(), ran })
            }
            None => Ok(Box::new(Tape { batch: self.batch.clone(), replays: 0, fail_at: self.fail_replay_at })),
        }
    }
}

impl Model for Counter {
    fn describe(&self) -> Description {
        unreachable!("not asked")
    }
    fn step(&mut self, _capture: bool) -> StepOutput {
        self.eager_steps += 1;
        self.batch.set(self.batch.get() + 1);
        StepOutput { loss: self.batch.get() as f32, ..Default::default() }
    }
    fn sync(&self) {}
    fn recordable(&mut self) -> Result<&mut dyn RecordableStep, String> {
        Ok(self)
    }
}

static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn keep(line: &str) {
    WARNINGS.lock().unwrap().push(line.to_string());
}

fn warnings_containing(what: &str) -> usize {
    WARNINGS.lock().unwrap().iter().filter(|w| w.contains(what)).count()
}

fn counter(refuse: Option<&'static str>, fail_replay_at: Option<u32>) -> Captured {
    refusing_after(refuse, fail_replay_at, 0)
}

fn refusing_after(refuse: Option<&'static str>, fail_replay_at: Option<u32>, steps_before_refusal: u32) -> Captured {
    let batch = Rc::new(Cell::new(0));
    let model = Counter { batch, eager_steps: 0, refuse, fail_replay_at, steps_before_refusal };
    Captured::with_warm_steps(Box::new(model), 2).warn_with(keep)
}

fn losses(model: &mut Captured, n: usize) -> Vec<f32> {
    (0..n).map(|_| model.step(false).loss).collect()
}

#[test]
fn warms_up_eagerly_then_replays_every_batch_in_order() {
    let mut m = counter(None, None);
    assert_eq!(losses(&mut m, 2), [1.0, 2.0]);
    assert!(matches!(m.state(), CaptureState::Warming { eager_steps: 2 }));
    assert_eq!(losses(&mut m, 4), [3.0, 4.0, 5.0, 6.0], "the recording step and the replays see the next batches");
    assert_eq!((m.state(), m.replays(), m.execution().as_str()), (&CaptureState::Replaying, 3, "captured"));
    assert_eq!(m.memory().and_then(|mem| mem.reserved_live), Some(25));
}

#[test]
fn a_refused_recording_leaves_eager_execution_with_one_warning_naming_the_cause() {
    let mut m = counter(Some("an operation inside the capture window failed: write"), None);
    // The failed recording consumed batch 3; that step and every later one run eagerly.
    assert_eq!(losses(&mut m, 6), [1.0, 2.0, 4.0, 5.0, 6.0, 7.0], "every step eager, one batch skipped");
    assert!(
        m.execution().starts_with("eager: recording refused: an operation inside the capture window failed: write"),
        "{}",
        m.execution()
    );
    assert_eq!(warnings_containing("capture window failed: write"), 1, "one warning, not one per step");
    assert!(m.memory().is_none());
}

#[test]
fn the_real_steps_a_refused_recording_ran_are_handed_out_in_order() {
    let mut m = refusing_after(Some("no room in the pools"), None, 2);
    // Batches 3 and 4 ran as preparing steps, batch 5 was the refused recording's; eager after.
    assert_eq!(losses(&mut m, 6), [1.0, 2.0, 3.0, 4.0, 6.0, 7.0], "no step the state took goes unreported");
    assert!(m.execution().contains("no room in the pools"), "{}", m.execution());
}

#[test]
fn a_failed_replay_falls_back_for_the_rest_of_the_run() {
    let mut m = counter(None, Some(2));
    let seen = losses(&mut m, 6);
    assert_eq!(&seen[..4], [1.0, 2.0, 3.0, 4.0]);
    assert!(m.execution().contains("replay: device lost"), "{}", m.execution());
    assert_eq!(warnings_containing("replay: device lost"), 1);
    assert!(seen[4..].iter().all(|l| l.is_finite()), "eager steps go on: {seen:?}");
}

#[test]
fn a_model_without_a_recordable_step_says_so() {
    struct Plain;
    impl Model for Plain {
        fn describe(&self) -> Description {
            Description {
                name: "plain".into(),
                shapes: String::new(),
                num_params: 0,
                regime: blaze_ir::plan::Regime::Forward,
                device: blaze_ir::plan::DeviceInfo {
                    adapter: String::new(),
                    backend: String::new(),
                    compiler: String::new(),
                },
            }
        }
        fn step(&mut self, _capture: bool) -> StepOutput {
            StepOutput::default()
        }
        fn sync(&self) {}
    }
    let mut m = Captured::with_warm_steps(Box::new(Plain), 0).warn_with(keep);
    m.step(false);
    assert!(m.execution().contains("plain does not offer a recordable step"), "{}", m.execution());
}
