#!/usr/bin/env python3
"""Summarises an overhead campaign: stock vs patched burn-fusion, one process each, alternating.

Usage: scripts/overhead-summary.py DIR
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
"""
import glob, math, os, statistics, sys

T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042]

def t975(df):
    return T975[df - 1] if df <= len(T975) else 1.96 + 2.4 / df

def steps(path):
    rows = [l.split() for l in open(path) if l.startswith("step ")]
    return [float(r[3]) for r in rows], {int(r[1]): r[5] for r in rows}

def binom_half_cdf(k, n):
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n

def sign_interval(d, alpha=0.05):
    d, n, l = sorted(d), len(d), 0
    while l < n // 2 and 2 * binom_half_cdf(l, n) <= alpha:
        l += 1
    return (d[l - 1], d[n - l]) if l else (-math.inf, math.inf)

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
    pairs.append((name, statistics.median(s), statistics.median(p), len(common)))

print("| pair | stock median ms | patched median ms | patched/stock | steps compared |")
print("|---|---|---|---|---|")
for name, ms, mp, c in pairs:
    print(f"| {name} | {ms:.3f} | {mp:.3f} | {mp / ms:.4f} | {c} |")
print(f"\npairs: {len(pairs)}; skipped (a process printed nothing): {skipped or 'none'}")
print(f"losses identical at every common step index in {len(pairs) - mismatched} of {len(pairs)} pairs")
if len(pairs) >= 2:
    dd = [math.log(mp / ms) for _, ms, mp, _ in pairs]
    m, sd = statistics.mean(dd), statistics.stdev(dd)
    h = t975(len(dd) - 1) * sd / math.sqrt(len(dd))
    lo, hi = sign_interval(dd)
    print(f"patched/stock: mean ratio {math.exp(m):.4f}, 95 % t interval [{math.exp(m - h):.4f}, {math.exp(m + h):.4f}] "
          f"(half-width {100 * (math.exp(h) - 1):.2f} %); per-pair sd {100 * sd:.2f} %")
    print(f"check: median ratio {math.exp(statistics.median(dd)):.4f}, sign-test 95 % interval [{math.exp(lo):.4f}, {math.exp(hi):.4f}]; "
          f"patched faster in {sum(x < 0 for x in dd)} of {len(dd)} pairs")
