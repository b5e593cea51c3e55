//! `blazec tune`: trace → enumerate → canonicalise → confirm → measure → verify → select →
//! emit plan.ron with a report. Burn's plan is candidate 0; a plan is kept only if it beats
//! Burn's by more than the noise band and verifies.
pub mod journal;
pub mod measure;
pub mod report;
pub mod stats;
pub mod verify;

use crate::candidate::Candidate;
use crate::confirm::{executed_partitions, group_by_fingerprint};
use crate::space::candidates;
use crate::tracing::{TraceOptions, trace};
use blaze_ir::plan::{DeviceInfo, Measurements, Regime};
use blaze_runtime::ModelFactory;
use serde::{Deserialize, Serialize};
use stats::{Separation, Summary, separate};
use std::time::Instant;
use verify::VerifyOutcome;

#[derive(Clone, Debug)]
pub struct TuneOptions {
    pub regime: Regime,
    pub budget: usize,
    pub seed: u64,
    pub rounds: u32,
    pub warmup: u32,
    /// Test-only: make this candidate compute something different during verification.
    pub inject_fault: Option<usize>,
    /// Measured separately (a process with fusion off), if available.
    pub fusion_off: Option<Summary>,
    pub results_file: String,
    /// Greedy path instead of enumeration: (challengers per round, rounds per race, max rounds).
    pub greedy: Option<(usize, u32, usize)>,
    /// Candidates an earlier worker found broken (hung or crashed): left out, reported.
    pub broken: Vec<(usize, String)>,
}

/// One timed candidate.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Timed {
    pub id: usize,
    pub cuts: String,
    pub summary: Summary,
    pub samples: Vec<f64>,
    /// Why it lost, or that it was kept.
    pub outcome: String,
}

/// Everything `tune` measured and decided (also the raw results file).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TuneResult {
    pub model: String,
    pub regime: String,
    pub shapes: String,
    pub device: DeviceInfo,
    pub burn_version: String,
    pub commit: String,
    pub date: String,
    pub protocol: String,
    pub results_file: String,
    pub requested: usize,
    pub collapsed_by_egraph: usize,
    pub collapsed_by_confirm: usize,
    pub timed: Vec<Timed>,
    pub broken: Vec<(usize, String)>,
    pub fusion_off: Option<Summary>,
    pub selected: usize,
    pub selected_text: String,
    pub selection: String,
    pub verify: VerifyOutcome,
    pub warmup_s: f64,
    pub window_s: f64,
    pub break_even_default: Option<(f64, f64)>,
    pub break_even_stock: Option<(f64, f64)>,
    #[serde(skip)]
    pub plan: Option<blaze_ir::PlanFile>,
}

pub fn tune(factory: &dyn ModelFactory, opts: &TuneOptions, progress: &mut dyn FnMut(&str)) -> anyhow::Result<TuneResult> {
    let start = Instant::now();
    progress("trace");
    let traced = trace(factory, &TraceOptions { regime: opts.regime, warmup: opts.warmup })?;
    let mut model = factory.build(opts.regime).map_err(anyhow::Error::msg)?;
    let (cands, canon) = match opts.greedy {
        None => candidates(&traced, opts.budget, opts.seed),
        Some(g) => greedy_candidates(model.as_mut(), &traced, g, progress),
    };
    let left_out = |c: &&Candidate| opts.broken.iter().any(|(id, _)| *id == c.id);
    let reps: Vec<&Candidate> = canon.representatives().into_iter().map(|i| &cands[i]).filter(|c| !left_out(c)).collect();

    let warm = Instant::now();
    let parts = executed_partitions(model.as_mut(), &reps, |i, n| progress(&format!("confirm {}/{n}", i + 1)));
    let warmup_s = warm.elapsed().as_secs_f64();
    let ids: Vec<usize> = reps.iter().map(|c| c.id).collect();
    let groups = group_by_fingerprint(&ids, &parts);
    let survivors: Vec<&Candidate> = groups.iter().map(|g| &cands[g[0]]).collect();

    progress(&format!("{} survivors of {} requested; measuring", survivors.len(), cands.len()));
    let samples = measure::interleaved(model.as_mut(), &survivors, opts.rounds, |r, n| progress(&format!("round {}/{n}", r + 1)));
    drop(model);
    let mut timed: Vec<Timed> = survivors
        .iter()
        .filter_map(|c| samples.ms.get(&c.id).map(|ms| Timed { id: c.id, cuts: c.to_text(), summary: Summary::of(ms), samples: ms.clone(), outcome: String::new() }))
        .collect();
    progress("select and verify");
    let (selected, selection, verify) = select(factory, opts, &cands, &mut timed, progress);
    let window_s = start.elapsed().as_secs_f64();

    let burn = timed.iter().find(|t| t.id == 0).map(|t| t.summary.clone());
    let kept = timed.iter().find(|t| t.id == selected).map(|t| t.summary.clone());
    let steps_in_window = samples.steps as f64 + (cands.len() as f64) * 3.0;
    let break_even = |slow: Option<f64>| -> Option<(f64, f64)> {
        let (slow, fast) = (slow?, kept.as_ref()?.median);
        (slow > fast).then(|| {
            let excess_s = (window_s - steps_in_window * fast / 1e3).max(0.0);
            let n = excess_s / ((slow - fast) / 1e3);
            (n, n * fast / 1e3 / 60.0)
        })
    };
    let stock = match (&burn, &opts.fusion_off) {
        (Some(b), Some(o)) => Some(b.median.min(o.median)),
        (b, _) => b.as_ref().map(|b| b.median),
    };
    let mut plan = traced.plan(cands[selected].cuts.clone());
    plan.measurements = Some(Measurements {
        protocol: stats::PROTOCOL.into(),
        results_file: opts.results_file.clone(),
        default_ms: burn.as_ref().map_or(f64::NAN, |s| s.median),
        fusion_off_ms: opts.fusion_off.as_ref().map(|s| s.median),
        plan_ms: kept.as_ref().map_or(f64::NAN, |s| s.median),
        spread_ms: kept.as_ref().map_or(f64::NAN, |s| s.spread()),
        verify: format!("{verify:?}"),
        selection: selection.clone(),
    });
    Ok(TuneResult {
        model: traced.model.clone(),
        regime: traced.regime.to_string(),
        shapes: traced.shapes.clone(),
        device: traced.device.clone(),
        burn_version: traced.burn_version.clone(),
        commit: option_env!("BLAZE_COMMIT").unwrap_or("unknown").into(),
        date: crate::run::now_utc(),
        protocol: stats::PROTOCOL.into(),
        results_file: opts.results_file.clone(),
        requested: cands.len(),
        collapsed_by_egraph: canon.collapsed(),
        collapsed_by_confirm: groups.iter().map(|g| g.len() - 1).sum(),
        broken: opts.broken.iter().cloned().chain(samples.broken).collect(),
        fusion_off: opts.fusion_off.clone(),
        selected,
        selected_text: cands[selected].to_text(),
        selection,
        verify,
        warmup_s,
        window_s,
        break_even_default: break_even(burn.as_ref().map(|b| b.median)),
        break_even_stock: break_even(stock),
        timed,
        plan: Some(plan),
    })
}

/// Fastest verified survivor that beats Burn's plan beyond the band; otherwise Burn's plan.
fn select(factory: &dyn ModelFactory, opts: &TuneOptions, cands: &[Candidate], timed: &mut [Timed], progress: &mut dyn FnMut(&str)) -> (usize, String, VerifyOutcome) {
    let Some(burn) = timed.iter().find(|t| t.id == 0).map(|t| t.summary.clone()) else {
        return (0, "Burn's plan was not measured; kept".into(), VerifyOutcome::NothingToCheck);
    };
    let mut order: Vec<usize> = (0..timed.len()).collect();
    order.sort_by(|&a, &b| timed[a].summary.median.total_cmp(&timed[b].summary.median));
    let mut chosen: Option<(usize, String, VerifyOutcome)> = None;
    let mut first_refusal: Option<VerifyOutcome> = None;
    for &i in &order {
        let t = &mut timed[i];
        if t.id == 0 {
            t.outcome = "incumbent (Burn's plan)".into();
            continue;
        }
        if chosen.is_some() {
            t.outcome = "slower than the kept plan".into();
            continue;
        }
        match separate(&burn, &t.summary) {
            Separation::Loses => t.outcome = "slower than Burn's plan beyond the band".into(),
            Separation::NotSeparated => t.outcome = "not separated from Burn's plan".into(),
            Separation::Wins => {
                progress(&format!("verify c{}", t.id));
                let v = verify::verify(factory, opts.regime, &cands[t.id], opts.inject_fault == Some(t.id));
                if v.keeps() {
                    t.outcome = "kept: beats Burn's plan beyond the band, verified".into();
                    chosen = Some((t.id, format!("c{} beats Burn's plan by {:.3} ms (> band)", t.id, burn.median - t.summary.median), v));
                } else {
                    t.outcome = format!("refused by verify: {v:?}");
                    first_refusal.get_or_insert(v);
                }
            }
        }
    }
    chosen.unwrap_or_else(|| {
        let why = match first_refusal {
            Some(_) => "every separated winner was refused by verify; Burn's plan kept",
            None => "not separated: no candidate beats Burn's plan by more than the band; Burn's plan kept",
        };
        (0, why.into(), first_refusal.unwrap_or(VerifyOutcome::NothingToCheck))
    })
}

/// Burn's plan and the plan the greedy path ended on, raced on `model` round by round.
fn greedy_candidates(model: &mut dyn blaze_runtime::Model, traced: &blaze_ir::Trace, (per_round, rounds, max_rounds): (usize, u32, usize), progress: &mut dyn FnMut(&str)) -> (Vec<Candidate>, crate::canon::Canonical) {
    let path = crate::greedy::greedy(&traced.live_cut_points(), per_round, max_rounds, |inc, challengers| {
        progress(&format!("greedy: {} cut(s) kept, racing {} challengers", inc.len(), challengers.len()));
        let all: Vec<Candidate> = std::iter::once(Candidate::new(0, inc.to_vec()))
            .chain(challengers.iter().enumerate().map(|(i, c)| Candidate::new(i + 1, c.clone())))
            .collect();
        let refs: Vec<&Candidate> = all.iter().collect();
        crate::session::warm_up(model, 0);
        for c in &refs {
            crate::confirm::install(c);
            crate::session::warm_up(model, crate::confirm::CONFIRM_WARMUP);
        }
        let s = measure::interleaved(model, &refs, rounds, |_, _| {});
        let inc = Summary::of(s.ms.get(&0)?);
        (1..all.len())
            .filter_map(|i| s.ms.get(&i).map(|ms| (i, Summary::of(ms))))
            .filter(|(_, sum)| separate(&inc, sum) == Separation::Wins)
            .min_by(|a, b| a.1.median.total_cmp(&b.1.median))
            .map(|(i, _)| i - 1)
    });
    progress(&format!("greedy stopped: {} ({} challengers tried)", path.stop_reason, path.challengers_tried));
    let mut cands = vec![Candidate::new(0, vec![])];
    if let Some(last) = path.kept.last().filter(|k| !k.is_empty()) {
        cands.push(Candidate::new(1, last.clone()));
    }
    let groups = (0..cands.len()).map(|i| vec![i]).collect();
    let canon = crate::canon::Canonical { groups, stop_reason: format!("greedy: {}", path.stop_reason), iterations: 0, egraph_nodes: 0 };
    (cands, canon)
}
