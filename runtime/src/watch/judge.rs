//! The watch's judge: what the op-stream watch decides, from the operations registered and the
//! device's sync count alone. It never touches Burn's fuser or the device: the observer
//! (`super`) feeds it and carries out the [`Effect`]s it returns, so every decision is unit-tested
//! here with made-up operations and syncs.
use super::{CANDIDATES, Expected, MAX_REOPENS, MAX_WINDOWS, Mode, OpStreamCheck};
use blaze_ir::{PlanError, signature::OpSignature, trace::OpStreamHasher};
use burn_ir::OperationIr;
use std::collections::{BTreeSet, VecDeque};

/// What the observer must do after an operation was judged.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Install entry `i` (`Some(i)`) or Burn's own plan (`None`, a withdrawal).
    Install(Option<usize>),
    /// Print this warning (each distinct line once).
    Warn(String),
    /// Stop watching: every later operation costs one relaxed load.
    Stop,
}

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
    producer: crate::recorder::Producers<u64>,
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
    /// The earlier operations it reads (one buffer for all of them).
    reads: Vec<u64>,
    /// Whether runs are fingerprinted: from the first window start where whole windows
    /// ending there have had an expected step's length (see [`Window::begin_window`]).
    armed: bool,
}

impl Window {
    /// The window the watch starts in: no run begins at its start, which is where the watch
    /// was installed, not a sync. A plan's step begins after a sync (`step_boundary`), so
    /// nothing it can match is lost; what the program does before its first sync (building the
    /// model, often as many operations as a step) is counted, not fingerprinted.
    fn starting_at(sync: u64) -> Self {
        Window { sync, starts: [0].into(), ..Window::default() }
    }

    /// A window begins at the next operation. Runs are fingerprinted only once the program
    /// has shown a step's length: some run of whole windows ending here (the first, from the
    /// watch's start, included) holds one of `lengths` operations. So a program's first step
    /// is counted, not fingerprinted: it runs while kernels compile and autotune, when the
    /// same work costs the program more (attention-d257 b2s32 training on lavapipe, 1,089
    /// operations fingerprinted either way: 2.0-2.1 ms of check with the first step's,
    /// 1.3-1.4 ms with the second's), and a first step of another length (a training step
    /// creating its optimizer state) was fingerprinted in vain. A program is judged one step
    /// later for it.
    fn begin_window(&mut self, lengths: &BTreeSet<usize>) {
        let next = self.next;
        self.armed = self.armed || self.starts.iter().any(|&s| lengths.contains(&((next - s) as usize)));
        self.starts.push_back(next);
        if self.armed {
            self.runs.push(Run { start: next, len: 0, hasher: OpStreamHasher::default() });
        }
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
            let nodes = op.nodes();
            crate::recorder::reads_of_nodes(&nodes, seq, &mut self.producer, &mut self.reads);
            OpSignature::write_line_of_nodes(op, &nodes, &mut self.line);
            for run in &mut self.runs {
                let start = run.start;
                run.hasher.push(&self.line, self.reads.iter().filter(|&&r| r >= start).map(|&r| (r - start) as u32));
                run.len += 1;
            }
            self.runs.retain(|r| r.len <= longest);
        }
        self.trim(longest);
    }

    /// Drops window starts older than the last `2 * longest + 1` operations.
    fn trim(&mut self, longest: usize) {
        let first = self.next.saturating_sub(2 * longest as u64 + 1);
        while self.starts.front().is_some_and(|&s| s < first) {
            self.starts.pop_front();
        }
    }

    /// How many more operations in this window would only be counted: none is fingerprinted
    /// (no run is open) and none would end in a judgement (more than two steps' operations
    /// since the window began, `record`'s `NoSync`; the first window has no such bound).
    fn countable(&self, longest: usize) -> u64 {
        if !self.runs.is_empty() {
            return 0;
        }
        match (self.starts.back(), self.windows) {
            (_, 0) => u64::MAX,
            (Some(&start), _) => (start + 2 * longest as u64 + 1).saturating_sub(self.next),
            // Decided already (`NoSync`): every operation repeats the decision.
            (None, _) => 0,
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

/// The judge's state; see the module docs of `watch`.
pub struct Judge {
    expected: Vec<Expected>,
    longest: usize,
    mode: Mode,
    phase: Phase,
    /// The entry installed now (None: Burn's own plan).
    installed: Option<usize>,
    reopens: u32,
    /// Window lengths of the program as last settled.
    lengths: BTreeSet<u64>,
    /// Operations recorded while judging (what the check's cost is spent on).
    judged: u64,
    /// What the watch decided, one line per decision, in order.
    events: Vec<String>,
    /// Warnings already given (a program alternating between two unmatched streams warns once).
    warned: BTreeSet<String>,
    /// The first decision (what `check` reports).
    outcome: Option<OpStreamCheck>,
}

impl Judge {
    /// A judge over `expected` entries, starting when the device's sync count is `sync`. In
    /// [`Mode::Confirm`] entry 0 is taken to be installed already.
    pub fn new(expected: Vec<Expected>, mode: Mode, sync: u64) -> Self {
        let longest = expected.iter().map(|e| e.ops_per_step).max().unwrap_or(0);
        Judge {
            expected,
            longest,
            mode,
            phase: Phase::Judging(Window::starting_at(sync)),
            installed: (mode == Mode::Confirm).then_some(0),
            reopens: 0,
            lengths: BTreeSet::new(),
            judged: 0,
            events: Vec::new(),
            warned: BTreeSet::new(),
            outcome: None,
        }
    }

    /// The entry installed now (None: Burn's own plan).
    pub fn installed(&self) -> Option<usize> {
        self.installed
    }

    /// Every decision so far, one line each.
    pub fn events(&self) -> &[String] {
        &self.events
    }

    /// Operations recorded while judging so far.
    pub fn judged(&self) -> u64 {
        self.judged
    }

    /// The first decision, if one was made.
    pub fn outcome(&self) -> Option<&OpStreamCheck> {
        self.outcome.as_ref()
    }

    /// Whether a judgement is open: no decision yet, or the program's windows changed since the
    /// last one (a switch from training to evaluation) and the stream is judged again.
    pub fn is_judging(&self) -> bool {
        matches!(self.phase, Phase::Judging(_))
    }

    /// While judging: whether an operation registered at sync count `sync` would end a window
    /// (and so may judge). None once settled (nothing to clock then).
    pub fn would_end_window(&self, sync: u64) -> Option<bool> {
        match &self.phase {
            Phase::Judging(w) => Some(w.sync != sync),
            Phase::Settled(_) => None,
        }
    }

    /// While judging: how many operations registered at sync count `sync` from now on would
    /// only be counted (nothing fingerprinted, nothing decided; see `Window::countable`). The
    /// observer may count that many itself and hand the count over with [`Judge::counted`]
    /// before it passes on the next operation: the decisions are the same.
    pub fn countable(&self, sync: u64) -> u64 {
        match &self.phase {
            Phase::Judging(w) if w.sync == sync => w.countable(self.longest),
            _ => 0,
        }
    }

    /// `n` operations registered in the current window that were only counted (at most
    /// [`Judge::countable`]).
    pub fn counted(&mut self, n: u64) {
        if let Phase::Judging(w) = &mut self.phase {
            debug_assert!(n <= w.countable(self.longest), "{n} counted");
            self.judged += n;
            w.next += n;
            w.trim(self.longest);
        }
    }

    /// One operation registered when the device's sync count was `sync`; what the observer must
    /// do about it (usually nothing).
    pub fn op(&mut self, op: &OperationIr, sync: u64) -> Vec<Effect> {
        let mut effects = Vec::new();
        match &mut self.phase {
            Phase::Judging(w) => {
                self.judged += 1;
                if let Some(judgement) = record(&self.expected, self.longest, w, op, sync) {
                    let lengths = w.lengths();
                    // The operation being registered began the window after the judged ones.
                    self.decide(judgement, lengths, sync, 1, &mut effects);
                }
            }
            Phase::Settled(settled) => {
                if settled_op(settled, sync) {
                    self.reopens += 1;
                    if self.reopens > MAX_REOPENS {
                        self.events.push(format!(
                            "the program's syncs did not settle after {MAX_REOPENS} judgements: stopped watching"
                        ));
                        effects.push(Effect::Stop);
                    } else {
                        self.events.push("the program's sync pattern changed: judging again".into());
                        let mut w = Window::starting_at(sync);
                        let _ = record(&self.expected, self.longest, &mut w, op, sync);
                        self.phase = Phase::Judging(w);
                    }
                }
            }
        }
        effects
    }

    /// The device synced at `sync` with no operation registered to show it: the first operation
    /// of a recorded or replayed step, which the watch does not judge (see `Capturing`). The
    /// window before it ended there, as an operation registered then would have ended it: judge
    /// it. A captured plan's eager warm-up steps are all the watch sees of its op stream, and the
    /// window that decides ends where the recording begins.
    pub fn boundary(&mut self, sync: u64) -> Vec<Effect> {
        let mut effects = Vec::new();
        if let Phase::Judging(w) = &mut self.phase
            && let Some(judgement) = sync_changed(&self.expected, w, sync)
        {
            let lengths = w.lengths();
            // No operation of the next window is counted: the recording's are not.
            self.decide(judgement, lengths, sync, 0, &mut effects);
        }
        effects
    }

    /// Acts on a judgement: installs, withdraws, warns, and settles or stops watching. `counted`:
    /// the operations of the window after the judged ones registered so far (a settled watch
    /// counts on from there).
    fn decide(
        &mut self,
        judgement: Judgement,
        mut lengths: BTreeSet<u64>,
        sync: u64,
        counted: u64,
        effects: &mut Vec<Effect>,
    ) {
        // The same entry again (a window length the settled program had not shown yet, such as
        // the first steps' split windows giving way to whole ones): its lengths add up.
        if matches!(judgement, Judgement::Match(i) if self.installed == Some(i)) {
            lengths.extend(std::mem::take(&mut self.lengths));
        }
        self.lengths = lengths.clone();
        let outcome = match &judgement {
            Judgement::Match(_) => OpStreamCheck::Confirmed,
            Judgement::NoMatch(err) => OpStreamCheck::Withdrawn(err.clone()),
            Judgement::GaveUp | Judgement::NoSync(_) => OpStreamCheck::Unconfirmed,
        };
        let ops = self.expected.iter().map(|e| e.ops_per_step.to_string()).collect::<Vec<_>>().join(" or ");
        match judgement {
            Judgement::Match(i) if self.installed != Some(i) => {
                effects.push(Effect::Install(Some(i)));
                self.installed = Some(i);
                self.events.push(format!("entry {i} matches the op stream: installed"));
            }
            Judgement::Match(i) => self.events.push(format!("entry {i} matches the op stream")),
            Judgement::NoMatch(err) => {
                if self.installed.take().is_some() {
                    effects.push(Effect::Install(None));
                }
                self.events.push(format!("no entry matches: {err}"));
                self.warn_once(crate::load::fallback_warning(&err), effects);
            }
            Judgement::GaveUp => {
                self.events.push("no step-sized window to judge".into());
                self.withdraw_if_selecting(effects);
                let what = match self.mode {
                    Mode::Confirm => "the plan stays installed but its op stream is not confirmed",
                    Mode::Select => "no entry is installed",
                };
                self.warn_once(format!("warning: blaze: no window between two syncs held the plan's {ops} operations in the first {MAX_WINDOWS}; {what} (does the program sync once per step?)"), effects);
            }
            Judgement::NoSync(n) => {
                self.events.push(format!("{n} operations without a sync"));
                self.withdraw_if_selecting(effects);
                let what = match self.mode {
                    Mode::Confirm => "the plan applies to the first step after a sync at most",
                    Mode::Select => "no entry is installed",
                };
                self.warn_once(format!("warning: blaze: over {n} operations ran without a device sync (a step of the plan has {ops}); plans count operations from the last sync, so sync at the start of every step (blaze_burn::step_boundary(&device)); {what}"), effects);
            }
        }
        self.outcome.get_or_insert(outcome);
        match self.mode {
            Mode::Confirm => effects.push(Effect::Stop),
            Mode::Select => self.phase = Phase::Settled(Settled { lengths, sync, count: counted }),
        }
    }

    /// A selecting judge that cannot tell which entry runs installs none: an entry chosen for
    /// the program as it was must not stay on a stream it was never matched to (a confirming
    /// judge keeps its plan, as its warning says).
    fn withdraw_if_selecting(&mut self, effects: &mut Vec<Effect>) {
        if self.mode == Mode::Select && self.installed.take().is_some() {
            effects.push(Effect::Install(None));
        }
    }

    fn warn_once(&mut self, line: String, effects: &mut Vec<Effect>) {
        if self.warned.insert(line.clone()) {
            effects.push(Effect::Warn(line));
        }
    }
}

/// A window ended at `w.next`: judge the step-sized runs of whole windows ending here, if there
/// are any.
fn window_ended(expected: &[Expected], w: &mut Window) -> Option<Judgement> {
    w.windows += 1;
    let lengths: BTreeSet<usize> = expected.iter().map(|e| e.ops_per_step).collect();
    for len in lengths {
        let Some(observed) = w.fingerprint(len) else { continue };
        w.candidates += 1;
        if let Some(i) = expected.iter().position(|e| e.ops_per_step == len && e.fingerprint == observed) {
            return Some(Judgement::Match(i));
        }
        // A fingerprint seen before means the alignments have come round once (the syncs
        // repeat every step), so the step's own run was among those judged.
        let repeated = !w.observed.insert(observed);
        if repeated || w.candidates >= CANDIDATES {
            let planned = expected.iter().map(|e| e.fingerprint.clone()).collect::<Vec<_>>().join("` or `");
            let actual = w.observed.iter().cloned().collect::<Vec<_>>().join("` or `");
            return Some(Judgement::NoMatch(PlanError::Mismatch { field: "op stream", planned, actual }));
        }
    }
    (w.windows >= MAX_WINDOWS).then_some(Judgement::GaveUp)
}

/// One operation while judging; the judgement, if this operation began a new window and the
/// windows so far decide it.
fn record(expected: &[Expected], longest: usize, w: &mut Window, op: &OperationIr, sync: u64) -> Option<Judgement> {
    if let Some(judgement) = sync_changed(expected, w, sync) {
        return Some(judgement);
    }
    w.push(op, longest);
    // The current window's start was trimmed away: it holds more than two steps. Not in the
    // first window, which also holds whatever the program did before (building the model).
    (w.starts.is_empty() && w.windows > 0).then(|| Judgement::NoSync(2 * longest as u64 + 1))
}

/// The sync count is `sync` at the next operation: when it moved, the window ended (the
/// judgement, if the windows so far decide it) and the next one begins.
fn sync_changed(expected: &[Expected], w: &mut Window, sync: u64) -> Option<Judgement> {
    if sync != w.sync {
        if let Some(judgement) = window_ended(expected, w) {
            return Some(judgement);
        }
        w.sync = sync;
        let lengths = expected.iter().map(|e| e.ops_per_step).collect();
        w.begin_window(&lengths);
    }
    None
}

/// One operation once settled: true when it ended a window of a length the settled program
/// never produced.
fn settled_op(settled: &mut Settled, sync: u64) -> bool {
    let mut changed = false;
    if sync != settled.sync {
        changed = !settled.lengths.is_empty() && !settled.lengths.contains(&settled.count);
        settled.sync = sync;
        settled.count = 0;
    }
    settled.count += 1;
    changed
}

#[cfg(test)]
mod tests;
