//! Captured steps in a user's own loop never change what the program computes, also when the
//! loop does what Burn users do (on the default wgpu device, lavapipe in CI):
//! * it keeps each call's outputs and reads them all after the loop (one sync, not one per
//!   step): every kept output still holds its own call's values, in forward and in training;
//! * its step reads a value back inside the call (`into_scalar`): no panic; the recording is
//!   refused with one warning and the loop runs eagerly with eager numbers;
//! * its step reads a value back with a read that fails softly inside a recording
//!   (`try_into_scalar().unwrap_or(..)`): the recording call's outputs are compared with an
//!   eager run before they reach the caller, and the loop goes on eagerly with eager numbers.
mod common;
use blaze_burn::captured_step::WARM_CALLS;
use blaze_burn::{CapturedForward, CapturedTraining, DeviceAdam};
use blaze_runtime::numerics::{VERIFY_TOLERANCE, max_rel_diff};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};
use common::*;

/// Calls per loop: warm-up, the recording, its checked replays and a run of plain replays.
const CALLS: usize = 16;

/// Burn's state is process-wide (fusion, capture): the tests of this file take turns.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn plain() -> Device {
    blaze_burn::default_device()
}

fn values(t: &Tensor<2>) -> Vec<f32> {
    t.to_data().convert::<f32>().try_to_vec::<f32>().unwrap()
}

/// The network's outputs on `x` (a forward step on the plain device).
fn forward(net: &Net, x: &Tensor<2>) -> Tensor<2> {
    net.forward(x.clone())
}

/// What eager Burn computes for every call of the forward loop, read at each call.
fn eager_forward() -> Vec<Vec<f32>> {
    let device = plain();
    let net = Net::new(&device);
    (0..CALLS).map(|s| values(&forward(&net, &batch(s, &device).0))).collect()
}

#[test]
fn forward_outputs_kept_across_calls_keep_their_own_values() {
    let _turn = turn();
    let expected = eager_forward();
    let device = plain();
    let net = Net::new(&device);
    let mut eval = CapturedForward::new(&device, |x: &Tensor<2>| forward(&net, x));
    // The loop keeps every call's outputs and reads them only at the end.
    let kept: Vec<Tensor<2>> = (0..CALLS).map(|s| eval.run(batch(s, &device).0)).collect();
    assert!(eval.is_captured(), "the loop is replayed: {}", eval.execution());
    let read: Vec<Vec<f32>> = kept.iter().map(values).collect();
    for (call, (got, want)) in read.iter().zip(&expected).enumerate() {
        let diff = max_rel_diff(want, got);
        assert!(diff <= 1e-5, "call {call}: the kept output holds another call's values ({diff:.2e})");
    }
}

/// The user's training step with Blaze's device-held Adam.
fn step(net: Net, adam: &mut DeviceAdam, (x, y): &(Tensor<2>, Tensor<2>)) -> (Net, Tensor<1>) {
    let loss = net.loss(x.clone(), y.clone());
    let grads = GradientsParams::from_grads(loss.backward(), &net);
    (adam.update(net, grads), loss.inner())
}

#[test]
fn training_losses_kept_across_calls_keep_their_own_values() {
    let _turn = turn();
    let (burn_losses, _) = burn_adam(CALLS);
    let device = autodiff();
    let net = Net::new(&device);
    let mut train = CapturedTraining::new(&device.clone().inner(), net, DeviceAdam::new(0.9, 0.999, 1e-8), step);
    let kept: Vec<Tensor<1>> = (0..CALLS).map(|s| train.run(lr(s), batch(s, &device))).collect();
    assert!(train.is_captured(), "the loop is replayed: {}", train.execution());
    let losses: Vec<f32> = kept.iter().map(read).collect();
    let diff = max_rel_diff(&burn_losses, &losses);
    assert!(diff <= VERIFY_TOLERANCE, "every kept loss is its own step's ({diff:.2e}):\n{burn_losses:?}\n{losses:?}");
}

#[test]
fn a_host_read_inside_the_step_is_refused_without_a_panic_and_runs_eagerly() {
    let _turn = turn();
    let expected = eager_forward();
    let device = plain();
    let net = Net::new(&device);
    // Kept through a RefCell: a step is `Fn` (it runs more than once while a call is recorded).
    let peeked = std::cell::RefCell::new(Vec::new());
    let mut eval = CapturedForward::new(&device, |x: &Tensor<2>| {
        let out = forward(&net, x);
        // A read inside the step: what a user adds to log a value.
        peeked.borrow_mut().push(out.clone().sum().into_scalar::<f32>());
        out
    });
    let got: Vec<Vec<f32>> = (0..CALLS).map(|s| values(&eval.run(batch(s, &device).0))).collect();
    let execution = eval.execution();
    assert!(
        execution.starts_with("eager: recording refused: the step panicked inside the recording window")
            && execution.contains("a host read, write or sync cannot be recorded"),
        "{execution}"
    );
    for (call, (got, want)) in got.iter().zip(&expected).enumerate() {
        assert!(max_rel_diff(want, got) <= 1e-5, "call {call} computes eager numbers");
    }
    drop(eval);
    // Every call read its value: the warm-up calls, the refused recording's preparing launches
    // and its window (where the read panicked), then the eager ones.
    assert!(peeked.borrow().len() >= CALLS, "{} reads", peeked.borrow().len());
}

#[test]
fn a_soft_failing_read_inside_the_step_is_caught_by_the_recording_calls_check() {
    let _turn = turn();
    let expected = eager_forward();
    let device = plain();
    let net = Net::new(&device);
    let mut eval = CapturedForward::new(&device, |x: &Tensor<2>| {
        let out = forward(&net, x);
        // A read that fails softly inside a recording window, its fallback folded into the
        // output: the recorded form computes with -1000 where eager execution has the sum.
        let total: f32 = out.clone().sum().try_into_scalar::<f32>().unwrap_or(-1000.0);
        out.add_scalar(total * 1e-3)
    });
    let got: Vec<Vec<f32>> = (0..CALLS).map(|s| values(&eval.run(batch(s, &device).0))).collect();
    let execution = eval.execution();
    assert!(execution.starts_with("eager: "), "the recorded form is not kept: {execution}");
    // Eager numbers for this step: the network's outputs shifted by a thousandth of their sum.
    for (call, (got, plain_out)) in got.iter().zip(&expected).enumerate() {
        let total: f32 = plain_out.iter().sum();
        let want: Vec<f32> = plain_out.iter().map(|v| v + total * 1e-3).collect();
        let diff = max_rel_diff(&want, got);
        assert!(diff <= 1e-4, "call {call} ({execution}) computes eager numbers: {diff:.2e}");
    }
    const { assert!(WARM_CALLS < CALLS) };
}

/// `init` chooses entries for the default device's adapter: given another device, it says so
/// (one warning, in the handle's notes too); the default device, autodiff or not, says nothing.
#[test]
fn init_given_a_device_it_does_not_describe_says_so() {
    use burn::tensor::DeviceKind;
    let missing = std::env::temp_dir().join(format!("blaze-contract-none-{}.blaze", std::process::id()));
    let other = Device::wgpu(DeviceKind::IntegratedGpu(7));
    let handle = blaze_burn::init(&other, &missing);
    let note = handle.notes.iter().find(|n| n.contains("not for the device it was given"));
    assert!(
        note.is_some_and(|n| n.starts_with("warning: blaze: init chooses the bundle's entries for ")
            && n.contains("blaze_runtime::load_bundle")),
        "{:?}",
        handle.notes
    );
    for device in [plain(), autodiff()] {
        let handle = blaze_burn::init(&device, &missing);
        assert!(!handle.notes.iter().any(|n| n.contains("device it was given")), "{device:?}: {:?}", handle.notes);
    }
}
