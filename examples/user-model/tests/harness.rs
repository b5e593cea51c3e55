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
