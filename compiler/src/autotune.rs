//! Exporting CubeCL's autotune decisions into a bundle (version 2): the decisions of a cache
//! root (the one a tune pinned) go into a CubeCL environment bundle beside the Blaze bundle, and
//! the Blaze bundle names it for this device. `blaze_burn::seed_autotune` imports it at start-up.
use anyhow::Context;
use blaze_ir::bundle::AutotuneFile;
use blaze_ir::plan::DeviceInfo;
use std::path::{Path, PathBuf};

/// Exports the autotune decisions under `cache_root` for the bundle that will be written at
/// `bundle`, made on `device`; the file goes to `<bundle>.autotune/<device>.cubecl` and is
/// added to (or replaces this device's file in) `held`, which the caller writes.
pub(crate) fn export_into(
    bundle: &Path,
    held: &mut blaze_ir::Bundle,
    cache_root: &Path,
    device: &DeviceInfo,
) -> anyhow::Result<AutotuneFile> {
    let name = bundle.file_name().context("the bundle path has no file name")?.to_string_lossy().into_owned();
    let rel = format!("{name}.autotune/{}.cubecl", slug(device));
    let dir = bundle.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let out = dir.join(&rel);
    std::fs::create_dir_all(out.parent().expect("has a parent"))
        .with_context(|| format!("cannot create {}", out.display()))?;
    let options = cubecl::bundle::ExportOptions {
        name: format!("blaze: {} ({}, {})", device.adapter, device.backend, device.compiler),
        namespaces: vec!["autotune".into()],
        format: cubecl::bundle::BundleFormat::Sqlite,
        ..Default::default()
    };
    cubecl::bundle::export(&[cache_root], &out, &options)
        .map_err(|e| anyhow::anyhow!("cannot export the autotune decisions of {}: {e}", cache_root.display()))?;
    let file = AutotuneFile {
        device: device.clone(),
        burn_version: blaze_runtime::BURN_VERSION.into(),
        file: rel,
        decisions: count(&out)?,
    };
    held.upsert_autotune(file.clone());
    Ok(file)
}

/// Decisions in an exported file.
fn count(file: &Path) -> anyhow::Result<usize> {
    let source = cubecl::bundle::open(file).map_err(|e| anyhow::anyhow!("cannot read back {}: {e}", file.display()))?;
    let mut n = 0;
    for ns in source.namespaces() {
        source.scan(&ns, &mut |_, _| n += 1);
    }
    Ok(n)
}

/// A file-name-safe name for a device.
fn slug(device: &DeviceInfo) -> String {
    let raw = format!("{}-{}-{}", device.adapter, device.backend, device.compiler);
    let mut out: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').to_string()
}

/// Environment variable naming the pinned autotune cache; every blazec process reads it first.
pub const AUTOTUNE_CACHE_ENV: &str = "BLAZE_AUTOTUNE_CACHE";

/// Points CubeCL's autotune (and compilation) cache at `dir` in this process and every child
/// it starts, so every candidate of a tune runs the same autotuned kernels. Call it before the
/// first device operation and before any thread is started.
pub fn pin_autotune_cache(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create the autotune cache {}", dir.display()))?;
    let dir = dir.canonicalize().with_context(|| format!("cannot resolve {}", dir.display()))?;
    // SAFETY: called from `main`'s thread before any other thread exists (see the callers).
    unsafe { std::env::set_var(AUTOTUNE_CACHE_ENV, &dir) };
    root_cubecl_at(dir.clone());
    Ok(dir)
}

/// A process started with a pinned cache in its environment adopts it (creating the
/// directory: CubeCL does not, and silently keeps nothing when it is missing).
pub fn adopt_pinned_autotune_cache() {
    if let Some(dir) = std::env::var_os(AUTOTUNE_CACHE_ENV) {
        let _ = std::fs::create_dir_all(&dir);
        root_cubecl_at(PathBuf::from(dir));
    }
}

/// Roots CubeCL's environment (autotune and compilation caches) at `dir`. CubeCL sets the root
/// from its own configuration when that first loads (at the first device use), which silently
/// undid a `set_root` made earlier: until this was found (with strace), every process
/// kept using the default root (`<workspace>/target/environment` or `~/.cache/cubecl`). So the
/// configuration is loaded first, and the root set after it.
fn root_cubecl_at(dir: PathBuf) {
    use cubecl::config::RuntimeConfig;
    let _ = cubecl::config::CubeClRuntimeConfig::get();
    cubecl::environment::set_root(dir);
}

#[cfg(test)]
mod tests {
    #[test]
    fn device_names_become_safe_file_names() {
        let d = blaze_ir::plan::DeviceInfo {
            adapter: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
            backend: "vulkan".into(),
            compiler: "wgsl".into(),
        };
        assert_eq!(super::slug(&d), "llvmpipe-llvm-15-0-6-256-bits-vulkan-wgsl");
    }
}
