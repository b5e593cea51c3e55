//! `blazec profile`: where a step's time goes, block by block, under Burn's plan and under a
//! plan file. For each arm: one recorded step gives the executed blocks and their operations;
//! then `steps` timed steps under a [`BlockTimer`] give each block's host time (fusion thread,
//! between the block's start and end; launches are asynchronous, so this is host work and any
//! wait the block does on that thread, e.g. for a full submission queue, not device work) and
//! the step's wall time. Blocks run in the same order every steady-state
//! step, so the two are matched by position; a step whose block count differs is not used.
use crate::candidate::Candidate;
use crate::confirm::install;
use crate::session::{Settle, record_step, settle, warm_up};
use blaze_ir::plan::Regime;
use blaze_runtime::{BlockTimer, ModelFactory, activate_burn_default};
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::time::Instant;

/// Share of the step the fusion thread spends inside blocks above which the step is called
/// host-bound, and below which it is called device-bound.
pub const HOST_BOUND: f64 = 0.7;
pub const DEVICE_BOUND: f64 = 0.3;

/// One executed block.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlockProfile {
    /// Operations (step indices) it executed.
    pub ops: Vec<u32>,
    /// Their kinds, e.g. `Matmul Add Exp`.
    pub kinds: String,
    /// Median host time per step, microseconds.
    pub host_us: f64,
}

/// One arm (Burn's plan or a plan file).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArmProfile {
    pub arm: String,
    /// Median wall time of a timed step (device synchronised at both ends), milliseconds.
    pub step_ms: f64,
    /// Sum of the blocks' median host times, milliseconds.
    pub host_ms: f64,
    pub fused_blocks: usize,
    pub blocks: Vec<BlockProfile>,
    /// Timed steps whose block count matched the recorded step (the others are not used).
    pub steps_used: usize,
    pub steps_timed: usize,
}

impl ArmProfile {
    /// Share of the step spent in blocks on the fusion thread.
    pub fn host_share(&self) -> f64 {
        self.host_ms / self.step_ms
    }

    pub fn verdict(&self) -> &'static str {
        match self.host_share() {
            s if s >= HOST_BOUND => "host-bound: the host's work per block fills most of the step; fewer blocks help",
            s if s <= DEVICE_BOUND => "device-bound: the host waits for the device most of the step",
            _ => "mixed: neither host work per block nor device work fills the step",
        }
    }
}

/// Profiles `candidate` on a fresh instance: warm-up, 1 s settling, one recorded step, then
/// `steps` timed steps.
pub fn profile_arm(factory: &dyn ModelFactory, regime: Regime, candidate: &Candidate, arm: &str, steps: u32) -> anyhow::Result<ArmProfile> {
    let mut model = factory.build(regime).map_err(anyhow::Error::msg)?;
    install(candidate);
    warm_up(model.as_mut(), 3);
    settle(model.as_mut(), Settle::For(crate::session::SETTLE));
    let (recorded, _) = record_step(model.as_mut(), false);
    let blocks = &recorded.partition.blocks;
    let mut per_block: Vec<Vec<f64>> = vec![Vec::new(); blocks.len()];
    let (mut step_ms, mut used) = (Vec::new(), 0);
    for _ in 0..steps.max(1) {
        model.sync();
        let timer = BlockTimer::start();
        let start = Instant::now();
        model.step(false);
        model.sync();
        step_ms.push(start.elapsed().as_secs_f64() * 1e3);
        let spans = timer.finish();
        if spans.len() == blocks.len() {
            used += 1;
            per_block.iter_mut().zip(&spans).for_each(|(v, d)| v.push(d.as_secs_f64() * 1e6));
        }
    }
    activate_burn_default();
    let kinds = |ops: &[u32]| ops.iter().map(|&i| short_kind(&recorded.ops[i as usize].sig.kind)).collect::<Vec<_>>().join(" ");
    let profiled: Vec<BlockProfile> = blocks
        .iter()
        .zip(&per_block)
        .map(|(ops, us)| BlockProfile { ops: ops.clone(), kinds: kinds(ops), host_us: median(us) })
        .collect();
    Ok(ArmProfile {
        arm: arm.into(),
        step_ms: median(&step_ms),
        host_ms: profiled.iter().map(|b| b.host_us).sum::<f64>() / 1e3,
        fused_blocks: recorded.partition.fused_blocks().count(),
        blocks: profiled,
        steps_used: used,
        steps_timed: step_ms.len(),
    })
}

/// `NumericFloat/Add` -> `Add`.
fn short_kind(kind: &str) -> &str {
    kind.rsplit('/').next().unwrap_or(kind)
}

fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// The text `blazec profile` prints: per arm its totals, verdict and the `top` blocks by host time.
pub fn text(model: &str, arms: &[ArmProfile], top: usize) -> String {
    let mut out = String::new();
    for a in arms {
        let _ = writeln!(out, "{model} under {}: step {:.3} ms (median of {}); {} blocks ({} fused); host time in blocks {:.3} ms = {:.0} % of the step ({} of {} steps matched the recorded blocks)",
            a.arm, a.step_ms, a.steps_timed, a.blocks.len(), a.fused_blocks, a.host_ms, 100.0 * a.host_share(), a.steps_used, a.steps_timed);
        let _ = writeln!(out, "  {}", a.verdict());
        let mut order: Vec<usize> = (0..a.blocks.len()).collect();
        order.sort_by(|&x, &y| a.blocks[y].host_us.total_cmp(&a.blocks[x].host_us));
        let _ = writeln!(out, "  {:>5}  {:>9}  {:>4}  operations", "block", "host µs", "ops");
        for &i in order.iter().take(top) {
            let b = &a.blocks[i];
            let ops = match (b.ops.first(), b.ops.last()) {
                (Some(f), Some(l)) if f != l => format!("op {f}..{l}: {}", b.kinds),
                (Some(f), _) => format!("op {f}: {}", b.kinds),
                _ => String::new(),
            };
            let _ = writeln!(out, "  {:>5}  {:>9.1}  {:>4}  {}", i, b.host_us, b.ops.len(), truncate(&ops, 100));
        }
    }
    if let [burn, plan] = arms {
        let _ = writeln!(out, "plan / Burn: step {:.4}, host time in blocks {:.4}, blocks {} -> {}", plan.step_ms / burn.step_ms, plan.host_ms / burn.host_ms, burn.blocks.len(), plan.blocks.len());
    }
    out
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_string() } else { format!("{}…", s.chars().take(n).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(step_ms: f64, host_us: &[f64]) -> ArmProfile {
        let blocks = host_us.iter().enumerate().map(|(i, &h)| BlockProfile { ops: vec![i as u32], kinds: "Add".into(), host_us: h }).collect::<Vec<_>>();
        ArmProfile { arm: "x".into(), step_ms, host_ms: host_us.iter().sum::<f64>() / 1e3, fused_blocks: 0, blocks, steps_used: 1, steps_timed: 1 }
    }

    #[test]
    fn verdicts_follow_the_host_share_of_the_step() {
        assert!(arm(1.0, &[400.0, 400.0]).verdict().starts_with("host-bound"));
        assert!(arm(10.0, &[400.0, 400.0]).verdict().starts_with("device-bound"));
        assert!(arm(2.0, &[400.0, 400.0]).verdict().starts_with("mixed"));
    }

    #[test]
    fn the_text_lists_the_slowest_blocks_first_and_compares_two_arms() {
        let t = text("m", &[arm(2.0, &[10.0, 300.0, 20.0]), arm(1.0, &[100.0])], 2);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[3].trim_start().starts_with("1 ") && lines[4].trim_start().starts_with("2 "), "{t}");
        assert!(t.contains("plan / Burn: step 0.5000") && t.contains("blocks 3 -> 1"), "{t}");
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
