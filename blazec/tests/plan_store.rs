//! Plan stores on the real device (lavapipe in CI): a beam width alone (no cuts) caches plans as
//! Burn's own store does, aliased across repeats of a layer, while a policy that cuts by step
//! position (a cut set, the explore probe) caches one plan per position; a width whose plan asks
//! for it (`store: ByPosition`, plan format version 3) caches by position too.
//!
//! Why it matters: on the H200, lstm-h256 training at batch 256 (one LSTM cell repeated every
//! time step) ran the width-8 plan file slower than the same width set in burn.toml, for the
//! same executed partition (results/h200/2026-12-03-s15); the plan's store then held one plan
//! per position. One test: the fuser's policy is process-wide.
use blaze_compiler::drive::{record_step, warm_up};
use blaze_ir::BoundaryId;
use blaze_ir::plan::{PlanStore, Regime, Settings};
use blaze_runtime::{activate_burn_default, activate_explore_probe_with, activate_with};

/// Burn's configured beam width when no burn.toml sets one.
const BURN_WIDTH: u32 = 5;

#[test]
fn a_beam_width_alone_aliases_plans_as_burn_does_and_cut_policies_tag_them() {
    let factory = blaze_workloads::find_factory("lstm-h256", Some(2), Some(8)).expect("lstm-h256 is built in");
    let mut model = factory.build(Regime::Training).expect("model builds");
    // Burn's own store explores the step once (and replays every repeat of the cell).
    let burn = activate_burn_default();
    warm_up(model.as_mut(), 3);
    let burn_partition = record_step(model.as_mut(), false).0.partition;
    let burn_calls = burn.calls();

    // The same width as a plan setting: a store of its own, explored from scratch.
    let width = activate_with(&[], &Settings::beam_width(Some(BURN_WIDTH)));
    warm_up(model.as_mut(), 3);
    let width_partition = record_step(model.as_mut(), false).0.partition;
    let width_calls = width.calls();

    // Position-tagged at the same width: every repeat of the cell is explored on its own.
    let probe = activate_explore_probe_with(Some(BURN_WIDTH));
    warm_up(model.as_mut(), 3);
    let probe_calls = probe.calls();

    // A cut set tags too: its one cut must not reach other repeats through an aliased plan.
    let cut = activate_with(&[BoundaryId(u64::MAX)], &Settings::beam_width(Some(BURN_WIDTH)));
    warm_up(model.as_mut(), 3);
    let cut_calls = cut.calls();

    // The width again, cached by position because its plan says so: a store apart from the
    // shared one above (else it would replay those plans and explore nothing).
    let positional =
        activate_with(&[], &Settings { store: Some(PlanStore::ByPosition), ..Settings::beam_width(Some(BURN_WIDTH)) });
    warm_up(model.as_mut(), 3);
    let positional_calls = positional.calls();
    let positional_partition = record_step(model.as_mut(), false).0.partition;
    activate_burn_default();

    eprintln!(
        "policy consultations: burn {burn_calls}, width {width_calls}, probe {probe_calls}, cut set {cut_calls}, width by position {positional_calls}"
    );
    assert_eq!(
        width_partition.canonical(),
        burn_partition.canonical(),
        "Burn's width as a plan setting executes Burn's partition"
    );
    assert!(width_calls > 0, "the width's store explored the step under its policy");
    assert!(
        width_calls <= burn_calls,
        "the width's store explores no more than Burn's own ({width_calls} > {burn_calls})"
    );
    // On lavapipe at this shape: burn 923, width 747, probe 1714 (a tagged width store: 1714).
    assert!(
        2 * probe_calls > 3 * width_calls,
        "position tagging explores every repeat of the LSTM cell ({probe_calls} consultations), aliasing does not ({width_calls})"
    );
    assert_eq!(cut_calls, probe_calls, "a cut set explores per position, as the probe does");
    assert_eq!(positional_calls, probe_calls, "a width cached by position explores per position, as the probe does");
    assert_eq!(
        positional_partition.canonical(),
        burn_partition.canonical(),
        "caching by position changes no kernel: Burn's partition"
    );
}
