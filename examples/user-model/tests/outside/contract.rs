//! A user's own program, written from the README alone, that does what Burn users do around a
//! captured step and checks, call by call, that the program computes what eager Burn computes.
//! `tests/outside_crate.rs` builds it in a crate outside the workspace (as `src/bin/contract.rs`)
//! and reads its lines; each line is `<check>: ok <details>` or `<check>: FAILED <details>`.
//!
//! Usage: contract <bundle>
use blaze_burn::{CapturedForward, CapturedTraining, DeviceAdam};
use blaze_runtime::numerics::{VERIFY_TOLERANCE, max_rel_diff};
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Tensor, TensorData};
use std::cell::RefCell;

/// Calls of each loop: past the warm-up, the recording and its checked replays.
const CALLS: usize = 16;
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

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.b.forward(self.a.forward(x).tanh())
    }

    fn loss(&self, x: Tensor<2>, y: Tensor<2>) -> Tensor<1> {
        (self.forward(x) - y).square().mean()
    }
}

/// Batch `call`: inputs and targets made from data, the same on every run.
fn batch(call: usize, device: &Device) -> (Tensor<2>, Tensor<2>) {
    let x: Vec<f32> = (0..ROWS * IN).map(|i| ((i * 29 + call * 71) % 101) as f32 / 50.5 - 1.0).collect();
    let y: Vec<f32> = (0..ROWS * CLASSES).map(|i| (((i + call) % 7) as f32 / 3.5 - 1.0).sin()).collect();
    (Tensor::from_data(TensorData::new(x, [ROWS, IN]), device), Tensor::from_data(TensorData::new(y, [ROWS, CLASSES]), device))
}

fn lr(call: usize) -> f64 {
    1e-2 * 0.9f64.powi(call as i32)
}

fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()
}

/// The largest difference between two runs' values under Blaze's one numeric rule (relative to
/// the largest magnitude, `blaze_runtime::numerics`); infinite when the sizes differ. A
/// per-element relative rule would flag Burn's own run-to-run rounding on values near zero
/// (autotune may pick another matmul kernel between calls).
fn diff(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || b.iter().any(|x| !x.is_finite()) {
        return f32::INFINITY;
    }
    max_rel_diff(a, b)
}

fn report(check: &str, worst: f32, execution: &str) {
    let verdict = if worst <= VERIFY_TOLERANCE { "ok" } else { "FAILED" };
    println!("{check}: {verdict} max relative difference {worst:.2e} over {CALLS} calls; {execution}");
}

fn main() {
    let bundle = std::env::args().nth(1).expect("usage: contract <bundle>");
    let device = blaze_burn::default_device();
    // The slip the README warns about, before any tensor operation: the handle dropped at once.
    let _ = blaze_burn::init(&device, &bundle);
    let blaze = blaze_burn::init(&device, &bundle);

    let net = Classifier::new(&device);
    let eager: Vec<Vec<f32>> = (0..CALLS).map(|c| values(net.forward(batch(c, &device).0))).collect();

    // Outputs kept across calls and read once at the end (no sync per step).
    let mut eval = CapturedForward::new(&device, |x: &Tensor<2>| net.forward(x.clone()));
    let kept: Vec<Tensor<2>> = (0..CALLS).map(|c| eval.run(batch(c, &device).0)).collect();
    let worst = kept.into_iter().zip(&eager).map(|(t, e)| diff(e, &values(t))).fold(0.0, f32::max);
    report("kept forward outputs", worst, &eval.execution());
    drop(eval);

    // The README's loop: the bundle decides. Its one entry is another model's training step, so
    // this forward loop is never recorded, and computes what eager Burn computes.
    let mut eval = CapturedForward::from_bundle(&blaze, &device, |x: &Tensor<2>| net.forward(x.clone()));
    let worst = (0..CALLS).map(|c| diff(&eager[c], &values(eval.run(batch(c, &device).0)))).fold(0.0, f32::max);
    report("forward loop under another model's bundle", worst, &eval.execution());
    drop(eval);

    // A value read inside the step, to log it.
    let logged = RefCell::new(Vec::new());
    let mut eval = CapturedForward::new(&device, |x: &Tensor<2>| {
        let out = net.forward(x.clone());
        logged.borrow_mut().push(out.clone().sum().into_scalar::<f32>());
        out
    });
    let worst = (0..CALLS).map(|c| diff(&eager[c], &values(eval.run(batch(c, &device).0)))).fold(0.0, f32::max);
    report("host read inside the step", worst, &eval.execution());
    drop(eval);

    // Training: Burn's Adam eagerly, then the same training captured with DeviceAdam (Burn's
    // AdamConfig::new() Adam), every call's loss kept and read at the end.
    let autodiff = device.clone().autodiff();
    let start = Classifier::new(&autodiff);
    let mut trained = start.clone();
    let mut optim = AdamConfig::new().init();
    let mut eager_losses = Vec::new();
    for call in 0..CALLS {
        let (x, y) = batch(call, &autodiff);
        let loss = trained.loss(x, y);
        eager_losses.extend(values(loss.clone()));
        let grads = GradientsParams::from_grads(loss.backward(), &trained);
        trained = optim.step(lr(call), trained, grads);
    }
    // The trained parameters, compared through the outputs on a batch no step saw.
    let probe = batch(CALLS, &autodiff).0;
    let eager_after = values(trained.forward(probe.clone()));

    let step = |net: Classifier, adam: &mut DeviceAdam, (x, y): &(Tensor<2>, Tensor<2>)| {
        let loss = net.loss(x.clone(), y.clone());
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        (adam.update(net, grads), loss.inner())
    };
    // The same step never recorded: what DeviceAdam's own kernels compute against Burn's Adam's,
    // apart from any recording (on a GPU the two compile to different kernels).
    let mut train = CapturedTraining::eager(&device, start.clone(), DeviceAdam::from_config(&AdamConfig::new()), step, "asked");
    let kept: Vec<Tensor<1>> = (0..CALLS).map(|c| train.run(lr(c), batch(c, &autodiff))).collect();
    let losses: Vec<f32> = kept.into_iter().flat_map(values).collect();
    report("eager DeviceAdam losses", diff(&eager_losses, &losses), &train.execution());
    let eager_adam_after = values(train.into_module().forward(probe.clone()));

    let adam = DeviceAdam::from_config(&AdamConfig::new());
    let mut train = CapturedTraining::new(&device, start, adam, step);
    let kept: Vec<Tensor<1>> = (0..CALLS).map(|c| train.run(lr(c), batch(c, &autodiff))).collect();
    let execution = train.execution();
    let losses: Vec<f32> = kept.into_iter().flat_map(values).collect();
    report("kept training losses", diff(&eager_losses, &losses), &execution);
    let after = values(train.into_module().forward(probe));
    report("trained parameters", diff(&eager_after, &after), &execution);
    // The recording against the same optimizer run eagerly: what capture alone changes.
    report("trained parameters against eager DeviceAdam", diff(&eager_adam_after, &after), &execution);
}
