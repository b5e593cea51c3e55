//! On the real device (lavapipe in CI): a plan's submission batch (`max_tasks`, plan
//! format version 2) changes how often CubeCL submits work to the Vulkan queue, exactly as
//! `CUBECL_WGPU_MAX_TASKS` does, and a program's own value wins over the plan's.
//!
//! The count comes from below wgpu: a small Vulkan layer (`tests/vk_layer/count_submits.c`,
//! built here with `cc`) that every `vkQueueSubmit` passes through, enabled in each child
//! `blazec run` with `VK_ADD_LAYER_PATH` and `VK_INSTANCE_LAYERS`.
mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const LAYER: &str = "VK_LAYER_BLAZE_count_submits";

/// Builds the layer and its manifest into `dir`; returns the directory to add to the loader's
/// layer path.
fn build_layer(dir: &Path) -> PathBuf {
    let layer_dir = dir.join("layer");
    std::fs::create_dir_all(&layer_dir).unwrap();
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vk_layer/count_submits.c");
    let lib = layer_dir.join("libblaze_count_submits.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out =
        Command::new(&cc).args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"]).arg(&lib).arg(source).output();
    let out = out.unwrap_or_else(|e| panic!("the C compiler `{cc}` runs (it also links Rust here): {e}"));
    assert!(out.status.success(), "the layer builds: {}", String::from_utf8_lossy(&out.stderr));
    let manifest = format!(
        r#"{{"file_format_version": "1.1.2", "layer": {{"name": "{LAYER}", "type": "GLOBAL", "library_path": "./libblaze_count_submits.so", "api_version": "1.3.0", "implementation_version": "1", "description": "Blaze test layer: counts queue submissions"}}}}"#
    );
    std::fs::write(layer_dir.join("blaze_count_submits.json"), manifest).unwrap();
    layer_dir
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

struct Counted {
    submits: u64,
    plan: String,
    losses: Vec<f32>,
    stderr: String,
}

/// One `blazec run` of the small attention shape (training, one warm-up and two timed steps),
/// started with `start` (`--plan F`, `--bundle F` or nothing), with the layer on, `env` added,
/// and the autotune cache of `dir` (warm after the first run, so that every counted run
/// launches the same kernels).
fn counted_run(dir: &Path, layer: &Path, tag: &str, start: &[&str], env: &[(&str, &str)]) -> Counted {
    let counts = dir.join(format!("{tag}.count"));
    let report = dir.join(format!("{tag}.ron"));
    let mut args = vec!["run"];
    args.extend(SMALL);
    args.extend([
        "--regime",
        "training",
        "--warmup",
        "1",
        "--steps",
        "2",
        "--settle-steps",
        "0",
        "--report",
        report.to_str().unwrap(),
    ]);
    args.extend(start);
    let cache = seeded_autotune_cache(dir);
    let mut all = vec![
        ("VK_ADD_LAYER_PATH", layer.to_str().unwrap()),
        ("VK_INSTANCE_LAYERS", LAYER),
        ("BLAZE_SUBMIT_COUNT_FILE", counts.to_str().unwrap()),
        ("BLAZE_AUTOTUNE_CACHE", cache.to_str().unwrap()),
    ];
    all.extend(env);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_blazec"));
    cmd.args(&args).env("XDG_RUNTIME_DIR", std::env::var("XDG_RUNTIME_DIR").unwrap_or("/tmp".into()));
    // Every run decides its own batch: none inherits this test's environment.
    cmd.env_remove(blaze_runtime::settings::MAX_TASKS_ENV).envs(all.iter().copied());
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{tag}: {stderr}");
    let text = std::fs::read_to_string(&counts)
        .unwrap_or_else(|e| panic!("{tag}: the layer wrote no counts ({e}); was it loaded?\n{stderr}"));
    let submits = text
        .lines()
        .find_map(|l| l.strip_prefix("calls "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{tag}: {text}"));
    let report = read_report(&report);
    Counted { submits, plan: report.plan, losses: report.losses, stderr }
}

/// A version-2 plan of the small shape's trace with only a submission batch; with `bundle`,
/// also added to that bundle.
fn settings_plan(dir: &Path, max_tasks: u32, bundle: Option<&Path>) -> PathBuf {
    let (trace, _) = trace("training");
    let out = dir.join(format!("tasks{max_tasks}.ron"));
    let tasks = max_tasks.to_string();
    let mut args = vec!["plan", "--trace", trace.to_str().unwrap(), "--max-tasks", &tasks, "-o", out.to_str().unwrap()];
    if let Some(b) = bundle {
        args.extend(["--bundle", b.to_str().unwrap()]);
    }
    ok(&args);
    assert!(
        std::fs::read_to_string(&out).unwrap().contains("format_version: 2"),
        "a submission batch makes a version-2 plan"
    );
    out
}

/// `plan` filed under another model name: made for this device, so its batch is set at
/// start-up, but it does not fit the run.
fn for_another_model(dir: &Path, plan: &Path) -> PathBuf {
    let text = std::fs::read_to_string(plan).unwrap();
    let other = text.replacen("model: \"attention-d257-b2s32\"", "model: \"another-model\"", 1);
    assert_ne!(other, text);
    let out = dir.join("other-model.ron");
    std::fs::write(&out, other).unwrap();
    out
}

#[test]
fn a_plans_submission_batch_changes_the_vulkan_submission_count_as_cubecls_own_setting_does() {
    let dir = scratch("submissions");
    std::fs::create_dir_all(dir.join("autotune")).unwrap();
    let layer = build_layer(&dir);
    // Autotune's own kernels would add submissions to the first process only.
    counted_run(&dir, &layer, "warm-autotune", &[], &[]);

    let burn = counted_run(&dir, &layer, "burn", &[], &[]);
    let bundle = dir.join("model.blaze");
    let one = settings_plan(&dir, 1, Some(&bundle));
    let big = settings_plan(&dir, 128, None);
    let plan_one = counted_run(&dir, &layer, "plan-1", &["--plan", path(&one)], &[]);
    let env_one = counted_run(&dir, &layer, "env-1", &[], &[("CUBECL_WGPU_MAX_TASKS", "1")]);
    let plan_big = counted_run(&dir, &layer, "plan-128", &["--plan", path(&big)], &[]);
    let program_wins =
        counted_run(&dir, &layer, "env-128-plan-1", &["--plan", path(&one)], &[("CUBECL_WGPU_MAX_TASKS", "128")]);
    let bundled = counted_run(&dir, &layer, "bundle-1", &["--bundle", path(&bundle)], &[]);
    let misfit = counted_run(&dir, &layer, "other-model-1", &["--plan", path(&for_another_model(&dir, &one))], &[]);

    let counts = [
        ("burn (32)", burn.submits),
        ("plan 1", plan_one.submits),
        ("env 1", env_one.submits),
        ("plan 128", plan_big.submits),
        ("env 128 + plan 1", program_wins.submits),
        ("bundle 1", bundled.submits),
        ("other model's plan 1", misfit.submits),
    ];
    assert_eq!(burn.plan, "none");
    assert_eq!((plan_one.plan.as_str(), plan_big.plan.as_str()), ("applied", "applied"));
    // blazec checks a plan against the model it built, and building starts the device: the
    // batch is set before that (a plan loaded after it would change nothing, silently).
    assert_eq!(plan_one.submits, env_one.submits, "the plan's max_tasks = 1 is CubeCL's own setting: {counts:?}");
    assert_eq!(bundled.submits, env_one.submits, "so is a bundle's, through the one-call start-up: {counts:?}");
    assert!(misfit.plan.starts_with("fallback"), "{}", misfit.plan);
    assert_eq!(
        misfit.submits, env_one.submits,
        "a plan made for this device sets its batch before the model is built: {counts:?}"
    );
    assert!(
        misfit.stderr.contains(
            "max_tasks = 1 was set at start-up, before the plan could be checked against the model, and stays in force"
        ),
        "and says so when the plan then does not fit: {}",
        misfit.stderr
    );
    assert!(
        plan_one.submits > 8 * burn.submits,
        "one kernel per submission submits far more often than Burn's 32: {counts:?}"
    );
    assert!(plan_big.submits < burn.submits, "128 kernels per submission submit less often than 32: {counts:?}");
    assert_eq!(
        program_wins.submits, plan_big.submits,
        "the program's CUBECL_WGPU_MAX_TASKS=128 wins over the plan's 1: {counts:?}"
    );
    assert!(
        program_wins
            .stderr
            .contains("CUBECL_WGPU_MAX_TASKS=128 set by this program wins over the plan's max_tasks = 1"),
        "and the program is told: {}",
        program_wins.stderr
    );
    for run in [&plan_one, &plan_big, &program_wins] {
        assert_eq!(
            run.losses, burn.losses,
            "the batch changes when work is submitted, not what it computes: {counts:?}"
        );
    }
}
