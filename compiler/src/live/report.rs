//! What a live run measured and decided: its arms, every decision, and the cost accounting
//! (selection window, slower arms during it, checks, break-even). Written as RON by
//! `blazec live -o`, printed as a table at the end of the run.
use super::driver::{Driver, Event, Schedule, What};
use crate::measure::PROTOCOL;
use crate::stats::Summary;
use blaze_ir::plan::{DeviceInfo, VerifyOutcome};
use blaze_runtime::Description;
use serde::{Deserialize, Serialize};

/// Protocol of a live run: the race of blaze-measure/3 on the run's own steps.
pub(crate) const LIVE_PROTOCOL: &str = "blaze-live/1 (races: blaze-measure/3)";

/// One arm: its candidate text and what verification said before the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Arm {
    pub text: String,
    /// Reports written before 2026-12-04: the gate's outcome as Debug text (see
    /// [`Arm::verification`]); newer ones leave it out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub verify: String,
    /// The verification gate's outcome on side instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<VerifyOutcome>,
    /// The arm runs with fusion off (the stock reference of the break-even figures). Reports
    /// written before 2026-12-07 leave it out; their figures were computed when written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unfused: bool,
}

impl Arm {
    pub fn new(text: String, outcome: VerifyOutcome, unfused: bool) -> Self {
        Arm { text, verify: String::new(), verification: Some(outcome), unfused }
    }

    /// The gate's outcome, from the typed record or from an older report's text.
    pub fn verification(&self) -> Option<VerifyOutcome> {
        self.verification.clone().or_else(|| VerifyOutcome::from_debug_text(&self.verify))
    }

    /// The outcome as the report's table says it.
    fn verify_text(&self) -> String {
        self.verification().map_or_else(|| self.verify.clone(), |v| v.to_string())
    }
}

/// One arm's use during the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArmUse {
    pub arm: usize,
    pub steps: u64,
    /// Timed visits (ms per step); empty for an arm never raced.
    pub samples: Vec<f64>,
    pub median_ms: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LiveReport {
    pub model: String,
    pub shapes: String,
    pub regime: String,
    pub device: DeviceInfo,
    pub commit: String,
    pub date: String,
    pub protocol: String,
    pub schedule: Schedule,
    pub arms: Vec<Arm>,
    /// Arms verification refused before the run (they never ran a training step).
    pub refused: Vec<Arm>,
    /// Side-instance preparation (trace, confirm, verify), seconds.
    pub prepare_s: f64,
    pub steps: u64,
    pub events: Vec<Event>,
    pub usage: Vec<ArmUse>,
    /// Step of the first settle, and the run's wall time then (the selection window).
    pub settle_step: Option<u64>,
    pub window_s: Option<f64>,
    /// Extra time the non-kept arms cost (their steps x their median minus the kept arm's), ms.
    pub slower_arms_ms: Option<f64>,
    /// Steps run by the drift checks.
    pub check_steps: u64,
    /// Steps after the window until the kept arm's gain pays back preparation and the slower
    /// arms, against Burn's default and against the best stock setting (Burn's or fusion off).
    pub break_even_default: Option<f64>,
    pub break_even_stock: Option<f64>,
    /// Captured arms on the run's own steps: recordings made, replays run, the memory around
    /// the last recording (absent in reports of runs without captured arms).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captured: Vec<(usize, super::CapturedUse)>,
}

impl LiveReport {
    pub fn new(desc: &Description, schedule: &Schedule, arms: Vec<Arm>, refused: Vec<Arm>, prepare_s: f64) -> Self {
        Self {
            model: desc.name.clone(),
            shapes: desc.shapes.clone(),
            regime: desc.regime.to_string(),
            device: desc.device.clone(),
            commit: crate::COMMIT.into(),
            date: crate::files::now_utc(),
            protocol: format!("{LIVE_PROTOCOL}; {PROTOCOL}"),
            schedule: schedule.clone(),
            arms,
            refused,
            prepare_s,
            steps: 0,
            events: Vec::new(),
            usage: Vec::new(),
            settle_step: None,
            window_s: None,
            slower_arms_ms: None,
            check_steps: 0,
            break_even_default: None,
            break_even_stock: None,
            captured: Vec::new(),
        }
    }

    /// This report with the driver's state now.
    pub fn finish(&self, driver: &Driver) -> Self {
        let mut r = self.clone();
        r.steps = driver.steps();
        r.events = driver.events.clone();
        r.usage = driver
            .costs
            .iter()
            .enumerate()
            .map(|(arm, c)| {
                let median_ms = (!c.samples.is_empty()).then(|| Summary::of(&c.samples).median);
                ArmUse { arm, steps: c.steps, samples: c.samples.clone(), median_ms }
            })
            .collect();
        r.check_steps = driver.costs.iter().map(|c| c.check_steps).sum();
        let first = r.events.iter().find(|e| matches!(e.what, What::Settled { .. }));
        r.settle_step = first.map(|e| e.step);
        r.window_s = first.map(|e| e.seconds + self.prepare_s);
        r.account(driver.winner());
        r
    }

    fn account(&mut self, kept: usize) {
        let median = |arm: usize| self.usage.get(arm).and_then(|u| u.median_ms);
        let Some(kept_ms) = median(kept) else { return };
        let slower: f64 = self
            .usage
            .iter()
            .filter(|u| u.arm != kept)
            .filter_map(|u| Some(u.steps as f64 * (u.median_ms? - kept_ms)))
            .sum();
        self.slower_arms_ms = Some(slower);
        let cost_ms = self.prepare_s * 1e3 + slower.max(0.0);
        let off = self.arms.iter().position(|a| a.unfused);
        let burn = median(0);
        let stock = burn.map(|b| off.and_then(median).map_or(b, |o| b.min(o)));
        let pays = |reference: Option<f64>| reference.filter(|r| *r > kept_ms).map(|r| cost_ms / (r - kept_ms));
        self.break_even_default = pays(burn);
        self.break_even_stock = pays(stock);
    }

    pub fn to_markdown(&self) -> String {
        let mut out =
            format!("# Live run: {} {} [{}] on {}\n\n", self.model, self.regime, self.shapes, self.device.adapter);
        out += &format!("protocol {}; commit {}; {}\n\n", LIVE_PROTOCOL, self.commit, self.date);
        out += "| arm | plan | verify | steps | median ms/step |\n|---|---|---|---|---|\n";
        for (a, u) in self.arms.iter().zip(&self.usage) {
            out += &format!(
                "| {} | {} | {} | {} | {} |\n",
                u.arm,
                a.text,
                a.verify_text(),
                u.steps,
                u.median_ms.map_or("–".into(), |m| format!("{m:.3}"))
            );
        }
        for a in &self.refused {
            out += &format!("| – | {} | {} (never ran) | 0 | – |\n", a.text, a.verify_text());
        }
        for (arm, c) in &self.captured {
            let mib = |b: Option<u64>| b.map_or("–".into(), |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64));
            let memory = c.memory.unwrap_or_default();
            out += &format!(
                "\ncaptured arm {arm}: {} recordings on the run's own steps, {} replays; pools reserved {} before recording, {} with the recording live",
                c.recordings,
                c.replays,
                mib(memory.reserved_before),
                mib(memory.reserved_live)
            );
        }
        out += "\n";
        for e in &self.events {
            out += &format!("- step {} ({:.1} s): {}\n", e.step, e.seconds, event_text(e, &self.arms));
        }
        let f = |x: Option<f64>, unit: &str| x.map_or("–".into(), |v| format!("{v:.1}{unit}"));
        out += &format!(
            "\nsteps {}; preparation {:.1} s; settled at step {} ({} after start); slower arms cost {}; check steps {}; break-even vs Burn's default {} steps, vs best stock {} steps\n",
            self.steps,
            self.prepare_s,
            self.settle_step.map_or("–".into(), |s| s.to_string()),
            f(self.window_s, " s"),
            f(self.slower_arms_ms, " ms"),
            self.check_steps,
            f(self.break_even_default, ""),
            f(self.break_even_stock, ""),
        );
        out
    }
}

/// One line for an event, naming arms by their plan text.
pub(crate) fn event_text(e: &Event, arms: &[Arm]) -> String {
    let name = |i: usize| arms.get(i).map_or(format!("arm {i}"), |a| a.text.clone());
    match &e.what {
        What::Sized { step_ms, steps_per_visit } => {
            format!("sized: Burn's step {step_ms:.3} ms, {steps_per_visit} timed steps per visit")
        }
        What::Settled { winner, runner_up, stop, .. } => {
            format!("settled on {} (runner-up {}); {stop}", name(*winner), name(*runner_up))
        }
        What::Checked { clean, ratio, lo, hi, next_in_steps } => format!(
            "check: runner-up/kept {ratio:.4} [{lo:.4}, {hi:.4}]; {}; next check in {next_in_steps} steps",
            if *clean { "clean" } else { "runner-up faster with confidence" }
        ),
        What::Reopened { winner, runner_up } => {
            format!("reopened: {} no longer beats {}; selecting again", name(*winner), name(*runner_up))
        }
        What::Withdrawn { arm, why } => format!("withdrew {} for the rest of the run: {why}", name(*arm)),
    }
}
