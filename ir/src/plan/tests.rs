use super::*;

pub(crate) fn contract() -> Contract {
    Contract {
        model: "attention-d257".into(),
        regime: Regime::Training,
        shapes: "batch=2 seq=32 d=257".into(),
        op_stream: "00ff".into(),
        ops_per_step: 100,
        device: DeviceInfo { adapter: "llvmpipe".into(), backend: "vulkan".into(), compiler: "wgsl".into() },
        burn_version: "0.22.1".into(),
    }
}

fn plan() -> PlanFile {
    let mut p = PlanFile::burn_default(contract(), vec![BoundaryId(3), BoundaryId(7)]);
    p.cuts = vec![BoundaryId(7)];
    p
}

#[test]
fn ron_round_trip() {
    let p = plan();
    assert_eq!(PlanFile::parse(&p.to_ron()), Ok(p));
}

#[test]
fn empty_and_truncated_files_are_refused() {
    assert_eq!(PlanFile::parse("  \n"), Err(PlanError::Empty));
    let text = plan().to_ron();
    let cut = &text[..text.len() / 2];
    assert!(matches!(PlanFile::parse(cut), Err(PlanError::Malformed(_))));
}

#[test]
fn newer_version_is_refused_with_its_number() {
    let text = plan().to_ron().replace("format_version: 1", "format_version: 9");
    let err = PlanFile::parse(&text).unwrap_err();
    assert_eq!(err, PlanError::UnknownVersion { found: 9, oldest: 1, newest: 1 });
    assert!(err.to_string().contains("format version 9"));
}

#[test]
fn unknown_boundary_is_refused() {
    let mut p = plan();
    p.cuts = vec![BoundaryId(5), BoundaryId(7), BoundaryId(500)];
    let err = PlanFile::parse(&p.to_ron()).unwrap_err();
    assert_eq!(err, PlanError::UnknownBoundaries("b5, b500".into()));
}

#[test]
fn contract_mismatch_names_the_field() {
    let mut other = contract();
    other.device.adapter = "NVIDIA H200".into();
    let err = plan().check_contract(&other).unwrap_err();
    assert!(err.to_string().contains("device adapter `llvmpipe`"), "{err}");
    let mut other = contract();
    other.op_stream = String::new(); // not known yet: not a mismatch
    assert_eq!(plan().check_contract(&other), Ok(()));
}

#[test]
fn store_keys_separate_cut_sets() {
    assert_eq!(PlanFile::store_key(&[]), 0);
    let a = PlanFile::store_key(&[BoundaryId(1)]);
    let b = PlanFile::store_key(&[BoundaryId(2)]);
    assert_ne!(a, 0);
    assert_ne!(a, b);
}
