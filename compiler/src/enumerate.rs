//! Enumerate candidate plans from a trace. Burn's plan is always candidate 0, so a tuned result
//! can never be worse than Burn's.
//!
//! * at most `EXHAUSTIVE_MAX` live cut points: every subset;
//! * more: a sample within `budget`, stratified by number of cuts (1, 2, 4, … up to all) and by
//!   position (one cut drawn from each of k equal slices of the cut-point list), reproducible
//!   from `seed`;
//! * the greedy path is driven by measurement and lives in `tune` (it adds one refused merge
//!   per round and keeps it only if it wins).
use crate::candidate::Candidate;
use blaze_ir::BoundaryId;
use std::collections::BTreeSet;

pub(crate) const EXHAUSTIVE_MAX: usize = 10;

/// Candidate plans over `cut_points` (Burn's plan first). Deterministic for a given seed.
pub fn enumerate(cut_points: &[BoundaryId], budget: usize, seed: u64) -> Vec<Candidate> {
    let sets =
        if cut_points.len() <= EXHAUSTIVE_MAX { all_subsets(cut_points) } else { sampled(cut_points, budget, seed) };
    sets.into_iter().enumerate().map(|(i, cuts)| Candidate::new(i, cuts)).collect()
}

fn all_subsets(points: &[BoundaryId]) -> Vec<Vec<BoundaryId>> {
    (0u32..1 << points.len())
        .map(|mask| points.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, p)| *p).collect())
        .collect()
}

fn sampled(points: &[BoundaryId], budget: usize, seed: u64) -> Vec<Vec<BoundaryId>> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut strata = Vec::new();
    let mut k = 1;
    while k < points.len() {
        strata.push(k);
        k *= 2;
    }
    strata.push(points.len());
    let mut seen = BTreeSet::new();
    let mut out = vec![Vec::new()];
    seen.insert(Vec::new());
    let mut attempts = 0;
    while out.len() < budget.max(1) && attempts < budget * 20 {
        attempts += 1;
        let k = strata[attempts % strata.len()];
        let set = stratified_draw(points, k, &mut rng);
        if seen.insert(set.clone()) {
            out.push(set);
        }
    }
    out
}

/// One cut from each of `k` equal slices of `points` (in order), so cuts spread over the step.
fn stratified_draw(points: &[BoundaryId], k: usize, rng: &mut Rng) -> Vec<BoundaryId> {
    (0..k)
        .map(|slice| {
            let lo = slice * points.len() / k;
            let hi = ((slice + 1) * points.len() / k).max(lo + 1);
            points[lo + (rng.next() as usize) % (hi - lo)]
        })
        .collect()
}

/// xorshift64*: tiny, seeded, the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(n: u64) -> Vec<BoundaryId> {
        (1..=n).map(|i| BoundaryId(i * 3)).collect()
    }

    #[test]
    fn small_spaces_are_exhaustive_with_burn_first() {
        let c = enumerate(&points(4), 100, 0);
        assert_eq!(c.len(), 16);
        assert!(c[0].is_burn());
        let distinct: BTreeSet<_> = c.iter().map(|c| c.cuts.clone()).collect();
        assert_eq!(distinct.len(), 16);
    }

    #[test]
    fn large_spaces_are_sampled_within_budget_reproducibly() {
        let a = enumerate(&points(200), 33, 7);
        assert_eq!(a.len(), 33);
        assert!(a[0].is_burn());
        assert_eq!(a, enumerate(&points(200), 33, 7), "same seed, same list");
        assert_ne!(a, enumerate(&points(200), 33, 8), "the seed matters");
        let sizes: BTreeSet<usize> = a.iter().map(|c| c.cuts.len()).collect();
        assert!(sizes.contains(&1) && sizes.contains(&200) && sizes.len() >= 8, "strata by size: {sizes:?}");
    }

    #[test]
    fn stratified_draw_spreads_over_positions() {
        let pts = points(100);
        let set = stratified_draw(&pts, 4, &mut Rng(5));
        for (slice, cut) in set.iter().enumerate() {
            let at = pts.iter().position(|p| p == cut).unwrap();
            assert!(at >= slice * 25 && at < (slice + 1) * 25);
        }
    }
}
