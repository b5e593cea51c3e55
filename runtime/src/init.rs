//! Start-up from a bundle with one call: the entries made for this device and Burn version are
//! handed to a selecting op-stream watch ([`crate::watch::Mode::Select`]), which installs the
//! entry whose op stream the program actually runs from the next sync after its second step
//! (the first shows the step's length, the second is fingerprinted),
//! and the other entry when the program switches (train, then evaluate). Nothing about the
//! model, regime or shapes has to be declared: the op stream says all three.
use crate::CutSet;
use crate::watch::{Expected, Mode, OpStreamWatch, Selection, WatchGuard};
use blaze_ir::plan::{DeviceInfo, Settings};
use blaze_ir::{Bundle, PlanError, PlanFile, bundle::EntryKey};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What [`load_bundle`] set up. Keep it alive for the whole run: dropping it stops the watch
/// (the entry installed then stays installed). Dropped before the program ran any operation
/// while entries could still apply (`let _ = blaze_burn::init(..)`), it says so in one warning
/// ([`BundleHandle::drop_warning`]): nothing would be installed, silently, otherwise.
#[derive(Debug)]
#[must_use = "keep the handle alive for the whole run: dropping it stops the watch that installs the bundle's entries"]
pub struct BundleHandle {
    /// The entries made for this device, in bundle order; the watch installs one of them.
    pub entries: Vec<PlanFile>,
    /// Why nothing can be installed (already printed as one warning), if so.
    pub fallback: Option<PlanError>,
    /// Notes about settings (already printed).
    pub notes: Vec<String>,
    /// Wall time of `load_bundle` itself (read, parse, validate, filter, start the watch).
    pub load_time: Duration,
    watch: Option<WatchGuard>,
    policy: Arc<Mutex<Option<Arc<CutSet>>>>,
}

impl BundleHandle {
    /// The entry installed now; None while Burn's own plan is in force.
    pub fn installed(&self) -> Option<&PlanFile> {
        let i = self.watch.as_ref()?.watch.installed()?;
        self.entries.get(i)
    }

    /// The cut policy of the entry installed now (what Burn consulted under it).
    pub fn policy(&self) -> Option<Arc<CutSet>> {
        self.installed()?;
        self.policy.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether a step of `regime` is to be recorded, for the op stream the program runs now:
    /// yes when the entry installed for it (the watch's choice) is a captured entry of that
    /// regime; [`Captures::NotYetKnown`] before the watch has recognised the program's step
    /// (it installs from the sync after the second step). A captured step made with
    /// `from_bundle` (`blaze_burn::CapturedForward`, `CapturedTraining`) asks after its warm-up
    /// calls; [`BundleHandle::capture_source`] is what it keeps.
    pub fn captures(&self, regime: blaze_ir::plan::Regime) -> Captures {
        self.capture_source().captures(regime)
    }

    /// What a captured step keeps to ask [`BundleHandle::captures`] later (it outlives the
    /// handle: the answer is then the entry installed when the handle was dropped).
    pub fn capture_source(&self) -> CaptureSource {
        let entries = self
            .entries
            .iter()
            .map(|p| EntryKind {
                key: EntryKey::of(&p.contract).to_string(),
                regime: p.contract.regime,
                captured: p.settings.is_captured(),
                cuts: !p.cuts.is_empty(),
            })
            .collect();
        CaptureSource {
            watch: self.watch.as_ref().map(|w| w.watch.clone()),
            entries: Arc::new(entries),
            fallback: self.fallback.as_ref().map(|e| e.to_string()),
        }
    }

    /// The warning dropping the handle now prints, if any: when the bundle has entries for this
    /// device and the watch has not yet seen an operation of the program, so no entry can ever
    /// be installed after the drop.
    pub fn drop_warning(&self) -> Option<String> {
        let watch = self.watch.as_ref()?;
        let unseen = watch.watch.judged() == 0 && watch.watch.installed().is_none();
        (!self.entries.is_empty() && unseen).then(|| {
            format!(
                "warning: blaze: the bundle handle was dropped before the program's first operation, so none of its \
                 {} entries for this device will be installed (Burn's own plan runs); keep the handle of \
                 `blaze_burn::init` alive for the whole run (`let _blaze = blaze_burn::init(..)`, not `let _ = ..`)",
                self.entries.len()
            )
        })
    }

    /// Every decision of the watch so far, one line each.
    pub fn events(&self) -> Vec<String> {
        self.watch.as_ref().map(|w| w.watch.events()).unwrap_or_default()
    }

    /// CPU time the watch has cost the program so far (its observer's own work).
    pub fn watch_time(&self) -> Duration {
        self.watch.as_ref().map(|w| w.watch.busy()).unwrap_or_default()
    }

    /// Operations the watch recorded while judging.
    pub fn watch_ops(&self) -> u64 {
        self.watch.as_ref().map(|w| w.watch.judged()).unwrap_or_default()
    }
}

/// Whether a step is to be recorded ([`BundleHandle::captures`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Captures {
    /// The entry installed for the program's op stream (named) asks for captured execution of
    /// this regime.
    Yes(String),
    /// Eager execution: the entry installed for the program's op stream runs eagerly or is of
    /// the other regime, or the bundle is not in force; why.
    No(String),
    /// The watch judged the program's op stream and no entry of the bundle matches it; why.
    Unrecognised(String),
    /// The watch has not recognised the program's step yet (or is judging it again after the
    /// program changed what it runs).
    NotYetKnown,
}

/// What [`Captures`] is decided from: the bundle's entries and its op-stream watch, shared.
#[derive(Clone)]
pub struct CaptureSource {
    watch: Option<Arc<OpStreamWatch>>,
    entries: Arc<Vec<EntryKind>>,
    fallback: Option<String>,
}

impl std::fmt::Debug for CaptureSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&str> = self.entries.iter().map(|e| e.key.as_str()).collect();
        write!(f, "CaptureSource({keys:?}, fallback {:?})", self.fallback)
    }
}

#[derive(Debug)]
struct EntryKind {
    key: String,
    regime: blaze_ir::plan::Regime,
    captured: bool,
    cuts: bool,
}

impl CaptureSource {
    /// See [`BundleHandle::captures`].
    pub fn captures(&self, regime: blaze_ir::plan::Regime) -> Captures {
        if let Some(why) = &self.fallback {
            return Captures::No(format!("the bundle is not in force ({why})"));
        }
        let Some(watch) = &self.watch else { return Captures::No("the bundle has no entry for this device".into()) };
        let i = match watch.selection() {
            Selection::Judging => return Captures::NotYetKnown,
            Selection::NoEntry(why) => {
                return Captures::Unrecognised(format!("no entry of the bundle is installed ({why})"));
            }
            Selection::Installed(i) => i,
        };
        let Some(entry) = self.entries.get(i) else {
            return Captures::Unrecognised("no entry of the bundle is installed".into());
        };
        match entry {
            e if e.regime != regime => {
                Captures::No(format!("the entry installed for this op stream is {}, not a {regime} entry", e.key))
            }
            e if !e.captured => Captures::No(format!("the bundle's entry for this op stream ({}) runs eagerly", e.key)),
            // A captured entry with cuts is recorded where its eager step can be observed first
            // (blazec's runs, races and gate: `Captured::with_plan`); a user's loop runs it eagerly.
            e if e.cuts => Captures::No(format!(
                "the bundle's entry for this op stream ({}) cuts Burn's fusion, which a recording in a user's loop cannot check",
                e.key
            )),
            e => Captures::Yes(e.key.clone()),
        }
    }

    /// Whether the bundle holds, for this device, a captured entry of `regime` that a loop can
    /// record (no cuts), whatever op stream the program runs: what a step whose stream the
    /// watch does not recognise goes by ([`crate::captured::decide`]).
    pub fn holds_captured(&self, regime: blaze_ir::plan::Regime) -> bool {
        self.fallback.is_none() && self.entries.iter().any(|e| e.regime == regime && e.captured && !e.cuts)
    }
}

impl Drop for BundleHandle {
    fn drop(&mut self) {
        if let Some(warning) = self.drop_warning() {
            eprintln!("{warning}");
        }
    }
}

/// Reads the bundle (or plan file) at `path` and starts installing the entry that fits this
/// run on `device`; never panics. When no entry was made for this device and Burn version, or
/// the file cannot be used, Burn's own plan stays in force and one warning names the reason.
pub fn load_bundle(path: impl AsRef<Path>, device: &DeviceInfo) -> BundleHandle {
    let start = Instant::now();
    let path = path.as_ref();
    let bundle = Bundle::read(path);
    let mut handle = match bundle.and_then(|b| entries_for(b, device)) {
        Ok(entries) => start_watch(entries),
        Err(err) => {
            burn_fusion::cut::install(None, blaze_ir::store_key::BURN);
            eprintln!("{}", crate::load::fallback_warning(&err));
            BundleHandle {
                entries: Vec::new(),
                fallback: Some(err),
                notes: Vec::new(),
                load_time: Duration::ZERO,
                watch: None,
                policy: Default::default(),
            }
        }
    };
    handle.load_time = start.elapsed();
    handle
}

/// The entries made for `device` with this build's Burn version; otherwise the reason,
/// naming this device and what the bundle holds.
fn entries_for(bundle: Bundle, device: &DeviceInfo) -> Result<Vec<PlanFile>, PlanError> {
    let fits = |p: &PlanFile| p.contract.device == *device && p.contract.burn_version == crate::BURN_VERSION;
    let held: Vec<String> = bundle.entries.iter().map(|p| EntryKey::of(&p.contract).to_string()).collect();
    let entries: Vec<PlanFile> = bundle.entries.into_iter().filter(fits).collect();
    if entries.is_empty() {
        let run = format!(
            "this run on {} ({}, {}), Burn {}",
            device.adapter,
            device.backend,
            device.compiler,
            crate::BURN_VERSION
        );
        return Err(PlanError::NoEntry { run, held: if held.is_empty() { "none".into() } else { held.join("; ") } });
    }
    Ok(entries)
}

fn start_watch(entries: Vec<PlanFile>) -> BundleHandle {
    burn_fusion::cut::install(None, blaze_ir::store_key::BURN);
    let notes = apply_shared_settings(&entries);
    for note in &notes {
        eprintln!("{note}");
    }
    let expected = entries
        .iter()
        .map(|p| p.contract.watched_step(&p.settings))
        .map(|s| Expected { fingerprint: s.op_stream, ops_per_step: s.ops_per_step as usize })
        .collect();
    let plans: Vec<(Vec<blaze_ir::BoundaryId>, Settings, String)> =
        entries.iter().map(|p| (p.cuts.clone(), p.settings, EntryKey::of(&p.contract).to_string())).collect();
    let policy: Arc<Mutex<Option<Arc<CutSet>>>> = Default::default();
    let current = policy.clone();
    let install = Box::new(move |entry: Option<usize>| match entry.and_then(|i| plans.get(i)) {
        Some((cuts, settings, key)) => {
            *current.lock().unwrap_or_else(|e| e.into_inner()) = Some(crate::policy::activate_with(cuts, settings));
            eprintln!("note: blaze: installed the bundle entry for {key} (it matches this run's op stream)");
        }
        None => burn_fusion::cut::install(None, blaze_ir::store_key::BURN),
    });
    let watch = OpStreamWatch::start_with(expected, Mode::Select, install);
    BundleHandle { entries, fallback: None, notes, load_time: Duration::ZERO, watch: Some(watch), policy }
}

/// Per-process settings (the submission batch, read once when the device starts) apply when
/// every entry for this device agrees on them; otherwise the program keeps its own, and a note
/// says so. The beam width is per entry and goes with its cuts.
fn apply_shared_settings(entries: &[PlanFile]) -> Vec<String> {
    match shared_max_tasks(entries) {
        Ok(Some(n)) => crate::settings::apply(&Settings { max_tasks: Some(n), ..Settings::default() }),
        Ok(None) => Vec::new(),
        Err(()) => vec!["note: blaze: the bundle's entries for this device ask for different max_tasks; CubeCL reads it once per process, so this program keeps its own".into()],
    }
}

/// The submission batch every entry sets (`Ok(None)`: none sets one; `Err`: they differ).
fn shared_max_tasks(entries: &[PlanFile]) -> Result<Option<u32>, ()> {
    let tasks: std::collections::BTreeSet<Option<u32>> = entries.iter().map(|p| p.settings.max_tasks).collect();
    match tasks.into_iter().collect::<Vec<_>>().as_slice() {
        [one] => Ok(*one),
        _ => Err(()),
    }
}

/// Sets the submission batch of the plan file or bundle at `path` before the device starts, for
/// a program that can check a plan against its model only after building the model, which
/// starts the device (blazec's `run` and `serve`: the contract comes from the built model, and
/// CubeCL reads `CUBECL_WGPU_MAX_TASKS` once, when the device starts, so [`crate::load_plan`]
/// afterwards would set it too late and without effect). Only the entries made for `device` and
/// this Burn count, and only a batch they all agree on; a program's own value is left alone
/// (the load then says which wins). Prints nothing; returns the value it set.
pub fn preset_submission_batch(path: impl AsRef<Path>, device: &DeviceInfo) -> Option<u32> {
    let entries = Bundle::read(path.as_ref()).and_then(|b| entries_for(b, device)).ok()?;
    let planned = shared_max_tasks(&entries).ok()??;
    crate::settings::set_max_tasks_unless_set(planned).then_some(planned)
}
