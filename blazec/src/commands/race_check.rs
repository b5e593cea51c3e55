//! `blazec race-check`: the race's error rates measured on the real device.
//!
//! Each level runs `--trials` independent races of Burn's plan against itself, the challenger
//! slowed by a known fraction (test-only switch, `measure::Slowdown`): level 0 is the A/A
//! check (any "faster" is a false win), a level above 0 measures power (how often the race
//! declares the slowed plan slower). The true size of each slowdown is calibrated first by one
//! long race of fixed length (`--calibrate-rounds`, a single look), since a busy wait after the
//! block's sync adds exactly its time but the step it is compared with is itself noisy.
//! All levels run in one process on one model instance, so they share compilation, autotune
//! and settling.
use crate::model_args::{ModelArgs, resolve_model};
use anyhow::Context;
use blaze_compiler::candidate::Candidate;
use blaze_compiler::catalog::Resolver;
use blaze_compiler::files::{to_ron, write_atomic};
use blaze_compiler::measure::{Slowdown, VisitShape, race_on_device};
use blaze_compiler::race::{Race, RaceRules, Standing, Stop, Verdict};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args, Clone)]
pub struct RaceCheckArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Independent races per level.
    #[arg(long, default_value_t = 40)]
    pub trials: usize,
    /// Slowdowns of the challenger as fractions of Burn's step; 0 is the A/A check.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub slowdown: Vec<f64>,
    /// Rounds of the calibration race per level above 0 (0: no calibration).
    #[arg(long, default_value_t = 200)]
    pub calibrate_rounds: u32,
    /// Warm-up steps before anything is timed.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    #[command(flatten)]
    pub race: crate::commands::tune::RaceArgs,
    /// CubeCL autotune cache directory (default: CubeCL's own for this working directory).
    #[arg(long)]
    pub autotune_cache: Option<PathBuf>,
    /// Results file (RON, raw samples of every race); a Markdown table is printed.
    #[arg(short, long)]
    pub output: PathBuf,
}

/// One race of a level, reduced (its raw rounds are kept in `Level::races`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Trial {
    pub stop: Stop,
    pub standing: Standing,
    pub rounds: usize,
    pub seconds: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Level {
    pub slowdown: f64,
    /// The long fixed-length race: the slowdown's true size as a ratio with its interval.
    pub calibration: Option<Standing>,
    pub trials: Vec<Trial>,
    pub faster: usize,
    pub slower: usize,
    pub equivalent: usize,
    pub not_separated: usize,
    pub races: Vec<Race>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RaceCheck {
    pub model: String,
    pub regime: String,
    pub device: blaze_ir::plan::DeviceInfo,
    pub commit: String,
    pub date: String,
    pub protocol: String,
    pub rules: RaceRules,
    pub autotune_cache: Option<String>,
    /// Wall time of the warm-up steps (the cold cost when the cache was empty).
    pub warmup_s: f64,
    pub visit: Option<VisitShape>,
    pub levels: Vec<Level>,
}

pub fn race_check(resolve: &Resolver, args: &RaceCheckArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.trials > 0, "--trials must be at least 1");
    anyhow::ensure!(args.slowdown.iter().all(|s| (0.0..=10.0).contains(s)), "--slowdown fractions must be in 0..=10");
    let cache = blaze_compiler::autotune::pin_autotune_cache(
        &args.autotune_cache.clone().unwrap_or_else(cubecl::environment::root),
    )?;
    let factory = resolve_model(resolve, &args.model)?;
    let mut model = factory.build(args.model.regime).map_err(anyhow::Error::msg)?;
    // Cold cost: compilation, autotune (unless the pinned cache already holds the decisions)
    // and exploration of Burn's plan, untimed by the races.
    let warmup_s = blaze_compiler::drive::warm_up(model.as_mut(), args.warmup);
    let (burn, twin) = (Candidate::new(0, vec![]), Candidate::new(1, vec![]));
    let rules = args.race.rules();
    let mut check = RaceCheck {
        model: model.describe().name,
        regime: args.model.regime.to_string(),
        device: model.describe().device,
        commit: blaze_compiler::COMMIT.into(),
        date: blaze_compiler::files::now_utc(),
        protocol: blaze_compiler::measure::PROTOCOL.into(),
        rules: rules.clone(),
        autotune_cache: Some(cache.display().to_string()),
        warmup_s,
        visit: None,
        levels: Vec::new(),
    };
    for &fraction in &args.slowdown {
        let slowdown = (fraction > 0.0).then_some(Slowdown { id: 1, fraction });
        let mut run_race = |rules: &RaceRules, visit: &mut Option<VisitShape>| -> anyhow::Result<Race> {
            let (race, shape, _) =
                race_on_device(model.as_mut(), &[&burn, &twin], |_| true, rules, slowdown, |_, _| {})
                    .map_err(anyhow::Error::msg)?;
            visit.get_or_insert(shape);
            Ok(race)
        };
        let calibration = match (fraction > 0.0, args.calibrate_rounds) {
            (true, n) if n > 0 => {
                let fixed = RaceRules {
                    min_rounds: n,
                    max_rounds: n,
                    budget: std::time::Duration::from_secs(3600),
                    ..rules.clone()
                };
                let race = run_race(&fixed, &mut check.visit)?;
                eprintln!("race-check: slowdown {fraction}: calibrated ratio {}", race.standings[0].describe());
                Some(race.standings[0].clone())
            }
            _ => None,
        };
        check.levels.push(Level::new(fraction, calibration));
        for t in 0..args.trials {
            let race = run_race(&rules, &mut check.visit)?;
            eprintln!(
                "race-check: slowdown {fraction} trial {}/{}: {} ({})",
                t + 1,
                args.trials,
                race.standings[0].describe(),
                race.stop_text()
            );
            check.levels.last_mut().expect("pushed above").record(race);
            // Written after every trial: a run killed at a time limit keeps what it measured.
            write_atomic(&args.output, &to_ron(&check))
                .with_context(|| format!("cannot write {}", args.output.display()))?;
        }
    }
    print!("{}", table(&check));
    Ok(())
}

impl Level {
    fn new(slowdown: f64, calibration: Option<Standing>) -> Self {
        Self {
            slowdown,
            calibration,
            trials: vec![],
            faster: 0,
            slower: 0,
            equivalent: 0,
            not_separated: 0,
            races: vec![],
        }
    }

    /// Adds one race's verdict (the challenger's) and its raw visits.
    fn record(&mut self, race: Race) {
        let s = race.standings[0].clone();
        match s.verdict {
            Verdict::Faster => self.faster += 1,
            Verdict::Slower => self.slower += 1,
            Verdict::Equivalent => self.equivalent += 1,
            Verdict::NotSeparated => self.not_separated += 1,
            Verdict::Broken(_) => {}
        }
        self.trials.push(Trial {
            stop: race.stop.clone(),
            standing: s,
            rounds: race.rounds.len(),
            seconds: race.seconds,
        });
        self.races.push(race);
    }
}

/// The Markdown summary of a check.
pub fn table(c: &RaceCheck) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "race-check {} {} on {} ({}, {}), commit {}, {}",
        c.model, c.regime, c.device.adapter, c.device.backend, c.device.compiler, c.commit, c.date
    );
    let _ = writeln!(
        md,
        "warm-up (compilation, autotune, exploration; untimed): {:.1} s; autotune cache {}",
        c.warmup_s,
        c.autotune_cache.as_deref().unwrap_or("CubeCL's default")
    );
    if let Some(v) = &c.visit {
        let _ = writeln!(
            md,
            "visits: {} steps per timed block (Burn's step {:.3} ms); rules: alpha {}, min effect {}, rounds {}..{}, budget {:.0} s per race",
            v.steps_per_visit,
            v.step_ms,
            c.rules.alpha,
            c.rules.min_effect,
            c.rules.min_rounds,
            c.rules.max_rounds,
            c.rules.budget.as_secs_f64()
        );
    }
    let _ = writeln!(
        md,
        "\n| slowdown | calibrated ratio [interval] | trials | declared slower | declared faster | equivalent | not separated | median rounds |\n|---|---|---|---|---|---|---|---|"
    );
    for l in &c.levels {
        let cal = l.calibration.as_ref().map_or("–".into(), |s| s.ratio_interval());
        let rounds: Vec<f64> = l.trials.iter().map(|t| t.rounds as f64).collect();
        let median =
            if rounds.is_empty() { "–".to_string() } else { format!("{}", blaze_compiler::stats::median(&rounds)) };
        let _ = writeln!(
            md,
            "| {:.3} | {cal} | {} | {} | {} | {} | {} | {median} |",
            l.slowdown,
            l.trials.len(),
            l.slower,
            l.faster,
            l.equivalent,
            l.not_separated
        );
    }
    md
}
