//! Verify: run the caller's probe under the winner and under Burn's plan, from fresh seeded
//! instances, and compare what came back (the seed's four outcomes).
use crate::candidate::Candidate;
use crate::confirm::install;
use crate::drive::record_step;
use blaze_ir::plan::{RefusalKind, Regime};
use blaze_runtime::captured::CaptureState;
use blaze_runtime::{ModelFactory, activate_burn_default};
use serde::{Deserialize, Serialize};

mod drift;
mod eager_runs;
pub use eager_runs::EagerRuns;

/// Tolerance for "equal within f32 rounding" (`blaze_runtime::numerics`): relative to the
/// largest magnitude; every argmax must still be identical.
pub const REL_TOL: f32 = blaze_runtime::numerics::VERIFY_TOLERANCE;
pub use blaze_runtime::numerics::max_rel_diff;
/// Steps of the probe (the last one's logits are compared, every step's loss).
pub const PROBE_STEPS: u32 = 3;

/// The gate's outcome: a typed record of plan files and results (`blaze_ir::plan`).
pub use blaze_ir::plan::VerifyOutcome;

/// What a fresh seeded instance computed under one plan: every step's loss, the last step's
/// logits and executed partition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub losses: Vec<f32>,
    pub logits: Vec<f32>,
    pub classes: usize,
    pub fingerprint: String,
    /// Executed blocks of the last step, and how many of them fused several operations.
    #[serde(default)]
    pub blocks: usize,
    #[serde(default)]
    pub fused_blocks: usize,
    /// The executed partition of the last step.
    #[serde(default)]
    pub partition: blaze_ir::ExecutedPartition,
    /// Every parameter at the end of a training run (the captured gate; empty otherwise).
    #[serde(default)]
    pub params: Vec<f32>,
}

#[cfg(test)]
impl Probe {
    /// A probe of these numbers (two classes), for unit tests of the comparisons.
    pub(crate) fn of(losses: &[f32], logits: &[f32], params: &[f32]) -> Self {
        Probe {
            losses: losses.to_vec(),
            logits: logits.to_vec(),
            classes: 2,
            fingerprint: String::new(),
            blocks: 0,
            fused_blocks: 0,
            partition: Default::default(),
            params: params.to_vec(),
        }
    }
}

fn probe(factory: &dyn ModelFactory, regime: Regime, candidate: &Candidate, fault: bool) -> Result<Probe, String> {
    probe_steps(factory, regime, candidate, fault, PROBE_STEPS)
}

/// Builds a fresh instance under `candidate` and runs `steps` steps (at least 1); Burn's own
/// plan is in force again afterwards.
pub fn probe_steps(
    factory: &dyn ModelFactory,
    regime: Regime,
    candidate: &Candidate,
    fault: bool,
    steps: u32,
) -> Result<Probe, String> {
    install(candidate);
    blaze_runtime::fault::inject(fault);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut model = factory.build(regime)?;
        let mut losses = Vec::new();
        for _ in 1..steps.max(1) {
            model.sync();
            losses.push(model.step(false).loss);
        }
        let (step, out) = record_step(model.as_mut(), true);
        losses.push(out.loss);
        let p = &step.partition;
        Ok(Probe {
            losses,
            logits: out.logits,
            classes: out.classes,
            fingerprint: p.fingerprint(),
            blocks: p.blocks.len(),
            fused_blocks: p.fused_blocks().count(),
            partition: p.clone(),
            params: Vec::new(),
        })
    }));
    blaze_runtime::fault::inject(false);
    activate_burn_default();
    result.unwrap_or_else(|_| Err("the probe panicked".into()))
}

/// Compares the probe under `winner` (optionally with the test-only fault injected) with the
/// probe under Burn's plan. A captured winner goes through [`verify_captured`] instead.
pub fn verify(factory: &dyn ModelFactory, regime: Regime, winner: &Candidate, inject_fault: bool) -> VerifyOutcome {
    if winner.is_burn() {
        return VerifyOutcome::NothingToCheck;
    }
    if winner.is_captured() {
        return verify_captured(factory, regime, winner, captured_gate_steps(regime), &mut EagerRuns::default());
    }
    let (ours, burn) =
        match (probe(factory, regime, winner, inject_fault), probe(factory, regime, &Candidate::new(0, vec![]), false))
        {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return VerifyOutcome::refused(RefusalKind::Broken, format!("broken: {e}")),
        };
    let outcome = compare(&ours, &burn);
    if !outcome.refusal_kind().is_some_and(RefusalKind::is_different_numbers) {
        return outcome;
    }
    // Before blaming the plan, check that the model itself is reproducible: a second fresh
    // instance under Burn's plan must compute Burn's numbers. If not, say so (the refusal stands).
    match probe(factory, regime, &Candidate::new(0, vec![]), false) {
        Ok(again) => unreproducible(&burn, &again)
            .map_or(outcome, |why| VerifyOutcome::refused(RefusalKind::Unreproducible, why)),
        Err(_) => outcome,
    }
}

/// Steps of the captured gate: the eager warm-up of [`blaze_runtime::captured::WARM_STEPS`],
/// the recorded step, then 20 replays, every one on a fresh batch.
pub(crate) const CAPTURED_GATE_STEPS: u32 = blaze_runtime::captured::WARM_STEPS as u32 + 1 + 20;

/// Steps of the captured gate for a training step: after the warm-up and the recording's
/// preparing steps, 200 replays. A replay that updates state it does not read back (a
/// parameter or moment in a buffer of its own) leaves the eager chain within a few steps; a
/// subtler drift needs a long run to show; the parameters are compared at the end too.
pub(crate) const TRAINING_GATE_STEPS: u32 = blaze_runtime::captured::WARM_STEPS as u32 + 4 + 200;

/// The gate's length for `regime`.
pub(crate) fn captured_gate_steps(regime: Regime) -> u32 {
    match regime {
        Regime::Forward => CAPTURED_GATE_STEPS,
        Regime::Training => TRAINING_GATE_STEPS,
    }
}

/// The captured gate: a fresh seeded instance under `winner` captured against a fresh one under
/// the same fusion run eagerly, `steps` steps each, every step's loss and outputs compared.
/// Refused when the recording did not happen or fell back (whatever the numbers), or when any
/// step differs beyond the tolerance: a replay that reads stale inputs or state shows there. A
/// training run beyond the tolerance is kept when one of Burn's own executions (fusion off,
/// then Burn's default plan or width 1) drifts at least as far over the same steps (`drift`).
/// Eager runs come from `runs`: a tune gating several recordings makes each one once.
pub fn verify_captured(
    factory: &dyn ModelFactory,
    regime: Regime,
    winner: &Candidate,
    steps: u32,
    runs: &mut EagerRuns,
) -> VerifyOutcome {
    // The captured instance first: when its loss stops being finite at step k (a replay
    // updating stale state does within a few steps), the eager reference runs k steps only.
    let (captured, state) = match gate_probe(factory, regime, winner, steps) {
        Ok(probe) => probe,
        Err(e) => return VerifyOutcome::refused(RefusalKind::Broken, format!("broken: {e}")),
    };
    if state != Some(CaptureState::Replaying) {
        let execution = state.map_or("not a captured plan".into(), |s| s.to_string());
        return VerifyOutcome::refused(RefusalKind::NotCaptured, format!("not captured: {execution}"));
    }
    let eager = match runs.probe(factory, regime, winner, captured.losses.len() as u32) {
        Ok(eager) => eager,
        Err(e) => return VerifyOutcome::refused(RefusalKind::Broken, format!("broken: {e}")),
    };
    let strict = numbers(&captured, &eager);
    // A training run's rounding compounds over its steps (`drift`): measure Burn's own drift
    // (fusion off against the same fusion) over the same steps, only when it can matter.
    if regime != Regime::Training || !drift::drift_can_explain(&strict) {
        return strict;
    }
    let steps = captured.losses.len() as u32;
    let Ok(unfused) = runs.probe(factory, regime, &Candidate::fusion_off(0), steps) else { return strict };
    let first = drift::within_drift(&captured, &eager, &unfused, None, strict.clone());
    if first.keeps() {
        return first;
    }
    let (name, other) = drift::alternate_of(winner);
    match runs.probe(factory, regime, &other, steps) {
        Ok(alternate) => drift::within_drift(&captured, &eager, &unfused, Some((name, &alternate)), strict),
        Err(_) => first,
    }
}

/// Of a training gate, outputs are read every this many steps and at the last; losses every
/// step, parameters at the end. Reading a step's outputs copies them to the host: on the H200 a
/// 1007-step training gate that read every step's (chain-32: 4 MiB a step) ran past 2 minutes.
pub(crate) const TRAINING_GATE_OUTPUTS_EVERY: u32 = 100;

/// Whether the gate reads step `step`'s outputs (of `steps`): every step of a forward gate.
pub(crate) fn reads_outputs(regime: Regime, step: u32, steps: u32) -> bool {
    match regime {
        Regime::Forward => true,
        Regime::Training => (step + 1).is_multiple_of(TRAINING_GATE_OUTPUTS_EVERY) || step + 1 == steps,
    }
}

/// Every step's loss (outputs as [`reads_outputs`] says) of a fresh instance under `candidate` (wrapped in
/// [`blaze_runtime::Captured`] when the candidate is captured, then with its capture state).
pub(crate) fn gate_probe(
    factory: &dyn ModelFactory,
    regime: Regime,
    candidate: &Candidate,
    steps: u32,
) -> Result<(Probe, Option<CaptureState>), String> {
    install(candidate);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let built = factory.build(regime)?;
        let (mut captured, mut eager) = match candidate.is_captured() {
            true => {
                let fusion = candidate.eager();
                (Some(blaze_runtime::Captured::new(built).with_plan(&fusion.cuts, &fusion.settings)), None)
            }
            false => (None, Some(built)),
        };
        let model: &mut dyn blaze_runtime::Model = match (&mut captured, &mut eager) {
            (Some(c), _) => c,
            (None, Some(m)) => m.as_mut(),
            (None, None) => unreachable!("one of the two is built"),
        };
        let (mut losses, mut logits, mut classes) = (Vec::new(), Vec::new(), 0);
        for step in 0..steps.max(1) {
            model.sync();
            let read = reads_outputs(regime, step, steps.max(1));
            let out = model.step(read);
            losses.push(out.loss);
            // A captured model hands out the outputs of steps run while recording as they were
            // read then: keep only the steps both probes read.
            if read {
                logits.extend(out.logits);
            }
            classes = out.classes;
            // A training run whose loss is no longer finite stays so: the rest cannot pass.
            if !out.loss.is_finite() {
                break;
            }
        }
        model.sync();
        let params = match regime {
            Regime::Training => model.parameters(),
            Regime::Forward => Vec::new(),
        };
        let partition = captured.as_ref().and_then(|c| c.recorded_partition()).unwrap_or_default();
        let probe = Probe {
            losses,
            logits,
            classes,
            fingerprint: partition.fingerprint(),
            blocks: partition.blocks.len(),
            fused_blocks: partition.fused_blocks().count(),
            partition,
            params,
        };
        Ok((probe, captured.as_ref().map(|c| c.state().clone())))
    }));
    activate_burn_default();
    result.unwrap_or_else(|_| Err("the probe panicked".into()))
}

/// `Some(reason)` when two fresh instances under Burn's plan computed different numbers.
fn unreproducible(burn: &Probe, again: &Probe) -> Option<String> {
    match numbers(again, burn) {
        VerifyOutcome::Refused(why) => Some(format!(
            "cannot check: two fresh instances under Burn's plan already differ ({}); \
             the model is not reproducible: seed the device, then initialise every parameter, in ModelFactory::build",
            why.detail
        )),
        _ => None,
    }
}

fn compare(ours: &Probe, burn: &Probe) -> VerifyOutcome {
    if ours.fingerprint == burn.fingerprint {
        return VerifyOutcome::NotSettled("both plans executed identically".into());
    }
    numbers(ours, burn)
}

/// The numeric comparison alone, whatever the two executed.
fn numbers(ours: &Probe, burn: &Probe) -> VerifyOutcome {
    let all = |p: &Probe| p.losses.iter().chain(&p.logits).chain(&p.params).copied().collect::<Vec<f32>>();
    // Checked first: a probe stops at its first loss that is not finite.
    if let Some(i) = ours.losses.iter().zip(&burn.losses).position(|(x, y)| !x.is_finite() && y.is_finite()) {
        return VerifyOutcome::refused(
            RefusalKind::NotFinite,
            format!("different: not finite where the reference is (the loss of step {})", i + 1),
        );
    }
    let (a, b) = (all(ours), all(burn));
    if a.len() != b.len() {
        return VerifyOutcome::refused(RefusalKind::Broken, "broken: outputs missing");
    }
    if a.iter().zip(&b).any(|(x, y)| !x.is_finite() && y.is_finite()) {
        return VerifyOutcome::refused(RefusalKind::NotFinite, "different: not finite where the reference is");
    }
    if a.iter().any(|x| !x.is_finite()) {
        return VerifyOutcome::refused(RefusalKind::Broken, "broken: outputs not finite");
    }
    if a == b {
        return VerifyOutcome::Verified { identical: true, max_rel_diff: 0.0 };
    }
    let (rel, flips) = divergence(ours, burn);
    if rel > REL_TOL {
        VerifyOutcome::refused(
            RefusalKind::BeyondTolerance,
            format!("different: relative difference {rel:.2e} exceeds {REL_TOL:.0e}"),
        )
    } else if flips > 0 {
        VerifyOutcome::refused(
            RefusalKind::FlippedPrediction,
            format!("different: argmax differs in {flips} prediction(s)"),
        )
    } else {
        VerifyOutcome::Verified { identical: false, max_rel_diff: rel }
    }
}

/// How far `ours` is from `reference`: the largest relative difference of its losses, outputs
/// and parameters, and how many predictions' argmax differs.
fn divergence(ours: &Probe, reference: &Probe) -> (f32, usize) {
    let rel = max_rel_diff(&ours.losses, &reference.losses)
        .max(max_rel_diff(&ours.logits, &reference.logits))
        .max(max_rel_diff(&ours.params, &reference.params));
    let flips = argmax_rows(&ours.logits, ours.classes)
        .iter()
        .zip(argmax_rows(&reference.logits, reference.classes))
        .filter(|(x, y)| **x != *y)
        .count();
    (rel, flips)
}

/// Row-wise argmax of row-major logits with `classes` columns.
pub fn argmax_rows(logits: &[f32], classes: usize) -> Vec<usize> {
    logits
        .chunks(classes.max(1))
        .map(|r| r.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_training_gate_reads_outputs_every_hundredth_step_and_the_last() {
        use super::{Regime, reads_outputs};
        let read: Vec<u32> = (0..207).filter(|&s| reads_outputs(Regime::Training, s, 207)).collect();
        assert_eq!(read, vec![99, 199, 206]);
        assert!((0..24).all(|s| reads_outputs(Regime::Forward, s, 24)));
    }

    use super::*;

    fn p(losses: &[f32], logits: &[f32], fp: &str) -> Probe {
        Probe { fingerprint: fp.into(), blocks: 1, ..Probe::of(losses, logits, &[]) }
    }

    #[test]
    fn a_model_that_differs_from_itself_is_named_unreproducible() {
        let burn = p(&[1.0], &[0.1, 0.9, 0.8, 0.2], "a");
        assert_eq!(unreproducible(&burn, &p(&[1.0], &[0.1, 0.9, 0.8, 0.2], "a")), None);
        let why = unreproducible(&burn, &p(&[1.3], &[0.1, 0.9, 0.8, 0.2], "a")).expect("differs");
        assert!(why.starts_with("cannot check: two fresh instances") && why.contains("not reproducible"), "{why}");
    }

    #[test]
    fn four_outcomes() {
        let burn = p(&[1.0], &[0.1, 0.9, 0.8, 0.2], "a");
        assert!(matches!(compare(&p(&[1.0], &[0.1, 0.9, 0.8, 0.2], "a"), &burn), VerifyOutcome::NotSettled(_)));
        assert_eq!(
            compare(&p(&[1.0], &[0.1, 0.9, 0.8, 0.2], "b"), &burn),
            VerifyOutcome::Verified { identical: true, max_rel_diff: 0.0 }
        );
        assert!(matches!(
            compare(&p(&[1.0], &[0.1, 0.9, 0.8, 0.2000001], "b"), &burn),
            VerifyOutcome::Verified { identical: false, .. }
        ));
        assert!(
            matches!(compare(&p(&[1.01], &[0.1, 0.9, 0.8, 0.2], "b"), &burn), VerifyOutcome::Refused(r) if r.kind == RefusalKind::BeyondTolerance)
        );
        assert_eq!(
            compare(&p(&[f32::NAN], &[0.1, 0.9, 0.8, 0.2], "b"), &burn),
            VerifyOutcome::refused(
                RefusalKind::NotFinite,
                "different: not finite where the reference is (the loss of step 1)"
            )
        );
        let nan_burn = p(&[f32::NAN], &[0.1, 0.9, 0.8, 0.2], "a");
        assert!(
            matches!(compare(&p(&[f32::NAN], &[0.1, 0.9, 0.8, 0.2], "b"), &nan_burn), VerifyOutcome::Refused(r) if r.kind == RefusalKind::Broken && r.detail.starts_with("broken: outputs not finite"))
        );
        assert!(
            compare(&p(&[1.0], &[0.1, 0.9], "b"), &burn)
                == VerifyOutcome::refused(RefusalKind::Broken, "broken: outputs missing")
        );
        // A probe that stopped at its first loss that is not finite.
        let long = p(&[1.0, 0.9, 0.8], &[0.1, 0.9, 0.8, 0.2, 0.1, 0.9], "a");
        assert!(
            matches!(compare(&p(&[1.0, f32::NAN], &[0.1, 0.9, 0.8, 0.2], "b"), &long), VerifyOutcome::Refused(r) if r.kind == RefusalKind::NotFinite && r.detail.ends_with("(the loss of step 2)"))
        );
    }

    #[test]
    fn parameters_at_the_end_are_compared_too() {
        let mut burn = p(&[1.0], &[0.1, 0.9], "a");
        burn.params = vec![0.5, -2.0];
        let mut ours = p(&[1.0], &[0.1, 0.9], "b");
        ours.params = vec![0.5, -2.0];
        assert_eq!(compare(&ours, &burn), VerifyOutcome::Verified { identical: true, max_rel_diff: 0.0 });
        ours.params[1] = -2.1;
        assert!(compare(&ours, &burn).refusal_kind() == Some(RefusalKind::BeyondTolerance), "a parameter off by 5 %");
    }

    #[test]
    fn a_flipped_prediction_is_refused_even_within_tolerance() {
        let burn = p(&[1.0], &[0.5, 0.5000001], "a");
        assert!(
            matches!(compare(&p(&[1.0], &[0.5000001, 0.5], "b"), &burn), VerifyOutcome::Refused(r) if r.kind == RefusalKind::FlippedPrediction && r.detail.contains("argmax"))
        );
    }
}
