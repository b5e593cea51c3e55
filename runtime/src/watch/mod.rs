//! Recognises a plan's op stream by itself (no call for the user to forget). The observer
//! records the operations registered from its start and, at every sync, fingerprints each run
//! of whole sync-to-sync windows ending there whose length is one of the expected entries'
//! `ops_per_step`, as the tracer fingerprints a step. (A step's operations can reach the
//! observer split over two windows, so any aligned run counts, not only a single window.)
//! Runs are fingerprinted only once some aligned run has had an expected length (the judge's
//! `Window::begin_window`): a program's first step, which runs while kernels compile, is
//! counted only. Operations the judge would only count are counted outside its lock
//! (`Counting`).
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
//!
//! Every decision is the [`Judge`]'s (`judge.rs`: device-free, unit-tested with made-up
//! programs); this module is the observer over burn_fusion that feeds it and carries out its
//! effects.
mod judge;

use crate::thread_clock::SpanClock;
use blaze_ir::PlanError;
use burn_fusion::observer::{BlockOperations, FusionObservation, FusionObserver};
use burn_ir::OperationIr;
pub use judge::Effect;
use judge::Judge;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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

/// What a selecting watch has made of the program's op stream ([`OpStreamWatch::selection`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    /// No judgement yet, or judging again after the program's windows changed.
    Judging,
    /// Entry `i` matches the stream and is installed.
    Installed(usize),
    /// Judged: no entry is installed; the watch's last decision, as it says it.
    NoEntry(String),
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

/// Captured steps alive in this process (see [`Capturing`]).
static CAPTURING: AtomicUsize = AtomicUsize::new(0);

/// Held while a step is recorded or replayed (captured execution): the operations registered
/// then (a recording's, input refreshes between replays) are not the plan's eager step, so
/// every watch ignores them instead of judging them a drift; a window that ended where they
/// began is still judged, so a captured plan is confirmed from its eager warm-up steps. A watch
/// that resumes after the guard is dropped (captured execution fell back to eager) re-judges the
/// stream.
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

/// The observer over burn_fusion: feeds every registered operation and the sync count to the
/// [`Judge`] and carries out its effects (installing, withdrawing, warning, stopping).
pub struct OpStreamWatch {
    install: Installer,
    done: AtomicBool,
    counting: Counting,
    state: Mutex<Observed>,
}

/// Operations the observer counts without taking the lock, while the judge would only count
/// them (`Judge::countable`): the program's operations before its first step-sized window,
/// which a confirming watch meets before the one step it fingerprints (cnn-mnist training:
/// 259 of 400 operations judged). Each costs three atomic operations instead of the lock, two
/// clock readings and the judge's bookkeeping; like a settled watch's count, it is not clocked
/// (reading the clock would cost more than the work). The count is handed to the judge
/// (`Judge::counted`) under the lock, before the next operation it is fed, so the judge decides
/// as if fed every operation. Registrations of one device reach the observer one at a time
/// (burn-fusion registers under its server's lock).
struct Counting {
    /// The sync count the budget was given for (`NO_BUDGET`: none).
    sync: AtomicU64,
    /// Operations that may still be counted here.
    budget: AtomicU64,
    /// Operations counted here since the judge was last told.
    pending: AtomicU64,
}

const NO_BUDGET: u64 = u64::MAX;

impl Counting {
    fn new() -> Self {
        Counting { sync: AtomicU64::new(NO_BUDGET), budget: AtomicU64::new(0), pending: AtomicU64::new(0) }
    }

    /// Counts one operation registered at sync count `sync`, if the budget allows.
    fn count(&self, sync: u64) -> bool {
        if self.sync.load(Ordering::Acquire) != sync
            || self.budget.fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| b.checked_sub(1)).is_err()
        {
            return false;
        }
        self.pending.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// Under the lock: ends the budget; the operations counted since the last call.
    fn take(&self) -> u64 {
        self.sync.store(NO_BUDGET, Ordering::Release);
        self.budget.store(0, Ordering::Release);
        self.pending.swap(0, Ordering::AcqRel)
    }

    /// Under the lock: `budget` operations registered at `sync` may be counted here.
    fn offer(&self, sync: u64, budget: u64) {
        if budget > 0 {
            self.budget.store(budget, Ordering::Release);
            self.sync.store(sync, Ordering::Release);
        }
    }
}

struct Observed {
    judge: Judge,
    /// CPU time spent judging (recording operations, fingerprinting runs, deciding): the
    /// check's cost to the program, without time descheduled (`thread_clock::SpanClock`). A
    /// settled watch's per-operation count (a lock, an atomic load and a counter) is not
    /// clocked: reading the clock would cost more than the work.
    busy: SpanClock,
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
        let judge = Judge::new(expected, mode, burn_fusion::cut::syncs());
        let state = Mutex::new(Observed { judge, busy: SpanClock::default() });
        let watch = Arc::new(OpStreamWatch { install, done: AtomicBool::new(false), counting: Counting::new(), state });
        let observation = FusionObservation::new(watch.clone());
        WatchGuard { watch, _observation: observation }
    }

    /// The confirmation of an installed plan ([`Mode::Confirm`]); a selecting watch reports
    /// `Confirmed` once it has installed an entry.
    pub fn check(&self) -> OpStreamCheck {
        self.lock().judge.outcome().cloned().unwrap_or(OpStreamCheck::Pending)
    }

    /// The entry installed now (None: Burn's own plan).
    pub fn installed(&self) -> Option<usize> {
        self.lock().judge.installed()
    }

    /// What a selecting watch has made of the program's op stream so far.
    pub fn selection(&self) -> Selection {
        let observed = self.lock();
        let judge = &observed.judge;
        match (judge.is_judging(), judge.installed()) {
            (true, _) => Selection::Judging,
            (false, Some(i)) => Selection::Installed(i),
            (false, None) => Selection::NoEntry(judge.events().last().cloned().unwrap_or_default()),
        }
    }

    /// Every decision so far, one line each.
    pub fn events(&self) -> Vec<String> {
        self.lock().judge.events().to_vec()
    }

    /// CPU time this observer has spent judging so far (the confirmation's cost to the program).
    pub fn busy(&self) -> Duration {
        self.lock().busy.total()
    }

    /// Operations recorded while judging so far (the check's cost is spent on these), those
    /// counted outside the lock included.
    pub fn judged(&self) -> u64 {
        self.lock().judge.judged() + self.counting.pending.load(Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Observed> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn carry_out(&self, effect: Effect) {
        match effect {
            Effect::Install(None) => {
                burn_fusion::cut::install(None, blaze_ir::store_key::BURN);
                (self.install)(None);
            }
            Effect::Install(entry) => (self.install)(entry),
            Effect::Warn(line) => eprintln!("{line}"),
            Effect::Stop => self.done.store(true, Ordering::Release),
        }
    }
}

impl FusionObserver for OpStreamWatch {
    fn registered(&self, op: &OperationIr) {
        if self.done.load(Ordering::Relaxed) {
            return;
        }
        let sync = burn_fusion::cut::syncs();
        // An operation of a recorded or replayed step is not judged, but a window that ended
        // before it is (`Judge::boundary`).
        let captured = CAPTURING.load(Ordering::Relaxed) > 0;
        if !captured && self.counting.count(sync) {
            return;
        }
        let effects = {
            let mut guard = self.lock();
            let observed = &mut *guard;
            // An operation that ends a window may judge (fingerprints, a decision): a long span.
            // Others are one signature line and a hash or two: short spans.
            let ends = observed.judge.would_end_window(sync);
            if captured && ends != Some(true) {
                return;
            }
            let span = ends.map(|ends| observed.busy.start(ends));
            if ends.is_some() {
                observed.judge.counted(self.counting.take());
            }
            let effects = if captured { observed.judge.boundary(sync) } else { observed.judge.op(op, sync) };
            if !captured {
                self.counting.offer(sync, observed.judge.countable(sync));
            }
            if let Some(span) = span {
                observed.busy.stop(span);
            }
            effects
        };
        for effect in effects {
            self.carry_out(effect);
        }
    }

    fn block_starts(&self, _block: BlockOperations<'_>) {}

    fn block_ran(&self) {}
}
