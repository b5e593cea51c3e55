//! CubeCL autotune decisions shipped in a bundle (version 2): imported into CubeCL's cache
//! before the first tensor operation, so a fresh machine skips autotune for every key the
//! bundle holds. Imported entries are ordinary cache rows afterwards (CubeCL checks each one's
//! checksum, and never overwrites a decision this machine made itself).
use blaze_ir::Bundle;
use blaze_ir::plan::DeviceInfo;
use std::path::Path;

/// What seeding did, as one line for the program's log (already printed).
#[derive(Clone, Debug, PartialEq)]
pub struct Seeded {
    pub file: String,
    pub imported: usize,
    pub already_present: usize,
    pub failed: usize,
}

/// Imports the decisions the bundle at `bundle_path` holds for `device` and this Burn version.
/// None (and nothing printed) when it holds none; a file that cannot be read is one warning,
/// and the program goes on autotuning as usual.
pub fn seed_autotune(bundle_path: &Path, device: &DeviceInfo) -> Option<Seeded> {
    let bundle = Bundle::read(bundle_path).ok()?;
    let entry = bundle.autotune_for(device, blaze_runtime::BURN_VERSION)?;
    let dir = bundle_path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file = dir.join(&entry.file);
    match cubecl::bundle::open(&file) {
        Ok(source) => {
            let report = cubecl::bundle::import(source.as_ref());
            let seeded = Seeded { file: file.display().to_string(), imported: report.imported, already_present: report.skipped, failed: report.failed };
            eprintln!(
                "note: blaze: seeded CubeCL's autotune cache from {}: {} decisions imported, {} already present{}",
                seeded.file, seeded.imported, seeded.already_present,
                if seeded.failed > 0 { format!(", {} could not be written", seeded.failed) } else { String::new() }
            );
            Some(seeded)
        }
        Err(e) => {
            eprintln!("warning: blaze: cannot read the bundle's autotune decisions {} ({e}); CubeCL autotunes as usual", file.display());
            None
        }
    }
}
