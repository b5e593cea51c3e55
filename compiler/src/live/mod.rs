//! Live mode: plan selection during a real training run, then a settled plan that
//! is re-checked on a widening delay. `driver` is the schedule (device-free, tested with a
//! fake clock); this module prepares the arms and drives them on the user's steps.
//!
//! Opt-in, one line in a training loop over a [`Model`]:
//! ```text
//! let mut live = Live::from_env(&factory, Regime::Training);   // BLAZE_LIVE=1 turns it on
//! for _ in 0..steps { live.step(model.as_mut()); }              // instead of model.step(false)
//! ```
//! With `BLAZE_LIVE` unset (or `0`) `step` is `model.step(false)` and nothing else happens.
//! `BLAZE_LIVE_BUNDLE=model.blaze` adds the shipped entry that fits the run as an arm.
//!
//! Numerics. Before the run's first step, every arm is verified against Burn's plan on side
//! instances built by the factory (fresh seeded instances, [`verify`]): an arm whose numbers
//! differ beyond the verification tolerance never runs a step of the user's training. The side
//! instances are dropped before the first real step, so they do not disturb training (beyond
//! the time they take, which the report counts as preparation). The user's own steps then run
//! under arms that all compute Burn's numbers within that tolerance.
//!
//! Captured arms. Burn's plan captured (and a shipped captured entry) race like any other arm
//! when the model offers a recordable step ([`captured`]); the captured gate on side instances
//! decides whether they run. In a training run with a captured arm, the run's model trains with
//! the optimizer a recording needs from its first step, under every arm
//! (`RecordableStep::hold_state_in_place`: it writes parameters and moments back into their
//! buffers in recorded launches and assigns them in eager steps), so that any arm's steps can
//! be followed by a recording; the captured gate compared exactly that optimizer against
//! Burn's. `BLAZE_LIVE_CAPTURED=0` leaves captured arms out.
mod captured;
pub mod driver;
pub use captured::CapturedUse;
pub mod report;

use crate::candidate::{Candidate, CandidateTable, Origin};
use crate::confirm::{confirm, install};
use crate::tracer::{TraceOptions, trace};
use crate::verify::{VerifyOutcome, verify};
use blaze_ir::plan::Regime;
use blaze_runtime::{Model, ModelFactory, StepOutput};
use driver::{Arms, Clock, Driver, Schedule};
use report::{Arm, LiveReport};
use std::time::{Duration, Instant};

/// The environment switch: `1`/`on` turns live mode on, anything else (or unset) leaves it off.
pub(crate) const LIVE_ENV: &str = "BLAZE_LIVE";
/// Steps before the first drift check (default [`Schedule::default`]'s).
pub(crate) const FIRST_CHECK_ENV: &str = "BLAZE_LIVE_FIRST_CHECK";
/// A shipped bundle (or plan file) whose entry for this run joins the race as an arm.
pub(crate) const BUNDLE_ENV: &str = "BLAZE_LIVE_BUNDLE";
/// `0`/`off` leaves captured arms out of the race.
pub(crate) const CAPTURED_ENV: &str = "BLAZE_LIVE_CAPTURED";

/// Which arms a live run prepares, and its schedule.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    pub schedule: Schedule,
    /// Beam widths raced as settings-only arms.
    pub max_blocks: Vec<u32>,
    /// Cut plans from the plan space (e-graph representatives) raced as arms.
    pub cut_arms: usize,
    /// Race fusion off as an arm (never kept: it is Burn's stock setting, not a plan).
    pub fusion_off: bool,
    /// Race Burn's plan captured (recorded on the run's model, replayed), when the model offers
    /// a recordable step and the captured gate keeps it.
    pub captured: bool,
    pub seed: u64,
    /// A shipped bundle: its entry that fits this run (device, model, regime, shapes, op
    /// stream) races as an arm; nothing is added when none fits (said in the report).
    pub bundle: Option<std::path::PathBuf>,
    /// Test only: from the first settle on, every step of the arm kept then takes this fraction
    /// of its own time longer (a sleep after the step), so a drift check has a real slowdown to
    /// find on a real run.
    pub inject_drift: Option<f64>,
}

impl Default for LiveOptions {
    fn default() -> Self {
        Self {
            schedule: Schedule::default(),
            max_blocks: vec![1, 2, 8],
            cut_arms: 2,
            fusion_off: true,
            captured: true,
            seed: 0,
            bundle: None,
            inject_drift: None,
        }
    }
}

impl LiveOptions {
    /// The options the environment asks for; None when live mode is off.
    pub fn from_env() -> Option<Self> {
        let on = std::env::var(LIVE_ENV).is_ok_and(|v| matches!(v.trim(), "1" | "on" | "true"));
        if !on {
            return None;
        }
        let mut opts = Self::default();
        if let Some(n) = std::env::var(FIRST_CHECK_ENV).ok().and_then(|v| v.trim().parse().ok()) {
            opts.schedule.first_check = n;
        }
        opts.bundle = std::env::var_os(BUNDLE_ENV).map(Into::into);
        opts.captured = !std::env::var(CAPTURED_ENV).is_ok_and(|v| matches!(v.trim(), "0" | "off" | "false"));
        Some(opts)
    }
}

/// A live run; see the module docs. `Live::off()` steps the model and does nothing else.
pub struct Live {
    inner: Option<Running>,
}

struct Running {
    driver: Driver,
    arms: DeviceArms,
    captured: captured::CapturedArms,
    clock: WallClock,
    report: LiveReport,
    inject_drift: Option<f64>,
    /// The arm the injected drift slows (the first one kept).
    slowed: Option<usize>,
}

impl Live {
    /// Live mode as the environment asks ([`LIVE_ENV`]). A failure to prepare is a warning,
    /// never an error in the user's program: the run goes on under Burn's plan.
    pub fn from_env(factory: &dyn ModelFactory, regime: Regime) -> Self {
        match LiveOptions::from_env() {
            None => Self::off(),
            Some(opts) => Self::start(factory, regime, &opts, &mut |_| {}).unwrap_or_else(|e| {
                eprintln!("warning: blaze: live mode could not start ({e:#}); using Burn's own fusion plan");
                Self::off()
            }),
        }
    }

    pub fn off() -> Self {
        Self { inner: None }
    }

    /// Prepares the arms on side instances (trace, plan space, confirm, verify) and starts the
    /// schedule under Burn's plan.
    pub fn start(
        factory: &dyn ModelFactory,
        regime: Regime,
        opts: &LiveOptions,
        progress: &mut dyn FnMut(&str),
    ) -> anyhow::Result<Self> {
        let started = Instant::now();
        let (cands, arms, refused) = prepare(factory, regime, opts, progress)?;
        let can_win = cands.iter().map(|c| !c.unfused).collect();
        let driver = Driver::new(opts.schedule.clone(), can_win);
        let captured = captured::CapturedArms::new(cands.iter().map(Candidate::is_captured).collect());
        let desc = factory.build(regime).map_err(anyhow::Error::msg)?.describe();
        let report = LiveReport::new(&desc, &opts.schedule, arms, refused, started.elapsed().as_secs_f64());
        install(&cands[0]);
        let clock = WallClock(Instant::now());
        Ok(Self {
            inner: Some(Running {
                driver,
                arms: DeviceArms(cands),
                captured,
                clock,
                report,
                inject_drift: opts.inject_drift,
                slowed: None,
            }),
        })
    }

    /// One training step of `model`, under the arm the schedule says. Hand every step of the
    /// run's model to it (a model stepped elsewhere is not the one a recording holds).
    pub fn step(&mut self, model: &mut dyn Model) -> StepOutput {
        let Some(run) = self.inner.as_mut() else { return model.step(false) };
        if let Err(why) = run.captured.adopt(model) {
            run.withdraw_captured(&format!("the model cannot hold its state in place: {why}"));
        }
        // The step starts at a sync: plans index operations from it (see blaze_burn's
        // step_boundary). Every step ends with one (below), so only the first needs its own.
        if run.driver.steps() == 0 {
            model.sync();
        }
        run.driver.before_step(&mut run.arms, &run.clock);
        let started = Instant::now();
        let out = run.step_under_arm(model);
        // The step read its loss back; this makes sure the device is done before timing.
        model.sync();
        run.drift(started.elapsed());
        let before = run.driver.events.len();
        run.driver.after_step(&run.clock);
        for event in &run.driver.events[before..] {
            eprintln!("[blaze live step {}] {}", event.step, report::event_text(event, &run.report.arms));
        }
        out
    }

    /// What the run measured and decided so far (None when live mode is off).
    pub fn report(&self) -> Option<LiveReport> {
        let run = self.inner.as_ref()?;
        let mut report = run.report.finish(&run.driver);
        report.captured = run.captured.usage();
        Some(report)
    }

    /// The step at which the first selection settled (None before, or when live mode is off).
    pub fn settled_at(&self) -> Option<u64> {
        self.inner.as_ref()?.driver.first_settle()
    }
}

impl Running {
    /// The step under the installed arm: an output a recording already computed, a captured
    /// step, or an eager one (also when a captured arm fails here: it is withdrawn, with one
    /// warning, and this step runs eagerly).
    fn step_under_arm(&mut self, model: &mut dyn Model) -> StepOutput {
        if let Some(out) = self.captured.owed() {
            return out;
        }
        let arm = self.driver.installed().unwrap_or(crate::race::BURN);
        match self.captured.step(arm, model) {
            captured::Stepped::Eager => model.step(false),
            captured::Stepped::Ran { out, untimed } => {
                self.driver.untimed(untimed);
                out
            }
            captured::Stepped::Failed(why) => {
                self.withdraw(arm, &why);
                self.captured.owed().unwrap_or_else(|| model.step(false))
            }
        }
    }

    fn withdraw(&mut self, arm: usize, why: &str) {
        if !self.driver.is_withdrawn(arm) {
            let name = self.report.arms.get(arm).map_or(String::new(), |a| a.text.clone());
            eprintln!("warning: blaze: live arm {name} withdrawn ({why}); the run goes on without it");
        }
        self.driver.withdraw(arm, why.to_string(), &self.clock);
    }

    /// Every captured arm leaves the run.
    fn withdraw_captured(&mut self, why: &str) {
        for arm in 0..self.arms.0.len() {
            if self.arms.0[arm].is_captured() {
                self.withdraw(arm, why);
            }
        }
    }

    /// The test-only injected drift ([`LiveOptions::inject_drift`]) after a step that took
    /// `took`.
    fn drift(&mut self, took: Duration) {
        let Some(fraction) = self.inject_drift else { return };
        if self.slowed.is_none() && self.driver.first_settle().is_some() {
            self.slowed = Some(self.driver.winner());
        }
        if self.slowed.is_some() && self.slowed == self.driver.installed() {
            std::thread::sleep(took.mul_f64(fraction));
        }
    }
}

/// Installs arms on the device.
struct DeviceArms(Vec<Candidate>);

impl Arms for DeviceArms {
    fn install(&mut self, arm: usize) {
        install(&self.0[arm]);
    }
}

struct WallClock(Instant);

impl Clock for WallClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// Trace, plan space, confirm (duplicates go), verify (refusals go): the arms, Burn's plan
/// first, with the refused ones and why.
fn prepare(
    factory: &dyn ModelFactory,
    regime: Regime,
    opts: &LiveOptions,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<(Vec<Candidate>, Vec<Arm>, Vec<Arm>)> {
    progress("live: trace");
    let traced = trace(factory, &TraceOptions::new(regime, 3))?;
    let enumeration = crate::space::Enumeration::Sampled { budget: opts.cut_arms + 1, seed: opts.seed };
    let (requested, canon) = crate::space::request(&traced, enumeration);
    let mut all = CandidateTable::default();
    all.add(Origin::Burn, Candidate::new(0, vec![]));
    if let Some(path) = &opts.bundle {
        match shipped_entry(path, &traced) {
            Ok(plan) => {
                all.add(Origin::Bundle, Candidate::with_settings(0, plan.cuts, plan.settings));
            }
            Err(e) => progress(&format!("live: the bundle adds no arm: {e}")),
        }
    }
    let cut_reps = canon.representatives().into_iter().filter(|&i| !requested[i].cuts.is_empty()).take(opts.cut_arms);
    all.extend(Origin::Requested, cut_reps.map(|i| Candidate::new(0, requested[i].cuts.clone())));
    all.extend(Origin::Settings, crate::tune::settings_candidates(&opts.max_blocks, false));
    if opts.fusion_off {
        all.add(Origin::FusionOff, Candidate::fusion_off(0));
    }
    // Captured arms execute like their eager fusion: confirming would fold them into it.
    let (captured_ids, eager_ids): (Vec<usize>, Vec<usize>) = (0..all.len()).partition(|&i| all[i].is_captured());
    let mut captured: Vec<(Origin, Candidate)> =
        captured_ids.into_iter().map(|i| (all.origin(i), all[i].clone())).collect();
    if opts.captured && !captured.iter().any(|(_, c)| c.eager().is_burn()) {
        captured.insert(0, (Origin::Captured { of: 0 }, Candidate::new(0, vec![]).captured(0)));
    }
    let cands = all.keep(eager_ids);
    progress(&format!("live: confirm {} arms", cands.len()));
    let mut side = factory.build(regime).map_err(anyhow::Error::msg)?;
    let refs: Vec<&Candidate> = cands.iter().collect();
    let confirmed = confirm(side.as_mut(), &refs, |_, _| {});
    drop(side);
    let mut survivors = confirmed.survivors();
    survivors.sort();
    let mut kept = cands.keep(survivors);
    for (origin, c) in captured {
        kept.add(origin, c);
    }
    let (mut arms, mut refused, mut out) = (Vec::new(), Vec::new(), Vec::new());
    for c in kept.iter() {
        let outcome = if c.is_burn() {
            VerifyOutcome::NothingToCheck
        } else {
            progress(&format!("live: verify {}", c.to_text()));
            verify(factory, regime, c, false)
        };
        let keep = c.is_burn() || outcome.is_verified();
        let arm = Arm::new(c.to_text(), outcome, c.unfused);
        if keep {
            arms.push(arm);
            out.push(c.id);
        } else {
            refused.push(arm);
        }
    }
    // The arms' ids are their positions among the kept ones.
    let out = kept.keep(out);
    for (arm, c) in arms.iter_mut().zip(out.iter()) {
        arm.text = c.to_text();
    }
    Ok((out.into_vec(), arms, refused))
}

/// The bundle's entry for the traced run (op stream included).
fn shipped_entry(path: &std::path::Path, traced: &blaze_ir::Trace) -> Result<blaze_ir::PlanFile, blaze_ir::PlanError> {
    blaze_ir::Bundle::read(path)?.select(&traced.contract()).cloned()
}
