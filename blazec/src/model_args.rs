//! How a command names a model: the workload, its regime and optional test shapes.
use blaze_compiler::catalog::Resolver;
use blaze_ir::plan::Regime;
use blaze_runtime::ModelFactory;
use clap::Args;

#[derive(Args, Clone)]
pub struct ModelArgs {
    /// Workload name, e.g. attention-d257 (see `blazec list`).
    pub model: String,
    /// forward or training.
    #[arg(long, default_value = "training")]
    pub regime: Regime,
    /// Override the batch size (small test runs; recorded in the model name).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Override the sequence length (small test runs; recorded in the model name).
    #[arg(long)]
    pub seq: Option<usize>,
}

pub fn resolve_model(resolve: &Resolver, args: &ModelArgs) -> anyhow::Result<Box<dyn ModelFactory>> {
    resolve
        .find(&args.model, args.batch, args.seq)
        .ok_or_else(|| anyhow::anyhow!("unknown model `{}` (see `blazec list`)", args.model))
}
