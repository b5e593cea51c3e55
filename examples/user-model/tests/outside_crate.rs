//! A user's own crate outside this workspace, set up as docs/building.md says: Blaze's crates by
//! path, the patched burn-fusion through `[patch.crates-io]`. It builds (into this workspace's
//! target directory, so the dependencies built for the tests are reused), its binary traces and
//! plans its own model, and its training loop started with `blaze_burn::init` installs the
//! bundle's entry. A second program of the crate (`tests/outside/contract.rs`, written from the
//! README alone) keeps captured steps' outputs, reads a value inside a step and drops the
//! handle of `init`, and computes what eager Burn computes call by call.
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root (this crate is examples/user-model).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The target directory the tests were built in: `<target>/release/user-model`.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_user-model")).parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// The user's Cargo.toml: what docs/building.md tells a user to write, with this checkout's paths.
fn manifest(repo: &Path) -> String {
    let r = repo.display();
    format!(
        r#"[package]
name = "my-model"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
burn = {{ version = "=0.22.1", features = ["wgpu", "autodiff", "fusion", "autotune"] }}
blaze-ir = {{ path = "{r}/ir" }}
blaze-runtime = {{ path = "{r}/runtime" }}
blaze-burn = {{ path = "{r}/runtime/burn" }}
blaze-compiler = {{ path = "{r}/compiler" }}
blazec = {{ path = "{r}/blazec" }}

# Burn's fusion crate with Blaze's patch (materialised by vendor/setup.sh), through a `vendor`
# link to Blaze's vendor/ so that builds in Blaze's target directory are reused.
[patch.crates-io]
burn-fusion = {{ path = "vendor/burn-fusion" }}

[profile.release]
debug = false
incremental = false
codegen-units = 16

[workspace]
"#
    )
}

/// Writes the user's crate: the manifest, Blaze's lock file (the versions Blaze is tested with)
/// and the example model's sources, as a user's own.
fn write_crate(dir: &Path) {
    let repo = repo();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), manifest(&repo)).unwrap();
    std::fs::copy(repo.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    std::os::unix::fs::symlink(repo.join("vendor"), dir.join("vendor")).unwrap();
    for file in ["main.rs", "model.rs", "serve.rs"] {
        std::fs::copy(repo.join("examples/user-model/src").join(file), dir.join("src").join(file)).unwrap();
    }
    // A second program of the user's: the captured-step contract, checked call by call.
    std::fs::create_dir_all(dir.join("src/bin")).unwrap();
    std::fs::copy(repo.join("examples/user-model/tests/outside/contract.rs"), dir.join("src/bin/contract.rs")).unwrap();
    // A third: Burn's AdamWConfig and a scheduler through DeviceAdam, against Burn's AdamW.
    std::fs::copy(repo.join("examples/user-model/tests/outside/optimizer.rs"), dir.join("src/bin/optimizer.rs"))
        .unwrap();
}

fn run(bin: &Path, args: &[&str]) -> String {
    let out = Command::new(bin).args(args).env("XDG_RUNTIME_DIR", "/tmp").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_crate_outside_the_workspace_builds_against_blaze_and_trains_with_its_bundle() {
    let root = std::env::temp_dir().join(format!("blaze-outside-{}", std::process::id()));
    let dir = root.join("my-model");
    write_crate(&dir);
    assert!(!dir.starts_with(repo()), "the crate lies outside the workspace");

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = target_dir();
    let build = Command::new(cargo)
        .args(["build", "--release", "--offline"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &target)
        // Set by tools/test-runner for this test binary alone; a build with it would differ.
        .env_remove("RUSTC_BOOTSTRAP")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&build.stderr);
    assert!(build.status.success(), "the user's crate builds: {log}");
    // What was compiled for it (the rest was reused from the tests' build).
    let compiled: Vec<&str> = log.lines().filter(|l| l.trim_start().starts_with("Compiling")).collect();
    eprintln!("compiled for the user's crate: {compiled:?}");
    assert!(compiled.iter().any(|l| l.contains("my-model")), "{log}");
    // Burn itself is reused from the tests' build, as docs/building.md promises for the link.
    assert!(!compiled.iter().any(|l| l.contains("Compiling burn-fusion ")), "{log}");

    let bin = target.join("release/my-model");
    let (trace, plan, bundle) = (dir.join("t.ron"), dir.join("p.ron"), dir.join("model.blaze"));
    run(&bin, &["trace", "tiny-mlp-lm", "--regime", "training", "-o", trace.to_str().unwrap()]);
    run(
        &bin,
        &[
            "plan",
            "--trace",
            trace.to_str().unwrap(),
            "--every-live",
            "2",
            "-o",
            plan.to_str().unwrap(),
            "--bundle",
            bundle.to_str().unwrap(),
        ],
    );
    let stdout = run(&bin, &["train", "--bundle", bundle.to_str().unwrap()]);
    let line = stdout.lines().find(|l| l.starts_with("after training: ")).unwrap_or_default();
    assert!(
        line.starts_with("after training: installed tiny-mlp-lm training [batch=8 seq=32]"),
        "the bundle's entry is installed: {stdout}"
    );

    // The user's contract program: what Burn users do around captured steps computes what eager
    // Burn computes, call by call, and the dropped handle says so.
    let out =
        Command::new(target.join("release/contract")).arg(&bundle).env("XDG_RUNTIME_DIR", "/tmp").output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the contract program runs to its end without a panic:\n{stdout}\n{stderr}");
    for check in [
        "kept forward outputs",
        "forward loop under another model's bundle",
        "host read inside the step",
        "eager DeviceAdam losses",
        "kept training losses",
        "trained parameters",
        "trained parameters against eager DeviceAdam",
    ] {
        let line = stdout.lines().find(|l| l.starts_with(&format!("{check}: "))).unwrap_or_default();
        assert!(line.starts_with(&format!("{check}: ok ")), "{check}: {line}\n{stdout}\n{stderr}");
    }
    let kept = stdout.lines().find(|l| l.starts_with("kept forward outputs: ")).unwrap_or_default();
    assert!(kept.ends_with("captured (12 replays)"), "the kept outputs came from replays: {kept}");
    let other =
        stdout.lines().find(|l| l.starts_with("forward loop under another model's bundle: ")).unwrap_or_default();
    assert!(other.contains("; eager: "), "another model's entry does not make the loop record: {other}");
    let read = stdout.lines().find(|l| l.starts_with("host read inside the step: ")).unwrap_or_default();
    assert!(read.contains("eager: recording refused: the step panicked inside the recording window"), "{read}");
    let dropped = stderr
        .lines()
        .filter(|l| l.contains("the bundle handle was dropped before the program's first operation"))
        .count();
    assert_eq!(dropped, 1, "one warning for the dropped handle: {stderr}");

    // Burn's AdamWConfig (weight decay, gradient clipping) and cosine annealing through
    // DeviceAdam: eager through Burn's ModuleOptimizer, captured, and captured resumed from Burn's
    // own checkpoint, each loss against Burn's AdamW's, 200 steps.
    let out = Command::new(target.join("release/optimizer")).env("XDG_RUNTIME_DIR", "/tmp").output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the optimizer program runs to its end:\n{stdout}\n{stderr}");
    for check in ["adamw eager", "adamw captured", "adamw resumed from Burn's checkpoint"] {
        let line = stdout.lines().find(|l| l.starts_with(&format!("{check}: "))).unwrap_or_default();
        assert!(line.starts_with(&format!("{check}: ok ")), "{check}: {line}\n{stdout}\n{stderr}");
        assert!(line.contains(" over 200 steps "), "{line}");
    }
    let captured = stdout.lines().find(|l| l.starts_with("adamw captured: ")).unwrap_or_default();
    assert!(captured.contains("; captured ("), "the captured run replayed: {captured}");
    let resumed = stdout.lines().find(|l| l.starts_with("adamw resumed from Burn's checkpoint: ")).unwrap_or_default();
    assert!(resumed.contains("; captured ("), "the resumed run replayed: {resumed}");
    let _ = std::fs::remove_dir_all(&root);
}
