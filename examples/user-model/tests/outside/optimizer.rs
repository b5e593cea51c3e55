//! A user's own program: training with Burn's `AdamWConfig` (weight decay, gradient clipping) and
//! a Burn learning-rate scheduler, through Burn's optimizer and through `blaze_burn::DeviceAdam`,
//! compared step by step. `tests/outside_crate.rs` builds it in a crate outside the workspace
//! (as `src/bin/optimizer.rs`) and reads its lines; each line is `<check>: ok <details>` or
//! `<check>: FAILED <details>`.
//!
//! Runs, each from the same seeded network over the same batches and rates:
//! * Burn: `AdamWConfig::init()`, Burn's own `ModuleOptimizer`;
//! * eager: `DeviceAdam::from_adamw(&config)` converted into a `ModuleOptimizer`, stepped as Burn's is;
//! * captured: `CapturedTraining` with `DeviceAdam::from_adamw(&config)`;
//! * resumed: Burn's own optimizer for the first half, its record saved as bytes, then captured
//!   training resumed from that record with `DeviceAdam::load_record`.
//!
//! Usage: optimizer [steps]
use blaze_burn::{CapturedTraining, DeviceAdam};
use blaze_runtime::numerics::{VERIFY_TOLERANCE, max_rel_diff};
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::optim::{AdamWConfig, GradientsParams, ModuleOptimizer, OptimizerRecord};
use burn::tensor::{Device, Tensor, TensorData};

const ROWS: usize = 16;
const IN: usize = 8;
const CLASSES: usize = 4;

#[derive(Module, Debug)]
struct Classifier {
    a: Linear,
    b: Linear,
}

impl Classifier {
    fn new(device: &Device) -> Self {
        Classifier { a: LinearConfig::new(IN, 32).init(device), b: LinearConfig::new(32, CLASSES).init(device) }
    }

    fn loss(&self, x: Tensor<2>, y: Tensor<2>) -> Tensor<1> {
        (self.b.forward(self.a.forward(x).tanh()) - y).square().mean()
    }
}

/// Batch `step`: inputs and targets made from data, the same on every run.
fn batch(step: usize, device: &Device) -> (Tensor<2>, Tensor<2>) {
    let x: Vec<f32> = (0..ROWS * IN).map(|i| ((i * 29 + step * 71) % 101) as f32 / 50.5 - 1.0).collect();
    let y: Vec<f32> = (0..ROWS * CLASSES).map(|i| (((i + step) % 7) as f32 / 3.5 - 1.0).sin()).collect();
    (Tensor::from_data(TensorData::new(x, [ROWS, IN]), device), Tensor::from_data(TensorData::new(y, [ROWS, CLASSES]), device))
}

fn config() -> AdamWConfig {
    AdamWConfig::new().with_weight_decay(1e-2).with_grad_clipping(Some(GradientClippingConfig::Norm(0.5)))
}

/// The rate of every step from Burn's cosine annealing scheduler.
fn rates(steps: usize) -> Vec<f64> {
    let mut scheduler = CosineAnnealingLrSchedulerConfig::new(1e-2, steps).init().expect("a valid schedule");
    (0..steps).map(|_| scheduler.step().base()).collect()
}

fn value(t: Tensor<1>) -> f32 {
    t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()[0]
}

/// Steps `range` with a module optimizer, as Burn's examples do; the network and every loss.
fn eager(
    mut net: Classifier,
    optim: &mut ModuleOptimizer,
    rates: &[f64],
    range: std::ops::Range<usize>,
    d: &Device,
) -> (Classifier, Vec<f32>) {
    let mut losses = Vec::new();
    for step in range {
        let (x, y) = batch(step, d);
        let loss = net.loss(x, y);
        losses.push(value(loss.clone()));
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        net = optim.step(rates[step], net, grads);
    }
    (net, losses)
}

/// Steps `range` captured with `adam`; every step's loss (kept, read at the end) and how the
/// steps ran.
fn captured(
    device: &Device,
    net: Classifier,
    adam: DeviceAdam,
    rates: &[f64],
    range: std::ops::Range<usize>,
) -> (Vec<f32>, String) {
    let step = |net: Classifier, adam: &mut DeviceAdam, (x, y): &(Tensor<2>, Tensor<2>)| {
        let loss = net.loss(x.clone(), y.clone());
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        (adam.update(net, grads), loss.inner())
    };
    let autodiff = device.clone().autodiff();
    let mut train = CapturedTraining::new(device, net, adam, step);
    let kept: Vec<Tensor<1>> = range.map(|s| train.run(rates[s], batch(s, &autodiff))).collect();
    (kept.into_iter().map(value).collect(), train.execution())
}

fn report(check: &str, burn: &[f32], got: &[f32], execution: &str) {
    let worst = match burn.len() == got.len() && got.iter().all(|x| x.is_finite()) {
        true => max_rel_diff(burn, got),
        false => f32::INFINITY,
    };
    let verdict = if worst <= VERIFY_TOLERANCE { "ok" } else { "FAILED" };
    println!(
        "{check}: {verdict} largest relative difference {worst:.2e} from Burn's AdamW over {} steps (tolerance {VERIFY_TOLERANCE:.0e}); {execution}",
        got.len()
    );
}

fn main() {
    let steps: usize = std::env::args().nth(1).map_or(200, |s| s.parse().expect("usage: optimizer [steps]"));
    let device = blaze_burn::default_device();
    let autodiff = device.clone().autodiff();
    let rates = rates(steps);
    let start = Classifier::new(&autodiff);
    println!("config: {config:?}", config = config());

    let (_, burn) = eager(start.clone(), &mut config().init(), &rates, 0..steps, &autodiff);
    println!("Burn's AdamW: loss {:.4} at step 1, {:.4} at step {steps}", burn[0], burn[steps - 1]);

    let mut optim: ModuleOptimizer = DeviceAdam::from_adamw(&config()).into();
    let (_, losses) = eager(start.clone(), &mut optim, &rates, 0..steps, &autodiff);
    report("adamw eager", &burn, &losses, "Burn's ModuleOptimizer over DeviceAdam");

    let (losses, execution) = captured(&device, start.clone(), DeviceAdam::from_adamw(&config()), &rates, 0..steps);
    report("adamw captured", &burn, &losses, &execution);

    // A checkpoint of Burn's own AdamW at half-time, through its bytes, resumed captured.
    let half = steps / 2;
    let mut optim = config().init();
    let (net, mut losses) = eager(start.clone(), &mut optim, &rates, 0..half, &autodiff);
    let bytes = optim.into_bytes().expect("the record serialises");
    let record = OptimizerRecord::from_bytes(bytes).expect("the record reads back");
    let adam = DeviceAdam::from_adamw(&config()).load_record(record);
    let (rest, execution) = captured(&device, net, adam, &rates, half..steps);
    losses.extend(rest);
    report("adamw resumed from Burn's checkpoint", &burn, &losses, &execution);
}
