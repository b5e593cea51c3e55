//! Issue 12 on the real device (lavapipe in CI): `blazec doctor` compares Burn's plan with Burn
//! executing nothing fused, localises the fused blocks that change the numbers and writes a plan
//! that unfuses only them.
mod common;
use blaze_compiler::doctor::DoctorReport;
use common::*;

fn doctor(dir: &std::path::Path, regime: &str, tolerance: &str) -> (DoctorReport, String) {
    let plan = dir.join(format!("fix-{regime}.ron"));
    let mut args = vec!["doctor"];
    args.extend(SMALL);
    args.extend(["--regime", regime, "--tolerance", tolerance, "-o", plan.to_str().unwrap()]);
    let out = ok(&args);
    let report = ron::from_str(&std::fs::read_to_string(plan.with_extension("doctor.ron")).unwrap()).unwrap();
    (report, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// At the default tolerance Burn's fused attention matches the unfused reference: the doctor
/// says so and writes no plan.
#[test]
fn doctor_writes_no_plan_when_burn_matches_the_unfused_reference() {
    let dir = scratch("doctor-match");
    let (report, stdout) = doctor(&dir, "forward", "1e-5");
    assert!(report.verdict.contains("matches the unfused reference"), "{stdout}");
    assert!(report.before.max_rel <= 1e-5 && report.culprits.is_empty());
    assert!(!dir.join("fix-forward.ron").exists(), "no plan when nothing is wrong");
    assert!(dir.join("fix-forward.doctor.md").exists());
}

/// At tolerance 0 any changed bit counts. Fused kernels on lavapipe round differently from
/// unfused ones (foundation tests: ~1e-7 relative), so there is something real to find: the
/// doctor must name blocks whose unfusing alone restores the reference bit for bit.
#[test]
fn doctor_localises_the_blocks_whose_fusion_changes_bits_and_unfuses_only_them() {
    let dir = scratch("doctor-bits");
    let (report, stdout) = doctor(&dir, "training", "0");
    assert!(report.before.max_rel > 0.0, "precondition: Burn's fused training step differs from unfused in some bit: {stdout}");
    assert!(!report.culprits.is_empty() && report.culprits.len() <= report.fused_blocks, "{stdout}");
    let after = report.after.as_ref().expect("the culprit plan was probed");
    assert_eq!(after.max_rel, 0.0, "unfusing the culprits restores the reference bit for bit: {stdout}");
    assert!(report.probes > 4, "{stdout}");
    let plan = blaze_ir::PlanFile::parse(&std::fs::read_to_string(dir.join("fix-training.ron")).unwrap()).expect("a valid plan");
    let expected: Vec<u64> = report.culprits.iter().flat_map(|b| b.ops.iter().skip(1).map(|(o, _)| *o as u64)).collect();
    let mut got: Vec<u64> = plan.cuts.iter().map(|c| c.0).collect();
    let mut want = expected.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want, "the plan cuts inside the culprit blocks and nowhere else");
    let md = std::fs::read_to_string(dir.join("fix-training.doctor.md")).unwrap();
    assert!(md.contains("## Culprit: block") && md.contains("For a Burn bug report"), "{md}");
}
