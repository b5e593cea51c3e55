//! `blazec doctor`: does Burn's fusion change this model's numbers?
use crate::model_args::{ModelArgs, resolve_model};
use blaze_compiler::catalog::Resolver;
use clap::Args;
use std::path::PathBuf;

/// The arguments of `blazec doctor` (its help is on the command).
#[derive(Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Steps per probe (a wrong backward kernel shows in the next step's loss).
    #[arg(long, default_value_t = 3)]
    steps: u32,
    /// Largest relative difference from the unfused reference that counts as equal.
    #[arg(long, default_value_t = blaze_compiler::verify::REL_TOL as f64)]
    tolerance: f64,
    /// Most probes the search may run.
    #[arg(long, default_value_t = 200)]
    max_probes: usize,
    #[arg(short, long)]
    output: PathBuf,
}

pub fn run(resolve: &Resolver, args: DoctorArgs) -> anyhow::Result<()> {
    let DoctorArgs { model, steps, tolerance, max_probes, output } = args;
    anyhow::ensure!(tolerance >= 0.0 && tolerance.is_finite(), "--tolerance must be a finite number >= 0");
    anyhow::ensure!(steps >= 1, "--steps must be at least 1");
    let factory = resolve_model(resolve, &model)?;
    blaze_compiler::files::prepare_output(&output)?;
    let opts = blaze_compiler::doctor::DoctorOptions { regime: model.regime, steps, tolerance, max_probes };
    let mut progress = crate::progress::progress_printer("doctor", false);
    let d = blaze_compiler::doctor::doctor(factory.as_ref(), &opts, &mut progress)?;
    let stem = output.with_extension("");
    blaze_compiler::files::write_atomic(&stem.with_extension("doctor.ron"), &blaze_compiler::files::to_ron(&d.report))?;
    let md = blaze_compiler::doctor::markdown(&d.report);
    blaze_compiler::files::write_atomic(&stem.with_extension("doctor.md"), &md)?;
    if !d.report.cuts.is_empty() {
        let plan = d.trace.plan(d.report.cuts.iter().map(|&c| blaze_ir::BoundaryId(c)).collect());
        plan.validate()?;
        blaze_compiler::files::write_atomic(&output, &plan.to_ron())?;
    }
    print!("{md}");
    Ok(())
}
