//! Settings fixed per process, raced across processes.
//!
//! The submission batch (`CUBECL_WGPU_MAX_TASKS`) is read once, when the device starts, so two
//! values cannot share a process. One process per measurement cannot see a few per cent: on
//! the H200 process medians scatter by 6-13 % and a process's step time switches for seconds
//! between a floor and slow stretches. So every arm is a server process (`blazec serve`), all of
//! them started, warmed up and settled one after the other (so no one's compilation or autotune
//! disturbs another's timing), and then driven in turns by the same race as in-process
//! candidates: each round visits the reference process and every arm still racing, one process
//! at a time, the start rotating by round. Visits compared in a round are seconds apart, so a
//! slow stretch of the machine hits both sides alike, and the paired statistics, corrections and
//! stops are exactly the in-process race's (`race`).
//!
//! The reference is the plan the in-process race selected, at the submission batch the program
//! runs with today. A control arm is the reference's configuration in a process of its own: if
//! the race separates it from the reference, process-to-process differences are larger than the
//! effects here and nothing is kept. Every server settles for the same number of steps from the
//! same seed, so its losses must equal the reference's: an arm whose losses differ is not kept.
//!
//! Nothing here touches a device: the servers do, in their processes.
use crate::race::{BURN, Candidate, Race, RaceRules, Standing, Verdict, Visitor, race};
use blaze_runtime::settings::MAX_TASKS_ENV;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// CubeCL's default submission batch (kernels per queue submission).
pub(crate) const CUBECL_DEFAULT_MAX_TASKS: u32 = 32;

/// How one server process is started: this binary's `serve` command line (model, plan) and its
/// submission batch.
#[derive(Clone, Debug)]
pub struct ServeCommand {
    pub exe: std::path::PathBuf,
    /// `serve <model> --regime … [--plan …] --settle-steps …`.
    pub args: Vec<String>,
    /// No answer (ready or a visit) for this long: the server is broken.
    pub timeout: Duration,
}

/// One process of the race.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProcessArm {
    /// 0 = the reference process.
    pub id: usize,
    pub max_tasks: u32,
    /// The reference's own configuration in a second process (may not win).
    pub control: bool,
    /// Warm-up and settling until `ready`, s.
    pub start_s: f64,
    /// Its median step time when it became ready, ms.
    pub ready_step_ms: f64,
    /// Losses of every step before `ready` equal the reference's (relative 1e-5).
    pub losses_match: bool,
    pub standing: Option<Standing>,
    pub outcome: String,
}

/// What the race across processes measured and decided.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProcessRace {
    /// The plan every process ran (the in-process selection), as candidate text.
    pub plan: String,
    pub arms: Vec<ProcessArm>,
    pub steps_per_visit: u32,
    pub race: Option<Race>,
    /// Why there is no race (a server failed to start), or the race's stop.
    pub stop: String,
    /// The submission batch kept, if one is.
    pub kept: Option<u32>,
    /// All servers' start-up (untimed), s.
    pub start_s: f64,
    pub race_s: f64,
}

impl ProcessRace {
    /// One line for the selection text of the plan.
    pub fn selection_text(&self) -> String {
        match (self.kept, self.arms.iter().find(|a| Some(a.max_tasks) == self.kept && !a.control && a.id != BURN)) {
            (Some(m), Some(arm)) => format!("max_tasks = {m} kept across processes ({})", arm.outcome),
            _ => format!("submission batch unchanged across processes ({})", self.stop),
        }
    }
}

/// A started server: its input, its output lines (read by a thread, so waits can time out).
struct Server {
    child: Child,
    input: ChildStdin,
    lines: Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = writeln!(self.input, "quit");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The answer of a server: `ready <ms> <losses>` or `visit <ms>`.
fn parse_ready(line: &str) -> Option<(f64, Vec<f32>)> {
    let mut words = line.strip_prefix("ready ")?.split_whitespace();
    let ms = words.next()?.parse().ok()?;
    let losses = words
        .next()
        .unwrap_or("")
        .split(',')
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().ok())
        .collect::<Option<Vec<f32>>>()?;
    Some((ms, losses))
}

impl Server {
    fn start(cmd: &ServeCommand, max_tasks: u32, extra: &[String]) -> Result<Self, String> {
        let mut child = Command::new(&cmd.exe)
            .args(&cmd.args)
            .args(extra)
            .env(MAX_TASKS_ENV, max_tasks.to_string())
            .env(crate::orphan::ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start a server: {e}"))?;
        let input = child.stdin.take().ok_or("no server stdin")?;
        let output = child.stdout.take().ok_or("no server stdout")?;
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self { child, input, lines })
    }

    /// The next line starting with `prefix` (other output is the model's own), within
    /// `timeout`; `tick` runs about every second while waiting (the tune's heartbeat).
    fn answer(&mut self, prefix: &str, timeout: Duration, tick: &dyn Fn()) -> Result<String, String> {
        let start = Instant::now();
        loop {
            match self.lines.recv_timeout(Duration::from_secs(1)) {
                Ok(line) if line.starts_with(prefix) => return Ok(line),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) if start.elapsed() < timeout => tick(),
                Err(RecvTimeoutError::Timeout) => return Err(format!("no answer for {:.0} s", timeout.as_secs_f64())),
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().map_or("unknown".into(), |s| s.to_string());
                    return Err(format!("server ended ({status})"));
                }
            }
        }
    }
}

/// Visits servers in turn (`visit K`): the race's visitor across processes.
struct ServerVisitor<'a> {
    servers: BTreeMap<usize, Server>,
    steps_per_visit: u32,
    timeout: Duration,
    tick: &'a dyn Fn(),
}

impl Visitor for ServerVisitor<'_> {
    fn visit(&mut self, id: usize) -> Result<f64, String> {
        let server = self.servers.get_mut(&id).ok_or_else(|| format!("no server p{id}"))?;
        writeln!(server.input, "visit {}", self.steps_per_visit)
            .and_then(|()| server.input.flush())
            .map_err(|e| format!("server input: {e}"))?;
        let line = server.answer("visit ", self.timeout, self.tick)?;
        (self.tick)();
        line["visit ".len()..].trim().parse().map_err(|_| format!("unreadable answer `{line}`"))
    }
}

/// What to race: the reference's submission batch and the others to try; test-only, one arm's
/// visits slowed by a fraction of its step.
#[derive(Clone, Debug)]
pub struct ProcessPlan {
    pub plan_text: String,
    pub reference: u32,
    pub values: Vec<u32>,
    pub slowdown: Option<(u32, f64)>,
}

/// Starts the reference, the control and one server per other value, then races them.
pub fn race_across_processes(
    cmd: &ServeCommand,
    plan: &ProcessPlan,
    rules: &RaceRules,
    tick: &dyn Fn(),
    progress: &mut dyn FnMut(&str),
) -> ProcessRace {
    let mut arms = vec![(plan.reference, false), (plan.reference, true)];
    arms.extend(plan.values.iter().filter(|&&m| m != plan.reference).map(|&m| (m, false)));
    let start = Instant::now();
    let mut servers = BTreeMap::new();
    let mut out: Vec<ProcessArm> = Vec::new();
    let mut reference_losses: Vec<f32> = Vec::new();
    for (id, &(max_tasks, control)) in arms.iter().enumerate() {
        progress(&format!(
            "process p{id}: max_tasks {max_tasks}{}, warming up",
            if control { " (control)" } else { "" }
        ));
        let extra: Vec<String> = match plan.slowdown {
            Some((m, f)) if m == max_tasks && !control && id != BURN => vec!["--slowdown".into(), f.to_string()],
            _ => vec![],
        };
        let begun = Instant::now();
        let ready = Server::start(cmd, max_tasks, &extra).and_then(|mut s| {
            let line = s.answer("ready ", cmd.timeout, tick)?;
            let (ms, losses) =
                parse_ready(&line).ok_or_else(|| format!("unreadable `{}`", &line[..line.len().min(80)]))?;
            Ok((s, ms, losses))
        });
        let (server, ms, losses) = match ready {
            Ok(r) => r,
            Err(why) if id == BURN => {
                return failed(plan, out, format!("the reference process failed to start: {why}"), start);
            }
            Err(why) => {
                out.push(arm(id, max_tasks, control, begun, f64::NAN, false, format!("broken: {why}")));
                continue;
            }
        };
        if id == BURN {
            reference_losses = losses.clone();
        }
        let matches = losses_match(&reference_losses, &losses);
        out.push(arm(id, max_tasks, control, begun, ms, matches, String::new()));
        servers.insert(id, server);
    }
    let start_s = start.elapsed().as_secs_f64();
    let step_ms = out[0].ready_step_ms;
    let steps_per_visit = crate::measure::steps_per_visit(step_ms);
    let candidates: Vec<Candidate> = out
        .iter()
        .filter(|a| a.id != BURN && servers.contains_key(&a.id))
        .map(|a| Candidate { id: a.id, can_win: !a.control && a.losses_match })
        .collect();
    progress(&format!("{} processes ready in {start_s:.0} s; racing across processes", servers.len()));
    let mut visitor = ServerVisitor { servers, steps_per_visit, timeout: cmd.timeout, tick };
    let race_start = Instant::now();
    let max = rules.max_rounds;
    let raced = race(&candidates, &mut visitor, rules, |r, n| {
        progress(&format!("across processes: round {r}/{max} ({n} racing)"))
    });
    let race_s = race_start.elapsed().as_secs_f64();
    drop(visitor);
    match raced {
        Ok(r) => decide(plan, out, r, steps_per_visit, start_s, race_s),
        Err(why) => failed(plan, out, why, start),
    }
}

fn arm(
    id: usize,
    max_tasks: u32,
    control: bool,
    begun: Instant,
    ms: f64,
    matches: bool,
    outcome: String,
) -> ProcessArm {
    ProcessArm {
        id,
        max_tasks,
        control,
        start_s: begun.elapsed().as_secs_f64(),
        ready_step_ms: ms,
        losses_match: matches,
        standing: None,
        outcome,
    }
}

fn failed(plan: &ProcessPlan, arms: Vec<ProcessArm>, why: String, start: Instant) -> ProcessRace {
    ProcessRace {
        plan: plan.plan_text.clone(),
        arms,
        steps_per_visit: 0,
        race: None,
        stop: why,
        kept: None,
        start_s: start.elapsed().as_secs_f64(),
        race_s: 0.0,
    }
}

/// Same steps from the same seed: the same losses, by verification's own rule and tolerance.
fn losses_match(reference: &[f32], losses: &[f32]) -> bool {
    use crate::verify::{REL_TOL, max_rel_diff};
    reference.len() == losses.len()
        && losses.iter().all(|x| x.is_finite())
        && max_rel_diff(reference, losses) <= REL_TOL
}

/// Each arm's standing and outcome; a winner is kept only when the control did not separate.
fn decide(
    plan: &ProcessPlan,
    mut arms: Vec<ProcessArm>,
    race: Race,
    steps_per_visit: u32,
    start_s: f64,
    race_s: f64,
) -> ProcessRace {
    let control_separated = race.standings.iter().any(|s| {
        arms.iter().any(|a| a.id == s.id && a.control) && matches!(s.verdict, Verdict::Faster | Verdict::Slower)
    });
    let winner = race.winners().first().map(|w| w.id).filter(|_| !control_separated);
    for a in arms.iter_mut() {
        a.standing = race.standings.iter().find(|s| s.id == a.id).cloned();
        if a.id == BURN {
            a.outcome = "reference process".into();
        } else if let Some(s) = &a.standing {
            a.outcome = describe(s, a, winner == Some(a.id), control_separated);
        }
    }
    let stop = race.stop_text_against(REFERENCE, 'p');
    let stop = match control_separated {
        true => format!(
            "{stop}; the control process separated from the reference, so process differences exceed the effects here and nothing is kept"
        ),
        false => stop,
    };
    let kept = winner.and_then(|id| arms.iter().find(|a| a.id == id)).map(|a| a.max_tasks);
    ProcessRace { plan: plan.plan_text.clone(), arms, steps_per_visit, race: Some(race), stop, kept, start_s, race_s }
}

/// What every process is compared with.
const REFERENCE: &str = "the reference process";

fn describe(s: &Standing, a: &ProcessArm, kept: bool, control_separated: bool) -> String {
    let numbers = s.describe_against(REFERENCE);
    if matches!(s.verdict, Verdict::Broken(_)) {
        return numbers;
    }
    let why = if kept {
        "kept".to_string()
    } else if a.control {
        "control (may not win)".into()
    } else if !a.losses_match {
        "not kept: its losses differ from the reference's".into()
    } else if s.wins(0.0) && control_separated {
        "not kept: the control separated".into()
    } else {
        String::new()
    };
    if why.is_empty() { numbers } else { format!("{why}; {numbers}") }
}

/// The submission batch the program runs with now: its own `CUBECL_WGPU_MAX_TASKS`, else
/// CubeCL's default.
pub fn current_max_tasks() -> u32 {
    std::env::var(MAX_TASKS_ENV).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(CUBECL_DEFAULT_MAX_TASKS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_line_gives_the_step_time_and_every_loss() {
        assert_eq!(parse_ready("ready 12.5 1.25,0.5,3"), Some((12.5, vec![1.25, 0.5, 3.0])));
        assert_eq!(parse_ready("ready 3 "), Some((3.0, vec![])));
        assert_eq!(parse_ready("ready x 1"), None);
        assert_eq!(parse_ready("ready 3 1,nope"), None);
        assert_eq!(parse_ready("visit 3"), None);
    }

    #[test]
    fn losses_match_within_the_verification_tolerance_only() {
        assert!(losses_match(&[1.0, 2.0], &[1.0, 2.0 * (1.0 + 5e-6)]));
        assert!(!losses_match(&[1.0, 2.0], &[1.0, 2.0 * (1.0 + 5e-5)]));
        assert!(!losses_match(&[1.0, 2.0], &[1.0]), "a different number of steps never matches");
        assert!(!losses_match(&[1.0, 2.0], &[1.0, f32::NAN]), "a loss that is not finite never matches");
    }

    fn standing(id: usize, verdict: Verdict, ratio: f64) -> Standing {
        Standing {
            id,
            can_win: true,
            pairs: 20,
            ratio,
            lo: ratio - 0.01,
            hi: ratio + 0.01,
            level: 0.01,
            verdict,
            decided_at: Some(20),
        }
    }

    fn race_with(standings: Vec<Standing>) -> Race {
        Race {
            rules: RaceRules::default(),
            looks_planned: vec![20],
            looks_done: vec![20],
            rounds: vec![],
            standings,
            stop: crate::race::Stop::AllDecided,
            seconds: 1.0,
        }
    }

    fn arms() -> Vec<ProcessArm> {
        let a = |id, max_tasks, control| ProcessArm {
            id,
            max_tasks,
            control,
            start_s: 1.0,
            ready_step_ms: 10.0,
            losses_match: true,
            standing: None,
            outcome: String::new(),
        };
        vec![a(0, 32, false), a(1, 32, true), a(2, 16, false)]
    }

    fn plan() -> ProcessPlan {
        ProcessPlan { plan_text: "Burn's plan".into(), reference: 32, values: vec![16], slowdown: None }
    }

    #[test]
    fn a_faster_arm_is_kept_when_the_control_does_not_separate() {
        let r = decide(
            &plan(),
            arms(),
            race_with(vec![standing(1, Verdict::NotSeparated, 1.0), standing(2, Verdict::Faster, 0.95)]),
            4,
            1.0,
            1.0,
        );
        assert_eq!(r.kept, Some(16));
        assert!(r.arms[2].outcome.starts_with("kept; faster than the reference process"), "{}", r.arms[2].outcome);
        assert!(r.selection_text().starts_with("max_tasks = 16 kept across processes"), "{}", r.selection_text());
    }

    #[test]
    fn nothing_is_kept_when_the_control_separates() {
        let r = decide(
            &plan(),
            arms(),
            race_with(vec![standing(1, Verdict::Slower, 1.03), standing(2, Verdict::Faster, 0.95)]),
            4,
            1.0,
            1.0,
        );
        assert_eq!(r.kept, None);
        assert!(r.stop.contains("control process separated"), "{}", r.stop);
        assert!(r.arms[2].outcome.starts_with("not kept: the control separated"), "{}", r.arms[2].outcome);
        assert!(r.selection_text().starts_with("submission batch unchanged"), "{}", r.selection_text());
    }
}
