//! `blazec bundle`: plan files added to a bundle.
use anyhow::Context;
use blaze_compiler::bundling::Added;
use blaze_compiler::catalog::Resolver;
use clap::Args;
use std::path::{Path, PathBuf};

/// The arguments of `blazec bundle` (its help is on the command).
#[derive(Args)]
pub struct BundleArgs {
    bundle: PathBuf,
    /// Plan files to add (none with --autotune-cache: a bundle of this machine's decisions
    /// alone, as `plans/autotune/` ships them).
    #[arg(required_unless_present = "autotune_cache")]
    plans: Vec<PathBuf>,
    /// Also ship the CubeCL autotune decisions of this cache root (a directory a run or
    /// tune used as BLAZE_AUTOTUNE_CACHE, or CubeCL's own, `~/.cache/cubecl`), for the device
    /// of the plans (all plans must then name one device), or with no plan for this machine's.
    #[arg(long)]
    autotune_cache: Option<PathBuf>,
}

/// Every plan is read and validated first, so a bad one leaves the bundle as it was.
pub fn run(_resolve: &Resolver, args: BundleArgs) -> anyhow::Result<()> {
    let BundleArgs { bundle, plans, autotune_cache } = args;
    if let (true, Some(cache)) = (plans.is_empty(), &autotune_cache) {
        let file = blaze_compiler::bundling::add_decisions(&bundle, cache, &blaze_burn::device_info())?;
        say(&bundle, Added::Autotune(file));
        return Ok(());
    }
    let plans = plans
        .iter()
        .map(|p| blaze_ir::PlanFile::read(p).with_context(|| format!("{}: not a plan file", p.display())))
        .collect::<anyhow::Result<Vec<_>>>()?;
    add(&bundle, plans, autotune_cache.as_deref())
}

/// Adds `plans` (and the decisions of `autotune_cache`) to the bundle at `path` through the
/// library's one bundle writer, and says what it did, a line each.
pub fn add(path: &Path, plans: Vec<blaze_ir::PlanFile>, autotune_cache: Option<&Path>) -> anyhow::Result<()> {
    for added in blaze_compiler::bundling::add_plans(path, plans, autotune_cache)? {
        say(path, added);
    }
    Ok(())
}

/// One line for one thing the bundle writer did.
fn say(path: &Path, added: Added) {
    match added {
        Added::Entry { key, replaced } => {
            println!("bundle {}: {} the entry for {key}", path.display(), if replaced { "replaced" } else { "added" })
        }
        Added::Autotune(file) => println!(
            "bundle {}: {} autotune decisions for this device in {}",
            path.display(),
            file.decisions,
            file.file
        ),
    }
}
