//! `blazec tune` front end: device check, the pinned autotune cache, the fusion-off
//! cross-check process, the worker's pipeline and its atomic outputs (the supervising side is
//! `tune/supervise.rs`).
use crate::model_args::{ModelArgs, resolve_model};
use crate::progress::progress_printer;
use anyhow::{Context, bail};
use blaze_compiler::autotune::{AUTOTUNE_CACHE_ENV, pin_autotune_cache};
use blaze_compiler::catalog::Resolver;
use blaze_compiler::files::{to_ron, write_atomic};
use blaze_compiler::measure::Slowdown;
use blaze_compiler::race::RaceRules;
use blaze_compiler::stats::Summary;
use blaze_compiler::tune::{FusionOffChild, TuneOptions, journal, report, tune};
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// How a race decides and when it stops (shared by `tune` and `race-check`).
#[derive(Args, Clone)]
pub struct RaceArgs {
    /// Most rounds of a race (a round visits Burn's plan and every candidate still racing).
    #[arg(long, default_value_t = 300)]
    pub rounds: u32,
    /// Rounds before a race first looks at its data.
    #[arg(long, default_value_t = 10)]
    pub min_rounds: u32,
    /// Smallest relative win worth keeping, and the equivalence margin (0.01 = 1 %).
    #[arg(long, default_value_t = 0.01)]
    pub min_effect: f64,
    /// Wall-time budget of a race, in seconds.
    #[arg(long, default_value_t = 120)]
    pub race_budget: u64,
}

impl RaceArgs {
    pub fn rules(&self) -> RaceRules {
        RaceRules {
            min_effect: self.min_effect,
            min_rounds: self.min_rounds,
            max_rounds: self.rounds,
            budget: std::time::Duration::from_secs(self.race_budget),
            ..RaceRules::default()
        }
    }
}

#[derive(Args, Clone)]
pub struct TuneArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Device to tune on: cuda (a build with the `cuda` feature), vulkan, metal, wgpu (any
    /// adapter) or lavapipe (Mesa's CPU Vulkan).
    #[arg(long, default_value = DEFAULT_DEVICE)]
    pub device: String,
    /// Where to write the plan (RON); report.md, report.svg and the raw results go beside it.
    #[arg(short, long, default_value = "plan.ron")]
    pub output: PathBuf,
    /// Also add the plan to this bundle (created if absent), replacing the entry for the same
    /// model, device, Burn version, regime and shapes. Ship the bundle; `load_plan` picks the
    /// entry that fits the run.
    #[arg(long)]
    pub bundle: Option<PathBuf>,
    /// Candidates requested when there are more than 10 live cut points.
    #[arg(long, default_value_t = 16)]
    pub budget: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub race: RaceArgs,
    /// Warm-up steps before the trace.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Skip the fusion-off cross-check (a separate process with BURN_FUSION_MAX_EXPLORATIONS=0);
    /// fusion off is raced in-process either way.
    #[arg(long)]
    pub no_fusion_off: bool,
    /// CubeCL autotune cache directory for every process of this tune (default: CubeCL's own
    /// for this working directory). Named in the results file.
    #[arg(long)]
    pub autotune_cache: Option<PathBuf>,
    /// Beam widths of Burn's fusion search (burn.toml `max_blocks`, Burn's default 5) raced as
    /// candidates of their own, in this process; `none` for none. A width that executes
    /// Burn's partition is collapsed before timing.
    #[arg(long, default_value = "1,2,3,8", value_parser = parse_widths)]
    pub max_blocks: Widths,
    /// Also race each beam width with its plans cached by step position (`store=position`, plan
    /// format version 3) beside the same width cached as Burn's store caches: the same kernels,
    /// other host work per block (on the H200 a width-8 plan of lstm-h256 training ran at
    /// 120-140 ms cached by position against 111 ms shared, in fresh processes).
    #[arg(long)]
    pub by_position: bool,
    /// Also race captured execution (plan format version 4): after the race, Burn's plan and
    /// the race's winner each recorded once and replayed with their inputs written in place
    /// (training: parameters, Adam's moments and step scalars too), raced in the same process
    /// against Burn's plan and the winner run eagerly; a captured plan is kept only if it wins
    /// and passes the captured gate (forward: 20 replays on fresh batches against eager
    /// execution of the same plan; training: 200 replays against Burn's own Adam run eagerly,
    /// every loss and output and the parameters at the end).
    #[arg(long)]
    pub captured: bool,
    /// Steps of the captured gate (default: 24 forward, 207 training: warm-up, the recording
    /// and 20 or 200 replays). A longer gate for a GPU campaign: `--gate-steps 1007`.
    #[arg(long, value_name = "N")]
    pub gate_steps: Option<u32>,
    /// Cut candidates per beam width: the model is traced again under each width and cuts
    /// are enumerated over that (richer or poorer) partition's live cut points. 0: cuts only
    /// over Burn's default partition.
    #[arg(long, default_value_t = 0)]
    pub cuts_per_width: usize,
    /// Submission batches (CUBECL_WGPU_MAX_TASKS, kernels per queue submission; CubeCL's
    /// default 32) raced after the in-process race, under the plan it selected: CubeCL reads the
    /// value once per process, so each runs in a process of its own, all of them co-resident and
    /// visited in turns with the same paired statistics, against the program's current value
    /// and a control process; `none` for none.
    #[arg(long, default_value = "none", value_parser = parse_task_counts)]
    pub max_tasks: Widths,
    /// Cut candidates by cut-point class: the same place in every layer is one decision
    /// (every combination of up to 4 repeating classes, else one request per class; with
    /// --greedy, each greedy round adds one whole class).
    #[arg(long)]
    pub classes: bool,
    /// Greedy path instead of enumeration: challengers per round (each round is a race).
    #[arg(long)]
    pub greedy: Option<usize>,
    /// Most greedy rounds.
    #[arg(long, default_value_t = 8)]
    pub greedy_max_rounds: usize,
    /// Print each stage with its elapsed time even when stderr is not a terminal.
    #[arg(short, long)]
    pub verbose: bool,
    /// Seconds a candidate may go without progress (its steps block, or its process dies)
    /// before it is recorded as broken and the tune goes on without it.
    #[arg(long, default_value_t = 300)]
    pub hang_timeout: u64,
    #[cfg(feature = "faults")]
    #[command(flatten)]
    pub faults: crate::faults::TuneFaults,
}

/// The device this blazec's backend runs natively: CUDA in a build with the `cuda` feature,
/// Vulkan otherwise (lavapipe included).
pub const NATIVE_DEVICE: &str = if cfg!(feature = "cuda") { "cuda" } else { "vulkan" };

/// `--device`'s default: CUDA in a `cuda` build, otherwise any wgpu adapter.
const DEFAULT_DEVICE: &str = if cfg!(feature = "cuda") { NATIVE_DEVICE } else { "wgpu" };

pub fn check_device(requested: &str) -> anyhow::Result<()> {
    let info = blaze_workloads::device::device_info();
    match requested {
        "metal" if !cfg!(target_os = "macos") => bail!(
            "--device metal: Metal is not available on this machine ({}); use --device vulkan or lavapipe",
            std::env::consts::OS
        ),
        "metal" => {
            bail!("--device metal: this blazec was built without Metal support (build with the `metal` feature)")
        }
        "cuda" if !cfg!(feature = "cuda") => bail!(
            "--device cuda: this blazec was built without Burn's CUDA backend (`./blaze` builds it on a machine with an NVIDIA GPU; by hand: cargo build --release -p blazec --features cuda)"
        ),
        "cuda" if info.backend != "cuda" => bail!("--device cuda: no CUDA device found ({})", info.adapter),
        "cuda" => Ok(()),
        "vulkan" | "lavapipe" | "wgpu" if cfg!(feature = "cuda") => bail!(
            "--device {requested}: this blazec is built for Burn's CUDA backend (the `cuda` feature); build without it for wgpu"
        ),
        "vulkan" if info.backend != "vulkan" => {
            bail!("--device vulkan: no Vulkan adapter found (wgpu offers `{}` on {})", info.adapter, info.backend)
        }
        "lavapipe" if !info.adapter.contains("llvmpipe") => {
            bail!("--device lavapipe: the adapter is `{}`, not lavapipe (install mesa-vulkan-drivers)", info.adapter)
        }
        "vulkan" | "lavapipe" | "wgpu" => Ok(()),
        other => bail!("--device {other}: unknown device (expected cuda, vulkan, metal, wgpu or lavapipe)"),
    }
}

pub fn parse_slowdown(text: &str) -> Result<Slowdown, String> {
    let (id, fraction) = split_slowdown(text, "N:F, for example 1:0.02")?;
    let id = id.trim_start_matches('c').parse().map_err(|_| format!("`{id}` is not a candidate id"))?;
    Ok(Slowdown { id, fraction })
}

/// `<who>:<fraction>` of a test-only slowdown, the fraction in 0..=10.
fn split_slowdown<'a>(text: &'a str, expected: &str) -> Result<(&'a str, f64), String> {
    let (who, fraction) = text.split_once(':').ok_or_else(|| format!("expected {expected}"))?;
    let fraction: f64 = fraction.parse().map_err(|_| format!("`{fraction}` is not a fraction"))?;
    if !(0.0..=10.0).contains(&fraction) {
        return Err(format!("slowdown {fraction} is out of range 0..=10"));
    }
    Ok((who, fraction))
}

pub fn run_tune(resolve: &Resolver, args: &TuneArgs) -> anyhow::Result<()> {
    if std::env::var_os(AUTOTUNE_CACHE_ENV).is_none() {
        pin_autotune_cache(&args.autotune_cache.clone().unwrap_or_else(cubecl::environment::root))?;
    }
    check_device(&args.device)?;
    let factory = resolve_model(resolve, &args.model)?;
    let dir = blaze_compiler::files::prepare_output(&args.output)?;
    if journal::open_from_env() {
        return worker(factory.as_ref(), args, &dir);
    }
    let mut progress = progress_printer("tune", args.verbose);
    progress(&format!("device {}", blaze_burn::device_details()));
    let fusion_off = match args.no_fusion_off {
        true => None,
        false => {
            progress("fusion off (separate process, cross-check)");
            let started = std::time::Instant::now();
            let child = fusion_off_child(&args.model, 20)?;
            // The worker's progress restarts its clock: say what the cross-check took (on a
            // fresh GPU machine it compiles every unfused kernel first).
            progress(&format!(
                "cross-check done: fusion off {:.3} ms a step (median), {:.1} s in all",
                child.summary.median,
                started.elapsed().as_secs_f64()
            ));
            Some(child)
        }
    };
    blaze_compiler::tune::supervise::supervise(
        &blaze_compiler::tune::supervise::Supervision {
            hang_timeout: args.hang_timeout,
            greedy: args.greedy.is_some(),
            fusion_off,
        },
        &mut |line| eprintln!("blazec tune: {line}"),
    )
}

/// The pipeline, in the worker process; writes every output atomically at the end, and the
/// in-process selection already before a race across processes.
fn worker(factory: &dyn blaze_runtime::ModelFactory, args: &TuneArgs, dir: &Path) -> anyhow::Result<()> {
    let faults = args.faults();
    journal::inject_hang(faults.inject_hang);
    journal::inject_panic(faults.inject_panic);
    if let Some(id) = faults.inject_device_lost {
        // Before the model's first operation: the wgpu handle can only be kept at set-up.
        blaze_burn::device::keep_device_for_fault_injection()
            .map_err(|e| anyhow::anyhow!("--inject-device-lost: {e}"))?;
        journal::inject_device_lost(Some(id));
    }
    blaze_compiler::confirm::on_install(journal::installed);
    let fusion_off = match std::env::var(journal::FUSION_OFF_ENV) {
        Ok(text) => Some(ron::from_str::<FusionOffChild>(&text).context("fusion-off cross-check from the supervisor")?),
        Err(_) => None,
    };
    let stem = args.output.file_stem().map_or("plan".into(), |s| s.to_string_lossy().into_owned());
    let results = dir.join(format!("{stem}.results.ron"));
    let opts = TuneOptions {
        regime: args.model.regime,
        budget: args.budget,
        seed: args.seed,
        warmup: args.warmup,
        rules: args.race.rules(),
        inject_fault: args.faults().inject_fault,
        slowdown: args.faults().inject_slowdown,
        fusion_off,
        autotune_cache: std::env::var(AUTOTUNE_CACHE_ENV).ok(),
        results_file: results.display().to_string(),
        greedy: args.greedy.map(|n| (n, args.greedy_max_rounds)),
        broken: journal::broken_from_env(),
        max_blocks: args.max_blocks.0.clone(),
        by_position: args.by_position,
        captured: args.captured,
        gate_steps: args.gate_steps,
        cuts_per_width: args.cuts_per_width,
        classes: args.classes,
    };
    let mut progress = progress_printer("tune", args.verbose);
    let mut result = tune(&journal::Beating(factory), &opts, &mut progress)?;
    journal::check_device_loss_took_effect().map_err(anyhow::Error::msg)?;
    if !args.max_tasks.0.is_empty() {
        // The race across processes starts one server after another (a minute each on a cold
        // H200): a tune stopped during it must not lose the in-process selection it already has.
        let mut interim = result.clone();
        interim.selection = format!("{}; {PROCESS_RACE_PENDING}", interim.selection);
        if let Some(m) = interim.plan.as_mut().and_then(|p| p.measurements.as_mut()) {
            m.selection = format!("{}; {PROCESS_RACE_PENDING}", m.selection);
        }
        write_outputs(args, dir, &stem, &interim)?;
        progress(&format!(
            "in-process selection written to {} (rewritten when the race across processes ends)",
            args.output.display()
        ));
        race_submission_batches(args, &mut result, &mut progress)?;
    }
    if std::io::stderr().is_terminal() && !args.verbose {
        eprintln!();
    }
    write_outputs(args, dir, &stem, &result)?;
    let plan = result.plan.as_ref().expect("tune returns a plan");
    println!("{}", report::markdown(&result));
    if let Some(bundle) = &args.bundle {
        // With the autotune decisions every candidate ran with (the tune's pinned cache).
        let cache = std::env::var_os(AUTOTUNE_CACHE_ENV).map(std::path::PathBuf::from);
        crate::commands::bundle::add(bundle, vec![plan.clone()], cache.as_deref())?;
    }
    Ok(())
}

/// Said in the selection of outputs written before the race across processes has ended.
pub const PROCESS_RACE_PENDING: &str =
    "submission batch: the race across processes had not ended when this was written";

/// The results file, the report (markdown and svg) and the plan, each written atomically.
fn write_outputs(
    args: &TuneArgs,
    dir: &Path,
    stem: &str,
    result: &blaze_compiler::tune::TuneResult,
) -> anyhow::Result<()> {
    write_atomic(&dir.join(format!("{stem}.results.ron")), &to_ron(result))?;
    write_atomic(&dir.join(format!("{stem}.report.md")), &report::markdown(result))?;
    write_atomic(&dir.join(format!("{stem}.report.svg")), &report::svg(result))?;
    write_atomic(&args.output, &result.plan.as_ref().expect("tune returns a plan").to_ron())
}

/// The race across processes (`tune::processes`) of the submission batches, under the plan the
/// in-process race selected; a kept value goes into the plan's settings.
fn race_submission_batches(
    args: &TuneArgs,
    result: &mut blaze_compiler::tune::TuneResult,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    use blaze_compiler::tune::processes::{ProcessPlan, ServeCommand, current_max_tasks, race_across_processes};
    let plan = result.plan.as_mut().expect("tune returns a plan");
    let plan_path = std::env::temp_dir().join(format!("blaze-serve-plan-{}.ron", std::process::id()));
    let mut serve_args =
        vec!["serve".to_string(), args.model.model.clone(), "--regime".into(), args.model.regime.to_string()];
    for (flag, value) in [("--batch", args.model.batch), ("--seq", args.model.seq)] {
        if let Some(v) = value {
            serve_args.extend([flag.to_string(), v.to_string()]);
        }
    }
    let uses_plan = !plan.cuts.is_empty() || !plan.settings.is_default();
    if uses_plan {
        write_atomic(&plan_path, &plan.to_ron())?;
        serve_args.extend(["--plan".to_string(), plan_path.display().to_string()]);
    }
    // As many untimed steps as the in-process race settled for (its 1 s), the same in every
    // server so that their losses compare step by step.
    let settle = result.visit.as_ref().map_or(10, |v| v.settle_steps.max(5));
    serve_args.extend(["--warmup".into(), args.warmup.to_string(), "--settle-steps".into(), settle.to_string()]);
    let cmd = ServeCommand {
        exe: std::env::current_exe().context("cannot find own executable")?,
        args: serve_args,
        timeout: std::time::Duration::from_secs(args.hang_timeout),
    };
    let what = ProcessPlan {
        plan_text: result.selected_text.clone(),
        reference: current_max_tasks(),
        values: args.max_tasks.0.clone(),
        slowdown: args.faults().inject_process_slowdown,
    };
    let raced = race_across_processes(&cmd, &what, &args.race.rules(), &journal::beat, progress);
    if uses_plan {
        let _ = std::fs::remove_file(&plan_path);
    }
    if let Some(m) = raced.kept {
        plan.settings.max_tasks = Some(m);
    }
    let line = raced.selection_text();
    if let Some(m) = plan.measurements.as_mut() {
        m.selection = format!("{}; {line}", m.selection);
    }
    result.selection = format!("{}; {line}", result.selection);
    result.process_race = Some(raced);
    Ok(())
}

/// Times the model in a child process with fusion off (a per-process Burn setting): the
/// cross-check of the in-process arm.
pub(crate) fn fusion_off_child(model: &ModelArgs, steps: u32) -> anyhow::Result<FusionOffChild> {
    let regime = model.regime.to_string();
    let run = blaze_compiler::child::ChildRun {
        model: &model.model,
        regime: &regime,
        batch: model.batch,
        seq: model.seq,
        warmup: 3,
        steps,
        fusion_off: true,
        timeout: std::time::Duration::from_secs(600),
    };
    let report = run.run().map_err(|e| anyhow::anyhow!("fusion-off run failed: {e}"))?;
    Ok(FusionOffChild { summary: Summary::of(&report.step_ms), partition: report.partition.fingerprint() })
}

#[cfg(test)]
mod tests {
    #[test]
    fn slowdown_parses_and_refuses_nonsense() {
        let s = super::parse_slowdown("c1:0.02").unwrap();
        assert_eq!((s.id, s.fraction), (1, 0.02));
        assert!(super::parse_slowdown("1").unwrap_err().contains("N:F"));
        assert!(super::parse_slowdown("1:-3").unwrap_err().contains("out of range"));
        assert!(super::parse_slowdown("x:0.1").unwrap_err().contains("not a candidate id"));
    }
}

/// A list of beam widths (`1,2,8`, or `none`).
#[derive(Clone, Debug, PartialEq)]
pub struct Widths(pub Vec<u32>);

fn parse_widths(text: &str) -> Result<Widths, String> {
    parse_setting_list(text, "beam widths")
}

fn parse_task_counts(text: &str) -> Result<Widths, String> {
    parse_setting_list(text, "submission batches")
}

/// `M:F`: the server with submission batch M, slowed by the fraction F.
pub fn parse_process_slowdown(text: &str) -> Result<(u32, f64), String> {
    let (m, fraction) = split_slowdown(text, "M:F, for example 16:0.05")?;
    Ok((m.parse().map_err(|_| format!("`{m}` is not a submission batch"))?, fraction))
}

fn parse_setting_list(text: &str, what: &str) -> Result<Widths, String> {
    if text.trim() == "none" {
        return Ok(Widths(vec![]));
    }
    let mut out = Vec::new();
    for word in text.split(',') {
        match word.trim().parse::<u32>() {
            Ok(n) if (1..=blaze_ir::plan::MAX_SETTING).contains(&n) => out.push(n),
            _ => {
                return Err(format!(
                    "`{word}`: expected {what} 1..={} separated by commas, or `none`",
                    blaze_ir::plan::MAX_SETTING
                ));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(Widths(out))
}
