//! Shared fixtures: run the real `blazec` binary on the real device (lavapipe in CI) with a
//! small named shape, and read its reports.
#![allow(dead_code)]
use blaze_compiler::runner::RunReport;
use blaze_ir::Trace;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Small test shape of attention-d257 (named `attention-d257-b2s32`).
pub const SMALL: [&str; 5] = ["attention-d257", "--batch", "2", "--seq", "32"];

pub fn blazec(args: &[&str]) -> Output {
    blazec_env(args, &[])
}

/// `blazec` with extra environment variables.
#[allow(dead_code)]
pub fn blazec_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blazec"))
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::var("XDG_RUNTIME_DIR").unwrap_or("/tmp".into()))
        .envs(env.iter().copied())
        .output()
        .expect("blazec runs")
}

pub fn ok(args: &[&str]) -> Output {
    let out = blazec(args);
    assert!(out.status.success(), "blazec {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("blaze-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn read_report(path: &Path) -> RunReport {
    ron::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The directory of fixtures shared by every test binary of one blazec build:
/// `<target>/blaze-fixtures/<sha256 of the blazec binary, 16 hex digits>`. A rebuilt blazec gets
/// a new directory, so a fixture is never read by a build other than the one that made it.
pub fn fixtures_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        use sha2::Digest;
        let bin = Path::new(env!("CARGO_BIN_EXE_blazec"));
        let digest = sha2::Sha256::digest(std::fs::read(bin).expect("the blazec binary is readable"));
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        // <target>/release/blazec -> <target>
        let target = bin.parent().and_then(Path::parent).expect("blazec lies in <target>/<profile>/");
        let dir = target.join("blaze-fixtures").join(hex);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
    .clone()
}

/// The fixture `name` of this blazec build, made by `make` (which writes the path it is given)
/// the first time any test binary asks for it. Made under an exclusive lock on `<name>.lock`
/// and renamed into place, so two binaries asking at once make it once and nobody reads a
/// half-written file.
pub fn shared_fixture(name: &str, make: impl FnOnce(&Path)) -> PathBuf {
    use std::os::fd::AsRawFd;
    let dir = fixtures_dir();
    let path = dir.join(name);
    let lock = std::fs::File::create(dir.join(format!("{name}.lock"))).unwrap();
    // SAFETY: flock on a descriptor this function owns; released when `lock` is dropped.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0, "lock {name}");
    if !path.exists() {
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        make(&tmp);
        std::fs::rename(&tmp, &path).unwrap();
    }
    path
}

/// An autotune cache root for this test's processes alone, seeded with the decisions shipped
/// for this device (`blazec seed plans/autotune`) before its first probe, as `./blaze test`
/// seeds the shared one: CubeCL then autotunes only what the shipped decisions lack (on
/// lavapipe a cold cache autotuned attention-d257 for 105 s against 14 s seeded). Every process
/// of the test reads the same cache, so each runs the kernels the first chose.
pub fn seeded_autotune_cache(dir: &Path) -> PathBuf {
    let (cache, seeded) = (dir.join("autotune"), dir.join("autotune.seeded"));
    if !seeded.exists() {
        std::fs::create_dir_all(&cache).unwrap();
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans/autotune");
        let out =
            blazec_env(&["seed", shipped.to_str().unwrap()], &[("BLAZE_AUTOTUNE_CACHE", cache.to_str().unwrap())]);
        assert!(out.status.success(), "blazec seed: {}", String::from_utf8_lossy(&out.stderr));
        std::fs::write(&seeded, String::from_utf8_lossy(&out.stderr).as_bytes()).unwrap();
    }
    cache
}

/// `blazec trace` of the small shape in `regime`, once per blazec build (shared by every test
/// binary through [`shared_fixture`]).
pub fn trace(regime: &str) -> (PathBuf, Trace) {
    static TRAINING: OnceLock<(PathBuf, Trace)> = OnceLock::new();
    static FORWARD: OnceLock<(PathBuf, Trace)> = OnceLock::new();
    let cell = if regime == "training" { &TRAINING } else { &FORWARD };
    cell.get_or_init(|| {
        let path = shared_fixture(&format!("trace-{regime}.ron"), |tmp| {
            let mut full = vec!["trace"];
            full.extend(SMALL);
            full.extend(["--regime", regime, "-o", tmp.to_str().unwrap()]);
            ok(&full);
        });
        let trace = Trace::from_ron(&std::fs::read_to_string(&path).unwrap()).unwrap();
        (path, trace)
    })
    .clone()
}

/// `blazec run` of the small shape; returns the report and stderr.
pub fn run(regime: &str, plan: Option<&Path>, tag: &str) -> (RunReport, String) {
    let report = scratch("run").join(format!("{tag}.ron"));
    let mut args = vec!["run"];
    args.extend(SMALL);
    // No settling: its step count depends on timing, and tests compare losses step by step.
    args.extend(["--regime", regime, "--steps", "1", "--settle-ms", "0", "--report", report.to_str().unwrap()]);
    let plan_str;
    if let Some(p) = plan {
        plan_str = p.to_str().unwrap().to_string();
        args.extend(["--plan", &plan_str]);
    }
    let out = ok(&args);
    (read_report(&report), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Burn's own run (no plan at all), once per regime per blazec build (shared by every test binary).
pub fn burn_default(regime: &str) -> RunReport {
    static TRAINING: OnceLock<RunReport> = OnceLock::new();
    static FORWARD: OnceLock<RunReport> = OnceLock::new();
    let cell = if regime == "training" { &TRAINING } else { &FORWARD };
    cell.get_or_init(|| {
        let path = shared_fixture(&format!("burn-default-{regime}.ron"), |tmp| {
            let (report, _) = run(regime, None, &format!("default-{regime}"));
            std::fs::write(tmp, ron::to_string(&report).unwrap()).unwrap();
        });
        read_report(&path)
    })
    .clone()
}

#[allow(unused_imports)]
pub use blaze_compiler::verify::{argmax_rows, max_rel_diff};

/// `blazec probe` of the small attention shape (training) under `arm` (burn, fusion-off or a
/// plan file), with an autotune cache shared by every probe of `dir`, run in `dir`.
pub fn probe(dir: &Path, tag: &str, arm: &str, extra: &[&str], env: &[(&str, &str)]) -> blaze_compiler::verify::Probe {
    probe_in(dir, dir, tag, arm, extra, env)
}

/// [`probe`] run with working directory `cwd` (where Burn looks for burn.toml).
pub fn probe_in(
    dir: &Path,
    cwd: &Path,
    tag: &str,
    arm: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> blaze_compiler::verify::Probe {
    let out = dir.join(format!("{tag}.ron"));
    let mut args = vec!["probe"];
    args.extend(SMALL);
    args.extend(["--regime", "training", "--arm", arm, "-o", out.to_str().unwrap()]);
    args.extend(extra);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_blazec"));
    cmd.args(&args).current_dir(cwd).env("XDG_RUNTIME_DIR", std::env::var("XDG_RUNTIME_DIR").unwrap_or("/tmp".into()));
    // One autotune cache for every process, seeded: each runs the kernels the first chose.
    cmd.env("BLAZE_AUTOTUNE_CACHE", seeded_autotune_cache(dir));
    cmd.envs(env.iter().copied());
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "probe {tag}: {}", String::from_utf8_lossy(&o.stderr));
    ron::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

/// A short `blazec tune` of chain-32 batch 4 forward on lavapipe, writing `plan`, with the
/// test's own `extra` flags (Burn's plan, fusion off in-process, no beam widths unless `extra`
/// names them).
pub fn chain_tune_args<'a>(plan: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args =
        vec!["tune", "chain-32", "--batch", "4", "--regime", "forward", "--device", "lavapipe", "--no-fusion-off"];
    args.extend(extra);
    args.extend(["-o", plan.to_str().unwrap()]);
    args
}

/// `blazec run` training of `model` (name and shape arguments) with `load` added (`--plan
/// <file>`), `steps` timed steps, no warm-up or settling, so runs line up step by step; the
/// report and stderr.
pub fn run_training_of(
    model: &[&str],
    dir: &Path,
    tag: &str,
    load: &[&str],
    steps: u32,
    env: &[(&str, &str)],
) -> (RunReport, String) {
    let report = dir.join(format!("{tag}.report.ron"));
    let steps = steps.to_string();
    let mut args = vec!["run"];
    args.extend(model);
    args.extend(["--regime", "training", "--warmup", "0", "--steps", &steps, "--settle-steps", "0"]);
    args.extend(["--report", report.to_str().unwrap()]);
    args.extend(load);
    let out = blazec_env(&args, env);
    assert!(out.status.success(), "run {tag}: {}", String::from_utf8_lossy(&out.stderr));
    (read_report(&report), String::from_utf8_lossy(&out.stderr).into_owned())
}
