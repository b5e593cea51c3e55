//! `blazec bench`: ms per step of every workload and regime under Burn's default and with
//! fusion off (BURN_FUSION_MAX_EXPLORATIONS=0, a per-process setting), processes interleaved.
use crate::child::ChildRun;
use crate::run::{to_ron, write_atomic};
use crate::tune::stats::{PROTOCOL, Summary};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args, Clone)]
pub struct BenchArgs {
    /// Workloads to time (default: every built-in).
    pub models: Vec<String>,
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    #[arg(long, default_value_t = 10)]
    pub steps: u32,
    /// Processes per setting (alternating default / off).
    #[arg(long, default_value_t = 1)]
    pub repeats: u32,
    #[arg(long)]
    pub batch: Option<usize>,
    #[arg(long)]
    pub seq: Option<usize>,
    /// Seconds before one child process (compilation and autotune included) is killed and its
    /// row recorded as failed.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Raw results (RON), rewritten after every row so an interrupted run keeps what it measured.
    #[arg(short, long, default_value = "bench.results.ron")]
    pub output: PathBuf,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchRow {
    pub model: String,
    pub regime: String,
    pub setting: String,
    pub summary: Option<Summary>,
    pub samples: Vec<f64>,
    pub error: Option<String>,
}

pub fn bench(names: Vec<String>, args: &BenchArgs) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for name in &names {
        for regime in ["forward", "training"] {
            for rep in 0..args.repeats {
                for setting in ["default", "fusion-off"] {
                    eprintln!("bench {name} {regime} {setting} ({}/{})", rep + 1, args.repeats);
                    rows.push(child(name, regime, setting, args));
                    write_rows(&args.output, &rows)?;
                }
            }
        }
    }
    print_table(&names, &rows);
    Ok(())
}

fn write_rows(path: &Path, rows: &[BenchRow]) -> anyhow::Result<()> {
    let text = format!(
        "(protocol: {PROTOCOL:?}, device: {:?}, commit: {:?}, date: {:?}, rows: {})",
        blaze_workloads::device::device_info(),
        option_env!("BLAZE_COMMIT").unwrap_or("unknown"),
        crate::run::now_utc(),
        to_ron(&rows)
    );
    Ok(write_atomic(path, &text)?)
}

fn print_table(names: &[String], rows: &[BenchRow]) {
    println!("| workload | regime | default ms (IQR) | fusion off ms (IQR) |\n|---|---|---|---|");
    for name in names {
        for regime in ["forward", "training"] {
            let cell = |setting: &str| {
                let samples: Vec<f64> = rows.iter().filter(|r| &r.model == name && r.regime == regime && r.setting == setting).flat_map(|r| r.samples.clone()).collect();
                if samples.is_empty() {
                    return "failed".to_string();
                }
                let s = Summary::of(&samples);
                format!("{:.3} ({:.3})", s.median, s.spread())
            };
            println!("| {name} | {regime} | {} | {} |", cell("default"), cell("fusion-off"));
        }
    }
}

fn child(name: &str, regime: &str, setting: &str, args: &BenchArgs) -> BenchRow {
    let run = ChildRun {
        model: name,
        regime,
        batch: args.batch,
        seq: args.seq,
        warmup: args.warmup,
        steps: args.steps,
        fusion_off: setting == "fusion-off",
        timeout: Duration::from_secs(args.timeout),
    };
    let row = |summary, samples, error| BenchRow { model: name.into(), regime: regime.into(), setting: setting.into(), summary, samples, error };
    match run.run() {
        Ok(r) => row(Some(Summary::of(&r.step_ms)), r.step_ms, None),
        Err(e) => row(None, vec![], Some(e)),
    }
}
