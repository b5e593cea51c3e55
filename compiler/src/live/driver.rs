//! The live mode's schedule, a step at a time and free of any device: which arm (plan) each
//! step of the user's training runs under, and what the timings decide. The device side
//! (`super::Live`) installs the arm and reads the clock; tests drive it with a fake clock.
//!
//! Phases, in order:
//! 1. *Sizing*: Burn's plan for `settle_steps` untimed steps, then `sizing_steps` timed ones;
//!    a visit's timed block gets enough steps to last [`crate::measure::MIN_VISIT`].
//! 2. *Selecting*: the race of blaze-measure/3 ([`RaceState`]) over every arm, each visit one
//!    untimed switch step (more when the arm says so: a captured arm records there, and a
//!    training step's recording runs real steps first, [`Driver::untimed`]) and a timed block,
//!    Burn's plan in every round. When it stops, the
//!    best winner settles (or Burn's plan, when none won); the runner-up is the best other arm.
//! 3. *Settled*: the winner runs. After `first_check` steps, and then after a delay that
//!    doubles with every clean check, a *check* races the winner (as reference) against the
//!    runner-up only. A runner-up faster with confidence reopens selection over every arm
//!    (and the delay starts again); otherwise the check is clean.
//!
//! An arm that fails on the run's own steps (a captured arm whose recording or replay fails) is
//! withdrawn ([`Driver::withdraw`]): it leaves every later race, the rest of its visit runs under
//! Burn's plan untimed, and a withdrawn winner sends the run back to selection.
use crate::race::{BURN, Candidate, RaceRules, RaceState, Standing, Stop, Verdict};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Installs an arm (0: Burn's own plan) from the next sync on.
pub trait Arms {
    fn install(&mut self, arm: usize);
}

/// Wall time since some fixed start.
pub(crate) trait Clock {
    fn now(&self) -> Duration;
}

/// When the live mode measures and checks.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Schedule {
    pub settle_steps: u32,
    pub sizing_steps: u32,
    /// Rules of the selection race.
    pub select: RaceRules,
    /// Rules of a drift check (winner against runner-up).
    pub check: RaceRules,
    /// Steps from settling to the first check; each clean check doubles the delay.
    pub first_check: u64,
}

impl Default for Schedule {
    fn default() -> Self {
        let check =
            RaceRules { min_rounds: 10, max_rounds: 40, budget: Duration::from_secs(20), ..RaceRules::default() };
        Self { settle_steps: 20, sizing_steps: 5, select: RaceRules::default(), check, first_check: 500 }
    }
}

/// One decision of the live mode, at a step of the user's run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub step: u64,
    pub seconds: f64,
    pub what: What,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum What {
    /// Visits sized from Burn's step time.
    Sized { step_ms: f64, steps_per_visit: u32 },
    /// A selection race ended: the arm kept, the runner-up, why it stopped, every standing.
    Settled { winner: usize, runner_up: usize, stop: String, standings: Vec<String> },
    /// A drift check ended: the runner-up against the winner.
    Checked { clean: bool, ratio: f64, lo: f64, hi: f64, next_in_steps: u64 },
    /// A check found the runner-up faster: selection starts again over every arm.
    Reopened { winner: usize, runner_up: usize },
    /// An arm failed on the run's own steps and left the race for the rest of the run.
    Withdrawn { arm: usize, why: String },
}

/// What an arm ran: steps, and the ms per step of its timed visits.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ArmCost {
    pub steps: u64,
    /// Steps run inside drift checks.
    pub check_steps: u64,
    /// Timed visits' ms per step, all of them.
    pub samples: Vec<f64>,
}

// One phase per live run: the size of a race in progress does not matter.
#[allow(clippy::large_enum_variant)]
enum Phase {
    Sizing { times: Vec<f64> },
    Racing(Race),
    Settled { since: u64, delay: u64 },
}

/// A race in progress, in the user's steps: `order` the round's visits, `pos` the one running.
struct Race {
    state: RaceState,
    /// Arm ids as the race sees them: the race's id `i` is arm `arms[i]`; id 0 is the reference.
    arms: Vec<usize>,
    order: Vec<usize>,
    pos: usize,
    /// Steps done in the current visit (0: the untimed switch step is next).
    done: u32,
    /// Untimed steps at the start of the current visit (1 unless the arm asks for more).
    untimed: u32,
    block_start: Duration,
    visits: Vec<(usize, f64)>,
    started: Duration,
    check: bool,
}

/// The live schedule; see the module docs.
pub struct Driver {
    schedule: Schedule,
    arms_total: usize,
    can_win: Vec<bool>,
    /// Arms withdrawn during the run, with why.
    withdrawn: Vec<Option<String>>,
    phase: Phase,
    step: u64,
    steps_per_visit: u32,
    installed: Option<usize>,
    winner: usize,
    runner_up: usize,
    /// Steps from the last settle or clean check to the next check.
    delay: u64,
    pub events: Vec<Event>,
    pub costs: Vec<ArmCost>,
    step_start: Duration,
}

impl Driver {
    /// `can_win[i]`: whether arm `i` may be kept (arm 0 is Burn's plan; fusion off may not).
    pub fn new(schedule: Schedule, can_win: Vec<bool>) -> Self {
        let n = can_win.len();
        Self {
            schedule,
            arms_total: n,
            can_win,
            withdrawn: vec![None; n],
            phase: Phase::Sizing { times: Vec::new() },
            step: 0,
            steps_per_visit: 1,
            installed: None,
            winner: BURN,
            runner_up: BURN,
            delay: 0,
            events: Vec::new(),
            costs: vec![ArmCost::default(); n],
            step_start: Duration::ZERO,
        }
    }

    /// The arm settled on (Burn's plan until a selection has ended).
    pub fn winner(&self) -> usize {
        self.winner
    }

    pub fn steps(&self) -> u64 {
        self.step
    }

    /// The arm the last step ran under.
    pub fn installed(&self) -> Option<usize> {
        self.installed
    }

    /// The step at which the first selection settled.
    pub(crate) fn first_settle(&self) -> Option<u64> {
        self.events.iter().find(|e| matches!(e.what, What::Settled { .. })).map(|e| e.step)
    }

    /// Whether a race (selection or check) is running.
    pub fn racing(&self) -> bool {
        matches!(self.phase, Phase::Racing(_))
    }

    /// Whether `arm` was withdrawn.
    pub fn is_withdrawn(&self, arm: usize) -> bool {
        self.withdrawn.get(arm).is_some_and(Option::is_some)
    }

    /// Called during a visit's switch step (between `before_step` and `after_step`): the visit's
    /// first `steps` steps are untimed, this one included (a captured arm's recording, whose
    /// preparing launches are real steps handed out by the following calls). Outside a race's
    /// switch step it changes nothing.
    pub(crate) fn untimed(&mut self, steps: u32) {
        if let Phase::Racing(race) = &mut self.phase
            && race.done == 0
        {
            race.untimed = steps.max(1);
        }
    }

    /// `arm` failed on the run's own steps: it leaves the race now and for the rest of the run
    /// (Burn's plan takes the rest of its visit, untimed). Burn's plan is never withdrawn.
    pub(crate) fn withdraw(&mut self, arm: usize, why: String, clock: &dyn Clock) {
        if arm == BURN || self.is_withdrawn(arm) {
            return;
        }
        self.withdrawn[arm] = Some(why.clone());
        self.can_win[arm] = false;
        let now = clock.now();
        self.log(now, What::Withdrawn { arm, why: why.clone() });
        let reselect = match &mut self.phase {
            Phase::Racing(race) => {
                if let Some(id) = race.arms.iter().position(|&a| a == arm) {
                    race.state.broken(id, why);
                }
                // A check whose kept arm or runner-up is gone has nothing left to decide.
                race.check
            }
            Phase::Settled { .. } => self.winner == arm,
            Phase::Sizing { .. } => false,
        };
        if reselect {
            self.reselect(now);
        }
        if self.runner_up == arm {
            self.runner_up = BURN;
        }
    }

    /// Selection over every arm still in the run, starting now (Burn's plan runs meanwhile).
    fn reselect(&mut self, now: Duration) {
        self.winner = BURN;
        let mut race = self.selection_race(now);
        // The step in progress ran the withdrawn arm's fusion: it and the first visit's own
        // switch step stay untimed.
        race.untimed = 2;
        self.phase = Phase::Racing(race);
    }

    /// Before a step: installs the arm the step must run under.
    pub(crate) fn before_step(&mut self, arms: &mut dyn Arms, clock: &dyn Clock) {
        let arm = self.arm_now();
        if self.installed != Some(arm) {
            arms.install(arm);
            self.installed = Some(arm);
        }
        self.step_start = clock.now();
    }

    /// After the step (its results read back, so the device is done): records its time.
    pub(crate) fn after_step(&mut self, clock: &dyn Clock) {
        let now = clock.now();
        let ms = (now - self.step_start).as_secs_f64() * 1e3;
        let arm = self.installed.unwrap_or(BURN);
        self.costs[arm].steps += 1;
        self.step += 1;
        match std::mem::replace(&mut self.phase, Phase::Sizing { times: Vec::new() }) {
            Phase::Sizing { mut times } => {
                times.push(ms);
                self.phase = self.after_sizing(times, now);
            }
            Phase::Racing(race) => {
                if race.check {
                    self.costs[arm].check_steps += 1;
                }
                self.phase = self.after_race_step(race, now);
            }
            Phase::Settled { since, delay } if self.step >= since + delay => {
                self.phase = Phase::Racing(self.check_race(now))
            }
            settled @ Phase::Settled { .. } => self.phase = settled,
        }
    }

    fn arm_now(&self) -> usize {
        let arm = match &self.phase {
            Phase::Sizing { .. } => BURN,
            Phase::Racing(r) => r.arms[r.order[r.pos]],
            Phase::Settled { .. } => self.winner,
        };
        if self.is_withdrawn(arm) { BURN } else { arm }
    }

    fn after_sizing(&mut self, times: Vec<f64>, now: Duration) -> Phase {
        let (settle, sizing) = (self.schedule.settle_steps as usize, self.schedule.sizing_steps.max(1) as usize);
        if times.len() < settle + sizing {
            return Phase::Sizing { times };
        }
        let mut timed = times[settle..].to_vec();
        timed.sort_by(f64::total_cmp);
        let step_ms = timed[timed.len() / 2];
        self.steps_per_visit = crate::measure::steps_per_visit(step_ms);
        self.log(now, What::Sized { step_ms, steps_per_visit: self.steps_per_visit });
        Phase::Racing(self.selection_race(now))
    }

    fn selection_race(&self, now: Duration) -> Race {
        let arms: Vec<usize> = (0..self.arms_total).collect();
        let candidates: Vec<Candidate> =
            (1..self.arms_total).map(|id| Candidate { id, can_win: self.can_win[id] }).collect();
        let mut state = RaceState::new(&candidates, &self.schedule.select);
        for (arm, why) in self.withdrawn.iter().enumerate() {
            if let Some(why) = why {
                state.broken(arm, why.clone());
            }
        }
        Race::new(state, arms, now, false)
    }

    /// The winner as reference (race id 0), the runner-up as the one challenger (race id 1).
    fn check_race(&self, now: Duration) -> Race {
        let rules = &self.schedule.check;
        Race::new(
            RaceState::new(&[Candidate { id: 1, can_win: true }], rules),
            vec![self.winner, self.runner_up],
            now,
            true,
        )
    }

    fn after_race_step(&mut self, mut race: Race, now: Duration) -> Phase {
        // The untimed switch steps first (plans of the new arm are replayed from the first one's
        // sync on), then the timed block.
        race.done += 1;
        if race.done == race.untimed {
            race.block_start = now;
        }
        if race.done < race.untimed + self.steps_per_visit {
            return Phase::Racing(race);
        }
        let ms = (now - race.block_start).as_secs_f64() * 1e3 / self.steps_per_visit as f64;
        let id = race.order[race.pos];
        // A visit cut short by a withdrawal ran Burn's plan: it is nobody's sample.
        if !self.is_withdrawn(race.arms[id]) {
            self.costs[race.arms[id]].samples.push(ms);
            race.visits.push((id, ms));
        }
        race.pos += 1;
        (race.done, race.untimed) = (0, 1);
        if race.pos < race.order.len() {
            return Phase::Racing(race);
        }
        let visits = std::mem::take(&mut race.visits);
        match race.state.finish_round(visits, now - race.started) {
            None => {
                race.order = race.state.next_round();
                race.pos = 0;
                Phase::Racing(race)
            }
            Some(stop) if race.check => self.after_check(race, stop, now),
            Some(stop) => self.settle(race, stop, now),
        }
    }

    fn settle(&mut self, race: Race, stop: Stop, now: Duration) -> Phase {
        let winner = match stop {
            Stop::Winner(id) => id,
            _ => BURN,
        };
        let standings = race.state.standings().to_vec();
        // The runner-up: the best other arm that may win, by its ratio to Burn's plan (Burn's
        // plan counts 1.0; broken and slower arms never).
        let ratio = |id: usize| {
            if id == BURN { 1.0 } else { standings.iter().find(|s| s.id == id).map_or(f64::INFINITY, usable_ratio) }
        };
        let others = (0..self.arms_total).filter(|&id| id != winner && self.can_win[id]);
        let runner_up = others.min_by(|&a, &b| ratio(a).total_cmp(&ratio(b))).unwrap_or(BURN);
        // Nothing to check against when no other arm may be kept.
        let delay = if runner_up == winner { u64::MAX / 4 } else { self.schedule.first_check };
        (self.winner, self.runner_up, self.delay) = (winner, runner_up, delay);
        let stop = race.state.into_race(now - race.started).stop_text();
        let standings = standings.iter().map(|s| format!("arm {}: {}", s.id, s.describe())).collect();
        self.log(now, What::Settled { winner, runner_up, stop, standings });
        Phase::Settled { since: self.step, delay: self.delay }
    }

    fn after_check(&mut self, race: Race, stop: Stop, now: Duration) -> Phase {
        let s = race.state.standings()[0].clone();
        let clean = stop != Stop::Winner(1);
        self.delay = if clean { self.delay.saturating_mul(2) } else { self.schedule.first_check };
        self.log(now, What::Checked { clean, ratio: s.ratio, lo: s.lo, hi: s.hi, next_in_steps: self.delay });
        if clean {
            return Phase::Settled { since: self.step, delay: self.delay };
        }
        self.log(now, What::Reopened { winner: self.winner, runner_up: self.runner_up });
        Phase::Racing(self.selection_race(now))
    }

    fn log(&mut self, now: Duration, what: What) {
        self.events.push(Event { step: self.step, seconds: now.as_secs_f64(), what });
    }
}

/// A standing's ratio if the arm is still usable (not broken, not slower); otherwise infinity.
fn usable_ratio(s: &Standing) -> f64 {
    match s.verdict {
        Verdict::Broken(_) | Verdict::Slower => f64::INFINITY,
        _ if s.ratio.is_finite() => s.ratio,
        _ => f64::INFINITY,
    }
}

impl Race {
    fn new(state: RaceState, arms: Vec<usize>, now: Duration, check: bool) -> Self {
        let order = state.next_round();
        Race {
            state,
            arms,
            order,
            pos: 0,
            done: 0,
            untimed: 1,
            block_start: now,
            visits: Vec::new(),
            started: now,
            check,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A fake training run: arm `a` takes `10 ms * ratio(a, step)` per step with a little
    /// log-normal jitter (deterministic), on a clock that only the steps advance.
    struct Fake {
        ratio: Box<dyn Fn(usize, u64) -> f64>,
        installed: usize,
        /// Steps since the last install.
        since_install: u32,
        /// An arm that records at its switch: its first `untimed` steps after an install take
        /// `record_ratio` (a recording and the real steps it runs).
        recording: Option<(usize, u32, f64)>,
        clock: FakeClock,
        rng: u64,
    }

    struct FakeClock(Cell<Duration>);

    impl Clock for FakeClock {
        fn now(&self) -> Duration {
            self.0.get()
        }
    }

    impl Arms for Fake {
        fn install(&mut self, arm: usize) {
            self.installed = arm;
            self.since_install = 0;
        }
    }

    impl Fake {
        fn new(ratio: impl Fn(usize, u64) -> f64 + 'static) -> Self {
            Fake {
                ratio: Box::new(ratio),
                installed: 0,
                since_install: 0,
                recording: None,
                clock: FakeClock(Cell::new(Duration::ZERO)),
                rng: 7,
            }
        }

        fn jitter(&mut self) -> f64 {
            let mut sum = 0.0;
            for _ in 0..12 {
                self.rng = self.rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                sum += (self.rng >> 11) as f64 / (1u64 << 53) as f64;
            }
            (0.01 * (sum - 6.0)).exp()
        }

        /// Runs `n` steps under the driver.
        fn run(&mut self, driver: &mut Driver, n: u64) {
            for _ in 0..n {
                let clock = FakeClock(Cell::new(self.clock.0.get()));
                driver.before_step(self, &clock);
                let mut ratio = (self.ratio)(self.installed, driver.steps());
                if let Some((arm, untimed, slow)) = self.recording
                    && arm == self.installed
                    && self.since_install < untimed
                {
                    if self.since_install == 0 {
                        driver.untimed(untimed);
                    }
                    ratio = slow;
                }
                self.since_install += 1;
                let ms = 10.0 * ratio * self.jitter();
                self.clock.0.set(self.clock.0.get() + Duration::from_secs_f64(ms / 1e3));
                driver.after_step(&self.clock);
            }
        }
    }

    fn schedule() -> Schedule {
        let select =
            RaceRules { min_rounds: 5, max_rounds: 60, budget: Duration::from_secs(600), ..RaceRules::default() };
        let check =
            RaceRules { min_rounds: 5, max_rounds: 20, budget: Duration::from_secs(600), ..RaceRules::default() };
        Schedule { settle_steps: 2, sizing_steps: 3, select, check, first_check: 100 }
    }

    fn settled(events: &[Event]) -> Vec<(u64, usize, usize)> {
        events
            .iter()
            .filter_map(|e| match &e.what {
                What::Settled { winner, runner_up, .. } => Some((e.step, *winner, *runner_up)),
                _ => None,
            })
            .collect()
    }

    fn checks(events: &[Event]) -> Vec<(u64, bool, u64)> {
        events
            .iter()
            .filter_map(|e| match &e.what {
                What::Checked { clean, next_in_steps, .. } => Some((e.step, *clean, *next_in_steps)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn settles_on_the_faster_arm_and_rechecks_on_a_doubling_delay() {
        let mut fake = Fake::new(|arm, _| [1.0, 0.9, 1.1][arm]);
        let mut driver = Driver::new(schedule(), vec![true, true, true]);
        fake.run(&mut driver, 3000);
        let s = settled(&driver.events);
        assert_eq!(s.len(), 1, "{:?}", driver.events);
        assert_eq!((s[0].1, s[0].2), (1, 0), "arm 1 wins, Burn's plan is the runner-up");
        assert!(
            matches!(driver.events[0].what, What::Sized { steps_per_visit: 5..=6, .. }),
            "50 ms of 10 ms steps: {:?}",
            driver.events[0]
        );
        let c = checks(&driver.events);
        assert!(c.len() >= 3 && c.iter().all(|c| c.1), "{c:?}");
        assert_eq!(
            c.iter().map(|c| c.2).take(3).collect::<Vec<_>>(),
            vec![200, 400, 800],
            "every clean check doubles the delay"
        );
        // Each check starts `delay` steps after the previous decision (it then runs its rounds).
        assert!(c[0].0 > s[0].0 + 100 && c[1].0 > c[0].0 + 200 && c[2].0 > c[1].0 + 400, "{c:?} after {s:?}");
        assert_eq!(driver.winner(), 1);
        assert!(!driver.events.iter().any(|e| matches!(e.what, What::Reopened { .. })));
    }

    #[test]
    fn a_runner_up_that_becomes_faster_reopens_selection_and_it_settles_again() {
        // From step 1000 on (a new batch size, say) the cut plan is 20 % slower than Burn's.
        let mut fake = Fake::new(|arm, step| match (arm, step >= 1000) {
            (1, false) => 0.9,
            (1, true) => 1.2,
            _ => 1.0,
        });
        let mut driver = Driver::new(schedule(), vec![true, true]);
        fake.run(&mut driver, 3000);
        let s = settled(&driver.events);
        assert_eq!((s[0].1, s[0].2), (1, 0), "{:?}", driver.events);
        let reopened: Vec<u64> =
            driver.events.iter().filter(|e| matches!(e.what, What::Reopened { .. })).map(|e| e.step).collect();
        assert_eq!(reopened.len(), 1, "{:?}", driver.events);
        assert!(reopened[0] > 1000, "the drift is found only after it happened: {reopened:?}");
        assert!(checks(&driver.events).iter().any(|c| !c.1 && c.0 == reopened[0]));
        assert_eq!(s.len(), 2);
        assert!(s[1].0 > reopened[0] && s[1].1 == 0, "settles again, on Burn's plan: {s:?}");
        assert_eq!(driver.winner(), 0);
    }

    #[test]
    fn fusion_off_may_race_but_never_settles() {
        let mut fake = Fake::new(|arm, _| [1.0, 0.8][arm]);
        let mut driver = Driver::new(schedule(), vec![true, false]);
        fake.run(&mut driver, 600);
        let s = settled(&driver.events);
        assert_eq!((s[0].1, s[0].2), (0, 0), "{:?}", driver.events);
    }

    #[test]
    fn an_arm_whose_switch_records_is_timed_only_after_its_untimed_steps() {
        // Arm 1 replays at 0.8 of Burn's step, but each visit starts with a recording: 4 steps
        // at 5 times Burn's. Timed with them it would lose; without them it wins.
        let mut fake = Fake::new(|arm, _| [1.0, 0.8][arm]);
        fake.recording = Some((1, 4, 5.0));
        let mut driver = Driver::new(schedule(), vec![true, true]);
        fake.run(&mut driver, 600);
        let s = settled(&driver.events);
        assert_eq!((s[0].1, s[0].2), (1, 0), "{:?}", driver.events);
        let samples = &driver.costs[1].samples;
        assert!(samples.iter().all(|&ms| ms < 9.0), "no recording step in a timed block: {samples:?}");
        let spv = driver.steps_per_visit as u64;
        let visits = samples.len() as u64;
        assert!(driver.costs[1].steps >= visits * (4 + spv), "{} steps for {visits} visits", driver.costs[1].steps);
    }

    #[test]
    fn a_withdrawn_arm_leaves_the_race_and_a_withdrawn_winner_sends_the_run_back_to_selection() {
        let mut fake = Fake::new(|arm, _| [1.0, 0.8, 0.9][arm]);
        let mut driver = Driver::new(schedule(), vec![true, true, true]);
        fake.run(&mut driver, 300);
        assert_eq!(driver.winner(), 1, "{:?}", driver.events);
        let clock = FakeClock(Cell::new(fake.clock.0.get()));
        driver.withdraw(1, "replay: lost the device".into(), &clock);
        driver.withdraw(BURN, "Burn's plan is never withdrawn".into(), &clock);
        assert!(driver.is_withdrawn(1) && !driver.is_withdrawn(BURN));
        let steps_before = driver.costs[1].steps;
        fake.run(&mut driver, 600);
        assert_eq!(driver.costs[1].steps, steps_before, "the withdrawn arm never runs again");
        let s = settled(&driver.events);
        assert_eq!(s.len(), 2, "{:?}", driver.events);
        assert_eq!((s[1].1, s[1].2), (2, 0), "selects again among the others: {s:?}");
        let withdrawn: Vec<&Event> =
            driver.events.iter().filter(|e| matches!(e.what, What::Withdrawn { .. })).collect();
        assert_eq!(withdrawn.len(), 1, "one event, for arm 1 only: {withdrawn:?}");
        assert!(matches!(&withdrawn[0].what, What::Withdrawn { arm: 1, why } if why.contains("lost the device")));
    }

    #[test]
    fn an_arm_withdrawn_during_its_visit_leaves_no_sample_of_that_visit() {
        let mut fake = Fake::new(|arm, _| [1.0, 0.8, 0.9][arm]);
        let mut driver = Driver::new(schedule(), vec![true, true, true]);
        // Into the race: the first visit of arm 2 in progress.
        while !(driver.racing() && driver.arm_now() == 2) {
            fake.run(&mut driver, 1);
        }
        fake.run(&mut driver, 2);
        let clock = FakeClock(Cell::new(fake.clock.0.get()));
        driver.withdraw(2, "recording: no room in the pools".into(), &clock);
        assert_eq!(driver.arm_now(), BURN, "the rest of the visit runs Burn's plan");
        fake.run(&mut driver, 600);
        assert!(driver.costs[2].samples.is_empty(), "{:?}", driver.costs[2]);
        assert_eq!(settled(&driver.events)[0].1, 1);
    }
}
