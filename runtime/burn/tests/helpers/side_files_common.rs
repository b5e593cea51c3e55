//! What `side_files.rs` and its child process (`side_files_child.rs`, a binary of this package)
//! share: the case layout, the test device, and the bundles and decision files they write.
#![allow(dead_code)]
use blaze_ir::Bundle;
use blaze_ir::bundle::AutotuneFile;
use blaze_ir::plan::DeviceInfo;
use std::path::{Path, PathBuf};

/// What the child process does (`seed`, `init`, `warm`, `export`); unset in the parent.
pub const MODE: &str = "BLAZE_SIDE_FILES_MODE";
/// The case's scratch directory: the bundle, the side file, the CubeCL cache, the result.
pub const DIR: &str = "BLAZE_SIDE_FILES_DIR";
/// Where bundles name their side file, relative to the bundle's directory (as blazec writes it).
pub const SIDE: &str = "model.blaze.autotune/side.cubecl";
/// How many decisions the test bundles record, and the decision files hold.
pub const RECORDED: usize = 3;
pub fn test_device() -> DeviceInfo {
    DeviceInfo { adapter: "side-file test adapter".into(), backend: "vulkan".into(), compiler: "wgsl".into() }
}

/// Writes `dir/model.blaze` naming `file` as the decisions made on `device`, recording `recorded`.
pub fn write_bundle(dir: &Path, file: &str, device: &DeviceInfo, recorded: usize) -> PathBuf {
    let mut bundle = Bundle::new();
    bundle.upsert_autotune(AutotuneFile {
        device: device.clone(),
        burn_version: blaze_runtime::BURN_VERSION.into(),
        file: file.into(),
        decisions: recorded,
    });
    let path = dir.join("model.blaze");
    std::fs::write(&path, bundle.to_ron()).unwrap();
    path
}

/// `RECORDED` decisions in CubeCL's flat bundle layout (cubecl-environment's
/// `bundle/embedded.rs`: magic, format, metadata, sorted namespaces, a 20-byte index entry per
/// decision sorted by (namespace, key), then keys and values).
pub fn flat_decisions() -> Vec<u8> {
    let namespace = "autotune/blaze-side-files";
    let mut index = Vec::new();
    let mut data: Vec<u8> = Vec::new();
    for i in 0..RECORDED {
        let (key, value) = (format!("k{i}"), format!("v{i}"));
        let key_at = data.len();
        data.extend_from_slice(key.as_bytes());
        let value_at = data.len();
        data.extend_from_slice(value.as_bytes());
        // Namespace id, key span, value span (offsets from the start of the data section).
        for word in [0, key_at, key.len(), value_at, value.len()] {
            index.extend_from_slice(&(word as u32).to_le_bytes());
        }
    }
    let mut out = cubecl::bundle::MAGIC.to_vec();
    out.extend_from_slice(&cubecl::bundle::FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // no metadata
    out.extend_from_slice(&1u32.to_le_bytes()); // one namespace
    out.extend_from_slice(&(namespace.len() as u32).to_le_bytes());
    out.extend_from_slice(namespace.as_bytes());
    out.extend_from_slice(&(RECORDED as u32).to_le_bytes());
    out.extend_from_slice(&index);
    out.extend_from_slice(&data);
    out
}

/// Roots CubeCL's environment at `root`, as blazec pins a cache: CubeCL sets its root when its
/// configuration first loads, so the configuration is loaded first.
pub fn use_scratch_cache(root: &Path) {
    use cubecl::config::RuntimeConfig;
    std::fs::create_dir_all(root).unwrap();
    let _ = cubecl::config::CubeClRuntimeConfig::get();
    cubecl::environment::set_root(root.to_path_buf());
}
