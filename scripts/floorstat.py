"""Shared by the summary scripts: the floor of a process's step times (its 10th percentile).

Inside one process on the H200 the step time switches for seconds between a floor and slow
stretches, in every arm alike (results/h200/2026-12-01-s5/call1-overhead), so a process is
compared with another by its floor rather than its median.
"""
import math

FLOOR = 0.1

def quantile(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    f = math.floor(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)

def floor(xs):
    return quantile(xs, FLOOR)
