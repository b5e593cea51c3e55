//! The tune worker's journal: which candidate is installed, so a supervisor can tell which one
//! hung or crashed the process.
//!
//! A hang cannot be interrupted inside the process that hangs (the step blocks in the device or
//! in Burn), so `blazec tune` runs the pipeline in a worker process (this same binary, with
//! `BLAZE_TUNE_JOURNAL` set). The worker appends `install <id>` to the journal whenever it
//! switches candidate. If the journal stops growing for longer than the hang limit while a
//! candidate other than Burn's plan is installed, or the worker dies, the supervisor kills it,
//! records that candidate as broken and starts a new worker that leaves it out
//! (`BLAZE_TUNE_BROKEN`). Candidate ids are stable across workers: enumeration is seeded.
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Path of the journal; set by the supervisor in the worker's environment.
pub const JOURNAL_ENV: &str = "BLAZE_TUNE_JOURNAL";
/// Candidates found broken by earlier workers: `id=reason` entries separated by newlines.
pub const BROKEN_ENV: &str = "BLAZE_TUNE_BROKEN";
/// The fusion-off arm the supervisor measured, as RON.
pub const FUSION_OFF_ENV: &str = "BLAZE_TUNE_FUSION_OFF";

static JOURNAL: Mutex<Option<std::fs::File>> = Mutex::new(None);
static HANG_ON: AtomicUsize = AtomicUsize::new(usize::MAX);
static PANIC_ON: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Opens the journal named in the environment (worker side); false when there is none.
pub fn open_from_env() -> bool {
    let Some(path) = std::env::var_os(JOURNAL_ENV) else { return false };
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
    *JOURNAL.lock().unwrap_or_else(|e| e.into_inner()) = file.ok();
    true
}

/// Records that candidate `id` is now installed. Test-only: blocks forever on the candidate
/// named by [`inject_hang`], panics on the one named by [`inject_panic`].
pub fn installed(id: usize) {
    if let Some(file) = JOURNAL.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        let _ = writeln!(file, "install {id}");
        let _ = file.flush();
    }
    if PANIC_ON.load(Ordering::Relaxed) == id {
        panic!("injected panic on installing candidate {id} (test only)");
    }
    if HANG_ON.load(Ordering::Relaxed) == id {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

/// Test only: make installing candidate `id` hang.
pub fn inject_hang(id: Option<usize>) {
    HANG_ON.store(id.unwrap_or(usize::MAX), Ordering::Relaxed);
}

/// Test only: make installing candidate `id` panic.
pub fn inject_panic(id: Option<usize>) {
    PANIC_ON.store(id.unwrap_or(usize::MAX), Ordering::Relaxed);
}

/// The candidate installed last, from a journal (supervisor side).
pub fn last_installed(path: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().rev().find_map(|l| l.strip_prefix("install ")?.trim().parse().ok())
}

/// `BLAZE_TUNE_BROKEN`'s text for these candidates.
pub fn encode_broken(broken: &[(usize, String)]) -> String {
    broken.iter().map(|(id, why)| format!("{id}={}", why.replace('\n', " "))).collect::<Vec<_>>().join("\n")
}

/// Candidates found broken by earlier workers (worker side).
pub fn broken_from_env() -> Vec<(usize, String)> {
    let text = std::env::var(BROKEN_ENV).unwrap_or_default();
    text.lines().filter_map(|l| l.split_once('=')).filter_map(|(id, why)| Some((id.parse().ok()?, why.to_string()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_list_round_trips_through_the_environment_text() {
        let broken = vec![(3, "hung: no progress for 20 s".to_string()), (7, "worker exit status 101\nsecond line".to_string())];
        let text = encode_broken(&broken);
        let back: Vec<(usize, String)> = text.lines().filter_map(|l| l.split_once('=')).map(|(i, w)| (i.parse().unwrap(), w.to_string())).collect();
        assert_eq!(back[0], broken[0]);
        assert_eq!(back[1], (7, "worker exit status 101 second line".to_string()));
    }

    #[test]
    fn last_installed_reads_the_final_install_line() {
        let path = std::env::temp_dir().join(format!("blaze-journal-test-{}", std::process::id()));
        std::fs::write(&path, "install 0\ninstall 4\ninstall 2\n").unwrap();
        assert_eq!(last_installed(&path), Some(2));
        std::fs::write(&path, "").unwrap();
        assert_eq!(last_installed(&path), None);
        std::fs::remove_file(&path).unwrap();
    }
}
