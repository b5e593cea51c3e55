//! Workloads whose training step cannot be recorded say why, and keep training eagerly.
use blaze_ir::plan::Regime;
use blaze_runtime::{Captured, Model};

#[test]
fn gpt_small_training_is_not_recorded_because_of_its_dropout() {
    let factory = blaze_workloads::find_factory("gpt-small", Some(2), Some(16)).expect("gpt-small");
    let mut captured = Captured::new(factory.build(Regime::Training).unwrap()).warn_with(|_| {});
    let first = captured.step(false);
    assert!(first.loss.is_finite(), "the step still runs");
    let execution = captured.execution();
    assert!(execution.starts_with("eager: cannot be recorded: dropout 0.1"), "{execution}");
    // Its forward step has no dropout to draw: it is recordable.
    let mut forward = Captured::new(factory.build(Regime::Forward).unwrap()).warn_with(|_| {});
    for _ in 0..5 {
        forward.step(false);
    }
    assert_eq!(forward.execution(), "captured");
}
