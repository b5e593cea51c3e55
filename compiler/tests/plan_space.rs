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

/// Issue 5: a candidate that hangs or crashes the process is recorded as broken and the tune
/// goes on without it (worker process + journal; `tune_supervise.rs`).
#[test]
fn tune_records_a_hanging_and_a_crashing_candidate_as_broken_and_goes_on() {
    let dir = scratch("tune-broken");
    let plan = dir.join("plan.ron");
    let mut args = vec!["tune"];
    args.extend(SMALL);
    args.extend(["--regime", "forward", "--device", "lavapipe", "--budget", "4", "--rounds", "3", "--no-fusion-off"]);
    args.extend(["--hang-timeout", "10", "--inject-hang", "2", "--inject-panic", "3", "-o", plan.to_str().unwrap()]);
    let out = ok(&args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.contains("candidate c2 hung: no progress for 10 s; recorded as broken"), "{stderr}");
    assert!(stderr.contains("candidate c3 crashed the worker"), "{stderr}");

    let results: blaze_compiler::tune::TuneResult = ron::from_str(&std::fs::read_to_string(dir.join("plan.results.ron")).unwrap()).unwrap();
    let broken: Vec<usize> = results.broken.iter().map(|(id, _)| *id).collect();
    assert_eq!(broken, vec![2, 3]);
    let timed: Vec<usize> = results.timed.iter().map(|t| t.id).collect();
    assert_eq!(timed, vec![0, 1], "the others are still measured");
    let report = std::fs::read_to_string(dir.join("plan.report.md")).unwrap();
    assert!(report.contains("| c2 | | – | – | 0 | broken: hung"), "{report}");
    blaze_ir::PlanFile::parse(&std::fs::read_to_string(&plan).unwrap()).expect("a valid plan is written");
}
