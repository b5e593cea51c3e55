//! `blazec bench`: ms per step of every workload and regime under Burn's default and with
//! fusion off (BURN_FUSION_MAX_EXPLORATIONS=0, a per-process setting), processes interleaved.
use crate::run::{RunReport, to_ron, write_atomic};
use crate::tune::stats::{PROTOCOL, Summary};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
    /// Raw results (RON).
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
                }
            }
        }
    }
    let text = format!(
        "(protocol: {PROTOCOL:?}, device: {:?}, commit: {:?}, date: {:?}, rows: {})",
        blaze_workloads::device::device_info(),
        option_env!("BLAZE_COMMIT").unwrap_or("unknown"),
        crate::run::now_utc(),
        to_ron(&rows)
    );
    write_atomic(&args.output, &text)?;
    println!("| workload | regime | default ms (IQR) | fusion off ms (IQR) |\n|---|---|---|---|");
    for name in &names {
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
    Ok(())
}

fn child(name: &str, regime: &str, setting: &str, args: &BenchArgs) -> BenchRow {
    let report = std::env::temp_dir().join(format!("blaze-bench-{}.ron", std::process::id()));
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("own path"));
    cmd.args(["run", name, "--regime", regime, "--warmup", &args.warmup.to_string(), "--steps", &args.steps.to_string(), "--report"]).arg(&report);
    if let Some(b) = args.batch {
        cmd.args(["--batch", &b.to_string()]);
    }
    if let Some(s) = args.seq {
        cmd.args(["--seq", &s.to_string()]);
    }
    if setting == "fusion-off" {
        cmd.env("BURN_FUSION_MAX_EXPLORATIONS", "0");
    }
    let row = |summary, samples, error| BenchRow { model: name.into(), regime: regime.into(), setting: setting.into(), summary, samples, error };
    match cmd.output() {
        Ok(out) if out.status.success() => match std::fs::read_to_string(&report).ok().and_then(|t| ron::from_str::<RunReport>(&t).ok()) {
            Some(r) => row(Some(Summary::of(&r.step_ms)), r.step_ms, None),
            None => row(None, vec![], Some("no report".into())),
        },
        Ok(out) => row(None, vec![], Some(String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("failed").to_string())),
        Err(e) => row(None, vec![], Some(e.to_string())),
    }
}
