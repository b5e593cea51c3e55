//! `CapturedTraining`, a user's own training step captured, on the default wgpu device
//! (lavapipe in CI): it trains as Burn's Adam trains under a learning rate that changes every
//! step, and its checked replays catch a replay that updates stale state (no write-back) and a
//! host value baked into the recording, leaving eager execution in force with the right numbers.
//! A step with dropout whose masks `DeviceDropout` draws from a seed the call hands in is
//! captured and trains as the same step run eagerly; with the seed baked in as a host scalar
//! (what Burn's dropout does) the checked replays catch it. The same dropout as a layer of the
//! model (`SeededDropout`, from `SeededDropoutConfig`) draws the same masks and is captured alike.
mod common;
use blaze_burn::captured_step::{CHECKED_REPLAYS, WARM_CALLS};
use blaze_burn::{CapturedTraining, DeviceAdam, DeviceDropout, SeededDropout, SeededDropoutConfig, parameter_values};
use blaze_runtime::fault::{CaptureFault, inject_capture};
use blaze_runtime::numerics::{VERIFY_TOLERANCE, max_rel_diff};
use burn::module::Module;
use burn::nn::DropoutConfig;
use burn::optim::GradientsParams;
use burn::tensor::{Int, Tensor};
use common::*;

const RUN: usize = 24;

type Batch = (Tensor<2>, Tensor<2>);

/// The user's step: the loss on autodiff tensors, Adam's update held in place.
fn step(net: Net, adam: &mut DeviceAdam, (x, y): &Batch) -> (Net, Tensor<1>) {
    let loss = net.loss(x.clone(), y.clone());
    let grads = GradientsParams::from_grads(loss.backward(), &net);
    (adam.update(net, grads), loss.inner())
}

/// Trains `RUN` steps with `train`'s step; every loss, the parameters at the end, how it ran.
fn train<F: Fn(Net, &mut DeviceAdam, &Batch) -> (Net, Tensor<1>)>(
    captured: bool,
    f: F,
) -> (Vec<f32>, Vec<f32>, String) {
    let device = autodiff();
    let net = Net::new(&device);
    let plain = device.clone().inner();
    let adam = DeviceAdam::new(0.9, 0.999, 1e-8);
    let mut train = match captured {
        true => CapturedTraining::new(&plain, net, adam, f),
        false => CapturedTraining::eager(&plain, net, adam, f, "asked"),
    };
    let losses = (0..RUN).map(|s| read(&train.run(lr(s), batch(s, &device)))).collect();
    let execution = train.execution();
    if captured && train.is_captured() {
        assert!(train.memory().is_some(), "a live recording reports its memory");
    }
    (losses, parameter_values(&train.into_module()), execution)
}

fn assert_trains_as_burn(losses: &[f32], params: &[f32]) {
    let (burn_losses, burn_params) = burn_adam(RUN);
    let (loss_diff, param_diff) = (max_rel_diff(&burn_losses, losses), max_rel_diff(&burn_params, params));
    eprintln!("largest relative difference to Burn's Adam: losses {loss_diff:.2e}, parameters {param_diff:.2e}");
    assert!(loss_diff <= VERIFY_TOLERANCE && param_diff <= VERIFY_TOLERANCE, "{burn_losses:?}\n{losses:?}");
}

#[test]
fn a_users_training_step_is_captured_and_trains_as_burns_adam_does() {
    let _turn = turn();
    let (losses, params, execution) = train(true, step);
    // 3 eager calls, the recorded one, then replays (the first 3 checked).
    assert_eq!(execution, format!("captured ({} replays)", RUN - WARM_CALLS - 1));
    const { assert!(RUN - WARM_CALLS - 1 > CHECKED_REPLAYS) };
    assert_trains_as_burn(&losses, &params);
}

#[test]
fn a_checkpoint_taken_after_replays_resumes_as_burns_adam_goes_on() {
    let _turn = turn();
    let device = autodiff();
    let plain = device.clone().inner();
    let half = RUN / 2;
    let mut first = CapturedTraining::new(&plain, Net::new(&device), DeviceAdam::new(0.9, 0.999, 1e-8), step);
    let mut losses: Vec<f32> = (0..half).map(|s| read(&first.run(lr(s), batch(s, &device)))).collect();
    assert_eq!(first.execution(), format!("captured ({} replays)", half - WARM_CALLS - 1));
    // The record counts the replays' steps, which no host code saw (its bias corrections).
    let (net, adam) = first.into_parts();
    let record = adam.to_record();
    let adam = DeviceAdam::new(0.9, 0.999, 1e-8).load_record(record);
    let mut second = CapturedTraining::new(&plain, net, adam, step);
    losses.extend((half..RUN).map(|s| read(&second.run(lr(s), batch(s, &device)))));
    assert!(second.is_captured(), "{}", second.execution());
    let params = parameter_values(&second.into_module());
    assert_trains_as_burn(&losses, &params);
}

#[test]
fn a_replay_without_write_back_is_caught_and_training_goes_on_eagerly() {
    let _turn = turn();
    inject_capture(Some(CaptureFault::NoWriteBack));
    let (losses, params, execution) = train(true, step);
    inject_capture(None);
    // The recorded step itself is right (its first replay runs it from the state it read);
    // the next replay reads that stale state.
    assert!(execution.starts_with("eager: replay 1 differs from the same step run eagerly"), "{execution}");
    assert_trains_as_burn(&losses, &params);
}

#[test]
fn a_host_value_baked_into_the_recording_is_caught() {
    let _turn = turn();
    // A step that scales its loss by a host counter (as a host-seeded dropout or step count
    // would enter the kernels): a replay repeats the recorded value.
    // (In a Cell: a step is `Fn`, so only interior mutability lets it count.)
    let counting = || {
        let calls = std::cell::Cell::new(0u32);
        move |net: Net, adam: &mut DeviceAdam, (x, y): &Batch| {
            calls.set(calls.get() + 1);
            let loss = net.loss(x.clone(), y.clone()).mul_scalar(1.0 + calls.get() as f32 / 64.0);
            let grads = GradientsParams::from_grads(loss.backward(), &net);
            (adam.update(net, grads), loss.inner())
        }
    };
    let (losses, params, execution) = train(true, counting());
    assert!(execution.starts_with("eager: the recorded step differs"), "{execution}");
    // The eager run of the same step counts the calls the checked replay ran eagerly too, so
    // only the steps before the recording compare.
    let (eager_losses, _, eager_execution) = train(false, counting());
    assert_eq!(eager_execution, "eager: asked");
    assert_eq!(losses[..WARM_CALLS], eager_losses[..WARM_CALLS]);
    assert!(params.iter().all(|p| p.is_finite()));
}

type Seeded = (Batch, Tensor<1, Int>);

/// Trains `RUN` steps of a step with dropout 0.2 on the hidden layer, its masks drawn by
/// `DeviceDropout` from the seed each call hands in; every loss and how it ran.
fn train_dropping(captured: bool) -> (Vec<f32>, String) {
    let device = autodiff();
    let net = Net::new(&device);
    let plain = device.clone().inner();
    let dropout = DeviceDropout::new(5);
    let burn = DropoutConfig::new(0.2).init();
    let step = |net: Net, adam: &mut DeviceAdam, ((x, y), seed): &Seeded| {
        let loss = net.loss_with(x.clone(), y.clone(), |h| dropout.forward_seeded(&burn, h, seed, 0));
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        (adam.update(net, grads), loss.inner())
    };
    let adam = DeviceAdam::new(0.9, 0.999, 1e-8);
    let mut train = match captured {
        true => CapturedTraining::new(&plain, net, adam, step),
        false => CapturedTraining::eager(&plain, net, adam, step, "asked"),
    };
    // The seed is made outside the step, as the batch is: the call writes both in place.
    let losses = (0..RUN).map(|s| read(&train.run(lr(s), (batch(s, &device), dropout.next_seed(&device))))).collect();
    (losses, train.execution())
}

#[test]
fn a_step_with_device_dropout_is_captured_and_draws_each_calls_masks() {
    let _turn = turn();
    let (eager, _) = train_dropping(false);
    let (losses, execution) = train_dropping(true);
    assert_eq!(execution, format!("captured ({} replays)", RUN - WARM_CALLS - 1));
    let diff = max_rel_diff(&eager, &losses);
    assert!(diff <= VERIFY_TOLERANCE, "{diff:e}\n{eager:?}\n{losses:?}");
    // The masks matter: without them the same run computes other losses.
    let (burn_losses, _) = burn_adam(RUN);
    assert!(max_rel_diff(&burn_losses, &losses) > 1e-3, "{burn_losses:?}\n{losses:?}");
}

/// `Net` with a dropout layer on its hidden activations.
#[derive(Module, Debug)]
struct DroppingNet {
    net: Net,
    drop: SeededDropout,
}

#[test]
fn a_seeded_dropout_layer_is_captured_and_draws_device_dropouts_masks() {
    let _turn = turn();
    let (eager, _) = train_dropping(false);
    let device = autodiff();
    let model = DroppingNet { net: Net::new(&device), drop: SeededDropoutConfig::new(0.2).init() };
    let seeds = DeviceDropout::new(5);
    let step = |m: DroppingNet, adam: &mut DeviceAdam, ((x, y), seed): &Seeded| {
        let loss = m.net.loss_with(x.clone(), y.clone(), |h| m.drop.forward(h, seed));
        let grads = GradientsParams::from_grads(loss.backward(), &m);
        (adam.update(m, grads), loss.inner())
    };
    let adam = DeviceAdam::new(0.9, 0.999, 1e-8);
    let mut train = CapturedTraining::new(&device.clone().inner(), model, adam, step);
    let losses: Vec<f32> =
        (0..RUN).map(|s| read(&train.run(lr(s), (batch(s, &device), seeds.next_seed(&device))))).collect();
    assert_eq!(train.execution(), format!("captured ({} replays)", RUN - WARM_CALLS - 1));
    // Site 0 and the same seeds: `DeviceDropout::forward_seeded`'s masks, so its eager losses.
    let diff = max_rel_diff(&eager, &losses);
    assert!(diff <= VERIFY_TOLERANCE, "{diff:e}\n{eager:?}\n{losses:?}");
    // Off where Burn's dropout is off: on the plain device its input passes unchanged.
    let plain = device.clone().inner();
    let x = Tensor::<2>::ones([4, 8], &plain);
    let out = SeededDropoutConfig::new(0.5).init().forward(x.clone(), &seeds.next_seed(&plain));
    assert_eq!(out.into_data(), x.into_data());
}

#[test]
fn a_dropout_seed_baked_into_the_recording_is_caught() {
    let _turn = turn();
    let (eager, _) = train_dropping(false);
    inject_capture(Some(CaptureFault::BakedDropoutSeed));
    let (losses, execution) = train_dropping(true);
    inject_capture(None);
    // The recorded step draws its own masks; the next replay repeats them.
    assert!(execution.starts_with("eager: replay 1 differs from the same step run eagerly"), "{execution}");
    let diff = max_rel_diff(&eager, &losses);
    assert!(diff <= VERIFY_TOLERANCE, "the eager copy carries on: {diff:e}");
}
