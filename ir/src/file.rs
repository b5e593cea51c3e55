//! Reading Blaze's files (plans, traces, results) in bounded time and memory, whatever path is
//! given: a directory, a device such as `/dev/zero`, a FIFO with no writer, a huge or binary file
//! are refused by their metadata or at the size limit, never read to the end.
use std::io::Read;
use std::path::Path;

/// The largest file Blaze reads (a plan of a 100 000-operation model is about 2 MiB).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// Reads `path` as UTF-8 text of at most [`MAX_FILE_BYTES`]. The error is one sentence without
/// the path (callers name it).
pub fn read_text(path: &Path) -> Result<String, String> {
    // Metadata first: opening a FIFO blocks until a writer comes, and a character device never
    // ends. `metadata` follows symlinks, so a link to a regular file is read as that file.
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.is_dir() {
        return Err("it is a directory".into());
    }
    if !meta.is_file() {
        return Err("it is not a regular file (a device, FIFO or socket)".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!("it is larger than the {} MiB limit ({} bytes)", MAX_FILE_BYTES >> 20, meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    // The file may grow between the check and the read: read at most one byte past the limit.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("it is larger than the {} MiB limit", MAX_FILE_BYTES >> 20));
    }
    String::from_utf8(bytes).map_err(|e| format!("it is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("blaze-ir-file-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn refuses_what_is_not_a_bounded_text_file() {
        let dir = scratch("kinds");
        assert_eq!(read_text(&dir).unwrap_err(), "it is a directory");
        assert!(read_text(Path::new("/dev/zero")).unwrap_err().contains("not a regular file"));
        assert!(read_text(&dir.join("missing")).unwrap_err().contains("No such file"));
        let big = dir.join("big");
        std::fs::File::create(&big).unwrap().set_len(MAX_FILE_BYTES + 1).unwrap();
        assert!(read_text(&big).unwrap_err().contains("larger than the 16 MiB limit"));
        let binary = dir.join("binary");
        std::fs::write(&binary, b"Plan\xff\xfe").unwrap();
        assert_eq!(read_text(&binary).unwrap_err(), "it is not UTF-8 text (invalid byte at offset 4)");
        let ok = dir.join("ok");
        std::fs::write(&ok, "text").unwrap();
        assert_eq!(read_text(&ok).unwrap(), "text");
    }
}
