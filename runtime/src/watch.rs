//! Confirms an installed plan's op stream by itself (no call for the user to forget): after
//! `load_plan` installs a plan, this observer records the operations registered from then on
//! and, at every sync, fingerprints each run of whole sync-to-sync windows ending there that
//! holds exactly the plan's `ops_per_step` operations, as the tracer fingerprints a step. (A
//! step's operations can reach the observer split over two windows, so any aligned run
//! counts, not only a single window.) One match confirms the plan. No match once the runs'
//! fingerprints repeat (every alignment of the step's syncs has been judged), or after
//! [`CANDIDATES`] runs, withdraws it (Burn's own plan from the next sync) with one warning; no
//! step-sized run within [`MAX_WINDOWS`] windows leaves the plan installed, with one warning
//! that it could not be confirmed. After the decision each registered operation costs one
//! relaxed load.
use blaze_ir::{PlanError, signature::OpSignature, trace::TracedOp};
use burn_fusion::observer::{BlockOperations, FusionObservation, FusionObserver};
use burn_ir::{OperationIr, TensorId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Windows (sync to sync) looked at before giving up on confirming.
pub const MAX_WINDOWS: u32 = 64;
/// Step-sized runs of windows that must all differ before the plan is withdrawn.
pub const CANDIDATES: u32 = 8;

/// What became of the op-stream check.
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

/// One recorded operation: its signature and the sequence numbers of the recorded operations
/// it reads.
struct Seen {
    sig: OpSignature,
    reads: Vec<u64>,
}

#[derive(Default)]
struct Window {
    /// Sync count when the current window began.
    sync: u64,
    /// Recorded operations, oldest first; `first` is the sequence number of `ops[0]`.
    ops: std::collections::VecDeque<Seen>,
    first: u64,
    producer: HashMap<TensorId, u64>,
    /// Sequence numbers where windows began (the current one last).
    starts: std::collections::VecDeque<u64>,
    windows: u32,
    candidates: u32,
    /// Fingerprints of the step-sized runs judged so far.
    observed: std::collections::BTreeSet<String>,
    /// Time spent in this observer (its whole cost to the program).
    busy: Duration,
}

impl Window {
    fn next_seq(&self) -> u64 {
        self.first + self.ops.len() as u64
    }

    /// The operations `start..end` as a traced step (reads outside it dropped, as a recorder
    /// started at `start` would not have seen them).
    fn traced(&self, start: u64, end: u64) -> Vec<TracedOp> {
        (start..end)
            .map(|seq| {
                let op = &self.ops[(seq - self.first) as usize];
                let inputs = op.reads.iter().filter(|&&r| r >= start).map(|&r| (r - start) as u32).collect();
                TracedOp { index: (seq - start) as u32, sig: op.sig.clone(), inputs }
            })
            .collect()
    }

    /// Keeps what the next judgements can need: the last `2 * keep` operations.
    fn trim(&mut self, keep: usize) {
        while self.ops.len() > 2 * keep + 1 {
            self.ops.pop_front();
            self.first += 1;
        }
        while self.starts.front().is_some_and(|&s| s < self.first) {
            self.starts.pop_front();
        }
    }
}

/// The observer; see the module docs.
pub struct OpStreamWatch {
    expected: String,
    ops_per_step: usize,
    done: AtomicBool,
    window: Mutex<Window>,
    outcome: OnceLock<OpStreamCheck>,
}

/// Keeps the watch installed (held by the plan handle).
pub struct WatchGuard {
    pub(crate) watch: Arc<OpStreamWatch>,
    _observation: FusionObservation,
}

impl std::fmt::Debug for WatchGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WatchGuard({:?})", self.watch.check())
    }
}

impl OpStreamWatch {
    /// Starts watching for a step of `ops_per_step` operations with fingerprint `expected`.
    pub fn start(expected: &str, ops_per_step: u64) -> WatchGuard {
        let watch = Arc::new(OpStreamWatch {
            expected: expected.to_string(),
            ops_per_step: ops_per_step as usize,
            done: AtomicBool::new(false),
            window: Mutex::new(Window { sync: burn_fusion::cut::syncs(), starts: [0].into(), ..Window::default() }),
            outcome: OnceLock::new(),
        });
        let observation = FusionObservation::new(watch.clone());
        WatchGuard { watch, _observation: observation }
    }

    pub fn check(&self) -> OpStreamCheck {
        self.outcome.get().cloned().unwrap_or(OpStreamCheck::Pending)
    }

    /// Time this observer has spent so far (the confirmation's cost to the program).
    pub fn busy(&self) -> Duration {
        self.window.lock().unwrap_or_else(|e| e.into_inner()).busy
    }

    fn decide(&self, outcome: OpStreamCheck) {
        match &outcome {
            OpStreamCheck::Withdrawn(err) => {
                burn_fusion::cut::install(None, 0);
                eprintln!("{}", crate::load::fallback_warning(err));
            }
            OpStreamCheck::Unconfirmed => eprintln!(
                "warning: blaze: no window between two syncs held the plan's {} operations in the first {MAX_WINDOWS}; the plan stays installed but its op stream is not confirmed (does the program sync once per step?)",
                self.ops_per_step
            ),
            _ => {}
        }
        let _ = self.outcome.set(outcome);
        self.done.store(true, Ordering::Release);
    }

    /// A window ended at `w.next_seq()`: judge the step-sized run of whole windows ending
    /// here, if there is one.
    fn window_ended(&self, w: &mut Window) -> Option<OpStreamCheck> {
        w.windows += 1;
        let end = w.next_seq();
        let start = end.checked_sub(self.ops_per_step as u64);
        if let Some(start) = start.filter(|s| w.starts.contains(s) && *s >= w.first) {
            w.candidates += 1;
            let observed = blaze_ir::trace::op_stream_fingerprint(&w.traced(start, end));
            if observed == self.expected {
                return Some(OpStreamCheck::Confirmed);
            }
            // A fingerprint seen before means the alignments have come round once (the syncs
            // repeat every step), so the step's own run was among those judged: withdraw.
            let repeated = !w.observed.insert(observed);
            if repeated || w.candidates >= CANDIDATES {
                let actual = w.observed.iter().cloned().collect::<Vec<_>>().join("` or `");
                return Some(OpStreamCheck::Withdrawn(PlanError::Mismatch { field: "op stream", planned: self.expected.clone(), actual }));
            }
        }
        (w.windows >= MAX_WINDOWS).then_some(OpStreamCheck::Unconfirmed)
    }
}

impl FusionObserver for OpStreamWatch {
    fn registered(&self, op: &OperationIr) {
        if self.done.load(Ordering::Relaxed) {
            return;
        }
        let start = Instant::now();
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let sync = burn_fusion::cut::syncs();
        if sync != w.sync {
            if let Some(outcome) = self.window_ended(&mut w) {
                w.busy += start.elapsed();
                drop(w);
                return self.decide(outcome);
            }
            w.sync = sync;
            let next = w.next_seq();
            w.starts.push_back(next);
        }
        let seq = w.next_seq();
        let reads = crate::recorder::reads_of(op, seq, &mut w.producer);
        w.ops.push_back(Seen { sig: OpSignature::of(op), reads });
        w.trim(self.ops_per_step);
        w.busy += start.elapsed();
    }

    fn block_starts(&self, _block: BlockOperations<'_>) {}

    fn block_ran(&self) {}
}
