//! Shared fixtures for the rule tests: a synthetic step with known blocks.
use super::*;
use blaze_ir::BoundaryId;

/// Blocks {1,2,3}, {6,7}, {9,12}, {13,14,15}, {16,17,18}; 14 is a reduction; 17 never explored.
pub(crate) fn facts() -> Arc<Facts> {
    let mut f = Facts::default();
    for (b, members) in
        [(0u32, vec![1u32, 2, 3]), (1, vec![6, 7]), (2, vec![9, 12]), (3, vec![13, 14, 15]), (4, vec![16, 17, 18])]
    {
        f.blocks.insert(b, members);
    }
    f.live = (0..20u64).filter(|&n| n != 17).collect();
    f.reductions.insert(14);
    Arc::new(f)
}

pub(crate) fn cand(cuts: &[u64]) -> Candidate {
    // Unsorted and with duplicates as given: the `plan-as-set` rule must do the sorting.
    Candidate {
        id: 0,
        cuts: cuts.iter().map(|&c| BoundaryId(c)).collect(),
        unfused: false,
        settings: Default::default(),
    }
}

/// Whether the e-graph puts `a` and `b` in one class.
pub(crate) fn same(facts: &Arc<Facts>, a: &Candidate, b: &Candidate) -> bool {
    let mut a = a.clone();
    let mut b = b.clone();
    a.id = 0;
    b.id = 1;
    canonicalise(&[a, b], facts.clone()).groups.len() == 1
}

#[test]
fn runner_records_why_it_stopped_and_is_deterministic() {
    let cands: Vec<Candidate> = [&[][..], &[2], &[10], &[11], &[2, 7], &[7, 2], &[5]]
        .iter()
        .enumerate()
        .map(|(i, c)| Candidate {
            id: i,
            cuts: c.iter().map(|&n| BoundaryId(n)).collect(),
            unfused: false,
            settings: Default::default(),
        })
        .collect();
    let a = canonicalise(&cands, facts());
    assert_eq!(a.stop_reason, "Saturated");
    assert_eq!(a.groups, vec![vec![0, 6], vec![1], vec![2, 3], vec![4, 5]]);
    assert_eq!(a, canonicalise(&cands, facts()));
}

#[test]
fn reduce_rule_saturates() {
    let cands = vec![cand(&[14]), Candidate::new(1, vec![BoundaryId(14), BoundaryId(15)])];
    let c = canonicalise(&cands, facts());
    assert_eq!(c.stop_reason, "Saturated");
    assert_eq!(c.groups.len(), 1);
}
