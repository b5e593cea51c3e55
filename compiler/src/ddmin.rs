//! Delta debugging (Zeller's ddmin) for a *fixing* set: the smallest set of suspects whose
//! removal (for Blaze: unfusing those fused blocks) makes a check pass. Device-free; the check is
//! a closure, so the search is unit-tested with fake culprits.
//!
//! Precondition: the check passes with every suspect removed. Result: 1-minimal, i.e. putting
//! any single member back makes the check fail again. Several culprits are found together.
use std::collections::BTreeMap;

/// What one probe said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Within tolerance with these suspects removed.
    Pass,
    /// Still differs.
    Fail,
}

/// The search's outcome, with the probes it took (a probe of a set already probed is reused).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Minimal<T> {
    pub set: Vec<T>,
    pub probes: usize,
}

/// Finds a 1-minimal subset of `suspects` for which `check` passes. `check` must pass on the
/// whole set (the caller verifies that first). At most `max_probes` probes; when they run out,
/// the smallest passing set found so far is returned (still passing, maybe not minimal).
pub(crate) fn ddmin<T: Clone + Ord>(
    suspects: &[T],
    max_probes: usize,
    mut check: impl FnMut(&[T]) -> Probe,
) -> (Minimal<T>, bool) {
    let mut memo: BTreeMap<Vec<T>, Probe> = BTreeMap::new();
    let mut probes = 0;
    let mut test = |set: &[T], probes: &mut usize| -> Option<Probe> {
        let key = set.to_vec();
        if let Some(p) = memo.get(&key) {
            return Some(*p);
        }
        if *probes >= max_probes {
            return None;
        }
        *probes += 1;
        let p = check(set);
        memo.insert(key, p);
        Some(p)
    };
    let mut current: Vec<T> = suspects.to_vec();
    current.sort();
    let mut n = 2usize;
    let mut exhausted = false;
    'outer: while current.len() > 1 {
        let parts = split(&current, n);
        for part in &parts {
            match test(part, &mut probes) {
                Some(Probe::Pass) => {
                    current = part.clone();
                    n = 2;
                    continue 'outer;
                }
                Some(Probe::Fail) => {}
                None => {
                    exhausted = true;
                    break 'outer;
                }
            }
        }
        if n > 2 {
            for i in 0..parts.len() {
                let complement: Vec<T> =
                    parts.iter().enumerate().filter(|(j, _)| *j != i).flat_map(|(_, p)| p.iter().cloned()).collect();
                match test(&complement, &mut probes) {
                    Some(Probe::Pass) => {
                        current = complement;
                        n = (n - 1).max(2);
                        continue 'outer;
                    }
                    Some(Probe::Fail) => {}
                    None => {
                        exhausted = true;
                        break 'outer;
                    }
                }
            }
        }
        if n >= current.len() {
            break;
        }
        n = (2 * n).min(current.len());
    }
    (Minimal { set: current, probes }, exhausted)
}

/// `items` in `n` contiguous parts of near-equal size (no empty part).
fn split<T: Clone>(items: &[T], n: usize) -> Vec<Vec<T>> {
    let n = n.clamp(1, items.len().max(1));
    let (base, extra) = (items.len() / n, items.len() % n);
    let mut out = Vec::with_capacity(n);
    let mut at = 0;
    for i in 0..n {
        let len = base + usize::from(i < extra);
        out.push(items[at..at + len].to_vec());
        at += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Passes when every culprit is removed.
    fn culprits(c: &'static [u32]) -> impl FnMut(&[u32]) -> Probe {
        move |set| if c.iter().all(|x| set.contains(x)) { Probe::Pass } else { Probe::Fail }
    }

    #[test]
    fn finds_a_single_culprit_in_few_probes() {
        let suspects: Vec<u32> = (0..64).collect();
        let (m, exhausted) = ddmin(&suspects, 1000, culprits(&[37]));
        assert_eq!(m.set, vec![37]);
        assert!(!exhausted);
        assert!(m.probes <= 2 * 6 + 2, "{} probes for 64 suspects", m.probes);
    }

    #[test]
    fn finds_two_culprits_together() {
        let suspects: Vec<u32> = (0..40).collect();
        let (m, _) = ddmin(&suspects, 1000, culprits(&[3, 29]));
        assert_eq!(m.set, vec![3, 29]);
    }

    #[test]
    fn the_result_is_one_minimal() {
        let suspects: Vec<u32> = (0..20).collect();
        let mut check = culprits(&[1, 2, 17]);
        let (m, _) = ddmin(&suspects, 1000, &mut check);
        for i in 0..m.set.len() {
            let mut less = m.set.clone();
            less.remove(i);
            assert_eq!(check(&less), Probe::Fail, "removing {} still passes", m.set[i]);
        }
    }

    #[test]
    fn a_probe_budget_stops_the_search_with_a_passing_set() {
        let suspects: Vec<u32> = (0..64).collect();
        let (m, exhausted) = ddmin(&suspects, 3, culprits(&[37]));
        assert!(exhausted && m.probes == 3);
        assert!(m.set.contains(&37));
    }

    #[test]
    fn split_covers_everything_without_empty_parts() {
        assert_eq!(split(&[1, 2, 3, 4, 5], 2), vec![vec![1, 2, 3], vec![4, 5]]);
        assert_eq!(split(&[1, 2], 5), vec![vec![1], vec![2]]);
    }
}
