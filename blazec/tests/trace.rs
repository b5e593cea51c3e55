//! Traces are deterministic files, their DOT renders, every cut point is accepted by
//! the runtime hook, and a cut at a live one changes what executes.
mod common;
use common::*;

#[test]
fn tracing_twice_gives_identical_files() {
    let (first, _) = trace("forward");
    let again = scratch("det").join("again.ron");
    let mut args = vec!["trace"];
    args.extend(SMALL);
    args.extend(["--regime", "forward", "-o", again.to_str().unwrap()]);
    ok(&args);
    assert_eq!(std::fs::read(&first).unwrap(), std::fs::read(&again).unwrap(), "trace files differ between runs");
}

/// The candidate list and the e-graph's groups are the same in two processes (no
/// hash-order or time dependence), so a tune's plan space can be reproduced from its trace.
#[test]
fn candidates_and_egraph_groups_are_identical_across_runs() {
    let (path, _) = trace("training");
    let space = || {
        String::from_utf8_lossy(
            &ok(&["space", "--trace", path.to_str().unwrap(), "--budget", "24", "--dry-run"]).stdout,
        )
        .into_owned()
    };
    let (first, again) = (space(), space());
    assert!(first.lines().count() > 2, "{first}");
    assert_eq!(first, again);
}

#[test]
fn dot_export_renders_with_graphviz_and_text_dump_lists_every_op() {
    let dir = scratch("dot");
    let (dot, text, out) = (dir.join("t.dot"), dir.join("t.txt"), dir.join("t.ron"));
    let mut args = vec!["trace"];
    args.extend(SMALL);
    args.extend([
        "--regime",
        "forward",
        "-o",
        out.to_str().unwrap(),
        "--dot",
        dot.to_str().unwrap(),
        "--text",
        text.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&ok(&args).stdout).into_owned();
    assert!(stdout.contains("ops,") && stdout.contains("cut points"), "summary: {stdout}");
    let svg = std::process::Command::new("dot")
        .args(["-Tsvg", dot.to_str().unwrap()])
        .output()
        .expect("graphviz `dot` is installed (see .ci/run)");
    assert!(svg.status.success(), "{}", String::from_utf8_lossy(&svg.stderr));
    assert!(String::from_utf8_lossy(&svg.stdout).contains("<svg"));
    let (_, trace) = trace("forward");
    let dump = std::fs::read_to_string(&text).unwrap();
    assert_eq!(dump.lines().filter(|l| l.contains('%')).count(), trace.ops.len());
}

#[test]
fn every_cut_point_is_accepted_and_a_live_cut_changes_the_partition() {
    let (_, trace) = trace("forward");
    let all = trace.plan(trace.cut_points());
    all.validate().expect("every listed boundary id is a valid cut");
    let dir = scratch("hook");
    let path = dir.join("all.ron");
    std::fs::write(&path, all.to_ron()).unwrap();
    let (report, stderr) = run("forward", Some(&path), "all-cuts");
    assert_eq!(report.plan, "applied", "{stderr}");
    let ids: Vec<u64> = trace.cut_points().iter().map(|b| b.0).collect();
    assert_eq!(report.partition.spanned_cuts(&ids), Vec::<u64>::new());

    let live = *trace.live_cut_points().first().expect("a live cut point");
    let one = dir.join("one.ron");
    std::fs::write(&one, trace.plan(vec![live]).to_ron()).unwrap();
    let (report, _) = run("forward", Some(&one), "one-cut");
    assert_ne!(report.partition, burn_default("forward").partition, "a cut at live {live} changed nothing");
    assert!(report.partition.spanned_cuts(&[live.0]).is_empty());
}

#[test]
fn trace_help_has_examples_and_bad_input_is_a_clear_error() {
    let help = String::from_utf8_lossy(&ok(&["trace", "--help"]).stdout).into_owned();
    assert!(help.contains("Examples:") && help.contains("blazec trace attention-d257"), "{help}");
    let out = blazec(&["trace", "no-such-model", "-o", "/tmp/x.ron"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown model `no-such-model`"));
    let out = blazec(&["trace"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `blazec list` names every workload in registry order with its parameter count
/// (counted on a built instance; the counts follow from docs/workloads.md's definitions), then,
/// apart, the models found by name that are not reference workloads.
#[test]
fn list_prints_every_workload_with_its_parameter_count() {
    let out = String::from_utf8_lossy(&ok(&["list"]).stdout).into_owned();
    let (reference, others) = out.split_once("\nalso found by name (not reference workloads):\n").expect(&out);
    let others: Vec<&str> = others.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(others, ["gpt-small-device-dropout", "narrow-head-mlp"], "{out}");
    let rows: Vec<(String, u64)> = reference
        .lines()
        .map(|l| {
            let mut words = l.split_whitespace();
            (words.next().unwrap().to_string(), words.next().unwrap().parse().unwrap())
        })
        .collect();
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "attention-d256",
            "attention-d257",
            "attention-d258",
            "mlp-w1024",
            "mlp-w1025",
            "lstm-h256",
            "cnn-mnist",
            "moe-e8k2",
            "gpt-small",
            "chain-32"
        ],
        "{out}"
    );
    let count = |name: &str| rows.iter().find(|(n, _)| n == name).unwrap().1;
    // chain-32: one learned scalar. cnn-mnist: conv 1→16 3×3 (160) + conv 16→32 3×3 (4,640) +
    // linear 1568→10 (15,690).
    assert_eq!(count("chain-32"), 1);
    assert_eq!(count("cnn-mnist"), 20_490);
    assert_eq!(count("attention-d257"), 1_724_084);
    assert!(rows.iter().all(|(_, p)| *p > 0), "{out}");
}

/// A tune's report text, timings aside, is the same in two runs: what was requested,
/// what the e-graph and confirm collapsed, and every candidate's id and cuts. (Which candidate
/// wins depends on timings and is not compared.)
#[test]
fn tune_report_text_is_identical_across_runs_apart_from_timings() {
    let dir = scratch("det-tune");
    let report = |tag: &str| {
        let out = dir.join(format!("{tag}.ron"));
        ok(&[
            "tune",
            "chain-32",
            "--batch",
            "4",
            "--device",
            "vulkan",
            "--budget",
            "6",
            "--rounds",
            "10",
            "--min-rounds",
            "3",
            "--race-budget",
            "10",
            "--max-blocks",
            "1",
            "-o",
            out.to_str().unwrap(),
        ]);
        std::fs::read_to_string(out.with_extension("report.md")).unwrap()
    };
    // The lines that do not depend on a clock: the plan-space summary and, per candidate row,
    // its id and cuts.
    let timeless = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                if l.starts_with("- requested") {
                    Some(l.to_string())
                } else if l.starts_with("| c") {
                    Some(l.split('|').take(3).collect::<Vec<_>>().join("|"))
                } else {
                    None
                }
            })
            .collect()
    };
    let (first, again) = (report("first"), report("again"));
    let (a, b) = (timeless(&first), timeless(&again));
    assert!(a.len() >= 4 && a[0].starts_with("- requested"), "{first}");
    assert_eq!(a, b, "the report's timeless lines differ between runs");
}
