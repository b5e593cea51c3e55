#!/usr/bin/env python3
"""Summarises an overhead campaign (stock vs patched burn-fusion, ABAB processes).

Usage: scripts/overhead-summary.py DIR
Reads DIR/*-{stock,patched}-N.txt (lines "step S ms T loss L" from blaze-overhead), pairs the
stock and patched process of each prefix and N, and prints per-process medians, the per-pair
ratio patched/stock and a summary. Pairs where either process printed nothing are skipped and
listed. Also checks that both builds computed the same losses (same op stream, same numbers).
"""
import glob, os, re, statistics, sys

def steps(path):
    rows = [l.split() for l in open(path) if l.startswith("step ")]
    return [float(r[3]) for r in rows], [r[5] for r in rows]

def quartiles(xs):
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[1], q[2]

d = sys.argv[1]
pairs, skipped, loss_mismatch = [], [], 0
for stock in sorted(glob.glob(os.path.join(d, "*-stock-*.txt"))):
    patched = stock.replace("-stock-", "-patched-")
    (s, sl), (p, pl) = steps(stock), steps(patched) if os.path.exists(patched) else ([], [])
    name = os.path.basename(stock).replace("-stock", "")
    if len(s) == 0 or len(p) == 0 or len(s) != len(p):
        skipped.append(name); continue
    loss_mismatch += sl != pl
    pairs.append((name, statistics.median(s), statistics.median(p), s, p))

print("| pair | stock median ms | patched median ms | patched/stock |")
print("|---|---|---|---|")
for name, ms, mp, _, _ in pairs:
    print(f"| {name} | {ms:.3f} | {mp:.3f} | {mp / ms:.4f} |")
ratios = [mp / ms for _, ms, mp, _, _ in pairs]
all_s = [x for *_, s, _ in pairs for x in s]
all_p = [x for *_, p in pairs for x in p]
print(f"\npairs: {len(pairs)}; skipped (a process printed nothing): {skipped or 'none'}")
print(f"losses identical between builds in {len(pairs) - loss_mismatch} of {len(pairs)} pairs")
lo, med, hi = quartiles(ratios)
print(f"per-pair ratio patched/stock: median {med:.4f} (IQR {lo:.4f}-{hi:.4f}); patched faster in {sum(r < 1 for r in ratios)} of {len(ratios)} pairs")
for label, xs in (("stock", all_s), ("patched", all_p)):
    a, m, b = quartiles(xs)
    print(f"{label}: all steps median {m:.3f} ms (IQR {b - a:.3f}), n={len(xs)}")
spread = max(quartiles([r[1] for r in pairs])[2] - quartiles([r[1] for r in pairs])[0],
             quartiles([r[2] for r in pairs])[2] - quartiles([r[2] for r in pairs])[0])
diff = statistics.median([r[2] for r in pairs]) - statistics.median([r[1] for r in pairs])
print(f"median of process medians: stock {statistics.median([r[1] for r in pairs]):.3f} ms, patched {statistics.median([r[2] for r in pairs]):.3f} ms; "
      f"difference {diff:+.3f} ms against a between-process spread (wider IQR) of {spread:.3f} ms: "
      + ("separated" if abs(diff) > spread else "not separated"))
