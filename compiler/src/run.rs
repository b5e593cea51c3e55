//! `blazec run`: a model for some steps, optionally under a plan file.
use crate::cli::{ModelArgs, Resolver, resolve_model};
use crate::session::{Settle, record_step, timed_step};
use blaze_ir::{Contract, ExecutedPartition, trace::op_stream_fingerprint};
use blaze_runtime::watch::OpStreamCheck;
use blaze_runtime::{BundleHandle, LoadOutcome, Model, load_bundle, load_plan};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Plan file to load at start-up (Burn's own plan when absent or unusable).
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// Bundle (or plan file) to start from with the one-call start-up a user program makes
    /// (`blaze_burn::init`): the entry made for this device whose op stream the run matches is
    /// installed after the first step; nothing about the run is declared.
    #[arg(long, conflicts_with = "plan")]
    pub bundle: Option<PathBuf>,
    /// Untimed steps first.
    #[arg(long, default_value_t = 2)]
    pub warmup: u32,
    /// Timed steps after warm-up.
    #[arg(long, default_value_t = 3)]
    pub steps: u32,
    /// Untimed stepping after warm-up, in milliseconds, before the first timed step (lets the
    /// device's clocks recover from the compilation pause; 0 = none).
    #[arg(long, default_value_t = crate::session::SETTLE.as_millis() as u64)]
    pub settle_ms: u64,
    /// Settle for exactly this many untimed steps instead of `--settle-ms`, so two runs' loss
    /// lists line up step for step (settling by wall time runs a time-dependent count).
    #[arg(long, conflicts_with = "settle_ms")]
    pub settle_steps: Option<usize>,
    /// Write the run's report (RON): losses, times, executed partition, captured logits.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// What `blazec run` measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunReport {
    pub model: String,
    pub regime: String,
    /// `none`, `applied`, or `fallback: <reason>`.
    pub plan: String,
    /// Loss of every step, warm-up and settling included, in order.
    pub losses: Vec<f32>,
    /// Untimed steps run to settle after warm-up (absent in reports older than blaze-measure/2).
    #[serde(default)]
    pub settle_steps: usize,
    pub step_ms: Vec<f64>,
    /// Executed partition of the last (recorded) step.
    pub partition: ExecutedPartition,
    pub op_stream: String,
    pub ops: usize,
    /// Logits of the last step.
    pub logits: Vec<f32>,
    pub classes: usize,
    /// Cut-policy calls during the timed and recorded steps (0 = cached plans replayed).
    pub hook_calls_after_warmup: u64,
    /// A loaded plan's costs: `load_plan` itself, and the automatic op-stream check's observer
    /// (absent in older reports and without a plan).
    #[serde(default)]
    pub plan_load_ms: Option<f64>,
    #[serde(default)]
    pub op_stream_check_ms: Option<f64>,
    /// Wall time of each warm-up step (the first holds compilation and autotune), ms.
    #[serde(default)]
    pub warmup_ms: Vec<f64>,
}

pub fn run(resolve: &Resolver, args: &RunArgs) -> anyhow::Result<()> {
    let factory = resolve_model(resolve, &args.model)?;
    // A bundle's autotune decisions go into CubeCL's cache before the first tensor operation
    // (building the model runs some), as `blaze_burn::init` does.
    if let Some(bundle) = &args.bundle {
        blaze_burn::seed_autotune(bundle, &blaze_burn::device_info());
    }
    let mut model = factory.build(args.model.regime).map_err(anyhow::Error::msg)?;
    let planned = args.plan.as_ref().map(|p| load_plan(p, &contract_of(model.as_ref(), "")));
    let bundled = args.bundle.as_ref().map(|p| load_bundle(p, &model.describe().device));
    let loaded = match (&planned, &bundled) {
        (Some(p), _) => Some(Loaded::Plan(p)),
        (_, Some(b)) => Some(Loaded::Bundle(b)),
        _ => None,
    };
    let settle = match args.settle_steps {
        Some(n) => Settle::Steps(n),
        None => Settle::For(std::time::Duration::from_millis(args.settle_ms)),
    };
    let report = run_loaded(model.as_mut(), loaded, args.warmup, settle, args.steps);
    println!("plan: {}", report.plan);
    if let (Some(load), Some(check)) = (report.plan_load_ms, report.op_stream_check_ms) {
        println!("plan load {load:.3} ms; automatic op-stream check {check:.3} ms");
    }
    println!("warm-up step ms: {:?}", report.warmup_ms.iter().map(|t| t.round()).collect::<Vec<_>>());
    println!("losses: {:?}", report.losses);
    println!("step ms: {:?}", report.step_ms.iter().map(|t| (t * 100.0).round() / 100.0).collect::<Vec<_>>());
    println!("partition {} ({} ops, {} blocks, {} fused)", report.partition.fingerprint(), report.ops,
        report.partition.blocks.len(), report.partition.fused_blocks().count());
    if let Some(path) = &args.report {
        write_atomic(path, &to_ron(&report))?;
    }
    Ok(())
}

/// The run's side of a plan contract (`op_stream` filled in once a step has been seen).
pub fn contract_of(model: &dyn Model, op_stream: &str) -> Contract {
    let d = model.describe();
    Contract {
        model: d.name,
        regime: d.regime,
        shapes: d.shapes,
        op_stream: op_stream.into(),
        ops_per_step: 0,
        device: d.device,
        burn_version: blaze_runtime::BURN_VERSION.into(),
    }
}

/// What a run started from: a plan loaded for a declared contract, or a bundle handed to the
/// one-call start-up.
#[derive(Clone, Copy)]
pub enum Loaded<'a> {
    Plan(&'a LoadOutcome),
    Bundle(&'a BundleHandle),
}

impl Loaded<'_> {
    fn policy(&self) -> Option<std::sync::Arc<blaze_runtime::CutSet>> {
        match self {
            Loaded::Plan(LoadOutcome::Applied(h)) => Some(h.policy.clone()),
            Loaded::Plan(_) => None,
            Loaded::Bundle(b) => b.policy(),
        }
    }

    /// `applied`, `fallback: <reason>`, ... as the run report says it, after the steps.
    fn state(&self) -> String {
        match self {
            Loaded::Plan(LoadOutcome::Fallback(e)) => format!("fallback: {e}"),
            Loaded::Plan(LoadOutcome::Applied(h)) => match h.op_stream_check() {
                OpStreamCheck::Confirmed => "applied".into(),
                OpStreamCheck::Withdrawn(e) => format!("fallback: {e}"),
                OpStreamCheck::Pending | OpStreamCheck::Unconfirmed => "applied (op stream not confirmed)".into(),
            },
            Loaded::Bundle(b) => match (&b.fallback, b.installed()) {
                (Some(e), _) => format!("fallback: {e}"),
                (None, Some(entry)) => format!("applied (bundle entry {})", blaze_ir::bundle::EntryKey::of(&entry.contract)),
                (None, None) => format!("none installed: {}", b.events().last().map_or("no step-sized window yet", String::as_str)),
            },
        }
    }

    fn costs(&self) -> Option<(f64, f64)> {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        match self {
            Loaded::Plan(LoadOutcome::Applied(h)) => Some((ms(h.load_time), ms(h.watch_time()))),
            Loaded::Plan(_) => None,
            Loaded::Bundle(b) => Some((ms(b.load_time), ms(b.watch_time()))),
        }
    }
}

/// Warm-up, the op-stream check of a loaded plan, timed steps and one recorded step.
pub fn run_loaded(model: &mut dyn Model, loaded: Option<Loaded>, warmup: u32, settle: Settle, steps: u32) -> RunReport {
    let mut losses = Vec::new();
    let mut warmup_ms = Vec::new();
    for _ in 0..warmup {
        let start = std::time::Instant::now();
        losses.extend(crate::session::settle(model, Settle::Steps(1)));
        warmup_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let (first, out) = record_step(model, false);
    losses.push(out.loss);
    let op_stream = op_stream_fingerprint(&first.traced_ops());
    let calls = || loaded.and_then(|l| l.policy()).map_or(0, |p| p.calls());
    let settled = crate::session::settle(model, settle);
    let settle_steps = settled.len();
    losses.extend(settled);
    let calls_before = calls();
    let mut step_ms = Vec::new();
    for _ in 0..steps {
        let (ms, out) = timed_step(model);
        step_ms.push(ms);
        losses.push(out.loss);
    }
    let (last, out) = record_step(model, true);
    losses.push(out.loss);
    // The runtime confirmed (or selected) by itself, at the first step-sized window.
    let plan = loaded.map_or("none".to_string(), |l| l.state());
    let costs = loaded.and_then(|l| l.costs());
    RunReport {
        model: model.describe().name,
        regime: model.describe().regime.to_string(),
        plan,
        losses,
        settle_steps,
        step_ms,
        ops: last.ops.len(),
        partition: last.partition,
        op_stream,
        logits: out.logits,
        classes: out.classes,
        hook_calls_after_warmup: calls().saturating_sub(calls_before),
        plan_load_ms: costs.map(|c| c.0),
        op_stream_check_ms: costs.map(|c| c.1),
        warmup_ms,
    }
}

pub fn to_ron<T: Serialize>(value: &T) -> String {
    ron::ser::to_string_pretty(value, ron::ser::PrettyConfig::new().depth_limit(2)).expect("serialisable")
}

/// Writes `text` to `path` atomically: a temporary file in the same directory, then a rename,
/// so a reader (or an interrupted run) never sees a partial file.
/// Creates the directory `output` goes into and checks that it is writable, so minutes of work
/// do not end in an unwritable directory. Returns the directory.
pub fn prepare_output(output: &Path) -> anyhow::Result<std::path::PathBuf> {
    use anyhow::Context;
    let dir = output.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let probe = dir.join(format!(".blaze-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").with_context(|| format!("cannot write to {} (the output goes there)", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(dir)
}

pub fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().context("output path has no file name")?.to_string_lossy();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    // A temp file of this process, renamed into place: a reader (or a second writer) sees the
    // old file or the new one, never a torn one; on failure nothing is left behind.
    let written = std::fs::write(&tmp, text)
        .with_context(|| format!("cannot write {}", tmp.display()))
        .and_then(|()| std::fs::rename(&tmp, path).with_context(|| format!("cannot move into place {}", path.display())));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Current UTC time as `YYYY-MM-DDTHH:MM:SSZ` (no date crate needed).
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::write_atomic;

    #[test]
    fn atomic_write_replaces_whole_files_and_leaves_no_temporaries() {
        let dir = std::env::temp_dir().join(format!("blaze-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plan.ron");
        write_atomic(&path, "old").unwrap();
        write_atomic(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("plan.ron")]);
        // A write that cannot complete leaves the previous file untouched.
        assert!(write_atomic(&dir.join("missing-dir/plan.ron"), "x").is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
