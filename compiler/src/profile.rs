//! `blazec profile`: where a step's time goes, block by block, under Burn's plan and under a
//! plan file. For each arm: one recorded step gives the executed blocks and their operations;
//! then `steps` timed steps under a [`BlockTimer`] give each block's host time (fusion thread,
//! between the block's start and end; launches are asynchronous, so this is host work and any
//! wait the block does on that thread, e.g. for a full submission queue, not device work) and
//! the step's wall time; then a few steps under a [`DeviceBlockTimer`] give each block's device
//! time (a CubeCL profile window per block). Profiled steps run one submission per block, so
//! they are never the timed steps: the step time and host times come from unprofiled steps.
//! Blocks run in the same order every steady-state step, so all three are matched by position;
//! a step whose block count differs is not used.
use crate::candidate::Candidate;
use crate::confirm::install;
use crate::drive::{Settle, record_step, settle, warm_up};
use crate::stats::median;
use blaze_burn::DeviceBlockTimer;
use blaze_ir::plan::Regime;
use blaze_runtime::{BlockTimer, ModelFactory, activate_burn_default};
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::time::Instant;

/// Share of the step the fusion thread spends inside blocks above which the step is called
/// host-bound, and below which it is called device-bound.
pub(crate) const HOST_BOUND: f64 = 0.7;
pub(crate) const DEVICE_BOUND: f64 = 0.3;
/// Share of the step the device spends running the blocks' kernels at or above which the step
/// is called bound by device work (below it, by fixed per-step cost).
pub(crate) const DEVICE_BUSY: f64 = 0.7;
/// Profiled steps per arm for device times (each is slow: one submission per block).
pub(crate) const DEVICE_STEPS: u32 = 5;

/// One executed block.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlockProfile {
    /// Operations (step indices) it executed.
    pub ops: Vec<u32>,
    /// Their kinds, e.g. `Matmul Add Exp`.
    pub kinds: String,
    /// Median host time per step, microseconds.
    pub host_us: f64,
    /// Median device time per step, microseconds (its kernels, from a profile window); `None`
    /// when no profiled step measured it (a block that launched no kernel, or no timestamps).
    #[serde(default)]
    pub device_us: Option<f64>,
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
    /// Sum of the blocks' median device times, milliseconds (`None`: nothing measured).
    #[serde(default)]
    pub device_ms: Option<f64>,
    /// How CubeCL timed the windows: `device` (timestamp queries) or `system` (host clocks).
    #[serde(default)]
    pub device_method: String,
    /// Profiled steps whose block count matched, of those run.
    #[serde(default)]
    pub device_steps_used: usize,
    #[serde(default)]
    pub device_steps: usize,
}

impl ArmProfile {
    /// Share of the step spent in blocks on the fusion thread.
    pub(crate) fn host_share(&self) -> f64 {
        self.host_ms / self.step_ms
    }

    /// Share of the step the device spends running the blocks' kernels.
    pub(crate) fn device_share(&self) -> Option<f64> {
        self.device_ms.map(|d| d / self.step_ms)
    }

    /// What bounds the step: device work when the kernels fill most of it, otherwise fixed
    /// per-step cost, split into the host's work per block and the rest (syncs, submission,
    /// launch latency). Without device times, the host share alone decides.
    pub fn verdict(&self) -> String {
        let host = 100.0 * self.host_share();
        match self.device_share() {
            Some(d) if d >= DEVICE_BUSY => format!(
                "bound by device work: the device runs kernels {:.0} % of the step; cheaper or fewer kernels help",
                100.0 * d
            ),
            Some(d) => format!(
                "bound by fixed per-step cost: the device runs kernels only {:.0} % of the step; host work in blocks is {host:.0} %, the rest is syncs, submission and launch latency",
                100.0 * d
            ),
            None => match self.host_share() {
                s if s >= HOST_BOUND => {
                    "host-bound: the host's work per block fills most of the step; fewer blocks help".into()
                }
                s if s <= DEVICE_BOUND => {
                    "device-bound: the host waits for the device most of the step (no device times measured)".into()
                }
                _ => "mixed: neither host work per block nor device work fills the step (no device times measured)"
                    .into(),
            },
        }
    }
}

/// Profiles `candidate` on a fresh instance: warm-up, 1 s settling, one recorded step, then
/// `steps` timed steps.
pub fn profile_arm(
    factory: &dyn ModelFactory,
    regime: Regime,
    candidate: &Candidate,
    arm: &str,
    steps: u32,
) -> anyhow::Result<ArmProfile> {
    let mut model = factory.build(regime).map_err(anyhow::Error::msg)?;
    install(candidate);
    warm_up(model.as_mut(), 3);
    settle(model.as_mut(), Settle::For(crate::drive::SETTLE));
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
    let device = device_times(model.as_mut(), blocks.len());
    activate_burn_default();
    let kinds =
        |ops: &[u32]| ops.iter().map(|&i| short_kind(&recorded.ops[i as usize].sig.kind)).collect::<Vec<_>>().join(" ");
    let profiled: Vec<BlockProfile> = blocks
        .iter()
        .zip(&per_block)
        .zip(&device.per_block)
        .map(|((ops, us), dev)| BlockProfile {
            ops: ops.clone(),
            kinds: kinds(ops),
            host_us: median(us),
            device_us: (!dev.is_empty()).then(|| median(dev)),
        })
        .collect();
    Ok(ArmProfile {
        arm: arm.into(),
        step_ms: median(&step_ms),
        host_ms: profiled.iter().map(|b| b.host_us).sum::<f64>() / 1e3,
        fused_blocks: recorded.partition.fused_blocks().count(),
        device_ms: device_total(&profiled),
        blocks: profiled,
        steps_used: used,
        steps_timed: step_ms.len(),
        device_method: device.method,
        device_steps_used: device.used,
        device_steps: DEVICE_STEPS as usize,
    })
}

/// Sum of the blocks' measured device times, milliseconds; `None` when no block was measured.
fn device_total(blocks: &[BlockProfile]) -> Option<f64> {
    let measured: Vec<f64> = blocks.iter().filter_map(|b| b.device_us).collect();
    (!measured.is_empty()).then(|| measured.iter().sum::<f64>() / 1e3)
}

/// Device times of `DEVICE_STEPS` profiled steps, per block (microseconds, measured ones only).
struct DeviceTimes {
    per_block: Vec<Vec<f64>>,
    method: String,
    used: usize,
}

fn device_times(model: &mut dyn blaze_runtime::Model, blocks: usize) -> DeviceTimes {
    let mut times = DeviceTimes { per_block: vec![Vec::new(); blocks], method: String::new(), used: 0 };
    for _ in 0..DEVICE_STEPS {
        model.sync();
        let timer = DeviceBlockTimer::start();
        model.step(false);
        model.sync();
        let answer = timer.finish();
        times.method = answer.method.into();
        if answer.spans.len() == blocks {
            times.used += 1;
            for (v, d) in times.per_block.iter_mut().zip(&answer.spans) {
                v.extend(d.map(|d| d.as_secs_f64() * 1e6));
            }
        }
    }
    times
}

/// `NumericFloat/Add` -> `Add`.
fn short_kind(kind: &str) -> &str {
    kind.rsplit('/').next().unwrap_or(kind)
}

/// The text `blazec profile` prints: per arm its totals, verdict and the `top` blocks by device
/// time (by host time where no device time was measured).
pub fn text(model: &str, arms: &[ArmProfile], top: usize) -> String {
    let mut out = String::new();
    for a in arms {
        let _ = writeln!(
            out,
            "{model} under {}: step {:.3} ms (median of {}); {} blocks ({} fused); host time in blocks {:.3} ms = {:.0} % of the step ({} of {} steps matched the recorded blocks)",
            a.arm,
            a.step_ms,
            a.steps_timed,
            a.blocks.len(),
            a.fused_blocks,
            a.host_ms,
            100.0 * a.host_share(),
            a.steps_used,
            a.steps_timed
        );
        let _ = writeln!(out, "  {}", device_line(a));
        let _ = writeln!(out, "  {}", a.verdict());
        let key = |b: &BlockProfile| if a.device_ms.is_some() { b.device_us.unwrap_or(-1.0) } else { b.host_us };
        let mut order: Vec<usize> = (0..a.blocks.len()).collect();
        order.sort_by(|&x, &y| key(&a.blocks[y]).total_cmp(&key(&a.blocks[x])));
        let _ = writeln!(out, "  {:>5}  {:>9}  {:>9}  {:>4}  operations", "block", "device µs", "host µs", "ops");
        for &i in order.iter().take(top) {
            let b = &a.blocks[i];
            let ops = match (b.ops.first(), b.ops.last()) {
                (Some(f), Some(l)) if f != l => format!("op {f}..{l}: {}", b.kinds),
                (Some(f), _) => format!("op {f}: {}", b.kinds),
                _ => String::new(),
            };
            let dev = b.device_us.map_or("–".to_string(), |d| format!("{d:.1}"));
            let _ = writeln!(
                out,
                "  {:>5}  {:>9}  {:>9.1}  {:>4}  {}",
                i,
                dev,
                b.host_us,
                b.ops.len(),
                truncate(&ops, 100)
            );
        }
    }
    if let [burn, plan] = arms {
        let device = match (burn.device_ms, plan.device_ms) {
            (Some(b), Some(p)) => format!(", device time {:.4}", p / b),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "plan / Burn: step {:.4}, host time in blocks {:.4}{device}, blocks {} -> {}",
            plan.step_ms / burn.step_ms,
            plan.host_ms / burn.host_ms,
            burn.blocks.len(),
            plan.blocks.len()
        );
    }
    out
}

/// The arm's device-time total, or why there is none.
fn device_line(a: &ArmProfile) -> String {
    match a.device_ms {
        Some(d) => format!(
            "device time in blocks {d:.3} ms = {:.0} % of the step ({} timing; {} blocks measured; median of {} of {} profiled steps, which are not the timed steps)",
            100.0 * d / a.step_ms,
            a.device_method,
            a.blocks.iter().filter(|b| b.device_us.is_some()).count(),
            a.device_steps_used,
            a.device_steps
        ),
        None => format!(
            "device time: not measured ({} of {} profiled steps matched the recorded blocks, and no block's profile window carried a measurement)",
            a.device_steps_used, a.device_steps
        ),
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_string() } else { format!("{}…", s.chars().take(n).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(step_ms: f64, host_us: &[f64]) -> ArmProfile {
        let blocks = host_us
            .iter()
            .enumerate()
            .map(|(i, &h)| BlockProfile { ops: vec![i as u32], kinds: "Add".into(), host_us: h, device_us: None })
            .collect::<Vec<_>>();
        ArmProfile {
            arm: "x".into(),
            step_ms,
            host_ms: host_us.iter().sum::<f64>() / 1e3,
            fused_blocks: 0,
            blocks,
            steps_used: 1,
            steps_timed: 1,
            device_ms: None,
            device_method: String::new(),
            device_steps_used: 0,
            device_steps: DEVICE_STEPS as usize,
        }
    }

    /// `arm` with device times per block (microseconds), in block order.
    fn with_device(mut a: ArmProfile, device_us: &[Option<f64>]) -> ArmProfile {
        a.blocks.iter_mut().zip(device_us).for_each(|(b, d)| b.device_us = *d);
        a.device_ms = device_total(&a.blocks);
        a.device_method = "device".into();
        a.device_steps_used = DEVICE_STEPS as usize;
        a
    }

    #[test]
    fn verdicts_follow_the_host_share_of_the_step() {
        assert!(arm(1.0, &[400.0, 400.0]).verdict().starts_with("host-bound"));
        assert!(arm(10.0, &[400.0, 400.0]).verdict().starts_with("device-bound"));
        assert!(arm(2.0, &[400.0, 400.0]).verdict().starts_with("mixed"));
    }

    #[test]
    fn device_times_decide_between_device_work_and_fixed_per_step_cost() {
        let busy = with_device(arm(1.0, &[100.0, 100.0]), &[Some(500.0), Some(300.0)]);
        assert!(busy.verdict().starts_with("bound by device work: the device runs kernels 80 %"), "{}", busy.verdict());
        let idle = with_device(arm(10.0, &[1000.0, 1000.0]), &[Some(500.0), None]);
        let v = idle.verdict();
        assert!(
            v.starts_with("bound by fixed per-step cost: the device runs kernels only 5 %")
                && v.contains("host work in blocks is 20 %"),
            "{v}"
        );
    }

    #[test]
    fn blocks_are_listed_by_device_time_when_measured() {
        let a = with_device(arm(2.0, &[300.0, 10.0, 20.0]), &[Some(5.0), Some(900.0), None]);
        let t = text("m", &[a.clone(), a], 3);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[1].contains("device time in blocks 0.905 ms = 45 % of the step (device timing; 2 blocks measured"),
            "{t}"
        );
        let rows: Vec<&str> = lines[4..7].iter().map(|l| l.split_whitespace().next().unwrap()).collect();
        assert_eq!(rows, ["1", "0", "2"], "{t}");
        assert!(lines[6].contains(" – "), "an unmeasured block shows a dash: {t}");
        assert!(t.contains("device time 1.0000"), "{t}");
        let none = text("m", &[arm(2.0, &[1.0])], 1);
        assert!(none.contains("device time: not measured"), "{none}");
    }

    #[test]
    fn the_text_lists_the_slowest_blocks_first_and_compares_two_arms() {
        let t = text("m", &[arm(2.0, &[10.0, 300.0, 20.0]), arm(1.0, &[100.0])], 2);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[4].trim_start().starts_with("1 ") && lines[5].trim_start().starts_with("2 "), "{t}");
        assert!(t.contains("plan / Burn: step 0.5000") && t.contains("blocks 3 -> 1"), "{t}");
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
