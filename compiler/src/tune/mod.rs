//! `blazec tune`: trace → enumerate → canonicalise → confirm → race (with the in-process
//! fusion-off arm) → verify → select → emit plan.ron with a report. Burn's plan is candidate 0
//! and the reference of every paired comparison; a plan is kept only if the race shows it
//! faster with confidence by the minimum effect and it verifies.
pub mod journal;
pub mod processes;
pub mod report;
pub mod supervise;
pub mod table;

use crate::candidate::{Candidate, CandidateTable, Origin};
use crate::confirm::{confirm, executed_partitions};
use crate::measure::{self, VisitShape};
use crate::race::{Race, RaceRules, Standing, Verdict};
use crate::space::{Enumeration, request};
use crate::stats::Summary;
use crate::tracer::{TraceOptions, trace};
use crate::verify::{self, VerifyOutcome};
use blaze_ir::plan::{DeviceInfo, Measurements, PlanStore, Regime, Settings};
use blaze_runtime::{Model, ModelFactory};
use serde::{Deserialize, Serialize};
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct TuneOptions {
    pub regime: Regime,
    pub budget: usize,
    pub seed: u64,
    pub warmup: u32,
    /// How the race decides and when it stops.
    pub rules: RaceRules,
    /// Test-only: make this candidate compute something different during verification.
    pub inject_fault: Option<usize>,
    /// Test-only: make this candidate's visits slower by a known fraction.
    pub slowdown: Option<measure::Slowdown>,
    /// The cross-check: fusion off measured in a separate process, if it ran.
    pub fusion_off: Option<FusionOffChild>,
    /// The CubeCL autotune cache every process of this tune uses.
    pub autotune_cache: Option<String>,
    pub results_file: String,
    /// Greedy path instead of enumeration: (challengers per round, max rounds).
    pub greedy: Option<(usize, usize)>,
    /// Candidates an earlier worker found broken (hung or crashed): left out, reported.
    pub broken: Vec<(usize, String)>,
    /// Beam widths of Burn's fusion search raced as settings-only candidates (in-process).
    pub max_blocks: Vec<u32>,
    /// Each width also cached by step position (`store=position`), raced beside the shared one.
    pub by_position: bool,
    /// Cut candidates per beam width, enumerated from a trace under that width (its
    /// partition and live cut points) and canonicalised by the e-graph with that trace's facts.
    pub cuts_per_width: usize,
    /// Cut candidates by cut-point class (the same place in every layer) instead of sampled.
    pub classes: bool,
    /// Race captured execution after the race: Burn's plan and the winner, captured.
    pub captured: bool,
    /// Steps of the captured gate, if not the regime's default.
    pub gate_steps: Option<u32>,
}

/// Fusion off in a process of its own (BURN_FUSION_MAX_EXPLORATIONS=0): the cross-check of the
/// in-process arm, not a contestant (process-to-process noise is larger than the effects).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FusionOffChild {
    pub summary: Summary,
    /// Executed-partition fingerprint of its recorded step.
    pub partition: String,
}

/// The in-process fusion-off arm and what it was checked against.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FusionOffArm {
    pub id: usize,
    pub partition: String,
    /// Every executed block holds exactly one operation.
    pub one_op_per_block: bool,
    /// Same executed partition as the separate BURN_FUSION_MAX_EXPLORATIONS=0 process, when it ran.
    pub matches_child: Option<bool>,
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
    /// Its paired standing against Burn's plan (protocol 3 on; absent in older files).
    #[serde(default)]
    pub standing: Option<Standing>,
}

/// Everything `tune` measured and decided (also the raw results file). Fields added after
/// protocol 2 default when an older file is read.
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
    /// Older files: the separate-process fusion-off summary.
    pub fusion_off: Option<Summary>,
    pub selected: usize,
    pub selected_text: String,
    pub selection: String,
    pub verify: VerifyOutcome,
    pub warmup_s: f64,
    pub window_s: f64,
    pub break_even_default: Option<(f64, f64)>,
    pub break_even_stock: Option<(f64, f64)>,
    #[serde(default)]
    pub fusion_off_arm: Option<FusionOffArm>,
    #[serde(default)]
    pub fusion_off_child: Option<FusionOffChild>,
    /// Why the race stopped.
    #[serde(default)]
    pub race_stop: String,
    #[serde(default)]
    pub race: Option<Race>,
    #[serde(default)]
    pub visit: Option<VisitShape>,
    #[serde(default)]
    pub autotune_cache: Option<String>,
    /// Cold cost: trace (compilation, autotune, exploration of Burn's plan) and confirm
    /// (the same for every candidate), untimed.
    #[serde(default)]
    pub trace_s: f64,
    /// The race alone (settling, sizing and rounds).
    #[serde(default)]
    pub race_s: f64,
    /// Settings fixed per process (the submission batch), raced across co-resident processes
    /// after the in-process race (absent when not asked for, and in older files).
    #[serde(default)]
    pub process_race: Option<processes::ProcessRace>,
    /// The race of captured execution after the first race (Burn's plan, the winner eager, both
    /// captured), when asked for; its candidates are also in `timed`, marked `exec=captured`.
    #[serde(default)]
    pub captured_race: Option<Race>,
    /// How the captured race's visits were sized, with the memory around each recording.
    #[serde(default)]
    pub captured_visit: Option<VisitShape>,
    #[serde(skip)]
    pub plan: Option<blaze_ir::PlanFile>,
}

/// Runs one tune: trace → request → confirm → race → select (and verify) → result, one
/// [`Tune`] method per stage.
pub fn tune(
    factory: &dyn ModelFactory,
    opts: &TuneOptions,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<TuneResult> {
    let mut t = Tune { factory, opts, progress, start: Instant::now() };
    let traced = t.trace()?;
    let mut model = factory.build(opts.regime).map_err(anyhow::Error::msg)?;
    let mut space = t.request(&traced, model.as_mut())?;
    let confirmed = t.confirm(model.as_mut(), &space);
    let mut raced = t.race(model.as_mut(), &space, &confirmed)?;
    let chosen = t.select(model.as_mut(), &mut space, &mut raced)?;
    drop(model);
    Ok(t.result(traced, space, confirmed, raced, chosen))
}

/// One tune in progress: what every stage needs.
struct Tune<'a> {
    factory: &'a dyn ModelFactory,
    opts: &'a TuneOptions,
    progress: &'a mut dyn FnMut(&str),
    start: Instant,
}

/// The traced step and how long tracing took (compilation, autotune, Burn's exploration).
struct Traced {
    trace: blaze_ir::Trace,
    trace_s: f64,
}

/// The requested candidates (cut plans, then settings, then cuts at other widths) and the
/// fusion-off arm after them, the e-graph's groups of the cut plans, and the ids confirm runs.
struct Space {
    cands: CandidateTable,
    canon: crate::canon::Canonical,
    to_confirm: Vec<usize>,
    /// The fusion-off arm's id: the number of requested candidates.
    off: usize,
}

/// Confirm's groups and the racers: one per group, and the fusion-off arm when it runs.
struct Confirmed {
    groups: Vec<Vec<usize>>,
    racers: Vec<Candidate>,
    off: Candidate,
    off_arm: Option<FusionOffArm>,
    warmup_s: f64,
}

/// The race and what it measured.
struct Raced {
    race: Race,
    shape: VisitShape,
    steps: u64,
    race_s: f64,
    timed: Vec<Timed>,
}

/// What was kept and why, with the captured race when there was one.
struct Chosen {
    selected: usize,
    selection: String,
    verify: VerifyOutcome,
    captured_race: Option<Race>,
    captured_visit: Option<VisitShape>,
    window_s: f64,
}

impl Tune<'_> {
    fn left_out(&self, id: usize) -> bool {
        self.opts.broken.iter().any(|(b, _)| *b == id)
    }

    fn trace(&mut self) -> anyhow::Result<Traced> {
        (self.progress)("trace");
        let trace = trace(self.factory, &TraceOptions::new(self.opts.regime, self.opts.warmup))?;
        Ok(Traced { trace, trace_s: self.start.elapsed().as_secs_f64() })
    }

    /// Enumerate and canonicalise (or, greedy, race single cuts round by round), then the
    /// settings candidates and the cut plans at other widths.
    fn request(&mut self, traced: &Traced, model: &mut dyn Model) -> anyhow::Result<Space> {
        let (opts, trace) = (self.opts, &traced.trace);
        let (requested, canon) = match opts.greedy {
            None if opts.classes => request(trace, Enumeration::Classes { budget: opts.budget }),
            None => request(trace, Enumeration::Sampled { budget: opts.budget, seed: opts.seed }),
            Some(g) => {
                let units = match opts.classes {
                    true => crate::classes::classes(trace).into_iter().map(|c| c.members).collect(),
                    false => crate::greedy::single_cuts(&trace.live_cut_points()),
                };
                greedy_candidates(model, &units, g, &opts.rules, self.progress)
            }
        };
        // The request list's ids are its positions, which the e-graph's groups name.
        let mut cands = CandidateTable::default();
        for c in requested {
            cands.add(if c.is_burn() { Origin::Burn } else { Origin::Requested }, c);
        }
        // Settings candidates come after the cut candidates (ids stay stable for the journal) and
        // bypass the e-graph, which reasons about cuts only; confirm still collapses a width that
        // executes Burn's partition.
        let settings = cands.extend(Origin::Settings, settings_candidates(&opts.max_blocks, opts.by_position));
        let mut to_confirm: Vec<usize> = canon.representatives().into_iter().chain(settings).collect();
        if opts.cuts_per_width > 0 && opts.greedy.is_none() {
            for &width in &opts.max_blocks {
                (self.progress)(&format!("trace at beam width {width}"));
                to_confirm.extend(cuts_on_width(self.factory, opts, width, &mut cands)?);
            }
        }
        to_confirm.retain(|&id| !self.left_out(id));
        // Raced in this process, never confirmed; captured candidates take the ids after it.
        let off = cands.add(Origin::FusionOff, Candidate::fusion_off(0));
        Ok(Space { cands, canon, to_confirm, off })
    }

    /// Each requested candidate run once; one racer per group of those that executed alike.
    fn confirm(&mut self, model: &mut dyn Model, space: &Space) -> Confirmed {
        let warm = Instant::now();
        let reps: Vec<&Candidate> = space.to_confirm.iter().map(|&i| &space.cands[i]).collect();
        let progress = &mut *self.progress;
        let confirmed = confirm(model, &reps, |i, n| progress(&format!("confirm {}/{n}", i + 1)));
        let mut racers: Vec<Candidate> = confirmed.survivors().into_iter().map(|id| space.cands[id].clone()).collect();
        let off = space.cands[space.off].clone();
        let off_arm = (!self.left_out(off.id)).then(|| fusion_off_arm(model, &off, self.opts.fusion_off.as_ref()));
        if off_arm.is_some() {
            racers.push(off.clone());
        }
        Confirmed { groups: confirmed.groups, racers, off, off_arm, warmup_s: warm.elapsed().as_secs_f64() }
    }

    fn race(&mut self, model: &mut dyn Model, space: &Space, confirmed: &Confirmed) -> anyhow::Result<Raced> {
        let racers: Vec<&Candidate> = confirmed.racers.iter().collect();
        (self.progress)(&format!("{} survivors of {} requested, and fusion off; racing", racers.len() - 1, space.off));
        let race_start = Instant::now();
        let max = self.opts.rules.max_rounds;
        let progress = &mut *self.progress;
        let (race, shape, steps) = measure::race_on_device(
            model,
            &racers,
            |c| !c.unfused,
            &self.opts.rules,
            self.opts.slowdown,
            |r, n| progress(&format!("round {r}/{max} ({n} racing)")),
        )
        .map_err(anyhow::Error::msg)?;
        let timed = timed_of(&racers, &race);
        progress(&standings_line("raced", &timed));
        Ok(Raced { race, shape, steps, race_s: race_start.elapsed().as_secs_f64(), timed })
    }

    /// The race's winner verified (or Burn's plan); with `--captured`, a second race of
    /// captured execution decides.
    fn select(&mut self, model: &mut dyn Model, space: &mut Space, raced: &mut Raced) -> anyhow::Result<Chosen> {
        (self.progress)("select and verify");
        let (opts, factory) = (self.opts, self.factory);
        let first = select(factory, opts, space.cands.as_slice(), &raced.race, &mut raced.timed, self.progress);
        let (mut captured_race, mut captured_visit) = (None, None);
        let (selected, selection, verify) = match opts.captured {
            false => first,
            true => {
                let (selection, race, shape) =
                    race_captured(factory, opts, model, &mut space.cands, first, &mut raced.timed, self.progress)?;
                (captured_race, captured_visit) = (Some(race), Some(shape));
                selection
            }
        };
        let window_s = self.start.elapsed().as_secs_f64();
        Ok(Chosen { selected, selection, verify, captured_race, captured_visit, window_s })
    }

    /// The plan file and the results, with break-even against Burn's plan and the faster stock
    /// setting.
    fn result(&self, traced: Traced, space: Space, confirmed: Confirmed, raced: Raced, chosen: Chosen) -> TuneResult {
        let (opts, traced_trace) = (self.opts, &traced.trace);
        let Chosen { selected, selection, verify, captured_race, captured_visit, window_s } = chosen;
        let Raced { race, shape, steps, race_s, timed } = raced;
        // Requested: the candidates before the captured race added its own.
        let requested = confirmed.off.id;
        let median_of = |id: usize| timed.iter().find(|t| t.id == id).map(|t| t.summary.median);
        let (burn, kept, off_ms) = (median_of(0), median_of(selected), median_of(confirmed.off.id));
        let steps_in_window = steps as f64 + (requested as f64) * 3.0;
        let break_even = |slow: Option<f64>| -> Option<(f64, f64)> {
            let (slow, fast) = (slow?, kept?);
            (slow > fast).then(|| {
                let excess_s = (window_s - steps_in_window * fast / 1e3).max(0.0);
                let n = excess_s / ((slow - fast) / 1e3);
                (n, n * fast / 1e3 / 60.0)
            })
        };
        let stock = burn.map(|b| off_ms.map_or(b, |o| b.min(o)));
        let spread = timed.iter().find(|t| t.id == selected).map_or(f64::NAN, |t| t.summary.spread());
        let cands = &space.cands;
        let mut plan = traced_trace.plan_with(cands[selected].cuts.clone(), cands[selected].settings);
        plan.measurements = Some(Measurements {
            protocol: measure::PROTOCOL.into(),
            results_file: opts.results_file.clone(),
            default_ms: burn.unwrap_or(f64::NAN),
            fusion_off_ms: off_ms,
            plan_ms: kept.unwrap_or(f64::NAN),
            spread_ms: spread,
            verify: String::new(),
            verification: Some(verify.clone()),
            selection: selection.clone(),
        });
        TuneResult {
            model: traced_trace.model.clone(),
            regime: traced_trace.regime.to_string(),
            shapes: traced_trace.shapes.clone(),
            device: traced_trace.device.clone(),
            burn_version: traced_trace.burn_version.clone(),
            commit: crate::COMMIT.into(),
            date: crate::files::now_utc(),
            protocol: measure::PROTOCOL.into(),
            results_file: opts.results_file.clone(),
            requested,
            collapsed_by_egraph: space.canon.collapsed(),
            collapsed_by_confirm: confirmed.groups.iter().map(|g| g.len() - 1).sum(),
            // Both races': a captured arm that could not be recorded is a row of the report too.
            broken: opts
                .broken
                .iter()
                .cloned()
                .chain(broken_in(&race))
                .chain(captured_race.iter().flat_map(broken_in))
                .collect(),
            fusion_off: None,
            selected,
            selected_text: cands[selected].to_text(),
            selection,
            verify,
            warmup_s: confirmed.warmup_s,
            window_s,
            break_even_default: break_even(burn),
            break_even_stock: break_even(stock),
            fusion_off_arm: confirmed.off_arm,
            fusion_off_child: opts.fusion_off.clone(),
            race_stop: race.stop_text(),
            visit: Some(shape),
            autotune_cache: opts.autotune_cache.clone(),
            trace_s: traced.trace_s,
            race_s,
            race: Some(race),
            timed,
            process_race: None,
            captured_race,
            captured_visit,
            plan: Some(plan),
        }
    }
}

/// Every raced candidate's samples, summary and standing against Burn's plan.
fn timed_of(racers: &[&Candidate], race: &Race) -> Vec<Timed> {
    let samples = race.samples();
    racers
        .iter()
        .filter_map(|c| {
            let ms = samples.get(&c.id)?;
            let standing = race.standings.iter().find(|s| s.id == c.id).cloned();
            let outcome = standing.as_ref().map_or("reference: Burn's plan".into(), |s| s.describe());
            Some(Timed {
                id: c.id,
                cuts: c.to_text(),
                summary: Summary::of(ms),
                samples: ms.clone(),
                outcome,
                standing,
            })
        })
        .collect()
}

/// One progress line with every timed arm's ratio to Burn's plan and its interval, written as
/// soon as a race ends: a tune stopped later (a gate of a thousand steps, a deadline) has
/// already told what the race measured.
fn standings_line(what: &str, timed: &[Timed]) -> String {
    let arms: Vec<String> = timed
        .iter()
        .filter_map(|t| {
            let s = t.standing.as_ref()?;
            // A plan with many cuts is named by its id alone (the report lists its cuts).
            let name = if t.cuts.len() <= 40 { t.cuts.clone() } else { format!("c{}", t.id) };
            Some(format!("{name} {}", s.ratio_interval()))
        })
        .collect();
    let burn =
        timed.iter().find(|t| t.standing.is_none()).map(|t| format!(" (Burn's plan {:.3} ms)", t.summary.median));
    format!("{what}: {}{}", arms.join("; "), burn.unwrap_or_default())
}

/// The captured race's progress line: its standings, then each arm that broke and why (a
/// recording the model refused leaves no standing to show).
fn captured_line(timed: &[Timed], race: &Race) -> String {
    let mut line = standings_line("raced captured", timed);
    for (id, why) in broken_in(race) {
        let sep = if line.ends_with(": ") { "" } else { "; " };
        line.push_str(&format!("{sep}c{id}: {why}"));
    }
    line
}

/// The arms of `race` that broke (a recording refused, a worker lost), with why.
fn broken_in(race: &Race) -> impl Iterator<Item = (usize, String)> + '_ {
    race.standings.iter().filter_map(|s| match &s.verdict {
        Verdict::Broken(why) => Some((s.id, why.clone())),
        _ => None,
    })
}

type Selection = (usize, String, VerifyOutcome);

/// The captured race, on the first race's model: Burn's plan and the first race's selection
/// (when it is not Burn's), each run eagerly and captured (recorded on this model, replayed
/// with fresh batches written in place), raced against Burn's plan with the same visits and
/// statistics. A captured winner replaces the selection only if it passes the captured gate;
/// the first selection stands when the eager winner is the best winner, or nothing else keeps.
fn race_captured(
    factory: &dyn ModelFactory,
    opts: &TuneOptions,
    model: &mut dyn blaze_runtime::Model,
    cands: &mut CandidateTable,
    first: Selection,
    timed: &mut Vec<Timed>,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<(Selection, Race, VisitShape)> {
    let winner = first.0;
    let burn_captured = cands.add(Origin::Captured { of: 0 }, cands[0].captured(0));
    let mut arms = vec![cands[0].clone(), cands[burn_captured].clone()];
    // A winner with cuts is recorded with its cuts shifted past the step's input operations,
    // and kept only if the recording ran its partition (`blaze_runtime::captured::record_plan_on`).
    if winner != 0 {
        let captured = cands.add(Origin::Captured { of: winner }, cands[winner].captured(0));
        arms.push(cands[winner].clone());
        arms.push(cands[captured].clone());
    }
    let refs: Vec<&Candidate> = arms.iter().collect();
    progress(&format!("racing captured execution ({} arms)", refs.len() - 1));
    let max = opts.rules.max_rounds;
    // A training step's recording holds its state in place (another optimizer): its arms get
    // an instance of their own, the eager arms keep the race's.
    let mut own = match opts.regime {
        Regime::Training => Some(factory.build(opts.regime).map_err(anyhow::Error::msg)?),
        Regime::Forward => None,
    };
    let own: Option<&mut dyn blaze_runtime::Model> = own.as_mut().map(|m| &mut **m as &mut dyn blaze_runtime::Model);
    let (race, shape, _) = measure::race_with_captured_model(
        &mut *model,
        own,
        &refs,
        |_| true,
        &opts.rules,
        None,
        |r, n| progress(&format!("captured round {r}/{max} ({n} racing)")),
    )
    .map_err(anyhow::Error::msg)?;
    let captured: Vec<&Candidate> = refs.iter().copied().filter(|c| c.is_captured()).collect();
    let captured_timed = timed_of(&captured, &race);
    progress(&captured_line(&captured_timed, &race));
    timed.extend(captured_timed);
    // Burn's own executions that gate a recording (its eager twin, fusion off, Burn's default
    // plan) are run once for all the recordings gated here.
    let mut runs = verify::EagerRuns::default();
    for w in race.winners() {
        if w.id == winner {
            break;
        }
        let steps = opts.gate_steps.unwrap_or(verify::captured_gate_steps(opts.regime));
        progress(&format!("verify c{} (captured gate, {steps} steps)", w.id));
        let before = runs.reused();
        let v = verify::verify_captured(factory, opts.regime, &cands[w.id], steps, &mut runs);
        let reused = match runs.reused() - before {
            0 => String::new(),
            n => format!(" ({n} eager run(s) taken from an earlier gate)"),
        };
        // The verdict now: a tune cut off in a later gate still leaves why this one decided.
        progress(&format!("gate c{}: {v}{reused}", w.id));
        let t = timed.iter_mut().find(|t| t.id == w.id).expect("winners were timed");
        if v.keeps() {
            t.outcome = format!("kept: {}; verified (captured gate)", w.describe());
            let why =
                format!("c{} {}; {} (captured race); first race: {}", w.id, w.describe(), race.stop_text(), first.1);
            return Ok(((w.id, why, v), race, shape));
        }
        t.outcome = format!("refused by the captured gate: {v} ({})", w.describe());
    }
    Ok((first, race, shape))
}

/// Traces the model under beam width `width`, enumerates cut plans over that partition's live
/// cut points, canonicalises them with that trace's facts, and appends the first
/// `opts.cuts_per_width` e-graph representatives with cuts (Burn's plan at that width is
/// already a settings candidate) to `cands`, with the width; returns their ids.
fn cuts_on_width(
    factory: &dyn ModelFactory,
    opts: &TuneOptions,
    width: u32,
    cands: &mut CandidateTable,
) -> anyhow::Result<Vec<usize>> {
    let traced = trace(factory, &TraceOptions { regime: opts.regime, warmup: opts.warmup, max_blocks: Some(width) })?;
    let (requested, canon) =
        request(&traced, Enumeration::Sampled { budget: opts.cuts_per_width + 1, seed: opts.seed ^ u64::from(width) });
    let settings = blaze_ir::plan::Settings::beam_width(Some(width));
    let chosen: Vec<usize> = canon
        .representatives()
        .into_iter()
        .filter(|&i| !requested[i].cuts.is_empty())
        .take(opts.cuts_per_width)
        .collect();
    let cuts = chosen.iter().map(|&i| Candidate::with_settings(0, requested[i].cuts.clone(), settings));
    Ok(cands.extend(Origin::CutsAtWidth(width), cuts).collect())
}

/// One candidate per beam width: Burn's search at that width, no cuts (ids from the table
/// they are added to).
pub(crate) fn settings_candidates(widths: &[u32], by_position: bool) -> Vec<Candidate> {
    let stores: &[Option<PlanStore>] = if by_position { &[None, Some(PlanStore::ByPosition)] } else { &[None] };
    let settings = widths
        .iter()
        .flat_map(|&n| stores.iter().map(move |&store| Settings { store, ..Settings::beam_width(Some(n)) }));
    settings.map(|s| Candidate::with_settings(0, vec![], s)).collect()
}

/// Confirms the in-process fusion-off arm: one operation per executed block, and the same
/// partition as the separate fusion-off process when that ran.
fn fusion_off_arm(
    model: &mut dyn blaze_runtime::Model,
    off: &Candidate,
    child: Option<&FusionOffChild>,
) -> FusionOffArm {
    let part = executed_partitions(model, &[off], |_, _| {}).remove(0);
    let partition = part.fingerprint();
    FusionOffArm {
        id: off.id,
        one_op_per_block: part.blocks.iter().all(|b| b.len() == 1),
        matches_child: child.map(|c| c.partition == partition),
        partition,
    }
}

/// The best verified winner of the race; otherwise Burn's plan. Never a tie: a candidate the
/// race could not separate is reported as such.
fn select(
    factory: &dyn ModelFactory,
    opts: &TuneOptions,
    cands: &[Candidate],
    race: &Race,
    timed: &mut [Timed],
    progress: &mut dyn FnMut(&str),
) -> (usize, String, VerifyOutcome) {
    let mut first_refusal: Option<VerifyOutcome> = None;
    for w in race.winners() {
        progress(&format!("verify c{}", w.id));
        let v = verify::verify(factory, opts.regime, &cands[w.id], opts.inject_fault == Some(w.id));
        let t = timed.iter_mut().find(|t| t.id == w.id).expect("winners were timed");
        if v.keeps() {
            t.outcome = format!("kept: {}; verified", w.describe());
            return (w.id, format!("c{} {}; {}", w.id, w.describe(), race.stop_text()), v);
        }
        t.outcome = format!("refused by verify: {v} ({})", w.describe());
        first_refusal.get_or_insert(v);
    }
    let why = match first_refusal {
        Some(_) => format!("every winner was refused by verify; Burn's plan kept ({})", race.stop_text()),
        None => format!(
            "no candidate is faster than Burn's plan with confidence by the minimum effect; Burn's plan kept ({})",
            race.stop_text()
        ),
    };
    (0, why, first_refusal.unwrap_or(VerifyOutcome::NothingToCheck))
}

/// Burn's plan and the plan the greedy path ended on, raced on `model` round by round: each
/// round's incumbent is the race's reference and a challenger is kept only if it wins the race.
fn greedy_candidates(
    model: &mut dyn blaze_runtime::Model,
    units: &[Vec<blaze_ir::BoundaryId>],
    (per_round, max_rounds): (usize, usize),
    rules: &RaceRules,
    progress: &mut dyn FnMut(&str),
) -> (Vec<Candidate>, crate::canon::Canonical) {
    let path = crate::greedy::greedy(units, per_round, max_rounds, |inc, challengers| {
        let sizes: Vec<String> = challengers.iter().map(|c| c.len().to_string()).collect();
        progress(&format!(
            "greedy: {} cut(s) kept, racing {} challengers ({} cuts)",
            inc.len(),
            challengers.len(),
            sizes.join(", ")
        ));
        let all: Vec<Candidate> = std::iter::once(Candidate::new(0, inc.to_vec()))
            .chain(challengers.iter().enumerate().map(|(i, c)| Candidate::new(i + 1, c.clone())))
            .collect();
        let refs: Vec<&Candidate> = all.iter().collect();
        crate::drive::warm_up(model, 0);
        for c in &refs {
            crate::confirm::install(c);
            crate::drive::warm_up(model, crate::confirm::CONFIRM_WARMUP);
        }
        let (race, _, _) = measure::race_on_device(model, &refs, |_| true, rules, None, |_, _| {}).ok()?;
        race.winners().first().map(|w| w.id - 1)
    });
    progress(&format!("greedy stopped: {} ({} challengers tried)", path.stop_reason, path.challengers_tried));
    let mut cands = vec![Candidate::new(0, vec![])];
    if let Some(last) = path.kept.last().filter(|k| !k.is_empty()) {
        cands.push(Candidate::new(1, last.clone()));
    }
    let groups = (0..cands.len()).map(|i| vec![i]).collect();
    let canon = crate::canon::Canonical {
        groups,
        stop_reason: format!("greedy: {}", path.stop_reason),
        iterations: 0,
        egraph_nodes: 0,
    };
    (cands, canon)
}

#[cfg(test)]
mod tests {
    use super::{Summary, Timed, captured_line, standings_line};
    use crate::race::{Race, RaceRules, Standing, Stop, Verdict};

    fn timed(id: usize, cuts: &str, standing: Option<(f64, f64, f64)>) -> Timed {
        let standing = standing.map(|(ratio, lo, hi)| Standing {
            id,
            can_win: true,
            pairs: 15,
            ratio,
            lo,
            hi,
            level: 0.01,
            verdict: Verdict::Faster,
            decided_at: None,
        });
        let samples = vec![13.1, 13.0, 13.2];
        Timed { id, cuts: cuts.into(), summary: Summary::of(&samples), samples, outcome: String::new(), standing }
    }

    #[test]
    fn a_race_s_standings_are_one_progress_line_with_burn_s_median() {
        let long = format!("c2: {}", (0..20).map(|i| format!("b{i}")).collect::<Vec<_>>().join(" "));
        let arms = [
            timed(0, "c0: burn", None),
            timed(1, "c1: blocks=3", Some((0.9665, 0.901, 0.999))),
            timed(2, &long, Some((1.01, 0.95, 1.09))),
            timed(3, "c3: fusion-off", Some((1.4589, 0.0, f64::INFINITY))),
        ];
        let line = standings_line("raced", &arms);
        assert_eq!(
            line,
            "raced: c1: blocks=3 0.9665 [0.9010, 0.9990]; c2 1.0100 [0.9500, 1.0900]; \
             c3: fusion-off 1.4589 (15 pairs, no interval) (Burn's plan 13.100 ms)"
        );
    }

    /// A recording the model refused (gpt-small's host-seeded dropout, H100, 2026-12-06) left
    /// the captured race's line empty: "raced captured: ". Each broken arm is named with why.
    #[test]
    fn the_captured_line_names_each_arm_that_could_not_be_recorded() {
        let broken = |id: usize, why: &str| Standing {
            id,
            can_win: true,
            pairs: 0,
            ratio: f64::NAN,
            lo: 0.0,
            hi: f64::INFINITY,
            level: 1.0,
            verdict: Verdict::Broken(why.into()),
            decided_at: None,
        };
        let mut race = Race {
            rules: RaceRules::default(),
            looks_planned: vec![10],
            looks_done: vec![10],
            rounds: Vec::new(),
            standings: vec![broken(3, "not recorded: dropout"), broken(4, "not recorded: dropout")],
            stop: Stop::Winner(1),
            seconds: 1.0,
        };
        assert_eq!(captured_line(&[], &race), "raced captured: c3: not recorded: dropout; c4: not recorded: dropout");
        race.standings.remove(1);
        let arms = [timed(4, "c4: blocks=3 exec=captured", Some((0.93, 0.92, 0.94)))];
        assert_eq!(
            captured_line(&arms, &race),
            "raced captured: c4: blocks=3 exec=captured 0.9300 [0.9200, 0.9400]; c3: not recorded: dropout"
        );
        race.standings.clear();
        assert_eq!(captured_line(&arms, &race), standings_line("raced captured", &arms));
    }
}
