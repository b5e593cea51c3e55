"""Shared by the summary scripts: the floor of a process's step times (its 10th percentile).

Inside one process on the H200 the step time switches for seconds between a floor and slow
stretches, in every arm alike (results/h200/2026-12-01-s5/call1-overhead), so a process is
compared with another by its floor rather than its median.
"""
import math, os, re, shutil, subprocess

FLOOR = 0.1

def read_run(path):
    """One `blazec run` output: its timed step times (ms), executed partition (fingerprint,
    blocks, fused; None when not printed) and `plan:` line; None when it has no timed steps."""
    text = open(path).read()
    steps = re.search(r"^step ms: \[(.*?)\]", text, re.M)
    if not steps:
        return None
    part = re.search(r"^partition (\S+) \((\d+) ops, (\d+) blocks, (\d+) fused\)", text, re.M)
    plan = re.search(r"^plan: (.*)$", text, re.M)
    return {"ms": [float(x) for x in steps.group(1).split(",")],
            "partition": (part.group(1), int(part.group(3)), int(part.group(4))) if part else None,
            "plan": plan.group(1) if plan else "(no plan line)"}

def quantile(xs, p):
    """The linear-interpolated p-quantile of xs, from `blazec stats` (the rule every report uses)."""
    return float(stats(xs, quantiles=[p])[f"q{p}"])

def floor(xs):
    return quantile(xs, FLOOR)

# Two-sided 97.5 % quantiles of Student's t for 1..30 degrees of freedom.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042]

def t975(df):
    return T975[df - 1] if df <= len(T975) else 1.96 + 2.4 / df


def blazec():
    """The blazec binary: $BLAZEC, else one on the PATH, else the campaign's /tmp/blazec, else
    the one ./blaze builds."""
    for candidate in [os.environ.get("BLAZEC"), shutil.which("blazec"), "/tmp/blazec",
                      "/var/tmp/blaze-target/release/blazec"]:
        if candidate and os.path.exists(candidate):
            return candidate
    raise SystemExit("blazec not found: set BLAZEC to its path")

def stats(xs, level=0.95, quantiles=()):
    """`blazec stats` over xs: n, median, the sign-test interval lo..hi, p, and q<Q> per quantile."""
    args = [blazec(), "stats", "--level", str(level)] + [f"--quantile={q}" for q in quantiles]
    out = subprocess.run(args, input=" ".join(map(repr, xs)), capture_output=True, text=True, check=True).stdout
    return dict(kv.split("=", 1) for kv in out.split())

def sign_interval(d, alpha=0.05):
    """The sign-test interval for the median of d (no copy of the rule here)."""
    fields = stats(d, level=1 - alpha)
    return float(fields["lo"]), float(fields["hi"])
