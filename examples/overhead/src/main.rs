//! Overhead benchmark: attention training steps under Burn's own plan, built once against the
//! patched burn-fusion (no plan installed, the Blaze runtime never touched) and once against the
//! published, unpatched burn-fusion (see Cargo.toml): same source, same lock file, only the
//! burn-fusion copy differs.
//!
//! Usage:
//!   blaze-overhead <d> <batch> <seq> <warmup> <steps> [settle_ms]
//!       one line per timed step. After the warm-up steps it steps untimed for `settle_ms`
//!       (default 1000, as protocol blaze-measure/2 and later) so the clocks recover from the
//!       compilation pause.
//!   blaze-overhead --serve <d> <batch> <seq> <warmup> <block>
//!       runs the warm-up, prints `ready`, then for every line `go` on standard input times
//!       <block> consecutive steps and prints `block <ms per step> loss <last loss> step <index>`;
//!       ends at end of input. Two such processes (stock and patched) driven in turns by
//!       tools/campaign/overhead-interleave.py pair their blocks in time (docs/measurement.md,
//!       "Overhead of the patch").
#[path = "../../workloads/src/attention_model.rs"]
mod attention_model;

use attention_model::{AttentionLm, VOCAB};
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, DeviceKind, Int, Tensor, TensorData};
use std::io::{BufRead, Write};
use std::time::Instant;

static TEXT: &[u8] = include_bytes!("../../workloads/data/GPL-3.txt");

fn device() -> Device {
    #[cfg(feature = "vulkan")]
    return Device::vulkan(DeviceKind::DefaultDevice);
    #[cfg(not(feature = "vulkan"))]
    return Device::wgpu(DeviceKind::DefaultDevice);
}

const USAGE: &str = "usage: blaze-overhead <d> <batch> <seq> <warmup> <steps> [settle_ms]\n       \
blaze-overhead --serve <d> <batch> <seq> <warmup> <block>\n(whole numbers, batch*seq < text length)";

fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2);
}

/// One attention language model with its optimiser; `step` runs training step `index` on the
/// text window that index selects (so two processes see the same data at the same index).
struct Trainer {
    device: Device,
    model: Option<AttentionLm>,
    optim: ModuleOptimizer,
    loss: CrossEntropyLoss,
    batch: usize,
    seq: usize,
}

impl Trainer {
    /// Milliseconds of the step (from a device sync to its loss read back) and its loss.
    fn step(&mut self, index: usize) -> (f64, f32) {
        let (batch, seq, device) = (self.batch, self.seq, &self.device);
        let at = (index * 7919) % (TEXT.len() - batch * seq - 1);
        let xs: Vec<i64> = TEXT[at..at + batch * seq].iter().map(|b| (b & 0x7f) as i64).collect();
        let ys: Vec<i64> = TEXT[at + 1..at + batch * seq + 1].iter().map(|b| (b & 0x7f) as i64).collect();
        let _ = device.sync();
        let start = Instant::now();
        let x = Tensor::<2, Int>::from_data(TensorData::new(xs, [batch, seq]), device);
        let y = Tensor::<1, Int>::from_data(TensorData::new(ys, [batch * seq]), device);
        let model = self.model.take().expect("the model is put back after every step");
        let logits = model.forward(x).reshape([batch * seq, VOCAB]);
        let loss = self.loss.forward(logits, y);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        self.model = Some(self.optim.step(3e-4, model, grads));
        let value = loss.into_data().try_to_vec::<f32>().unwrap()[0];
        (start.elapsed().as_secs_f64() * 1e3, value)
    }
}

fn numbers(args: &[String]) -> Vec<usize> {
    args.iter().map(|a| a.parse().unwrap_or_else(|_| usage())).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let serve = args.first().is_some_and(|a| a == "--serve");
    let mut n = numbers(&args[serve as usize..]);
    if !serve && n.len() == 5 {
        n.push(1000);
    }
    let expected = if serve { 5 } else { 6 };
    if n.len() != expected {
        usage();
    }
    let (d, batch, seq, warmup) = (n[0], n[1], n[2], n[3]);
    if d == 0 || batch == 0 || seq == 0 || batch * seq + 1 >= TEXT.len() || (serve && n[4] == 0) {
        usage();
    }
    let started = Instant::now();
    let device = device().autodiff();
    device.seed(0);
    let model = AttentionLm::new(d, 2, 1, 0.0, seq, &device);
    let optim = AdamConfig::new().with_beta_1(0.9).with_beta_2(0.999).with_epsilon(1e-8).init();
    let loss = CrossEntropyLossConfig::new().init(&device);
    let mut trainer = Trainer { device, model: Some(model), optim, loss, batch, seq };
    for index in 1..=warmup {
        trainer.step(index);
    }
    // Where a cold process spends its time (autotune, shader compilation) before timing.
    eprintln!("warm-up: {warmup} steps done {:.1} s after start", started.elapsed().as_secs_f64());
    if serve {
        serve_blocks(&mut trainer, warmup + 1, n[4]);
    } else {
        timed_steps(&mut trainer, warmup + 1, n[4], n[5]);
    }
}

fn timed_steps(trainer: &mut Trainer, first: usize, steps: usize, settle_ms: usize) {
    let until = Instant::now() + std::time::Duration::from_millis(settle_ms as u64);
    let mut index = first;
    while Instant::now() < until {
        trainer.step(index);
        index += 1;
    }
    for _ in 0..steps {
        let (ms, loss) = trainer.step(index);
        println!("step {index} ms {ms:.4} loss {loss:.6}");
        index += 1;
    }
}

/// Blocks of `block` steps on request; the block's time is the mean step time (each step from
/// its own sync), so idle time between requests is never counted.
fn serve_blocks(trainer: &mut Trainer, first: usize, block: usize) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    let mut index = first;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim() != "go" {
            eprintln!("blaze-overhead: expected `go`, got {line:?}");
            std::process::exit(2);
        }
        let mut total = 0.0;
        let mut loss = 0.0;
        for _ in 0..block {
            let (ms, value) = trainer.step(index);
            total += ms;
            loss = value;
            index += 1;
        }
        let _ = writeln!(out, "block {:.4} loss {loss:.6} step {}", total / block as f64, index - 1);
        let _ = out.flush();
    }
}
