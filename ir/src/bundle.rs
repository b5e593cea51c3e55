//! The bundle: one file that ships a model's plans, one entry per (device, Burn version,
//! regime, shapes), so a program that trains and serves, or runs on two GPUs, loads one file
//! and gets the entry that fits the run. Each entry is a whole plan file with its contract, so
//! an entry is validated exactly as a plan is.
//!
//! Versions: like plans, `format_version` is read first; a plan file (any readable plan
//! version) is read as a bundle of one entry, so old single-plan files stay loadable wherever a
//! bundle is accepted. Version 2 adds `autotune`: per device, a CubeCL environment bundle (the
//! autotune decisions the tune's kernels used) in a file beside the bundle, imported into
//! CubeCL's cache at start-up so a fresh machine skips autotune for every known key. A bundle
//! without autotune files is written as version 1, which older Blaze builds read.
use crate::plan::{Contract, DeviceInfo, PlanError, PlanFile};
use serde::{Deserialize, Serialize};

pub const BUNDLE_FORMAT_VERSION: u32 = 2;
pub const OLDEST_READABLE_BUNDLE: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    pub format_version: u32,
    /// The plans, at most one per [`EntryKey`].
    pub entries: Vec<PlanFile>,
    /// CubeCL autotune decisions, at most one file per device and Burn version (version 2 on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub autotune: Vec<AutotuneFile>,
}

/// A CubeCL environment bundle holding the autotune decisions made on one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutotuneFile {
    pub device: DeviceInfo,
    pub burn_version: String,
    /// Path relative to the bundle's directory (no `..`, not absolute).
    pub file: String,
    /// Decisions it holds (for reports; the import counts again).
    pub decisions: usize,
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
        write!(
            f,
            "{} {} [{}] on {} ({}, {}), Burn {}",
            self.model, self.regime, self.shapes, self.adapter, self.backend, self.compiler, self.burn_version
        )
    }
}

impl Bundle {
    pub fn new() -> Self {
        Self { format_version: BUNDLE_FORMAT_VERSION, entries: Vec::new(), autotune: Vec::new() }
    }

    /// Parses a bundle, or a plan file as a bundle of one entry; validates every entry and
    /// refuses two entries for the same key.
    pub fn parse(text: &str) -> Result<Self, PlanError> {
        if text.trim().is_empty() {
            return Err(PlanError::Empty);
        }
        // Bundles are written with their struct name; anything else is read as a plan file.
        if !text.trim_start().starts_with("Bundle") {
            return PlanFile::parse(text).map(|plan| Self { entries: vec![plan], ..Self::new() });
        }
        #[derive(Deserialize)]
        #[serde(rename = "Bundle")]
        struct Version {
            format_version: u32,
        }
        let version: Version = ron::from_str(text).map_err(|e| PlanError::Malformed(e.to_string()))?;
        if !(OLDEST_READABLE_BUNDLE..=BUNDLE_FORMAT_VERSION).contains(&version.format_version) {
            return Err(PlanError::UnknownVersion {
                found: version.format_version,
                oldest: OLDEST_READABLE_BUNDLE,
                newest: BUNDLE_FORMAT_VERSION,
            });
        }
        let bundle: Bundle = ron::from_str(text).map_err(|e| PlanError::Malformed(e.to_string()))?;
        bundle.validate()?;
        Ok(bundle)
    }

    /// Reads a bundle (or a plan file) in bounded time and memory.
    pub fn read(path: &std::path::Path) -> Result<Self, PlanError> {
        let text = crate::file::read_text(path)
            .map_err(|reason| PlanError::Unreadable { path: path.display().to_string(), reason })?;
        Self::parse(&text)
    }

    pub fn validate(&self) -> Result<(), PlanError> {
        let mut keys = std::collections::BTreeSet::new();
        for plan in &self.entries {
            plan.check_version()?;
            plan.validate()?;
            let key = EntryKey::of(&plan.contract);
            if !keys.insert(key.clone()) {
                return Err(PlanError::DuplicateEntries(key.to_string()));
            }
        }
        if self.format_version < 2 && !self.autotune.is_empty() {
            return Err(PlanError::Malformed(
                "bundle version 1 cannot hold autotune files (they came with version 2)".into(),
            ));
        }
        let mut devices = std::collections::BTreeSet::new();
        for a in &self.autotune {
            check_relative(&a.file)?;
            if !devices.insert((
                a.device.adapter.clone(),
                a.device.backend.clone(),
                a.device.compiler.clone(),
                a.burn_version.clone(),
            )) {
                return Err(PlanError::DuplicateEntries(format!(
                    "autotune decisions of {} ({}, {}), Burn {}",
                    a.device.adapter, a.device.backend, a.device.compiler, a.burn_version
                )));
            }
        }
        Ok(())
    }

    /// Adds or replaces the autotune file of `file.device`; returns whether one was replaced.
    pub fn upsert_autotune(&mut self, file: AutotuneFile) -> bool {
        let same = |a: &AutotuneFile| a.device == file.device && a.burn_version == file.burn_version;
        let replaced = self.autotune.iter().any(same);
        self.autotune.retain(|a| !same(a));
        self.autotune.push(file);
        replaced
    }

    /// The autotune file made on `device` with `burn_version`, if the bundle holds one.
    pub fn autotune_for(&self, device: &DeviceInfo, burn_version: &str) -> Option<&AutotuneFile> {
        self.autotune.iter().find(|a| a.device == *device && a.burn_version == burn_version)
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
        Err(PlanError::NoEntry {
            run: EntryKey::of(actual).to_string(),
            held: if held.is_empty() { "none".into() } else { held.join("; ") },
        })
    }

    /// RON text, in the oldest version that holds it (1 without autotune files).
    pub fn to_ron(&self) -> String {
        let config = ron::ser::PrettyConfig::new().depth_limit(5).struct_names(true);
        let required = if self.autotune.is_empty() { OLDEST_READABLE_BUNDLE } else { 2 };
        // A bundle built here (current version) is written in the oldest version that holds it;
        // an explicitly older or newer one keeps its number (at least what it needs).
        let version =
            if self.format_version == BUNDLE_FORMAT_VERSION { required } else { self.format_version.max(required) };
        let written = Bundle { format_version: version, ..self.clone() };
        ron::ser::to_string_pretty(&written, config).expect("bundles always serialise")
    }
}

/// An autotune file's path must stay beside the bundle: relative, without `..`.
fn check_relative(file: &str) -> Result<(), PlanError> {
    let path = std::path::Path::new(file);
    let escapes = path.components().any(|c| !matches!(c, std::path::Component::Normal(_)));
    if file.is_empty() || escapes {
        return Err(PlanError::Malformed(format!(
            "autotune file `{file}` must be a relative path inside the bundle's directory"
        )));
    }
    Ok(())
}

impl Default for Bundle {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BoundaryId;
    use crate::plan::Regime;

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
        assert!(
            err.starts_with(
                "no entry of the bundle fits this run (attention-d257 forward [batch=2 seq=32 d=257] on NVIDIA H200"
            ),
            "{err}"
        );
        assert!(
            err.contains("; it holds: ")
                && err
                    .contains("attention-d257 forward [batch=2 seq=32 d=257] on llvmpipe (vulkan, wgsl), Burn 0.22.1"),
            "{err}"
        );
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
        let two = Bundle { format_version: 1, entries: vec![p.clone(), p.clone()], autotune: vec![] };
        assert!(matches!(Bundle::parse(&two.to_ron()), Err(PlanError::DuplicateEntries(_))));
        let newer = Bundle { format_version: 9, entries: vec![], autotune: vec![] }.to_ron();
        assert_eq!(Bundle::parse(&newer), Err(PlanError::UnknownVersion { found: 9, oldest: 1, newest: 2 }));
        let mut bad = p;
        bad.cuts = vec![BoundaryId(5)];
        let one = Bundle { format_version: 1, entries: vec![bad], autotune: vec![] };
        assert!(matches!(Bundle::parse(&one.to_ron()), Err(PlanError::UnknownBoundaries(_))));
        assert_eq!(Bundle::parse(" "), Err(PlanError::Empty));
    }

    fn autotune(adapter: &str, file: &str) -> AutotuneFile {
        let device = DeviceInfo { adapter: adapter.into(), backend: "vulkan".into(), compiler: "wgsl".into() };
        AutotuneFile { device, burn_version: "0.22.1".into(), file: file.into(), decisions: 12 }
    }

    /// Version 2: autotune files per device; written as version 1 without them; paths stay
    /// beside the bundle; one file per device; version 1 cannot hold them.
    #[test]
    fn autotune_files_round_trip_in_version_2_and_bad_ones_are_refused() {
        let mut b = Bundle::new();
        b.upsert(plan(Regime::Training, "llvmpipe", 3));
        assert!(b.to_ron().contains("format_version: 1"), "no autotune: version 1");
        assert!(!b.upsert_autotune(autotune("llvmpipe", "model.blaze.autotune/llvmpipe.cubecl")));
        assert!(
            b.upsert_autotune(autotune("llvmpipe", "model.blaze.autotune/llvmpipe-2.cubecl")),
            "same device: replaced"
        );
        let text = b.to_ron();
        assert!(text.contains("format_version: 2"), "{text}");
        let back = Bundle::parse(&text).unwrap();
        let device = &back.entries[0].contract.device;
        assert_eq!(back.autotune_for(device, "0.22.1").unwrap().file, "model.blaze.autotune/llvmpipe-2.cubecl");
        assert!(back.autotune_for(device, "0.23.0").is_none());
        for bad in ["../elsewhere.cubecl", "/etc/passwd", ""] {
            let mut escaping = back.clone();
            escaping.autotune[0].file = bad.into();
            let err = Bundle::parse(&escaping.to_ron()).unwrap_err().to_string();
            assert!(err.contains("must be a relative path inside the bundle's directory"), "{bad}: {err}");
        }
        let mut twice = back.clone();
        twice.autotune.push(twice.autotune[0].clone());
        assert!(matches!(Bundle::parse(&twice.to_ron()), Err(PlanError::DuplicateEntries(_))));
        let v1 = text.replace("format_version: 2", "format_version: 1");
        assert!(Bundle::parse(&v1).unwrap_err().to_string().contains("version 1 cannot hold autotune files"));
    }
}
