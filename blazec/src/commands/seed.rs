//! `blazec seed`: the CubeCL autotune decisions shipped for this device imported into the
//! autotune cache every later run and tune on this machine reads.
use clap::Args;
use std::path::PathBuf;

/// The arguments of `blazec seed` (its help is on the command).
#[derive(Args)]
pub struct SeedArgs {
    /// A bundle, or a directory whose bundles (`*.blaze`) are all read; the checkout's
    /// `plans/autotune/` by default.
    from: Option<PathBuf>,
}

/// Imports what `args.from` holds for this device; a note per bundle imported, one when none
/// holds decisions for this device. A damaged side file is a warning (the import goes on with
/// the other bundles), never an error: CubeCL then autotunes as usual.
pub fn run(args: &SeedArgs) -> anyhow::Result<()> {
    let from = args.from.clone().unwrap_or_else(super::demo::shipped_autotune_dir);
    anyhow::ensure!(from.exists(), "{}: no such bundle or directory", from.display());
    let device = blaze_burn::device_info();
    let seeded = match from.is_dir() {
        true => blaze_burn::seed_shipped(&from, &device),
        false => blaze_burn::seed_autotune(&from, &device).into_iter().collect(),
    };
    if seeded.is_empty() {
        eprintln!(
            "note: {} holds no autotune decisions this machine can use ({}, {}, {}, Burn {})",
            from.display(),
            device.adapter,
            device.backend,
            device.compiler,
            blaze_runtime::BURN_VERSION
        );
    }
    Ok(())
}
