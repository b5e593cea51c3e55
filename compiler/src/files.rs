//! Files every stage writes: RON text, atomic writes, output directories checked before work
//! starts, and the UTC time stamps of results files.
use serde::Serialize;
use std::path::Path;

pub fn to_ron<T: Serialize>(value: &T) -> String {
    ron::ser::to_string_pretty(value, ron::ser::PrettyConfig::new().depth_limit(2)).expect("serialisable")
}

/// Writes `text` to `path` atomically: a temporary file in the same directory, then a rename,
/// so a reader (or an interrupted run) never sees a partial file.
/// Creates the directory `output` goes into and checks that it is writable, so minutes of work
/// do not end in an unwritable directory. Returns the directory.
pub fn prepare_output(output: &Path) -> anyhow::Result<std::path::PathBuf> {
    use anyhow::Context;
    let dir = output.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let probe = dir.join(format!(".blaze-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("cannot write to {} (the output goes there)", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(dir)
}

pub fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().context("output path has no file name")?.to_string_lossy();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    // A temp file of this process, renamed into place: a reader (or a second writer) sees the
    // old file or the new one, never a torn one; on failure nothing is left behind.
    let written =
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display())).and_then(|()| {
            std::fs::rename(&tmp, path).with_context(|| format!("cannot move into place {}", path.display()))
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Current UTC time as `YYYY-MM-DDTHH:MM:SSZ` (no date crate needed).
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::write_atomic;

    #[test]
    fn atomic_write_replaces_whole_files_and_leaves_no_temporaries() {
        let dir = std::env::temp_dir().join(format!("blaze-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plan.ron");
        write_atomic(&path, "old").unwrap();
        write_atomic(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("plan.ron")]);
        // A write that cannot complete leaves the previous file untouched.
        assert!(write_atomic(&dir.join("missing-dir/plan.ron"), "x").is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
