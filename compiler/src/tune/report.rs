//! The tune report: Markdown with every candidate, and an SVG of medians and spreads.
use super::TuneResult;
use std::fmt::Write;

pub fn markdown(r: &TuneResult) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# blazec tune: {} {}\n", r.model, r.regime);
    let _ = writeln!(md, "- device: {} ({}, {}); Burn {}; commit {}; {}", r.device.adapter, r.device.backend, r.device.compiler, r.burn_version, r.commit, r.date);
    let _ = writeln!(md, "- protocol: {}", super::stats::PROTOCOL);
    let _ = writeln!(md, "- raw samples: {}", r.results_file);
    let _ = writeln!(md, "- requested {} plans; e-graph collapsed {}; confirm collapsed {}; duplicates {:.0}% of requests; {} timed",
        r.requested, r.collapsed_by_egraph, r.collapsed_by_confirm, 100.0 * (r.collapsed_by_egraph + r.collapsed_by_confirm) as f64 / r.requested.max(1) as f64, r.timed.len());
    let _ = writeln!(md, "- warm-up cost (untimed): {:.1} s; selection window: {:.1} s\n", r.warmup_s, r.window_s);
    let _ = writeln!(md, "| candidate | cuts | median ms | IQR ms | n | outcome |\n|---|---|---|---|---|---|");
    for t in &r.timed {
        let _ = writeln!(md, "| c{} | {} | {:.3} | {:.3} | {} | {} |", t.id, t.cuts, t.summary.median, t.summary.spread(), t.summary.n, t.outcome);
    }
    for (id, why) in &r.broken {
        let _ = writeln!(md, "| c{id} | | – | – | 0 | broken: {why} |");
    }
    if let Some(off) = &r.fusion_off {
        let _ = writeln!(md, "| fusion off | (separate process) | {:.3} | {:.3} | {} | stock setting |", off.median, off.spread(), off.n);
    }
    let _ = writeln!(md, "\n**Selected:** {} — {}", r.selected_text, r.selection);
    let _ = writeln!(md, "\n**Verify:** {:?}", r.verify);
    for (label, n) in [("Burn's default", &r.break_even_default), ("best stock setting", &r.break_even_stock)] {
        match n {
            Some((steps, minutes)) => { let _ = writeln!(md, "\nBreak-even against {label}: N* = {steps:.0} steps ({minutes:.1} min)."); }
            None => { let _ = writeln!(md, "\nBreak-even against {label}: none (the kept plan is not faster)."); }
        }
    }
    md
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
    let mut out = format!("<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{}' font-family='monospace' font-size='11'>\n", 30.0 + row_h * rows.len() as f64);
    let _ = writeln!(out, "<text x='4' y='14'>{} {}: median (bar) and IQR (line), ms per step</text>", r.model, r.regime);
    for (i, (label, med, lo, hi)) in rows.iter().enumerate() {
        let y = 24.0 + row_h * i as f64;
        let scale = |v: f64| 60.0 + (w - 140.0) * v / max;
        let _ = writeln!(out, "<text x='4' y='{}'>{label}</text><rect x='60' y='{y}' width='{:.1}' height='10' fill='#8ab'/>", y + 9.0, scale(*med) - 60.0);
        let _ = writeln!(out, "<line x1='{:.1}' x2='{:.1}' y1='{}' y2='{}' stroke='black'/><text x='{:.1}' y='{}'>{med:.2}</text>", scale(*lo), scale(*hi), y + 5.0, y + 5.0, scale(*hi) + 4.0, y + 9.0);
    }
    out.push_str("</svg>\n");
    out
}
