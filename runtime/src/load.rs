//! Loading a plan file at start-up. Never panics; falls back to Burn's own plan with one
//! warning naming the reason.
use crate::CutSet;
use crate::policy::activate_with;
use crate::watch::{OpStreamCheck, OpStreamWatch, WatchGuard};
use blaze_ir::{Contract, PlanError, PlanFile};
use std::path::Path;
use std::sync::Arc;

/// What `load_plan` did.
#[derive(Debug)]
// One outcome per program start: the size of the applied handle does not matter.
#[allow(clippy::large_enum_variant)]
pub enum LoadOutcome {
    /// The plan is installed; its cuts apply from the next sync.
    Applied(PlanHandle),
    /// Burn's own plan stays in force, for this reason (already printed as a warning).
    Fallback(PlanError),
}

/// An installed plan.
#[derive(Debug)]
pub struct PlanHandle {
    pub plan: PlanFile,
    pub policy: Arc<CutSet>,
    /// What became of the plan's settings where the program had set its own (also printed).
    pub notes: Vec<String>,
    /// Confirms the op stream by itself at the first window of the plan's size (keep the
    /// handle alive: dropping it stops the watch).
    pub watch: WatchGuard,
    /// CPU time of `load_plan` itself on the calling thread (read, parse, validate, select,
    /// install; see `thread_clock`).
    pub load_time: std::time::Duration,
}

impl PlanHandle {
    /// The automatic op-stream check: pending until a window of the plan's size has run.
    pub fn op_stream_check(&self) -> OpStreamCheck {
        self.watch.watch.check()
    }

    /// CPU time the automatic check has cost the program so far (its observer's own work on
    /// the threads registering operations).
    pub fn watch_time(&self) -> std::time::Duration {
        self.watch.watch.busy()
    }

    /// Operations the automatic check recorded while judging.
    pub fn watch_ops(&self) -> u64 {
        self.watch.watch.judged()
    }

    /// Checks the op stream the program actually ran (fingerprint of a steady-state step)
    /// against the plan's contract. On a mismatch the plan is withdrawn (Burn's own plan from
    /// the next sync) with one warning, and the reason is returned.
    /// (A captured training plan's step is the one it records: [`Contract::watched_step`].)
    pub fn confirm_op_stream(&self, observed: &str) -> Result<(), PlanError> {
        let planned = self.plan.contract.watched_step(&self.plan.settings).op_stream;
        if observed == planned {
            return Ok(());
        }
        let err = PlanError::Mismatch { field: "op stream", planned, actual: observed.to_string() };
        burn_fusion::cut::install(None, blaze_ir::store_key::BURN);
        warn(&err);
        Err(err)
    }
}

impl LoadOutcome {
    pub fn is_applied(&self) -> bool {
        matches!(self, LoadOutcome::Applied(_))
    }
}

/// Loads the plan at `path` for a run described by `actual` (leave `actual.op_stream` empty
/// when it is not known yet; confirm it later with [`PlanHandle::confirm_op_stream`]).
pub fn load_plan(path: impl AsRef<Path>, actual: &Contract) -> LoadOutcome {
    let start = crate::thread_clock::ThreadClock::now();
    let path = path.as_ref();
    let mut outcome = match blaze_ir::file::read_text(path) {
        Ok(text) => load_plan_text(&text, actual),
        Err(reason) => fallback(PlanError::Unreadable { path: path.display().to_string(), reason }),
    };
    if let LoadOutcome::Applied(handle) = &mut outcome {
        handle.load_time = start.elapsed();
    }
    outcome
}

/// [`load_plan`] for plan text already in memory: a plan file, or a bundle, of which the entry
/// that fits `actual` (device, Burn version, model, regime, shapes) is installed. A program that
/// switches regime (train, then evaluate) calls it again with the other regime.
pub fn load_plan_text(text: &str, actual: &Contract) -> LoadOutcome {
    let start = crate::thread_clock::ThreadClock::now();
    let plan = match blaze_ir::Bundle::parse(text).and_then(|b| b.select(actual).cloned()) {
        Ok(plan) => plan,
        Err(e) => return fallback(e),
    };
    let policy = activate_with(&plan.cuts, &plan.settings);
    let notes = crate::settings::apply(&plan.settings);
    for note in &notes {
        eprintln!("{note}");
    }
    let watched = plan.contract.watched_step(&plan.settings);
    let watch = OpStreamWatch::start(&watched.op_stream, watched.ops_per_step);
    LoadOutcome::Applied(PlanHandle { plan, policy, notes, watch, load_time: start.elapsed() })
}

fn fallback(err: PlanError) -> LoadOutcome {
    burn_fusion::cut::install(None, blaze_ir::store_key::BURN);
    warn(&err);
    LoadOutcome::Fallback(err)
}

fn warn(err: &PlanError) {
    eprintln!("{}", fallback_warning(err));
}

/// The one line printed when a plan is not used.
pub fn fallback_warning(err: &PlanError) -> String {
    format!("warning: blaze: {err}; using Burn's own fusion plan")
}
