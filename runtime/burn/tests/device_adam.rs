//! `DeviceAdam` against Burn's own Adam on the default wgpu device (lavapipe in CI): a small
//! two-layer network trained with a learning rate that changes every step, once eagerly with
//! Burn's `ModuleOptimizer`, once recorded and replayed with `DeviceAdam` (parameters, moments
//! and step scalars written in place, a fresh batch written into the recorded inputs before
//! each replay). Every loss and the parameters at the end agree within the verification
//! tolerance; without the write-back the replays leave the eager chain.
use blaze_burn::capture::{StableInput, record_graph_stepping};
use blaze_burn::{DeviceAdam, parameter_values};
use blaze_runtime::fault::{CaptureFault, inject_capture};
use blaze_runtime::numerics::{VERIFY_TOLERANCE, max_rel_diff};
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Tensor, TensorData};
use std::cell::RefCell;

const STEPS: usize = 60;
const ROWS: usize = 16;
const IN: usize = 8;
const HIDDEN: usize = 32;

#[derive(Module, Debug)]
struct Net {
    a: Linear,
    b: Linear,
}

impl Net {
    fn new(device: &Device) -> Self {
        device.seed(7);
        let net = Net { a: LinearConfig::new(IN, HIDDEN).init(device), b: LinearConfig::new(HIDDEN, 1).init(device) };
        blaze_burn::init_params(net)
    }

    fn loss(&self, x: Tensor<2>, y: Tensor<2>) -> Tensor<1> {
        let out = self.b.forward(self.a.forward(x).tanh());
        (out - y).square().mean()
    }
}

/// A learning rate that changes every step (a decaying schedule).
fn lr(step: usize) -> f64 {
    2e-2 * 0.95f64.powi(step as i32)
}

/// Batch `step`, the same on every run: inputs and a target that depends on them.
fn batch(step: usize, device: &Device) -> (Tensor<2>, Tensor<2>) {
    let x: Vec<f32> = (0..ROWS * IN).map(|i| (((i * 37 + step * 101) % 97) as f32 / 48.5) - 1.0).collect();
    let y: Vec<f32> =
        x.chunks(IN).map(|r| r.iter().enumerate().map(|(j, v)| v * (j as f32 - 3.5)).sum::<f32>().sin()).collect();
    (
        Tensor::from_data(TensorData::new(x, [ROWS, IN]), device),
        Tensor::from_data(TensorData::new(y, [ROWS, 1]), device),
    )
}

fn read(loss: &Tensor<1>) -> f32 {
    loss.to_data().convert::<f32>().try_to_vec::<f32>().unwrap()[0]
}

fn autodiff() -> Device {
    blaze_burn::default_device().autodiff()
}

/// Burn's Adam, eagerly: the losses and the parameters at the end.
fn burn_adam() -> (Vec<f32>, Vec<f32>) {
    let device = autodiff();
    let mut net = Net::new(&device);
    let mut optim = AdamConfig::new().with_epsilon(1e-8).init();
    let mut losses = Vec::new();
    for step in 0..STEPS {
        let (x, y) = batch(step, &device);
        let loss = net.loss(x, y);
        losses.push(read(&loss));
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        net = optim.step(lr(step), net, grads);
    }
    (losses, parameter_values(&net))
}

/// What the recorded run holds between steps.
struct Run {
    net: Option<Net>,
    adam: DeviceAdam,
    x: StableInput<2>,
    y: StableInput<2>,
    device: Device,
    plain: Device,
    step: usize,
}

impl Run {
    /// Writes batch `self.step` and its step scalars (outside any recording).
    fn refresh(&mut self) -> Result<(), String> {
        let (x, y) = batch(self.step, &self.device);
        self.x.write(x)?;
        self.y.write(y)?;
        self.adam.next_step(lr(self.step), &self.plain)?;
        self.step += 1;
        Ok(())
    }

    /// One training step on the stable inputs; its loss as a plain tensor.
    fn launch(&mut self) -> Tensor<1> {
        let net = self.net.take().unwrap();
        let loss = net.loss(self.x.get(), self.y.get());
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        let loss = loss.inner();
        let (net, written) = self.adam.step(net, grads);
        written.expect("every write in place");
        self.net = Some(net);
        loss
    }
}

/// `DeviceAdam`, recorded after its preparing steps and replayed for the rest.
fn recorded() -> (Vec<f32>, Vec<f32>) {
    let device = autodiff();
    let net = Net::new(&device);
    let plain = device.clone().inner();
    let run = RefCell::new(Run {
        net: Some(net),
        adam: DeviceAdam::new(0.9, 0.999, 1e-8),
        x: StableInput::default(),
        y: StableInput::default(),
        device,
        plain: plain.clone(),
        step: 0,
    });
    let mut losses = Vec::new();
    run.borrow_mut().refresh().unwrap();
    let graph = record_graph_stepping(
        &plain,
        || run.borrow_mut().launch(),
        |loss| {
            losses.push(read(loss));
            run.borrow_mut().refresh()
        },
    )
    .expect("recorded");
    losses.push(read(graph.outputs()));
    while losses.len() < STEPS {
        run.borrow_mut().refresh().unwrap();
        graph.replay().expect("replayed");
        losses.push(read(graph.outputs()));
    }
    let params = parameter_values(run.borrow().net.as_ref().unwrap());
    (losses, params)
}

#[test]
fn device_adam_replays_burns_adam_under_a_changing_learning_rate_and_needs_its_write_back() {
    let (burn_losses, burn_params) = burn_adam();
    assert!(burn_losses[STEPS - 1] < burn_losses[0] * 0.8, "the network learns: {burn_losses:?}");
    let (losses, params) = recorded();
    let (loss_diff, param_diff) = (max_rel_diff(&burn_losses, &losses), max_rel_diff(&burn_params, &params));
    eprintln!(
        "largest relative difference to Burn's Adam over {STEPS} steps: losses {loss_diff:.2e}, parameters {param_diff:.2e}"
    );
    eprintln!("Burn's Adam losses: {burn_losses:?}\nrecorded DeviceAdam losses: {losses:?}");
    assert!(loss_diff <= VERIFY_TOLERANCE && param_diff <= VERIFY_TOLERANCE, "{burn_losses:?}\n{losses:?}");
    // Without the write-back (new buffers each step, as Burn's optimizer returns them), the
    // replays update state the next replay does not read.
    inject_capture(Some(CaptureFault::NoWriteBack));
    let (stale, _) = recorded();
    inject_capture(None);
    eprintln!("without write-back: {stale:?}");
    assert!(max_rel_diff(&burn_losses, &stale) > 1e-3, "the stale replays leave the eager chain: {stale:?}");
}
