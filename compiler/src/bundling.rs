//! The one bundle writer: plans (each validated before anything is written) and, optionally, the
//! autotune decisions of a cache root go into a bundle file. `blazec bundle`, `blazec plan
//! --bundle` and `blazec tune --bundle` all write through [`add_plans`].
use anyhow::Context;
use blaze_ir::bundle::{AutotuneFile, EntryKey};
use blaze_ir::plan::DeviceInfo;
use blaze_ir::{Bundle, PlanFile};
use std::path::Path;

/// One thing [`add_plans`] did, for the command to say.
#[derive(Clone, Debug, PartialEq)]
pub enum Added {
    /// The entry for `key` was added, or replaced an entry of the same key.
    Entry { key: String, replaced: bool },
    /// This device's autotune decisions were exported beside the bundle and named in it.
    Autotune(AutotuneFile),
}

/// Adds `plans` to the bundle at `path` (a new bundle when there is no file), each replacing
/// the entry of its key, and with `autotune_cache` the autotune decisions of that cache root for
/// the plans' one device. Every plan is validated first, so a bad one leaves the bundle as it
/// was; a file that is there but is not a readable bundle or plan is an error, never
/// overwritten.
pub fn add_plans(path: &Path, plans: Vec<PlanFile>, autotune_cache: Option<&Path>) -> anyhow::Result<Vec<Added>> {
    let device = plans.first().context("no plan to add")?.contract.device.clone();
    for plan in &plans {
        plan.validate().with_context(|| format!("the plan for {}", EntryKey::of(&plan.contract)))?;
    }
    if autotune_cache.is_some() {
        anyhow::ensure!(
            plans.iter().all(|p| p.contract.device == device),
            "--autotune-cache: the plans name more than one device; add them in one call per device"
        );
    }
    let mut bundle = read_or_new(path)?;
    let mut added = Vec::new();
    for plan in plans {
        let key = EntryKey::of(&plan.contract).to_string();
        let replaced = bundle.upsert(plan);
        added.push(Added::Entry { key, replaced });
    }
    if let Some(cache) = autotune_cache {
        added.push(Added::Autotune(crate::autotune::export_into(path, &mut bundle, cache, &device)?));
    }
    crate::files::write_atomic(path, &bundle.to_ron())?;
    Ok(added)
}

/// Names `device`'s autotune decisions of the cache root `autotune_cache` in the bundle at
/// `path` (a new bundle when there is no file), with no plan: what `plans/autotune/` ships, so
/// a fresh machine of that device skips autotuning the kernels they cover.
pub fn add_decisions(path: &Path, autotune_cache: &Path, device: &DeviceInfo) -> anyhow::Result<AutotuneFile> {
    let mut bundle = read_or_new(path)?;
    let file = crate::autotune::export_into(path, &mut bundle, autotune_cache, device)?;
    crate::files::write_atomic(path, &bundle.to_ron())?;
    Ok(file)
}

/// The bundle at `path`, or a new one when there is no file; a file that is not a readable
/// bundle is an error (never overwritten).
fn read_or_new(path: &Path) -> anyhow::Result<Bundle> {
    if path.exists() {
        Bundle::read(path).with_context(|| format!("--bundle {}: not a bundle this blazec can extend", path.display()))
    } else {
        Ok(Bundle::new())
    }
}
