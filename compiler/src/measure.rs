//! Measure (protocol blaze-measure/3): visits of real steps on the device, raced by
//! [`crate::race`].
//!
//! A visit installs a candidate, runs one untimed step (the plan-store switch happens at its
//! sync), then times a *block* of consecutive steps with the device synchronised only at the
//! block's ends; the sample is the block's time per step. Blocks are sized from Burn's plan's
//! step time after settling so that a visit lasts at least [`MIN_VISIT`]: a sample is then an
//! average over several steps rather than one step with its occasional 2-3x outliers.
use crate::candidate::Candidate;
use crate::confirm::install;
use crate::drive::{SETTLE, Settle, settle, timed_step};
use crate::race::{Race, RaceRules, Visitor, race};
use blaze_runtime::{Model, Recording, activate_burn_default};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The protocol every result records; change it only with a new version.
/// Version 2 added the settling time after warm-up; version 3 replaced "beats the median by
/// more than the wider IQR" by paired racing. Older results files are read as they are.
pub const PROTOCOL: &str = "blaze-measure/3: whole steps, device synced at the ends of each timed block; warm-up untimed, then 1 s of untimed settling; \
a visit = 1 untimed step (plan switch) + a block of consecutive steps lasting >= 50 ms (sized from Burn's step time), sample = ms per step; \
Burn's plan and every candidate (fusion off included, in-process) visited in each round, start rotating; \
per candidate the median of per-round ln(candidate / Burn) with a sign-test interval; \
looks at rounds min*1.5^k, alpha 0.05 split over the looks, Holm across candidates; \
slower with confidence: dropped; interval within 1 +- min effect: equivalent, dropped; \
faster with confidence by >= min effect (default 1 %): winner, verified before it is kept; otherwise not separated";

/// Shortest timed block per visit.
pub(crate) const MIN_VISIT: Duration = Duration::from_millis(50);

/// Steps timed to size the blocks.
pub(crate) const SIZING_STEPS: usize = 5;

/// The median of [`SIZING_STEPS`] timed steps, ms, and those steps' losses.
pub fn median_step_ms(model: &mut dyn Model) -> (f64, Vec<f32>) {
    let (times, losses): (Vec<f64>, Vec<f32>) = (0..SIZING_STEPS)
        .map(|_| {
            let (ms, out) = timed_step(model);
            (ms, out.loss)
        })
        .unzip();
    (crate::stats::median(&times), losses)
}

/// Steps in a timed block so that a visit lasts at least [`MIN_VISIT`].
pub fn steps_per_visit(step_ms: f64) -> u32 {
    (MIN_VISIT.as_secs_f64() * 1e3 / step_ms.max(1e-3)).ceil().max(1.0) as u32
}

/// How visits were sized (recorded in results files).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VisitShape {
    /// Median single-step time of Burn's plan after settling, ms.
    pub step_ms: f64,
    /// Steps in each timed block.
    pub steps_per_visit: u32,
    /// Untimed settling steps before the race.
    pub settle_steps: usize,
    /// Captured candidates: the device memory around each live recording, by candidate id
    /// (absent in older files and races without captured candidates).
    #[serde(default)]
    pub recordings: Vec<(usize, blaze_runtime::RecordingMemory)>,
}

/// Test-only slowdown of one candidate: every timed step of its visits is made longer by
/// `fraction` of Burn's step time (a busy wait after the block's final sync, inside the timed
/// region, so the added wall time is exact whatever the device does).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Slowdown {
    pub id: usize,
    pub fraction: f64,
}

/// Races real visits of `candidates` on `model`. `candidates[0]` must be the reference (Burn's
/// plan, id 0); the others enter as challengers.
pub(crate) struct DeviceVisitor<'a> {
    model: &'a mut dyn Model,
    /// Where captured candidates are recorded and replayed when not on `model`: a training
    /// step's recording holds its state in place (another optimizer), so it gets an instance
    /// of its own and the eager arms keep Burn's.
    captured_model: Option<&'a mut dyn Model>,
    candidates: BTreeMap<usize, Candidate>,
    /// The recording of each captured candidate, or why it could not be made.
    recordings: BTreeMap<usize, Result<Box<dyn Recording>, String>>,
    pub shape: VisitShape,
    slowdown: Option<(usize, Duration)>,
    pub steps: u64,
}

impl<'a> DeviceVisitor<'a> {
    /// Settles under the reference, then sizes the blocks from its step time; records the
    /// captured candidates on `captured_model` (with its state held in place first) when
    /// given, else on `model`.
    pub(crate) fn with_captured_model(
        model: &'a mut dyn Model,
        mut captured_model: Option<&'a mut dyn Model>,
        candidates: &[&Candidate],
        slowdown: Option<Slowdown>,
    ) -> Self {
        let reference = candidates.first().expect("a race needs Burn's plan");
        install(reference);
        let settle_steps = settle(model, Settle::For(SETTLE)).len();
        let (step_ms, _) = median_step_ms(model);
        let steps_per_visit = steps_per_visit(step_ms);
        let slowdown = slowdown.map(|s| (s.id, Duration::from_secs_f64(s.fraction * step_ms / 1e3)));
        let held = match captured_model.as_mut() {
            Some(own) => blaze_runtime::captured::hold_state_in_place(&mut **own),
            None => Ok(()),
        };
        let mut recordings: BTreeMap<usize, Result<Box<dyn Recording>, String>> = BTreeMap::new();
        for c in candidates.iter().filter(|c| c.is_captured()) {
            let recording = match (&held, captured_model.as_mut()) {
                (Err(why), _) => Err(why.clone()),
                (Ok(()), Some(own)) => record_candidate(&mut **own, c),
                (Ok(()), None) => record_candidate(&mut *model, c),
            };
            recordings.insert(c.id, recording);
        }
        install(reference);
        let memory = recordings.iter().filter_map(|(id, r)| Some((*id, r.as_ref().ok()?.memory()))).collect();
        Self {
            model,
            captured_model,
            recordings,
            candidates: candidates.iter().map(|c| (c.id, (*c).clone())).collect(),
            shape: VisitShape { step_ms, steps_per_visit, settle_steps, recordings: memory },
            slowdown,
            steps: (settle_steps + SIZING_STEPS) as u64,
        }
    }
}

impl Visitor for DeviceVisitor<'_> {
    fn visit(&mut self, id: usize) -> Result<f64, String> {
        let candidate = self.candidates.get(&id).ok_or_else(|| format!("no candidate c{id}"))?;
        install(candidate);
        let k = self.shape.steps_per_visit;
        let delay = self.slowdown.filter(|(s, _)| *s == id).map(|(_, d)| d * k);
        let recording = match self.recordings.get_mut(&id) {
            Some(Ok(recording)) => Some(recording),
            Some(Err(why)) => return Err(format!("not recorded: {why}")),
            None => None,
        };
        let model: &mut dyn Model = match (&recording, self.captured_model.as_mut()) {
            (Some(_), Some(own)) => &mut **own,
            _ => &mut *self.model,
        };
        let visit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| visit_steps(model, recording, k, delay)));
        self.steps += 1 + k as u64;
        visit.map_err(|_| "panicked while stepping".to_string())?
    }
}

/// A captured candidate's recording, made on the race's model after its eager fusion has run
/// (explored, compiled) for [`crate::confirm::CONFIRM_WARMUP`] steps.
fn record_candidate(model: &mut dyn Model, candidate: &Candidate) -> Result<Box<dyn Recording>, String> {
    install(candidate);
    crate::drive::warm_up(model, crate::confirm::CONFIRM_WARMUP);
    let fusion = candidate.eager();
    // The race's instance is timed, not read: steps a failed recording ran need no report.
    if fusion.cuts.is_empty() {
        return blaze_runtime::captured::record_on(model).map_err(|f| f.to_string());
    }
    // The eager step the recording of a plan with cuts is checked against.
    let (eager, _) = crate::drive::record_step(model, false);
    blaze_runtime::captured::record_plan_on(model, &fusion.cuts, &fusion.settings, &eager).map_err(|f| f.to_string())
}

/// One visit's steps: a switch step (a plan-store switch happens at its sync), then `k` steps
/// timed with the device synchronised only at the block's ends; `delay` (test only) is added
/// inside the timed region. Returns ms per timed step. Also the visit of `blazec serve`.
pub fn visit_block(model: &mut dyn Model, k: u32, delay: Option<Duration>) -> f64 {
    visit_steps(model, None, k, delay).expect("eager steps do not fail")
}

/// [`visit_block`] whose steps replay `recording` (a captured candidate: each step writes the
/// next batch into the inputs, then replays) instead of stepping eagerly.
fn visit_steps(
    model: &mut dyn Model,
    mut recording: Option<&mut Box<dyn Recording>>,
    k: u32,
    delay: Option<Duration>,
) -> Result<f64, String> {
    let mut step = |model: &mut dyn Model| -> Result<(), String> {
        match recording.as_mut() {
            Some(r) => blaze_runtime::captured::replay_on(model, r.as_mut(), false).map(drop),
            None => {
                model.step(false);
                Ok(())
            }
        }
    };
    model.sync();
    step(model)?;
    model.sync();
    let start = Instant::now();
    for _ in 0..k {
        step(model)?;
    }
    model.sync();
    if let Some(d) = delay {
        spin_until(start.elapsed() + d, start);
    }
    Ok(start.elapsed().as_secs_f64() * 1e3 / k as f64)
}

/// Busy-waits until `start + until` (a sleep would overshoot by the scheduler's slack).
fn spin_until(until: Duration, start: Instant) {
    while start.elapsed() < until {
        std::hint::spin_loop();
    }
}

/// A race of `candidates` (the first is the reference) on `model`; Burn's own plan is in force
/// afterwards. `can_win` says which challengers may be kept.
pub fn race_on_device(
    model: &mut dyn Model,
    candidates: &[&Candidate],
    can_win: impl Fn(&Candidate) -> bool,
    rules: &RaceRules,
    slowdown: Option<Slowdown>,
    progress: impl FnMut(u32, usize),
) -> Result<(Race, VisitShape, u64), String> {
    race_with_captured_model(model, None, candidates, can_win, rules, slowdown, progress)
}

/// [`race_on_device`] whose captured candidates run on `captured_model` when given.
pub(crate) fn race_with_captured_model<'a>(
    model: &'a mut dyn Model,
    captured_model: Option<&'a mut dyn Model>,
    candidates: &[&Candidate],
    can_win: impl Fn(&Candidate) -> bool,
    rules: &RaceRules,
    slowdown: Option<Slowdown>,
    progress: impl FnMut(u32, usize),
) -> Result<(Race, VisitShape, u64), String> {
    let racing: Vec<crate::race::Candidate> =
        candidates[1..].iter().map(|c| crate::race::Candidate { id: c.id, can_win: can_win(c) }).collect();
    let mut visitor = DeviceVisitor::with_captured_model(model, captured_model, candidates, slowdown);
    let result = race(&racing, &mut visitor, rules, progress);
    let (shape, steps) = (visitor.shape.clone(), visitor.steps);
    activate_burn_default();
    Ok((result?, shape, steps))
}
