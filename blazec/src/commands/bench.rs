//! `blazec bench`: ms per step of every workload and regime under Burn's default and with
//! fusion off (BURN_FUSION_MAX_EXPLORATIONS=0, a per-process setting), processes interleaved.
//! `blazec bench --table FILE..` prints the table of earlier results files (a campaign split over
//! several GPU calls) without running anything.
use blaze_compiler::child::ChildRun;
use blaze_compiler::files::{to_ron, write_atomic};
use blaze_compiler::measure::PROTOCOL;
use blaze_compiler::stats::Summary;
use blaze_ir::plan::DeviceInfo;
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
    /// Print the table of these results files instead of running (a later file's row replaces an
    /// earlier one for the same workload, regime and setting).
    #[arg(long, num_args = 1.., conflicts_with = "models")]
    pub table: Vec<PathBuf>,
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

/// A results file: the rows and what they were measured with.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchFile {
    pub protocol: String,
    pub device: DeviceInfo,
    pub commit: String,
    pub date: String,
    pub rows: Vec<BenchRow>,
}

impl BenchFile {
    /// Reads a results file. Files written by d8526ba and earlier carry the device in Rust's debug
    /// form (`DeviceInfo { .. }`); it is rewritten as a RON struct so they stay readable.
    pub fn read(path: &Path) -> anyhow::Result<BenchFile> {
        use anyhow::Context;
        let text = blaze_ir::file::read_text(path)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let text = legacy_device_to_ron(&text);
        ron::from_str(&text).with_context(|| format!("{} is not a blazec bench results file", path.display()))
    }
}

fn legacy_device_to_ron(text: &str) -> String {
    match (text.find("DeviceInfo {"), text.find("}, commit:")) {
        (Some(a), Some(b)) if a < b => {
            format!("{}({}){}", &text[..a], text[a + "DeviceInfo {".len()..b].trim(), &text[b + 1..])
        }
        _ => text.to_string(),
    }
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
    let file = BenchFile {
        protocol: PROTOCOL.into(),
        device: blaze_workloads::device::device_info(),
        commit: blaze_compiler::COMMIT.into(),
        date: blaze_compiler::files::now_utc(),
        rows: rows.to_vec(),
    };
    write_atomic(path, &to_ron(&file))
}

/// `--table`: merges earlier results files and prints their table with each row's source.
pub fn table(paths: &[PathBuf]) -> anyhow::Result<()> {
    let mut files = Vec::new();
    for path in paths {
        let file = BenchFile::read(path)?;
        println!(
            "{}: {} on {} ({}), commit {}, {}",
            path.display(),
            file.rows.len(),
            file.device.adapter,
            file.device.compiler,
            file.commit,
            file.date
        );
        files.push(file);
    }
    let rows = merge(files);
    let mut names: Vec<String> = Vec::new();
    for r in &rows {
        if !names.contains(&r.model) {
            names.push(r.model.clone());
        }
    }
    println!();
    print_table(&names, &rows);
    Ok(())
}

/// Rows of several files in order: a later file replaces an earlier file's cells (workload,
/// regime, setting); the repeats inside one file all stay.
fn merge(files: Vec<BenchFile>) -> Vec<BenchRow> {
    let key = |r: &BenchRow| (r.model.clone(), r.regime.clone(), r.setting.clone());
    let mut rows: Vec<BenchRow> = Vec::new();
    for file in files {
        let replaced: Vec<_> = file.rows.iter().map(key).collect();
        rows.retain(|r| !replaced.contains(&key(r)));
        rows.extend(file.rows);
    }
    rows
}

fn print_table(names: &[String], rows: &[BenchRow]) {
    println!("| workload | regime | default ms (IQR) | fusion off ms (IQR) |\n|---|---|---|---|");
    for name in names {
        for regime in ["forward", "training"] {
            let cell = |setting: &str| {
                let samples: Vec<f64> = rows
                    .iter()
                    .filter(|r| &r.model == name && r.regime == regime && r.setting == setting)
                    .flat_map(|r| r.samples.clone())
                    .collect();
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
    let row = |summary, samples, error| BenchRow {
        model: name.into(),
        regime: regime.into(),
        setting: setting.into(),
        summary,
        samples,
        error,
    };
    match run.run() {
        Ok(r) => row(Some(Summary::of(&r.step_ms)), r.step_ms, None),
        Err(e) => row(None, vec![], Some(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW: &str = r#"(model: "chain-32", regime: "forward", setting: "default", summary: Some((median: 1.0, p25: 0.9, p75: 1.1, n: 3)), samples: [0.9, 1.0, 1.1], error: None)"#;

    #[test]
    fn reads_files_with_the_legacy_debug_device_header() {
        let legacy = format!(
            r#"(protocol: "p", device: DeviceInfo {{ adapter: "NVIDIA H200", backend: "vulkan", compiler: "spirv" }}, commit: "d8526bab847a", date: "d", rows: [{ROW}])"#
        );
        let path = std::env::temp_dir().join(format!("blaze-bench-legacy-{}.ron", std::process::id()));
        std::fs::write(&path, legacy).unwrap();
        let file = BenchFile::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(file.device.adapter, "NVIDIA H200");
        assert_eq!(file.rows[0].samples, vec![0.9, 1.0, 1.1]);
    }

    fn file(rows: &[(&str, f64)]) -> BenchFile {
        let row = |(setting, ms): &(&str, f64)| BenchRow {
            model: "m".into(),
            regime: "forward".into(),
            setting: setting.to_string(),
            summary: None,
            samples: vec![*ms],
            error: None,
        };
        BenchFile {
            protocol: String::new(),
            device: DeviceInfo { adapter: String::new(), backend: String::new(), compiler: String::new() },
            commit: String::new(),
            date: String::new(),
            rows: rows.iter().map(row).collect(),
        }
    }

    #[test]
    fn later_files_replace_cells_and_repeats_within_a_file_stay() {
        let first = file(&[("default", 1.0), ("default", 2.0), ("fusion-off", 3.0)]);
        let second = file(&[("default", 4.0), ("default", 5.0)]);
        let samples: Vec<(String, f64)> =
            merge(vec![first, second]).into_iter().map(|r| (r.setting, r.samples[0])).collect();
        assert_eq!(samples, [("fusion-off".into(), 3.0), ("default".into(), 4.0), ("default".into(), 5.0)]);
    }

    #[test]
    fn current_files_round_trip() {
        let file = BenchFile {
            protocol: PROTOCOL.into(),
            device: DeviceInfo { adapter: "a".into(), backend: "vulkan".into(), compiler: "wgsl".into() },
            commit: "c".into(),
            date: "d".into(),
            rows: vec![ron::from_str(ROW).unwrap()],
        };
        let back: BenchFile = ron::from_str(&to_ron(&file)).unwrap();
        assert_eq!(back.rows[0].model, "chain-32");
        assert_eq!(back.device, file.device);
    }
}
