//! `DeviceAdam` against Burn's own Adam on the default wgpu device (lavapipe in CI): a small
//! two-layer network trained with a learning rate that changes every step, once eagerly with
//! Burn's `ModuleOptimizer`, once recorded and replayed with `DeviceAdam` (parameters, moments
//! and step scalars written in place, a fresh batch written into the recorded inputs before
//! each replay). Every loss and the parameters at the end agree within the verification
//! tolerance; without the write-back the replays leave the eager chain. `HeldAdam`, the
//! per-parameter `burn::optim::Optimizer` under it, trains in Burn's own `ModuleOptimizer` as
//! Burn's Adam and AdamW do from the same config.
mod common;
use blaze_burn::capture::{StableInput, record_graph_stepping};
use blaze_burn::{DeviceAdam, HeldAdam, parameter_values};
use blaze_runtime::fault::{CaptureFault, inject_capture};
use blaze_runtime::numerics::{VERIFY_TOLERANCE, max_rel_diff};
use burn::optim::decay::WeightDecayConfig;
use burn::optim::{AdamConfig, AdamWConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use common::*;
use std::cell::RefCell;

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
    let _turn = turn();
    let (burn_losses, burn_params) = burn_adam(STEPS);
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

#[test]
fn held_adam_in_burns_module_optimizer_trains_as_burns_adam_and_adamw() {
    let _turn = turn();
    const N: usize = 20;
    let close =
        |a: &(Vec<f32>, Vec<f32>), b: &(Vec<f32>, Vec<f32>)| max_rel_diff(&a.0, &b.0).max(max_rel_diff(&a.1, &b.1));
    // Adam with L2 weight decay and AMSGrad.
    let adam =
        AdamConfig::new().with_epsilon(1e-8).with_amsgrad(true).with_weight_decay(Some(WeightDecayConfig::new(0.1)));
    let burn = train_with(adam.init(), lr, N);
    let held = train_with(ModuleOptimizer::from(HeldAdam::from_config(&adam)), lr, N);
    assert!(close(&burn, &held) <= VERIFY_TOLERANCE, "{burn:?}\n{held:?}");
    // The settings are computed, not dropped: plain Adam trains otherwise.
    let plain = train_with(ModuleOptimizer::from(HeldAdam::from_config(&AdamConfig::new().with_epsilon(1e-8))), lr, N);
    assert!(close(&burn, &plain) > VERIFY_TOLERANCE, "{burn:?}\n{plain:?}");
    // AdamW with cautious weight decay.
    let adamw = AdamWConfig::new().with_weight_decay(0.1).with_cautious_weight_decay(true);
    let burn = train_with(adamw.init(), lr, N);
    let held = train_with(ModuleOptimizer::from(HeldAdam::from_adamw(&adamw)), lr, N);
    assert!(close(&burn, &held) <= VERIFY_TOLERANCE, "{burn:?}\n{held:?}");
    let uncautious = train_with(
        ModuleOptimizer::from(HeldAdam::from_adamw(&adamw.clone().with_cautious_weight_decay(false))),
        lr,
        N,
    );
    assert!(close(&burn, &uncautious) > VERIFY_TOLERANCE, "{burn:?}\n{uncautious:?}");
}
