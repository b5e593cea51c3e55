//! `blazec doctor`: does Burn's fusion change this model's numbers, which fused block does it,
//! and a plan that unfuses only that block.
//!
//! Reference: the fusion-off arm in this process (`Candidate::fusion_off`), which computes bit
//! for bit what a `BURN_FUSION_MAX_EXPLORATIONS=0` process computes (test
//! `fusion_off_arm_computes_bit_for_bit_what_a_fusion_off_process_computes`). Every probe is a
//! fresh seeded instance run for `steps` steps, so a wrong backward kernel shows in the next
//! step's loss. Suspects are the fused blocks of Burn's traced partition; unfusing a set of
//! blocks cuts every boundary inside them. The search is `ddmin` over blocks.
use crate::candidate::Candidate;
use crate::ddmin::{self, ddmin};
use crate::tracer::{TraceOptions, trace};
use crate::verify::{Probe, probe_steps};
use blaze_ir::{BoundaryId, Trace, plan::Regime};
use blaze_runtime::ModelFactory;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Largest differences of one probe against the reference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// Per step's loss, then the last step's logits: (output, largest relative, largest absolute).
    pub outputs: Vec<(String, f64, f64)>,
    pub max_rel: f64,
}

impl Difference {
    pub fn of(probe: &Probe, reference: &Probe) -> Self {
        let mut outputs: Vec<(String, f64, f64)> = probe
            .losses
            .iter()
            .zip(&reference.losses)
            .enumerate()
            .map(|(i, (a, b))| (format!("loss step {}", i + 1), rel(*a, *b, b.abs()), (*a as f64 - *b as f64).abs()))
            .collect();
        let scale = reference.logits.iter().fold(0f32, |m, x| m.max(x.abs()));
        let (r, a) = probe
            .logits
            .iter()
            .zip(&reference.logits)
            .fold((0f64, 0f64), |(r, m), (x, y)| (r.max(rel(*x, *y, scale)), m.max((*x as f64 - *y as f64).abs())));
        outputs.push(("logits (last step)".into(), r, a));
        let shape_differs =
            probe.losses.len() != reference.losses.len() || probe.logits.len() != reference.logits.len();
        let broken = probe.losses.iter().chain(&probe.logits).any(|x| !x.is_finite());
        let max_rel =
            if shape_differs || broken { f64::INFINITY } else { outputs.iter().map(|o| o.1).fold(0.0, f64::max) };
        Self { outputs, max_rel }
    }

    pub fn within(&self, tolerance: f64) -> bool {
        self.max_rel <= tolerance
    }
}

fn rel(a: f32, b: f32, scale: f32) -> f64 {
    if a.to_bits() == b.to_bits() {
        return 0.0;
    }
    (a as f64 - b as f64).abs() / (scale as f64).max(1e-30)
}

/// A fused block of Burn's plan: its operations as the trace names them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// Index in Burn's executed partition of the traced step.
    pub block: usize,
    /// Step positions (registration indices) and one line per operation.
    pub ops: Vec<(u32, String)>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DoctorReport {
    pub model: String,
    pub regime: String,
    pub steps: u32,
    pub tolerance: f64,
    pub fused_blocks: usize,
    /// Burn's plan against the reference.
    pub before: Difference,
    pub verdict: String,
    pub culprits: Vec<Block>,
    /// The culprit plan against the reference.
    pub after: Option<Difference>,
    /// Fused blocks the culprit plan executes in its last step (Burn's plan: `fused_blocks`).
    #[serde(default)]
    pub fused_blocks_after: Option<usize>,
    /// How many of Burn's fused blocks other than the culprits the culprit plan executes
    /// unchanged (unfusing a block can regroup its neighbours: they may fuse differently).
    #[serde(default)]
    pub others_unchanged: Option<usize>,
    /// The test-only fused-kernel fault that was injected (`BLAZE_INJECT_FUSED_FAULT`), if any.
    #[serde(default)]
    pub injected_fault: Option<u64>,
    pub cuts: Vec<u64>,
    pub probes: usize,
    pub probe_budget_spent: bool,
}

pub struct DoctorOptions {
    pub regime: Regime,
    pub steps: u32,
    pub tolerance: f64,
    pub max_probes: usize,
}

/// What the doctor concluded; `plan` only when culprits were found.
pub struct Diagnosis {
    pub report: DoctorReport,
    pub trace: Trace,
}

pub fn doctor(
    factory: &dyn ModelFactory,
    opts: &DoctorOptions,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Diagnosis> {
    progress("trace Burn's plan");
    let traced = trace(factory, &TraceOptions::new(opts.regime, 3))?;
    let run = |c: &Candidate| probe_steps(factory, opts.regime, c, false, opts.steps).map_err(anyhow::Error::msg);
    progress("reference (fusion off, in this process) and Burn's plan, twice each");
    let reference = run(&Candidate::fusion_off(1))?;
    let burn = run(&Candidate::new(0, vec![]))?;
    for (what, first, again) in [
        ("the reference (fusion off)", &reference, run(&Candidate::fusion_off(1))?),
        ("Burn's plan", &burn, run(&Candidate::new(0, vec![]))?),
    ] {
        let d = Difference::of(&again, first);
        anyhow::ensure!(
            d.max_rel == 0.0,
            "{what} is not deterministic: two fresh instances differ (relative {:.2e}); a fused block cannot be blamed for that",
            d.max_rel
        );
    }
    let before = Difference::of(&burn, &reference);
    let blocks = fused_blocks(&traced);
    let mut report = DoctorReport {
        model: traced.model.clone(),
        regime: traced.regime.to_string(),
        steps: opts.steps,
        tolerance: opts.tolerance,
        fused_blocks: blocks.len(),
        before: before.clone(),
        verdict: String::new(),
        culprits: vec![],
        after: None,
        fused_blocks_after: None,
        others_unchanged: None,
        injected_fault: blaze_runtime::fault::fused_target(),
        cuts: vec![],
        probes: 4,
        probe_budget_spent: false,
    };
    if before.within(opts.tolerance) {
        report.verdict = format!(
            "Burn's plan matches the unfused reference within {:.1e} (largest relative difference {:.2e}); nothing to unfuse",
            opts.tolerance, before.max_rel
        );
        return Ok(Diagnosis { report, trace: traced });
    }
    let check = |set: &[usize]| -> ddmin::Probe {
        progress(&format!("probe: unfuse {} of {} blocks", set.len(), blocks.len()));
        match run(&Candidate::new(1, cuts_of(&blocks, set))) {
            Ok(p) if Difference::of(&p, &reference).within(opts.tolerance) => ddmin::Probe::Pass,
            _ => ddmin::Probe::Fail,
        }
    };
    let all: Vec<usize> = (0..blocks.len()).collect();
    let mut check = check;
    report.probes += 1;
    if check(&all) == ddmin::Probe::Fail {
        report.verdict = "unfusing every fused block does not bring the numbers within tolerance: the difference is not made by fusion alone (or lies where no cut takes effect)".into();
        return Ok(Diagnosis { report, trace: traced });
    }
    let (minimal, spent) = ddmin(&all, opts.max_probes, &mut check);
    report.probes += minimal.probes;
    report.probe_budget_spent = spent;
    let cuts = cuts_of(&blocks, &minimal.set);
    let after = run(&Candidate::new(1, cuts.clone()))?;
    report.after = Some(Difference::of(&after, &reference));
    report.fused_blocks_after = Some(after.fused_blocks);
    report.others_unchanged = Some(unchanged_blocks(&blocks, &minimal.set, &after.partition));
    report.cuts = cuts.iter().map(|c| c.0).collect();
    report.culprits = minimal.set.iter().map(|&i| blocks[i].clone()).collect();
    report.verdict = format!(
        "{} of {} fused blocks change the numbers beyond {:.1e}; unfusing only them matches the reference ({} probes{})",
        minimal.set.len(),
        blocks.len(),
        opts.tolerance,
        report.probes,
        if spent { ", probe budget spent: may not be minimal" } else { "" }
    );
    Ok(Diagnosis { report, trace: traced })
}

/// Fused blocks of Burn's traced partition, with their operations.
pub fn fused_blocks(trace: &Trace) -> Vec<Block> {
    let line = |o: u32| trace.ops.get(o as usize).map_or("?".into(), |t| t.sig.to_line());
    trace
        .partition
        .fused_blocks_sorted()
        .into_iter()
        .map(|(block, ops)| Block { block, ops: ops.into_iter().map(|o| (o, line(o))).collect() })
        .collect()
}

/// How many of `blocks` outside `culprits` execute exactly as before in `after`.
pub(crate) fn unchanged_blocks(blocks: &[Block], culprits: &[usize], after: &blaze_ir::ExecutedPartition) -> usize {
    let executed: std::collections::BTreeSet<Vec<u32>> =
        after.fused_blocks_sorted().into_iter().map(|(_, ops)| ops).collect();
    let ops = |b: &Block| b.ops.iter().map(|(o, _)| *o).collect::<Vec<u32>>();
    (0..blocks.len()).filter(|i| !culprits.contains(i) && executed.contains(&ops(&blocks[*i]))).count()
}

/// Cuts before every operation but the first of each chosen block.
pub(crate) fn cuts_of(blocks: &[Block], chosen: &[usize]) -> Vec<BoundaryId> {
    chosen.iter().flat_map(|&i| blocks[i].ops.iter().skip(1).map(|(o, _)| BoundaryId(*o as u64))).collect()
}

/// The Markdown report: verdict, differences before and after, each culprit's operations and a
/// minimal description for a Burn bug report.
pub fn markdown(r: &DoctorReport) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# blazec doctor: {} {}\n\n{}\n", r.model, r.regime, r.verdict);
    let _ = writeln!(
        md,
        "Reference: Burn with nothing fused (in-process fusion-off arm); {} steps on fresh seeded instances; tolerance {:.1e} relative; {} probes.\n",
        r.steps, r.tolerance, r.probes
    );
    let _ = writeln!(
        md,
        "| output | Burn's plan: relative | absolute | culprit plan: relative | absolute |\n|---|---|---|---|---|"
    );
    for (i, (name, rel, abs)) in r.before.outputs.iter().enumerate() {
        let after = r
            .after
            .as_ref()
            .and_then(|a| a.outputs.get(i))
            .map_or("– | –".into(), |(_, r2, a2)| format!("{r2:.2e} | {a2:.2e}"));
        let _ = writeln!(md, "| {name} | {rel:.2e} | {abs:.2e} | {after} |");
    }
    for b in &r.culprits {
        let _ = writeln!(md, "\n## Culprit: block {} of Burn's plan ({} operations)\n", b.block, b.ops.len());
        for (pos, line) in &b.ops {
            let _ = writeln!(md, "- op {pos}: `{line}`");
        }
        let kinds: Vec<&str> = b.ops.iter().map(|(_, l)| l.split_whitespace().next().unwrap_or("?")).collect();
        let _ = writeln!(
            md,
            "\nFor a Burn bug report: Burn 0.22.1 fuses `{}` into one kernel; with fusion off (BURN_FUSION_MAX_EXPLORATIONS=0) the model computes different numbers (see the table).",
            kinds.join(" → ")
        );
    }
    if !r.cuts.is_empty() {
        let kept = match (r.fused_blocks_after, r.others_unchanged) {
            (Some(n), Some(same)) => format!(
                " It executes {n} fused blocks (Burn's plan: {}); {same} of Burn's {} other fused blocks execute unchanged, the rest regroup around the unfused operations.",
                r.fused_blocks,
                r.fused_blocks - r.culprits.len()
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            md,
            "\nPlan: cuts {:?} (every boundary inside the culprit blocks; every other fusion kept).{kept}",
            r.cuts
        );
    }
    if let Some(op) = r.injected_fault {
        let _ = writeln!(
            md,
            "\nTest fault injected: the fused kernels around operation {op} were made to compute a wrong operation (BLAZE_INJECT_FUSED_FAULT)."
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(losses: &[f32], logits: &[f32]) -> Probe {
        Probe::of(losses, logits, &[])
    }

    #[test]
    fn differences_are_per_output_relative_and_absolute() {
        let reference = probe(&[2.0, 1.0], &[4.0, -2.0]);
        let d = Difference::of(&probe(&[2.0, 1.1], &[4.0, -2.4]), &reference);
        assert_eq!(d.outputs.len(), 3);
        assert_eq!(d.outputs[0].1, 0.0);
        assert!((d.outputs[1].1 - 0.1).abs() < 1e-6 && (d.outputs[1].2 - 0.1).abs() < 1e-6);
        assert!((d.outputs[2].1 - 0.1).abs() < 1e-6, "logits relative to their largest magnitude");
        assert!(d.within(0.11) && !d.within(0.09));
        assert!(Difference::of(&probe(&[f32::NAN, 1.0], &[4.0, -2.0]), &reference).max_rel.is_infinite());
        assert_eq!(Difference::of(&reference, &reference).max_rel, 0.0);
    }

    #[test]
    fn unchanged_blocks_counts_other_blocks_executed_exactly_as_before() {
        let blocks = vec![
            Block { block: 0, ops: vec![(1, "a".into()), (2, "b".into())] },
            Block { block: 3, ops: vec![(5, "c".into()), (6, "d".into())] },
            Block { block: 4, ops: vec![(7, "e".into()), (8, "f".into())] },
        ];
        let after = blaze_ir::ExecutedPartition { blocks: vec![vec![1], vec![2], vec![6, 5], vec![7], vec![8, 9]] };
        assert_eq!(
            unchanged_blocks(&blocks, &[0], &after),
            1,
            "block 3 ran unchanged (in another order), block 4 regrouped"
        );
        assert_eq!(unchanged_blocks(&blocks, &[1], &after), 0);
    }

    #[test]
    fn unfusing_a_block_cuts_inside_it_only() {
        let blocks = vec![
            Block { block: 3, ops: vec![(5, "a".into()), (6, "b".into()), (7, "c".into())] },
            Block { block: 9, ops: vec![(20, "d".into()), (21, "e".into())] },
        ];
        assert_eq!(cuts_of(&blocks, &[0]), vec![BoundaryId(6), BoundaryId(7)]);
        assert_eq!(cuts_of(&blocks, &[1, 0]), vec![BoundaryId(21), BoundaryId(6), BoundaryId(7)]);
    }
}
