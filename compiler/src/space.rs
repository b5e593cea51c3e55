//! `blazec space`: enumerate → canonicalise (egg) → confirm, reporting these counts:
//! requested, collapsed by the e-graph, collapsed by confirm, survivors, false merges.
use crate::candidate::Candidate;
use crate::canon::{Canonical, Facts, canonicalise};
use crate::confirm::{executed_partitions, false_merges, group_by_fingerprint};
use crate::enumerate::enumerate;
use blaze_ir::Trace;
use blaze_runtime::ModelFactory;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The plan space of one trace.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SpaceReport {
    pub model: String,
    pub regime: String,
    pub live_cut_points: usize,
    pub requested: Vec<String>,
    pub egraph_groups: Vec<Vec<usize>>,
    pub egraph_stop_reason: String,
    pub collapsed_by_egraph: usize,
    pub confirm_groups: Vec<Vec<usize>>,
    pub collapsed_by_confirm: usize,
    pub survivors: Vec<usize>,
    /// Requests confirmed individually to check the e-graph (all when `check_egraph`).
    pub confirmed_requests: usize,
    pub false_merges: Vec<(usize, usize)>,
    /// Executed fingerprint per confirmed request.
    pub fingerprints: BTreeMap<usize, String>,
}

/// Class-level requests for `trace` (cut-point classes, `classes.rs`), canonicalised.
pub fn class_candidates(trace: &Trace, budget: usize) -> (Vec<Candidate>, Canonical) {
    let cands = crate::classes::class_candidates(&crate::classes::classes(trace), budget);
    let canon = canonicalise(&cands, Arc::new(Facts::from_trace(trace)));
    (cands, canon)
}

/// Enumerates and canonicalises candidates for `trace`.
pub fn candidates(trace: &Trace, budget: usize, seed: u64) -> (Vec<Candidate>, Canonical) {
    let cands = enumerate(&trace.live_cut_points(), budget, seed);
    let canon = canonicalise(&cands, Arc::new(Facts::from_trace(trace)));
    (cands, canon)
}

/// Runs the three stages. With `check_egraph`, every request is confirmed (not only the
/// e-graph's representatives) so that false merges are counted.
pub fn explore_space(
    factory: &dyn ModelFactory,
    trace: &Trace,
    budget: usize,
    seed: u64,
    check_egraph: bool,
    by_class: bool,
) -> anyhow::Result<SpaceReport> {
    let (cands, canon) = if by_class { class_candidates(trace, budget) } else { candidates(trace, budget, seed) };
    let to_run: Vec<&Candidate> = if check_egraph {
        cands.iter().collect()
    } else {
        canon.representatives().into_iter().map(|i| &cands[i]).collect()
    };
    let mut model = factory.build(trace.regime).map_err(anyhow::Error::msg)?;
    let parts = executed_partitions(model.as_mut(), &to_run, |i, n| eprint!("\rconfirm {}/{n}", i + 1));
    eprintln!();
    let fingerprints: BTreeMap<usize, String> =
        to_run.iter().zip(&parts).map(|(c, p)| (c.id, p.fingerprint())).collect();
    let reps = canon.representatives();
    let rep_parts: Vec<_> =
        reps.iter().map(|id| parts[to_run.iter().position(|c| c.id == *id).unwrap()].clone()).collect();
    let confirm_groups = group_by_fingerprint(&reps, &rep_parts);
    Ok(SpaceReport {
        model: trace.model.clone(),
        regime: trace.regime.to_string(),
        live_cut_points: trace.live_cut_points().len(),
        requested: cands.iter().map(Candidate::to_text).collect(),
        collapsed_by_egraph: canon.collapsed(),
        egraph_stop_reason: canon.stop_reason.clone(),
        collapsed_by_confirm: confirm_groups.iter().map(|g| g.len() - 1).sum(),
        survivors: confirm_groups.iter().map(|g| g[0]).collect(),
        confirm_groups,
        confirmed_requests: to_run.len(),
        false_merges: false_merges(&canon, &fingerprints),
        egraph_groups: canon.groups,
        fingerprints,
    })
}

pub fn summary(r: &SpaceReport) -> String {
    format!(
        "{} {}: {} live cut points; requested {} / collapsed by e-graph {} ({}) / collapsed by confirm {} / survivors {}; false merges {} of {} confirmed requests",
        r.model,
        r.regime,
        r.live_cut_points,
        r.requested.len(),
        r.collapsed_by_egraph,
        r.egraph_stop_reason,
        r.collapsed_by_confirm,
        r.survivors.len(),
        r.false_merges.len(),
        r.confirmed_requests
    )
}
