//! Recognises a plan's op stream by itself (no call for the user to forget). The observer
//! records the operations registered from its start and, at every sync, fingerprints each run
//! of whole sync-to-sync windows ending there whose length is one of the expected entries'
//! `ops_per_step`, as the tracer fingerprints a step. (A step's operations can reach the
//! observer split over two windows, so any aligned run counts, not only a single window.)
//!
//! Two modes:
//! * [`Mode::Confirm`] (`load_plan`): the one entry is installed from the start. One match
//!   confirms it. No match once the runs' fingerprints repeat (every alignment of the step's
//!   syncs has been judged), or after [`CANDIDATES`] runs, withdraws it (Burn's own plan from
//!   the next sync) with one warning; no step-sized run within [`MAX_WINDOWS`] windows leaves
//!   it installed, with one warning that it could not be confirmed. After the decision each
//!   registered operation costs one relaxed load.
//! * [`Mode::Select`] (`init`): several entries (training and forward, other shapes), none
//!   installed until a run matches one; that one is installed from the next sync. It then keeps
//!   counting operations per window (one relaxed load and a counter per operation); a window
//!   whose length the settled program never produced (a switch from training to evaluation, a
//!   new batch size) reopens the judgement, so the other entry, or Burn's plan, takes over.
//!
//! A program that registers more than two steps' operations without a sync gets one warning in
//! either mode: plans count operations from the last sync (see `blaze_burn::step_boundary`).
use crate::thread_clock::SampledClock;
use blaze_ir::{PlanError, signature::OpSignature, trace::OpStreamHasher};
use burn_fusion::observer::{BlockOperations, FusionObservation, FusionObserver};
use burn_ir::{OperationIr, TensorId};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Windows (sync to sync) looked at before giving up on a judgement.
pub const MAX_WINDOWS: u32 = 64;
/// Step-sized runs of windows that must all differ before a judgement says "no match".
pub const CANDIDATES: u32 = 8;
/// Judgements a selecting watch reopens at most (a program whose syncs never settle).
pub const MAX_REOPENS: u32 = 32;

/// What became of the op-stream check of an installed plan ([`Mode::Confirm`]).
#[derive(Clone, Debug, PartialEq)]
pub enum OpStreamCheck {
    /// No window of the plan's size has ended yet.
    Pending,
    /// A window of the plan's size had the plan's fingerprint.
    Confirmed,
    /// A window of the plan's size had another fingerprint: the plan was withdrawn.
    Withdrawn(PlanError),
    /// No window of the plan's size within `MAX_WINDOWS`: the plan stays, unconfirmed.
    Unconfirmed,
}

/// An op stream the watch can recognise: one plan's contract.
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    pub fingerprint: String,
    pub ops_per_step: usize,
}

/// What a watch does with its judgement; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Confirm,
    Select,
}

/// Installs entry `i` (`Some(i)`) or Burn's own plan (`None`); called from the observer.
pub type Installer = Box<dyn Fn(Option<usize>) + Send + Sync>;

/// One judgement's result.
#[derive(Clone, Debug, PartialEq)]
enum Judgement {
    Match(usize),
    NoMatch(PlanError),
    GaveUp,
    /// More than two steps' worth of operations without a sync: plans cannot apply.
    NoSync(u64),
}

/// The operations since one window start, fingerprinted as they arrive (the fingerprint a
/// tracer started there would compute once the run has a step's length). Only runs no longer
/// than the longest expected step are kept, so each operation is hashed once per window start
/// within a step of it (once or twice for a program that syncs once per step) and no
/// operation is kept.
struct Run {
    start: u64,
    len: usize,
    hasher: OpStreamHasher,
}

#[derive(Default)]
struct Window {
    /// Sync count when the current window began.
    sync: u64,
    /// Sequence number of the next operation.
    next: u64,
    producer: HashMap<TensorId, u64>,
    /// Sequence numbers where windows began (the current one last), within the last
    /// `2 * longest + 1` operations.
    starts: VecDeque<u64>,
    /// Runs from the window starts of the last `longest` operations.
    runs: Vec<Run>,
    windows: u32,
    candidates: u32,
    /// Fingerprints of the step-sized runs judged so far.
    observed: BTreeSet<String>,
    /// The signature line of the operation being recorded (one buffer for all of them).
    line: String,
}

impl Window {
    /// The window the watch starts in: no run begins at its start, which is where the watch
    /// was installed, not a sync. A plan's step begins after a sync (`step_boundary`), so
    /// nothing it can match is lost; what the program does before its first sync (building the
    /// model, often as many operations as a step) is counted, not fingerprinted.
    fn starting_at(sync: u64) -> Self {
        Window { sync, starts: [0].into(), ..Window::default() }
    }

    fn begin_window(&mut self) {
        self.starts.push_back(self.next);
        self.runs.push(Run { start: self.next, len: 0, hasher: OpStreamHasher::default() });
    }

    /// The fingerprint of the `len` operations ending here, when a window began `len`
    /// operations ago: as a traced step's (reads from before its start dropped, as a recorder
    /// started there would not have seen them).
    fn fingerprint(&self, len: usize) -> Option<String> {
        self.runs.iter().find(|r| r.len == len).map(|r| r.hasher.clone().finish())
    }

    /// Adds one operation to every run, then drops runs longer than `longest` and window
    /// starts older than the last `2 * longest + 1` operations.
    fn push(&mut self, op: &OperationIr, longest: usize) {
        let seq = self.next;
        self.next += 1;
        // Without a run, nothing is fingerprinted: a later run starts after this operation and
        // drops reads of what it produced anyway.
        if !self.runs.is_empty() {
            let reads = crate::recorder::reads_of(op, seq, &mut self.producer);
            OpSignature::write_line_of(op, &mut self.line);
            for run in &mut self.runs {
                let start = run.start;
                run.hasher.push(&self.line, reads.iter().filter(|&&r| r >= start).map(|&r| (r - start) as u32));
                run.len += 1;
            }
            self.runs.retain(|r| r.len <= longest);
        }
        let first = self.next.saturating_sub(2 * longest as u64 + 1);
        while self.starts.front().is_some_and(|&s| s < first) {
            self.starts.pop_front();
        }
    }

    /// Lengths of the whole windows still held, the one that just ended included (the
    /// program's steady sync pattern once a judgement is made).
    fn lengths(&self) -> BTreeSet<u64> {
        let ends = self.starts.iter().skip(1).copied().chain([self.next]);
        self.starts.iter().zip(ends).map(|(a, b)| b - a).filter(|&n| n > 0).collect()
    }
}

/// After a selecting watch's judgement: the window lengths of the settled program.
struct Settled {
    lengths: BTreeSet<u64>,
    sync: u64,
    count: u64,
}

enum Phase {
    Judging(Window),
    Settled(Settled),
}

struct State {
    phase: Phase,
    /// The entry installed now (None: Burn's own plan).
    installed: Option<usize>,
    reopens: u32,
    /// Window lengths of the program as last settled.
    lengths: BTreeSet<u64>,
    /// CPU time spent judging (recording operations, fingerprinting runs, deciding): the
    /// check's cost to the program, without time descheduled, every judgement clocked and the
    /// other operations estimated from a random sample (`thread_clock::SampledClock`). A
    /// settled watch's per-operation count (a lock, an atomic load and a counter) is not
    /// clocked: reading the clock would cost more than the work.
    busy: SampledClock,
    /// Operations recorded while judging (what `busy` was spent on).
    judged: u64,
    /// What the watch decided, one line per decision, in order.
    events: Vec<String>,
    /// Warnings already printed (a program alternating between two unmatched streams warns once).
    warned: BTreeSet<String>,
}

/// Captured steps alive in this process (see [`Capturing`]).
static CAPTURING: AtomicUsize = AtomicUsize::new(0);

/// Held while a step is recorded or replayed (captured execution): the operations registered
/// then (a recording's, input refreshes between replays) are not the plan's eager step, so
/// every watch ignores them instead of judging them a drift. A watch that resumes after the
/// guard is dropped (captured execution fell back to eager) re-judges the stream.
#[must_use]
pub struct Capturing(());

impl Capturing {
    pub fn begin() -> Self {
        CAPTURING.fetch_add(1, Ordering::AcqRel);
        Capturing(())
    }
}

impl Drop for Capturing {
    fn drop(&mut self) {
        CAPTURING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The observer; see the module docs.
pub struct OpStreamWatch {
    expected: Vec<Expected>,
    longest: usize,
    mode: Mode,
    install: Installer,
    done: AtomicBool,
    state: Mutex<State>,
    outcome: OnceLock<OpStreamCheck>,
}

/// Keeps the watch installed (held by the plan handle).
pub struct WatchGuard {
    pub(crate) watch: Arc<OpStreamWatch>,
    _observation: FusionObservation,
}

impl std::fmt::Debug for WatchGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WatchGuard({:?}, installed {:?})", self.watch.check(), self.watch.installed())
    }
}

impl OpStreamWatch {
    /// Starts confirming an installed plan whose step has `ops_per_step` operations with
    /// fingerprint `expected`.
    pub fn start(expected: &str, ops_per_step: u64) -> WatchGuard {
        let entry = Expected { fingerprint: expected.to_string(), ops_per_step: ops_per_step as usize };
        Self::start_with(vec![entry], Mode::Confirm, Box::new(|_| {}))
    }

    /// Starts a watch over `expected` entries; `install` is called on every change of the
    /// installed entry. In [`Mode::Confirm`] entry 0 is taken to be installed already.
    pub fn start_with(expected: Vec<Expected>, mode: Mode, install: Installer) -> WatchGuard {
        let longest = expected.iter().map(|e| e.ops_per_step).max().unwrap_or(0);
        let state = State {
            phase: Phase::Judging(Window::starting_at(burn_fusion::cut::syncs())),
            installed: (mode == Mode::Confirm).then_some(0),
            reopens: 0,
            lengths: BTreeSet::new(),
            busy: SampledClock::new(),
            judged: 0,
            events: Vec::new(),
            warned: BTreeSet::new(),
        };
        let watch = Arc::new(OpStreamWatch {
            expected,
            longest,
            mode,
            install,
            done: AtomicBool::new(false),
            state: Mutex::new(state),
            outcome: OnceLock::new(),
        });
        let observation = FusionObservation::new(watch.clone());
        WatchGuard { watch, _observation: observation }
    }

    /// The confirmation of an installed plan ([`Mode::Confirm`]); a selecting watch reports
    /// `Confirmed` once it has installed an entry.
    pub fn check(&self) -> OpStreamCheck {
        self.outcome.get().cloned().unwrap_or(OpStreamCheck::Pending)
    }

    /// The entry installed now (None: Burn's own plan).
    pub fn installed(&self) -> Option<usize> {
        self.lock().installed
    }

    /// Every decision so far, one line each.
    pub fn events(&self) -> Vec<String> {
        self.lock().events.clone()
    }

    /// CPU time this observer has spent judging so far (the confirmation's cost to the program).
    pub fn busy(&self) -> Duration {
        self.lock().busy.total()
    }

    /// Operations recorded while judging so far (the check's cost is spent on these).
    pub fn judged(&self) -> u64 {
        self.lock().judged
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A window ended at `w.next`: judge the step-sized runs of whole windows ending
    /// here, if there are any.
    fn window_ended(&self, w: &mut Window) -> Option<Judgement> {
        w.windows += 1;
        let lengths: BTreeSet<usize> = self.expected.iter().map(|e| e.ops_per_step).collect();
        for len in lengths {
            let Some(observed) = w.fingerprint(len) else { continue };
            w.candidates += 1;
            if let Some(i) = self.expected.iter().position(|e| e.ops_per_step == len && e.fingerprint == observed) {
                return Some(Judgement::Match(i));
            }
            // A fingerprint seen before means the alignments have come round once (the syncs
            // repeat every step), so the step's own run was among those judged.
            let repeated = !w.observed.insert(observed);
            if repeated || w.candidates >= CANDIDATES {
                let planned = self.expected.iter().map(|e| e.fingerprint.clone()).collect::<Vec<_>>().join("` or `");
                let actual = w.observed.iter().cloned().collect::<Vec<_>>().join("` or `");
                return Some(Judgement::NoMatch(PlanError::Mismatch { field: "op stream", planned, actual }));
            }
        }
        (w.windows >= MAX_WINDOWS).then_some(Judgement::GaveUp)
    }

    /// Acts on a judgement: installs, withdraws, warns, and settles or stops watching.
    fn decide(&self, s: &mut State, judgement: Judgement, mut lengths: BTreeSet<u64>) {
        // The same entry again (a window length the settled program had not shown yet, such as
        // the first steps' split windows giving way to whole ones): its lengths add up.
        if matches!(judgement, Judgement::Match(i) if s.installed == Some(i)) {
            lengths.extend(std::mem::take(&mut s.lengths));
        }
        s.lengths = lengths.clone();
        let outcome = match (&judgement, self.mode) {
            (Judgement::Match(_), _) => OpStreamCheck::Confirmed,
            (Judgement::NoMatch(err), _) => OpStreamCheck::Withdrawn(err.clone()),
            (Judgement::GaveUp | Judgement::NoSync(_), _) => OpStreamCheck::Unconfirmed,
        };
        match judgement {
            Judgement::Match(i) if s.installed != Some(i) => {
                (self.install)(Some(i));
                s.installed = Some(i);
                s.events.push(format!("entry {i} matches the op stream: installed"));
            }
            Judgement::Match(i) => s.events.push(format!("entry {i} matches the op stream")),
            Judgement::NoMatch(err) => {
                if s.installed.take().is_some() {
                    burn_fusion::cut::install(None, 0);
                    (self.install)(None);
                }
                s.events.push(format!("no entry matches: {err}"));
                self.warn_once(s, crate::load::fallback_warning(&err));
            }
            Judgement::GaveUp => {
                s.events.push("no step-sized window to judge".into());
                let what = match self.mode {
                    Mode::Confirm => "the plan stays installed but its op stream is not confirmed",
                    Mode::Select => "no entry is installed",
                };
                let ops = self.expected.iter().map(|e| e.ops_per_step.to_string()).collect::<Vec<_>>().join(" or ");
                self.warn_once(s, format!("warning: blaze: no window between two syncs held the plan's {ops} operations in the first {MAX_WINDOWS}; {what} (does the program sync once per step?)"));
            }
            Judgement::NoSync(n) => {
                s.events.push(format!("{n} operations without a sync"));
                let what = match self.mode {
                    Mode::Confirm => "the plan applies to the first step after a sync at most",
                    Mode::Select => "no entry is installed",
                };
                let ops = self.expected.iter().map(|e| e.ops_per_step.to_string()).collect::<Vec<_>>().join(" or ");
                self.warn_once(s, format!("warning: blaze: over {n} operations ran without a device sync (a step of the plan has {ops}); plans count operations from the last sync, so sync at the start of every step (blaze_burn::step_boundary(&device)); {what}"));
            }
        }
        let _ = self.outcome.set(outcome);
        match self.mode {
            Mode::Confirm => self.done.store(true, Ordering::Release),
            // The operation being registered began the window after the judged ones: count it.
            Mode::Select => s.phase = Phase::Settled(Settled { lengths, sync: burn_fusion::cut::syncs(), count: 1 }),
        }
    }

    fn warn_once(&self, s: &mut State, line: String) {
        if s.warned.insert(line.clone()) {
            eprintln!("{line}");
        }
    }

    /// One operation while judging; the judgement, if this operation began a new window and
    /// the windows so far decide it.
    fn record(&self, w: &mut Window, op: &OperationIr) -> Option<Judgement> {
        let sync = burn_fusion::cut::syncs();
        if sync != w.sync {
            if let Some(judgement) = self.window_ended(w) {
                return Some(judgement);
            }
            w.sync = sync;
            w.begin_window();
        }
        w.push(op, self.longest);
        // The current window's start was trimmed away: it holds more than two steps. Not in the
        // first window, which also holds whatever the program did before (building the model).
        (w.starts.is_empty() && w.windows > 0).then(|| Judgement::NoSync(2 * self.longest as u64 + 1))
    }

    /// One operation once settled: true when it ended a window of a length the settled
    /// program never produced.
    fn settled_op(settled: &mut Settled) -> bool {
        let sync = burn_fusion::cut::syncs();
        let mut changed = false;
        if sync != settled.sync {
            changed = !settled.lengths.is_empty() && !settled.lengths.contains(&settled.count);
            settled.sync = sync;
            settled.count = 0;
        }
        settled.count += 1;
        changed
    }
}

impl FusionObserver for OpStreamWatch {
    fn registered(&self, op: &OperationIr) {
        if self.done.load(Ordering::Relaxed) || CAPTURING.load(Ordering::Relaxed) > 0 {
            return;
        }
        let mut guard = self.lock();
        let s = &mut *guard;
        match &mut s.phase {
            Phase::Judging(w) => {
                // An operation that ends a window may judge (fingerprints, a decision): always
                // clocked. Others are one signature line and a hash or two: sampled.
                let span = s.busy.start(w.sync != burn_fusion::cut::syncs());
                s.judged += 1;
                if let Some(judgement) = self.record(w, op) {
                    let lengths = w.lengths();
                    self.decide(s, judgement, lengths);
                }
                s.busy.stop(span);
            }
            Phase::Settled(settled) => {
                if Self::settled_op(settled) {
                    s.reopens += 1;
                    if s.reopens > MAX_REOPENS {
                        s.events.push(format!(
                            "the program's syncs did not settle after {MAX_REOPENS} judgements: stopped watching"
                        ));
                        self.done.store(true, Ordering::Release);
                    } else {
                        s.events.push("the program's sync pattern changed: judging again".into());
                        let mut w = Window::starting_at(burn_fusion::cut::syncs());
                        let _ = self.record(&mut w, op);
                        s.phase = Phase::Judging(w);
                    }
                }
            }
        }
    }

    fn block_starts(&self, _block: BlockOperations<'_>) {}

    fn block_ran(&self) {}
}
