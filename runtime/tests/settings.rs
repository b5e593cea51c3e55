//! A version-2 (or 3) plan's settings are applied at load. The beam width (and how
//! its plans are cached) selects a plan store of its own (so it changes what Burn explores, shown on the device by
//! compiler/tests/settings.rs); the submission batch is set for CubeCL before the device starts,
//! and a program's own value wins with a note naming both. One test: the environment is shared
//! by the whole test process.
use blaze_ir::plan::{DeviceInfo, PlanStore, Regime, Settings};
use blaze_ir::{BoundaryId, Contract, PlanFile};
use blaze_runtime::settings::MAX_TASKS_ENV;
use blaze_runtime::{LoadOutcome, fallback_warning, load_plan_text};

fn contract() -> Contract {
    Contract {
        model: "attention-d257".into(),
        regime: Regime::Training,
        shapes: "batch=2 seq=32 d=257".into(),
        op_stream: "00ff".into(),
        ops_per_step: 100,
        device: DeviceInfo { adapter: "llvmpipe".into(), backend: "vulkan".into(), compiler: "wgsl".into() },
        burn_version: "0.22.1".into(),
        recordable_step: None,
    }
}

fn load(settings: Settings) -> Vec<String> {
    load_with_cuts(&[BoundaryId(7)], settings)
}

fn load_with_cuts(cuts: &[BoundaryId], settings: Settings) -> Vec<String> {
    let mut plan = PlanFile::burn_default(contract(), vec![BoundaryId(3), BoundaryId(7)]).with_settings(settings);
    plan.cuts = cuts.to_vec();
    match load_plan_text(&plan.to_ron(), &contract()) {
        LoadOutcome::Applied(handle) => {
            assert_eq!(handle.plan.settings, settings);
            handle.notes
        }
        LoadOutcome::Fallback(err) => panic!("fell back: {}", fallback_warning(&err)),
    }
}

#[test]
fn settings_are_applied_at_load_and_the_programs_own_value_is_named() {
    let width = Settings::beam_width(Some(2));
    assert!(load(width).is_empty());
    assert_eq!(
        burn_fusion::cut::store_key(),
        PlanFile::store_key(&[BoundaryId(7)], Some(2)),
        "the width has a plan store of its own"
    );
    assert_ne!(burn_fusion::cut::store_key(), PlanFile::store_key(&[BoundaryId(7)], None));

    // A width alone, cached by position (version 3): a store apart from the same width shared.
    let positional = Settings { store: Some(PlanStore::ByPosition), ..width };
    assert!(load_with_cuts(&[], positional).is_empty());
    assert_eq!(burn_fusion::cut::store_key(), PlanFile::store_key_of(&[], &positional));
    assert_ne!(burn_fusion::cut::store_key(), PlanFile::store_key(&[], Some(2)), "not the shared width's store");

    // SAFETY: this test binary has one test; nothing else reads the environment meanwhile.
    unsafe { std::env::remove_var(MAX_TASKS_ENV) };
    let tasks = Settings { max_tasks: Some(16), ..Settings::default() };
    assert!(load(tasks).is_empty());
    assert_eq!(std::env::var(MAX_TASKS_ENV).as_deref(), Ok("16"), "set for CubeCL to read when the device starts");

    unsafe { std::env::set_var(MAX_TASKS_ENV, "8") };
    let notes = load(tasks);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("CUBECL_WGPU_MAX_TASKS=8 set by this program wins over the plan's max_tasks = 16"),
        "{}",
        notes[0]
    );
    assert_eq!(std::env::var(MAX_TASKS_ENV).as_deref(), Ok("8"), "the program's value is left alone");
}
