//! Driving a model: warm-up, recorded steps, timed steps. Every step starts at a sync, so
//! operation indices (counted from the last sync) are step positions.
use blaze_runtime::{Model, RecordedStep, StepOutput, StepRecorder};
use std::time::{Duration, Instant};

/// Untimed stepping after warm-up, before anything is timed. On the H200 the first ~250 ms of
/// steps after a compilation pause ran 2-3x slower (clocks ramping back up; results/h200/
/// 2026-11-30-s2/bench raw samples), which three warm-up steps did not cover.
pub const SETTLE: Duration = Duration::from_millis(1000);

/// How long to settle: for a wall time, or for a step count (to repeat another run's settling
/// exactly, so two runs see the same batches and their losses compare step by step).
#[derive(Clone, Copy, Debug)]
pub enum Settle {
    For(Duration),
    Steps(usize),
}

/// Steps `model` untimed until the settle condition holds (no step for zero). Returns the losses
/// of the steps it ran.
pub fn settle(model: &mut dyn Model, how: Settle) -> Vec<f32> {
    let start = Instant::now();
    let mut losses = Vec::new();
    let more = |n: usize| match how {
        Settle::For(min) => start.elapsed() < min,
        Settle::Steps(k) => n < k,
    };
    while more(losses.len()) {
        model.sync();
        losses.push(model.step(false).loss);
    }
    model.sync();
    losses
}

/// Runs `n` steps, not timed (compilation, autotune and fusion exploration happen here).
/// Returns the wall time they took, which is reported as a cost.
pub fn warm_up(model: &mut dyn Model, n: u32) -> f64 {
    let start = Instant::now();
    settle(model, Settle::Steps(n as usize));
    start.elapsed().as_secs_f64()
}

/// Runs one step under a recorder: its operations and executed blocks.
pub fn record_step(model: &mut dyn Model, capture: bool) -> (RecordedStep, StepOutput) {
    model.sync();
    let guard = StepRecorder::start();
    let out = model.step(capture);
    model.sync();
    (guard.finish(), out)
}

/// Times one step in milliseconds, device synchronised at both ends.
pub(crate) fn timed_step(model: &mut dyn Model) -> (f64, StepOutput) {
    model.sync();
    let start = Instant::now();
    let out = model.step(false);
    model.sync();
    (start.elapsed().as_secs_f64() * 1e3, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blaze_runtime::Description;

    /// A model whose steps take `step` of wall time and count themselves.
    struct Sleeper {
        step: Duration,
        steps: u32,
    }

    impl Model for Sleeper {
        fn describe(&self) -> Description {
            unreachable!("settle never asks")
        }
        fn step(&mut self, _capture: bool) -> StepOutput {
            std::thread::sleep(self.step);
            self.steps += 1;
            StepOutput { loss: self.steps as f32, ..Default::default() }
        }
        fn sync(&self) {}
    }

    #[test]
    fn settle_steps_until_the_minimum_time_has_passed() {
        let mut m = Sleeper { step: Duration::from_millis(10), steps: 0 };
        let start = Instant::now();
        let losses = settle(&mut m, Settle::For(Duration::from_millis(60)));
        assert!(start.elapsed() >= Duration::from_millis(60));
        assert!((6..=12).contains(&m.steps), "{} steps", m.steps);
        assert_eq!(losses.len() as u32, m.steps, "one loss per step, in order");
        assert_eq!(losses[0], 1.0);
    }

    #[test]
    fn zero_settle_runs_no_step() {
        let mut m = Sleeper { step: Duration::from_millis(10), steps: 0 };
        assert!(settle(&mut m, Settle::For(Duration::ZERO)).is_empty());
        assert_eq!(m.steps, 0);
    }

    #[test]
    fn settle_by_steps_repeats_an_exact_count() {
        let mut m = Sleeper { step: Duration::ZERO, steps: 0 };
        assert_eq!(settle(&mut m, Settle::Steps(7)), (1..=7).map(|i| i as f32).collect::<Vec<_>>());
    }
}
