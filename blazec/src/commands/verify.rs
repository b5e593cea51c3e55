//! `blazec verify`: the verification gate run directly.
use blaze_compiler::catalog::Resolver;
use blaze_compiler::catalog::factory_named;
use blaze_compiler::catalog::read_trace;
use clap::Args;
use std::path::PathBuf;

/// The arguments of `blazec verify` (its help is on the command).
#[derive(Args)]
pub struct VerifyArgs {
    /// A plan file: verify its cuts on the model and regime its contract names.
    #[arg(long, conflicts_with = "trace", required_unless_present = "trace")]
    plan: Option<PathBuf>,
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Cut every k-th live cut point.
    #[arg(long, default_value_t = 4)]
    every_live: usize,
    #[cfg(feature = "faults")]
    #[command(flatten)]
    pub faults: crate::faults::VerifyFaults,
    /// Steps of the captured gate for a captured plan (default: 24 forward, 207 training).
    #[arg(long, value_name = "N")]
    gate_steps: Option<u32>,
}

pub fn run(resolve: &Resolver, args: VerifyArgs) -> anyhow::Result<()> {
    let inject_fault = args.faults().inject_fault;
    let VerifyArgs { plan, trace, every_live, gate_steps, .. } = args;
    let (model, regime, cuts, settings) = match (plan, trace) {
        (Some(plan), _) => {
            let plan = blaze_ir::PlanFile::read(&plan)?;
            (plan.contract.model, plan.contract.regime, plan.cuts, plan.settings)
        }
        (None, Some(trace)) => {
            let trace = read_trace(&trace)?;
            let cuts = trace.live_cut_points().into_iter().step_by(every_live.max(1)).collect();
            (trace.model, trace.regime, cuts, Default::default())
        }
        (None, None) => anyhow::bail!("give --plan or --trace"),
    };
    let factory = factory_named(resolve, &model)?;
    let candidate = blaze_compiler::candidate::Candidate::with_settings(1, cuts, settings);
    let outcome = match gate_steps {
        Some(steps) if candidate.is_captured() => blaze_compiler::verify::verify_captured(
            factory.as_ref(),
            regime,
            &candidate,
            steps,
            &mut blaze_compiler::verify::EagerRuns::default(),
        ),
        _ => blaze_compiler::verify::verify(factory.as_ref(), regime, &candidate, inject_fault),
    };
    println!(
        "verify {model} ({} cuts{}): {outcome:?}",
        candidate.cuts.len(),
        if inject_fault { ", fault injected" } else { "" }
    );
    Ok(())
}
