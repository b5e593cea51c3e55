//! The captured training gate over a long run. Rounding compounds over training steps: a step
//! whose kernels round one value differently leaves the eager chain and drifts further every
//! step. On the H200 (2026-12-03/04, SPIR-V) recorded training steps of attention, mlp-w1024 and
//! cnn-mnist were one rounding step off the eager losses at steps 5-11 and past the 1e-5
//! tolerance by steps 145-192. Burn's own executions of one model differ the same way: its
//! fused kernels against its unfused ones. So a captured run beyond the tolerance is still kept
//! when it is no further from eager execution than Burn's unfused execution is from its fused
//! one over the same steps, with no more flipped predictions. A replay that reads stale state
//! is orders of magnitude further, or stops being finite, and stays refused.
use super::{BEYOND_TOLERANCE, FLIPPED, Probe, REL_TOL, VerifyOutcome, divergence};

/// Whether a refusal is one drift can explain: the numbers are finite and differ, by more
/// than the tolerance or in an argmax (not broken, missing or not finite).
pub(super) fn drift_can_explain(refusal: &VerifyOutcome) -> bool {
    matches!(refusal, VerifyOutcome::Refused(why)
        if why.starts_with(BEYOND_TOLERANCE) || why.starts_with(FLIPPED))
}

/// The gate's outcome for a `captured` run refused by the tolerance alone (`strict`), given the
/// same steps run eagerly under the same fusion (`eager`) and with fusion off (`unfused`).
pub(super) fn within_drift(captured: &Probe, eager: &Probe, unfused: &Probe, strict: VerifyOutcome) -> VerifyOutcome {
    if unfused.losses.len() != eager.losses.len() || unfused.losses.iter().any(|l| !l.is_finite()) {
        return strict;
    }
    let (ours, our_flips) = divergence(captured, eager);
    let (burn, burn_flips) = divergence(unfused, eager);
    if ours <= burn.max(REL_TOL) && our_flips <= burn_flips {
        return VerifyOutcome::WithinDrift { max_rel_diff: ours, unfused: burn, steps: captured.losses.len() as u32 };
    }
    match strict {
        VerifyOutcome::Refused(why) => VerifyOutcome::Refused(format!(
            "{why}; further than Burn's own drift over {} steps (unfused against fused: relative difference \
             {burn:.2e}, {burn_flips} flipped prediction(s))",
            captured.losses.len()
        )),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(losses: &[f32], logits: &[f32], params: &[f32]) -> Probe {
        Probe::of(losses, logits, params)
    }

    fn strict(captured: &Probe, eager: &Probe) -> VerifyOutcome {
        super::super::numbers(captured, eager)
    }

    #[test]
    fn a_drift_no_larger_than_burns_own_is_kept_and_said_so() {
        let eager = probe(&[2.0, 1.0, 0.5], &[0.9, 0.1], &[1.0, -1.0]);
        let captured = probe(&[2.0, 1.0, 0.5001], &[0.9, 0.1], &[1.0, -1.00005]);
        let unfused = probe(&[2.0, 1.0002, 0.5003], &[0.9, 0.1], &[1.0, -1.0001]);
        let refused = strict(&captured, &eager);
        assert!(drift_can_explain(&refused), "{refused:?}");
        let outcome = within_drift(&captured, &eager, &unfused, refused);
        let VerifyOutcome::WithinDrift { max_rel_diff, unfused, steps } = outcome else { panic!("{outcome:?}") };
        assert_eq!(steps, 3);
        assert!(max_rel_diff > REL_TOL && max_rel_diff <= unfused, "{max_rel_diff} {unfused}");
        assert!(outcome.keeps() && outcome.to_string().contains("within Burn's own rounding drift over 3 steps"));
    }

    #[test]
    fn a_drift_beyond_burns_own_stays_refused_with_both_figures() {
        let eager = probe(&[2.0, 1.0, 0.5], &[0.9, 0.1], &[1.0, -1.0]);
        let captured = probe(&[2.0, 1.1, 0.7], &[0.9, 0.1], &[1.0, -1.2]);
        let unfused = probe(&[2.0, 1.0, 0.5001], &[0.9, 0.1], &[1.0, -1.0]);
        let outcome = within_drift(&captured, &eager, &unfused, strict(&captured, &eager));
        let VerifyOutcome::Refused(why) = &outcome else { panic!("{outcome:?}") };
        assert!(
            why.starts_with("different: relative difference")
                && why.contains("further than Burn's own drift over 3 steps"),
            "{why}"
        );
        assert!(!outcome.keeps());
    }

    #[test]
    fn a_flipped_prediction_burns_own_drift_does_not_flip_stays_refused() {
        let eager = probe(&[1.0], &[0.5, 0.5001], &[]);
        let captured = probe(&[1.0], &[0.5001, 0.5], &[]);
        // Burn's own drift is larger, but flips nothing.
        let unfused = probe(&[1.0], &[0.4997, 0.5004], &[]);
        let outcome = within_drift(&captured, &eager, &unfused, strict(&captured, &eager));
        assert!(
            matches!(&outcome, VerifyOutcome::Refused(why) if why.contains("0 flipped prediction(s)")),
            "{outcome:?}"
        );
    }

    #[test]
    fn broken_or_not_finite_numbers_are_not_drift() {
        let eager = probe(&[1.0, 0.9], &[0.5, 0.6], &[]);
        assert!(!drift_can_explain(&strict(&probe(&[1.0, f32::NAN], &[0.5, 0.6], &[]), &eager)));
        assert!(!drift_can_explain(&strict(&probe(&[1.0, 0.9], &[0.5], &[]), &eager)));
        assert!(!drift_can_explain(&VerifyOutcome::Refused("not captured: eager".into())));
    }
}
