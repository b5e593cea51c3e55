//! A plan's submission batch applies only when it is set before the device starts (CubeCL reads
//! `CUBECL_WGPU_MAX_TASKS` once, then). A plan loaded after the program made its first tensor,
//! as building a model does, is warned about even though nothing has synced yet. One test: the
//! environment is shared by the whole test process. Runs on the default wgpu device (lavapipe
//! in CI).
use blaze_ir::plan::{Regime, Settings};
use blaze_ir::{BoundaryId, Contract, PlanFile};
use blaze_runtime::settings::MAX_TASKS_ENV;
use blaze_runtime::{LoadOutcome, fallback_warning, load_plan_text};
use burn::tensor::Tensor;

fn contract() -> Contract {
    Contract {
        model: "late-load".into(),
        regime: Regime::Forward,
        shapes: "n=4".into(),
        op_stream: "00ff".into(),
        ops_per_step: 1,
        device: blaze_burn::device_info(),
        burn_version: blaze_runtime::BURN_VERSION.into(),
        recordable_step: None,
    }
}

/// Loads a plan asking for a submission batch of 16, the variable unset; returns its notes.
fn load_batch_plan() -> Vec<String> {
    // SAFETY: this test binary has one test and starts no thread that reads the environment.
    unsafe { std::env::remove_var(MAX_TASKS_ENV) };
    let settings = Settings { max_tasks: Some(16), ..Settings::default() };
    let plan = PlanFile::burn_default(contract(), vec![BoundaryId(0)]).with_settings(settings);
    match load_plan_text(&plan.to_ron(), &contract()) {
        LoadOutcome::Applied(handle) => handle.notes,
        LoadOutcome::Fallback(err) => panic!("fell back: {}", fallback_warning(&err)),
    }
}

#[test]
fn a_submission_batch_loaded_after_the_first_tensor_is_warned_about() {
    assert_eq!(burn_fusion::cut::servers_started(), 0, "no tensor yet");
    assert!(load_batch_plan().is_empty(), "in time: nothing to say");
    assert_eq!(std::env::var(MAX_TASKS_ENV).as_deref(), Ok("16"));

    let device = blaze_burn::default_device();
    // Made from data, as seeded parameters are: CubeCL's device starts here, not at a sync.
    let _weights = Tensor::<1>::from_floats([0.5, 1.0, 1.5, 2.0], &device);
    assert_eq!(burn_fusion::cut::servers_started(), 1, "the device's first tensor starts its fusion server");
    assert_eq!(burn_fusion::cut::syncs(), 0, "nothing synced: a check on syncs would miss this load");

    let notes = load_batch_plan();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("warning: blaze: the plan's max_tasks = 16 was loaded after the program's first tensor"),
        "{}",
        notes[0]
    );
}
