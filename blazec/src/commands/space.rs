//! `blazec space`: a trace's candidate plans, collapsed by the e-graph and confirmed on the device.
use blaze_compiler::catalog::Resolver;
use blaze_compiler::catalog::factory_of_trace;
use blaze_compiler::catalog::read_trace;
use blaze_compiler::space::Enumeration;
use clap::Args;
use std::path::PathBuf;

/// The arguments of `blazec space` (its help is on the command).
#[derive(Args)]
pub struct SpaceArgs {
    /// A trace written by `blazec trace` (its model is rebuilt to confirm candidates).
    #[arg(long)]
    trace: PathBuf,
    /// Candidates to request when there are more than 10 live cut points.
    #[arg(long, default_value_t = 33)]
    budget: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Confirm every request, not only the e-graph's representatives (counts false merges).
    #[arg(long)]
    check_egraph: bool,
    /// Enumerate and canonicalise only (no device): print the e-graph's groups.
    #[arg(long, conflicts_with = "check_egraph")]
    dry_run: bool,
    /// Requests by cut-point class (the same place in every layer) instead of sampled cut
    /// sets; with --dry-run the classes are printed too.
    #[arg(long)]
    classes: bool,
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn run(resolve: &Resolver, args: SpaceArgs) -> anyhow::Result<()> {
    let SpaceArgs { trace, budget, seed, check_egraph, dry_run, classes, output } = args;
    let trace = read_trace(&trace)?;
    let how = if classes { Enumeration::Classes { budget } } else { Enumeration::Sampled { budget, seed } };
    if dry_run {
        let (cands, canon) = blaze_compiler::space::request(&trace, how);
        if classes {
            let found = blaze_compiler::classes::classes(&trace);
            println!(
                "{} live cut points in {} classes ({} repeating):",
                trace.live_cut_points().len(),
                found.len(),
                found.iter().filter(|c| c.members.len() > 1).count()
            );
            for class in found.iter().filter(|c| c.members.len() > 1) {
                println!("  {} x  {}", class.members.len(), class.context);
            }
        }
        println!(
            "requested {} / collapsed by e-graph {} ({}, {} iterations, {} e-nodes)",
            cands.len(),
            canon.collapsed(),
            canon.stop_reason,
            canon.iterations,
            canon.egraph_nodes
        );
        for group in &canon.groups {
            println!("  {}", group.iter().map(|i| cands[*i].to_text()).collect::<Vec<_>>().join("  ==  "));
        }
        return Ok(());
    }
    let factory = factory_of_trace(resolve, &trace)?;
    let mut progress = crate::progress::progress_printer("space", false);
    let report = blaze_compiler::space::explore_space(factory.as_ref(), &trace, how, check_egraph, &mut progress)?;
    println!("{}", blaze_compiler::space::summary(&report));
    if let Some(out) = output {
        blaze_compiler::files::write_atomic(&out, &blaze_compiler::files::to_ron(&report))?;
    }
    anyhow::ensure!(
        report.false_merges.is_empty(),
        "the e-graph merged requests that executed differently: {:?}",
        report.false_merges
    );
    Ok(())
}
