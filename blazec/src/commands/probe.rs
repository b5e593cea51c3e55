//! `blazec probe`: what one arm computes on a fresh seeded instance.
use crate::model_args::{ModelArgs, resolve_model};
use blaze_compiler::catalog::Resolver;
use clap::Args;
use std::path::PathBuf;

/// The arguments of `blazec probe` (its help is on the command).
#[derive(Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// burn, fusion-off, or a plan file's path (its cuts).
    #[arg(long, default_value = "burn")]
    arm: String,
    #[arg(long, default_value_t = blaze_compiler::verify::PROBE_STEPS)]
    steps: u32,
    /// First run this many steps of Burn's plan on another instance, so the arm is probed in
    /// a process where Burn's plans are already cached (as in a race).
    #[arg(long, default_value_t = 0)]
    burn_first: u32,
    #[arg(short, long)]
    output: PathBuf,
}

pub fn run(resolve: &Resolver, args: ProbeArgs) -> anyhow::Result<()> {
    let ProbeArgs { model, arm, steps, burn_first, output } = args;
    let factory = resolve_model(resolve, &model)?;
    let candidate = match arm.as_str() {
        "burn" => blaze_compiler::candidate::Candidate::new(0, vec![]),
        "fusion-off" => blaze_compiler::candidate::Candidate::fusion_off(1),
        path => {
            let plan = blaze_ir::PlanFile::read(std::path::Path::new(path))
                .map_err(|e| anyhow::anyhow!("--arm {path}: not burn, fusion-off or a usable plan file ({e})"))?;
            blaze_compiler::candidate::Candidate::with_settings(1, plan.cuts, plan.settings)
        }
    };
    if burn_first > 0 {
        let mut other = factory.build(model.regime).map_err(anyhow::Error::msg)?;
        blaze_compiler::drive::warm_up(other.as_mut(), burn_first);
    }
    let probe = blaze_compiler::verify::probe_steps(factory.as_ref(), model.regime, &candidate, false, steps)
        .map_err(anyhow::Error::msg)?;
    blaze_compiler::files::write_atomic(&output, &blaze_compiler::files::to_ron(&probe))?;
    println!(
        "{} {}: losses {:?}; {} blocks ({} fused); partition {}",
        model.model,
        candidate.to_text(),
        probe.losses,
        probe.blocks,
        probe.fused_blocks,
        probe.fingerprint
    );
    Ok(())
}
