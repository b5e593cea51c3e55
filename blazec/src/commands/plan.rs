//! `blazec plan`: a plan file written by hand from a trace.
use blaze_compiler::catalog::Resolver;
use blaze_compiler::catalog::read_trace;
use clap::Args;
use std::path::PathBuf;

/// The arguments of `blazec plan` (its help is on the command).
#[derive(Args)]
pub struct PlanArgs {
    /// A trace written by `blazec trace`.
    #[arg(long)]
    trace: PathBuf,
    /// Boundary ids to cut, comma separated (b5,b65 or 5,65).
    #[arg(long, value_delimiter = ',')]
    cuts: Vec<blaze_ir::BoundaryId>,
    /// Cut every k-th live cut point instead.
    #[arg(long, conflicts_with = "cuts")]
    every_live: Option<usize>,
    /// Beam width of Burn's fusion search under this plan (burn.toml `max_blocks`; Burn's
    /// default 5). Makes a version-2 plan.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=blaze_ir::plan::MAX_SETTING as i64))]
    max_blocks: Option<u32>,
    /// Kernels per queue submission (CUBECL_WGPU_MAX_TASKS; CubeCL's default 32), set by the
    /// runtime when it loads the plan. Makes a version-2 plan.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=blaze_ir::plan::MAX_SETTING as i64))]
    max_tasks: Option<u32>,
    /// How Burn caches the plans it explores under this plan: `shared` (one per distinct
    /// segment, Burn's own store; not with cuts) or `position` (one per step position, what
    /// a plan with cuts does anyway). Default: by position with cuts, shared without. Makes
    /// a version-3 plan.
    #[arg(long, value_parser = parse_store)]
    store: Option<blaze_ir::plan::PlanStore>,
    /// Captured execution (forward regime): one step recorded after warm-up with this plan's
    /// fusion in force, replayed for every later step with its inputs written in place;
    /// eager execution with one warning whenever that fails. Makes a version-4 plan.
    #[arg(long)]
    captured: bool,
    #[arg(short, long)]
    output: PathBuf,
    /// Also add the plan to this bundle (replacing the entry for the same device, Burn
    /// version, model, regime and shapes; a new bundle when there is no file).
    #[arg(long)]
    bundle: Option<PathBuf>,
    /// With --bundle: also ship the CubeCL autotune decisions of this cache root (a
    /// directory a run or tune used as BLAZE_AUTOTUNE_CACHE) for this device.
    #[arg(long, requires = "bundle")]
    autotune_cache: Option<PathBuf>,
}

pub fn run(_resolve: &Resolver, args: PlanArgs) -> anyhow::Result<()> {
    let PlanArgs { trace, cuts, every_live, max_blocks, max_tasks, store, captured, output, bundle, autotune_cache } =
        args;
    let trace = read_trace(&trace)?;
    let cuts = match every_live {
        Some(k) => trace.live_cut_points().into_iter().step_by(k.max(1)).collect(),
        None => cuts,
    };
    // The trace's width (a trace made with --max-blocks) unless the command gives one.
    let execution = captured.then_some(blaze_ir::plan::Execution::Captured);
    let plan = trace.plan_with(
        cuts,
        blaze_ir::plan::Settings { max_blocks: max_blocks.or(trace.max_blocks), max_tasks, store, execution },
    );
    plan.validate()?;
    blaze_compiler::files::write_atomic(&output, &plan.to_ron())?;
    let settings =
        if plan.settings.is_default() { String::new() } else { format!(", settings {}", plan.settings.to_text()) };
    println!(
        "plan with {} cut(s) of {} cut points{settings} written to {}",
        plan.cuts.len(),
        plan.cut_points.len(),
        output.display()
    );
    match bundle {
        Some(bundle) => crate::commands::bundle::add(&bundle, vec![plan], autotune_cache.as_deref()),
        None => Ok(()),
    }
}

/// `--store shared|position`, read as a plan's text form reads it.
pub fn parse_store(value: &str) -> Result<blaze_ir::plan::PlanStore, String> {
    let mut settings = blaze_ir::plan::Settings::default();
    settings.read_word(&format!("store={value}"))?;
    settings.store.ok_or_else(|| format!("`{value}`: expected shared or position"))
}
