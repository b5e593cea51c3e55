//! `blazec run`: a model for some steps, optionally under a plan file.
use crate::model_args::{ModelArgs, resolve_model};
use blaze_compiler::catalog::Resolver;
use blaze_compiler::drive::Settle;
use blaze_compiler::files::{to_ron, write_atomic};
use blaze_compiler::runner::{Loaded, contract_of, run_loaded};
use blaze_runtime::{LoadOutcome, load_bundle, load_plan, preset_submission_batch};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Plan file to load at start-up (Burn's own plan when absent or unusable).
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// Bundle (or plan file) to start from with the one-call start-up a user program makes
    /// (`blaze_burn::init`): the entry made for this device whose op stream the run matches is
    /// installed after the first step; nothing about the run is declared.
    #[arg(long, conflicts_with = "plan")]
    pub bundle: Option<PathBuf>,
    /// Untimed steps first.
    #[arg(long, default_value_t = 2)]
    pub warmup: u32,
    /// Timed steps after warm-up.
    #[arg(long, default_value_t = 3)]
    pub steps: u32,
    /// Untimed stepping after warm-up, in milliseconds, before the first timed step (lets the
    /// device's clocks recover from the compilation pause; 0 = none).
    #[arg(long, default_value_t = blaze_compiler::drive::SETTLE.as_millis() as u64)]
    pub settle_ms: u64,
    /// Settle for exactly this many untimed steps instead of `--settle-ms`, so two runs' loss
    /// lists line up step for step (settling by wall time runs a time-dependent count).
    #[arg(long, conflicts_with = "settle_ms")]
    pub settle_steps: Option<usize>,
    /// Write the run's report (RON): losses, times, executed partition, captured logits.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

pub fn run(resolve: &Resolver, args: &RunArgs) -> anyhow::Result<()> {
    let factory = resolve_model(resolve, &args.model)?;
    // Before the first tensor operation (building the model runs some and starts the device,
    // when CubeCL reads the submission batch): a bundle's autotune decisions and its one-call
    // start-up, as `blaze_burn::init` does, and a plan's submission batch.
    let device = blaze_burn::device_info();
    println!("device: {}", blaze_burn::device_details());
    if let Some(bundle) = &args.bundle {
        blaze_burn::seed_autotune(bundle, &device);
    }
    let bundled = args.bundle.as_ref().map(|p| load_bundle(p, &device));
    let preset = args.plan.as_ref().and_then(|p| preset_submission_batch(p, &device));
    let mut model = factory.build(args.model.regime).map_err(anyhow::Error::msg)?;
    let planned = args.plan.as_ref().map(|p| load_plan(p, &contract_of(model.as_ref(), "")));
    if let (Some(n), Some(LoadOutcome::Fallback(_))) = (preset, &planned) {
        eprintln!("{}", blaze_runtime::settings::preset_kept_note(n));
    }
    let loaded = match (&planned, &bundled) {
        (Some(p), _) => Some(Loaded::Plan(p)),
        (_, Some(b)) => Some(Loaded::Bundle(b)),
        _ => None,
    };
    let settle = match args.settle_steps {
        Some(n) => Settle::Steps(n),
        None => Settle::For(std::time::Duration::from_millis(args.settle_ms)),
    };
    // A captured plan records the step. Under a bundle that holds a captured entry for this
    // regime, the step is wrapped and the one rule (`blaze_runtime::captured::decide`) says,
    // after the warm-up steps, whether it records; a bundle without one never records.
    let regime = args.model.regime;
    let source = bundled.as_ref().map(|b| b.capture_source());
    let captured = match (&planned, &source) {
        (Some(LoadOutcome::Applied(h)), _) => h.plan.settings.is_captured(),
        (None, Some(s)) => s.holds_captured(regime),
        _ => false,
    };
    let report = if captured {
        let mut model = blaze_runtime::Captured::new(model);
        if let Some(LoadOutcome::Applied(h)) = &planned {
            model = model.with_plan(&h.plan.cuts, &h.plan.settings);
        }
        if let (None, Some(s)) = (&planned, source) {
            model = model.decided_by(s, regime);
        }
        run_loaded(&mut model, loaded, args.warmup, settle, args.steps).with_capture(&model)
    } else {
        run_loaded(model.as_mut(), loaded, args.warmup, settle, args.steps)
    };
    println!("plan: {}", report.plan);
    if let Some(execution) = &report.execution {
        println!(
            "execution: {execution} ({} replays){}",
            report.replays,
            report.recording.map_or(String::new(), |m| format!("; {}", describe_memory(&m)))
        );
    }
    if let (Some(load), Some(check)) = (report.plan_load_ms, report.op_stream_check_ms) {
        let per_op = |n: usize| if n > 0 { format!("{:.2} us", check * 1e3 / n as f64) } else { "–".into() };
        let judged = report.op_stream_check_ops.unwrap_or(0) as usize;
        println!(
            "plan load {load:.3} ms; automatic op-stream check {check:.3} ms over {judged} operations judged ({} per operation of the step, {} per operation judged; CPU time of the program's threads)",
            per_op(report.op_stream_check_step_ops.map_or(report.ops, |n| n as usize)),
            per_op(judged)
        );
    }
    println!("warm-up step ms: {:?}", report.warmup_ms.iter().map(|t| t.round()).collect::<Vec<_>>());
    println!("losses: {:?}", report.losses);
    println!("step ms: {:?}", report.step_ms.iter().map(|t| (t * 100.0).round() / 100.0).collect::<Vec<_>>());
    println!(
        "partition {} ({} ops, {} blocks, {} fused)",
        report.partition.fingerprint(),
        report.ops,
        report.partition.blocks.len(),
        report.partition.fused_blocks().count()
    );
    if let Some(partition) = &report.recorded_partition {
        println!(
            "recorded partition {} ({} blocks, {} fused)",
            partition.fingerprint(),
            partition.blocks.len(),
            partition.fused_blocks().count()
        );
    }
    if let Some(path) = &args.report {
        write_atomic(path, &to_ron(&report))?;
    }
    Ok(())
}

/// `memory pools reserve 812.0 MiB with the recording live (640.0 MiB before it; 700.2 MiB in use)`.
pub fn describe_memory(m: &blaze_runtime::RecordingMemory) -> String {
    let mib = |b: Option<u64>| b.map_or("?".to_string(), |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64));
    format!(
        "memory pools reserve {} with the recording live ({} before it; {} in use)",
        mib(m.reserved_live),
        mib(m.reserved_before),
        mib(m.in_use_live)
    )
}
