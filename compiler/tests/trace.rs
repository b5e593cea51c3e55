//! Issue 3: traces are deterministic files, their DOT renders, every cut point is accepted by
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

#[test]
fn dot_export_renders_with_graphviz_and_text_dump_lists_every_op() {
    let dir = scratch("dot");
    let (dot, text, out) = (dir.join("t.dot"), dir.join("t.txt"), dir.join("t.ron"));
    let mut args = vec!["trace"];
    args.extend(SMALL);
    args.extend(["--regime", "forward", "-o", out.to_str().unwrap(), "--dot", dot.to_str().unwrap(), "--text", text.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&ok(&args).stdout).into_owned();
    assert!(stdout.contains("ops,") && stdout.contains("cut points"), "summary: {stdout}");
    let svg = std::process::Command::new("dot").args(["-Tsvg", dot.to_str().unwrap()]).output().expect("graphviz `dot` is installed (see .ci/run)");
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
