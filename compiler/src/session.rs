//! Driving a model: warm-up, recorded steps, timed steps. Every step starts at a sync, so
//! operation indices (counted from the last sync) are step positions.
use blaze_runtime::{Model, RecordedStep, StepOutput, StepRecorder};
use std::time::Instant;

/// Runs `n` steps, not timed (compilation, autotune and fusion exploration happen here).
/// Returns the wall time they took, which is reported as a cost.
pub fn warm_up(model: &mut dyn Model, n: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        model.sync();
        model.step(false);
    }
    model.sync();
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
pub fn timed_step(model: &mut dyn Model) -> (f64, StepOutput) {
    model.sync();
    let start = Instant::now();
    let out = model.step(false);
    model.sync();
    (start.elapsed().as_secs_f64() * 1e3, out)
}
