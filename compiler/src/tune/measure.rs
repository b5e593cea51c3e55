//! Measure: time survivors on real steps, interleaved in rounds (A B C A B C …, the start
//! rotating each round) so drift lands on every candidate alike.
use crate::candidate::Candidate;
use crate::confirm::install;
use crate::session::timed_step;
use blaze_runtime::{Model, activate_burn_default};
use std::collections::BTreeMap;

/// Raw samples per candidate id, and candidates that broke (panicked) with the reason.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    pub ms: BTreeMap<usize, Vec<f64>>,
    pub broken: BTreeMap<usize, String>,
    pub steps: u64,
}

/// `rounds` rounds over `candidates`; each visit installs the plan, runs one settle step
/// (the store switch happens at its sync) and one timed step.
pub fn interleaved(model: &mut dyn Model, candidates: &[&Candidate], rounds: u32, mut progress: impl FnMut(u32, u32)) -> Samples {
    let mut s = Samples::default();
    // Settle under the first candidate (Burn's plan) so no candidate's first visit lands in the
    // slow stretch that follows compilation.
    if let Some(first) = candidates.first() {
        install(first);
        s.steps += crate::session::settle(model, crate::session::Settle::For(crate::session::SETTLE)).len() as u64;
    }
    for round in 0..rounds {
        progress(round, rounds);
        let n = candidates.len();
        for k in 0..n {
            let c = candidates[(k + round as usize) % n];
            if s.broken.contains_key(&c.id) {
                continue;
            }
            install(c);
            let visit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                model.sync();
                model.step(false);
                timed_step(model).0
            }));
            s.steps += 2;
            match visit {
                Ok(ms) => s.ms.entry(c.id).or_default().push(ms),
                Err(_) => {
                    s.broken.insert(c.id, "panicked while stepping".into());
                }
            }
        }
    }
    activate_burn_default();
    s
}
