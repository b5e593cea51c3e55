//! Issues 4 and 5 on the real device: the e-graph never merges requests that execute
//! differently, and the verification gate refuses a plan made to compute something different.
mod common;
use common::*;

#[test]
fn egraph_merges_only_requests_that_execute_identically() {
    let (trace_path, _) = trace("forward");
    let out = scratch("space").join("space.ron");
    let stdout = ok(&["space", "--trace", trace_path.to_str().unwrap(), "--budget", "8", "--check-egraph", "-o", out.to_str().unwrap()]);
    let summary = String::from_utf8_lossy(&stdout.stdout).into_owned();
    let report: blaze_compiler::space::SpaceReport = ron::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(report.requested.len(), 8, "{summary}");
    assert_eq!(report.confirmed_requests, 8);
    assert_eq!(report.false_merges, vec![], "{summary}");
    assert_eq!(report.egraph_stop_reason, "Saturated");
    let survivors = report.requested.len() - report.collapsed_by_egraph - report.collapsed_by_confirm;
    assert_eq!(report.survivors.len(), survivors);
    assert!(report.requested[0].ends_with("burn") && report.survivors[0] == 0, "Burn's plan is candidate 0 and survives");
}

#[test]
fn verify_gate_refuses_a_faulty_plan_and_verifies_a_sound_one() {
    let (trace_path, _) = trace("training");
    let faulty = String::from_utf8_lossy(&ok(&["verify", "--trace", trace_path.to_str().unwrap(), "--every-live", "4", "--inject-fault"]).stdout).into_owned();
    assert!(faulty.contains("Refused(\"different"), "{faulty}");
    let sound = String::from_utf8_lossy(&ok(&["verify", "--trace", trace_path.to_str().unwrap(), "--every-live", "4"]).stdout).into_owned();
    assert!(sound.contains("Verified"), "{sound}");
}
