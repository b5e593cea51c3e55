//! `blazec trace`: a model's op stream, Burn's executed partition and its cut points.
use crate::model_args::{ModelArgs, resolve_model};
use blaze_compiler::catalog::Resolver;
use clap::Args;
use std::path::PathBuf;

/// The arguments of `blazec trace` (its help is on the command).
#[derive(Args)]
pub struct TraceArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Steps run before the traced one (compilation, autotune, fusion exploration).
    #[arg(long, default_value_t = 3)]
    warmup: u32,
    /// Where to write the trace (RON).
    #[arg(short, long)]
    output: PathBuf,
    /// Also write a Graphviz DOT rendering (fused blocks as clusters).
    #[arg(long)]
    dot: Option<PathBuf>,
    /// Also write a readable text dump.
    #[arg(long)]
    text: Option<PathBuf>,
    /// Trace the partition Burn's search makes at this beam width (burn.toml `max_blocks`;
    /// default: Burn's configured one). Plans made from the trace carry the width, and
    /// their cuts refine that partition.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=blaze_ir::plan::MAX_SETTING as i64))]
    max_blocks: Option<u32>,
}

pub fn run(resolve: &Resolver, args: TraceArgs) -> anyhow::Result<()> {
    let TraceArgs { model, warmup, output, dot, text, max_blocks } = args;
    let factory = resolve_model(resolve, &model)?;
    let trace = blaze_compiler::tracer::trace(
        factory.as_ref(),
        &blaze_compiler::tracer::TraceOptions { regime: model.regime, warmup, max_blocks },
    )?;
    blaze_compiler::files::write_atomic(&output, &trace.to_ron())?;
    if let Some(dot) = dot {
        blaze_compiler::files::write_atomic(&dot, &trace.to_dot())?;
    }
    if let Some(text) = text {
        blaze_compiler::files::write_atomic(&text, &trace.to_text())?;
    }
    println!("{}", blaze_compiler::tracer::summary(&trace));
    Ok(())
}
