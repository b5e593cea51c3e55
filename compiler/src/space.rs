//! `blazec space`: enumerate → canonicalise (egg) → confirm, reporting these counts:
//! requested, collapsed by the e-graph, collapsed by confirm, survivors, false merges.
use crate::candidate::Candidate;
use crate::canon::{Canonical, Facts, canonicalise};
use crate::confirm::{executed_partitions, false_merges};
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

/// How cut plans are requested from a trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Enumeration {
    /// Sets of live cut points (`enumerate.rs`), at most `budget`.
    Sampled { budget: usize, seed: u64 },
    /// Unions of cut-point classes (`classes.rs`: one decision for the same place in every
    /// layer), at most `budget`.
    Classes { budget: usize },
}

/// The one enumerate → canonicalise sequence (tune, space and live): the requested cut plans
/// for `trace` and the e-graph's groups of them.
pub fn request(trace: &Trace, how: Enumeration) -> (Vec<Candidate>, Canonical) {
    let cands = match how {
        Enumeration::Sampled { budget, seed } => enumerate(&trace.live_cut_points(), budget, seed),
        Enumeration::Classes { budget } => crate::classes::class_candidates(&crate::classes::classes(trace), budget),
    };
    let canon = canonicalise(&cands, Arc::new(Facts::from_trace(trace)));
    (cands, canon)
}

/// Runs the three stages. With `check_egraph`, every request is confirmed (not only the
/// e-graph's representatives) so that false merges are counted. `progress` hears each stage.
pub fn explore_space(
    factory: &dyn ModelFactory,
    trace: &Trace,
    how: Enumeration,
    check_egraph: bool,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<SpaceReport> {
    let (cands, canon) = request(trace, how);
    let to_run: Vec<&Candidate> = if check_egraph {
        cands.iter().collect()
    } else {
        canon.representatives().into_iter().map(|i| &cands[i]).collect()
    };
    let mut model = factory.build(trace.regime).map_err(anyhow::Error::msg)?;
    let parts = executed_partitions(model.as_mut(), &to_run, |i, n| progress(&format!("confirm {}/{n}", i + 1)));
    let fingerprints: BTreeMap<usize, String> =
        to_run.iter().zip(&parts).map(|(c, p)| (c.id, p.fingerprint())).collect();
    let reps = canon.representatives();
    let rep_parts: Vec<_> =
        reps.iter().map(|id| parts[to_run.iter().position(|c| c.id == *id).unwrap()].clone()).collect();
    let rep_cands: Vec<&Candidate> = reps.iter().map(|&id| &cands[id]).collect();
    let confirm_groups = crate::confirm::group(&rep_cands, &rep_parts);
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
