//! `blazec demo`: attention-d257 training under Burn's plan and under a plan file with
//! hand-chosen cuts (every k-th live cut point), both in one process: executed partitions,
//! step times, and whether the losses agree.
use crate::catalog::{ModelArgs, Resolver, resolve_model};
use crate::files::write_atomic;
use crate::runner::{RunReport, contract_of, run_loaded};
use crate::session::{SETTLE, Settle};
use crate::tracing::{TraceOptions, summary, trace};
use blaze_ir::{BoundaryId, plan::Regime};
use blaze_runtime::load_plan;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Clone)]
pub struct DemoArgs {
    /// Workload (default: the reference attention-d257).
    #[arg(default_value = "attention-d257")]
    pub model: String,
    #[arg(long)]
    pub batch: Option<usize>,
    #[arg(long)]
    pub seq: Option<usize>,
    /// Cut at every k-th live cut point.
    #[arg(long, default_value_t = 4)]
    pub every: usize,
    /// Timed steps per plan.
    #[arg(long, default_value_t = 5)]
    pub steps: u32,
    /// Where to write the plan file and both run reports.
    #[arg(long, default_value = "demo-out")]
    pub out: PathBuf,
}

/// The shape the demo runs on lavapipe unless told otherwise: the reference shape (batch 16,
/// sequence 256) took over half an hour there on a busy 2-core machine, printing nothing.
const CPU_SHAPE: (usize, usize) = (2, 32);

pub fn demo(resolve: &Resolver, args: &DemoArgs) -> anyhow::Result<()> {
    let (mut batch, mut seq) = (args.batch, args.seq);
    let adapter = blaze_burn::device_info().adapter;
    if batch.is_none() && seq.is_none() && adapter.contains("llvmpipe") {
        (batch, seq) = (Some(CPU_SHAPE.0), Some(CPU_SHAPE.1));
        eprintln!(
            "note: no GPU here ({adapter}): the demo runs at batch {}, sequence {}, a few minutes after the build; `--batch 16 --seq 256` runs the reference shape (over half an hour on a CPU)",
            CPU_SHAPE.0, CPU_SHAPE.1
        );
    }
    let model_args = ModelArgs { model: args.model.clone(), regime: Regime::Training, batch, seq };
    let factory = resolve_model(resolve, &model_args)?;
    std::fs::create_dir_all(&args.out)?;
    let mut progress = crate::progress::progress_printer("demo", false);

    progress("trace (compilation and autotune happen here: the longest stage on a cold machine)");
    let traced = trace(factory.as_ref(), &TraceOptions::new(Regime::Training, 3))?;
    println!("trace: {}", summary(&traced));
    let cuts: Vec<BoundaryId> = traced.live_cut_points().into_iter().step_by(args.every.max(1)).collect();

    progress("run under Burn's plan");
    let mut burn = factory.build(Regime::Training).map_err(anyhow::Error::msg)?;
    let default = run_loaded(burn.as_mut(), None, 2, Settle::For(SETTLE), args.steps);
    drop(burn);

    let plan_path = args.out.join("demo-plan.ron");
    let plan = traced.plan(cuts.clone());
    write_atomic(&plan_path, &plan.to_ron())?;

    progress("run under the plan file");
    let mut cut = factory.build(Regime::Training).map_err(anyhow::Error::msg)?;
    let loaded = load_plan(&plan_path, &contract_of(cut.as_ref(), ""));
    // The same number of settling steps as Burn's run, so both see the same batches.
    let planned = run_loaded(cut.as_mut(), Some(crate::runner::Loaded::Plan(&loaded)), 2, Settle::Steps(default.settle_steps), args.steps);

    write_atomic(&args.out.join("burn-default.ron"), &crate::files::to_ron(&default))?;
    write_atomic(&args.out.join("hand-cuts.ron"), &crate::files::to_ron(&planned))?;
    print_side_by_side(&default, &planned, &cuts);
    Ok(())
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() { f64::NAN } else { v[v.len() / 2] }
}

fn print_side_by_side(default: &RunReport, planned: &RunReport, cuts: &[BoundaryId]) {
    let ids: Vec<u64> = cuts.iter().map(|c| c.0).collect();
    for (label, r) in [("Burn's plan", default), ("hand-chosen cuts", planned)] {
        println!("\n== {label} (plan: {})", r.plan);
        println!("executed partition {}: {} blocks, {} fused; blocks in execution order:", r.partition.fingerprint(),
            r.partition.blocks.len(), r.partition.fused_blocks().count());
        for block in r.partition.fused_blocks() {
            println!("  [{}]", block.iter().map(u32::to_string).collect::<Vec<_>>().join(" "));
        }
        println!("step ms: median {:.2} of {:?}", median(&r.step_ms), r.step_ms.iter().map(|t| (t * 100.0).round() / 100.0).collect::<Vec<_>>());
        println!("losses: {:?}", r.losses);
    }
    println!("\nrequested cuts: {}", cuts.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" "));
    println!("cuts spanned by an executed block under the plan: {:?}", planned.partition.spanned_cuts(&ids));
    println!("hook calls after warm-up under the plan: {}", planned.hook_calls_after_warmup);
    let max_rel = default.losses.iter().zip(&planned.losses).map(|(a, b)| ((a - b) / a).abs()).fold(0f32, f32::max);
    println!("largest relative loss difference: {max_rel:.3e}");
}
