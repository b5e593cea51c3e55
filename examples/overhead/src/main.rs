//! Overhead benchmark: attention training steps under Burn's own plan, built once against the
//! patched burn-fusion (no plan installed, the Blaze runtime never touched) and once against the
//! published, unpatched burn-fusion (see Cargo.toml): same source, same lock file, only the
//! burn-fusion copy differs.
//!
//! Usage: blaze-overhead <d> <batch> <seq> <warmup> <steps> [settle_ms]; prints one line per
//! timed step. After the warm-up steps it steps untimed for `settle_ms` (default 1000, as
//! protocol blaze-measure/2 and later) so the clocks recover from the compilation pause.
#[path = "../../workloads/src/attention_model.rs"]
mod attention_model;

use attention_model::{AttentionLm, VOCAB};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, DeviceKind, Int, Tensor, TensorData};
use std::time::Instant;

static TEXT: &[u8] = include_bytes!("../../workloads/data/GPL-3.txt");

fn device() -> Device {
    #[cfg(feature = "vulkan")]
    return Device::vulkan(DeviceKind::DefaultDevice);
    #[cfg(not(feature = "vulkan"))]
    return Device::wgpu(DeviceKind::DefaultDevice);
}

const USAGE: &str = "usage: blaze-overhead <d> <batch> <seq> <warmup> <steps> [settle_ms]   (whole numbers, batch*seq < text length)";

fn main() {
    let args: Option<Vec<usize>> = std::env::args().skip(1).map(|a| a.parse().ok()).collect();
    let args = args.map(|mut a| {
        if a.len() == 5 {
            a.push(1000);
        }
        a
    });
    let Some([d, batch, seq, warmup, steps, settle_ms]) = args.and_then(|a| <[usize; 6]>::try_from(a).ok()) else {
        eprintln!("{USAGE}");
        std::process::exit(2);
    };
    if d == 0 || batch == 0 || seq == 0 || batch * seq + 1 >= TEXT.len() {
        eprintln!("{USAGE}");
        std::process::exit(2);
    }
    let started = Instant::now();
    let device = device().autodiff();
    device.seed(0);
    let mut model = AttentionLm::new(d, 2, 1, 0.0, seq, &device);
    let mut optim = AdamConfig::new().with_beta_1(0.9).with_beta_2(0.999).with_epsilon(1e-8).init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let mut settle_until: Option<Instant> = None;
    let mut step = 0;
    let mut timed = 0;
    while timed < steps {
        let at = (step * 7919) % (TEXT.len() - batch * seq - 1);
        let xs: Vec<i64> = TEXT[at..at + batch * seq].iter().map(|b| (b & 0x7f) as i64).collect();
        let ys: Vec<i64> = TEXT[at + 1..at + batch * seq + 1].iter().map(|b| (b & 0x7f) as i64).collect();
        let _ = device.sync();
        let start = Instant::now();
        let x = Tensor::<2, Int>::from_data(TensorData::new(xs, [batch, seq]), &device);
        let y = Tensor::<1, Int>::from_data(TensorData::new(ys, [batch * seq]), &device);
        let logits = model.forward(x).reshape([batch * seq, VOCAB]);
        let loss = loss_fn.forward(logits, y);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(3e-4, model, grads);
        let value = loss.into_data().try_to_vec::<f32>().unwrap()[0];
        let ms = start.elapsed().as_secs_f64() * 1e3;
        step += 1;
        if step <= warmup {
            continue;
        }
        let until = *settle_until.get_or_insert_with(|| {
            // Where a cold process spends its time (autotune, shader compilation) before timing.
            eprintln!("warm-up: {warmup} steps done {:.1} s after start", started.elapsed().as_secs_f64());
            Instant::now() + std::time::Duration::from_millis(settle_ms as u64)
        });
        if Instant::now() < until {
            continue;
        }
        println!("step {step} ms {ms:.4} loss {value:.6}");
        timed += 1;
    }
}
