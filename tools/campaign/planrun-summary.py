#!/usr/bin/env python3
"""Shipped plans against Burn's plan in fresh processes (campaign stage `planrun`).

Usage: tools/campaign/planrun-summary.py RUN_DIR [RUN_DIR ...]
  RUN_DIR holds planrun-<model>-<regime>[-b<batch>]-{burn,plan}-<rep>.txt, each the output of
  one `blazec run` process (burn: no plan; plan: --plan <file>), the two arms alternating in
  order (rep 1 burn first, rep 2 plan first, ...), or stage `ship`'s
  ship-<model>/run-<regime>-{burn,bundle}-<rep>.txt (the bundle arm ran the shipped plans).

Per workload: whether every plan process printed `plan: applied`, the executed partitions of
each arm, each process's floor (10th percentile of its timed steps, see floorstat.py) and
median, the ratio plan / Burn of the medians of the floors and of the medians, and the ratio of
each alternating pair's floors. `advantage holds` needs every pair's floor ratio below 1 and, to
ship, at least three pairs (with
three pairs, a sign test at one-sided p = 1/8; with two, 1/4: a small sample, said as such).
"""
import glob, os, re, statistics, sys
from floorstat import floor, read_run

NAME = re.compile(r"planrun-(.+)-(training|forward)(?:-b(\d+))?-(burn|plan)-(\d+)\.txt$")
# Stage `ship` (ship-<model>/run-<regime>-{burn,bundle}-<rep>.txt): the bundle arm ran the plan.
SHIP = re.compile(r"ship-(.+)/run-(training|forward)-(burn|bundle)-(\d+)\.txt$")


def collect(dirs):
    runs = {}
    for d in dirs:
        for path in glob.glob(os.path.join(d, "planrun-*.txt")) + glob.glob(os.path.join(d, "ship-*", "run-*.txt")):
            if m := NAME.search(os.path.basename(path)):
                model, regime, batch, arm, rep = m.groups()
            elif m := SHIP.search(path):
                (model, regime, arm, rep), batch = m.groups(), None
                arm = "plan" if arm == "bundle" else arm
            else:
                continue
            key = (model, regime, batch)
            run = read_run(path)
            if run:
                runs.setdefault(key, {}).setdefault(arm, {})[(d, int(rep))] = run
    return runs


def floor_of(run):
    return floor(run["ms"])


def partition_text(run):
    p = run["partition"]
    return f"{p[1]} ({p[2]}) {p[0][:8]}" if p else "?"


def summarise(key, arms):
    model, regime, batch = key
    burn, plan = arms.get("burn", {}), arms.get("plan", {})
    pairs = sorted(set(burn) & set(plan))
    if not pairs:
        return None
    fb = statistics.median(floor_of(burn[r]) for r in pairs)
    fp = statistics.median(floor_of(plan[r]) for r in pairs)
    mb = statistics.median(statistics.median(burn[r]["ms"]) for r in pairs)
    mp = statistics.median(statistics.median(plan[r]["ms"]) for r in pairs)
    pair_ratios = [floor_of(plan[r]) / floor_of(burn[r]) for r in pairs]
    applied = all(plan[r]["plan"].startswith("applied") for r in pairs)
    holds = "yes" if all(x < 1 for x in pair_ratios) else ("no" if all(x >= 1 for x in pair_ratios) else "mixed")
    # The shipping rule (plans/README.md): faster in every one of at least three pairs.
    if holds == "yes" and len(pairs) < 3:
        holds = "too few pairs to ship"
    shape = f"{regime}" + (f", batch {batch}" if batch else "")
    parts = lambda arm: ", ".join(sorted({partition_text(arm[r]) for r in pairs}))
    return (f"| {model} | {shape} | {'yes' if applied else 'NO: ' + plan[pairs[0]]['plan']} | {parts(burn)} | {parts(plan)} | "
            f"{' '.join(f'{floor_of(burn[r]):.3f}' for r in pairs)} | {' '.join(f'{floor_of(plan[r]):.3f}' for r in pairs)} | "
            f"{fp / fb:.4f} | {mp / mb:.4f} | {' '.join(f'{x:.3f}' for x in pair_ratios)} | {holds} ({len(pairs)} pairs) |")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs = collect(sys.argv[1:])
    if not runs:
        sys.exit(f"no planrun-*.txt with step times under {' '.join(sys.argv[1:])}")
    print("| workload | regime | plan: applied | Burn's partition: blocks (fused) | plan's partition | Burn floors ms | plan floors ms | "
          "plan / Burn, floors | plan / Burn, medians | per pair (floors) | advantage holds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(runs, key=lambda k: tuple("" if x is None else x for x in k)):  # batch None sorts first
        row = summarise(key, runs[key])
        if row:
            print(row)


if __name__ == "__main__":
    main()
