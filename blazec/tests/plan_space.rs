//! On the real device: the e-graph never merges requests that execute
//! differently, and the verification gate refuses a plan made to compute something different.
mod common;
use common::*;
use std::time::Duration;

#[test]
fn egraph_merges_only_requests_that_execute_identically() {
    let (trace_path, _) = trace("forward");
    let out = scratch("space").join("space.ron");
    let stdout = ok(&[
        "space",
        "--trace",
        trace_path.to_str().unwrap(),
        "--budget",
        "8",
        "--check-egraph",
        "-o",
        out.to_str().unwrap(),
    ]);
    let summary = String::from_utf8_lossy(&stdout.stdout).into_owned();
    let report: blaze_compiler::space::SpaceReport = ron::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(report.requested.len(), 8, "{summary}");
    assert_eq!(report.confirmed_requests, 8);
    assert_eq!(report.false_merges, vec![], "{summary}");
    assert_eq!(report.egraph_stop_reason, "Saturated");
    let survivors = report.requested.len() - report.collapsed_by_egraph - report.collapsed_by_confirm;
    assert_eq!(report.survivors.len(), survivors);
    assert!(
        report.requested[0].ends_with("burn") && report.survivors[0] == 0,
        "Burn's plan is candidate 0 and survives"
    );
}

#[test]
fn verify_gate_refuses_a_faulty_plan_and_verifies_a_sound_one() {
    let (trace_path, _) = trace("training");
    let faulty = String::from_utf8_lossy(
        &ok(&["verify", "--trace", trace_path.to_str().unwrap(), "--every-live", "4", "--inject-fault"]).stdout,
    )
    .into_owned();
    assert!(faulty.contains("detail: \"different"), "{faulty}");
    let sound =
        String::from_utf8_lossy(&ok(&["verify", "--trace", trace_path.to_str().unwrap(), "--every-live", "4"]).stdout)
            .into_owned();
    assert!(sound.contains("Verified"), "{sound}");
}

/// The other side of the gate: sound plans are not refused. Plans cutting every live
/// cut point, every second and every third (the first is nearly fusion off) all verify.
#[test]
fn verify_gate_passes_every_sound_plan() {
    let (trace_path, _) = trace("training");
    for k in ["1", "2", "3"] {
        let plan = scratch("verify-sound").join(format!("every-{k}.ron"));
        ok(&["plan", "--trace", trace_path.to_str().unwrap(), "--every-live", k, "-o", plan.to_str().unwrap()]);
        let out = String::from_utf8_lossy(&ok(&["verify", "--plan", plan.to_str().unwrap()]).stdout).into_owned();
        assert!(out.contains("Verified"), "every {k}th live cut: {out}");
    }
}

/// A plan whose fused kernels compute a wrong value (not the model's output scaled
/// afterwards) is refused. The test-only fault makes the plan's fused kernels around one
/// residual add compute a subtraction; Burn's own plan stays right.
#[test]
fn verify_gate_refuses_a_plan_whose_fused_kernels_compute_a_wrong_value() {
    let (trace_path, trace) = trace("training");
    let cuts: Vec<u64> = trace.live_cut_points().into_iter().step_by(4).map(|c| c.0).collect();
    let partition = &trace.partition;
    // A residual add that Burn fuses after another op and that the plan does not cut before.
    let target = partition
        .fused_blocks_sorted()
        .into_iter()
        .flat_map(|(_, ops)| ops.into_iter().skip(1))
        .find(|&o| {
            let sig = &trace.ops[o as usize].sig;
            sig.kind == "NumericFloat/Add"
                && sig.shapes.len() == 3
                && sig.shapes[0] == sig.shapes[1]
                && !cuts.contains(&(o as u64))
        })
        .expect("a fused residual add the plan keeps fused");
    let fault = format!("{target}:plans");
    // The plan file a user has (`verify --plan`), made from the trace by the same cut rule.
    let plan = scratch("verify-fused-fault").join("plan.ron");
    ok(&["plan", "--trace", trace_path.to_str().unwrap(), "--every-live", "4", "-o", plan.to_str().unwrap()]);
    let out =
        blazec_env(&["verify", "--plan", plan.to_str().unwrap()], &[(blaze_runtime::fault::FUSED_FAULT_ENV, &fault)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("detail: \"different"), "{stdout}");
}

/// A candidate that hangs or crashes the process is recorded as broken and the tune
/// goes on without it (worker process + journal; `tune/supervise.rs`).
#[test]
fn tune_records_a_hanging_and_a_crashing_candidate_as_broken_and_goes_on() {
    let dir = scratch("tune-broken");
    let mut args = small_tune(&dir);
    args.extend(["--hang-timeout", "30", "--inject-hang", "2", "--inject-panic", "3"].map(String::from));
    let out = ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.contains("candidate c2 hung: no progress for 30 s; recorded as broken"), "{stderr}");
    assert!(stderr.contains("candidate c3 crashed the worker"), "{stderr}");
    // Piped and without -v, a tune still says what it is doing (one line per kind of stage).
    assert!(stderr.lines().filter(|l| l.starts_with("[blazec tune")).count() >= 3, "{stderr}");
    // What the race measured is said as soon as it ends, before the gate (a tune cut off later
    // has told it): the fusion-off arm's ratio is there, with Burn's median.
    let raced = stderr.lines().find(|l| l.contains("] raced: ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(raced.contains("fusion-off ") && raced.contains("(Burn's plan "), "{raced}");

    let results: blaze_compiler::tune::TuneResult =
        ron::from_str(&std::fs::read_to_string(dir.join("plan.results.ron")).unwrap()).unwrap();
    let broken: Vec<usize> = results.broken.iter().map(|(id, _)| *id).collect();
    assert_eq!(broken, vec![2, 3], "{stderr}");
    let timed: Vec<usize> = results.timed.iter().map(|t| t.id).collect();
    // The 4 requests c0..c3, then one settings candidate per default beam width (1, 2, 3, 8:
    // c4..c7; confirm drops any that executes another's partition), then fusion off (c8).
    assert_eq!(timed[..2], [0, 1], "the others are still raced");
    let off = results.fusion_off_arm.as_ref().expect("fusion off is an arm of the race");
    assert!(
        off.one_op_per_block && off.id == 8 && timed.last() == Some(&8),
        "fusion off in-process: {off:?}, timed {timed:?}"
    );
    for t in results.timed.iter().filter(|t| (4..8).contains(&t.id)) {
        assert!(t.cuts.contains("blocks="), "c4..c7 are beam widths: {}", t.cuts);
    }
    assert!(
        timed.iter().any(|id| (4..8).contains(id)),
        "some beam width partitions differently from Burn's here: {timed:?}"
    );
    for t in &results.timed[1..] {
        let s = t.standing.as_ref().expect("every challenger has a paired standing");
        assert!(s.pairs > 0 && s.lo <= s.ratio && s.ratio <= s.hi, "{s:?}");
    }
    assert!(!results.race_stop.is_empty() && results.protocol.starts_with("blaze-measure/3"));
    let report = std::fs::read_to_string(dir.join("plan.report.md")).unwrap();
    assert!(report.contains("| c2 | | – | – | 0 | – | broken: hung"), "{report}");
    assert!(report.contains("race: ") && report.contains("stopped: "), "{report}");
    blaze_ir::PlanFile::parse(&std::fs::read_to_string(dir.join("plan.ron")).unwrap())
        .expect("a valid plan is written");
}

/// Interrupting `blazec tune` (SIGINT to the tune process alone, as a process manager
/// would send it) leaves no plan and no partial file, although the work runs in a worker process.
#[test]
fn interrupted_tune_leaves_no_partial_plan() {
    let dir = scratch("tune-interrupted");
    let args = small_tune(&dir);
    let mut child = spawn_tune(&args, std::process::Stdio::null());
    // Interrupted in the middle of its work (tracing or racing on lavapipe), its worker at work:
    // the worker's command line names the output directory, as the tune's does.
    std::thread::sleep(Duration::from_secs(8));
    let marker = dir.to_str().unwrap();
    assert!(processes_naming(marker).len() >= 2, "the tune's worker is running: {:?}", processes_naming(marker));
    // The shell's builtin kill: no procps needed. SIGTERM, not SIGINT: when the tests themselves
    // run as a background job, SIGINT is ignored (POSIX, asynchronous lists) and an ignored
    // signal stays ignored across exec, so a SIGINT would never reach blazec.
    let killed = std::process::Command::new("sh").args(["-c", &format!("kill -TERM {}", child.id())]).status().unwrap();
    assert!(killed.success());
    assert!(!child.wait().unwrap().success(), "an interrupted tune must not report success");
    // Nothing can write once no process of the tune is left: the worker notices its parent is
    // gone within a second or two (orphan.rs). Then look.
    let gone = poll(Duration::from_secs(60), || processes_naming(marker).is_empty());
    assert!(gone, "interrupted, still running: {:?}", processes_naming(marker));
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "an interrupted tune left {left:?}");
}

/// A tune killed outright (SIGKILL: no handler runs) at points spread over its run
/// (trace, confirm and race, select/verify/write on lavapipe) leaves either nothing or a
/// complete, valid plan, never a torn one; its worker does not outlive it; and a tune into the
/// same directory afterwards works.
#[test]
fn tune_killed_at_any_point_leaves_no_torn_plan_and_a_second_tune_works() {
    let dir = scratch("tune-sigkill");
    let args = small_tune(&dir);
    for after in [6, 20, 33] {
        let mut child = spawn_tune(&args, std::process::Stdio::null());
        std::thread::sleep(Duration::from_secs(after));
        let _ = std::process::Command::new("sh").args(["-c", &format!("kill -KILL {}", child.id())]).status();
        let _ = child.wait();
        // The worker notices its parent is gone within a second or two (orphan.rs).
        let marker = dir.to_str().unwrap();
        let gone = poll(Duration::from_secs(10), || processes_naming(marker).is_empty());
        assert!(gone, "killed after {after} s, still running: {:?}", processes_naming(marker));
        if let Ok(text) = std::fs::read_to_string(dir.join("plan.ron")) {
            blaze_ir::PlanFile::parse(&text).unwrap_or_else(|e| panic!("killed after {after} s: a torn plan: {e}"));
        }
    }
    // The second tune also adds its plan to a bundle: one entry, the plan itself.
    let bundle = dir.join("model.blaze");
    let mut again = args.clone();
    again.extend(["--bundle".to_string(), bundle.to_str().unwrap().to_string()]);
    let out = ok(&again.iter().map(String::as_str).collect::<Vec<_>>());
    let plan = std::fs::read_to_string(dir.join("plan.ron")).expect("the second tune wrote its plan");
    let plan = blaze_ir::PlanFile::parse(&plan).expect("a valid plan");
    let bundle = blaze_ir::Bundle::read(&bundle).expect("a valid bundle");
    assert_eq!(bundle.entries, vec![plan]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("added the entry for attention-d257-b2s32 forward"));
    let temps: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(temps.len() <= 3, "at most one temp file per kill, and only if a kill fell inside a write: {temps:?}");
    drop(out);
}

/// Two tunes writing the same output at once both finish, and what is left is one
/// whole plan (the last one renamed into place), never a mix of the two.
#[test]
fn two_tunes_into_the_same_output_leave_one_whole_plan() {
    let dir = scratch("tune-twice");
    // The subject is the write at the end, not the search: one candidate, no beam widths.
    let mut args = small_tune(&dir);
    let at = args.iter().position(|a| a == "--budget").unwrap();
    args[at + 1] = "1".into();
    args.splice(at..at, ["--max-blocks".to_string(), "none".to_string()]);
    let (a, b) = (spawn_tune(&args, std::process::Stdio::piped()), spawn_tune(&args, std::process::Stdio::piped()));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let plan =
        blaze_ir::PlanFile::parse(&std::fs::read_to_string(dir.join("plan.ron")).unwrap()).expect("one whole plan");
    assert_eq!(plan.contract.model, "attention-d257-b2s32");
    let left: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(left.iter().all(|n| !n.contains(".tmp-")), "no temp file left: {left:?}");
}

/// The command lines of the running processes whose command line contains `marker`.
fn processes_naming(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(marker))
        .collect()
}

/// Polls `done` every 100 ms until it holds (true) or `limit` has passed (false).
fn poll(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts `blazec <args>` in the background, stdout discarded.
fn spawn_tune(args: &[String], stderr: std::process::Stdio) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_blazec"))
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::var("XDG_RUNTIME_DIR").unwrap_or("/tmp".into()))
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// `blazec tune` of the small forward shape, 4 candidates, 3 rounds, writing `dir/plan.ron`.
fn small_tune(dir: &std::path::Path) -> Vec<String> {
    let mut args: Vec<String> = std::iter::once("tune").chain(SMALL).map(String::from).collect();
    let rest =
        ["--regime", "forward", "--device", "lavapipe", "--budget", "4", "--rounds", "3", "--no-fusion-off", "-o"];
    args.extend(rest.map(String::from));
    args.push(dir.join("plan.ron").to_str().unwrap().to_string());
    args
}

/// A lost device: the test-only `--inject-device-lost N` destroys the wgpu
/// device when candidate N is installed. On a driver that then fails every step, the worker
/// crashes or hangs and the candidate is recorded as broken (the test above covers both
/// paths). On lavapipe the steps after `Device::destroy` run normally, so the injection never
/// produces a lost device; the tune must say so and fail rather than pass for the wrong
/// reason, and must leave no plan.
#[test]
fn an_injected_device_loss_that_never_takes_effect_is_an_error_not_a_pass() {
    let dir = scratch("tune-device-lost");
    let plan = dir.join("plan.ron");
    let args = chain_tune_args(
        &plan,
        &[
            "--budget",
            "2",
            "--max-blocks",
            "none",
            "--rounds",
            "3",
            "--hang-timeout",
            "30",
            "--inject-device-lost",
            "1",
        ],
    );
    let out = blazec(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("note: device destroyed on installing candidate 1"), "the device was destroyed: {stderr}");
    let crashed = stderr.contains("candidate c1 crashed the worker") || stderr.contains("candidate c1 hung");
    if out.status.success() {
        assert!(crashed, "a tune whose device was destroyed finished without leaving the candidate out: {stderr}");
        return;
    }
    let said = stderr.contains("error: --inject-device-lost: the device was destroyed")
        && stderr.contains("but every later step still ran");
    assert!(said, "the tune says the loss did not take effect: {stderr}");
    assert!(!plan.exists(), "no plan is written when the fault did not take effect");
}
