//! On the real device (lavapipe in CI): `blazec doctor` compares Burn's plan with Burn
//! executing nothing fused, localises the fused blocks that change the numbers and writes a plan
//! that unfuses only them.
mod common;
use blaze_compiler::doctor::DoctorReport;
use common::*;

fn doctor(dir: &std::path::Path, regime: &str, tolerance: &str, fault: Option<u64>) -> (DoctorReport, String) {
    let plan = dir.join(format!("fix-{regime}.ron"));
    let mut args = vec!["doctor"];
    args.extend(SMALL);
    args.extend(["--regime", regime, "--tolerance", tolerance, "-o", plan.to_str().unwrap()]);
    let fault = fault.map(|op| op.to_string());
    let env: Vec<(&str, &str)> = fault.iter().map(|op| (blaze_runtime::fault::FUSED_FAULT_ENV, op.as_str())).collect();
    let out = blazec_env(&args, &env);
    assert!(out.status.success(), "blazec {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let report = ron::from_str(&std::fs::read_to_string(plan.with_extension("doctor.ron")).unwrap()).unwrap();
    (report, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// At the default tolerance Burn's fused attention matches the unfused reference: the doctor
/// says so and writes no plan.
#[test]
fn doctor_writes_no_plan_when_burn_matches_the_unfused_reference() {
    let dir = scratch("doctor-match");
    let (report, stdout) = doctor(&dir, "forward", "1e-5", None);
    assert!(report.verdict.contains("matches the unfused reference"), "{stdout}");
    assert!(report.before.max_rel <= 1e-5 && report.culprits.is_empty());
    assert!(!dir.join("fix-forward.ron").exists(), "no plan when nothing is wrong");
    assert!(dir.join("fix-forward.doctor.md").exists());
}

/// The first residual add of the step that Burn fuses after another operation: the block of
/// Burn's partition that holds it, and its step position.
fn residual_add_in_a_fused_block(trace: &blaze_ir::Trace) -> (usize, u64) {
    for (block, ops) in trace.partition.fused_blocks_sorted() {
        for &o in &ops[1..] {
            let sig = &trace.ops[o as usize].sig;
            if sig.kind == "NumericFloat/Add" && sig.shapes.len() == 3 && sig.shapes[0] == sig.shapes[1] {
                return (block, o as u64);
            }
        }
    }
    panic!("no residual add inside a fused block of {}", trace.model);
}

/// The injected defect: the fused kernels around one residual add compute a
/// subtraction there, while the add executed on its own stays right. The doctor must name
/// exactly the block that holds it, and its plan must restore the reference numbers while the
/// other fused blocks stay fused.
#[test]
fn doctor_names_exactly_the_block_whose_fused_kernel_is_wrong_and_unfuses_only_it() {
    let (_, trace) = trace("training");
    let (block, target) = residual_add_in_a_fused_block(&trace);
    let dir = scratch("doctor-fault");
    let (report, stdout) = doctor(&dir, "training", "1e-5", Some(target));
    assert_eq!(report.injected_fault, Some(target), "{stdout}");
    assert!(report.before.max_rel > 1e-3, "the fault changes Burn's numbers: {stdout}");
    let named: Vec<usize> = report.culprits.iter().map(|b| b.block).collect();
    assert_eq!(named, vec![block], "exactly the faulted block (op {target}): {stdout}");
    let after = report.after.as_ref().expect("the culprit plan was probed");
    assert!(after.max_rel <= 1e-5, "the plan restores the reference: {stdout}");
    // Unfusing a block lets its neighbours regroup (on lavapipe 3 of 55 do: the matmul before
    // the next GELU joins it); the other blocks must execute exactly as Burn fused them.
    let others = report.fused_blocks - 1;
    let same = report.others_unchanged.expect("counted");
    assert!(same * 10 >= others * 9, "the other fused blocks stay as Burn fused them ({same} of {others}): {stdout}");
    let plan = blaze_ir::PlanFile::parse(&std::fs::read_to_string(dir.join("fix-training.ron")).unwrap())
        .expect("a valid plan");
    let mut got: Vec<u64> = plan.cuts.iter().map(|c| c.0).collect();
    got.sort();
    let (_, ops) = trace.partition.fused_blocks_sorted().into_iter().find(|(b, _)| *b == block).unwrap();
    let want: Vec<u64> = ops[1..].iter().map(|&o| o as u64).collect();
    assert_eq!(got, want, "the plan cuts inside the faulted block and nowhere else");
    let md = std::fs::read_to_string(dir.join("fix-training.doctor.md")).unwrap();
    assert!(
        md.contains("## Culprit: block") && md.contains("For a Burn bug report") && md.contains("Test fault injected"),
        "{md}"
    );
}

/// A fault that no fuser ever sees (an operation Burn never fuses after another) is an error,
/// so a fault test cannot pass because the fault silently missed.
#[test]
fn a_fused_fault_that_never_reaches_a_fuser_is_an_error() {
    let dir = scratch("doctor-miss");
    let out = dir.join("probe.ron");
    let mut args = vec!["probe"];
    args.extend(SMALL);
    args.extend(["--regime", "forward", "--steps", "1", "-o", out.to_str().unwrap()]);
    let run = blazec_env(&args, &[(blaze_runtime::fault::FUSED_FAULT_ENV, "0")]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error: the injected fused fault never reached a fuser: operation 0"), "{stderr}");
}
