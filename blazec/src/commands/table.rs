//! `blazec table`: the campaign table of tune results files.
use blaze_compiler::catalog::Resolver;
use clap::Args;
use std::path::PathBuf;

/// The arguments of `blazec table` (its help is on the command).
#[derive(Args)]
pub struct TableArgs {
    /// Tune results files (`<model>.<regime>.results.ron`, written beside each tuned plan).
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

pub fn run(_resolve: &Resolver, args: TableArgs) -> anyhow::Result<()> {
    let TableArgs { files } = args;
    print!("{}", blaze_compiler::tune::table::table(&files)?);
    Ok(())
}
