//! The harness drives a model blazec does not know: trace it and run a plan made from it.
use std::process::Command;

fn user_model(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_user-model")).args(args).env("XDG_RUNTIME_DIR", "/tmp").output().unwrap();
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

/// Issue 13 friction: a user's binary introduces itself by its own name and does not offer
/// blazec's attention demo, which its catalog cannot run.
#[test]
fn a_users_binary_has_its_own_name_in_help_and_no_demo() {
    let help = String::from_utf8_lossy(&user_model(&["--help"]).stdout).into_owned();
    assert!(help.contains("Usage: user-model"), "{help}");
    assert!(!help.contains("blazec <COMMAND>") && !help.lines().any(|l| l.trim_start().starts_with("demo ")), "{help}");
}

/// Issue 13 friction: without XDG_RUNTIME_DIR, Mesa's Vulkan code used to print stray `error:`
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

/// Issue 12: the doctor runs on a user's own model through the harness: a diagnosis (exit 0)
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
