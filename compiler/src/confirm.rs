//! Confirm: run each candidate once after warm-up, record what executed, and collapse the
//! candidates that executed identically. Also checks the e-graph: two requests it called equal
//! that executed differently are a false merge (a bug in a rule).
use crate::candidate::Candidate;
use crate::canon::Canonical;
use crate::drive::{record_step, warm_up};
use blaze_ir::ExecutedPartition;
use blaze_runtime::{Model, activate_burn_default, activate_with};
use std::collections::BTreeMap;

/// Steps run under a newly installed plan before its partition is recorded: the first switches
/// plan stores and explores; the second explores what step-specific differences left over.
pub(crate) const CONFIRM_WARMUP: u32 = 2;

/// Called with a candidate's id whenever one is installed: the tune worker's journal
/// (`tune::journal::installed`), set by the worker, so that this stage knows nothing of it.
static ON_INSTALL: std::sync::OnceLock<fn(usize)> = std::sync::OnceLock::new();

/// Sets the install hook (once per process).
pub fn on_install(hook: fn(usize)) {
    let _ = ON_INSTALL.set(hook);
}

/// Installs `candidate`'s cuts (Burn's own store for candidate 0); effective from the next sync.
pub fn install(candidate: &Candidate) {
    if let Some(hook) = ON_INSTALL.get() {
        hook(candidate.id);
    }
    let fusion = candidate.eager();
    if fusion.unfused {
        blaze_runtime::activate_unfused();
    } else if fusion.is_burn() {
        activate_burn_default();
    } else {
        activate_with(&fusion.cuts, &fusion.settings);
    }
}

/// Executed partition of every candidate, in order, on one model instance.
pub(crate) fn executed_partitions(
    model: &mut dyn Model,
    candidates: &[&Candidate],
    mut progress: impl FnMut(usize, usize),
) -> Vec<ExecutedPartition> {
    let mut out = Vec::with_capacity(candidates.len());
    for (i, candidate) in candidates.iter().enumerate() {
        progress(i, candidates.len());
        install(candidate);
        warm_up(model, CONFIRM_WARMUP);
        out.push(record_step(model, false).0.partition);
    }
    activate_burn_default();
    out
}

/// What confirm found for some candidates: each one's executed partition, in order, and the
/// candidates grouped by [`key`] (ids, first-seen order); the first of each group survives.
pub struct Confirmed {
    pub partitions: Vec<ExecutedPartition>,
    pub groups: Vec<Vec<usize>>,
}

impl Confirmed {
    /// The first id of every group.
    pub fn survivors(&self) -> Vec<usize> {
        self.groups.iter().map(|g| g[0]).collect()
    }
}

/// The one rule for "these candidates are the same plan": the executed partition, and for a
/// width alone whether it caches by position (the same kernels, other host work). Cut plans
/// cache by position anyway. Tune, space and live all collapse by it.
pub fn key(candidate: &Candidate, partition: &ExecutedPartition) -> String {
    let by_position = candidate.cuts.is_empty() && candidate.settings.caches_by_position(false);
    format!("{}{}", partition.fingerprint(), if by_position { ";position" } else { "" })
}

/// Runs every candidate once on `model` ([`executed_partitions`]) and groups them by [`key`].
pub fn confirm(model: &mut dyn Model, candidates: &[&Candidate], progress: impl FnMut(usize, usize)) -> Confirmed {
    let partitions = executed_partitions(model, candidates, progress);
    let groups = group(candidates, &partitions);
    Confirmed { partitions, groups }
}

/// `candidates` grouped by [`key`] of their `partitions` (ids, first-seen order).
pub fn group(candidates: &[&Candidate], partitions: &[ExecutedPartition]) -> Vec<Vec<usize>> {
    let ids: Vec<usize> = candidates.iter().map(|c| c.id).collect();
    let keys: Vec<String> = candidates.iter().zip(partitions).map(|(c, p)| key(c, p)).collect();
    group_by_key(&ids, &keys)
}

/// Groups ids by key, groups in first-seen order.
fn group_by_key(ids: &[usize], keys: &[String]) -> Vec<Vec<usize>> {
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (&id, key) in ids.iter().zip(keys) {
        let g = *index.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(id);
    }
    groups
}

/// Members of e-graph groups that executed differently from their representative.
pub fn false_merges(canon: &Canonical, fingerprint_of: &BTreeMap<usize, String>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for group in &canon.groups {
        let Some(rep) = fingerprint_of.get(&group[0]) else { continue };
        for member in &group[1..] {
            if fingerprint_of.get(member).is_some_and(|fp| fp != rep) {
                out.push((group[0], *member));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(blocks: &[&[u32]]) -> ExecutedPartition {
        ExecutedPartition { blocks: blocks.iter().map(|b| b.to_vec()).collect() }
    }

    #[test]
    fn groups_by_what_executed() {
        let cands: Vec<Candidate> = (0..3).map(|i| Candidate::new(i, vec![blaze_ir::BoundaryId(1)])).collect();
        let refs: Vec<&Candidate> = cands.iter().collect();
        let parts = [part(&[&[0, 1]]), part(&[&[0], &[1]]), part(&[&[1, 0]])];
        assert_eq!(group(&refs, &parts), vec![vec![0, 2], vec![1]]);
    }

    #[test]
    fn a_width_cached_by_position_is_not_the_same_plan_as_the_width_shared() {
        use blaze_ir::plan::{PlanStore, Settings};
        let shared = Candidate::with_settings(1, vec![], Settings::beam_width(Some(3)));
        let position = Candidate::with_settings(
            2,
            vec![],
            Settings { store: Some(PlanStore::ByPosition), ..Settings::beam_width(Some(3)) },
        );
        let again = Candidate::with_settings(3, vec![], Settings::beam_width(Some(3)));
        let same = part(&[&[0, 1]]);
        let parts = [same.clone(), same.clone(), same];
        assert_eq!(group(&[&shared, &position, &again], &parts), vec![vec![1, 3], vec![2]]);
    }

    #[test]
    fn a_merged_pair_that_executed_differently_is_a_false_merge() {
        let canon = Canonical {
            groups: vec![vec![0, 3], vec![1, 2]],
            stop_reason: "Saturated".into(),
            iterations: 1,
            egraph_nodes: 1,
        };
        let fps: BTreeMap<usize, String> =
            [(0, "a"), (3, "a"), (1, "b"), (2, "c")].into_iter().map(|(k, v)| (k, v.to_string())).collect();
        assert_eq!(false_merges(&canon, &fps), vec![(1, 2)]);
    }
}
