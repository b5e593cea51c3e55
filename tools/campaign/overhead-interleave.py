#!/usr/bin/env python3
"""Overhead of the patch with no plan, measured with two co-resident processes taking turns.

Usage:
  tools/campaign/overhead-interleave.py run STOCK PATCHED OUT.tsv [--pairs N] [--rounds R] [--block K]
                                 [--model D,BATCH,SEQ,WARMUP] [--settle S] [--deadline SECONDS]
  tools/campaign/overhead-interleave.py summary OUT.tsv [--bootstrap B]

Why this design: stock and patched burn-fusion are different binaries, so they
cannot share a process, and one process per measurement cannot resolve 0.5 %: on the H200 a
process's step time switches for seconds between a floor and slow stretches, and process medians
scatter by ~9 % (results/h200/2026-12-01-s5/call1-overhead). Here one stock and one patched
process (`blaze-overhead --serve`) are both started and warmed up (one after the other, so
neither's autotune disturbs the other's), then driven in turns: each round asks each process for
a block of K training steps, the order alternating every round (AB, BA, ...), and only one
process runs at a time. Blocks of the two builds that are compared are seconds apart at most,
so the slow stretches hit both alike, as in the in-process race. Both read the same CubeCL
autotune cache (the machine's), so they run the same kernels.

Statistic (summary):
  * per round r of pair p: d = ln(patched block / stock block), blocks after S settle rounds;
  * per pair: the median of d (its sign-test interval is printed as a check);
  * estimate: mean over pairs of the per-pair medians, reported as a ratio exp(.);
  * 95 % interval: hierarchical bootstrap (resample pairs, then rounds within each resampled
    pair, recompute the estimate; percentile interval), so both the round-to-round noise and any
    process-to-process offset are in it; the t interval over per-pair medians is printed beside
    it, and the wider of the two is the answer.
  * numerics: the two builds must print the same loss at every step index (same data per index).
Raw output: one line per block: pair round build position ms_per_step loss step.
"""
import argparse, math, random, statistics, subprocess, sys, time, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from floorstat import sign_interval, t975

BUILDS = ("stock", "patched")


def start(binary, model, block, log):
    d, batch, seq, warmup = model
    cmd = [binary, "--serve", str(d), str(batch), str(seq), str(warmup), str(block)]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
    line = p.stdout.readline().strip()
    if line != "ready":
        p.kill()
        raise SystemExit(f"error: {binary} did not get ready (printed {line!r}); see its log")
    return p


def block(p):
    p.stdin.write("go\n")
    p.stdin.flush()
    f = p.stdout.readline().split()
    if len(f) != 6 or f[0] != "block":
        raise SystemExit(f"error: unexpected reply {' '.join(f)!r}")
    return float(f[1]), f[3], int(f[5])


def run(a):
    model = tuple(int(x) for x in a.model.split(","))
    t0 = time.time()
    with open(a.out, "w") as out:
        out.write("pair\tround\tbuild\tposition\tms\tloss\tstep\n")
        for pair in range(1, a.pairs + 1):
            elapsed = time.time() - t0
            if a.deadline and pair > 1 and elapsed + elapsed / (pair - 1) > a.deadline:
                print(f"pair {pair}: not started (a pair takes {elapsed / (pair - 1):.0f} s; deadline)", file=sys.stderr)
                break
            order = BUILDS if pair % 2 else BUILDS[::-1]
            binaries = {"stock": a.stock, "patched": a.patched}
            procs = {}
            for b in order:
                with open(f"{a.out}.{b}-{pair}.log", "w") as log:
                    procs[b] = start(binaries[b], model, a.block, log)
            for r in range(1, a.rounds + 1):
                if a.deadline and time.time() - t0 > a.deadline:
                    break
                for pos, b in enumerate(BUILDS if r % 2 else BUILDS[::-1]):
                    ms, loss, step = block(procs[b])
                    out.write(f"{pair}\t{r}\t{b}\t{pos}\t{ms:.4f}\t{loss}\t{step}\n")
                out.flush()
            for p in procs.values():
                p.stdin.close()
                p.wait(timeout=60)
            print(f"pair {pair}: {r} rounds, {time.time() - t0:.0f} s", file=sys.stderr)


def load(path, settle):
    rows = [l.rstrip("\n").split("\t") for l in open(path)][1:]
    pairs = {}
    for pair, r, b, _pos, ms, loss, step in rows:
        if int(r) > settle:
            pairs.setdefault(int(pair), {}).setdefault(int(r), {})[b] = (float(ms), loss, int(step))
    return pairs


def estimate(per_pair_d):
    return statistics.fmean(statistics.median(d) for d in per_pair_d)


def summary(a):
    pairs = load(a.out, a.settle)
    per_pair, mismatched = [], 0
    print("| pair | rounds | stock median ms | patched median ms | patched/stock (median of rounds) | sign-test 95 % |")
    print("|---|---|---|---|---|---|")
    for p, rounds in sorted(pairs.items()):
        full = [v for v in rounds.values() if len(v) == 2]
        mismatched += sum(v["stock"][1:] != v["patched"][1:] for v in full)
        d = [math.log(v["patched"][0] / v["stock"][0]) for v in full]
        if len(d) < 5:
            continue
        per_pair.append(d)
        lo, hi = sign_interval(d)
        print(f"| {p} | {len(d)} | {statistics.median(v['stock'][0] for v in full):.3f} | "
              f"{statistics.median(v['patched'][0] for v in full):.3f} | {math.exp(statistics.median(d)):.4f} | "
              f"[{math.exp(lo):.4f}, {math.exp(hi):.4f}] |")
    if not per_pair:
        raise SystemExit("error: no pair with 5 complete rounds")
    est = estimate(per_pair)
    rng = random.Random(0)
    boots = []
    for _ in range(a.bootstrap):
        sample = [rng.choice(per_pair) for _ in per_pair]
        boots.append(estimate([[rng.choice(d) for _ in d] for d in sample]))
    boots.sort()
    lo, hi = boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]
    print(f"\npairs: {len(per_pair)}, rounds compared: {sum(map(len, per_pair))} (after {a.settle} settle rounds each)")
    print(f"losses: {'identical at every compared step' if not mismatched else f'{mismatched} blocks differ'}")
    print(f"patched/stock: {math.exp(est):.4f}, hierarchical bootstrap 95 % [{math.exp(lo):.4f}, {math.exp(hi):.4f}] "
          f"(half-width {50 * (math.exp(hi) - math.exp(lo)):.2f} %)")
    if len(per_pair) >= 2:
        m = [statistics.median(d) for d in per_pair]
        h = t975(len(m) - 1) * statistics.stdev(m) / math.sqrt(len(m))
        print(f"check: t interval over per-pair medians [{math.exp(est - h):.4f}, {math.exp(est + h):.4f}] "
              f"(half-width {50 * (math.exp(est + h) - math.exp(est - h)):.2f} %)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("stock"); r.add_argument("patched"); r.add_argument("out")
    r.add_argument("--pairs", type=int, default=4); r.add_argument("--rounds", type=int, default=120)
    r.add_argument("--block", type=int, default=8)
    r.add_argument("--model", default="257,16,256,5", help="d,batch,seq,warmup (attention training)")
    r.add_argument("--deadline", type=float, default=0, help="seconds; no round starts after it")
    s = sub.add_parser("summary")
    s.add_argument("out"); s.add_argument("--settle", type=int, default=10); s.add_argument("--bootstrap", type=int, default=4000)
    a = ap.parse_args()
    run(a) if a.cmd == "run" else summary(a)


if __name__ == "__main__":
    main()
