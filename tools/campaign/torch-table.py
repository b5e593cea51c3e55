#!/usr/bin/env python3
"""Blaze against PyTorch on the same card in the same call (campaign stages `planrun` and `torch`).

Usage: tools/campaign/torch-table.py RUN_DIR [--regime forward|training]
  RUN_DIR holds planrun-<model>-<regime>-{burn,plan}-<rep>.txt (fresh `blazec run` processes,
  Burn's default plan and the tuned plan alternating) and torch-<regime>-*.txt (PyTorch eager and
  torch.compile, tools/torch-reference/workloads.py).

Per workload, ms per step including the batch refresh, each arm's median over its processes of
the process median (and of the process floor, its 10th percentile, for Blaze's arms); then
Blaze's best plan against PyTorch eager and torch.compile (median to median). Prints Markdown.
"""
import glob, os, re, statistics, sys
from floorstat import floor, read_run

args = sys.argv[1:]
regime = "forward"
if "--regime" in args:
    i = args.index("--regime"); regime = args[i + 1]; del args[i:i + 2]
run_dir = args[0]

runs = {}
for path in glob.glob(os.path.join(run_dir, f"planrun-*-{regime}-*-*.txt")):
    m = re.search(rf"planrun-(.+)-{regime}-(burn|plan)-(\d+)\.txt$", os.path.basename(path))
    run = read_run(path) if m else None
    if run:
        runs.setdefault(m.group(1), {}).setdefault(m.group(2), []).append(run)

torch = {}
for path in glob.glob(os.path.join(run_dir, f"torch-{regime}-*.txt")):
    for line in open(path):
        m = re.match(r"^(\S+)\s+" + regime + r"\s+(eager|compile)\s+median\s+([\d.]+) ms", line)
        if m:
            torch.setdefault(m.group(1), {})[m.group(2)] = float(m.group(3))


def med(arm, of=statistics.median):
    return statistics.median(of(r["ms"]) for r in arm)


print(f"| workload | Burn CUDA default | Blaze CUDA best plan (floor) | plan / Burn | PyTorch eager | torch.compile | Blaze / eager | Blaze / compile |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for model in sorted(set(runs) | set(torch)):
    arms, t = runs.get(model, {}), torch.get(model, {})
    burn = med(arms["burn"]) if "burn" in arms else None
    plan = med(arms["plan"]) if "plan" in arms else None
    plan_floor = med(arms["plan"], floor) if "plan" in arms else None
    f = lambda x: f"{x:.3f}" if x is not None else "–"
    r = lambda a, b: f"{a / b:.2f}" if a is not None and b else "–"
    plan_text = f"{f(plan)} ({f(plan_floor)})" if plan is not None else "– (no plan)"
    print(f"| {model} | {f(burn)} | {plan_text} | {r(plan, burn)} | {f(t.get('eager'))} | {f(t.get('compile'))} "
          f"| {r(plan, t.get('eager'))} | {r(plan, t.get('compile'))} |")
