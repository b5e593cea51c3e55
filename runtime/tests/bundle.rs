//! One bundle file, the entry that fits the run installed by one call; a regime
//! switch picks the other entry; no fitting entry leaves Burn's plan with the reason; an old
//! single-plan file still loads through the same call.
use blaze_ir::plan::{DeviceInfo, Regime};
use blaze_ir::{BoundaryId, Bundle, Contract, PlanFile};
use blaze_runtime::{LoadOutcome, fallback_warning, load_plan};

fn contract(regime: Regime, adapter: &str) -> Contract {
    Contract {
        model: "attention-d257".into(),
        regime,
        shapes: "batch=2 seq=32 d=257".into(),
        op_stream: String::new(),
        ops_per_step: 100,
        device: DeviceInfo { adapter: adapter.into(), backend: "vulkan".into(), compiler: "wgsl".into() },
        burn_version: "0.22.1".into(),
        recordable_step: None,
    }
}

fn plan(regime: Regime, adapter: &str, cut: u64) -> PlanFile {
    let mut c = contract(regime, adapter);
    c.op_stream = "00ff".into();
    let mut p = PlanFile::burn_default(c, vec![BoundaryId(3), BoundaryId(7)]);
    p.cuts = vec![BoundaryId(cut)];
    p
}

fn cuts(outcome: &LoadOutcome) -> Vec<BoundaryId> {
    match outcome {
        LoadOutcome::Applied(handle) => handle.plan.cuts.clone(),
        LoadOutcome::Fallback(err) => panic!("fell back: {}", fallback_warning(err)),
    }
}

#[test]
fn the_entry_for_this_device_and_regime_is_installed_and_a_regime_switch_picks_the_other() {
    let dir = std::env::temp_dir().join(format!("blaze-bundle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut bundle = Bundle::new();
    bundle.upsert(plan(Regime::Training, "llvmpipe", 7));
    bundle.upsert(plan(Regime::Forward, "llvmpipe", 3));
    bundle.upsert(plan(Regime::Training, "NVIDIA H200", 3));
    let path = dir.join("model.blaze");
    std::fs::write(&path, bundle.to_ron()).unwrap();

    let training = load_plan(&path, &contract(Regime::Training, "llvmpipe"));
    assert_eq!(cuts(&training), vec![BoundaryId(7)]);
    assert_eq!(burn_fusion::cut::store_key(), PlanFile::store_key(&[BoundaryId(7)], None));
    let forward = load_plan(&path, &contract(Regime::Forward, "llvmpipe"));
    assert_eq!(cuts(&forward), vec![BoundaryId(3)]);
    assert_eq!(burn_fusion::cut::store_key(), PlanFile::store_key(&[BoundaryId(3)], None));

    let LoadOutcome::Fallback(err) = load_plan(&path, &contract(Regime::Forward, "NVIDIA H200")) else {
        panic!("no H200 forward entry")
    };
    let warning = fallback_warning(&err);
    assert!(
        warning.contains(
            "no entry of the bundle fits this run (attention-d257 forward [batch=2 seq=32 d=257] on NVIDIA H200"
        ),
        "{warning}"
    );
    assert_eq!(burn_fusion::cut::store_key(), 0, "Burn's own plan in force");

    let old = dir.join("plan.ron");
    std::fs::write(&old, plan(Regime::Training, "llvmpipe", 3).to_ron()).unwrap();
    assert_eq!(
        cuts(&load_plan(&old, &contract(Regime::Training, "llvmpipe"))),
        vec![BoundaryId(3)],
        "a plan file loads as before"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `let _ = blaze_burn::init(..)` drops the handle at once: the watch stops before the program's
/// first operation and no entry can be installed. The handle says so when dropped (one
/// warning naming the fix); a handle with nothing to install, or one dropped at the end of a
/// run, says nothing.
#[test]
fn a_handle_dropped_before_the_first_operation_warns_that_nothing_will_be_installed() {
    let dir = std::env::temp_dir().join(format!("blaze-bundle-drop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut bundle = Bundle::new();
    bundle.upsert(plan(Regime::Training, "llvmpipe", 7));
    let path = dir.join("model.blaze");
    std::fs::write(&path, bundle.to_ron()).unwrap();
    let device = contract(Regime::Training, "llvmpipe").device;

    let handle = blaze_runtime::load_bundle(&path, &device);
    assert!(handle.fallback.is_none() && handle.entries.len() == 1, "{:?}", handle.fallback);
    let warning = handle.drop_warning().expect("dropped before the first operation, it warns");
    assert!(
        warning.starts_with("warning: blaze: the bundle handle was dropped before the program's first operation")
            && warning.contains("1 entries for this device will be installed")
            && warning.contains("`let _blaze = blaze_burn::init(..)`, not `let _ = ..`"),
        "{warning}"
    );
    drop(handle);

    let elsewhere = DeviceInfo { adapter: "NVIDIA H200".into(), backend: "vulkan".into(), compiler: "wgsl".into() };
    let nothing = blaze_runtime::load_bundle(&path, &elsewhere);
    assert!(nothing.fallback.is_some());
    assert_eq!(nothing.drop_warning(), None, "nothing could be installed anyway");
    let _ = std::fs::remove_dir_all(&dir);
}
