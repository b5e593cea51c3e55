#!/usr/bin/env python3
"""Summarises an overhead campaign: stock vs patched burn-fusion, one process each, alternating.

Usage: tools/campaign/overhead-summary.py DIR
Reads DIR/*-{stock,patched}-N.txt (lines "step S ms T loss L" from blaze-overhead). Process N of
each build forms pair N (the campaign alternates the order A B / B A so linear drift cancels).

Statistic (the answer to "what does the patch cost with no plan?"):
  * each process is reduced to the median of its timed steps (after warm-up and 1 s of settling);
  * per pair d = ln(patched median / stock median): the process is the unit, because stock and
    patched are different binaries and cannot share a process;
  * estimate = mean of d, 95 % t interval over pairs (process medians of ~100 steps are close to
    normal; the pairs are independent processes), reported as a ratio; the distribution-free
    sign-test interval for the median of d is printed beside it as a check.
Also checks that both builds computed the same loss at every step index both timed.

Second statistic, the floor (added 2026-12-01 after the H200 raw series of
results/h200/2026-12-01-s5/call1-overhead): inside one process the step time switches for
seconds at a time between a floor (~11.7-12.0 ms at d258) and slow stretches (14-16 ms) in both
builds alike, and a whole process can stay slow, so process medians scatter by ~9 % and no
feasible number of pairs gives +-0.5 %. The per-op host work the patch adds is paid on every
step, fast ones included, so each process is reduced to its 10th percentile (the floor), and
pairs to ln(patched p10 / stock p10); the estimate is the median of the pair ratios with its
distribution-free sign-test interval (a whole-process outlier moves it by one rank, not by its
size). The interval narrows with the number of pairs: about 30 are needed for +-0.5 % at the
spread measured there.
"""
import glob, math, os, statistics, sys
from floorstat import quantile, sign_interval, t975

def steps(path):
    rows = [l.split() for l in open(path) if l.startswith("step ")]
    return [float(r[3]) for r in rows], {int(r[1]): r[5] for r in rows}


d = sys.argv[1]
pairs, skipped, mismatched = [], [], 0
for stock in sorted(glob.glob(os.path.join(d, "*-stock-*.txt")), key=lambda p: int(p.rsplit("-", 1)[1][:-4])):
    patched = stock.replace("-stock-", "-patched-")
    (s, sl), (p, pl) = steps(stock), steps(patched) if os.path.exists(patched) else ([], {})
    name = os.path.basename(stock).replace("-stock", "")
    if not s or not p:
        skipped.append(name); continue
    common = set(sl) & set(pl)
    mismatched += any(sl[k] != pl[k] for k in common)
    pairs.append((name, statistics.median(s), statistics.median(p), len(common), quantile(s, 0.1), quantile(p, 0.1)))

print("| pair | stock median ms | patched median ms | patched/stock | steps compared |")
print("|---|---|---|---|---|")
for name, ms, mp, c, _, _ in pairs:
    print(f"| {name} | {ms:.3f} | {mp:.3f} | {mp / ms:.4f} | {c} |")
print(f"\npairs: {len(pairs)}; skipped (a process printed nothing): {skipped or 'none'}")
print(f"losses identical at every common step index in {len(pairs) - mismatched} of {len(pairs)} pairs")
if len(pairs) >= 2:
    dd = [math.log(mp / ms) for _, ms, mp, _, _, _ in pairs]
    m, sd = statistics.mean(dd), statistics.stdev(dd)
    h = t975(len(dd) - 1) * sd / math.sqrt(len(dd))
    lo, hi = sign_interval(dd)
    print(f"patched/stock: mean ratio {math.exp(m):.4f}, 95 % t interval [{math.exp(m - h):.4f}, {math.exp(m + h):.4f}] "
          f"(half-width {100 * (math.exp(h) - 1):.2f} %); per-pair sd {100 * sd:.2f} %")
    print(f"check: median ratio {math.exp(statistics.median(dd)):.4f}, sign-test 95 % interval [{math.exp(lo):.4f}, {math.exp(hi):.4f}]; "
          f"patched faster in {sum(x < 0 for x in dd)} of {len(dd)} pairs")
    floor = sorted(math.log(fp / fs) for *_, fs, fp in pairs)
    lo, hi = sign_interval(floor)
    print(f"floor (p10 per process): median ratio {math.exp(statistics.median(floor)):.4f}, sign-test 95 % interval "
          f"[{math.exp(lo):.4f}, {math.exp(hi):.4f}] (half-width {50 * (math.exp(hi) - math.exp(lo)):.2f} %); "
          f"pair ratios {' '.join(f'{math.exp(x):.3f}' for x in floor)}")
