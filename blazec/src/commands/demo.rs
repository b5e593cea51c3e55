//! `blazec demo`: the main job end to end on a built-in workload (attention-d257 training by
//! default): `blazec tune` (Burn's default, fusion off, a cut plan, beam width 3, captured
//! execution, raced on the device, the winner verified), a short table of what it measured and
//! kept, then the model run under Burn's plan and under the kept plan in fresh processes. The
//! autotune decisions shipped for this device (`plans/autotune/`) seed CubeCL's cache first. Each
//! stage is the real command in a process of its own (tune supervises workers by re-running its
//! own command line), so the demo shows exactly what a user's `blazec tune` and `blazec run` do.
use crate::model_args::{ModelArgs, resolve_model};
use blaze_compiler::autotune::pin_autotune_cache;
use blaze_compiler::catalog::Resolver;
use blaze_compiler::runner::RunReport;
use blaze_ir::PlanFile;
use blaze_ir::plan::Regime;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Args, Clone)]
pub struct DemoArgs {
    /// Workload (default: the reference attention-d257).
    #[arg(default_value = "attention-d257")]
    pub model: String,
    #[arg(long)]
    pub batch: Option<usize>,
    #[arg(long)]
    pub seq: Option<usize>,
    /// Seconds the race may take (the tune's --race-budget).
    #[arg(long, default_value_t = 30)]
    pub race_budget: u32,
    /// Timed steps of each final run.
    #[arg(long, default_value_t = 20)]
    pub steps: u32,
    /// Where the plan, the tune's report and the runs' outputs go.
    #[arg(long, default_value = "demo-out")]
    pub out: PathBuf,
    /// Print every stage of the tune (and its block lists) instead of one line per stage.
    #[arg(long, short)]
    pub verbose: bool,
}

/// The shape the demo runs on lavapipe unless told otherwise: the reference shape (batch 16,
/// sequence 256) took over half an hour there on a busy 2-core machine.
const CPU_SHAPE: (usize, usize) = (2, 32);

pub fn demo(resolve: &Resolver, args: &DemoArgs) -> anyhow::Result<()> {
    let (mut batch, mut seq) = (args.batch, args.seq);
    // The cache root the tune would pin, pinned here (before any thread starts) so the seeding
    // below and every process the demo starts use the same one.
    pin_autotune_cache(&cubecl::environment::root())?;
    let device = blaze_burn::device_info();
    // Before any process of the demo autotunes: the decisions shipped for this device, so a
    // fresh machine skips autotuning what they cover (one note line when some are imported).
    blaze_burn::seed_shipped(&shipped_autotune_dir(), &device);
    let adapter = device.adapter;
    let cpu = adapter.contains("llvmpipe");
    if batch.is_none() && seq.is_none() && cpu {
        (batch, seq) = (Some(CPU_SHAPE.0), Some(CPU_SHAPE.1));
        eprintln!(
            "note: no GPU here ({adapter}): the demo runs at batch {}, sequence {}; `--batch 16 --seq 256` runs the reference shape (over an hour on a CPU)",
            CPU_SHAPE.0, CPU_SHAPE.1
        );
    }
    // The model name and shape are checked here, before any process starts.
    let model_args = ModelArgs { model: args.model.clone(), regime: Regime::Training, batch, seq };
    resolve_model(resolve, &model_args)?;
    std::fs::create_dir_all(&args.out)?;
    let shape: Vec<String> = [("--batch", batch), ("--seq", seq)]
        .into_iter()
        .filter_map(|(k, v)| Some([k.to_string(), v?.to_string()]))
        .flatten()
        .collect();
    let took = if cpu { "5-15 minutes here" } else { "1-2 minutes on a GPU with warm caches, more on a fresh machine" };
    eprintln!("demo: 1/2 tune {} training ({took}: tracing, compiling and autotuning come first)", args.model);
    let plan = args.out.join("plan.ron");
    let report = tune(args, &shape, &plan)?;
    print_summary(&report);
    // What the tune kept, from the plan file it wrote (never from its report's wording):
    // no cut and no setting of its own is Burn's plan.
    let kept = PlanFile::read(&plan)?;
    if kept.cuts.is_empty() && kept.settings.is_default() {
        println!("\nBurn's own plan was kept: nothing raced was faster with confidence (above). Nothing to apply.");
        return Ok(());
    }
    eprintln!("demo: 2/2 run the model under Burn's plan and under {}, a fresh process each", plan.display());
    let burn = run(args, &shape, None)?;
    let kept = run(args, &shape, Some(&plan))?;
    print_runs(&burn, &kept);
    Ok(())
}

/// `plans/autotune/` of the checkout: the working directory's (`./blaze` runs from the
/// checkout), else the one this binary was built from.
pub(crate) fn shipped_autotune_dir() -> PathBuf {
    let here = Path::new("plans/autotune");
    match here.is_dir() {
        true => here.to_path_buf(),
        false => Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans/autotune"),
    }
}

fn blazec() -> anyhow::Result<Command> {
    Ok(Command::new(std::env::current_exe()?))
}

/// Runs `blazec tune` (progress on stderr as it goes); returns its report.
fn tune(args: &DemoArgs, shape: &[String], plan: &Path) -> anyhow::Result<String> {
    let report_path = args.out.join("tune-report.md");
    let mut cmd = blazec()?;
    cmd.args(["tune", &args.model, "--regime", "training"]).args(shape);
    cmd.args([
        "--device",
        super::tune::NATIVE_DEVICE,
        "--budget",
        "2",
        // One beam width besides Burn's: every candidate compiles and autotunes its own kernels,
        // which on a fresh machine is most of the demo's time. Width 3 is the one that has won
        // (results/h200/); `blazec tune` itself tries 1, 2, 3 and 8 by default.
        "--max-blocks",
        "3",
        "--captured",
        // Fusion off is raced in this process either way; its cross-check in a process of its
        // own compiles every unfused kernel a second time, which a fresh machine pays in full.
        "--no-fusion-off",
        "--race-budget",
        &args.race_budget.to_string(),
    ]);
    cmd.arg("-o").arg(plan);
    if args.verbose {
        cmd.arg("-v");
    }
    let out = cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).output()?;
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    std::fs::write(&report_path, &report)?;
    anyhow::ensure!(out.status.success(), "the tune failed (its report so far: {})", report_path.display());
    Ok(report)
}

/// The race table and the decision lines of a tune report.
fn print_summary(report: &str) {
    println!();
    for line in report.lines() {
        let table = line.starts_with("| ") || line.starts_with("|---");
        let decision =
            ["**Selected:**", "**Verify:**", "Break-even against Burn's default"].iter().any(|p| line.starts_with(p));
        if table || decision {
            println!("{line}");
        }
    }
}

/// One fresh `blazec run` of the model, optionally under `plan`: its report (`--report`, RON;
/// its printed lines are kept beside it for people).
fn run(args: &DemoArgs, shape: &[String], plan: Option<&Path>) -> anyhow::Result<RunReport> {
    let name = if plan.is_some() { "run-plan" } else { "run-burn" };
    let report_path = args.out.join(format!("{name}.report.ron"));
    let mut cmd = blazec()?;
    cmd.args(["run", &args.model, "--regime", "training"]).args(shape).args(["--steps", &args.steps.to_string()]);
    cmd.arg("--report").arg(&report_path);
    if let Some(plan) = plan {
        cmd.arg("--plan").arg(plan);
    }
    let out = cmd.stderr(Stdio::inherit()).output()?;
    anyhow::ensure!(out.status.success(), "blazec run failed");
    std::fs::write(args.out.join(format!("{name}.txt")), &out.stdout)?;
    let text = std::fs::read_to_string(&report_path)?;
    ron::from_str(&text).map_err(|e| anyhow::anyhow!("{}: not a run report: {e}", report_path.display()))
}

fn median_step_ms(run: &RunReport) -> Option<f64> {
    (!run.step_ms.is_empty()).then(|| blaze_compiler::stats::median(&run.step_ms))
}

fn print_runs(burn: &RunReport, kept: &RunReport) {
    let (b, k) = (median_step_ms(burn), median_step_ms(kept));
    println!("\nfresh processes, {} timed steps each:", kept.step_ms.len());
    println!("  Burn's plan: median {} ms a step", b.map_or("?".into(), |m| format!("{m:.2}")));
    println!(
        "  kept plan ({}{}): median {} ms a step",
        kept.plan,
        kept.execution.as_ref().map_or(String::new(), |e| format!(", execution: {e}")),
        k.map_or("?".into(), |m| format!("{m:.2}"))
    );
    if let (Some(b), Some(k)) = (b, k) {
        println!(
            "  ratio {:.3} (one pair of processes: an anecdote; shipped plans are re-checked in three alternating pairs)",
            k / b
        );
    }
}
