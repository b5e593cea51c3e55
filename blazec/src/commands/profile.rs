//! `blazec profile`: where a step's time goes, block by block.
use crate::model_args::{ModelArgs, resolve_model};
use blaze_compiler::catalog::Resolver;
use clap::Args;
use std::path::PathBuf;

/// The arguments of `blazec profile` (its help is on the command).
#[derive(Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Also profile this plan file (its cuts and settings).
    #[arg(long)]
    plan: Option<PathBuf>,
    /// Timed steps per arm.
    #[arg(long, default_value_t = 20)]
    steps: u32,
    /// Blocks listed per arm, most device time first.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Also write every block of every arm (RON).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn run(resolve: &Resolver, args: ProfileArgs) -> anyhow::Result<()> {
    let ProfileArgs { model, plan, steps, top, output } = args;
    let factory = resolve_model(resolve, &model)?;
    let mut arms = vec![blaze_compiler::profile::profile_arm(
        factory.as_ref(),
        model.regime,
        &blaze_compiler::candidate::Candidate::new(0, vec![]),
        "Burn's plan",
        steps,
    )?];
    if let Some(path) = plan {
        let plan = blaze_ir::PlanFile::read(&path)?;
        let candidate = blaze_compiler::candidate::Candidate::with_settings(1, plan.cuts, plan.settings);
        if candidate.is_captured() {
            // A replay issues the recorded kernels with no per-block host work to time.
            println!(
                "note: {} is captured: profiled as its fusion run eagerly (its kernels are the ones a replay issues); `blazec run --plan` times its replays",
                path.display()
            );
        }
        let candidate = candidate.eager();
        arms.push(blaze_compiler::profile::profile_arm(
            factory.as_ref(),
            model.regime,
            &candidate,
            &format!("{} ({})", path.display(), candidate.to_text()),
            steps,
        )?);
    }
    print!("{}", blaze_compiler::profile::text(&model.model, &arms, top));
    if let Some(out) = output {
        blaze_compiler::files::write_atomic(&out, &blaze_compiler::files::to_ron(&arms))?;
    }
    Ok(())
}
