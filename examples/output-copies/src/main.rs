//! What keeping a captured step's outputs valid costs on a device.
//!
//! Every replay of a recording writes the recording's own output buffers, so
//! `CapturedForward::run` and `CapturedTraining::run` hand their caller a device copy (one copy
//! kernel per output tensor, no sync). This program times that copy where it matters: the
//! mlp-w1024 network of docs/workloads.md (4 residual blocks, width 1024, 4096 rows), forward
//! (its 4096 × 1024 output copied, 16 MiB) and training with `DeviceAdam` (the loss copied).
//! Two recordings of the same step live in one process: one as shipped (copies), one built with
//! the `measure` feature's `without_output_copies` (the recording's buffers handed out). Rounds
//! alternate which arm goes first; each arm times `calls` consecutive calls, each call from
//! before its fresh batch is drawn on the device to the device sync after it.
//!
//! Usage: `blaze-output-copies [forward|training|both] [--rounds R] [--calls N]`; prints every
//! sample (`sample <regime> <arm> <round> <ms>`), each round's medians and the summary.
use blaze_burn::{CapturedForward, CapturedTraining, DeviceAdam, default_device, step_boundary};
use blaze_workloads::mlp::Mlp;
use burn::nn::loss::{MseLoss, Reduction};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Distribution, Tensor};
use std::time::Instant;

const WIDTH: usize = 1024;
const ROWS: usize = 4096;
/// Calls before timing: the warm-up, the recorded call, the checked replays and a few more.
const WARM: usize = 12;

struct Options {
    regimes: Vec<&'static str>,
    rounds: usize,
    calls: usize,
}

fn options() -> Result<Options, String> {
    let usage = "usage: blaze-output-copies [forward|training|both] [--rounds R] [--calls N]";
    let mut opts = Options { regimes: vec!["forward", "training"], rounds: 5, calls: 100 };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |flag: &str| {
            let v = args.next().ok_or(format!("{flag} needs a value ({usage})"))?;
            v.parse::<usize>().ok().filter(|&n| n > 0).ok_or(format!("{flag}: not a positive number: {v}"))
        };
        match arg.as_str() {
            "forward" => opts.regimes = vec!["forward"],
            "training" => opts.regimes = vec!["training"],
            "both" => opts.regimes = vec!["forward", "training"],
            "--rounds" => opts.rounds = number("--rounds")?,
            "--calls" => opts.calls = number("--calls")?,
            "-h" | "--help" => return Err(usage.into()),
            other => return Err(format!("unknown argument {other} ({usage})")),
        }
    }
    Ok(opts)
}

fn main() {
    let opts = options().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let device = default_device();
    let info = blaze_burn::device_info();
    println!("device: {} ({}, kernels {})", info.adapter, info.backend, info.compiler);
    println!(
        "protocol: {} rounds, {} timed calls per arm and round after {WARM} calls, order alternating",
        opts.rounds, opts.calls
    );
    for regime in &opts.regimes {
        let arms = match *regime {
            "forward" => forward(&device, &opts),
            _ => training(&device, &opts),
        };
        summarise(regime, &arms);
    }
}

/// Per arm (`copies`, `shared`): each round's samples in ms.
type Samples = [Vec<Vec<f64>>; 2];

/// Times `calls` calls of `call`, each ending at a device sync.
fn time(device: &Device, calls: usize, mut call: impl FnMut()) -> Vec<f64> {
    (0..calls)
        .map(|_| {
            let start = Instant::now();
            call();
            step_boundary(device);
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect()
}

fn forward(device: &Device, opts: &Options) -> Samples {
    let net = Mlp::init(WIDTH, device);
    let batch = || Tensor::<2>::random([ROWS, WIDTH], Distribution::Normal(0.0, 1.0), device);
    let step = |x: &Tensor<2>| net.forward(x.clone());
    let mut copies = CapturedForward::new(device, step);
    let mut shared = CapturedForward::new(device, step).without_output_copies();
    for _ in 0..WARM {
        drop(copies.run(batch()));
        drop(shared.run(batch()));
    }
    step_boundary(device);
    let executions = [copies.execution(), shared.execution()];
    println!("forward: copies {}; shared {}", executions[0], executions[1]);
    assert!(copies.is_captured() && shared.is_captured(), "both arms must replay a recording: {executions:?}");
    rounds(device, opts, |arm| match arm {
        0 => drop(copies.run(batch())),
        _ => drop(shared.run(batch())),
    })
}

type Batch = (Tensor<2>, Tensor<2>);

fn training(device: &Device, opts: &Options) -> Samples {
    let autodiff = device.clone().autodiff();
    let batch = || {
        let normal = || Tensor::<2>::random([ROWS, WIDTH], Distribution::Normal(0.0, 1.0), &autodiff);
        (normal(), normal())
    };
    let step = |net: Mlp, adam: &mut DeviceAdam, (x, y): &Batch| {
        let loss = MseLoss::new().forward(net.forward(x.clone()), y.clone(), Reduction::Mean);
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        (adam.update(net, grads), loss.inner())
    };
    let adam = || DeviceAdam::from_config(&burn::optim::AdamConfig::new());
    let mut copies = CapturedTraining::new(device, Mlp::init(WIDTH, &autodiff), adam(), step);
    let mut shared = CapturedTraining::new(device, Mlp::init(WIDTH, &autodiff), adam(), step).without_output_copies();
    const LR: f64 = 1e-4;
    for _ in 0..WARM {
        drop(copies.run(LR, batch()));
        drop(shared.run(LR, batch()));
    }
    step_boundary(device);
    let executions = [copies.execution(), shared.execution()];
    println!("training: copies {}; shared {}", executions[0], executions[1]);
    assert!(copies.is_captured() && shared.is_captured(), "both arms must replay a recording: {executions:?}");
    rounds(device, opts, |arm| match arm {
        0 => drop(copies.run(LR, batch())),
        _ => drop(shared.run(LR, batch())),
    })
}

/// Times the arms in `opts.rounds` rounds of `opts.calls` calls each; `call(arm)` runs one call
/// of arm 0 (copies) or arm 1 (shared).
fn rounds(device: &Device, opts: &Options, mut call: impl FnMut(usize)) -> Samples {
    let mut samples: Samples = Default::default();
    for round in 0..opts.rounds {
        for arm in order(round) {
            samples[arm].push(time(device, opts.calls, || call(arm)));
        }
    }
    samples
}

/// Arm 0 (copies) first in even rounds, arm 1 (shared) first in odd ones.
fn order(round: usize) -> [usize; 2] {
    if round.is_multiple_of(2) { [0, 1] } else { [1, 0] }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 }
}

fn summarise(regime: &str, samples: &Samples) {
    const NAMES: [&str; 2] = ["copies", "shared"];
    for (arm, rounds) in samples.iter().enumerate() {
        for (round, s) in rounds.iter().enumerate() {
            for ms in s {
                println!("sample {regime} {} {round} {ms:.4}", NAMES[arm]);
            }
        }
    }
    let mut deltas = Vec::new();
    for (round, (copies, shared)) in samples[0].iter().zip(&samples[1]).enumerate() {
        let (c, s) = (median(copies), median(shared));
        deltas.push(c - s);
        let floor = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "round {regime} {round}: copies median {c:.4} ms (floor {:.4}), shared median {s:.4} ms (floor {:.4}), copies - shared {:+.4} ms",
            floor(copies),
            floor(shared),
            c - s
        );
    }
    let all = |arm: usize| samples[arm].iter().flatten().copied().collect::<Vec<_>>();
    let (c, s) = (median(&all(0)), median(&all(1)));
    let (lo, hi) = deltas.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &d| (a.min(d), b.max(d)));
    println!(
        "summary {regime}: copies {c:.4} ms, shared {s:.4} ms per call (medians of every sample); copies - shared {:+.4} ms ({:+.2} %), per-round differences {lo:+.4} to {hi:+.4} ms",
        c - s,
        (c - s) / s * 100.0
    );
}
