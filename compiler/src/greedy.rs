//! The greedy path the seed uses in live training: start from Burn's plan, and each round try
//! adding one more refused merge (a few positions spread over the step); keep the best
//! challenger only if it wins against the incumbent; stop when a round cannot beat the last.
//!
//! What a round adds is a *unit*: one cut point ([`single_cuts`]), or one cut-point class, the
//! same place in every layer (`tune --greedy K --classes`), so a decision
//! made for one layer is made for all of them.
use blaze_ir::BoundaryId;

/// Why the greedy path stopped, and the plans it kept (Burn's plan first).
#[derive(Clone, Debug, PartialEq)]
pub struct GreedyPath {
    pub kept: Vec<Vec<BoundaryId>>,
    pub challengers_tried: usize,
    pub stop_reason: String,
}

/// Every cut point as a unit of its own.
pub(crate) fn single_cuts(points: &[BoundaryId]) -> Vec<Vec<BoundaryId>> {
    points.iter().map(|&p| vec![p]).collect()
}

/// `race(incumbent, challengers)` returns the index of a challenger that beats the incumbent
/// beyond the noise band, or `None`. Each challenger is the incumbent plus one unit not yet in
/// it (its cut points, sorted).
pub fn greedy(
    units: &[Vec<BoundaryId>],
    per_round: usize,
    max_rounds: usize,
    mut race: impl FnMut(&[BoundaryId], &[Vec<BoundaryId>]) -> Option<usize>,
) -> GreedyPath {
    let mut kept = vec![Vec::new()];
    let mut taken: Vec<usize> = Vec::new();
    let mut tried = 0;
    for round in 0..max_rounds {
        let incumbent = kept.last().expect("Burn's plan is kept first").clone();
        let picks = pool(units.len(), &taken, per_round, round);
        let challengers: Vec<Vec<BoundaryId>> = picks
            .iter()
            .map(|&u| {
                let mut set = incumbent.clone();
                set.extend(units[u].iter().copied().filter(|p| !incumbent.contains(p)));
                set.sort();
                set
            })
            .collect();
        if challengers.is_empty() {
            return GreedyPath {
                kept,
                challengers_tried: tried,
                stop_reason: "no cut point or class left to add".into(),
            };
        }
        tried += challengers.len();
        match race(&incumbent, &challengers) {
            Some(i) => {
                kept.push(challengers[i].clone());
                taken.push(picks[i]);
            }
            None => {
                return GreedyPath {
                    kept,
                    challengers_tried: tried,
                    stop_reason: format!("round {} could not beat the last", round + 1),
                };
            }
        }
    }
    GreedyPath { kept, challengers_tried: tried, stop_reason: format!("round limit {max_rounds}") }
}

/// Up to `n` of the `units` (indices, in step order) not yet taken, spread evenly over the
/// step, shifted each round so later rounds try other positions.
fn pool(units: usize, taken: &[usize], n: usize, round: usize) -> Vec<usize> {
    let free: Vec<usize> = (0..units).filter(|u| !taken.contains(u)).collect();
    if free.len() <= n {
        return free;
    }
    let stride = free.len() / n;
    (0..n).map(|k| free[(k * stride + round % stride.max(1)) % free.len()]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(v: &[u64]) -> Vec<BoundaryId> {
        v.iter().map(|&n| BoundaryId(n)).collect()
    }

    /// Fake race for the planner's logic only: cost = 10 - number of even cuts + odd cuts; a
    /// challenger wins if it is cheaper by more than a band of 0.5.
    fn fake_race(inc: &[BoundaryId], ch: &[Vec<BoundaryId>]) -> Option<usize> {
        let cost = |s: &[BoundaryId]| 10.0 - s.iter().map(|c| if c.0 % 2 == 0 { 1.0 } else { -1.0 }).sum::<f64>();
        let best = (0..ch.len()).min_by(|&a, &c| cost(&ch[a]).total_cmp(&cost(&ch[c])))?;
        (cost(inc) - cost(&ch[best]) > 0.5).then_some(best)
    }

    #[test]
    fn keeps_winning_cuts_one_per_round_and_stops_when_a_round_cannot_win() {
        let path = greedy(&single_cuts(&b(&[2, 4, 5, 7])), 4, 10, fake_race);
        assert_eq!(path.kept, vec![b(&[]), b(&[2]), b(&[2, 4])]);
        assert_eq!(path.stop_reason, "round 3 could not beat the last");
        assert_eq!(path.challengers_tried, 4 + 3 + 2);
    }

    /// A class is added whole: its cut points in every layer at once.
    #[test]
    fn adds_a_whole_class_per_round() {
        // Class A = {2, 12, 22} (even: each cut helps), B = {5, 15} (odd: each hurts), C = {8}.
        let units = vec![b(&[2, 12, 22]), b(&[5, 15]), b(&[8])];
        let path = greedy(&units, 3, 10, fake_race);
        assert_eq!(path.kept, vec![b(&[]), b(&[2, 12, 22]), b(&[2, 8, 12, 22])]);
        assert_eq!(path.stop_reason, "round 3 could not beat the last");
        assert_eq!(path.challengers_tried, 3 + 2 + 1);
    }

    #[test]
    fn pool_spreads_and_skips_taken_units() {
        assert_eq!(pool(12, &[0], 3, 0), vec![1, 4, 7]);
        assert_eq!(pool(12, &[0], 3, 1), vec![2, 5, 8]);
        assert_eq!(pool(3, &[1], 5, 0), vec![0, 2]);
    }
}
