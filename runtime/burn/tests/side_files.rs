//! A bundle's autotune side file is read as plan files are: whatever the path names (a FIFO, a
//! directory, a device, a huge, empty, foreign, truncated, missing or unreadable file), seeding
//! returns within two seconds with one warning naming the file, what is wrong with it and how
//! many decisions the bundle records; nothing is imported and CubeCL autotunes as usual.
//!
//! Seeding prints its line, so each case runs it in a child process (the package's
//! `side-files-child` binary, `tests/helpers/side_files_child.rs`): its stderr is captured, a hang is killed instead of
//! hanging the suite, and the CubeCL cache it fills is a scratch one. Seeding needs no device
//! (the bundle names a made-up one), except for the `blaze_burn::init` case, which runs on the
//! default wgpu device (lavapipe in CI).
#[path = "helpers/side_files_common.rs"]
mod side_files_common;
use blaze_burn::Seeded;
use blaze_ir::Bundle;
use blaze_ir::file::MAX_FILE_BYTES;
use blaze_ir::plan::DeviceInfo;
use side_files_common::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Seeding must answer within this, whatever the path names.
const PROMPT: Duration = Duration::from_secs(2);
/// A child still running after this is killed (it hangs); generous for a loaded machine.
const CHILD_LIMIT: Duration = Duration::from_secs(60);

/// An empty scratch directory for one case, with the side file's directory made.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("blaze-side-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(SIDE).parent().unwrap()).unwrap();
    dir
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A real decisions file in the SQLite format blazec exports (`cubecl::bundle::export` of a
/// warm cache root), made once per test binary: one child imports `flat_decisions` into a
/// scratch cache, a second exports that cache as blazec does.
fn real_sqlite_decisions() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = scratch("real");
        run_child("warm", &dir);
        run_child("export", &dir);
        std::fs::read(dir.join("real.cubecl")).expect("the export wrote its file")
    })
}

/// The page size and page count of a SQLite file's header.
fn sqlite_pages(bytes: &[u8]) -> (usize, usize) {
    let page = match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65536,
        n => n as usize,
    };
    (page, u32::from_be_bytes([bytes[28], bytes[29], bytes[30], bytes[31]]) as usize)
}

/// Runs `mode` on `dir` in a child process; its stderr. Fails the test when the child is still
/// running after `CHILD_LIMIT` (it is killed) or fails.
fn run_child(mode: &str, dir: &Path) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_side-files-child"))
        .env(MODE, mode)
        .env(DIR, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary starts again");
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > CHILD_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stderr = reader.join().unwrap();
    let status = status
        .unwrap_or_else(|| panic!("{mode} {}: still running after {CHILD_LIMIT:?} (killed)\n{stderr}", dir.display()));
    assert!(status.success(), "{mode} {}: {status}\n{stderr}", dir.display());
    stderr
}

/// What seeding from `dir/model.blaze` did in a child: Blaze's lines, the return value (as
/// Debug), and how long the call took.
struct Seeding {
    lines: Vec<String>,
    returned: String,
    took: Duration,
}

fn seed_in_child(mode: &str, dir: &Path) -> Seeding {
    let stderr = run_child(mode, dir);
    let result = std::fs::read_to_string(dir.join("result.txt")).unwrap();
    let (returned, millis) = result.rsplit_once('\n').unwrap();
    Seeding {
        lines: blaze_lines(&stderr),
        returned: returned.to_string(),
        took: Duration::from_millis(millis.parse().unwrap()),
    }
}

/// The lines Blaze printed (a child may also print the driver's or the harness's).
fn blaze_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("warning: blaze: ") || l.starts_with("note: blaze: "))
        .map(str::to_string)
        .collect()
}

fn warning(dir: &Path, reason: &str, recorded: usize) -> String {
    format!(
        "warning: blaze: the bundle's autotune decisions {}: {reason}; the bundle records {recorded} decisions; CubeCL autotunes as usual",
        dir.join(SIDE).display()
    )
}

/// Seeding from the bundle in `dir` (recording `RECORDED`) prints exactly the warning with
/// `reason`, returns nothing and answers within `PROMPT`.
fn assert_refused(dir: &Path, reason: &str) {
    write_bundle(dir, SIDE, &test_device(), RECORDED);
    let seeding = seed_in_child("seed", dir);
    assert_eq!(seeding.lines, vec![warning(dir, reason, RECORDED)]);
    assert_eq!(seeding.returned, "None");
    assert!(seeding.took < PROMPT, "seeding took {:?}", seeding.took);
}

// The cases. Before the fix, CubeCL opened the side file itself: the FIFO hung start-up and a
// truncated file was a note with 0 decisions imported.

#[test]
fn a_fifo_is_refused_without_opening_it() {
    let dir = scratch("fifo");
    mkfifo(&dir.join(SIDE));
    assert_refused(&dir, "it is not a regular file (a FIFO)");
}

/// The user's report: `blaze_burn::init` never returned. It returns promptly, with the side
/// file's warning (and the bundle's own, for it holds no plan for this run).
#[test]
fn init_with_a_fifo_side_file_returns_promptly_with_the_warning() {
    let dir = scratch("init-fifo");
    mkfifo(&dir.join(SIDE));
    let seeding = seed_in_child("init", &dir);
    let side: Vec<&String> = seeding.lines.iter().filter(|l| l.contains("autotune decisions")).collect();
    assert_eq!(side, vec![&warning(&dir, "it is not a regular file (a FIFO)", RECORDED)], "{:?}", seeding.lines);
    assert!(seeding.took < PROMPT, "init took {:?}", seeding.took);
}

#[test]
fn a_directory_is_refused() {
    let dir = scratch("directory");
    std::fs::create_dir(dir.join(SIDE)).unwrap();
    assert_refused(&dir, "it is a directory");
}

#[test]
fn a_symlink_to_dev_zero_is_refused_as_the_device_it_names() {
    let dir = scratch("dev-zero");
    std::os::unix::fs::symlink("/dev/zero", dir.join(SIDE)).unwrap();
    assert_refused(&dir, "it is not a regular file (a character device)");
}

#[test]
fn a_symlink_loop_is_refused() {
    let dir = scratch("loop");
    let side = dir.join(SIDE);
    std::os::unix::fs::symlink(&side, &side).unwrap();
    assert_refused(&dir, "Too many levels of symbolic links (os error 40)");
}

#[test]
fn a_file_over_the_size_limit_is_refused_from_its_metadata() {
    let dir = scratch("huge");
    // Sparse: the size is in the metadata, no 16 MiB is written (or read).
    std::fs::File::create(dir.join(SIDE)).unwrap().set_len(MAX_FILE_BYTES + 1).unwrap();
    assert_refused(&dir, &format!("it is larger than the 16 MiB limit ({} bytes)", MAX_FILE_BYTES + 1));
}

#[test]
fn an_empty_file_is_damaged() {
    let dir = scratch("empty");
    std::fs::write(dir.join(SIDE), b"").unwrap();
    assert_refused(&dir, "it is empty (damaged or truncated)");
}

#[test]
fn a_file_in_neither_of_cubecls_formats_is_damaged() {
    let dir = scratch("foreign");
    std::fs::write(dir.join(SIDE), b"not a bundle").unwrap();
    assert_refused(
        &dir,
        "it is damaged or truncated (its 12 bytes start with neither a SQLite header nor CubeCL's flat-bundle header)",
    );
}

#[test]
fn a_missing_file_is_reported() {
    let dir = scratch("missing");
    assert_refused(&dir, "No such file or directory (os error 2)");
}

#[test]
fn a_file_without_read_permission_is_reported() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("unreadable");
    let side = dir.join(SIDE);
    std::fs::write(&side, flat_decisions()).unwrap();
    std::fs::set_permissions(&side, std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root (any process with CAP_DAC_OVERRIDE) reads a file whatever its mode: nothing is
    // refused then, so the case cannot be made.
    if std::fs::read(&side).is_ok() {
        eprintln!("skipped: this user reads files without read permission (root)");
        return;
    }
    assert_refused(&dir, "Permission denied (os error 13)");
}

/// The bundle format refuses a side file outside the bundle's directory, so the bundle itself
/// is refused (its warning comes from loading its plans) and seeding never looks at the path:
/// here a FIFO, which would hang if it were opened.
#[test]
fn a_path_leaving_the_bundle_directory_is_refused_with_the_bundle() {
    let dir = scratch("escaping");
    let outside = dir.with_extension("outside-fifo");
    let _ = std::fs::remove_file(&outside);
    mkfifo(&outside);
    let file = format!("../{}", outside.file_name().unwrap().to_str().unwrap());
    let bundle = write_bundle(&dir, &file, &test_device(), RECORDED);
    let err = Bundle::read(&bundle).unwrap_err().to_string();
    assert!(
        err.contains(&format!("autotune file `{file}` must be a relative path inside the bundle's directory")),
        "{err}"
    );
    let seeding = seed_in_child("seed", &dir);
    assert_eq!(seeding.lines, Vec::<String>::new());
    assert_eq!(seeding.returned, "None");
    assert!(seeding.took < PROMPT, "seeding took {:?}", seeding.took);
    let _ = std::fs::remove_file(&outside);
}

#[test]
fn a_truncated_flat_file_is_damaged() {
    let dir = scratch("flat-truncated");
    let bytes = flat_decisions();
    std::fs::write(dir.join(SIDE), &bytes[..bytes.len() - 1]).unwrap();
    assert_refused(&dir, "it is damaged or truncated (corrupted flat bundle: entry span runs past the end)");
}

#[test]
fn a_flat_file_cut_inside_its_header_is_damaged() {
    let dir = scratch("flat-header");
    std::fs::write(dir.join(SIDE), &flat_decisions()[..14]).unwrap();
    assert_refused(&dir, "it is damaged or truncated (not a cubecl flat bundle)");
}

/// A truncated copy of a real export, cut inside a page (as an interrupted download leaves it).
#[test]
fn a_sqlite_file_cut_inside_a_page_is_damaged() {
    let dir = scratch("sqlite-mid-page");
    let real = real_sqlite_decisions();
    let (page, _) = sqlite_pages(real);
    let cut = real.len() - 100;
    std::fs::write(dir.join(SIDE), &real[..cut]).unwrap();
    assert_refused(
        &dir,
        &format!("it is damaged or truncated ({cut} bytes is not a whole number of {page}-byte SQLite pages)"),
    );
}

/// A truncated copy of a real export, cut at a page boundary (as a copy interrupted between
/// blocks leaves it): only the header's page count shows it.
#[test]
fn a_sqlite_file_missing_whole_pages_is_damaged() {
    let dir = scratch("sqlite-pages");
    let real = real_sqlite_decisions();
    let (page, pages) = sqlite_pages(real);
    assert!(pages >= 2 && real.len() >= pages * page, "{pages} pages of {page} bytes in {} bytes", real.len());
    std::fs::write(dir.join(SIDE), &real[..(pages - 1) * page]).unwrap();
    assert_refused(
        &dir,
        &format!(
            "it is damaged or truncated (its SQLite header counts {pages} pages of {page} bytes, the file holds {})",
            pages - 1
        ),
    );
}

/// A file that yields fewer decisions than the bundle records is damaged, even when CubeCL
/// reads it without complaint; what it did import stays imported.
#[test]
fn a_file_holding_fewer_decisions_than_the_bundle_records_is_damaged() {
    let dir = scratch("fewer");
    std::fs::write(dir.join(SIDE), flat_decisions()).unwrap();
    write_bundle(&dir, SIDE, &test_device(), RECORDED + 2);
    let seeding = seed_in_child("seed", &dir);
    let reason = format!(
        "it is damaged or truncated (CubeCL read {RECORDED} decisions from it: {RECORDED} imported, 0 already present)"
    );
    assert_eq!(seeding.lines, vec![warning(&dir, &reason, RECORDED + 2)]);
    assert_eq!(seeding.returned, "None");
}

/// The controls: intact files in both formats are imported, with the note as before.
#[test]
fn intact_files_in_both_formats_are_imported() {
    for (name, bytes) in [("flat", flat_decisions()), ("sqlite", real_sqlite_decisions().to_vec())] {
        let dir = scratch(&format!("intact-{name}"));
        std::fs::write(dir.join(SIDE), bytes).unwrap();
        write_bundle(&dir, SIDE, &test_device(), RECORDED);
        let seeding = seed_in_child("seed", &dir);
        let file = dir.join(SIDE).display().to_string();
        assert_eq!(
            seeding.lines,
            vec![format!(
                "note: blaze: seeded CubeCL's autotune cache from {file}: {RECORDED} decisions imported, 0 already present"
            )],
            "{name}"
        );
        let seeded = Seeded { file, imported: RECORDED, already_present: 0, failed: 0 };
        assert_eq!(seeding.returned, format!("{:?}", Some(seeded)), "{name}");
    }
}

/// Shipped decisions (`plans/autotune/`, as `blazec demo` seeds them): of the bundles in the
/// directory, only the one holding this device's decisions is imported; one for another device
/// (whose side file does not even exist here) and a file that is not a bundle are passed over.
#[test]
fn of_shipped_bundles_only_this_devices_decisions_are_imported() {
    let dir = scratch("shipped");
    let shipped = dir.join("shipped");
    std::fs::create_dir_all(shipped.join("b-this.blaze.autotune")).unwrap();
    let other = DeviceInfo { adapter: "another adapter".into(), ..test_device() };
    write_bundle(&dir, "a-other.blaze.autotune/side.cubecl", &other, RECORDED);
    std::fs::rename(dir.join("model.blaze"), shipped.join("a-other.blaze")).unwrap();
    std::fs::write(shipped.join("b-this.blaze.autotune/side.cubecl"), flat_decisions()).unwrap();
    write_bundle(&dir, "b-this.blaze.autotune/side.cubecl", &test_device(), RECORDED);
    std::fs::rename(dir.join("model.blaze"), shipped.join("b-this.blaze")).unwrap();
    std::fs::write(shipped.join("README.md"), "not a bundle").unwrap();
    let seeding = seed_in_child("seed-shipped", &dir);
    let file = shipped.join("b-this.blaze.autotune/side.cubecl").display().to_string();
    assert_eq!(
        seeding.lines,
        vec![format!(
            "note: blaze: seeded CubeCL's autotune cache from {file}: {RECORDED} decisions imported, 0 already present"
        )]
    );
    let seeded = Seeded { file, imported: RECORDED, already_present: 0, failed: 0 };
    assert_eq!(seeding.returned, format!("{:?}", vec![seeded]));
}
