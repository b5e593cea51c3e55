//! The captured gate's eager runs are made once per tune: a recording gated after another takes
//! Burn's own runs (its eager twin, fusion off, Burn's default plan) from the earlier gate
//! (`blaze_compiler::verify::EagerRuns`). That is right only if an eager run from a fresh
//! seeded instance computes the same numbers whenever it is made in the process, a recording
//! made in between included. Checked here on the device, in process (the fuser's policy is
//! process-wide: one test).
use blaze_compiler::candidate::Candidate;
use blaze_compiler::verify::{EagerRuns, verify_captured};
use blaze_ir::plan::{Regime, VerifyOutcome};

/// The training gate's length at the small shape (eager warm-up, recording, replays).
const STEPS: u32 = 16;

#[test]
fn an_eager_gate_run_reused_computes_what_a_run_made_afresh_computes() {
    let factory =
        blaze_workloads::find_factory("attention-d257", Some(2), Some(32)).expect("attention-d257 is built in");
    let factory = factory.as_ref();
    let burn = Candidate::new(0, vec![]);
    let captured = burn.captured(1);

    let mut shared = EagerRuns::default();
    let before = shared.probe(factory, Regime::Training, &burn, STEPS).expect("Burn's plan runs");
    // A gate with runs of its own: it records a step, and makes its eager twin afresh.
    let afresh = verify_captured(factory, Regime::Training, &captured, STEPS, &mut EagerRuns::default());
    assert!(matches!(afresh, VerifyOutcome::Verified { .. }), "{afresh}");
    // Burn's plan again from a fresh instance, after the recording: the same numbers, bit for bit.
    let after = EagerRuns::default().probe(factory, Regime::Training, &burn, STEPS).expect("Burn's plan runs");
    assert_eq!(before.losses, after.losses);
    assert_eq!(before.params, after.params);
    assert_eq!(before.logits, after.logits);
    assert!(before.losses.last() < before.losses.first(), "it learns: {:?}", before.losses);

    // The same gate with the eager twin taken from the earlier run: the same verdict.
    let reused = verify_captured(factory, Regime::Training, &captured, STEPS, &mut shared);
    assert_eq!(shared.reused(), 1);
    assert_eq!(reused, afresh);
}
