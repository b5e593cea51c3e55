//! On the real device (lavapipe in CI): a plan's beam width (plan format version 2)
//! changes the executed partition, in this process, to exactly what Burn executes with that
//! width set in burn.toml in a process of its own; version-1 plans still run as before.
mod common;
use blaze_compiler::verify::Probe;
use common::*;

fn plan_with(dir: &std::path::Path, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let (trace, _) = trace("training");
    let out = dir.join(name);
    let mut args = vec!["plan", "--trace", trace.to_str().unwrap(), "-o", out.to_str().unwrap()];
    args.extend(extra);
    ok(&args);
    out
}

fn burn_toml_dir(dir: &std::path::Path, max_blocks: u32) -> std::path::PathBuf {
    let cwd = dir.join(format!("burn-toml-{max_blocks}"));
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(cwd.join("burn.toml"), format!("[fusion.beam_search]\nmax_blocks = {max_blocks}\n")).unwrap();
    cwd
}

#[test]
fn a_plans_beam_width_executes_what_burn_toml_executes_in_a_process_of_its_own() {
    let dir = scratch("settings-width");
    std::fs::create_dir_all(dir.join("autotune")).unwrap();
    let burn = probe(&dir, "burn", "burn", &[], &[]);
    for width in [1u32, 2] {
        let plan = plan_with(&dir, &format!("blocks{width}.ron"), &["--max-blocks", &width.to_string()]);
        let text = std::fs::read_to_string(&plan).unwrap();
        assert!(text.contains("format_version: 2") && text.contains(&format!("max_blocks: Some({width})")), "{text}");
        // In-process, after Burn's own plans are explored and cached (as in a race).
        let ours = probe(&dir, &format!("plan-{width}"), plan.to_str().unwrap(), &["--burn-first", "3"], &[]);
        let stock = probe_in(&dir, &burn_toml_dir(&dir, width), &format!("toml-{width}"), "burn", &[], &[]);
        assert_ne!(
            stock.fingerprint, burn.fingerprint,
            "burn.toml max_blocks = {width} changes Burn's partition here, so the check can fail"
        );
        assert_eq!(
            (ours.fingerprint.as_str(), ours.blocks, ours.fused_blocks),
            (stock.fingerprint.as_str(), stock.blocks, stock.fused_blocks),
            "width {width}: same executed partition as burn.toml"
        );
        let bits = |p: &Probe| p.losses.iter().chain(&p.logits).map(|x| x.to_bits()).collect::<Vec<u32>>();
        assert_eq!(bits(&ours), bits(&stock), "width {width}: same numbers, bit for bit");
    }
}

#[test]
fn a_version_1_plan_without_settings_runs_burns_partition() {
    let dir = scratch("settings-v1");
    std::fs::create_dir_all(dir.join("autotune")).unwrap();
    let plan = plan_with(&dir, "v1.ron", &[]);
    assert!(
        std::fs::read_to_string(&plan).unwrap().contains("format_version: 1"),
        "a plan without settings is written as version 1"
    );
    let burn = probe(&dir, "burn", "burn", &[], &[]);
    let v1 = probe(&dir, "v1", plan.to_str().unwrap(), &[], &[]);
    assert_eq!((v1.fingerprint, v1.blocks), (burn.fingerprint, burn.blocks));
}

#[test]
fn a_trace_at_a_beam_width_gives_cut_points_of_that_partition_and_its_plans_carry_the_width() {
    let dir = scratch("settings-trace-width");
    std::fs::create_dir_all(dir.join("autotune")).unwrap();
    let trace_path = dir.join("w1.ron");
    let mut args = vec!["trace"];
    args.extend(SMALL);
    args.extend(["--regime", "training", "--max-blocks", "1", "-o", trace_path.to_str().unwrap()]);
    let out = ok(&args);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("(beam width 1)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let traced = blaze_ir::Trace::from_ron(&std::fs::read_to_string(&trace_path).unwrap()).unwrap();
    let (_, default) = trace("training");
    assert_eq!(traced.max_blocks, Some(1));
    assert_ne!(
        traced.partition.fingerprint(),
        default.partition.fingerprint(),
        "width 1 partitions differently here, so the check can fail"
    );
    let live = traced.live_cut_points();
    assert!(!live.is_empty());

    // Burn's search at width 1 with no cuts executes the traced partition.
    let width_only = dir.join("w1-plain.ron");
    ok(&["plan", "--trace", trace_path.to_str().unwrap(), "-o", width_only.to_str().unwrap()]);
    assert!(
        std::fs::read_to_string(&width_only).unwrap().contains("max_blocks: Some(1)"),
        "a plan from a width trace carries the width"
    );
    let plain = probe(&dir, "w1-plain", width_only.to_str().unwrap(), &["--burn-first", "3"], &[]);
    assert_eq!(plain.fingerprint, traced.partition.fingerprint(), "the trace recorded what width 1 executes");

    // A cut at one of its live cut points changes that partition.
    let cut = dir.join("w1-cut.ron");
    let first = live[live.len() / 2].to_string();
    ok(&["plan", "--trace", trace_path.to_str().unwrap(), "--cuts", &first, "-o", cut.to_str().unwrap()]);
    let with_cut = probe(&dir, "w1-cut", cut.to_str().unwrap(), &["--burn-first", "3"], &[]);
    assert_ne!(
        with_cut.fingerprint, plain.fingerprint,
        "a cut at live cut point {first} of the width-1 partition takes effect"
    );
}

/// A three-round tune of the small shape, forward, writing `plan` (and its raw results beside
/// it), with the test's own `extra` flags.
fn short_forward_tune(
    plan: &std::path::Path,
    extra: &[&str],
) -> (std::process::Output, blaze_compiler::tune::TuneResult) {
    let mut args = vec!["tune"];
    args.extend(SMALL);
    args.extend([
        "--regime",
        "forward",
        "--device",
        "lavapipe",
        "--rounds",
        "3",
        "--no-fusion-off",
        "-v",
        "-o",
        plan.to_str().unwrap(),
    ]);
    args.extend(extra);
    let out = ok(&args);
    let results = std::fs::read_to_string(plan.with_extension("results.ron")).unwrap();
    (out, ron::from_str(&results).unwrap())
}

#[test]
fn tune_races_cuts_over_a_beam_widths_own_partition() {
    let dir = scratch("settings-tune-width");
    let plan = dir.join("plan.ron");
    let (out, results) = short_forward_tune(&plan, &["--budget", "2", "--max-blocks", "1", "--cuts-per-width", "2"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("trace at beam width 1"), "{stderr}");
    let texts: Vec<&str> = results.timed.iter().map(|t| t.cuts.as_str()).collect();
    assert!(texts.iter().any(|t| t.ends_with(": blocks=1")), "the width alone races: {texts:?}");
    let on_width: Vec<&&str> = texts.iter().filter(|t| t.contains("blocks=1 b")).collect();
    assert!(!on_width.is_empty(), "cut plans over the width-1 partition race: {texts:?}");
    let report = std::fs::read_to_string(dir.join("plan.report.md")).unwrap();
    assert!(on_width.iter().all(|t| report.contains(**t)), "the report lists them: {report}");
    blaze_ir::PlanFile::parse(&std::fs::read_to_string(&plan).unwrap()).expect("a valid plan is written");
}

/// `tune --by-position`: a width also races cached by position, beside the same width shared.
/// Both execute the same kernels, so confirm, which collapses candidates of equal partitions,
/// must keep them apart (the host's work differs: on the H200 a width-8 plan of lstm-h256
/// training ran at 120-140 ms by position against 111 ms shared).
#[test]
fn tune_races_a_width_cached_by_position_beside_the_same_width_shared() {
    let plan = scratch("settings-tune-store").join("plan.ron");
    let (_, results) = short_forward_tune(&plan, &["--budget", "1", "--max-blocks", "1", "--by-position"]);
    let texts: Vec<&str> = results.timed.iter().map(|t| t.cuts.as_str()).collect();
    assert!(texts.iter().any(|t| t.ends_with(": blocks=1")), "the width races shared: {texts:?}");
    assert!(
        texts.iter().any(|t| t.ends_with(": blocks=1 store=position")),
        "and by position, not collapsed into it: {texts:?}"
    );
    let written = blaze_ir::PlanFile::parse(&std::fs::read_to_string(&plan).unwrap()).expect("a valid plan is written");
    let by_position = written.settings.store == Some(blaze_ir::plan::PlanStore::ByPosition);
    assert_eq!(
        written.format_version,
        if by_position { 3 } else { written.required_version() },
        "version 3 only when it holds a store"
    );
}

/// `blazec plan --store`: a width cached by position is a version-3 plan; a shared store with
/// cuts is refused with the reason.
#[test]
fn plan_writes_a_store_setting_and_refuses_a_shared_store_with_cuts() {
    let dir = scratch("settings-plan-store");
    let out = plan_with(&dir, "w1-position.ron", &["--max-blocks", "1", "--store", "position"]);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("format_version: 3") && text.contains("store: Some(ByPosition)"), "{text}");
    let (trace_path, traced) = trace("training");
    let bad = dir.join("bad.ron");
    let first = traced.live_cut_points()[0].to_string();
    let out = blazec(&[
        "plan",
        "--trace",
        trace_path.to_str().unwrap(),
        "--cuts",
        &first,
        "--store",
        "shared",
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert!(!out.status.success() && !bad.exists());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("store = shared is not possible with cuts"), "{stderr}");
}

/// The submission batch is fixed per process, so `tune --max-tasks` races each
/// value in a co-resident server process of its own, in turns, paired with a reference process
/// (the program's current value) and beside a control process (the reference's configuration
/// again). A known slowdown (each step three times as long) injected into one server must be
/// found slower, also while this binary's other tests load the machine (a 50 % slowdown was
/// not separated in 14 rounds then: 1.69 [0.97, 2.68]); every server ran the same seeded steps,
/// so its losses equal the reference's; the control is never kept.
#[test]
fn tune_races_submission_batches_across_co_resident_processes() {
    let dir = scratch("settings-tune-tasks");
    let plan = dir.join("plan.ron");
    let args = chain_tune_args(
        &plan,
        &[
            "--budget",
            "1",
            "--max-blocks",
            "none",
            "--min-rounds",
            "10",
            "--rounds",
            "20",
            "--max-tasks",
            "1,64",
            "--inject-process-slowdown",
            "64:2",
            "-v",
        ],
    );
    let out = blazec_env(&args, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("racing across processes"), "{stderr}");
    assert_eq!(
        stderr.matches("serve: model built in").count(),
        4,
        "each server says where its start-up went: {stderr}"
    );
    let results: blaze_compiler::tune::TuneResult =
        ron::from_str(&std::fs::read_to_string(dir.join("plan.results.ron")).unwrap()).unwrap();
    let p = results.process_race.expect("a race across processes was run");
    let shape: Vec<(u32, bool)> = p.arms.iter().map(|a| (a.max_tasks, a.control)).collect();
    assert_eq!(
        shape,
        vec![(32, false), (32, true), (1, false), (64, false)],
        "reference, control, then one server per other value"
    );
    assert!(p.arms.iter().all(|a| a.losses_match), "every server computed the reference's losses: {:?}", p.arms);
    let slowed = &p.arms[3];
    let verdict = slowed.standing.as_ref().map(|s| s.verdict.clone());
    assert_eq!(
        verdict,
        Some(blaze_compiler::race::Verdict::Slower),
        "the slowed server is found slower: {}",
        slowed.outcome
    );
    assert_ne!(p.kept, Some(64));
    let written = blaze_ir::PlanFile::parse(&std::fs::read_to_string(&plan).unwrap()).expect("a valid plan is written");
    assert_eq!(written.settings.max_tasks, p.kept, "the plan carries the kept submission batch, if any");
    let report = std::fs::read_to_string(dir.join("plan.report.md")).unwrap();
    assert!(report.contains("## Across processes: submission batch") && report.contains("p1 (control)"), "{report}");
    assert!(
        report.contains("Every comparison in the table above was made in one process"),
        "the report says which comparisons were in-process"
    );
}

/// A tune stopped during the race across processes (there, a cold H200 spent minutes starting
/// servers and the campaign's time limit killed two tunes that had finished their in-process
/// race) keeps what the in-process race selected: the plan, its report and raw results are
/// written before the first server starts, saying the process race had not ended.
#[test]
fn a_tune_stopped_during_the_race_across_processes_keeps_its_in_process_selection() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    let dir = scratch("settings-tune-stopped");
    let plan = dir.join("plan.ron");
    let args = chain_tune_args(
        &plan,
        &["--budget", "1", "--max-blocks", "none", "--min-rounds", "10", "--rounds", "10", "--max-tasks", "64", "-v"],
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_blazec"))
        .args(&args)
        .env("XDG_RUNTIME_DIR", std::env::var("XDG_RUNTIME_DIR").unwrap_or("/tmp".into()))
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        let written = line.contains("in-process selection written to");
        seen.push(line);
        if written {
            break;
        }
    }
    // The supervisor, its worker and any server: the whole group, as a time limit would; only
    // a group the child leads (never this test's own).
    let pid = child.id() as libc::pid_t;
    assert_eq!(unsafe { libc::getpgid(pid) }, pid, "the tune leads its own process group");
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let _ = child.wait();
    assert!(seen.last().is_some_and(|l| l.contains("in-process selection written to")), "{seen:#?}");
    assert!(!seen.iter().any(|l| l.contains("racing across processes")), "stopped before the race: {seen:#?}");
    let written = blaze_ir::PlanFile::parse(&std::fs::read_to_string(&plan).unwrap()).expect("a valid plan is there");
    assert_eq!(written.settings.max_tasks, None, "no submission batch was decided");
    let selection = written.measurements.expect("the plan carries its measurements").selection;
    assert!(selection.contains(blazec::commands::tune::PROCESS_RACE_PENDING), "{selection}");
    let results: blaze_compiler::tune::TuneResult =
        ron::from_str(&std::fs::read_to_string(dir.join("plan.results.ron")).unwrap()).unwrap();
    assert!(results.process_race.is_none() && results.race.is_some(), "the in-process race's raw results are kept");
    assert!(
        std::fs::read_to_string(dir.join("plan.report.md"))
            .unwrap()
            .contains(blazec::commands::tune::PROCESS_RACE_PENDING)
    );
}
