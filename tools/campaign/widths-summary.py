#!/usr/bin/env python3
"""Beam widths in processes of their own against the same widths raced in one process.

Usage: tools/campaign/widths-summary.py RUN_DIR [RUN_DIR ...] TUNE_REPORT
  RUN_DIR      (one or more) holds width-<model>-w<W>-<rep>.txt (campaign stage `widths`: `blazec run` in a
               directory whose burn.toml sets max_blocks = W; W = 5 is Burn's default) and,
               optionally, planrun-<model>-<regime>-{burn,plan}-<rep>.txt (stage `planrun`).
  TUNE_REPORT  the report (`*.tune.txt` or `*.report.md`) of `blazec tune` on the same workload,
               whose `cN: blocks=W` rows carry the in-process ratio to Burn's plan.

Per process: the executed partition and the 10th percentile of its timed steps (the floor:
inside a process the step time switches for seconds between a floor and slow stretches, in
every arm alike, see tools/campaign/overhead-summary.py). Per width: the median of its processes'
floors, as a ratio to width 5's. The ranking of these ratios is compared with the in-process
ranking (Spearman's rho over the widths both have).

A rank correlation counts a swap of two widths that neither method tells apart as a
disagreement, so each pair of widths is also judged on its own: separated in own processes when
the two widths' process floors do not overlap (every floor of one below every floor of the
other), separated in one process when the two race intervals do not overlap (against width 5,
Burn's plan: when the interval excludes 1). The pairs table says, for every pair, what each
method decided and whether they agree; "agree" counts only pairs both separated.
"""
import glob, math, os, re, statistics, sys
from floorstat import floor, read_run


def floor_of(run):
    return floor(run["ms"])

def median_of(run):
    return statistics.median(run["ms"])

def plan_of(run):
    return run["plan"]

def in_process(report):
    out = {}
    for line in open(report):
        m = re.match(r"\| c\d+ \| c\d+: blocks=(\d+) \|.*?\| ([0-9.]+) \[([0-9.]+), ([0-9.]+)\] \|", line)
        if m:
            out[int(m.group(1))] = tuple(float(m.group(i)) for i in (2, 3, 4))
    out[5] = (1.0, 1.0, 1.0)
    return out

def ranks(values):
    order = sorted(values, key=lambda k: values[k])
    return {k: i + 1 for i, k in enumerate(order)}

*run_dirs, report = sys.argv[1:]
widths = {}
for path in sorted(p for d in run_dirs for p in glob.glob(os.path.join(d, "width-*-w*-*.txt"))):
    w = int(re.search(r"-w(\d+)-\d+\.txt$", path).group(1))
    widths.setdefault(w, []).append(read_run(path))
base = statistics.median(floor_of(r) for r in widths[5])
inp = in_process(report)
sep = {}
print("| width | executed blocks (fused) | processes | floors ms (p10 per process) | own processes: ratio to width 5 | in one process: ratio to Burn's plan [interval] |")
print("|---|---|---|---|---|---|")
for w in sorted(widths):
    runs = widths[w]
    parts = {(r['partition'][0][:8], r['partition'][1], r['partition'][2]) for r in runs}
    floors = [floor_of(r) for r in runs]
    sep[w] = statistics.median(floors) / base
    ip = inp.get(w)
    ip_text = f"{ip[0]:.4f} [{ip[1]:.4f}, {ip[2]:.4f}]" if ip and w != 5 else ("1 (Burn's plan)" if w == 5 else "–")
    part_text = ", ".join(f"{b} ({f}) {fp}" for fp, b, f in sorted(parts))
    print(f"| {w}{' (Burn default)' if w == 5 else ''} | {part_text} | {len(runs)} | {' '.join(f'{x:.3f}' for x in sorted(floors))} | {sep[w]:.4f} | {ip_text} |")
common = [w for w in sep if w in inp]
rs, ri = ranks({w: sep[w] for w in common}), ranks({w: inp[w][0] for w in common})
n = len(common)
rho = 1 - 6 * sum((rs[w] - ri[w]) ** 2 for w in common) / (n * (n * n - 1))
print(f"\nranking, own processes: {' < '.join(str(w) for w in sorted(common, key=lambda w: sep[w]))}")
print(f"ranking, one process:   {' < '.join(str(w) for w in sorted(common, key=lambda w: inp[w][0]))}")
print(f"Spearman rho {rho:.2f} over {n} widths")

def own_order(a, b):
    """-1 / 1 when every process floor of a is below / above every one of b, else 0."""
    fa, fb = [floor_of(r) for r in widths[a]], [floor_of(r) for r in widths[b]]
    return -1 if max(fa) < min(fb) else (1 if min(fa) > max(fb) else 0)

def race_order(a, b):
    """-1 / 1 when a's race interval lies wholly below / above b's, else 0."""
    (_, la, ha), (_, lb, hb) = inp[a], inp[b]
    return -1 if ha < lb else (1 if la > hb else 0)

word = {-1: "faster", 1: "slower", 0: "not separated"}
print("\n| pair | own processes | one process (race intervals) | point estimates, own / one process | verdict |")
print("|---|---|---|---|---|")
both = agree = 0
for i, a in enumerate(sorted(common)):
    for b in sorted(common)[i + 1:]:
        o, r = own_order(a, b), race_order(a, b)
        same_point = (sep[a] < sep[b]) == (inp[a][0] < inp[b][0])
        if o and r:
            both += 1; agree += o == r
            verdict = "agree" if o == r else "DISAGREE"
        elif o or r:
            verdict = "separated by one method only"
        else:
            verdict = "neither separates"
        print(f"| {a} vs {b} | {a} {word[o]} | {a} {word[r]} | {'same order' if same_point else 'opposite order'} | {verdict} |")
print(f"\npairs separated by both methods: {both}, of which in the same order: {agree}")

plan_runs = {}
for path in sorted(p for d in run_dirs for p in glob.glob(os.path.join(d, "planrun-*-*.txt"))):
    arm = re.search(r"-(burn|plan)-\d+\.txt$", path).group(1)
    plan_runs.setdefault(arm, []).append(read_run(path))
if plan_runs.get("burn") and plan_runs.get("plan"):
    print("\n| arm | plan | executed blocks (fused) | floors ms (p10 per process) | medians ms |")
    print("|---|---|---|---|---|")
    for arm in ("burn", "plan"):
        runs = plan_runs[arm]
        parts = {(r['partition'][0][:8], r['partition'][1], r['partition'][2]) for r in runs}
        print(f"| {arm} | {', '.join(sorted({plan_of(r) for r in runs}))} | {', '.join(f'{b} ({f}) {fp}' for fp, b, f in sorted(parts))} | "
              f"{' '.join(f'{floor_of(r):.3f}' for r in runs)} | {' '.join(f'{median_of(r):.3f}' for r in runs)} |")
    fb = statistics.median(floor_of(r) for r in plan_runs["burn"])
    fp_ = statistics.median(floor_of(r) for r in plan_runs["plan"])
    mb = statistics.median(median_of(r) for r in plan_runs["burn"])
    mp = statistics.median(median_of(r) for r in plan_runs["plan"])
    print(f"\nplan / Burn in fresh processes: floor {fp_ / fb:.4f}, median {mp / mb:.4f} ({len(plan_runs['plan'])} + {len(plan_runs['burn'])} processes, alternating)")
