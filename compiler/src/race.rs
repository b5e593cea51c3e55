//! The race of protocol blaze-measure/3: candidates and Burn's plan visited in rounds, each
//! candidate judged by its paired ratio to Burn's plan ([`crate::stats`]), decided as soon as the
//! evidence allows, stopped by one of four named rules.
//!
//! Error control. A race looks at its data only at scheduled rounds (`min_rounds`, then
//! growing by `growth`, ending at `max_rounds`); the family-wise level `alpha` is split evenly
//! over the scheduled looks (Bonferroni), and at each look Holm's step-down runs over the
//! candidates still racing, with the family counted as every candidate not yet rejected. So
//! the chance that any candidate is declared faster or slower than Burn's plan when it is not
//! stays at or below `alpha` for the whole race, however many looks and candidates. A look the
//! time budget forces early uses one of the unspent scheduled looks.
//!
//! Verdicts. Slower (interval above 1): dropped. Faster (interval below 1): a winner when its
//! ratio is at least `min_effect` below 1 and it may win (the fusion-off arm may not: it is
//! not a plan); the race stops at the first winner. Equivalent (interval inside
//! `1 ± min_effect`): dropped, no practical difference. Otherwise it races on; when the race
//! ends it is "not separated", never a tie.
use crate::stats::{holm, median, median_interval, sign_test_p};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Burn's plan: every candidate is paired with it.
pub const BURN: usize = 0;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RaceRules {
    /// Family-wise rate of false decisions over the whole race.
    pub alpha: f64,
    /// Smallest relative difference worth keeping (0.01 = 1 %).
    pub min_effect: f64,
    pub min_rounds: u32,
    pub max_rounds: u32,
    /// Looks at `min_rounds * growth^k` rounds.
    pub growth: f64,
    /// Wall-time budget of the rounds (a look is forced when it runs out).
    pub budget: Duration,
}

impl Default for RaceRules {
    fn default() -> Self {
        Self {
            alpha: 0.05,
            min_effect: 0.01,
            min_rounds: 10,
            max_rounds: 300,
            growth: 1.5,
            budget: Duration::from_secs(120),
        }
    }
}

impl RaceRules {
    /// The rounds after which the race looks at its data; the last is `max_rounds`.
    pub fn looks(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = self.min_rounds.clamp(1, self.max_rounds.max(1)) as f64;
        while (at.ceil() as u32) < self.max_rounds {
            let r = at.ceil() as u32;
            if out.last() != Some(&r) {
                out.push(r);
            }
            at *= self.growth.max(1.01);
        }
        out.push(self.max_rounds.max(1));
        out
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Verdict {
    Faster,
    Slower,
    Equivalent,
    NotSeparated,
    Broken(String),
}

/// One candidate's standing against Burn's plan.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Standing {
    pub id: usize,
    /// Whether it may be kept (plans may; the fusion-off arm may not).
    pub can_win: bool,
    pub pairs: usize,
    /// Median of candidate / Burn per round.
    pub ratio: f64,
    /// Interval for that ratio at `level`.
    pub lo: f64,
    pub hi: f64,
    /// Error rate the interval and the decision were made at (after both corrections).
    pub level: f64,
    pub verdict: Verdict,
    /// Round of the look that decided it.
    pub decided_at: Option<u32>,
}

impl Standing {
    /// `0.9392 [0.8997, 0.9908]`; a race stopped before its first look has no interval yet
    /// (`0.9392 (3 pairs, no interval)`), rather than `[0.0000, inf]`.
    pub fn ratio_interval(&self) -> String {
        match self.lo.is_finite() && self.hi.is_finite() {
            true => format!("{:.4} [{:.4}, {:.4}]", self.ratio, self.lo, self.hi),
            false => format!("{:.4} ({} pairs, no interval)", self.ratio, self.pairs),
        }
    }

    /// Faster by at least the minimum effect and allowed to win.
    pub fn wins(&self, min_effect: f64) -> bool {
        self.can_win && self.verdict == Verdict::Faster && self.ratio <= 1.0 - min_effect
    }

    pub fn describe(&self) -> String {
        self.describe_against("Burn's plan")
    }

    /// [`Self::describe`] for a race whose reference is `reference` (the race across processes).
    pub(crate) fn describe_against(&self, reference: &str) -> String {
        let verdict = match &self.verdict {
            Verdict::Faster => format!("faster than {reference}"),
            Verdict::Slower => format!("slower than {reference}"),
            Verdict::Equivalent => format!("equivalent to {reference}"),
            Verdict::NotSeparated => format!("not separated from {reference}"),
            Verdict::Broken(why) => return format!("broken: {why}"),
        };
        let when = self.decided_at.map_or(String::new(), |r| format!(", decided at round {r}"));
        format!(
            "{verdict}: ratio {} at error rate {:.2e}, {} pairs{when}",
            self.ratio_interval(),
            self.level,
            self.pairs
        )
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Stop {
    /// A candidate is faster with confidence by at least the minimum effect.
    Winner(usize),
    /// Every candidate is decided (slower, equivalent, faster below the effect, or broken).
    AllDecided,
    /// The wall-time budget ran out.
    Budget,
    /// `max_rounds` reached with candidates still undecided.
    MaxRounds,
}

/// Everything a race measured and decided; `rounds` holds every visit in visit order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Race {
    pub rules: RaceRules,
    pub looks_planned: Vec<u32>,
    pub looks_done: Vec<u32>,
    pub rounds: Vec<Vec<(usize, f64)>>,
    pub standings: Vec<Standing>,
    pub stop: Stop,
    pub seconds: f64,
}

impl Race {
    pub fn stop_text(&self) -> String {
        self.stop_text_against("Burn's plan", 'c')
    }

    /// [`Self::stop_text`] for a race whose reference is `reference` and whose candidates are
    /// named `<prefix><id>`.
    pub(crate) fn stop_text_against(&self, reference: &str, prefix: char) -> String {
        match &self.stop {
            Stop::Winner(id) => format!(
                "winner: {prefix}{id} is faster than {reference} with confidence by at least {:.1} %",
                100.0 * self.rules.min_effect
            ),
            Stop::AllDecided => format!(
                "all decided: every candidate is slower, equivalent within ±{:.1} %, or broken",
                100.0 * self.rules.min_effect
            ),
            Stop::Budget => format!(
                "time budget ({:.0} s) spent after {} rounds",
                self.rules.budget.as_secs_f64(),
                self.rounds.len()
            ),
            Stop::MaxRounds => format!("{} rounds (the most allowed) with candidates undecided", self.rounds.len()),
        }
    }

    /// Every visit's ms per step, by candidate, in round order.
    pub fn samples(&self) -> BTreeMap<usize, Vec<f64>> {
        let mut out: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for round in &self.rounds {
            for &(id, ms) in round {
                out.entry(id).or_default().push(ms);
            }
        }
        out
    }

    /// Winners, best ratio first.
    pub(crate) fn winners(&self) -> Vec<&Standing> {
        let mut w: Vec<&Standing> = self.standings.iter().filter(|s| s.wins(self.rules.min_effect)).collect();
        w.sort_by(|a, b| a.ratio.total_cmp(&b.ratio));
        w
    }
}

/// Times one visit of a candidate (ms per step); an `Err` marks the candidate broken.
pub trait Visitor {
    fn visit(&mut self, id: usize) -> Result<f64, String>;
}

/// A candidate as the race sees it: its id (`crate::candidate::Candidate::id`) and whether it
/// may win (fusion off races but is never kept). Burn's plan is implied and always visited.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub id: usize,
    pub can_win: bool,
}

/// Runs a race of `candidates` against Burn's plan. Fails only when Burn's plan itself fails.
pub fn race(
    candidates: &[Candidate],
    visitor: &mut dyn Visitor,
    rules: &RaceRules,
    mut progress: impl FnMut(u32, usize),
) -> Result<Race, String> {
    let start = Instant::now();
    let mut state = RaceState::new(candidates, rules);
    loop {
        let order = state.next_round();
        progress(state.round() + 1, order.len() - 1);
        let mut visits = Vec::with_capacity(order.len());
        for id in order {
            match visitor.visit(id) {
                Ok(ms) => visits.push((id, ms)),
                Err(e) if id == BURN => return Err(format!("Burn's plan failed during the race: {e}")),
                Err(e) => state.broken(id, e),
            }
        }
        if state.finish_round(visits, start.elapsed()).is_some() {
            return Ok(state.into_race(start.elapsed()));
        }
    }
}

/// A race driven from outside, one round at a time: [`race`] drives it with a visitor that
/// runs steps itself; the live mode drives it from the training loop, a step at a time, with
/// its own clock.
pub(crate) struct RaceState {
    rules: RaceRules,
    looks: Vec<u32>,
    alpha_look: f64,
    candidates: usize,
    standings: Vec<Standing>,
    rounds: Vec<Vec<(usize, f64)>>,
    looks_done: Vec<u32>,
    rejected: usize,
    stop: Option<Stop>,
}

impl RaceState {
    pub fn new(candidates: &[Candidate], rules: &RaceRules) -> Self {
        let looks = rules.looks();
        Self {
            rules: rules.clone(),
            alpha_look: rules.alpha / looks.len() as f64,
            looks,
            candidates: candidates.len(),
            standings: candidates.iter().map(|e| undecided(e.id, e.can_win)).collect(),
            rounds: Vec::new(),
            looks_done: Vec::new(),
            rejected: 0,
            stop: None,
        }
    }

    /// Rounds finished so far.
    pub fn round(&self) -> u32 {
        self.rounds.len() as u32
    }

    /// The visits of the next round: Burn's plan and every candidate still racing, the start
    /// rotating by round (A B C, B C A, ...).
    pub(crate) fn next_round(&self) -> Vec<usize> {
        let racing: Vec<usize> = self
            .standings
            .iter()
            .filter(|s| s.decided_at.is_none() && !matches!(s.verdict, Verdict::Broken(_)))
            .map(|s| s.id)
            .collect();
        rotated(&racing, self.round() + 1)
    }

    /// Marks a candidate broken (it leaves the race).
    pub fn broken(&mut self, id: usize, why: String) {
        self.standings.iter_mut().filter(|s| s.id == id).for_each(|s| s.verdict = Verdict::Broken(why.clone()));
    }

    /// Records a round's visits (ms per step) after `elapsed` of racing; looks at the data when
    /// a look is due. Returns why the race stopped, once it has.
    pub(crate) fn finish_round(&mut self, visits: Vec<(usize, f64)>, elapsed: Duration) -> Option<Stop> {
        self.rounds.push(visits);
        let round = self.round();
        let out_of_time = elapsed >= self.rules.budget;
        let scheduled = self.looks.get(self.looks_done.len()) == Some(&round);
        if scheduled || (out_of_time && self.looks_done.len() < self.looks.len()) {
            self.looks_done.push(round);
            let family = self.candidates - self.rejected;
            self.rejected +=
                look(&mut self.standings, &self.rounds, round, self.alpha_look, family, self.rules.min_effect);
            let min_effect = self.rules.min_effect;
            if let Some(w) =
                self.standings.iter().filter(|s| s.wins(min_effect)).min_by(|a, b| a.ratio.total_cmp(&b.ratio))
            {
                self.stop = Some(Stop::Winner(w.id));
            } else if self.standings.iter().all(|s| s.decided_at.is_some() || matches!(s.verdict, Verdict::Broken(_))) {
                self.stop = Some(Stop::AllDecided);
            }
        }
        if self.stop.is_none() && out_of_time {
            self.stop = Some(Stop::Budget);
        }
        if self.stop.is_none() && round >= self.rules.max_rounds {
            self.stop = Some(Stop::MaxRounds);
        }
        self.stop.clone()
    }

    pub fn standings(&self) -> &[Standing] {
        &self.standings
    }

    /// The finished (or abandoned) race, `elapsed` its wall time.
    pub(crate) fn into_race(self, elapsed: Duration) -> Race {
        Race {
            looks_planned: self.looks,
            looks_done: self.looks_done,
            rounds: self.rounds,
            standings: self.standings,
            stop: self.stop.unwrap_or(Stop::MaxRounds),
            seconds: elapsed.as_secs_f64(),
            rules: self.rules,
        }
    }
}

fn undecided(id: usize, can_win: bool) -> Standing {
    Standing {
        id,
        can_win,
        pairs: 0,
        ratio: f64::NAN,
        lo: 0.0,
        hi: f64::INFINITY,
        level: 1.0,
        verdict: Verdict::NotSeparated,
        decided_at: None,
    }
}

/// Burn's plan and the racing candidates, the start rotating by round (A B C, B C A, ...).
fn rotated(racing: &[usize], round: u32) -> Vec<usize> {
    let all: Vec<usize> = std::iter::once(BURN).chain(racing.iter().copied()).collect();
    let k = round as usize % all.len();
    all[k..].iter().chain(&all[..k]).copied().collect()
}

/// `ln(candidate / burn)` for every round where both were visited.
fn log_ratios(rounds: &[Vec<(usize, f64)>], id: usize) -> Vec<f64> {
    log_ratios_against(rounds, id, BURN)
}

/// `ln(candidate / reference)` for every round where both were visited: any two candidates of a
/// race are paired by round as each is with Burn's plan (`blazec table` pairs the kept plan
/// with fusion off this way).
pub(crate) fn log_ratios_against(rounds: &[Vec<(usize, f64)>], id: usize, reference: usize) -> Vec<f64> {
    rounds
        .iter()
        .filter_map(|r| {
            let base = r.iter().find(|v| v.0 == reference)?.1;
            let c = r.iter().find(|v| v.0 == id)?.1;
            Some((c / base).ln())
        })
        .collect()
}

/// One look: Holm over the undecided candidates, then equivalence for the rest. Returns how
/// many hypotheses it rejected (faster or slower).
fn look(
    state: &mut [Standing],
    rounds: &[Vec<(usize, f64)>],
    round: u32,
    alpha: f64,
    family: usize,
    min_effect: f64,
) -> usize {
    let open: Vec<usize> = (0..state.len())
        .filter(|&i| state[i].decided_at.is_none() && !matches!(state[i].verdict, Verdict::Broken(_)))
        .collect();
    let d: Vec<Vec<f64>> = open.iter().map(|&i| log_ratios(rounds, state[i].id)).collect();
    let p: Vec<f64> = d.iter().map(|d| sign_test_p(d)).collect();
    let tested = holm(&p, alpha, family);
    let mut rejected = 0;
    for (k, &i) in open.iter().enumerate() {
        let level = tested[k].unwrap_or(alpha / family.max(1) as f64);
        let (lo, hi) = median_interval(&d[k], level);
        let s = &mut state[i];
        (s.pairs, s.ratio, s.lo, s.hi, s.level) = (d[k].len(), median(&d[k]).exp(), lo.exp(), hi.exp(), level);
        if tested[k].is_some() && lo > 0.0 {
            (s.verdict, s.decided_at) = (Verdict::Slower, Some(round));
            rejected += 1;
        } else if tested[k].is_some() && hi < 0.0 {
            s.verdict = Verdict::Faster;
            // Faster but below the effect that matters (or not a plan): decided, not a winner.
            if !s.wins(min_effect) {
                s.decided_at = Some(round);
                rejected += 1;
            }
        } else if lo >= (1.0 - min_effect).ln() && hi <= (1.0 + min_effect).ln() {
            (s.verdict, s.decided_at) = (Verdict::Equivalent, Some(round));
        } else {
            s.verdict = Verdict::NotSeparated;
        }
    }
    rejected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_is_written_with_its_interval_or_says_it_has_none() {
        let mut s = Standing { pairs: 3, ratio: 0.93921, ..undecided(1, true) };
        assert_eq!(s.ratio_interval(), "0.9392 (3 pairs, no interval)");
        (s.lo, s.hi) = (0.89971, 0.99083);
        assert_eq!(s.ratio_interval(), "0.9392 [0.8997, 0.9908]");
        assert!(s.describe().contains("ratio 0.9392 [0.8997, 0.9908] at error rate"), "{}", s.describe());
    }

    /// A fake device: candidate `id` takes `base * ratio[id]` ms, times log-normal noise shared
    /// by the round (drift) and per visit (jitter). Deterministic from its seed.
    pub(crate) struct Fake {
        pub ratio: BTreeMap<usize, f64>,
        pub jitter: f64,
        pub state: u64,
        pub broken: Option<usize>,
    }

    impl Fake {
        pub fn new(seed: u64, ratios: &[(usize, f64)], jitter: f64) -> Self {
            Self {
                ratio: ratios.iter().copied().collect(),
                jitter,
                state: seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407),
                broken: None,
            }
        }

        fn normal(&mut self) -> f64 {
            // Sum of 12 uniforms minus 6: close enough to N(0, 1) for a test.
            (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
        }

        fn uniform(&mut self) -> f64 {
            self.state = self.state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.state >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    impl Visitor for Fake {
        fn visit(&mut self, id: usize) -> Result<f64, String> {
            if self.broken == Some(id) {
                return Err("panicked while stepping".into());
            }
            let r = self.ratio.get(&id).copied().unwrap_or(1.0);
            Ok(10.0 * r * (self.jitter * self.normal()).exp())
        }
    }

    fn candidates(ids: &[usize]) -> Vec<Candidate> {
        ids.iter().map(|&id| Candidate { id, can_win: true }).collect()
    }

    fn run(fake: &mut Fake, ids: &[usize], rules: &RaceRules) -> Race {
        race(&candidates(ids), fake, rules, |_, _| {}).unwrap()
    }

    #[test]
    fn any_two_candidates_pair_by_round_and_rounds_missing_either_are_skipped() {
        // Round 2 did not visit candidate 3 (dropped), round 3 did not visit candidate 5.
        let rounds =
            vec![vec![(BURN, 10.0), (3, 9.0), (5, 12.0)], vec![(BURN, 10.0), (5, 11.0)], vec![(BURN, 20.0), (3, 16.0)]];
        let d = log_ratios_against(&rounds, 3, 5);
        assert_eq!(d.len(), 1);
        assert!((d[0] - (9.0f64 / 12.0).ln()).abs() < 1e-12);
        let against_burn = log_ratios(&rounds, 3);
        assert_eq!(against_burn.len(), 2);
        assert!((against_burn[1] - (0.8f64).ln()).abs() < 1e-12);
    }

    #[test]
    fn looks_grow_geometrically_and_end_at_the_most_rounds() {
        let r = RaceRules { min_rounds: 10, max_rounds: 60, growth: 1.5, ..Default::default() };
        assert_eq!(r.looks(), vec![10, 15, 23, 34, 51, 60]);
        let one = RaceRules { min_rounds: 10, max_rounds: 10, ..Default::default() };
        assert_eq!(one.looks(), vec![10]);
    }

    #[test]
    fn aa_races_declare_a_difference_at_most_at_the_family_rate() {
        // 200 independent A/A races with three identical candidates each, 3 % jitter.
        let rules = RaceRules { max_rounds: 120, budget: Duration::from_secs(3600), ..Default::default() };
        let declared = (0..200u64)
            .filter(|&seed| {
                let race = run(&mut Fake::new(seed, &[], 0.03), &[1, 2, 3], &rules);
                race.standings.iter().any(|s| matches!(s.verdict, Verdict::Faster | Verdict::Slower))
            })
            .count();
        assert!(declared <= 10, "{declared} of 200 A/A races declared a difference (> 5 %)");
    }

    #[test]
    fn a_slowdown_of_five_and_two_percent_is_found_slower() {
        let rules = RaceRules { max_rounds: 200, budget: Duration::from_secs(3600), ..Default::default() };
        for effect in [1.05, 1.02] {
            let found = (0..20u64).filter(|&seed| {
                let race = run(&mut Fake::new(seed, &[(1, effect)], 0.02), &[1], &rules);
                race.standings[0].verdict == Verdict::Slower && race.stop == Stop::AllDecided
            });
            assert_eq!(found.count(), 20, "slowdown {effect}");
        }
    }

    #[test]
    fn a_faster_plan_stops_the_race_as_the_winner_and_others_keep_their_standing() {
        let rules = RaceRules { budget: Duration::from_secs(3600), ..Default::default() };
        let race = run(&mut Fake::new(7, &[(1, 1.0), (2, 0.95), (3, 1.10)], 0.02), &[1, 2, 3], &rules);
        assert_eq!(race.stop, Stop::Winner(2));
        assert_eq!(race.winners()[0].id, 2);
        let s2 = &race.standings[1];
        assert!(s2.hi < 1.0 && (s2.ratio - 0.95).abs() < 0.01, "{}", s2.describe());
        assert_eq!(race.standings[2].verdict, Verdict::Slower);
        // Every visit is kept, Burn's plan in every round.
        assert!(race.rounds.iter().all(|r| r.iter().any(|v| v.0 == BURN)));
    }

    #[test]
    fn the_fusion_off_arm_is_decided_but_never_wins() {
        let rules = RaceRules { budget: Duration::from_secs(3600), ..Default::default() };
        let e = [Candidate { id: 1, can_win: false }];
        let raced = race(&e, &mut Fake::new(3, &[(1, 0.9)], 0.02), &rules, |_, _| {}).unwrap();
        assert_eq!(raced.standings[0].verdict, Verdict::Faster);
        assert_eq!(raced.stop, Stop::AllDecided);
        assert!(raced.winners().is_empty());
    }

    #[test]
    fn identical_plans_with_little_noise_are_shown_equivalent() {
        let rules = RaceRules { budget: Duration::from_secs(3600), ..Default::default() };
        let race = run(&mut Fake::new(1, &[], 0.002), &[1], &rules);
        assert_eq!(race.standings[0].verdict, Verdict::Equivalent);
        assert_eq!(race.stop, Stop::AllDecided);
    }

    #[test]
    fn a_spent_budget_forces_one_look_and_leaves_the_rest_not_separated() {
        let rules = RaceRules { budget: Duration::ZERO, ..Default::default() };
        let race = run(&mut Fake::new(1, &[(1, 0.99)], 0.05), &[1], &rules);
        assert_eq!(race.stop, Stop::Budget);
        assert_eq!((race.rounds.len(), race.looks_done.clone()), (1, vec![1]));
        assert_eq!(race.standings[0].verdict, Verdict::NotSeparated);
        assert!(race.stop_text().contains("budget"));
    }

    #[test]
    fn a_broken_candidate_leaves_the_race_and_burn_failing_ends_it() {
        let rules = RaceRules { budget: Duration::from_secs(3600), ..Default::default() };
        let mut fake = Fake::new(2, &[(2, 1.05)], 0.02);
        fake.broken = Some(1);
        let raced = run(&mut fake, &[1, 2], &rules);
        assert!(matches!(raced.standings[0].verdict, Verdict::Broken(_)));
        assert_eq!(raced.standings[1].verdict, Verdict::Slower);
        let mut fake = Fake::new(2, &[], 0.02);
        fake.broken = Some(BURN);
        let err = race(&candidates(&[1]), &mut fake, &rules, |_, _| {}).unwrap_err();
        assert!(err.contains("Burn's plan failed"), "{err}");
    }
}
