//! `blazec table FILE..`: the campaign table from tune results files, one row per
//! (workload, regime, shapes): Burn's plan, fusion off (the in-process arm), the best
//! settings-only candidate and the best candidate with cuts, each as its paired ratio to Burn's
//! plan with the race's interval, then what was kept, why the race stopped, the cold cost and
//! window, and break-even. Reads every protocol's files; cells a file has no data for say so.
use super::{Timed, TuneResult};
use crate::race::{BURN, log_ratios_against};
use crate::stats::{median, median_interval};
use crate::verify::VerifyOutcome;
use std::path::Path;

/// What a candidate changes, from its label (`c3: b5 b7`, `c12: blocks=2`, `c16: fusion-off`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Burn,
    FusionOff,
    /// Only settings (beam width, submission batch).
    Settings,
    /// At least one cut, with or without settings.
    Cuts,
    /// Captured execution (`exec=captured`), whatever its fusion.
    Captured,
}

pub fn kind_of(label: &str) -> Kind {
    let body = label.split_once(": ").map_or(label, |(_, b)| b);
    match body.trim() {
        b if b.split_whitespace().any(|t| t == "exec=captured") => Kind::Captured,
        "burn" => Kind::Burn,
        "fusion-off" => Kind::FusionOff,
        b if b.split_whitespace().all(|t| t.contains('=')) => Kind::Settings,
        _ => Kind::Cuts,
    }
}

fn body(label: &str) -> &str {
    label.split_once(": ").map_or(label, |(_, b)| b)
}

/// `blocks=3: 0.9392 [0.8997, 0.9908]`, or `–` when the candidate has no paired standing.
fn ratio_cell(t: &Timed, named: bool) -> String {
    let Some(s) = &t.standing else { return format!("{} (no paired standing)", body(&t.cuts)) };
    let name = if named { format!("{}: ", shorten(body(&t.cuts))) } else { String::new() };
    format!("{name}{}", s.ratio_interval())
}

fn shorten(cuts: &str) -> String {
    let n = cuts.split_whitespace().filter(|t| !t.contains('=')).count();
    let settings: Vec<&str> = cuts.split_whitespace().filter(|t| t.contains('=')).collect();
    match n {
        0 => settings.join(" "),
        _ => [settings.join(" "), format!("{n} cuts")]
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join(" + "),
    }
}

/// The candidate of `kind` with the lowest paired ratio.
fn best(r: &TuneResult, kind: Kind) -> Option<&Timed> {
    r.timed
        .iter()
        .filter(|t| kind_of(&t.cuts) == kind && t.standing.is_some())
        .min_by(|a, b| a.standing.as_ref().unwrap().ratio.total_cmp(&b.standing.as_ref().unwrap().ratio))
}

fn kept(r: &TuneResult) -> String {
    let label = r.timed.iter().find(|t| t.id == r.selected).map_or("?".to_string(), |t| body(&t.cuts).to_string());
    let verify = match &r.verify {
        VerifyOutcome::NothingToCheck => String::new(),
        VerifyOutcome::Verified { identical: true, .. } => ", verified (bit-identical)".into(),
        VerifyOutcome::Verified { max_rel_diff, .. } => format!(", verified ({max_rel_diff:.1e})"),
        VerifyOutcome::WithinDrift { max_rel_diff, unfused, steps, alternate } => {
            let other =
                alternate.as_ref().map_or(String::new(), |a| format!("; {} {:.1e}", a.execution, a.max_rel_diff));
            format!(", verified within drift ({max_rel_diff:.1e} over {steps} steps; unfused {unfused:.1e}{other})")
        }
        VerifyOutcome::NotSettled(why) => format!(", not settled: {why}"),
        VerifyOutcome::Refused(why) => format!(", refused: {}", why.detail),
    };
    match label.as_str() {
        "burn" => format!("Burn's plan{verify}"),
        _ => format!("**{}**{verify}", shorten(&label)),
    }
}

/// The best submission batch of the race across processes, as its ratio to the reference
/// process (the program's current value), or why there is none.
fn processes_cell(r: &TuneResult) -> String {
    let Some(p) = &r.process_race else { return "not raced".into() };
    let best = p
        .arms
        .iter()
        .filter(|a| a.id != 0 && !a.control)
        .filter_map(|a| Some((a, a.standing.as_ref()?)))
        .min_by(|x, y| x.1.ratio.total_cmp(&y.1.ratio));
    let reference = p.arms.first().map_or(String::new(), |a| format!(" vs tasks={}", a.max_tasks));
    // The control runs the reference's own value in another process: its ratio is how far two
    // processes differ for no reason, the scale against which the best value must be read.
    let control = p
        .arms
        .iter()
        .find(|a| a.control)
        .and_then(|a| a.standing.as_ref())
        .map_or(String::new(), |s| format!("; control {}", s.ratio_interval()));
    match best {
        Some((a, s)) => format!(
            "tasks={}{reference}: {}{}{control}",
            a.max_tasks,
            s.ratio_interval(),
            if p.kept == Some(a.max_tasks) { ", kept" } else { "" }
        ),
        None => format!("none raced ({})", p.stop),
    }
}

/// The best captured candidate's ratio with its interval and the device memory the pools
/// reserved with its recording live, or `not raced`.
fn captured_cell(r: &TuneResult) -> String {
    if r.captured_race.is_none() {
        return "not raced".into();
    }
    let Some(t) = best(r, Kind::Captured) else { return "none recorded".into() };
    let memory = r
        .captured_visit
        .as_ref()
        .and_then(|v| v.recordings.iter().find(|(id, _)| *id == t.id))
        .and_then(|(_, m)| m.reserved_live);
    let pinned = memory.map_or(String::new(), |b| format!("; {:.0} MiB reserved", b as f64 / (1u64 << 20) as f64));
    format!("{}{pinned}", ratio_cell(t, true))
}

/// The kept plan against the best stock setting (the faster of Burn's plan and fusion off by
/// the race's point estimate): the campaign goal is stated against that.
struct AgainstStock {
    ratio: f64,
    /// The upper end of the ratio's interval: the race's own against Burn's plan; against
    /// fusion off, the same sign-test interval at the kept plan's error rate over the rounds
    /// that visited both (every visit is in the results file). None without raw rounds.
    at_most: Option<f64>,
    fusion_off_best: bool,
}

impl AgainstStock {
    fn cell(&self) -> String {
        let reference = if self.fusion_off_best { "fusion off" } else { "Burn's plan" };
        match self.at_most {
            Some(hi) => format!("{:.4} (vs {reference}; at most {hi:.4})", self.ratio),
            None => format!("{:.4} (vs {reference})", self.ratio),
        }
    }
}

fn against_stock(r: &TuneResult) -> AgainstStock {
    let kept = r
        .timed
        .iter()
        .find(|t| t.id == r.selected && kind_of(&t.cuts) != Kind::Burn)
        .and_then(|t| Some((t.id, t.standing.as_ref()?)));
    let Some(off) =
        best(r, Kind::FusionOff).and_then(|t| Some((t.id, t.standing.as_ref()?))).filter(|(_, s)| s.ratio < 1.0)
    else {
        return AgainstStock {
            ratio: kept.map_or(1.0, |(_, s)| s.ratio),
            at_most: kept.map(|(_, s)| s.hi),
            fusion_off_best: false,
        };
    };
    // Fusion off is the faster stock setting: the kept plan (or Burn's, when it was kept)
    // paired with fusion off round by round, at the kept plan's error rate.
    let (id, level) = kept.map_or((BURN, off.1.level), |(id, s)| (id, s.level));
    let d = r.race.as_ref().map(|race| log_ratios_against(&race.rounds, id, off.0)).unwrap_or_default();
    if d.is_empty() {
        // No raw visits (an older results file): the quotient of the two point estimates.
        return AgainstStock {
            ratio: kept.map_or(1.0, |(_, s)| s.ratio) / off.1.ratio,
            at_most: None,
            fusion_off_best: true,
        };
    }
    let (_, hi) = median_interval(&d, level);
    AgainstStock { ratio: median(&d).exp(), at_most: Some(hi.exp()), fusion_off_best: true }
}

/// The workload a results file belongs to: its model name without the shape suffix that a
/// non-reference batch adds (`attention-d256-b64s256` -> `attention-d256`, `cnn-mnist-b2048`
/// -> `cnn-mnist`).
pub(crate) fn workload_of(model: &str) -> &str {
    let Some((base, suffix)) = model.rsplit_once('-') else { return model };
    let shape = suffix.strip_prefix('b').is_some_and(|rest| {
        let (batch, seq) = rest.split_once('s').unwrap_or((rest, "0"));
        !batch.is_empty() && batch.chars().chain(seq.chars()).all(|c| c.is_ascii_digit())
    });
    if shape { base } else { model }
}

/// The campaign goal, per workload: its best row (lowest kept / best stock by the point
/// estimate) and whether some row of it is at least 5 % faster, by the point estimate and by
/// the upper end of the interval.
fn goal(results: &[(TuneResult, AgainstStock)]) -> String {
    struct Best<'a> {
        workload: &'a str,
        row: &'a TuneResult,
        against: &'a AgainstStock,
        sure: bool,
    }
    let mut best: Vec<Best> = Vec::new();
    for (r, against) in results {
        let sure = against.at_most.is_some_and(|hi| hi <= 0.95);
        let workload = workload_of(&r.model);
        match best.iter_mut().find(|b| b.workload == workload) {
            Some(b) => {
                b.sure |= sure;
                if against.ratio < b.against.ratio {
                    (b.row, b.against) = (r, against);
                }
            }
            None => best.push(Best { workload, row: r, against, sure }),
        }
    }
    let yes = |b: bool| if b { "yes" } else { "no" };
    let mut out = String::from(
        "| workload | best row | kept / best stock | >= 5 % faster (point) | >= 5 % faster (interval, any row) |\n|---|---|---|---|---|\n",
    );
    for b in &best {
        let r = b.row;
        out.push_str(&format!(
            "| {} | {} {} ({}) | {} | {} | {} |\n",
            b.workload,
            r.model,
            r.regime,
            r.shapes,
            b.against.cell(),
            yes(b.against.ratio <= 0.95),
            yes(b.sure)
        ));
    }
    let point = best.iter().filter(|b| b.against.ratio <= 0.95).count();
    let sure = best.iter().filter(|b| b.sure).count();
    out.push_str(&format!("\n{point} of {} workloads at least 5 % faster than the best stock setting by the point estimate, {sure} by the upper end of the interval (goal: 3 of 10).\n", best.len()));
    out
}

fn break_even(b: Option<(f64, f64)>) -> String {
    b.map_or("none".into(), |(steps, minutes)| format!("{steps:.0} steps ({minutes:.1} min)"))
}

/// One markdown row; `against` is [`against_stock`] of `r`.
fn row(r: &TuneResult, against: &AgainstStock) -> String {
    let burn = r.timed.iter().find(|t| kind_of(&t.cuts) == Kind::Burn);
    let burn_ms =
        burn.map_or("–".into(), |t| format!("{:.2} ({:.2})", t.summary.median, t.summary.p75 - t.summary.p25));
    let cell = |kind: Kind| best(r, kind).map_or("–".to_string(), |t| ratio_cell(t, kind != Kind::FusionOff));
    let stop = r.race_stop.split(':').next().unwrap_or("").trim().to_string();
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} + {:.1} s | {} / {} |",
        r.model,
        r.regime,
        r.shapes,
        burn_ms,
        cell(Kind::FusionOff),
        cell(Kind::Settings),
        cell(Kind::Cuts),
        captured_cell(r),
        processes_cell(r),
        kept(r),
        against.cell(),
        if stop.is_empty() { "–".into() } else { stop },
        r.trace_s,
        r.window_s,
        break_even(r.break_even_default),
        break_even(r.break_even_stock),
    )
}

pub(crate) const HEADER: &str = "| workload | regime | shapes | Burn's plan ms (IQR) | fusion off: ratio [interval] | best settings-only: ratio [interval] | best with cuts: ratio [interval] | best captured: ratio [interval]; pools reserved with the recording live | submission batch across processes: ratio to the reference process [interval] | kept | kept / best stock | race stop | cold (trace + confirm) + window | break-even vs default / vs best stock |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

/// Reads each results file and prints the table (rows in the order given) with each file's
/// provenance first.
pub fn table(paths: &[impl AsRef<Path>]) -> anyhow::Result<String> {
    use anyhow::Context;
    let mut out = String::new();
    let mut rows = Vec::new();
    let mut results = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let r: TuneResult =
            ron::from_str(&text).with_context(|| format!("{} is not a tune results file", path.display()))?;
        out.push_str(&format!(
            "{}: {} {} on {} ({}), commit {}, {}, {}\n",
            path.display(),
            r.model,
            r.regime,
            r.device.adapter,
            r.device.compiler,
            r.commit,
            r.date,
            r.protocol
        ));
        let against = against_stock(&r);
        rows.push(row(&r, &against));
        results.push((r, against));
    }
    out.push('\n');
    out.push_str(HEADER);
    for row in rows {
        out.push('\n');
        out.push_str(&row);
    }
    out.push_str("\n\nCampaign goal, per workload over the rows above:\n\n");
    out.push_str(&goal(&results));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_sort_into_burn_fusion_off_settings_and_cuts() {
        assert_eq!(kind_of("c0: burn"), Kind::Burn);
        assert_eq!(kind_of("c16: fusion-off"), Kind::FusionOff);
        assert_eq!(kind_of("c12: blocks=1"), Kind::Settings);
        assert_eq!(kind_of("c13: blocks=2 tasks=16"), Kind::Settings);
        assert_eq!(kind_of("c3: b5 b7"), Kind::Cuts);
        assert_eq!(kind_of("c4: blocks=2 b5"), Kind::Cuts);
        assert_eq!(shorten("blocks=2 b5 b9"), "blocks=2 + 2 cuts");
        assert_eq!(kind_of("c20: exec=captured"), Kind::Captured);
        assert_eq!(kind_of("c21: blocks=3 exec=captured"), Kind::Captured);
        assert_eq!(kind_of("c22: blocks=3 exec=captured b5"), Kind::Captured);
    }

    #[test]
    fn an_h200_results_file_gives_its_row() {
        // An attention-d257 forward tune on the H200 (protocol blaze-measure/3).
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../results/h200/2026-12-01-s5/call2-tunes/plans/attention-d257.forward.results.ron"
        );
        let text = table(&[path]).unwrap();
        let row = text.lines().find(|l| l.starts_with("| attention-d257 | forward |")).expect(&text);
        assert!(row.contains("| 0.9812 [0.9402, 0.9999] |"), "fusion off: {row}");
        assert!(row.contains("| blocks=3: 0.9392 [0.8997, 0.9908] |"), "best settings: {row}");
        // Fusion off (0.9812) was faster than Burn's plan here, so it is the best stock setting;
        // the kept plan against it is paired by round like any candidate against Burn's plan
        // (the quotient of the two point estimates would be 0.9572).
        assert!(row.contains("| not raced | **blocks=3**, verified (bit-identical) | 0.9496 (vs fusion off; at most 1.0104) | winner |"), "kept: {row}");
        assert!(row.contains("51814 steps (4.2 min) / 82837 steps (6.7 min)"), "{row}");
        assert!(table(&["/nonexistent.ron"]).unwrap_err().to_string().contains("reading /nonexistent.ron"));
    }

    #[test]
    fn the_process_race_cell_shows_the_control_beside_the_best_value() {
        // A gpt-small training tune on the H200 with --max-tasks 16,64: the control
        // process (max_tasks 32 again) separated from the reference, so tasks=16's 0.9565 is
        // inside the spread between two processes and nothing was kept.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../results/h200/2026-12-02-s11/campaign/plans/gpt-small.training.results.ron"
        );
        let text = table(&[path]).unwrap();
        let row = text.lines().find(|l| l.starts_with("| gpt-small | training |")).expect(&text);
        assert!(
            row.contains("| tasks=16 vs tasks=32: 0.9565 [0.9183, 1.0519]; control 0.8971 [0.8329, 0.9900] |"),
            "{row}"
        );
        assert!(row.contains("| Burn's plan | 1.0000 (vs Burn's plan) |"), "{row}");
    }

    #[test]
    fn a_workload_is_its_model_name_without_the_batch_suffix() {
        assert_eq!(workload_of("attention-d256-b64s256"), "attention-d256");
        assert_eq!(workload_of("cnn-mnist-b2048"), "cnn-mnist");
        assert_eq!(workload_of("lstm-h256-b256s64"), "lstm-h256");
        assert_eq!(workload_of("attention-d257"), "attention-d257");
        assert_eq!(workload_of("mlp-w1024"), "mlp-w1024");
        assert_eq!(workload_of("moe-e8k2"), "moe-e8k2");
        assert_eq!(workload_of("chain-32"), "chain-32");
        assert_eq!(workload_of("x-b"), "x-b");
    }

    #[test]
    fn the_goal_takes_each_workloads_best_row_and_counts_point_and_interval_separately() {
        // Tunes on the H200: cnn-mnist at batch 2048 kept width 1 at 0.9026 [0.8853,
        // 0.9207] (fusion off slower: Burn's plan is the best stock setting); attention-d258
        // forward at batch 64 kept width 2 at 0.9269, but fusion off was 0.9725 there, so
        // against the best stock setting it is 0.9659, paired by round with fusion off.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../results/h200/2026-12-02-s13/campaign/plans/");
        let files = ["cnn-mnist.training.b2048", "cnn-mnist.forward.b2048", "attention-d258.forward.b64"]
            .map(|f| format!("{dir}{f}.results.ron"));
        let text = table(&files).unwrap();
        assert!(text.contains("| cnn-mnist | cnn-mnist-b2048 training (batch=2048 image=1x28x28) | 0.9026 (vs Burn's plan; at most 0.9207) | yes | yes |"), "{text}");
        assert!(text.contains("| attention-d258 | attention-d258-b64s256 forward (batch=64 seq=256 d=258) | 0.9659 (vs fusion off; at most 0.9879) | no | no |"), "{text}");
        assert!(text.contains("1 of 2 workloads at least 5 % faster than the best stock setting by the point estimate, 1 by the upper end of the interval"), "{text}");
    }
}
