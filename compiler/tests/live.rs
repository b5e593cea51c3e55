//! Issue 15 on lavapipe: one real short training run in live mode, with a shipped plan among
//! its arms. Arms are verified on side
//! instances before the run; the race runs on the run's own steps, settles, and the schedule's
//! drift checks run; the run's losses stay within the verification tolerance of Burn's own run.
mod common;
use blaze_compiler::live::command::LiveRun;
use blaze_compiler::live::driver::What;
use common::*;

const MODEL: [&str; 3] = ["chain-32", "--batch", "4"];
const STEPS: usize = 400;

#[test]
fn a_live_run_settles_rechecks_and_keeps_burns_numbers() {
    let dir = scratch("live");
    let out = dir.join("live.ron");
    // A shipped plan for this run joins the race as an arm.
    let trace_path = dir.join("t.ron");
    let mut trace_args = vec!["trace"];
    trace_args.extend(MODEL);
    trace_args.extend(["-o", trace_path.to_str().unwrap()]);
    ok(&trace_args);
    let shipped = dir.join("shipped.ron");
    ok(&["plan", "--trace", trace_path.to_str().unwrap(), "--every-live", "2", "-o", shipped.to_str().unwrap()]);
    let shipped_cuts: Vec<String> = blaze_ir::PlanFile::parse(&std::fs::read_to_string(&shipped).unwrap()).unwrap().cuts.iter().map(|c| c.to_string()).collect();
    let mut args = vec!["live"];
    args.extend(MODEL);
    let steps = STEPS.to_string();
    args.extend(["--bundle", shipped.to_str().unwrap(), "--steps", &steps, "--first-check", "30", "--min-rounds", "3", "--rounds", "12", "--check-rounds", "8", "--max-blocks", "1,2", "--cut-arms", "1", "-o", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&ok(&args).stdout).into_owned();
    let run: LiveRun = ron::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let r = &run.report;
    assert_eq!((r.steps as usize, run.losses.len()), (STEPS, STEPS));
    assert_eq!(r.arms[0].text, "c0: burn");
    assert_eq!(r.arms[1].text, format!("c1: {}", shipped_cuts.join(" ")), "the shipped entry is an arm");
    assert!(r.arms.len() >= 2, "arms: {:?}, refused {:?}", r.arms, r.refused);
    assert!(r.arms[1..].iter().all(|a| a.verify.starts_with("Verified")), "every arm that ran was verified first: {:?}", r.arms);
    assert_eq!(r.usage.iter().map(|u| u.steps).sum::<u64>(), STEPS as u64, "every step ran under an arm");

    let settled: Vec<u64> = r.events.iter().filter(|e| matches!(e.what, What::Settled { .. })).map(|e| e.step).collect();
    let checks: Vec<(u64, u64)> = r.events.iter().filter_map(|e| match e.what {
        What::Checked { next_in_steps, clean, .. } => Some((e.step, if clean { next_in_steps } else { 0 })),
        _ => None,
    }).collect();
    assert!(!settled.is_empty() && r.settle_step == Some(settled[0]), "{stdout}");
    assert!(!checks.is_empty(), "the schedule ran a check after settling: {stdout}");
    assert!(checks[0].0 >= settled[0] + 30, "the first check waits its delay: {checks:?} after {settled:?}");
    assert!(stdout.contains("settled on c") && stdout.contains("| arm | plan | verify | steps | median ms/step |"), "{stdout}");

    // Burn's own run of the same steps from the same seed: the live run's every loss within the
    // verification tolerance (relative to the largest loss).
    let report = dir.join("burn.ron");
    let mut args = vec!["run"];
    args.extend(MODEL);
    let timed = (STEPS - 2).to_string();
    args.extend(["--warmup", "0", "--settle-steps", "0", "--steps", &timed, "--report", report.to_str().unwrap()]);
    ok(&args);
    let burn = read_report(&report);
    assert_eq!(burn.losses.len(), STEPS);
    let diff = max_rel_diff(&run.losses, &burn.losses);
    eprintln!("live run vs Burn's run: largest relative loss difference {diff:e} over {STEPS} steps");
    assert!(diff <= blaze_compiler::tune::verify::REL_TOL, "losses drifted {diff:e} from Burn's run");
}
