//! `Tunable`: a Burn network, its batches and its loss as a model blazec runs, on the default
//! wgpu device (lavapipe in CI). Its eager training steps train as Burn's own optimizer made
//! from the same `AdamConfig`; recorded and replayed by the harness (`Captured`) it trains as
//! Burn's Adam too; an `AdamConfig` with weight decay, which `DeviceAdam` does not compute, is
//! refused for recording by name and the model trains eagerly with Burn's numbers.
mod common;
use blaze_burn::{Regime, Tunable};
use blaze_runtime::numerics::{VERIFY_TOLERANCE, max_rel_diff};
use blaze_runtime::{Captured, Model, ModelFactory};
use burn::optim::AdamConfig;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::tensor::Tensor;
use common::*;

const RUN: usize = 16;
const LR: f64 = 1e-2;

fn outputs_loss(net: &Net, (x, y): (Tensor<2>, Tensor<2>)) -> (Tensor<2>, Tensor<1>) {
    let out = net.forward(x);
    let loss = (out.clone() - y).square().mean();
    (out, loss)
}

fn tunable(config: AdamConfig) -> Tunable<Net, (Tensor<2>, Tensor<2>), 2> {
    Tunable::new("two-layer", Net::new, batch, outputs_loss)
        .with_shapes(format!("rows={ROWS}"))
        .with_optimizer(config)
        .with_learning_rate(LR)
}

/// Burn's optimizer from `config`, eagerly: every step's loss.
fn burns(config: &AdamConfig) -> Vec<f32> {
    burn_optimizer(config, |_| LR, RUN).0
}

fn losses(model: &mut dyn Model) -> Vec<f32> {
    (0..RUN).map(|_| model.step(false).loss).collect()
}

fn assert_close(burn: &[f32], ours: &[f32]) {
    let diff = max_rel_diff(burn, ours);
    eprintln!("largest relative difference to Burn's optimizer: {diff:.2e}");
    assert!(diff <= VERIFY_TOLERANCE, "{burn:?}\n{ours:?}");
}

#[test]
fn eager_steps_train_as_burns_optimizer_from_the_same_config() {
    let _turn = turn();
    let config = AdamConfig::new().with_epsilon(1e-8);
    let factory = tunable(config.clone());
    let mut model = factory.build(Regime::Training).unwrap();
    assert_eq!(model.describe().name, "two-layer");
    assert_eq!(model.describe().shapes, format!("rows={ROWS}"));
    assert_close(&burns(&config), &losses(model.as_mut()));
    // Forward: the outputs' last dimension is what a step reports per row.
    let mut forward = factory.build(Regime::Forward).unwrap();
    assert_eq!(forward.step(true).logits.len(), ROWS);
}

#[test]
fn a_recorded_training_step_trains_as_burns_adam() {
    let _turn = turn();
    let config = AdamConfig::new().with_epsilon(1e-8);
    let mut model = Captured::new(tunable(config.clone()).build(Regime::Training).unwrap());
    let ours = losses(&mut model);
    assert!(model.execution().starts_with("captured"), "{}", model.execution());
    assert!(model.replays() > 0, "the steps after warm-up are replays");
    assert_close(&burns(&config), &ours);
}

#[test]
fn weight_decay_amsgrad_and_clipping_are_recorded_and_train_as_burns_adam() {
    let _turn = turn();
    let config = AdamConfig::new()
        .with_epsilon(1e-8)
        .with_weight_decay(Some(WeightDecayConfig::new(1e-2)))
        .with_amsgrad(true)
        .with_grad_clipping(Some(GradientClippingConfig::Norm(0.5)));
    let mut model = Captured::new(tunable(config.clone()).build(Regime::Training).unwrap());
    let ours = losses(&mut model);
    assert!(model.execution().starts_with("captured"), "{}", model.execution());
    assert!(model.replays() > 0, "the steps after warm-up are replays");
    assert_close(&burns(&config), &ours);
}
