//! The bundle: one file that ships a model's plans, one entry per (device, Burn version,
//! regime, shapes), so a program that trains and serves, or runs on two GPUs, loads one file
//! and gets the entry that fits the run. Each entry is a whole plan file with its contract, so
//! an entry is validated exactly as a plan is.
//!
//! Versions: like plans, `format_version` is read first; a plan file (any readable plan
//! version) is read as a bundle of one entry, so old single-plan files stay loadable wherever a
//! bundle is accepted.
use crate::plan::{Contract, PlanError, PlanFile};
use serde::{Deserialize, Serialize};

pub const BUNDLE_FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    pub format_version: u32,
    /// The plans, at most one per [`EntryKey`].
    pub entries: Vec<PlanFile>,
}

/// What an entry is for: two entries with the same key would be ambiguous.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EntryKey {
    pub model: String,
    pub adapter: String,
    pub backend: String,
    pub compiler: String,
    pub burn_version: String,
    pub regime: String,
    pub shapes: String,
}

impl EntryKey {
    pub fn of(c: &Contract) -> Self {
        Self {
            model: c.model.clone(),
            adapter: c.device.adapter.clone(),
            backend: c.device.backend.clone(),
            compiler: c.device.compiler.clone(),
            burn_version: c.burn_version.clone(),
            regime: c.regime.to_string(),
            shapes: c.shapes.clone(),
        }
    }
}

impl std::fmt::Display for EntryKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} [{}] on {} ({}, {}), Burn {}", self.model, self.regime, self.shapes, self.adapter, self.backend, self.compiler, self.burn_version)
    }
}

impl Bundle {
    pub fn new() -> Self {
        Self { format_version: BUNDLE_FORMAT_VERSION, entries: Vec::new() }
    }

    /// Parses a bundle, or a plan file as a bundle of one entry; validates every entry and
    /// refuses two entries for the same key.
    pub fn parse(text: &str) -> Result<Self, PlanError> {
        if text.trim().is_empty() {
            return Err(PlanError::Empty);
        }
        // Bundles are written with their struct name; anything else is read as a plan file.
        if !text.trim_start().starts_with("Bundle") {
            return PlanFile::parse(text).map(|plan| Self { format_version: BUNDLE_FORMAT_VERSION, entries: vec![plan] });
        }
        #[derive(Deserialize)]
        #[serde(rename = "Bundle")]
        struct Version {
            format_version: u32,
        }
        let version: Version = ron::from_str(text).map_err(|e| PlanError::Malformed(e.to_string()))?;
        if version.format_version != BUNDLE_FORMAT_VERSION {
            return Err(PlanError::UnknownVersion { found: version.format_version, oldest: BUNDLE_FORMAT_VERSION, newest: BUNDLE_FORMAT_VERSION });
        }
        let bundle: Bundle = ron::from_str(text).map_err(|e| PlanError::Malformed(e.to_string()))?;
        bundle.validate()?;
        Ok(bundle)
    }

    /// Reads a bundle (or a plan file) in bounded time and memory.
    pub fn read(path: &std::path::Path) -> Result<Self, PlanError> {
        let text = crate::file::read_text(path).map_err(|reason| PlanError::Unreadable { path: path.display().to_string(), reason })?;
        Self::parse(&text)
    }

    pub fn validate(&self) -> Result<(), PlanError> {
        let mut keys = std::collections::BTreeSet::new();
        for plan in &self.entries {
            plan.validate()?;
            let key = EntryKey::of(&plan.contract);
            if !keys.insert(key.clone()) {
                return Err(PlanError::DuplicateEntries(key.to_string()));
            }
        }
        Ok(())
    }

    /// Adds `plan`, replacing the entry with the same key; returns whether one was replaced.
    pub fn upsert(&mut self, plan: PlanFile) -> bool {
        let key = EntryKey::of(&plan.contract);
        match self.entries.iter_mut().find(|p| EntryKey::of(&p.contract) == key) {
            Some(slot) => {
                *slot = plan;
                true
            }
            None => {
                self.entries.push(plan);
                self.entries.sort_by_key(|p| EntryKey::of(&p.contract));
                false
            }
        }
    }

    /// The entry whose contract fits `actual` (an empty `actual.op_stream` is not checked yet).
    /// Otherwise the reason, naming what this run is and what the bundle holds.
    pub fn select(&self, actual: &Contract) -> Result<&PlanFile, PlanError> {
        if let Some(plan) = self.entries.iter().find(|p| p.check_contract(actual).is_ok()) {
            return Ok(plan);
        }
        if let [only] = self.entries.as_slice() {
            // One entry (a plan file): its own mismatch is the clearest reason.
            only.check_contract(actual)?;
        }
        let held: Vec<String> = self.entries.iter().map(|p| EntryKey::of(&p.contract).to_string()).collect();
        Err(PlanError::NoEntry { run: EntryKey::of(actual).to_string(), held: if held.is_empty() { "none".into() } else { held.join("; ") } })
    }

    pub fn to_ron(&self) -> String {
        let config = ron::ser::PrettyConfig::new().depth_limit(5).struct_names(true);
        ron::ser::to_string_pretty(self, config).expect("bundles always serialise")
    }
}

impl Default for Bundle {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Regime;
    use crate::BoundaryId;

    fn plan(regime: Regime, adapter: &str, cut: u64) -> PlanFile {
        let mut c = crate::plan::tests::contract();
        c.regime = regime;
        c.device.adapter = adapter.into();
        let mut p = PlanFile::burn_default(c, vec![BoundaryId(3), BoundaryId(7)]);
        p.cuts = vec![BoundaryId(cut)];
        p
    }

    fn run(regime: Regime, adapter: &str) -> Contract {
        let mut c = crate::plan::tests::contract();
        c.regime = regime;
        c.device.adapter = adapter.into();
        c.op_stream = String::new();
        c
    }

    #[test]
    fn round_trip_and_selection_by_device_and_regime() {
        let mut b = Bundle::new();
        assert!(!b.upsert(plan(Regime::Training, "llvmpipe", 3)));
        assert!(!b.upsert(plan(Regime::Forward, "llvmpipe", 7)));
        assert!(!b.upsert(plan(Regime::Training, "NVIDIA H200", 7)));
        assert!(b.upsert(plan(Regime::Training, "llvmpipe", 7)), "same key: replaced");
        assert_eq!(b.entries.len(), 3);
        let b = Bundle::parse(&b.to_ron()).unwrap();
        assert_eq!(b.select(&run(Regime::Training, "llvmpipe")).unwrap().cuts, vec![BoundaryId(7)]);
        assert_eq!(b.select(&run(Regime::Forward, "llvmpipe")).unwrap().contract.regime, Regime::Forward);
        assert_eq!(b.select(&run(Regime::Training, "NVIDIA H200")).unwrap().contract.device.adapter, "NVIDIA H200");
        let err = b.select(&run(Regime::Forward, "NVIDIA H200")).unwrap_err().to_string();
        assert!(err.starts_with("no entry of the bundle fits this run (attention-d257 forward [batch=2 seq=32 d=257] on NVIDIA H200"), "{err}");
        assert!(err.contains("; it holds: ") && err.contains("attention-d257 forward [batch=2 seq=32 d=257] on llvmpipe (vulkan, wgsl), Burn 0.22.1"), "{err}");
    }

    #[test]
    fn a_plan_file_reads_as_a_bundle_of_one_and_keeps_its_own_mismatch_reason() {
        let b = Bundle::parse(&plan(Regime::Training, "llvmpipe", 3).to_ron()).unwrap();
        assert_eq!(b.entries.len(), 1);
        let err = b.select(&run(Regime::Training, "NVIDIA H200")).unwrap_err();
        assert!(err.to_string().contains("made for device adapter `llvmpipe`"), "{err}");
    }

    #[test]
    fn duplicate_entries_newer_versions_and_bad_entries_are_refused() {
        let p = plan(Regime::Training, "llvmpipe", 3);
        let two = Bundle { format_version: 1, entries: vec![p.clone(), p.clone()] };
        assert!(matches!(Bundle::parse(&two.to_ron()), Err(PlanError::DuplicateEntries(_))));
        let newer = Bundle { format_version: 9, entries: vec![] }.to_ron();
        assert_eq!(Bundle::parse(&newer), Err(PlanError::UnknownVersion { found: 9, oldest: 1, newest: 1 }));
        let mut bad = p;
        bad.cuts = vec![BoundaryId(5)];
        let one = Bundle { format_version: 1, entries: vec![bad] };
        assert!(matches!(Bundle::parse(&one.to_ron()), Err(PlanError::UnknownBoundaries(_))));
        assert_eq!(Bundle::parse(" "), Err(PlanError::Empty));
    }
}
