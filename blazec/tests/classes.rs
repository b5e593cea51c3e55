//! On lavapipe: cut points that repeat in every layer form classes, one
//! decision each; class-level requests go through the e-graph and confirm like single cuts,
//! without false merges; `tune --greedy K --classes` adds one whole class per round.
mod common;
use common::*;

fn trace_of(model: &[&str], regime: &str, tag: &str) -> std::path::PathBuf {
    let path = scratch("classes").join(format!("{tag}.ron"));
    let mut args = vec!["trace"];
    args.extend(model);
    args.extend(["--regime", regime, "-o", path.to_str().unwrap()]);
    ok(&args);
    path
}

/// Class sizes printed by `space --classes --dry-run` (`  <n> x  <context>` lines).
fn class_sizes(stdout: &str) -> Vec<usize> {
    stdout.lines().filter_map(|l| l.trim_start().split_once(" x  ")?.0.parse().ok()).collect()
}

#[test]
fn the_blocks_of_gpt_small_share_their_cut_point_classes() {
    let t = trace_of(&["gpt-small", "--batch", "1", "--seq", "16"], "forward", "gpt-small");
    let out = String::from_utf8_lossy(&ok(&["space", "--trace", t.to_str().unwrap(), "--classes", "--dry-run"]).stdout)
        .into_owned();
    let sizes = class_sizes(&out);
    // Four identical blocks: the places inside a block repeat four times (more when one block
    // holds two places that look alike).
    assert!(sizes.iter().filter(|&&n| n == 4).count() >= 3, "{out}");
}

#[test]
fn class_requests_are_canonicalised_and_confirmed_without_false_merges() {
    let t = trace_of(&["chain-32", "--batch", "4"], "training", "chain");
    let dry = String::from_utf8_lossy(&ok(&["space", "--trace", t.to_str().unwrap(), "--classes", "--dry-run"]).stdout)
        .into_owned();
    assert!(class_sizes(&dry).iter().any(|&n| n >= 6), "chain-32 repeats its 4 operations 8 times: {dry}");
    let out = scratch("classes").join("space.ron");
    ok(&[
        "space",
        "--trace",
        t.to_str().unwrap(),
        "--classes",
        "--budget",
        "6",
        "--check-egraph",
        "-o",
        out.to_str().unwrap(),
    ]);
    let report: blaze_compiler::space::SpaceReport = ron::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(report.requested.len(), 6);
    assert!(report.requested[0].ends_with("burn"));
    assert_eq!(report.false_merges, vec![], "{report:?}");
    assert!(
        report.requested[1..].iter().all(|r| r.split_whitespace().count() > 2),
        "class requests cut several places: {:?}",
        report.requested
    );
}

/// The greedy search over classes: every challenger of the first round is one whole class
/// (chain-32's classes repeat 8 or 15 times), raced against Burn's plan.
#[test]
fn greedy_over_classes_races_whole_classes() {
    let dir = scratch("classes-greedy");
    let plan = dir.join("plan.ron");
    let args = chain_tune_args(
        &plan,
        &[
            "--greedy",
            "3",
            "--classes",
            "--greedy-max-rounds",
            "1",
            "--min-rounds",
            "3",
            "--rounds",
            "3",
            "--max-blocks",
            "none",
            "-v",
        ],
    );
    let stderr = String::from_utf8_lossy(&ok(&args).stderr).into_owned();
    let line = stderr
        .lines()
        .find(|l| l.contains("greedy: 0 cut(s) kept, racing 3 challengers"))
        .unwrap_or_else(|| panic!("{stderr}"));
    let sizes: Vec<usize> =
        line.rsplit_once('(').unwrap().1.trim_end_matches(" cuts)").split(", ").map(|n| n.parse().unwrap()).collect();
    assert!(sizes.iter().filter(|&&n| n > 1).count() >= 2, "challengers are whole classes, several cuts each: {line}");
    assert!(stderr.contains("greedy stopped: "), "{stderr}");
    blaze_ir::PlanFile::parse(&std::fs::read_to_string(&plan).unwrap()).expect("a valid plan is written");
}
