//! A candidate plan: a set of refused merges and the fusion-search settings they apply to, with
//! a one-line text form that round-trips.
use blaze_ir::BoundaryId;
use blaze_ir::plan::Settings;

/// `c7: b5 b9 b33` (candidate 7 cuts before operations 5, 9 and 33); `c0: burn` is Burn's plan;
/// `c9: fusion-off` runs nothing fused (Burn's `max_explorations = 0`, in this process);
/// `c4: blocks=2` is Burn's search with beam width 2, `c5: blocks=2 b9` that with one cut.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Candidate {
    pub id: usize,
    /// Sorted, without duplicates.
    pub cuts: Vec<BoundaryId>,
    /// Fusion off (no cuts then: nothing is fused at all).
    pub unfused: bool,
    /// Fusion-search settings (in-process ones: the beam width); default = Burn's.
    pub settings: Settings,
}

impl Candidate {
    pub fn new(id: usize, mut cuts: Vec<BoundaryId>) -> Self {
        cuts.sort();
        cuts.dedup();
        Self { id, cuts, unfused: false, settings: Settings::default() }
    }

    /// Burn's search with these settings and these cuts on top.
    pub fn with_settings(id: usize, cuts: Vec<BoundaryId>, settings: Settings) -> Self {
        Self { settings, ..Self::new(id, cuts) }
    }

    /// The fusion-off arm: what `BURN_FUSION_MAX_EXPLORATIONS=0` executes, raced in-process.
    pub fn fusion_off(id: usize) -> Self {
        Self { id, cuts: vec![], unfused: true, settings: Settings::default() }
    }

    /// This candidate's fusion run eagerly: what it installs into Burn's fuser (a captured
    /// candidate records what its eager counterpart executes).
    pub fn eager(&self) -> Self {
        Self { settings: self.settings.eager(), ..self.clone() }
    }

    /// This candidate's fusion, captured.
    pub fn captured(&self, id: usize) -> Self {
        Self { id, settings: self.settings.captured(), ..self.clone() }
    }

    pub fn is_captured(&self) -> bool {
        self.settings.is_captured()
    }

    pub(crate) fn is_burn(&self) -> bool {
        self.cuts.is_empty() && !self.unfused && self.settings.is_default()
    }

    pub fn to_text(&self) -> String {
        if self.unfused {
            return format!("c{}: fusion-off", self.id);
        }
        let mut words: Vec<String> = Vec::new();
        if !self.settings.is_default() {
            words.push(self.settings.to_text());
        }
        words.extend(self.cuts.iter().map(|c| c.to_string()));
        if words.is_empty() {
            return format!("c{}: burn", self.id);
        }
        format!("c{}: {}", self.id, words.join(" "))
    }

    pub fn from_text(line: &str) -> Result<Self, String> {
        let (id, rest) = line.split_once(':').ok_or_else(|| format!("`{line}`: expected `c<N>: <cuts>`"))?;
        let id = id
            .trim()
            .strip_prefix('c')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("`{id}` is not a candidate id"))?;
        let rest = rest.trim();
        if rest == "burn" {
            return Ok(Self::new(id, vec![]));
        }
        if rest == "fusion-off" {
            return Ok(Self::fusion_off(id));
        }
        let mut settings = Settings::default();
        let mut cuts = Vec::new();
        for word in rest.split_whitespace() {
            if !settings.read_word(word)? {
                cuts.push(word.parse()?);
            }
        }
        Ok(Self::with_settings(id, cuts, settings))
    }
}

/// Where a candidate came from: what a table records beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Burn's own plan.
    Burn,
    /// A cut plan the e-graph's request list (or the greedy search) asked for.
    Requested,
    /// Burn's search with other settings (a beam width, a plan store), no cuts.
    Settings,
    /// A cut plan traced at another beam width.
    CutsAtWidth(u32),
    /// Fusion off, in this process.
    FusionOff,
    /// The bundle's entry for the traced run (live mode).
    Bundle,
    /// The captured counterpart of another candidate (its id in the table that made it).
    Captured { of: usize },
}

/// Candidates by id. The table hands the ids out: a candidate's id is its position, whatever id
/// it was made with, so ids can be neither reserved nor renumbered by hand; a later stage that
/// keeps some of them makes a table of its own ([`CandidateTable::keep`]), origins carried over.
#[derive(Clone, Debug, Default)]
pub struct CandidateTable {
    cands: Vec<Candidate>,
    origins: Vec<Origin>,
}

impl CandidateTable {
    /// Adds `cand` under the next id; returns the id.
    pub fn add(&mut self, origin: Origin, cand: Candidate) -> usize {
        let id = self.cands.len();
        self.cands.push(Candidate { id, ..cand });
        self.origins.push(origin);
        id
    }

    /// Adds each of `cands`; returns their ids.
    pub fn extend(&mut self, origin: Origin, cands: impl IntoIterator<Item = Candidate>) -> std::ops::Range<usize> {
        let first = self.cands.len();
        for c in cands {
            self.add(origin, c);
        }
        first..self.cands.len()
    }

    /// A table of the candidates `ids` names, in that order, with new ids and their origins.
    pub fn keep(&self, ids: impl IntoIterator<Item = usize>) -> CandidateTable {
        let mut kept = CandidateTable::default();
        for id in ids {
            kept.add(self.origins[id], self.cands[id].clone());
        }
        kept
    }

    pub fn origin(&self, id: usize) -> Origin {
        self.origins[id]
    }

    pub fn len(&self) -> usize {
        self.cands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cands.is_empty()
    }

    pub fn as_slice(&self) -> &[Candidate] {
        &self.cands
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Candidate> {
        self.cands.iter()
    }

    /// The candidates, ids as handed out.
    pub fn into_vec(self) -> Vec<Candidate> {
        self.cands
    }
}

impl std::ops::Index<usize> for CandidateTable {
    type Output = Candidate;

    fn index(&self, id: usize) -> &Candidate {
        &self.cands[id]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_hands_out_ids_and_keeps_origins_when_a_stage_keeps_some() {
        let mut table = CandidateTable::default();
        assert_eq!(table.add(Origin::Burn, Candidate::new(7, vec![])), 0);
        let cuts = table.extend(
            Origin::Requested,
            [Candidate::new(0, vec![BoundaryId(3)]), Candidate::new(0, vec![BoundaryId(5)])],
        );
        assert_eq!(cuts, 1..3);
        let off = table.add(Origin::FusionOff, Candidate::fusion_off(99));
        let cap = table.add(Origin::Captured { of: 2 }, table[2].captured(0));
        assert_eq!((off, cap), (3, 4));
        assert_eq!(table.iter().map(|c| c.id).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
        assert_eq!(table[2].to_text(), "c2: b5");
        let kept = table.keep([0, 2, 4]);
        assert_eq!(kept.iter().map(|c| c.to_text()).collect::<Vec<_>>().len(), 3);
        assert_eq!(kept[1].to_text(), "c1: b5");
        assert_eq!(
            (kept.origin(0), kept.origin(1), kept.origin(2)),
            (Origin::Burn, Origin::Requested, Origin::Captured { of: 2 })
        );
        assert!(kept[2].is_captured());
    }

    #[test]
    fn text_round_trips() {
        let wide = Settings::beam_width(Some(8));
        for c in [
            Candidate::new(0, vec![]),
            Candidate::fusion_off(3),
            Candidate::new(7, vec![BoundaryId(33), BoundaryId(5), BoundaryId(9)]),
            Candidate::with_settings(4, vec![], wide),
            Candidate::with_settings(5, vec![BoundaryId(9)], wide),
        ] {
            assert_eq!(Candidate::from_text(&c.to_text()), Ok(c.clone()));
        }
        assert_eq!(Candidate::new(7, vec![BoundaryId(9), BoundaryId(5)]).to_text(), "c7: b5 b9");
        assert!(Candidate::from_text("x: b1").is_err());
        assert!(!Candidate::fusion_off(3).is_burn() && Candidate::new(0, vec![]).is_burn());
        assert!(!Candidate::with_settings(4, vec![], wide).is_burn());
        assert_eq!(Candidate::with_settings(5, vec![BoundaryId(9)], wide).to_text(), "c5: blocks=8 b9");
        assert!(Candidate::from_text("c1: blocks=0").is_err());
    }
}
