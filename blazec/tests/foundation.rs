//! On the real device: a cut plan executes its cuts, replays them, and computes Burn's
//! numbers; an empty plan is Burn's plan; bad plan files fall back with one clear warning.
mod common;
use common::*;

/// Relative tolerance for losses and logits between two partitions of the same computation.
/// Fused and unfused kernels evaluate the same f32 operations, but a fused kernel may keep
/// intermediates in registers and reductions may sum in another order, so results differ by
/// rounding: a few ulps (~1e-7 relative) per operation, compounded over ~1000 operations and a
/// few Adam updates. 1e-5 leaves two orders of magnitude of margin above what we observe
/// (~1e-7) while still catching any real difference in what is computed.
const REL_TOL: f32 = 1e-5;

#[test]
fn cut_plan_executes_exactly_its_cuts_replays_and_matches_burn_numerics() {
    let (_, trace) = trace("training");
    let live = trace.live_cut_points();
    assert!(live.len() > 20, "attention training should offer many live cut points, got {}", live.len());
    let cuts: Vec<_> = live.iter().copied().step_by(4).collect();
    let plan_path = scratch("cut").join("plan.ron");
    std::fs::write(&plan_path, trace.plan(cuts.clone()).to_ron()).unwrap();

    let default = burn_default("training");
    let (planned, stderr) = run("training", Some(&plan_path), "cut");
    // "applied" (not "applied (op stream not confirmed)"): the runtime confirmed the op stream
    // by itself, with no call from the program. The target for load + confirm is 10 ms
    // on the GPU machine. Both are CPU time of the program's threads, so they do not grow with
    // the machine's load as wall time did (17-56 ms here, most of it descheduled behind
    // lavapipe). On the 2-core CI machine: 9-13 ms alone, 13-14 ms with three runs at once;
    // the watch before its one-string signature line took 17-21 ms alone.
    assert_eq!(planned.plan, "applied", "stderr: {stderr}");
    let (load, check) = (planned.plan_load_ms.unwrap(), planned.op_stream_check_ms.unwrap());
    eprintln!("plan load {load:.3} ms, automatic op-stream check {check:.3} ms (CPU time)");
    assert!(load + check <= 20.0, "plan load {load} ms + automatic op-stream check {check} ms of CPU time");
    // Per operation of the step, alone on the 2-core CI machine: 0.9-1.1 us since the watch
    // fingerprints no run before one has shown the step's length and keeps only live tensors
    // in a cheaply hashed map, 1.8-1.9 us before (results/lavapipe/2026-12-04-watch-cost/);
    // 2.8-3.2 us measured with the machine busier (0685295); 4.5-5.7 us when a sampled thread CPU clock's readings doubled the estimate;
    // 7.6-10.6 us before the watch fingerprinted runs as operations arrive. The bound leaves
    // room for the other tests of this file running beside it. The target on the GPU
    // machine's host is 1 us.
    let per_op_us = check * 1e3 / planned.ops as f64;
    assert!(
        per_op_us <= 5.0,
        "the op-stream check costs {per_op_us:.2} us per operation of the step ({check:.3} ms for {} operations)",
        planned.ops
    );
    assert_ne!(planned.partition.fingerprint(), default.partition.fingerprint(), "cuts changed nothing");

    let ids: Vec<u64> = cuts.iter().map(|c| c.0).collect();
    assert_eq!(planned.partition.spanned_cuts(&ids), Vec::<u64>::new(), "a requested cut was not executed");
    assert!(default.partition.spanned_cuts(&ids).len() == ids.len(), "every cut point splits one of Burn's blocks");
    assert_eq!(planned.hook_calls_after_warmup, 0, "steady-state steps must replay cached plans");

    assert_eq!(planned.losses.len(), default.losses.len());
    assert_eq!(planned.logits.len(), default.logits.len());
    let loss_diff = max_rel_diff(&planned.losses, &default.losses);
    assert!(loss_diff <= REL_TOL, "losses differ by {loss_diff:e}");
    let logit_diff = max_rel_diff(&planned.logits, &default.logits);
    assert!(logit_diff <= REL_TOL, "logits differ by {logit_diff:e}");
    assert_eq!(argmax_rows(&planned.logits, planned.classes), argmax_rows(&default.logits, default.classes));
}

#[test]
fn empty_plan_reproduces_burn_default_partition() {
    let (_, trace) = trace("forward");
    let plan_path = scratch("empty").join("plan.ron");
    std::fs::write(&plan_path, trace.plan(vec![]).to_ron()).unwrap();
    let (planned, _) = run("forward", Some(&plan_path), "empty");
    let default = burn_default("forward");
    assert_eq!(planned.plan, "applied");
    assert_eq!(planned.partition, default.partition);
    assert_eq!(planned.losses, default.losses);
}

#[test]
fn bad_plan_files_fall_back_to_burn_with_one_clear_warning() {
    let (_, trace) = trace("forward");
    let good = trace.plan(trace.live_cut_points().into_iter().take(3).collect());
    let text = good.to_ron();
    let mut unknown_boundary = good.clone();
    unknown_boundary.cuts.push(blaze_ir::BoundaryId(999_999));
    let mut other_model = good.clone();
    other_model.contract.op_stream = "0123456789abcdef0123456789abcdef".into();
    let mut other_device = good.clone();
    other_device.contract.device.adapter = "Apple M5".into();
    let cases: Vec<(&str, Option<String>, &str)> = vec![
        ("missing", None, "cannot read plan file"),
        ("malformed", Some("PlanFile(format_version: 1, cuts: [b3".into()), "not valid plan RON"),
        ("empty", Some(String::new()), "plan file is empty"),
        ("truncated", Some(text[..text.len() / 3].to_string()), "not valid plan RON"),
        ("newer-version", Some(text.replace("format_version: 1", "format_version: 7")), "format version 7"),
        ("unknown-boundary", Some(unknown_boundary.to_ron()), "not cut points of its model: b999999"),
        ("other-model", Some(other_model.to_ron()), "op stream"),
        ("other-device", Some(other_device.to_ron()), "device adapter `Apple M5`"),
    ];
    let default = burn_default("forward");
    for (name, content, reason) in cases {
        let path = scratch("bad").join(format!("{name}.ron"));
        if let Some(content) = content {
            std::fs::write(&path, content).unwrap();
        }
        let (report, stderr) = run("forward", Some(&path), name);
        let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning: blaze:")).collect();
        assert_eq!(warnings.len(), 1, "{name}: expected one warning, got {warnings:?}");
        assert!(
            warnings[0].contains(reason) && warnings[0].ends_with("using Burn's own fusion plan"),
            "{name}: warning `{}` does not name `{reason}`",
            warnings[0]
        );
        assert!(report.plan.starts_with("fallback"), "{name}: {}", report.plan);
        assert_eq!(report.partition, default.partition, "{name}: Burn's own plan must be in force");
    }
}

/// Protocol blaze-measure/2: `run` settles for a wall time after warm-up before timing, and the
/// settling steps are accounted for (their losses are kept, they are not timed).
#[test]
fn run_settles_untimed_before_the_first_timed_step() {
    let report = scratch("settle").join("run.ron");
    let mut args = vec!["run"];
    args.extend(SMALL);
    args.extend([
        "--regime",
        "forward",
        "--warmup",
        "1",
        "--steps",
        "2",
        "--settle-ms",
        "400",
        "--report",
        report.to_str().unwrap(),
    ]);
    ok(&args);
    let r = read_report(&report);
    assert!(r.settle_steps >= 1, "400 ms of settling ran no step");
    // warm-up, the op-stream check step, settling, timed steps, the recorded last step
    assert_eq!(r.losses.len(), 1 + 1 + r.settle_steps + 2 + 1);
    assert_eq!(r.step_ms.len(), 2, "settling steps must not be timed");
    // `--settle-steps` settles by count, so two runs' losses line up step for step.
    let counted = scratch("settle").join("counted.ron");
    let mut args = vec!["run"];
    args.extend(SMALL);
    args.extend([
        "--regime",
        "forward",
        "--warmup",
        "1",
        "--steps",
        "2",
        "--settle-steps",
        "3",
        "--report",
        counted.to_str().unwrap(),
    ]);
    ok(&args);
    let c = read_report(&counted);
    assert_eq!(c.settle_steps, 3);
    assert_eq!(c.losses.len(), 1 + 1 + 3 + 2 + 1);
    assert_eq!(c.losses[..2], r.losses[..2], "same seeded steps give the same losses");
}
