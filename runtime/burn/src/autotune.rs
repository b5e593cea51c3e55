//! CubeCL autotune decisions shipped in a bundle (version 2): imported into CubeCL's cache
//! before the first tensor operation, so a fresh machine skips autotune for every key the
//! bundle holds. Imported entries are ordinary cache rows afterwards (CubeCL checks each one's
//! checksum, and never overwrites a decision this machine made itself).
//!
//! The side file is read as plan files are (`blaze_ir::file::read_bytes`: metadata first, at
//! most 16 MiB), and CubeCL only ever sees those bytes: given the path, it would open a FIFO
//! and wait for a writer forever. A file that yields fewer decisions than the bundle records is
//! damaged, and is said so in a warning.
use blaze_ir::Bundle;
use blaze_ir::file::{MAX_FILE_BYTES, read_bytes};
use blaze_ir::plan::DeviceInfo;
use cubecl::bundle::{EmbeddedBundle, EmbeddedBundleError, ImportReport, SqliteBundle};
use std::path::{Path, PathBuf};

/// What seeding did, as one line for the program's log (already printed).
#[derive(Clone, Debug, PartialEq)]
pub struct Seeded {
    pub file: String,
    pub imported: usize,
    pub already_present: usize,
    pub failed: usize,
}

/// Imports the decisions the bundle at `bundle_path` holds for `device` and this Burn version.
/// None (and nothing printed) when it holds none; a side file that cannot be used is one
/// warning, and the program goes on autotuning as usual.
pub fn seed_autotune(bundle_path: &Path, device: &DeviceInfo) -> Option<Seeded> {
    let bundle = Bundle::read(bundle_path).ok()?;
    let entry = bundle.autotune_for(device, blaze_runtime::BURN_VERSION)?;
    let dir = bundle_path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file = dir.join(&entry.file);
    match import_file(&file, entry.decisions) {
        Ok(seeded) => {
            eprintln!(
                "note: blaze: seeded CubeCL's autotune cache from {}: {} decisions imported, {} already present{}",
                seeded.file,
                seeded.imported,
                seeded.already_present,
                if seeded.failed > 0 { format!(", {} could not be written", seeded.failed) } else { String::new() }
            );
            Some(seeded)
        }
        Err(reason) => {
            eprintln!("{}", side_file_warning(&file, &reason, entry.decisions));
            None
        }
    }
}

/// Seeds CubeCL's cache from every bundle (`*.blaze`) directly in `dir` that holds decisions
/// for `device` (those for other devices are skipped silently, a damaged one is a warning), in
/// name order; what each import did. A missing or unreadable `dir` seeds nothing. For shipped
/// decisions (`plans/autotune/`): a fresh machine skips autotuning every kernel they cover.
pub fn seed_shipped(dir: &Path, device: &DeviceInfo) -> Vec<Seeded> {
    let Ok(listing) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut bundles: Vec<PathBuf> = listing
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "blaze") && p.is_file())
        .collect();
    bundles.sort();
    bundles.iter().filter_map(|b| seed_autotune(b, device)).collect()
}

/// The one line said when the side file `file` cannot be used (or only in part).
fn side_file_warning(file: &Path, reason: &str, recorded: usize) -> String {
    format!(
        "warning: blaze: the bundle's autotune decisions {}: {reason}; the bundle records {recorded} decisions; CubeCL autotunes as usual",
        file.display()
    )
}

/// Reads `file` under the plan reader's rules and imports its bytes; an error is the reason.
fn import_file(file: &Path, recorded: usize) -> Result<Seeded, String> {
    let bytes = read_bytes(file, MAX_FILE_BYTES)?;
    let report = guarded(|| import_bytes(bytes))?;
    // CubeCL's readers skip what they cannot read (a scan that fails logs and stops), so a
    // damaged file shows as fewer decisions than the writer counted.
    let read = report.imported + report.skipped + report.failed;
    if read < recorded {
        return Err(format!(
            "it is damaged or truncated (CubeCL read {read} decisions from it: {} imported, {} already present)",
            report.imported, report.skipped
        ));
    }
    Ok(Seeded {
        file: file.display().to_string(),
        imported: report.imported,
        already_present: report.skipped,
        failed: report.failed,
    })
}

/// Runs a CubeCL read, turning a panic in its storage engine into a reason: seeding never
/// takes the program down.
fn guarded(read: impl FnOnce() -> Result<ImportReport, String>) -> Result<ImportReport, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read))
        .unwrap_or_else(|_| Err("it is damaged or truncated (CubeCL's reader panicked on it)".into()))
}

/// Imports a side file's bytes in whichever of CubeCL's two formats they are.
fn import_bytes(bytes: Vec<u8>) -> Result<ImportReport, String> {
    if bytes.is_empty() {
        return Err("it is empty (damaged or truncated)".into());
    }
    if cubecl::bundle::flat_bundle_version(&bytes).is_some() {
        // The flat format has an in-memory reader, which validates every span at open. Its
        // header matched, so anything but another format version is a damaged file.
        let flat = EmbeddedBundle::open(cubecl::bytes::Bytes::from_bytes_vec(bytes)).map_err(|e| {
            if matches!(e, EmbeddedBundleError::UnsupportedFormat(_)) {
                format!("CubeCL cannot read it ({e})")
            } else {
                format!("it is damaged or truncated ({e})")
            }
        })?;
        return Ok(cubecl::bundle::import(&flat));
    }
    check_sqlite(&bytes)?;
    // SQLite (what `blazec` exports) is only opened from a path: CubeCL gets a private copy of
    // the checked bytes, never the user's path.
    let staged = Staged::write(&bytes).map_err(|e| format!("it cannot be staged for CubeCL ({e})"))?;
    let sqlite = SqliteBundle::open(&staged.file).map_err(|e| format!("CubeCL cannot open it ({e})"))?;
    Ok(cubecl::bundle::import(&sqlite))
}

/// The bytes every SQLite file starts with.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// A truncated SQLite file, caught from its header before the engine reads pages that are not
/// there: a database is whole pages, and the header counts them (the engine CubeCL uses trusts
/// that count, and keeps it up to date).
fn check_sqlite(bytes: &[u8]) -> Result<(), String> {
    let damaged = |why: String| -> Result<(), String> { Err(format!("it is damaged or truncated ({why})")) };
    if bytes.len() < 100 || bytes[..16] != SQLITE_MAGIC[..] {
        return damaged(format!(
            "its {} bytes start with neither a SQLite header nor CubeCL's flat-bundle header",
            bytes.len()
        ));
    }
    let page = match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65536,
        n => n as usize,
    };
    if page < 512 || !page.is_power_of_two() {
        return damaged(format!("its SQLite header names page size {page}"));
    }
    if !bytes.len().is_multiple_of(page) {
        return damaged(format!("{} bytes is not a whole number of {page}-byte SQLite pages", bytes.len()));
    }
    let counted = u32::from_be_bytes([bytes[28], bytes[29], bytes[30], bytes[31]]) as usize;
    let held = bytes.len() / page;
    if held < counted {
        return damaged(format!("its SQLite header counts {counted} pages of {page} bytes, the file holds {held}"));
    }
    Ok(())
}

/// A copy of checked bytes in a directory of its own, removed (with whatever the engine wrote
/// beside the file) when dropped.
struct Staged {
    dir: PathBuf,
    file: PathBuf,
}

impl Staged {
    fn write(bytes: &[u8]) -> std::io::Result<Self> {
        use std::io::Write;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("blaze-autotune-{}-{n}-{nanos}", std::process::id()));
        private_dir(&dir)?;
        let staged = Self { file: dir.join("decisions.cubecl"), dir };
        std::fs::OpenOptions::new().write(true).create_new(true).open(&staged.file)?.write_all(bytes)?;
        Ok(staged)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Creates `dir`, which must not exist yet, readable by this user only.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}
