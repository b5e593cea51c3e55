//! A `run` of one workload in a child process of this same binary.
//!
//! Fusion off (`BURN_FUSION_MAX_EXPLORATIONS=0`) is read once per process by Burn, so the
//! fusion-off arm of `tune` and every row of `bench` run in their own process. A child that
//! fails, panics or outlives its time limit becomes an error value, never the parent's panic.
use crate::runner::RunReport;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the child runs: `<exe> run <model> --regime <regime> [--batch] [--seq] ...`.
pub struct ChildRun<'a> {
    pub model: &'a str,
    pub regime: &'a str,
    pub batch: Option<usize>,
    pub seq: Option<usize>,
    pub warmup: u32,
    pub steps: u32,
    pub fusion_off: bool,
    /// Killed after this long (compilation and autotune included).
    pub timeout: Duration,
}

impl ChildRun<'_> {
    /// Runs the child and reads back its report.
    pub fn run(&self) -> Result<RunReport, String> {
        let report = report_path();
        let mut cmd = self.command(&report)?;
        let result = wait_with_timeout(&mut cmd, self.timeout).and_then(|()| {
            let text = std::fs::read_to_string(&report).map_err(|e| format!("no report: {e}"))?;
            ron::from_str::<RunReport>(&text).map_err(|e| format!("unreadable report: {e}"))
        });
        let _ = std::fs::remove_file(&report);
        result
    }

    fn command(&self, report: &PathBuf) -> Result<Command, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
        let mut cmd = Command::new(exe);
        cmd.env(crate::orphan::ENV, "1");
        cmd.args(["run", self.model, "--regime", self.regime]);
        cmd.args(["--warmup", &self.warmup.to_string(), "--steps", &self.steps.to_string()]);
        cmd.arg("--report").arg(report);
        if let Some(b) = self.batch {
            cmd.args(["--batch", &b.to_string()]);
        }
        if let Some(s) = self.seq {
            cmd.args(["--seq", &s.to_string()]);
        }
        if self.fusion_off {
            cmd.env("BURN_FUSION_MAX_EXPLORATIONS", "0");
        }
        Ok(cmd)
    }
}

fn report_path() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("blaze-child-{}-{n}.ron", std::process::id()))
}

/// Waits for the child, killing it at `timeout`; a failure is named by its stderr's panic and
/// innermost cause (`failure::summarize`).
fn wait_with_timeout(cmd: &mut Command, timeout: Duration) -> Result<(), String> {
    let stderr = tempfile_for_stderr()?;
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(stderr.try_clone().map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("cannot start child: {e}"))?;
    let start = Instant::now();
    loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) if status.success() => return Ok(()),
            Some(status) => return Err(format!("child {status}: {}", summary(stderr))),
            None if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {:.0} s", timeout.as_secs_f64()));
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn tempfile_for_stderr() -> Result<std::fs::File, String> {
    let path = report_path().with_extension("stderr");
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path);
    // Unlinked at once: the open handle is all the parent needs.
    let _ = std::fs::remove_file(&path);
    file.map_err(|e| format!("cannot capture child stderr: {e}"))
}

fn summary(mut file: std::fs::File) -> String {
    use std::io::{Read, Seek};
    let mut text = String::new();
    let _ = file.seek(std::io::SeekFrom::Start(0)).and_then(|_| file.read_to_string(&mut text));
    crate::failure::summarize(&text)
}
