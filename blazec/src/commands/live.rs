//! `blazec live <model>`: a training run of a built-in (or harness) model in live mode, with
//! the report written at the end. Optionally the conditions change mid-run (`--switch-at`
//! with another batch), so that the drift checks have something to find.
use crate::commands::tune::RaceArgs;
use crate::model_args::{ModelArgs, resolve_model};
use blaze_compiler::catalog::Resolver;
use blaze_compiler::live::report::LiveReport;
use blaze_compiler::live::{Live, LiveOptions};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Clone)]
pub struct LiveArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Training steps of the run (selection, settled steps and checks all count).
    #[arg(long, default_value_t = 5000)]
    pub steps: u64,
    /// Steps from settling to the first drift check; each clean check doubles the delay.
    #[arg(long, default_value_t = 500)]
    pub first_check: u64,
    /// Beam widths raced as settings-only arms.
    #[arg(long, value_delimiter = ',', default_value = "1,2,8")]
    pub max_blocks: Vec<u32>,
    /// Cut plans from the plan space raced as arms.
    #[arg(long, default_value_t = 2)]
    pub cut_arms: usize,
    /// A shipped bundle (or plan file): its entry for this run races as an arm.
    #[arg(long)]
    pub bundle: Option<PathBuf>,
    /// Leave fusion off out of the race (it is never kept, only measured as the stock setting).
    #[arg(long)]
    pub no_fusion_off: bool,
    /// Leave captured execution out of the race (by default Burn's plan captured races when the
    /// model offers a recordable step and the captured gate keeps it).
    #[arg(long)]
    pub no_captured: bool,
    /// Rules of the selection race.
    #[command(flatten)]
    pub race: RaceArgs,
    /// Most rounds of a drift check.
    #[arg(long, default_value_t = 40)]
    pub check_rounds: u32,
    /// Change the conditions at this step: the run goes on with a fresh instance at
    /// `--switch-batch` (the plans' operation positions stay those of the same model).
    #[arg(long, requires = "switch_batch")]
    pub switch_at: Option<u64>,
    #[arg(long)]
    pub switch_batch: Option<usize>,
    /// Change the conditions this many steps after the first selection settled (instead of at
    /// a fixed step), so the drift checks run under conditions the selection never saw.
    #[arg(long, requires = "switch_batch", conflicts_with = "switch_at")]
    pub switch_after_settle: Option<u64>,
    #[cfg(feature = "faults")]
    #[command(flatten)]
    pub faults: crate::faults::LiveFaults,
    /// Write the report (RON) here, and a markdown table beside it (.md).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

pub fn live(resolve: &Resolver, args: &LiveArgs) -> anyhow::Result<()> {
    let factory = resolve_model(resolve, &args.model)?;
    let switched = match args.switch_batch {
        Some(b) => Some(resolve_model(resolve, &ModelArgs { batch: Some(b), ..args.model.clone() })?),
        None => None,
    };
    if let Some(out) = &args.output {
        blaze_compiler::files::prepare_output(out)?;
    }
    let mut opts = LiveOptions {
        max_blocks: args.max_blocks.clone(),
        cut_arms: args.cut_arms,
        fusion_off: !args.no_fusion_off,
        captured: !args.no_captured,
        bundle: args.bundle.clone(),
        inject_drift: args.faults().inject_drift,
        ..LiveOptions::default()
    };
    opts.schedule.first_check = args.first_check;
    opts.schedule.select = args.race.rules();
    opts.schedule.check =
        blaze_compiler::race::RaceRules { max_rounds: args.check_rounds, ..opts.schedule.check.clone() };
    let mut progress = crate::progress::progress_printer("live", true);
    let mut live = Live::start(factory.as_ref(), args.model.regime, &opts, &mut progress)?;
    // After the gate: only the run's own recordings meet the fault.
    crate::faults::inject_capture_fault(args.faults().capture_fault_after_start.as_deref())?;
    let mut model = factory.build(args.model.regime).map_err(anyhow::Error::msg)?;
    let mut losses = Vec::with_capacity(args.steps as usize);
    let mut switched_at = None;
    for step in 0..args.steps {
        // Only asked for when the switch waits on the settle (it scans the run's events).
        let after_settle = args.switch_after_settle.and_then(|n| live.settled_at().map(|at| at + n));
        if switched_at.is_none() && (Some(step) == args.switch_at || Some(step) == after_settle) {
            switched_at = Some(step);
            let other = switched.as_ref().expect("clap requires --switch-batch");
            progress(&format!("step {step}: conditions change: {}", other.name()));
            model = other.build(args.model.regime).map_err(anyhow::Error::msg)?;
        }
        let out = live.step(model.as_mut());
        anyhow::ensure!(out.loss.is_finite(), "step {step}: the loss is not finite ({})", out.loss);
        losses.push(out.loss);
    }
    let report = live.report().expect("live mode is on");
    println!("{}", report.to_markdown());
    if let Some(out) = &args.output {
        write_report(out, &report, &losses, switched_at)?;
    }
    Ok(())
}

/// What `blazec live -o` writes: the report and every step's loss.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LiveRun {
    pub report: LiveReport,
    pub losses: Vec<f32>,
    /// The step at which the conditions changed (`--switch-at`, `--switch-after-settle`).
    #[serde(default)]
    pub switched_at: Option<u64>,
}

/// The report (with the run's losses) as RON, and its markdown beside it.
fn write_report(
    out: &std::path::Path,
    report: &LiveReport,
    losses: &[f32],
    switched_at: Option<u64>,
) -> anyhow::Result<()> {
    let run = LiveRun { report: report.clone(), losses: losses.to_vec(), switched_at };
    blaze_compiler::files::write_atomic(out, &blaze_compiler::files::to_ron(&run))?;
    blaze_compiler::files::write_atomic(&out.with_extension("md"), &report.to_markdown())
}
