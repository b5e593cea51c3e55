//! The plan file: a public, versioned RON format.
//!
//! A plan names the boundaries where Burn's merge must be refused, and the contract it was
//! made under: which model (a stable fingerprint of its traced op stream), which regime and
//! shapes, which device and Burn version. A plan is only ever applied when its contract
//! matches; otherwise the runtime keeps Burn's own plan and says why.
//!
//! Versions: `format_version` is read first. Older versions are migrated by
//! [`PlanFile::parse`]; newer ones are refused (the reader cannot know what they mean).
use crate::boundary::BoundaryId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The version this crate writes.
pub const FORMAT_VERSION: u32 = 1;
/// The oldest version this crate reads.
pub const OLDEST_READABLE: u32 = 1;

/// Training (forward, loss, backward, optimiser update) or forward only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Regime {
    Forward,
    Training,
}

impl std::fmt::Display for Regime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Regime::Forward => "forward",
            Regime::Training => "training",
        })
    }
}

impl std::str::FromStr for Regime {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "forward" => Ok(Regime::Forward),
            "training" => Ok(Regime::Training),
            _ => Err(format!("unknown regime `{s}` (expected forward or training)")),
        }
    }
}

/// The device a plan was measured on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Adapter name as the driver reports it, e.g. `NVIDIA H200` or `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub adapter: String,
    /// Graphics API, e.g. `vulkan`.
    pub backend: String,
    /// Shader compiler, `wgsl` or `spirv`.
    pub compiler: String,
}

/// What must hold for a plan to mean what it meant when it was made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contract {
    /// Workload name, e.g. `attention-d257`.
    pub model: String,
    pub regime: Regime,
    /// Shapes the model was traced with, e.g. `batch=16 seq=256 d=257`.
    pub shapes: String,
    /// Stable fingerprint of the traced op stream of one steady-state step.
    pub op_stream: String,
    /// Operations in one steady-state step; boundary ids are below this.
    pub ops_per_step: u64,
    pub device: DeviceInfo,
    /// The Burn version the patched fuser comes from.
    pub burn_version: String,
}

/// A plan file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanFile {
    pub format_version: u32,
    pub contract: Contract,
    /// Boundaries where Burn may merge (from the trace): the only ids a plan may cut.
    pub cut_points: Vec<BoundaryId>,
    /// Boundaries where the merge is refused. Empty = Burn's own plan.
    pub cuts: Vec<BoundaryId>,
    /// The evidence behind the plan (free-form, written by `blazec tune`).
    #[serde(default)]
    pub measurements: Option<Measurements>,
}

/// Summary of the measurements a plan was selected by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurements {
    pub protocol: String,
    pub results_file: String,
    pub default_ms: f64,
    pub fusion_off_ms: Option<f64>,
    pub plan_ms: f64,
    pub spread_ms: f64,
    pub verify: String,
    pub selection: String,
}

/// Why a plan file cannot be used. Every variant names the reason in one sentence.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error("cannot read plan file {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("plan file is empty")]
    Empty,
    #[error("plan file is not valid plan RON: {0}")]
    Malformed(String),
    #[error("plan file has format version {found}; this Blaze reads versions {oldest}..={newest}")]
    UnknownVersion { found: u32, oldest: u32, newest: u32 },
    #[error("plan cuts boundaries that are not cut points of its model: {0}")]
    UnknownBoundaries(String),
    #[error("plan lists a cut more than once: {0}")]
    DuplicateCuts(String),
    #[error("bundle holds two entries for {0}")]
    DuplicateEntries(String),
    #[error("no entry of the bundle fits this run ({run}); it holds: {held}")]
    NoEntry { run: String, held: String },
    #[error("plan was made for {field} `{planned}`, but this run has `{actual}`")]
    Mismatch { field: &'static str, planned: String, actual: String },
}

/// Reads only the version, whatever else the file holds.
#[derive(Deserialize)]
#[serde(rename = "PlanFile")]
struct VersionProbe {
    format_version: u32,
}

impl PlanFile {
    /// Burn's own plan for `contract`: no cuts.
    pub fn burn_default(contract: Contract, cut_points: Vec<BoundaryId>) -> Self {
        Self { format_version: FORMAT_VERSION, contract, cut_points, cuts: Vec::new(), measurements: None }
    }

    /// Reads, parses and validates the plan file at `path`, in bounded time and memory
    /// whatever the path names (see [`crate::file::read_text`]).
    pub fn read(path: &std::path::Path) -> Result<Self, PlanError> {
        let text = crate::file::read_text(path).map_err(|reason| PlanError::Unreadable { path: path.display().to_string(), reason })?;
        Self::parse(&text)
    }

    /// Parses and validates the text of a plan file (any readable version).
    pub fn parse(text: &str) -> Result<Self, PlanError> {
        if text.trim().is_empty() {
            return Err(PlanError::Empty);
        }
        let probe: VersionProbe =
            ron::from_str(text).map_err(|e| PlanError::Malformed(e.to_string()))?;
        if !(OLDEST_READABLE..=FORMAT_VERSION).contains(&probe.format_version) {
            return Err(PlanError::UnknownVersion {
                found: probe.format_version,
                oldest: OLDEST_READABLE,
                newest: FORMAT_VERSION,
            });
        }
        // Version 1 is the first published version: nothing to migrate yet. A future version 2
        // adds a `migrate_v1` step here and keeps this branch, so old files stay readable.
        let plan: PlanFile = ron::from_str(text).map_err(|e| PlanError::Malformed(e.to_string()))?;
        plan.validate()?;
        Ok(plan)
    }

    /// Internal consistency: every cut is a known cut point inside the step.
    pub fn validate(&self) -> Result<(), PlanError> {
        let known: BTreeSet<_> = self.cut_points.iter().collect();
        let unknown: Vec<String> = self
            .cuts
            .iter()
            .filter(|c| !known.contains(c) || c.0 == 0 || c.0 >= self.contract.ops_per_step)
            .map(|c| c.to_string())
            .collect();
        if !unknown.is_empty() {
            return Err(PlanError::UnknownBoundaries(unknown.join(", ")));
        }
        let mut seen = BTreeSet::new();
        let twice: BTreeSet<String> = self.cuts.iter().filter(|c| !seen.insert(**c)).map(|c| c.to_string()).collect();
        if !twice.is_empty() {
            return Err(PlanError::DuplicateCuts(twice.into_iter().collect::<Vec<_>>().join(", ")));
        }
        Ok(())
    }

    /// Checks the plan's contract against the run's.
    pub fn check_contract(&self, actual: &Contract) -> Result<(), PlanError> {
        let planned = &self.contract;
        let pairs: [(&'static str, &str, &str); 7] = [
            ("model", &planned.model, &actual.model),
            ("regime", &planned.regime.to_string(), &actual.regime.to_string()),
            ("shapes", &planned.shapes, &actual.shapes),
            ("device adapter", &planned.device.adapter, &actual.device.adapter),
            ("shader compiler", &planned.device.compiler, &actual.device.compiler),
            ("Burn version", &planned.burn_version, &actual.burn_version),
            ("op stream", &planned.op_stream, &actual.op_stream),
        ];
        for (field, p, a) in pairs {
            // An empty actual value means "not known yet" (the op stream is only known after
            // a step has run); the runtime checks it again then.
            if !a.is_empty() && p != a {
                return Err(PlanError::Mismatch { field, planned: p.to_string(), actual: a.to_string() });
            }
        }
        Ok(())
    }

    /// A stable key for this plan's cut set (0 = Burn's own plan), used to keep the plans Burn
    /// explores under different cut sets in different caches.
    pub fn store_key(cuts: &[BoundaryId]) -> u64 {
        if cuts.is_empty() {
            return 0;
        }
        let text: Vec<String> = cuts.iter().map(|c| c.0.to_string()).collect();
        crate::hash::stable_u64(text.join(",").as_bytes()) | 1
    }

    /// The RON text of this plan.
    pub fn to_ron(&self) -> String {
        let config = ron::ser::PrettyConfig::new().depth_limit(4).struct_names(true);
        ron::ser::to_string_pretty(self, config).expect("plan files always serialise")
    }
}

#[cfg(test)]
pub(crate) mod tests;
