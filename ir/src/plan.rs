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

/// The version this crate writes. Version 2 added [`Settings`] (a version-1 file reads as a
/// plan with Burn's own settings); version 3 added [`Settings::store`] (a version-2 file reads
/// as a plan whose store is the default for its cuts); version 4 added [`Settings::execution`]
/// (a file of an older version reads as eager execution); version 5 added
/// [`Contract::recordable_step`] (a file of an older version has none).
pub const FORMAT_VERSION: u32 = 5;
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
    /// Captured training (version 5 on): the op stream of one eager step in the form a
    /// captured entry warms up with and records (parameters and optimizer state written in
    /// place), which is not the traced step's. The op-stream check confirms a captured training
    /// entry from it; absent (older files), such an entry runs unconfirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recordable_step: Option<StepStream>,
}

/// One steady-state step's op stream, as the op-stream check recognises it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepStream {
    /// Stable fingerprint of the step's op stream (as [`Contract::op_stream`]).
    pub op_stream: String,
    /// Operations in the step.
    pub ops_per_step: u64,
}

impl Contract {
    /// The step the op-stream check must see for a plan with `settings` under this contract:
    /// the recordable step for captured training when the contract has one, else the traced step.
    pub fn watched_step(&self, settings: &Settings) -> StepStream {
        match &self.recordable_step {
            Some(step) if settings.records_held_state(self.regime) => step.clone(),
            _ => StepStream { op_stream: self.op_stream.clone(), ops_per_step: self.ops_per_step },
        }
    }
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
    /// Fusion-search and submission settings the plan was measured under (version 2 on;
    /// absent = the program's own, Burn's defaults unless it set them).
    #[serde(default, skip_serializing_if = "Settings::is_default")]
    pub settings: Settings,
    /// The evidence behind the plan (free-form, written by `blazec tune`).
    #[serde(default)]
    pub measurements: Option<Measurements>,
}

/// Settings of Burn's fusion search and of CubeCL's submission that a plan carries besides its
/// cuts. `None` leaves the program's own value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Settings {
    /// Beam width of Burn's fusion search (burn.toml `[fusion.beam_search] max_blocks`, Burn's
    /// default 5). Applies to the segments explored under this plan only (its plan store), so
    /// plans with different widths race in one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_blocks: Option<u32>,
    /// Kernels per queue submission (`CUBECL_WGPU_MAX_TASKS`, CubeCL's default 32). Fixed when
    /// the device starts, so per process: the runtime sets it at load, before the first tensor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tasks: Option<u32>,
    /// How the plans explored under this plan are cached (version 3 on); absent: by position
    /// when the plan has cuts, shared when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<PlanStore>,
    /// How a step runs (version 4 on); absent: eager, every operation issued by the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Execution>,
}

/// How a step's kernels reach the device. The plan's fusion (cuts, width, store) decides which
/// kernels there are; execution decides how they are issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Execution {
    /// Every step goes through Burn: autodiff, the fusion stream, CubeCL's launch path.
    Eager,
    /// One step is recorded after warm-up with the plan's fusion in force and replayed for
    /// every later step, its inputs written in place before each replay (forward regime only).
    /// Kept only after the replay verified against eager execution of the same plan.
    Captured,
}

impl Execution {
    fn word(self) -> &'static str {
        match self {
            Execution::Eager => "eager",
            Execution::Captured => "captured",
        }
    }
}

/// How Burn's fuser caches the plans it explores under a plan (burn-fusion's plan store).
/// The choice changes no kernel, only the host's work per block: how many plans the store
/// holds and how a segment finds its plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PlanStore {
    /// One plan per distinct segment, replayed wherever the segment repeats (Burn's own store).
    /// Not possible with cuts: a cut names a step position.
    Shared,
    /// One plan per step position it was explored at (what every plan with cuts does).
    ByPosition,
}

impl PlanStore {
    fn word(self) -> &'static str {
        match self {
            PlanStore::Shared => "shared",
            PlanStore::ByPosition => "position",
        }
    }
}

impl Settings {
    pub fn is_default(&self) -> bool {
        *self == Settings::default()
    }

    /// Whether the plans explored under a plan with these settings are cached by step position:
    /// always with cuts (a cut names a position), otherwise when `store` asks for it.
    pub fn caches_by_position(&self, has_cuts: bool) -> bool {
        has_cuts || self.store == Some(PlanStore::ByPosition)
    }

    /// Burn's search at beam width `max_blocks` (`None`: Burn's configured one), nothing else.
    pub fn beam_width(max_blocks: Option<u32>) -> Self {
        Self { max_blocks, ..Self::default() }
    }

    /// Whether steps are replayed from a recording.
    pub fn is_captured(&self) -> bool {
        self.execution == Some(Execution::Captured)
    }

    /// Whether a plan of `regime` with these settings records a step whose state is held in
    /// place (captured training), so its contract may carry [`Contract::recordable_step`].
    pub fn records_held_state(&self, regime: Regime) -> bool {
        self.is_captured() && regime == Regime::Training
    }

    /// These settings with eager execution: the fusion the plan installs, whatever runs it.
    pub fn eager(&self) -> Self {
        Self { execution: None, ..*self }
    }

    /// These settings, captured.
    pub fn captured(&self) -> Self {
        Self { execution: Some(Execution::Captured), ..*self }
    }

    /// Text form: `burn` for none, else `blocks=2 tasks=16 store=position` (the parts that are set).
    pub fn to_text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = self.max_blocks {
            parts.push(format!("blocks={n}"));
        }
        if let Some(n) = self.max_tasks {
            parts.push(format!("tasks={n}"));
        }
        if let Some(store) = self.store {
            parts.push(format!("store={}", store.word()));
        }
        if let Some(execution) = self.execution {
            parts.push(format!("exec={}", execution.word()));
        }
        if parts.is_empty() { "burn".into() } else { parts.join(" ") }
    }

    /// Reads one `blocks=N` / `tasks=N` / `store=shared|position` / `exec=eager|captured` word
    /// into `self`; `Ok(false)` when `word` is none of them.
    pub fn read_word(&mut self, word: &str) -> Result<bool, String> {
        if let Some(value) = word.strip_prefix("exec=") {
            let execution = [Execution::Eager, Execution::Captured].into_iter().find(|e| e.word() == value);
            self.execution = Some(execution.ok_or_else(|| format!("`{word}`: expected exec=eager or exec=captured"))?);
            return Ok(true);
        }
        if let Some(value) = word.strip_prefix("store=") {
            let store = [PlanStore::Shared, PlanStore::ByPosition].into_iter().find(|s| s.word() == value);
            self.store = Some(store.ok_or_else(|| format!("`{word}`: expected store=shared or store=position"))?);
            return Ok(true);
        }
        let (slot, value) = match word.split_once('=') {
            Some(("blocks", v)) => (&mut self.max_blocks, v),
            Some(("tasks", v)) => (&mut self.max_tasks, v),
            _ => return Ok(false),
        };
        match value.parse::<u32>() {
            Ok(n) if n >= 1 => {
                *slot = Some(n);
                Ok(true)
            }
            _ => Err(format!("`{word}`: expected a whole number of at least 1")),
        }
    }

    /// Checks the values a plan file may hold.
    pub fn validate(&self) -> Result<(), PlanError> {
        for (name, v) in [("max_blocks", self.max_blocks), ("max_tasks", self.max_tasks)] {
            if let Some(n) = v
                && !(1..=MAX_SETTING).contains(&n)
            {
                return Err(PlanError::BadSetting(format!("{name} = {n} (expected 1..={MAX_SETTING})")));
            }
        }
        Ok(())
    }
}

/// Largest beam width or submission batch a plan may ask for: far above any useful value, low
/// enough that a damaged file cannot make Burn's search quadratic in a huge number.
pub const MAX_SETTING: u32 = 4096;

/// What the verification gate said about a plan: a typed record in plan files and results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum VerifyOutcome {
    /// Burn's plan won: nothing to compare.
    NothingToCheck,
    /// Something to check, but the check cannot settle it.
    NotSettled(String),
    /// Executed differently, computed the same: identical, or within rounding.
    Verified { identical: bool, max_rel_diff: f32 },
    /// A captured training run over `steps` steps, beyond the rounding tolerance of a few
    /// steps but no further from eager execution than one of Burn's own executions is over the
    /// same steps: its unfused one (`unfused`), or the one in `alternate` (measured when the
    /// unfused drift alone did not cover the run; files before 2026-12-05 have none). Rounding
    /// compounds over training.
    WithinDrift {
        max_rel_diff: f32,
        unfused: f32,
        steps: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        alternate: Option<ReferenceDrift>,
    },
    /// Different or broken numbers: the plan is not kept.
    Refused(Refusal),
}

/// Why the gate refused a plan: `kind` is what code decides by, `detail` the sentence for
/// people (it may be reworded freely). Files written before 2026-12-07 hold the sentence
/// alone (`Refused("different: ...")`); they read with the kind their sentence began with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Refusal {
    pub kind: RefusalKind,
    pub detail: String,
}

/// The kinds of refusal, each with what follows from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RefusalKind {
    /// Finite numbers, further from the reference than the tolerance: a long training run's
    /// rounding drift can explain it (the gate then measures Burn's own drift).
    BeyondTolerance,
    /// Finite numbers within the tolerance, but a prediction's argmax differs: drift can
    /// explain it too.
    FlippedPrediction,
    /// Not finite where the reference is: stale state or a broken kernel, never drift.
    NotFinite,
    /// The run itself broke (a panic, outputs missing, outputs not finite in both runs).
    Broken,
    /// A captured plan whose recording did not happen or fell back.
    NotCaptured,
    /// Burn's own plan does not reproduce itself on a fresh instance: nothing can be checked.
    Unreproducible,
    /// A sentence from a file written before the kinds, that begins with none of theirs.
    Unclassified,
}

impl RefusalKind {
    /// Numbers that were computed and compared, and differ (not a broken or missing run).
    pub fn is_different_numbers(self) -> bool {
        matches!(self, RefusalKind::BeyondTolerance | RefusalKind::FlippedPrediction | RefusalKind::NotFinite)
    }

    /// A difference a long training run's rounding drift can explain.
    pub fn drift_can_explain(self) -> bool {
        matches!(self, RefusalKind::BeyondTolerance | RefusalKind::FlippedPrediction)
    }

    /// The kind an older file's sentence stands for: how each of the gate's sentences began
    /// before the kinds were recorded (the only place those sentences are read).
    fn of_legacy_sentence(text: &str) -> Self {
        const BEGINNINGS: [(&str, RefusalKind); 6] = [
            ("different: relative difference", RefusalKind::BeyondTolerance),
            ("different: argmax differs", RefusalKind::FlippedPrediction),
            ("different: not finite", RefusalKind::NotFinite),
            ("broken: ", RefusalKind::Broken),
            ("not captured: ", RefusalKind::NotCaptured),
            ("cannot check: ", RefusalKind::Unreproducible),
        ];
        BEGINNINGS.iter().find(|(b, _)| text.starts_with(b)).map_or(RefusalKind::Unclassified, |&(_, k)| k)
    }
}

impl Refusal {
    pub fn new(kind: RefusalKind, detail: impl Into<String>) -> Self {
        Refusal { kind, detail: detail.into() }
    }
}

impl VerifyOutcome {
    /// A refusal of `kind`, said by `detail`.
    pub fn refused(kind: RefusalKind, detail: impl Into<String>) -> Self {
        VerifyOutcome::Refused(Refusal::new(kind, detail))
    }

    /// The refusal's kind, if refused.
    pub fn refusal_kind(&self) -> Option<RefusalKind> {
        match self {
            VerifyOutcome::Refused(r) => Some(r.kind),
            _ => None,
        }
    }
}

/// Reads both forms: `(kind: K, detail: "...")`, and an older file's bare sentence.
impl<'de> Deserialize<'de> for Refusal {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Typed {
            kind: RefusalKind,
            detail: String,
        }
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = Refusal;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a refusal: (kind: .., detail: \"..\") or a sentence")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Refusal, E> {
                Ok(Refusal::new(RefusalKind::of_legacy_sentence(text), text))
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<Refusal, M::Error> {
                let t = Typed::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Refusal { kind: t.kind, detail: t.detail })
            }
        }
        deserializer.deserialize_any(Either)
    }
}

/// How far one of Burn's own executions (`execution`, e.g. `Burn's default plan`) is from the
/// eager run a captured run is compared with, over the same steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReferenceDrift {
    pub execution: String,
    pub max_rel_diff: f32,
}

impl VerifyOutcome {
    pub fn keeps(&self) -> bool {
        self.is_verified() || matches!(self, VerifyOutcome::NotSettled(_))
    }

    /// Compared and found to compute Burn's numbers ([`Self::Verified`] or [`Self::WithinDrift`]).
    pub fn is_verified(&self) -> bool {
        matches!(self, VerifyOutcome::Verified { .. } | VerifyOutcome::WithinDrift { .. })
    }

    /// The outcome from the Debug text older files hold (`Verified { identical: true,
    /// max_rel_diff: 0.0 }`): the same fields in RON's struct-variant form.
    pub fn from_debug_text(text: &str) -> Option<Self> {
        let text = text.trim();
        let ron_text = match text.split_once(" { ") {
            Some((variant, rest)) => format!("{variant}({})", rest.strip_suffix(" }")?),
            None => text.to_string(),
        };
        ron::from_str(&ron_text).ok()
    }
}

impl std::fmt::Display for VerifyOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VerifyOutcome::NothingToCheck => write!(f, "nothing to check (Burn's plan)"),
            VerifyOutcome::NotSettled(why) => write!(f, "not settled: {why}"),
            VerifyOutcome::Verified { identical: true, .. } => write!(f, "verified: identical"),
            VerifyOutcome::Verified { identical: false, max_rel_diff } => {
                write!(f, "verified: equal within rounding (largest relative difference {max_rel_diff:e})")
            }
            VerifyOutcome::WithinDrift { max_rel_diff, unfused, steps, alternate } => {
                write!(
                    f,
                    "verified: within Burn's own rounding drift over {steps} steps (largest relative difference \
                     {max_rel_diff:e}; Burn unfused against fused {unfused:e}"
                )?;
                if let Some(a) = alternate {
                    write!(f, "; {} against this fusion {:e}", a.execution, a.max_rel_diff)?;
                }
                write!(f, ")")
            }
            VerifyOutcome::Refused(r) => write!(f, "refused: {}", r.detail),
        }
    }
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
    /// Files written before 2026-12-04: the gate's outcome as Debug text (read by
    /// [`Self::verification`]); newer files leave it out and hold [`Self::verification`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub verify: String,
    pub selection: String,
    /// The verification gate's outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<VerifyOutcome>,
}

impl Measurements {
    /// The gate's outcome, from the typed record or from an older file's text.
    pub fn verification(&self) -> Option<VerifyOutcome> {
        self.verification.clone().or_else(|| VerifyOutcome::from_debug_text(&self.verify))
    }
}

/// Why a plan file cannot be used. Every variant names the reason in one sentence.
#[derive(Clone, Debug, thiserror::Error, PartialEq)]
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
    #[error("plan setting out of range: {0}")]
    BadSetting(String),
    #[error("plan file version 1 cannot hold settings (they came with version 2)")]
    SettingsInVersion1,
    #[error("plan file versions 1 and 2 cannot hold a plan store setting (it came with version 3)")]
    StoreBeforeVersion3,
    #[error("plan file versions 1 to 3 cannot hold an execution setting (it came with version 4)")]
    ExecutionBeforeVersion4,
    #[error("plan file versions 1 to 4 cannot hold a recordable step (it came with version 5)")]
    RecordableStepBeforeVersion5,
    #[error("a recordable step is part of a captured training plan only; this plan is {0}")]
    RecordableStepNotCaptured(String),
    #[error("the recordable step has no operations")]
    EmptyRecordableStep,
    #[error("a plan with cuts caches its plans by position; store = shared is not possible with cuts")]
    SharedStoreWithCuts,
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
        Self {
            format_version: 1,
            contract,
            cut_points,
            cuts: Vec::new(),
            settings: Settings::default(),
            measurements: None,
        }
    }

    /// The oldest version that can hold this plan: 1 without settings (so older Blaze builds
    /// still read it), 2 with them. [`Self::to_ron`] writes at least this.
    pub fn required_version(&self) -> u32 {
        if self.contract.recordable_step.is_some() {
            return 5;
        }
        match &self.settings {
            s if s.execution.is_some() => 4,
            s if s.store.is_some() => 3,
            s if s.is_default() => 1,
            _ => 2,
        }
    }

    /// This plan with `settings` (and the format version that holds them).
    pub fn with_settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self.format_version = self.format_version.max(self.required_version());
        self
    }

    /// Reads, parses and validates the plan file at `path`, in bounded time and memory
    /// whatever the path names (see [`crate::file::read_text`]).
    pub fn read(path: &std::path::Path) -> Result<Self, PlanError> {
        let text = crate::file::read_text(path)
            .map_err(|reason| PlanError::Unreadable { path: path.display().to_string(), reason })?;
        Self::parse(&text)
    }

    /// Parses and validates the text of a plan file (any readable version).
    pub fn parse(text: &str) -> Result<Self, PlanError> {
        if text.trim().is_empty() {
            return Err(PlanError::Empty);
        }
        let probe: VersionProbe = ron::from_str(text).map_err(|e| PlanError::Malformed(e.to_string()))?;
        if !(OLDEST_READABLE..=FORMAT_VERSION).contains(&probe.format_version) {
            return Err(PlanError::UnknownVersion {
                found: probe.format_version,
                oldest: OLDEST_READABLE,
                newest: FORMAT_VERSION,
            });
        }
        // Version 1 has no settings (it reads as Burn's), 2 no store (the default for its cuts),
        // 3 no execution (eager), 4 no recordable step; otherwise they are version 5 less a field
        // or two, so all parse
        // into the same struct. A file is kept at its version in memory: written back, it stays
        // readable by the Blaze that wrote it.
        let plan: PlanFile = ron::from_str(text).map_err(|e| PlanError::Malformed(e.to_string()))?;
        plan.check_version()?;
        plan.validate()?;
        Ok(plan)
    }

    /// A file's version must be able to hold every field it has (a bundle's entries too).
    pub fn check_version(&self) -> Result<(), PlanError> {
        if self.format_version == 1 && !self.settings.is_default() {
            return Err(PlanError::SettingsInVersion1);
        }
        if self.format_version < 3 && self.settings.store.is_some() {
            return Err(PlanError::StoreBeforeVersion3);
        }
        if self.format_version < 4 && self.settings.execution.is_some() {
            return Err(PlanError::ExecutionBeforeVersion4);
        }
        if self.format_version < 5 && self.contract.recordable_step.is_some() {
            return Err(PlanError::RecordableStepBeforeVersion5);
        }
        Ok(())
    }

    /// Internal consistency: every cut is a known cut point inside the step, once; settings in
    /// range; no shared store with cuts.
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
        if !self.cuts.is_empty() && self.settings.store == Some(PlanStore::Shared) {
            return Err(PlanError::SharedStoreWithCuts);
        }
        self.validate_recordable_step()?;
        self.settings.validate()
    }

    /// A recordable step belongs to a captured training plan, and has operations.
    fn validate_recordable_step(&self) -> Result<(), PlanError> {
        let Some(step) = &self.contract.recordable_step else { return Ok(()) };
        if !self.settings.records_held_state(self.contract.regime) {
            let what =
                format!("{} {}", self.settings.execution.unwrap_or(Execution::Eager).word(), self.contract.regime);
            return Err(PlanError::RecordableStepNotCaptured(what));
        }
        if step.ops_per_step == 0 {
            return Err(PlanError::EmptyRecordableStep);
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

    /// A stable key for this plan's cut set and beam width (0 = Burn's own plan), used to keep
    /// the plans Burn explores under different policies in different caches
    /// ([`crate::store_key`], the one key space).
    pub fn store_key(cuts: &[BoundaryId], max_blocks: Option<u32>) -> u64 {
        Self::store_key_of(cuts, &Settings::beam_width(max_blocks))
    }

    /// [`Self::store_key`] for `settings`: a width alone cached by position has a store of its
    /// own, apart from the same width shared.
    pub fn store_key_of(cuts: &[BoundaryId], settings: &Settings) -> u64 {
        crate::store_key::of_plan(cuts, settings)
    }

    /// The RON text of this plan.
    pub fn to_ron(&self) -> String {
        let config = ron::ser::PrettyConfig::new().depth_limit(4).struct_names(true);
        let mut plan = std::borrow::Cow::Borrowed(self);
        if self.format_version < self.required_version() {
            plan.to_mut().format_version = self.required_version();
        }
        ron::ser::to_string_pretty(&*plan, config).expect("plan files always serialise")
    }
}

#[cfg(test)]
pub(crate) mod tests;
