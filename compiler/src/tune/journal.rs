//! The tune worker's journal: which candidate is installed, so a supervisor can tell which one
//! hung or crashed the process.
//!
//! A hang cannot be interrupted inside the process that hangs (the step blocks in the device or
//! in Burn), so `blazec tune` runs the pipeline in a worker process (this same binary, with
//! `BLAZE_TUNE_JOURNAL` set). The worker appends `install <id>` to the journal whenever it
//! switches candidate, and every model step it runs touches the journal's modification time
//! ([`beat`], through [`Beating`]). If the journal stands still (no install, no step) for longer
//! than the hang limit while a candidate other than Burn's plan is installed, or the worker
//! dies, the supervisor kills it,
//! records that candidate as broken and starts a new worker that leaves it out
//! (`BLAZE_TUNE_BROKEN`). Candidate ids are stable across workers: enumeration is seeded.
use blaze_runtime::{Description, Model, ModelFactory, StepOutput};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Path of the journal; set by the supervisor in the worker's environment.
pub(crate) const JOURNAL_ENV: &str = "BLAZE_TUNE_JOURNAL";
/// Candidates found broken by earlier workers: `id=reason` entries separated by newlines.
pub(crate) const BROKEN_ENV: &str = "BLAZE_TUNE_BROKEN";
/// The fusion-off arm the supervisor measured, as RON.
pub const FUSION_OFF_ENV: &str = "BLAZE_TUNE_FUSION_OFF";

static JOURNAL: Mutex<Option<std::fs::File>> = Mutex::new(None);
/// When [`beat`] last touched the journal; beats closer together than [`BEAT_EVERY`] are skipped.
static LAST_BEAT: Mutex<Option<std::time::Instant>> = Mutex::new(None);
const BEAT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);
static HANG_ON: AtomicUsize = AtomicUsize::new(usize::MAX);
static PANIC_ON: AtomicUsize = AtomicUsize::new(usize::MAX);
static LOSE_DEVICE_ON: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Devices destroyed by [`inject_device_lost`] in this process.
static DEVICES_DESTROYED: AtomicUsize = AtomicUsize::new(0);

/// Opens the journal named in the environment (worker side); false when there is none.
pub fn open_from_env() -> bool {
    let Some(path) = std::env::var_os(JOURNAL_ENV) else { return false };
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
    *JOURNAL.lock().unwrap_or_else(|e| e.into_inner()) = file.ok();
    true
}

/// Records that candidate `id` is now installed. Test-only: blocks forever on the candidate
/// named by [`inject_hang`], panics on the one named by [`inject_panic`], destroys the device
/// on the one named by [`inject_device_lost`].
pub fn installed(id: usize) {
    if let Some(file) = JOURNAL.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        let _ = writeln!(file, "install {id}");
        let _ = file.flush();
    }
    if PANIC_ON.load(Ordering::Relaxed) == id {
        panic!("injected panic on installing candidate {id} (test only)");
    }
    if LOSE_DEVICE_ON.load(Ordering::Relaxed) == id && blaze_burn::device::lose_device() {
        DEVICES_DESTROYED.fetch_add(1, Ordering::Relaxed);
        eprintln!("note: device destroyed on installing candidate {id} (--inject-device-lost, test only)");
    }
    if HANG_ON.load(Ordering::Relaxed) == id {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

/// Records progress: a step finished. Sets the journal's modification time (the supervisor's
/// idle clock) without growing the file; at most every [`BEAT_EVERY`], so a timed step pays one
/// clock read. Without this, a phase that runs many steps under one candidate (a cold
/// compilation of fusion off's unfused kernels on lavapipe) looked like a hang.
pub fn beat() {
    let mut last = LAST_BEAT.lock().unwrap_or_else(|e| e.into_inner());
    let now = std::time::Instant::now();
    if last.is_some_and(|t| now.duration_since(t) < BEAT_EVERY) {
        return;
    }
    *last = Some(now);
    if let Some(file) = JOURNAL.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

/// A model factory whose models call [`beat`] after every step.
pub struct Beating<'a>(pub &'a dyn ModelFactory);

struct BeatingModel(Box<dyn Model>);

impl ModelFactory for Beating<'_> {
    fn name(&self) -> String {
        self.0.name()
    }
    fn summary(&self) -> String {
        self.0.summary()
    }
    fn build(&self, regime: blaze_ir::plan::Regime) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(BeatingModel(self.0.build(regime)?)))
    }
}

impl Model for BeatingModel {
    fn describe(&self) -> Description {
        self.0.describe()
    }
    fn step(&mut self, read_logits: bool) -> StepOutput {
        let out = self.0.step(read_logits);
        beat();
        out
    }
    fn sync(&self) {
        self.0.sync()
    }
    fn parameters(&self) -> Vec<f32> {
        self.0.parameters()
    }
    fn recordable(&mut self) -> Result<&mut dyn blaze_runtime::RecordableStep, String> {
        self.0.recordable()
    }
}

/// Test only: make installing candidate `id` hang.
pub fn inject_hang(id: Option<usize>) {
    HANG_ON.store(id.unwrap_or(usize::MAX), Ordering::Relaxed);
}

/// Test only: make installing candidate `id` destroy the device (it must have been kept by
/// `blaze_burn::device::keep_device_for_fault_injection`).
pub fn inject_device_lost(id: Option<usize>) {
    LOSE_DEVICE_ON.store(id.unwrap_or(usize::MAX), Ordering::Relaxed);
}

/// Test only: a worker that destroyed its device and still finished its tune never lost the
/// device (its steps kept running), so the injected fault did not take effect: an error, so
/// that a test of device loss cannot pass for the wrong reason. Measured on lavapipe
/// (wgpu 30): steps after `wgpu::Device::destroy` run normally.
pub fn check_device_loss_took_effect() -> Result<(), String> {
    match DEVICES_DESTROYED.load(Ordering::Relaxed) {
        0 => Ok(()),
        n => Err(format!(
            "--inject-device-lost: the device was destroyed {n} time(s) but every later step still ran, so this driver never reported it lost; the fault cannot be injected this way here"
        )),
    }
}

/// Test only: make installing candidate `id` panic.
pub fn inject_panic(id: Option<usize>) {
    PANIC_ON.store(id.unwrap_or(usize::MAX), Ordering::Relaxed);
}

/// The candidate installed last, from a journal (supervisor side).
pub(crate) fn last_installed(path: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().rev().find_map(|l| l.strip_prefix("install ")?.trim().parse().ok())
}

/// `BLAZE_TUNE_BROKEN`'s text for these candidates.
pub(crate) fn encode_broken(broken: &[(usize, String)]) -> String {
    broken.iter().map(|(id, why)| format!("{id}={}", why.replace('\n', " "))).collect::<Vec<_>>().join("\n")
}

/// Candidates found broken by earlier workers (worker side).
pub fn broken_from_env() -> Vec<(usize, String)> {
    let text = std::env::var(BROKEN_ENV).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter_map(|(id, why)| Some((id.parse().ok()?, why.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_list_round_trips_through_the_environment_text() {
        let broken =
            vec![(3, "hung: no progress for 20 s".to_string()), (7, "worker exit status 101\nsecond line".to_string())];
        let text = encode_broken(&broken);
        let back: Vec<(usize, String)> =
            text.lines().filter_map(|l| l.split_once('=')).map(|(i, w)| (i.parse().unwrap(), w.to_string())).collect();
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

    /// A step's beat moves the journal's modification time (the supervisor's idle clock) and
    /// leaves its text alone; a second beat within the interval does nothing.
    #[test]
    fn a_beat_refreshes_the_idle_clock_without_growing_the_journal() {
        let path = std::env::temp_dir().join(format!("blaze-journal-beat-{}", std::process::id()));
        std::fs::write(&path, "install 5\n").unwrap();
        let file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        file.set_modified(old).unwrap();
        *JOURNAL.lock().unwrap() = Some(file);
        beat();
        let touched = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert!(touched.duration_since(old).unwrap() > std::time::Duration::from_secs(3000));
        JOURNAL.lock().unwrap().as_ref().unwrap().set_modified(old).unwrap();
        beat();
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), old, "beats are rate-limited");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "install 5\n");
        *JOURNAL.lock().unwrap() = None;
        std::fs::remove_file(&path).unwrap();
    }
}
