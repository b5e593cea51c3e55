//! A candidate plan: a set of refused merges, with a one-line text form that round-trips.
use blaze_ir::BoundaryId;

/// `c7: b5 b9 b33` (candidate 7 cuts before operations 5, 9 and 33); `c0: burn` is Burn's plan;
/// `c9: fusion-off` runs nothing fused (Burn's `max_explorations = 0`, in this process).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Candidate {
    pub id: usize,
    /// Sorted, without duplicates.
    pub cuts: Vec<BoundaryId>,
    /// Fusion off (no cuts then: nothing is fused at all).
    pub unfused: bool,
}

impl Candidate {
    pub fn new(id: usize, mut cuts: Vec<BoundaryId>) -> Self {
        cuts.sort();
        cuts.dedup();
        Self { id, cuts, unfused: false }
    }

    /// The fusion-off arm: what `BURN_FUSION_MAX_EXPLORATIONS=0` executes, raced in-process.
    pub fn fusion_off(id: usize) -> Self {
        Self { id, cuts: vec![], unfused: true }
    }

    pub fn is_burn(&self) -> bool {
        self.cuts.is_empty() && !self.unfused
    }

    pub fn to_text(&self) -> String {
        if self.unfused {
            return format!("c{}: fusion-off", self.id);
        }
        if self.cuts.is_empty() {
            return format!("c{}: burn", self.id);
        }
        let cuts: Vec<String> = self.cuts.iter().map(|c| c.to_string()).collect();
        format!("c{}: {}", self.id, cuts.join(" "))
    }

    pub fn from_text(line: &str) -> Result<Self, String> {
        let (id, rest) = line.split_once(':').ok_or_else(|| format!("`{line}`: expected `c<N>: <cuts>`"))?;
        let id = id.trim().strip_prefix('c').and_then(|n| n.parse().ok()).ok_or_else(|| format!("`{id}` is not a candidate id"))?;
        let rest = rest.trim();
        if rest == "burn" {
            return Ok(Self::new(id, vec![]));
        }
        if rest == "fusion-off" {
            return Ok(Self::fusion_off(id));
        }
        let cuts = rest.split_whitespace().map(str::parse).collect::<Result<Vec<_>, _>>()?;
        Ok(Self::new(id, cuts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        for c in [Candidate::new(0, vec![]), Candidate::fusion_off(3), Candidate::new(7, vec![BoundaryId(33), BoundaryId(5), BoundaryId(9)])] {
            assert_eq!(Candidate::from_text(&c.to_text()), Ok(c.clone()));
        }
        assert_eq!(Candidate::new(7, vec![BoundaryId(9), BoundaryId(5)]).to_text(), "c7: b5 b9");
        assert!(Candidate::from_text("x: b1").is_err());
        assert!(!Candidate::fusion_off(3).is_burn() && Candidate::new(0, vec![]).is_burn());
    }
}
