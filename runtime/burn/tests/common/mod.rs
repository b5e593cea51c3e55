//! A small two-layer network, its batches and a changing learning rate, trained eagerly with
//! Burn's own Adam: the reference the captured training tests compare with.
#![allow(dead_code)]
use blaze_burn::parameter_values;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor, TensorData};

pub const STEPS: usize = 60;
pub const ROWS: usize = 16;
pub const IN: usize = 8;
pub const HIDDEN: usize = 32;

#[derive(Module, Debug)]
pub struct Net {
    a: Linear,
    b: Linear,
}

impl Net {
    pub fn new(device: &Device) -> Self {
        device.seed(7);
        let net = Net { a: LinearConfig::new(IN, HIDDEN).init(device), b: LinearConfig::new(HIDDEN, 1).init(device) };
        blaze_burn::init_params(net)
    }

    /// The network's outputs (no loss): a forward step.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.b.forward(self.a.forward(x).tanh())
    }

    pub fn loss(&self, x: Tensor<2>, y: Tensor<2>) -> Tensor<1> {
        self.loss_with(x, y, |h| h)
    }

    /// The loss with `hidden` applied to the hidden activations (a dropout).
    pub fn loss_with(&self, x: Tensor<2>, y: Tensor<2>, hidden: impl FnOnce(Tensor<2>) -> Tensor<2>) -> Tensor<1> {
        let out = self.b.forward(hidden(self.a.forward(x).tanh()));
        (out - y).square().mean()
    }
}

/// A learning rate that changes every step (a decaying schedule).
pub fn lr(step: usize) -> f64 {
    2e-2 * 0.95f64.powi(step as i32)
}

/// Batch `step`, the same on every run: inputs and a target that depends on them.
pub fn batch(step: usize, device: &Device) -> (Tensor<2>, Tensor<2>) {
    let x: Vec<f32> = (0..ROWS * IN).map(|i| (((i * 37 + step * 101) % 97) as f32 / 48.5) - 1.0).collect();
    let y: Vec<f32> =
        x.chunks(IN).map(|r| r.iter().enumerate().map(|(j, v)| v * (j as f32 - 3.5)).sum::<f32>().sin()).collect();
    (
        Tensor::from_data(TensorData::new(x, [ROWS, IN]), device),
        Tensor::from_data(TensorData::new(y, [ROWS, 1]), device),
    )
}

pub fn read(loss: &Tensor<1>) -> f32 {
    loss.to_data().convert::<f32>().try_to_vec::<f32>().unwrap()[0]
}

/// Seeding the device, drawing parameters and the capture faults are process-wide: the tests of
/// a binary take turns (interleaved, two networks built "from seed 7" get different weights).
pub fn turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn autodiff() -> Device {
    blaze_burn::default_device().autodiff()
}

/// Burn's Adam (epsilon 1e-8), eagerly, for `steps` steps: the losses and the parameters at the end.
pub fn burn_adam(steps: usize) -> (Vec<f32>, Vec<f32>) {
    burn_optimizer(&AdamConfig::new().with_epsilon(1e-8), lr, steps)
}

/// Burn's optimizer from `config` at the rates `lr` gives, eagerly, for `steps` steps: the losses
/// and the parameters at the end.
pub fn burn_optimizer(config: &AdamConfig, lr: impl Fn(usize) -> f64, steps: usize) -> (Vec<f32>, Vec<f32>) {
    train_with(config.init(), lr, steps)
}

/// `optim` at the rates `lr` gives, eagerly, for `steps` steps: the losses and the parameters at
/// the end.
pub fn train_with(mut optim: ModuleOptimizer, lr: impl Fn(usize) -> f64, steps: usize) -> (Vec<f32>, Vec<f32>) {
    let device = autodiff();
    let mut net = Net::new(&device);
    let mut losses = Vec::new();
    for step in 0..steps {
        let (x, y) = batch(step, &device);
        let loss = net.loss(x, y);
        losses.push(read(&loss));
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        net = optim.step(lr(step), net, grads);
    }
    (losses, parameter_values(&net))
}
