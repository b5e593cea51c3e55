//! The harness drives a model blazec does not know: trace it and run a plan made from it.
use std::process::Command;

fn user_model(args: &[&str]) -> std::process::Output {
    let out =
        Command::new(env!("CARGO_BIN_EXE_user-model")).args(args).env("XDG_RUNTIME_DIR", "/tmp").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn blazec_commands_drive_a_users_own_model() {
    let dir = std::env::temp_dir().join(format!("blaze-user-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.ron");
    let out = user_model(&["trace", "tiny-mlp-lm", "-o", trace.to_str().unwrap()]);
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.starts_with("tiny-mlp-lm training:"), "{summary}");
    let t = blaze_ir::Trace::from_ron(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert!(t.ops.len() > 20 && !t.boundaries.is_empty(), "{} ops, {} cut points", t.ops.len(), t.boundaries.len());
    let plan = dir.join("plan.ron");
    user_model(&["plan", "--trace", trace.to_str().unwrap(), "--every-live", "2", "-o", plan.to_str().unwrap()]);
    let out = user_model(&["run", "tiny-mlp-lm", "--plan", plan.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("plan: applied"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A user's binary introduces itself by its own name and does not offer
/// blazec's attention demo, which its catalog cannot run.
#[test]
fn a_users_binary_has_its_own_name_in_help_and_no_demo() {
    let help = String::from_utf8_lossy(&user_model(&["--help"]).stdout).into_owned();
    assert!(help.contains("Usage: user-model"), "{help}");
    assert!(!help.contains("blazec <COMMAND>") && !help.lines().any(|l| l.trim_start().starts_with("demo ")), "{help}");
}

/// Without XDG_RUNTIME_DIR, Mesa's Vulkan code used to print stray `error:`
/// lines on every run; the library now sets it, so stderr holds no error.
#[test]
fn no_stray_errors_without_xdg_runtime_dir() {
    let dir = std::env::temp_dir().join(format!("blaze-user-xdg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.ron");
    let out = Command::new(env!("CARGO_BIN_EXE_user-model"))
        .args(["trace", "tiny-mlp-lm", "--regime", "forward", "-o", trace.to_str().unwrap()])
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.to_lowercase().contains("error"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The doctor runs on a user's own model through the harness: a diagnosis (exit 0)
/// with its report, here that Burn's plan matches the unfused reference.
#[test]
fn doctor_diagnoses_a_users_own_model() {
    let dir = std::env::temp_dir().join(format!("blaze-user-doctor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("fix.ron");
    let out = user_model(&["doctor", "tiny-mlp-lm", "--regime", "training", "-o", plan.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("tiny-mlp-lm training") && stdout.contains("matches the unfused reference"), "{stdout}");
    let report = std::fs::read_to_string(dir.join("fix.doctor.md")).unwrap();
    assert!(report.contains("| loss step 3 |"), "{report}");
    assert!(!plan.exists(), "no plan when nothing is wrong");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The user's own program starts from a bundle with one call (`blaze_burn::init`):
/// with no regime or shape declared, the training entry is installed while it trains and the
/// forward entry while it evaluates, each executing exactly what `run --plan` executes with
/// that entry's plan file (and not Burn's partition).
#[test]
fn one_call_installs_the_training_entry_then_the_forward_entry() {
    let dir = std::env::temp_dir().join(format!("blaze-user-init-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bundle = dir.join("model.blaze");
    let mut planned = Vec::new();
    for regime in ["training", "forward"] {
        let trace = dir.join(format!("{regime}.trace.ron"));
        user_model(&["trace", "tiny-mlp-lm", "--regime", regime, "-o", trace.to_str().unwrap()]);
        let plan = dir.join(format!("{regime}.ron"));
        user_model(&[
            "plan",
            "--trace",
            trace.to_str().unwrap(),
            "--every-live",
            "2",
            "-o",
            plan.to_str().unwrap(),
            "--bundle",
            bundle.to_str().unwrap(),
        ]);
        let with_plan = run_partition(&dir, regime, Some(&plan));
        assert_ne!(with_plan, run_partition(&dir, regime, None), "{regime}: the plan changes the partition");
        planned.push(with_plan);
    }
    let out = user_model(&["train", "--bundle", bundle.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = |phase: &str| {
        stdout.lines().find(|l| l.starts_with(&format!("after {phase}: "))).unwrap_or_default().to_string()
    };
    let (train, eval) = (line("training"), line("evaluation"));
    assert!(
        train.starts_with("after training: installed tiny-mlp-lm training [batch=8 seq=32] on llvmpipe"),
        "{stdout}{stderr}"
    );
    assert!(train.ends_with(&format!("; partition {}", planned[0])), "{stdout}");
    assert!(
        eval.starts_with("after evaluation: installed tiny-mlp-lm forward [batch=8 seq=32] on llvmpipe"),
        "{stdout}{stderr}"
    );
    assert!(eval.ends_with(&format!("; partition {}", planned[1])), "{stdout}");
    assert!(!stderr.contains("warning"), "{stderr}");

    // The same program without a sync per step: plans cannot apply (they count operations from
    // the last sync), and the runtime says so once instead of staying silent.
    let out = user_model(&["train", "--bundle", bundle.to_str().unwrap(), "--no-step-boundary"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("operations ran without a device sync")
            && warnings[0].contains("blaze_burn::step_boundary"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("after training: installed none;"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bundle with no entry for this device: the program runs under Burn's plan and
/// one warning names this device and the entries the bundle holds.
#[test]
fn one_call_with_no_entry_for_this_device_warns_once_and_runs_burns_plan() {
    let dir = std::env::temp_dir().join(format!("blaze-user-init-none-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.ron");
    user_model(&["trace", "tiny-mlp-lm", "-o", trace.to_str().unwrap()]);
    let plan = dir.join("p.ron");
    user_model(&["plan", "--trace", trace.to_str().unwrap(), "--every-live", "2", "-o", plan.to_str().unwrap()]);
    let mut elsewhere = blaze_ir::PlanFile::parse(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    elsewhere.contract.device.adapter = "NVIDIA H200".into();
    let mut bundle = blaze_ir::Bundle::new();
    bundle.upsert(elsewhere);
    let path = dir.join("model.blaze");
    std::fs::write(&path, bundle.to_ron()).unwrap();
    let out = user_model(&["train", "--bundle", path.to_str().unwrap(), "--steps", "3", "--eval-steps", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout
            .contains(&format!("after training: installed none; partition {}", run_partition(&dir, "training", None))),
        "{stdout}"
    );
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("no entry of the bundle fits this run (this run on llvmpipe")
            && warnings[0].contains("it holds: tiny-mlp-lm training [batch=8 seq=32] on NVIDIA H200"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The executed partition of `user-model run` (last step), under `plan` or Burn's own.
fn run_partition(dir: &std::path::Path, regime: &str, plan: Option<&std::path::Path>) -> String {
    let report = dir.join(format!("run-{regime}-{}.ron", plan.is_some()));
    let mut args = vec!["run", "tiny-mlp-lm", "--regime", regime, "--report", report.to_str().unwrap()];
    if let Some(p) = plan {
        args.extend(["--plan", p.to_str().unwrap()]);
    }
    user_model(&args);
    let report: blaze_compiler::runner::RunReport = ron::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    report.partition.fingerprint()
}

/// The user's inference loop (`blaze_burn::CapturedForward::from_bundle`) is recorded when the
/// bundle's entry for its op stream asks for captured execution, checks its first replays against eager
/// execution, and computes what the eager loop computes; with an eager entry it never records.
#[test]
fn a_users_inference_loop_is_captured_when_the_bundle_says_so() {
    let dir = std::env::temp_dir().join(format!("blaze-user-captured-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("forward.ron");
    user_model(&["trace", "tiny-mlp-lm", "--regime", "forward", "-o", trace.to_str().unwrap()]);
    let bundle = |name: &str, captured: bool| bundle_of(&dir, &trace, name, captured);
    let (captured, eager) = (bundle("captured.blaze", true), bundle("eager.blaze", false));
    let infer = |bundle: &std::path::Path| train_line(bundle, "inference:", "logits sum ");
    let (line, replayed, stderr) = infer(&captured);
    // 12 calls: 3 eager, 1 recorded, 8 replays (the first 3 checked against eager execution).
    assert!(
        line.contains("12 calls, captured (8 replays)") && line.contains("MiB with the recording live"),
        "{line}\n{stderr}"
    );
    assert!(!stderr.contains("captured execution not in force"), "{stderr}");
    let (line, eager_sum, _) = infer(&eager);
    assert!(line.contains("eager: the bundle holds no captured forward entry for this device"), "{line}");
    assert!(
        ((replayed - eager_sum) / eager_sum).abs() < 1e-5,
        "replays compute the eager numbers: {replayed} vs {eager_sum}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The user's captured training plan (`dir/captured.ron`) and the trace it was made from.
fn users_captured_training_plan(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let trace = dir.join("training.ron");
    user_model(&["trace", "tiny-mlp-lm", "--regime", "training", "-o", trace.to_str().unwrap()]);
    let plan = dir.join("captured.ron");
    user_model(&["plan", "--trace", trace.to_str().unwrap(), "--captured", "-o", plan.to_str().unwrap()]);
    (trace, plan)
}

/// A user's training step, recorded with its Adam held in place (`blaze_burn::DeviceAdam`):
/// the captured gate replays it (30 times here, 200 in the long tier) against Burn's own Adam
/// run eagerly, every loss and output and the parameters at the end, and passes it; the user's
/// own fine-tuning loop (`blaze_burn::CapturedTraining`) records it when the bundle says so.
#[test]
fn a_users_captured_training_step_passes_the_gate() {
    let dir = std::env::temp_dir().join(format!("blaze-user-training-{}", std::process::id()));
    let (trace, plan) = users_captured_training_plan(&dir);
    // The warm-up (3), the recording's preparing steps (4) and 30 replays.
    let out = user_model(&["verify", "--plan", plan.to_str().unwrap(), "--gate-steps", "37"]);
    let verdict = String::from_utf8_lossy(&out.stdout);
    assert!(verdict.contains("Verified"), "{verdict}");
    let out = user_model(&["run", "tiny-mlp-lm", "--plan", plan.to_str().unwrap(), "--steps", "12"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Confirmed from the step with its Adam held in place, which the trace recorded.
    assert!(stdout.lines().any(|l| l == "plan: applied") && stdout.contains("execution: captured"), "{stdout}");

    // The user's own fine-tuning loop (`blaze_burn::CapturedTraining`) records when the bundle's
    // training entry is captured, and trains as the eager loop trains.
    let bundle = |name: &str, captured: bool| bundle_of(&dir, &trace, name, captured);
    let fine_tune = |bundle: &std::path::Path| train_line(bundle, "fine-tuning:", "loss sum ");
    let (line, replayed, stderr) = fine_tune(&bundle("captured.blaze", true));
    // 12 calls: 3 eager, 1 recorded and checked, 8 replays (the first 3 checked).
    assert!(line.contains("12 calls, captured (8 replays)"), "{line}\n{stderr}");
    assert!(!stderr.contains("captured execution not in force"), "{stderr}");
    // The fine-tuning loop's op stream is not the traced step's (it makes its batch before the
    // call and writes Adam's state in place in its eager calls): with no captured training
    // entry in the bundle it stays eager, and says why.
    let (line, eager, _) = fine_tune(&bundle("eager.blaze", false));
    assert!(line.contains("eager: the bundle holds no captured training entry for this device"), "{line}");
    assert!(((replayed - eager) / eager).abs() < 1e-5, "replays train as eager steps do: {replayed} vs {eager}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "long tier: the default 207-step training gate; fast: examples/user-model/tests/harness.rs::a_users_captured_training_step_passes_the_gate"]
fn a_users_captured_training_step_passes_the_default_gate_of_200_replays() {
    let dir = std::env::temp_dir().join(format!("blaze-user-training-long-{}", std::process::id()));
    let (_, plan) = users_captured_training_plan(&dir);
    let out = user_model(&["verify", "--plan", plan.to_str().unwrap()]);
    let verdict = String::from_utf8_lossy(&out.stdout);
    assert!(verdict.contains("Verified"), "{verdict}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bundle `dir/name` of one plan made from `trace` (no cuts), captured or eager.
fn bundle_of(dir: &std::path::Path, trace: &std::path::Path, name: &str, captured: bool) -> std::path::PathBuf {
    let (path, plan) = (dir.join(name), dir.join(format!("{name}.ron")));
    let (trace, plan_s, path_s) = (trace.to_str().unwrap(), plan.to_str().unwrap(), path.to_str().unwrap());
    let mut args = vec!["plan", "--trace", trace, "-o", plan_s, "--bundle", path_s];
    if captured {
        args.push("--captured");
    }
    user_model(&args);
    path
}

/// `user-model train --bundle B` (2 training steps, 12 fine-tuning and inference calls): the
/// stdout line starting with `prefix`, the number after `sum` on it, and stderr.
fn train_line(bundle: &std::path::Path, prefix: &str, sum: &str) -> (String, f64, String) {
    let out = user_model(&["train", "--bundle", bundle.to_str().unwrap(), "--steps", "2", "--eval-steps", "12"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = stdout.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{stdout}")).to_string();
    let value: f64 = line.rsplit_once(sum).unwrap().1.parse().unwrap();
    (line, value, String::from_utf8_lossy(&out.stderr).into_owned())
}
