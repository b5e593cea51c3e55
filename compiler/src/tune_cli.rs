//! `blazec tune` front end: device check, fusion-off arm, A/A mode, the worker's pipeline and
//! its atomic outputs (the supervising side is `tune_supervise.rs`).
use crate::cli::{ModelArgs, Resolver, resolve_model};
use crate::run::{to_ron, write_atomic};
use crate::tune::{TuneOptions, journal, report, stats::{self, Summary}, tune};
use anyhow::{Context, bail};
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Args, Clone)]
pub struct TuneArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Device to tune on: vulkan, metal, wgpu (any adapter) or lavapipe (Mesa's CPU Vulkan).
    #[arg(long, default_value = "wgpu")]
    pub device: String,
    /// Where to write the plan (RON); report.md, report.svg and the raw results go beside it.
    #[arg(short, long, default_value = "plan.ron")]
    pub output: PathBuf,
    /// Candidates requested when there are more than 10 live cut points.
    #[arg(long, default_value_t = 16)]
    pub budget: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Interleaved rounds (one timed step per candidate per round).
    #[arg(long, default_value_t = 15)]
    pub rounds: u32,
    /// Warm-up steps before the trace.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Skip the fusion-off arm (a separate process with BURN_FUSION_MAX_EXPLORATIONS=0).
    #[arg(long)]
    pub no_fusion_off: bool,
    /// A/A mode: time Burn's plan against itself for this many rounds and report the
    /// false-win rate of the selection rule (no plan is written).
    #[arg(long)]
    pub aa_rounds: Option<u32>,
    /// Greedy path instead of enumeration: challengers per round (rounds per race = --rounds).
    #[arg(long)]
    pub greedy: Option<usize>,
    /// Most greedy rounds.
    #[arg(long, default_value_t = 8)]
    pub greedy_max_rounds: usize,
    /// Print each stage with its elapsed time even when stderr is not a terminal.
    #[arg(short, long)]
    pub verbose: bool,
    /// Seconds a candidate may go without progress (its steps block, or its process dies)
    /// before it is recorded as broken and the tune goes on without it.
    #[arg(long, default_value_t = 300)]
    pub hang_timeout: u64,
    /// Test only: make candidate N compute something different during verification.
    #[arg(long, hide = true)]
    pub inject_fault: Option<usize>,
    /// Test only: make installing candidate N block forever (a hung candidate).
    #[arg(long, hide = true)]
    pub inject_hang: Option<usize>,
    /// Test only: make installing candidate N panic (a crashing candidate).
    #[arg(long, hide = true)]
    pub inject_panic: Option<usize>,
}

pub fn check_device(requested: &str) -> anyhow::Result<()> {
    let info = blaze_workloads::device::device_info();
    match requested {
        "metal" if !cfg!(target_os = "macos") => bail!("--device metal: Metal is not available on this machine ({}); use --device vulkan or lavapipe", std::env::consts::OS),
        "metal" => bail!("--device metal: this blazec was built without Metal support (build with the `metal` feature)"),
        "vulkan" if info.backend != "vulkan" => bail!("--device vulkan: no Vulkan adapter found (wgpu offers `{}` on {})", info.adapter, info.backend),
        "lavapipe" if !info.adapter.contains("llvmpipe") => bail!("--device lavapipe: the adapter is `{}`, not lavapipe (install mesa-vulkan-drivers)", info.adapter),
        "vulkan" | "lavapipe" | "wgpu" => Ok(()),
        other => bail!("--device {other}: unknown device (expected vulkan, metal, wgpu or lavapipe)"),
    }
}

pub fn run_tune(resolve: &Resolver, args: &TuneArgs) -> anyhow::Result<()> {
    check_device(&args.device)?;
    let factory = resolve_model(resolve, &args.model)?;
    let dir = args.output.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    if let Some(rounds) = args.aa_rounds {
        return aa(factory.as_ref(), args, rounds, &dir);
    }
    if journal::open_from_env() {
        return worker(factory.as_ref(), args, &dir);
    }
    crate::tune_supervise::supervise(args, &mut progress_printer(args.verbose))
}

/// Prints a stage: one line each with `-v`, a rewritten line on a terminal, nothing when piped.
pub fn progress_printer(verbose: bool) -> impl FnMut(&str) {
    let tty = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    move |stage: &str| {
        if verbose {
            eprintln!("[blazec tune {:7.1} s] {stage}", started.elapsed().as_secs_f64());
        } else if tty {
            eprint!("\r\x1b[2K[blazec tune {:5.0} s] {stage} {}", started.elapsed().as_secs_f64(), bar(stage));
        }
    }
}

/// A 20-character bar for stages that count (`confirm 3/16`, `round 4/15`); empty otherwise.
fn bar(stage: &str) -> String {
    let counted = stage.split_whitespace().find_map(|w| {
        let (k, n) = w.split_once('/')?;
        Some((k.parse::<usize>().ok()?, n.parse::<usize>().ok()?))
    });
    match counted {
        Some((k, n)) if n > 0 && k <= n => {
            let full = 20 * k / n;
            format!("[{}{}]", "#".repeat(full), "-".repeat(20 - full))
        }
        _ => String::new(),
    }
}

/// The pipeline, in the worker process; writes every output atomically at the end.
fn worker(factory: &dyn blaze_runtime::ModelFactory, args: &TuneArgs, dir: &Path) -> anyhow::Result<()> {
    journal::inject_hang(args.inject_hang);
    journal::inject_panic(args.inject_panic);
    let fusion_off = match std::env::var(journal::FUSION_OFF_ENV) {
        Ok(text) => Some(ron::from_str::<Summary>(&text).context("fusion-off summary from the supervisor")?),
        Err(_) => None,
    };
    let stem = args.output.file_stem().map_or("plan".into(), |s| s.to_string_lossy().into_owned());
    let results = dir.join(format!("{stem}.results.ron"));
    let opts = TuneOptions {
        regime: args.model.regime,
        budget: args.budget,
        seed: args.seed,
        rounds: args.rounds,
        warmup: args.warmup,
        inject_fault: args.inject_fault,
        fusion_off,
        results_file: results.display().to_string(),
        greedy: args.greedy.map(|n| (n, args.rounds, args.greedy_max_rounds)),
        broken: journal::broken_from_env(),
    };
    let mut progress = progress_printer(args.verbose);
    let result = tune(factory, &opts, &mut progress)?;
    if std::io::stderr().is_terminal() && !args.verbose {
        eprintln!();
    }
    write_atomic(&results, &to_ron(&result))?;
    write_atomic(&dir.join(format!("{stem}.report.md")), &report::markdown(&result))?;
    write_atomic(&dir.join(format!("{stem}.report.svg")), &report::svg(&result))?;
    write_atomic(&args.output, &result.plan.as_ref().expect("tune returns a plan").to_ron())?;
    println!("{}", report::markdown(&result));
    Ok(())
}

/// Times the model in a child process with fusion off (a per-process Burn setting).
pub(crate) fn fusion_off_arm(model: &ModelArgs, steps: u32) -> anyhow::Result<Summary> {
    let regime = model.regime.to_string();
    let run = crate::child::ChildRun {
        model: &model.model,
        regime: &regime,
        batch: model.batch,
        seq: model.seq,
        warmup: 3,
        steps,
        fusion_off: true,
        timeout: std::time::Duration::from_secs(600),
    };
    let report = run.run().map_err(|e| anyhow::anyhow!("fusion-off run failed: {e}"))?;
    Ok(Summary::of(&report.step_ms))
}

/// A/A: Burn's plan against itself; how often would the rule declare a winner?
fn aa(factory: &dyn blaze_runtime::ModelFactory, args: &TuneArgs, rounds: u32, dir: &Path) -> anyhow::Result<()> {
    use crate::candidate::Candidate;
    let (a, b) = (Candidate::new(0, vec![]), Candidate::new(1, vec![]));
    let mut model = factory.build(args.model.regime).map_err(anyhow::Error::msg)?;
    crate::session::warm_up(model.as_mut(), args.warmup);
    let s = crate::tune::measure::interleaved(model.as_mut(), &[&a, &b], rounds, |_, _| {});
    let (sa, sb) = (s.ms[&0].clone(), s.ms[&1].clone());
    let trials = (rounds / 10).max(1) as usize;
    let (wins, n) = stats::false_win_rate(&sa, &sb, trials);
    let text = format!(
        "A/A {} {}: {} rounds, {} trials of {} rounds; rule declared a winner in {wins} of {n} trials (false-win rate {:.0}%)\nA: {:?}\nB: {:?}\nprotocol: {}\ndevice: {:?}\ncommit: {}\ndate: {}\nsamples A: {:?}\nsamples B: {:?}\n",
        args.model.model, args.model.regime, rounds, n, rounds as usize / n.max(1), 100.0 * wins as f64 / n.max(1) as f64,
        Summary::of(&sa), Summary::of(&sb), stats::PROTOCOL, blaze_workloads::device::device_info(),
        option_env!("BLAZE_COMMIT").unwrap_or("unknown"), crate::run::now_utc(), sa, sb);
    write_atomic(&dir.join("aa.txt"), &text)?;
    print!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn bar_fills_with_the_count_and_ignores_other_stages() {
        assert_eq!(super::bar("confirm 5/20"), format!("[{}{}]", "#".repeat(5), "-".repeat(15)));
        assert_eq!(super::bar("round 15/15"), format!("[{}]", "#".repeat(20)));
        assert_eq!(super::bar("trace"), "");
        assert_eq!(super::bar("3 survivors of 4 requested; measuring"), "");
    }
}
