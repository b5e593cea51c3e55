//! `blazec trace`: capture one steady-state step of a model into a `Trace`.
use crate::drive::{record_step, warm_up};
use blaze_ir::{
    BoundaryId, Trace,
    plan::{Regime, StepStream},
    trace::{TRACE_FORMAT_VERSION, TracedBoundary},
};
use blaze_runtime::{
    Model, ModelFactory, RecordedStep, activate_burn_default, activate_explore_probe_with, activate_with,
};
use std::collections::BTreeSet;

/// Options of a trace.
#[derive(Clone, Debug)]
pub struct TraceOptions {
    pub regime: Regime,
    pub warmup: u32,
    /// Trace under this beam width of Burn's fusion search instead of Burn's configured one.
    pub max_blocks: Option<u32>,
}

impl TraceOptions {
    /// Burn's own search, `warmup` steps before the traced one.
    pub fn new(regime: Regime, warmup: u32) -> Self {
        Self { regime, warmup, max_blocks: None }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot build the model: {0}")]
    Build(String),
    #[error("the op stream is not the same in consecutive steps ({0}); boundary ids would not be stable")]
    Unstable(String),
    #[error("the step recorded no operations (is the device working?)")]
    Empty,
}

/// Traces `factory`: Burn's own executed partition (its plan store, no cuts; with
/// `opts.max_blocks`, Burn's search at that width in a store of its own), then the live set:
/// the operations Burn explores when plans are cached per step position, as they are under any
/// cut plan (so a cut there takes effect).
pub fn trace(factory: &dyn ModelFactory, opts: &TraceOptions) -> Result<Trace, TraceError> {
    let mut model = factory.build(opts.regime).map_err(TraceError::Build)?;
    match opts.max_blocks {
        None => drop(activate_burn_default()),
        Some(width) => drop(activate_with(&[], &blaze_ir::plan::Settings::beam_width(Some(width)))),
    }
    let step = steady_step(model.as_mut(), opts.warmup)?;
    // Installed between steps: it takes effect at the next sync, and model initialisation is
    // long past, so only step operations are counted.
    let probe = activate_explore_probe_with(opts.max_blocks);
    warm_up(model.as_mut(), 2);
    let desc = model.describe();
    let explored = probe.explored();
    activate_burn_default();
    drop(model);
    let recordable_step = match opts.regime {
        Regime::Training => recordable_step(factory, opts.warmup)?,
        Regime::Forward => None,
    };
    Ok(Trace {
        format_version: TRACE_FORMAT_VERSION,
        model: desc.name,
        regime: opts.regime,
        shapes: desc.shapes,
        device: desc.device,
        burn_version: blaze_runtime::BURN_VERSION.into(),
        warmup_steps: opts.warmup,
        ops: step.traced_ops(),
        boundaries: cut_points(&step.partition.blocks, &explored),
        partition: step.partition,
        explored: explored.iter().map(|&i| i as u32).collect(),
        max_blocks: opts.max_blocks,
        recordable_step,
    })
}

/// The op stream of a training step in the form captured execution runs it (its state held in
/// place: `RecordableStep::hold_state_in_place`), traced as the step is, on a fresh instance.
/// None when the model cannot be recorded, or when that step is not the same in two consecutive
/// steps: a captured plan made from the trace then runs unconfirmed (its gate verifies it), and
/// the eager trace, which plans of every other kind need, is not lost to it.
fn recordable_step(factory: &dyn ModelFactory, warmup: u32) -> Result<Option<StepStream>, TraceError> {
    let mut model = factory.build(Regime::Training).map_err(TraceError::Build)?;
    if blaze_runtime::captured::hold_state_in_place(model.as_mut()).is_err() {
        return Ok(None);
    }
    let Ok(step) = steady_step(model.as_mut(), warmup) else { return Ok(None) };
    let ops = step.traced_ops();
    Ok(Some(StepStream { op_stream: blaze_ir::trace::op_stream_fingerprint(&ops), ops_per_step: ops.len() as u64 }))
}

/// One step after `warmup` steps, checked to register the same operations as the next one.
fn steady_step(model: &mut dyn Model, warmup: u32) -> Result<RecordedStep, TraceError> {
    warm_up(model, warmup);
    let (step, _) = record_step(model, false);
    let (again, _) = record_step(model, false);
    if step.ops.is_empty() {
        return Err(TraceError::Empty);
    }
    check_stable(&step, &again)?;
    Ok(step)
}

/// Cut points: every gap before operation n that some fused block spans (has operations on
/// both sides). A cut there ends the segment and so changes that block; a cut anywhere else
/// changes no block of Burn's plan.
pub fn cut_points(blocks: &[Vec<u32>], explored: &BTreeSet<u64>) -> Vec<TracedBoundary> {
    let mut spanned = BTreeSet::new();
    for block in blocks.iter().filter(|b| b.len() > 1) {
        let (lo, hi) = (*block.iter().min().unwrap(), *block.iter().max().unwrap());
        spanned.extend(lo + 1..=hi);
    }
    spanned
        .into_iter()
        .map(|n| TracedBoundary { id: BoundaryId(n as u64), live: explored.contains(&(n as u64)) })
        .collect()
}

/// Two consecutive steps must register the same operations in the same order.
fn check_stable(a: &RecordedStep, b: &RecordedStep) -> Result<(), TraceError> {
    if a.ops.len() != b.ops.len() {
        return Err(TraceError::Unstable(format!("{} vs {} operations", a.ops.len(), b.ops.len())));
    }
    for (i, (x, y)) in a.ops.iter().zip(&b.ops).enumerate() {
        if x.sig != y.sig || x.inputs != y.inputs {
            return Err(TraceError::Unstable(format!("operation {i}: `{}` vs `{}`", x.sig.to_line(), y.sig.to_line())));
        }
    }
    Ok(())
}

/// One-line summary: ops, blocks, boundaries.
pub fn summary(trace: &Trace) -> String {
    format!(
        "{} {}{}: {} ops, {} blocks ({} fused, {} merged neighbour pairs), {} cut points ({} live){}",
        trace.model,
        trace.regime,
        trace.max_blocks.map_or(String::new(), |n| format!(" (beam width {n})")),
        trace.ops.len(),
        trace.partition.blocks.len(),
        trace.partition.fused_blocks().count(),
        trace.partition.merged_boundaries().len(),
        trace.boundaries.len(),
        trace.live_cut_points().len(),
        held_state_summary(trace)
    )
}

/// The summary's tail about the step with the training state held in place (training only).
fn held_state_summary(trace: &Trace) -> String {
    const NONE: &str = "; no step with the training state held in place (the model cannot be recorded, or that \
                        step changed between two steps): a captured plan made from this trace runs unconfirmed";
    match (&trace.recordable_step, trace.regime) {
        (Some(s), _) => format!("; {} ops with the training state held in place (captured execution)", s.ops_per_step),
        (None, Regime::Training) => NONE.into(),
        (None, Regime::Forward) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_says_whether_a_training_trace_holds_the_step_captured_training_runs() {
        let mut t = crate::classes::tests::layered(2);
        assert!(summary(&t).ends_with("6 ops, 6 blocks (0 fused, 0 merged neighbour pairs), 5 cut points (5 live)"));
        t.regime = Regime::Training;
        assert!(summary(&t).ends_with("a captured plan made from this trace runs unconfirmed"), "{}", summary(&t));
        t.recordable_step = Some(StepStream { op_stream: "0abc".into(), ops_per_step: 9 });
        assert!(summary(&t).ends_with("; 9 ops with the training state held in place (captured execution)"));
    }
}
