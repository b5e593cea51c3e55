//! Eager gate runs made once per tune. A training tune that gates two recordings runs Burn's own
//! executions for both (fusion off, and Burn's default plan, which is also the first recording's
//! eager twin): on an H100 (2026-12-06, mlp-w1025 training, 1007-step gate) eight runs of
//! about 22 s each, two of them repeats. An eager run from a fresh seeded instance is a function
//! of what it executes and how many steps it runs (eager training is bit-reproducible across
//! processes: H200, 2026-12-04), so the repeat is answered from the first run.
use super::{Probe, gate_probe};
use crate::candidate::Candidate;
use blaze_ir::plan::Regime;
use blaze_runtime::ModelFactory;

/// What an eager run executed: the candidate's fusion run eagerly, under no id (the same
/// fusion raced as two candidates is one run), in `regime` for `steps` steps.
#[derive(Clone, Debug, PartialEq)]
struct RunKey {
    fusion: Candidate,
    regime: Regime,
    steps: u32,
}

impl RunKey {
    fn of(candidate: &Candidate, regime: Regime, steps: u32) -> Self {
        RunKey { fusion: Candidate { id: 0, ..candidate.eager() }, regime, steps }
    }
}

/// The eager gate runs made so far (one tune's, or one gate's), and how many were reused.
#[derive(Default)]
pub struct EagerRuns {
    runs: Vec<(RunKey, Probe)>,
    reused: usize,
}

impl EagerRuns {
    /// `candidate`'s fusion run eagerly for `steps` steps from a fresh seeded instance: made
    /// now, or the run made earlier with the same fusion and steps. A failed run is not kept.
    pub fn probe(
        &mut self,
        factory: &dyn ModelFactory,
        regime: Regime,
        candidate: &Candidate,
        steps: u32,
    ) -> Result<Probe, String> {
        self.probe_with(regime, candidate, steps, |c| gate_probe(factory, regime, c, steps).map(|(p, _)| p))
    }

    /// [`EagerRuns::probe`] with the run made by `run` (tests stand in a fake run).
    fn probe_with(
        &mut self,
        regime: Regime,
        candidate: &Candidate,
        steps: u32,
        run: impl FnOnce(&Candidate) -> Result<Probe, String>,
    ) -> Result<Probe, String> {
        let key = RunKey::of(candidate, regime, steps);
        if let Some((_, probe)) = self.runs.iter().find(|(k, _)| *k == key) {
            self.reused += 1;
            return Ok(probe.clone());
        }
        let probe = run(&candidate.eager())?;
        self.runs.push((key, probe.clone()));
        Ok(probe)
    }

    /// Runs answered from an earlier one.
    pub fn reused(&self) -> usize {
        self.reused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blaze_ir::BoundaryId;
    use blaze_ir::plan::Settings;

    fn probe(loss: f32) -> Probe {
        Probe {
            losses: vec![loss],
            logits: vec![],
            classes: 0,
            fingerprint: String::new(),
            blocks: 0,
            fused_blocks: 0,
            partition: Default::default(),
            params: vec![],
        }
    }

    /// Each call of the fake run computes another loss, so a reused run shows as an old loss.
    fn counting<'a>(made: &'a mut Vec<Candidate>) -> impl FnOnce(&Candidate) -> Result<Probe, String> + 'a {
        move |c| {
            made.push(c.clone());
            Ok(probe(made.len() as f32))
        }
    }

    #[test]
    fn the_same_fusion_and_steps_run_once_whatever_the_candidates_id_or_execution() {
        let (mut runs, mut made) = (EagerRuns::default(), Vec::new());
        let burn = Candidate::new(0, vec![]);
        let a = runs.probe_with(Regime::Training, &burn, 1007, counting(&mut made)).unwrap();
        // Burn's plan captured, as a later candidate: its eager twin is Burn's plan.
        let twin = Candidate::new(0, vec![]).captured(7);
        let b = runs.probe_with(Regime::Training, &twin, 1007, counting(&mut made)).unwrap();
        assert_eq!((a.losses.clone(), b.losses), (vec![1.0], vec![1.0]));
        assert_eq!(made.len(), 1);
        assert_eq!(runs.reused(), 1);
        // What ran was the eager fusion, never the recording.
        assert!(!made[0].is_captured());
    }

    #[test]
    fn another_fusion_width_step_count_or_regime_is_a_run_of_its_own() {
        let (mut runs, mut made) = (EagerRuns::default(), Vec::new());
        let others = [
            (Candidate::new(0, vec![]), Regime::Training, 1007),
            (Candidate::fusion_off(1), Regime::Training, 1007),
            (Candidate::with_settings(2, vec![], Settings::beam_width(Some(1))), Regime::Training, 1007),
            (Candidate::new(3, vec![BoundaryId(4)]), Regime::Training, 1007),
            (Candidate::new(0, vec![]), Regime::Training, 207),
            (Candidate::new(0, vec![]), Regime::Forward, 1007),
        ];
        for (c, regime, steps) in &others {
            runs.probe_with(*regime, c, *steps, counting(&mut made)).unwrap();
        }
        assert_eq!(made.len(), others.len());
        assert_eq!(runs.reused(), 0);
    }

    #[test]
    fn a_failed_run_is_made_again() {
        let mut runs = EagerRuns::default();
        let off = Candidate::fusion_off(0);
        let failed = runs.probe_with(Regime::Training, &off, 10, |_| Err("the probe panicked".into()));
        assert_eq!(failed.unwrap_err(), "the probe panicked");
        let again = runs.probe_with(Regime::Training, &off, 10, |_| Ok(probe(2.0))).unwrap();
        assert_eq!(again.losses, vec![2.0]);
        assert_eq!(runs.reused(), 0);
    }
}
