//! `blazec tune`'s supervising process: measures the fusion-off arm, then runs the pipeline in
//! a worker process (this binary again) and watches its journal (`tune::journal`). A candidate
//! that hangs (no progress for `--hang-timeout` seconds) or kills the worker (panic, signal) is
//! recorded as broken and a new worker runs without it. Ordinary errors (exit 1, 2) are the
//! user's and pass through unchanged.
use super::FusionOffChild;
use super::journal::{self, BROKEN_ENV, FUSION_OFF_ENV, JOURNAL_ENV};
use anyhow::{Context, bail};
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, SystemTime};

/// More broken candidates than this and the device itself is suspect: stop.
const MAX_BROKEN: usize = 4;
/// Exit status of a Rust panic.
const PANIC_EXIT: i32 = 101;

enum Ending {
    Finished(ExitStatus),
    Hung,
}

/// What the supervisor needs from the command: the hang limit, whether ids are greedy (a
/// broken greedy challenger cannot be left out), and the fusion-off cross-check it measured.
pub struct Supervision {
    pub hang_timeout: u64,
    pub greedy: bool,
    pub fusion_off: Option<FusionOffChild>,
}

/// Whether this process is a tune's worker (started by [`supervise`]).
pub fn is_worker() -> bool {
    std::env::var_os(JOURNAL_ENV).is_some()
}

/// Runs the tune's worker (this binary again, same arguments) until it finishes, leaving out
/// every candidate that hangs or crashes it; `note` hears of each candidate left out.
pub fn supervise(args: &Supervision, note: &mut dyn FnMut(&str)) -> anyhow::Result<()> {
    let fusion_off = args.fusion_off.as_ref();
    let journal = std::env::temp_dir().join(format!("blaze-tune-journal-{}", std::process::id()));
    let mut broken: Vec<(usize, String)> = Vec::new();
    let outcome = loop {
        std::fs::write(&journal, "").with_context(|| format!("cannot write {}", journal.display()))?;
        let mut child =
            worker_command(&journal, &broken, fusion_off)?.spawn().context("cannot start the tune worker")?;
        let reason = match watch(&mut child, &journal, Duration::from_secs(args.hang_timeout))? {
            Ending::Finished(status) if status.success() => break Ok(()),
            Ending::Finished(status) if status.code().is_some_and(|c| c != PANIC_EXIT) => {
                break Err(anyhow::anyhow!("the tune worker failed ({status}); its message is above"));
            }
            Ending::Finished(status) => format!("crashed the worker ({status})"),
            Ending::Hung => format!("hung: no progress for {} s", args.hang_timeout),
        };
        match blame(&journal, &broken, args.greedy, &reason) {
            Ok(id) => {
                note(&format!("candidate c{id} {reason}; recorded as broken, starting again without it"));
                broken.push((id, reason));
            }
            Err(e) => break Err(e),
        }
    };
    let _ = std::fs::remove_file(&journal);
    outcome
}

fn worker_command(
    journal: &Path,
    broken: &[(usize, String)],
    fusion_off: Option<&FusionOffChild>,
) -> anyhow::Result<Command> {
    let mut cmd = Command::new(std::env::current_exe().context("cannot find own executable")?);
    cmd.args(std::env::args_os().skip(1));
    cmd.env(JOURNAL_ENV, journal).env(BROKEN_ENV, journal::encode_broken(broken)).env(crate::orphan::ENV, "1");
    if let Some(off) = fusion_off {
        cmd.env(FUSION_OFF_ENV, ron::to_string(off)?);
    }
    Ok(cmd)
}

/// Waits for the worker; `Hung` (after killing it) when the journal stood still for `limit`
/// while a candidate other than Burn's plan was installed.
fn watch(child: &mut Child, journal: &Path, limit: Duration) -> anyhow::Result<Ending> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ending::Finished(status));
        }
        let idle = std::fs::metadata(journal)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok());
        let on_candidate = journal::last_installed(journal).is_some_and(|id| id != 0);
        if on_candidate && idle.is_some_and(|d| d > limit) {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Ending::Hung);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The candidate to leave out, or why the tune cannot go on.
fn blame(journal: &Path, broken: &[(usize, String)], greedy: bool, reason: &str) -> anyhow::Result<usize> {
    let Some(id) = journal::last_installed(journal) else {
        bail!("the tune worker {reason} before any candidate was installed")
    };
    if id == 0 {
        bail!("Burn's own plan {reason}; there is nothing to compare against");
    }
    if greedy {
        bail!(
            "greedy challenger c{id} {reason}; greedy ids name a race, not a plan, so it cannot be left out: rerun without --greedy"
        );
    }
    if broken.iter().any(|(b, _)| *b == id) {
        bail!("candidate c{id} {reason} again after being left out (this is a bug)");
    }
    if broken.len() >= MAX_BROKEN {
        bail!("{} candidates broke ({}); the device or driver is suspect", broken.len() + 1, reason);
    }
    Ok(id)
}
