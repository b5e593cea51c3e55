//! Reading Blaze's files (plans, traces, results, a bundle's side files) in bounded time and
//! memory, whatever path is given: a directory, a device such as `/dev/zero`, a FIFO with no
//! writer, a huge or binary file are refused by their metadata or at the size limit, never read
//! to the end.
use std::io::Read;
use std::path::Path;

/// The largest file Blaze reads (a plan of a 100 000-operation model is about 2 MiB).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// Reads `path` as UTF-8 text of at most [`MAX_FILE_BYTES`]. The error is one sentence without
/// the path (callers name it).
pub fn read_text(path: &Path) -> Result<String, String> {
    let bytes = read_bytes(path, MAX_FILE_BYTES)?;
    String::from_utf8(bytes)
        .map_err(|e| format!("it is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()))
}

/// Reads the bytes of `path`, at most `limit` of them, under the same rules as [`read_text`]
/// (for files other libraries parse, such as a bundle's CubeCL side file, so the library only
/// ever sees bytes). The error is one sentence without the path (callers name it).
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    // Metadata first: opening a FIFO blocks until a writer comes, and a character device never
    // ends. `metadata` follows symlinks, so a link to a regular file is read as that file.
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.is_dir() {
        return Err("it is a directory".into());
    }
    if !meta.is_file() {
        return Err(format!("it is not a regular file ({})", special_kind(&meta)));
    }
    if meta.len() > limit {
        return Err(format!("it is larger than the {} limit ({} bytes)", size_text(limit), meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    // The file may grow between the check and the read: read at most one byte past the limit.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(format!("it is larger than the {} limit", size_text(limit)));
    }
    Ok(bytes)
}

/// What a path that is neither a directory nor a regular file is, for the refusal.
#[cfg(unix)]
fn special_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a device, FIFO or socket"
    }
}

#[cfg(not(unix))]
fn special_kind(_meta: &std::fs::Metadata) -> &'static str {
    "a device, FIFO or socket"
}

/// A limit as people write it: whole MiB when it is one, bytes otherwise.
fn size_text(limit: u64) -> String {
    if limit >= 1 << 20 && limit.is_multiple_of(1 << 20) {
        format!("{} MiB", limit >> 20)
    } else {
        format!("{limit}-byte")
    }
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
        assert_eq!(read_text(Path::new("/dev/zero")).unwrap_err(), "it is not a regular file (a character device)");
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

    /// Bytes follow the same rules, with the caller's limit; a FIFO is refused without opening.
    #[test]
    fn bytes_are_read_under_the_same_rules_and_the_given_limit() {
        let dir = scratch("bytes");
        let binary = dir.join("binary");
        std::fs::write(&binary, b"Plan\xff\xfe").unwrap();
        assert_eq!(read_bytes(&binary, 6).unwrap(), b"Plan\xff\xfe");
        assert_eq!(read_bytes(&binary, 5).unwrap_err(), "it is larger than the 5-byte limit (6 bytes)");
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        if made {
            assert_eq!(read_bytes(&fifo, MAX_FILE_BYTES).unwrap_err(), "it is not a regular file (a FIFO)");
        }
        assert_eq!(read_bytes(&dir, MAX_FILE_BYTES).unwrap_err(), "it is a directory");
    }
}
