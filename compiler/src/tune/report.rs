//! The tune report: Markdown with every candidate, and an SVG of medians and spreads.
use super::TuneResult;
use std::fmt::Write;

pub fn markdown(r: &TuneResult) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# blazec tune: {} {}\n", r.model, r.regime);
    let _ = writeln!(
        md,
        "- device: {} ({}, {}); Burn {}; commit {}; {}",
        r.device.adapter, r.device.backend, r.device.compiler, r.burn_version, r.commit, r.date
    );
    let _ = writeln!(md, "- protocol: {}", r.protocol);
    let _ = writeln!(md, "- raw samples: {}", r.results_file);
    let _ = writeln!(
        md,
        "- requested {} plans; e-graph collapsed {}; confirm collapsed {}; duplicates {:.0}% of requests; {} timed",
        r.requested,
        r.collapsed_by_egraph,
        r.collapsed_by_confirm,
        100.0 * (r.collapsed_by_egraph + r.collapsed_by_confirm) as f64 / r.requested.max(1) as f64,
        r.timed.len()
    );
    let _ = writeln!(
        md,
        "- cold cost (untimed: compilation, autotune, exploration): trace {:.1} s, confirm {:.1} s; race {:.1} s; whole selection window {:.1} s",
        r.trace_s, r.warmup_s, r.race_s, r.window_s
    );
    if let Some(cache) = &r.autotune_cache {
        let _ = writeln!(md, "- CubeCL autotune cache (pinned for every process of this tune): {cache}");
    }
    if let Some(v) = &r.visit {
        let _ = writeln!(
            md,
            "- visits: 1 untimed step + {} timed steps (Burn's step {:.3} ms after {} settling steps)",
            v.steps_per_visit, v.step_ms, v.settle_steps
        );
    }
    if let Some(race) = &r.race {
        let _ = writeln!(
            md,
            "- race: {} rounds, looks at {:?} of {:?}; stopped: {}",
            race.rounds.len(),
            race.looks_done,
            race.looks_planned,
            r.race_stop
        );
    }
    if let Some(off) = &r.fusion_off_arm {
        let check = match off.matches_child {
            Some(true) => "the same executed partition as the separate BURN_FUSION_MAX_EXPLORATIONS=0 process",
            Some(false) => "a DIFFERENT executed partition from the separate BURN_FUSION_MAX_EXPLORATIONS=0 process",
            None => "not cross-checked against a separate process",
        };
        let _ = writeln!(
            md,
            "- fusion off (c{}, in this process): one operation per block: {}; {check}",
            off.id, off.one_op_per_block
        );
    }
    let _ = writeln!(
        md,
        "\n| candidate | cuts | median ms | IQR ms | n | ratio to Burn [interval] | outcome |\n|---|---|---|---|---|---|---|"
    );
    for t in &r.timed {
        let ratio = t.standing.as_ref().map_or("–".into(), |s| s.ratio_interval());
        let _ = writeln!(
            md,
            "| c{} | {} | {:.3} | {:.3} | {} | {ratio} | {} |",
            t.id,
            t.cuts,
            t.summary.median,
            t.summary.spread(),
            t.summary.n,
            t.outcome
        );
    }
    for (id, why) in &r.broken {
        if !r.timed.iter().any(|t| t.id == *id) {
            let _ = writeln!(md, "| c{id} | | – | – | 0 | – | broken: {why} |");
        }
    }
    let child = r.fusion_off.as_ref().or(r.fusion_off_child.as_ref().map(|c| &c.summary));
    if let Some(off) = child {
        let _ = writeln!(
            md,
            "| fusion off | (separate process, cross-check only) | {:.3} | {:.3} | {} | – | not raced: another process |",
            off.median,
            off.spread(),
            off.n
        );
    }
    if let Some(p) = &r.process_race {
        processes_section(&mut md, p);
    }
    let _ = writeln!(md, "\n**Selected:** {} — {}", r.selected_text, r.selection);
    let _ = writeln!(md, "\n**Verify:** {}", r.verify);
    for (label, n) in [("Burn's default", &r.break_even_default), ("best stock setting", &r.break_even_stock)] {
        match n {
            Some((steps, minutes)) => {
                let _ = writeln!(md, "\nBreak-even against {label}: N* = {steps:.0} steps ({minutes:.1} min).");
            }
            None => {
                let _ = writeln!(md, "\nBreak-even against {label}: none (the kept plan is not faster).");
            }
        }
    }
    md
}

/// The race across processes, said apart from the in-process comparisons above it.
fn processes_section(md: &mut String, p: &super::processes::ProcessRace) {
    let _ = writeln!(md, "\n## Across processes: submission batch (CUBECL_WGPU_MAX_TASKS)\n");
    let _ = writeln!(
        md,
        "Every comparison in the table above was made in one process. The rows below were not: each is a server process of its own running {} (the in-process selection), all co-resident and visited in turns ({} timed steps a visit, {} rounds), each paired with the reference process (the program's current submission batch) in every round. The control runs the reference's configuration in a second process.",
        p.plan,
        p.steps_per_visit,
        p.race.as_ref().map_or(0, |r| r.rounds.len())
    );
    let _ = writeln!(
        md,
        "Start-up of all processes (untimed) {:.1} s; race {:.1} s; stopped: {}\n",
        p.start_s, p.race_s, p.stop
    );
    let _ = writeln!(
        md,
        "| process | max_tasks | step ms at ready | losses = reference | outcome |\n|---|---|---|---|---|"
    );
    for a in &p.arms {
        let name = if a.id == 0 {
            "p0 (reference)".to_string()
        } else if a.control {
            format!("p{} (control)", a.id)
        } else {
            format!("p{}", a.id)
        };
        let _ = writeln!(
            md,
            "| {name} | {} | {:.3} | {} | {} |",
            a.max_tasks,
            a.ready_step_ms,
            if a.losses_match { "yes" } else { "NO" },
            a.outcome
        );
    }
}

pub fn svg(r: &TuneResult) -> String {
    let rows: Vec<(String, f64, f64, f64)> = r
        .timed
        .iter()
        .map(|t| (format!("c{}", t.id), t.summary.median, t.summary.p25, t.summary.p75))
        .chain(r.fusion_off.iter().map(|s| ("off".to_string(), s.median, s.p25, s.p75)))
        .collect();
    let max = rows.iter().map(|r| r.3).fold(0f64, f64::max).max(1e-9);
    let (w, row_h) = (640.0, 18.0);
    let mut out = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{}' font-family='monospace' font-size='11'>\n",
        30.0 + row_h * rows.len() as f64
    );
    let _ =
        writeln!(out, "<text x='4' y='14'>{} {}: median (bar) and IQR (line), ms per step</text>", r.model, r.regime);
    for (i, (label, med, lo, hi)) in rows.iter().enumerate() {
        let y = 24.0 + row_h * i as f64;
        let scale = |v: f64| 60.0 + (w - 140.0) * v / max;
        let _ = writeln!(
            out,
            "<text x='4' y='{}'>{label}</text><rect x='60' y='{y}' width='{:.1}' height='10' fill='#8ab'/>",
            y + 9.0,
            scale(*med) - 60.0
        );
        let _ = writeln!(
            out,
            "<line x1='{:.1}' x2='{:.1}' y1='{}' y2='{}' stroke='black'/><text x='{:.1}' y='{}'>{med:.2}</text>",
            scale(*lo),
            scale(*hi),
            y + 5.0,
            y + 5.0,
            scale(*hi) + 4.0,
            y + 9.0
        );
    }
    out.push_str("</svg>\n");
    out
}
