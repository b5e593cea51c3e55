//! A run of a model: warm-up, the op-stream check of a loaded plan or bundle, timed steps and
//! one recorded step, reported as a `RunReport` (`blazec run`, `demo`, and the child processes
//! of `bench` and `tune` all use it).
use crate::drive::{Settle, record_step, timed_step};
use blaze_ir::{Contract, ExecutedPartition, trace::op_stream_fingerprint};
use blaze_runtime::watch::OpStreamCheck;
use blaze_runtime::{BundleHandle, LoadOutcome, Model};
use serde::{Deserialize, Serialize};

/// What `blazec run` measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunReport {
    pub model: String,
    pub regime: String,
    /// `none`, `applied`, or `fallback: <reason>`.
    pub plan: String,
    /// Loss of every step, warm-up and settling included, in order.
    pub losses: Vec<f32>,
    /// Untimed steps run to settle after warm-up (absent in reports older than blaze-measure/2).
    #[serde(default)]
    pub settle_steps: usize,
    pub step_ms: Vec<f64>,
    /// Executed partition of the last (recorded) step.
    pub partition: ExecutedPartition,
    pub op_stream: String,
    pub ops: usize,
    /// Logits of the last step.
    pub logits: Vec<f32>,
    pub classes: usize,
    /// Cut-policy calls during the timed and recorded steps (0 = cached plans replayed).
    pub hook_calls_after_warmup: u64,
    /// A loaded plan's costs in CPU time of the program's threads (wall time in reports written
    /// before 2026-12-02): `load_plan` itself, and the automatic op-stream check's observer
    /// (absent in older reports and without a plan).
    #[serde(default)]
    pub plan_load_ms: Option<f64>,
    #[serde(default)]
    pub op_stream_check_ms: Option<f64>,
    /// Operations the op-stream check recorded while judging (absent before 2026-12-04).
    #[serde(default)]
    pub op_stream_check_ops: Option<u64>,
    /// Operations of a step of the plan the check judged against (its contract's; `ops` counts
    /// the last step's, which a captured plan replays in a handful). Absent before 2026-12-04.
    #[serde(default)]
    pub op_stream_check_step_ops: Option<u64>,
    /// Wall time of each warm-up step (the first holds compilation and autotune), ms.
    #[serde(default)]
    pub warmup_ms: Vec<f64>,
    /// Captured execution (a plan with `execution = captured`): `captured`, or `eager: <cause>`
    /// when it was not in force; absent for eager plans and in older reports.
    #[serde(default)]
    pub execution: Option<String>,
    /// Replays among the steps, the device memory around the live recording, and the executed
    /// partition observed while recording (the last step's `partition` is then the input refresh).
    #[serde(default)]
    pub replays: usize,
    #[serde(default)]
    pub recording: Option<blaze_runtime::RecordingMemory>,
    #[serde(default)]
    pub recorded_partition: Option<ExecutedPartition>,
}

impl RunReport {
    /// Adds what a captured model did to the report of a run of it.
    pub fn with_capture(mut self, captured: &blaze_runtime::Captured) -> Self {
        self.execution = Some(captured.execution());
        self.replays = captured.replays();
        self.recording = captured.memory();
        self.recorded_partition = captured.recorded_partition();
        self
    }
}

/// The run's side of a plan contract (`op_stream` filled in once a step has been seen).
pub fn contract_of(model: &dyn Model, op_stream: &str) -> Contract {
    let d = model.describe();
    Contract {
        model: d.name,
        regime: d.regime,
        shapes: d.shapes,
        op_stream: op_stream.into(),
        ops_per_step: 0,
        device: d.device,
        burn_version: blaze_runtime::BURN_VERSION.into(),
        recordable_step: None,
    }
}

/// What a run started from: a plan loaded for a declared contract, or a bundle handed to the
/// one-call start-up.
#[derive(Clone, Copy)]
pub enum Loaded<'a> {
    Plan(&'a LoadOutcome),
    Bundle(&'a BundleHandle),
}

impl Loaded<'_> {
    fn policy(&self) -> Option<std::sync::Arc<blaze_runtime::CutSet>> {
        match self {
            Loaded::Plan(LoadOutcome::Applied(h)) => Some(h.policy.clone()),
            Loaded::Plan(_) => None,
            Loaded::Bundle(b) => b.policy(),
        }
    }

    /// `applied`, `fallback: <reason>`, ... as the run report says it, after the steps.
    fn state(&self) -> String {
        match self {
            Loaded::Plan(LoadOutcome::Fallback(e)) => format!("fallback: {e}"),
            Loaded::Plan(LoadOutcome::Applied(h)) => match h.op_stream_check() {
                OpStreamCheck::Confirmed => "applied".into(),
                OpStreamCheck::Withdrawn(e) => format!("fallback: {e}"),
                OpStreamCheck::Pending | OpStreamCheck::Unconfirmed => "applied (op stream not confirmed)".into(),
            },
            Loaded::Bundle(b) => match (&b.fallback, b.installed()) {
                (Some(e), _) => format!("fallback: {e}"),
                (None, Some(entry)) => {
                    format!("applied (bundle entry {})", blaze_ir::bundle::EntryKey::of(&entry.contract))
                }
                (None, None) => {
                    format!("none installed: {}", b.events().last().map_or("no step-sized window yet", String::as_str))
                }
            },
        }
    }

    /// Load time, check time (ms), the operations the check judged and the plan's step length
    /// (the installed entry's, for a bundle).
    fn costs(&self) -> Option<(f64, f64, u64, Option<u64>)> {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        match self {
            Loaded::Plan(LoadOutcome::Applied(h)) => {
                let step = h.plan.contract.watched_step(&h.plan.settings).ops_per_step;
                Some((ms(h.load_time), ms(h.watch_time()), h.watch_ops(), Some(step)))
            }
            Loaded::Plan(_) => None,
            Loaded::Bundle(b) => Some((
                ms(b.load_time),
                ms(b.watch_time()),
                b.watch_ops(),
                b.installed().map(|p| p.contract.watched_step(&p.settings).ops_per_step),
            )),
        }
    }
}

/// Warm-up, the op-stream check of a loaded plan, timed steps and one recorded step.
pub fn run_loaded(model: &mut dyn Model, loaded: Option<Loaded>, warmup: u32, settle: Settle, steps: u32) -> RunReport {
    let mut losses = Vec::new();
    let mut warmup_ms = Vec::new();
    for _ in 0..warmup {
        let start = std::time::Instant::now();
        losses.extend(crate::drive::settle(model, Settle::Steps(1)));
        warmup_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let (first, out) = record_step(model, false);
    losses.push(out.loss);
    let op_stream = op_stream_fingerprint(&first.traced_ops());
    let calls = || loaded.and_then(|l| l.policy()).map_or(0, |p| p.calls());
    let settled = crate::drive::settle(model, settle);
    let settle_steps = settled.len();
    losses.extend(settled);
    let calls_before = calls();
    let mut step_ms = Vec::new();
    for _ in 0..steps {
        let (ms, out) = timed_step(model);
        step_ms.push(ms);
        losses.push(out.loss);
    }
    let (last, out) = record_step(model, true);
    losses.push(out.loss);
    // The runtime confirmed (or selected) by itself, at the first step-sized window.
    let plan = loaded.map_or("none".to_string(), |l| l.state());
    let costs = loaded.and_then(|l| l.costs());
    RunReport {
        model: model.describe().name,
        regime: model.describe().regime.to_string(),
        plan,
        losses,
        settle_steps,
        step_ms,
        ops: last.ops.len(),
        partition: last.partition,
        op_stream,
        logits: out.logits,
        classes: out.classes,
        hook_calls_after_warmup: calls().saturating_sub(calls_before),
        plan_load_ms: costs.map(|c| c.0),
        op_stream_check_ms: costs.map(|c| c.1),
        op_stream_check_ops: costs.map(|c| c.2),
        op_stream_check_step_ops: costs.and_then(|c| c.3),
        warmup_ms,
        execution: None,
        replays: 0,
        recording: None,
        recorded_partition: None,
    }
}
