//! gpt-small-device-dropout: gpt-small with its dropout masks drawn on the device. Its blocks,
//! written out around `DeviceDropout`, compute Burn's blocks when the masks are off; with them
//! on it trains reproducibly, learns, draws other masks than gpt-small, and its training step
//! is recorded and replayed on the eager chain (the verification gate is in
//! blazec's tests).
use blaze_burn::DeviceDropout;
use blaze_ir::plan::Regime;
use blaze_runtime::numerics::max_rel_diff;
use blaze_runtime::{Captured, Model};
use blaze_workloads::attention::AttentionLm;
use blaze_workloads::{ShapeOverride, find};
use burn::tensor::{Device, Int, Tensor, TensorData};
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const SMALL: ShapeOverride = ShapeOverride { batch: Some(2), seq: Some(16) };

fn tokens(device: &Device) -> Tensor<2, Int> {
    let ids: Vec<i32> = (0..32).map(|i| (i * 37 + 11) % 128).collect();
    Tensor::from_data(TensorData::new(ids, [2, 16]), device)
}

fn values(t: Tensor<3>) -> Vec<f32> {
    t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()
}

/// A small model with dropout `prob` on `device`: Burn's blocks and the written-out ones,
/// whose masks are off there, compute the same logits.
fn assert_blocks_agree(device: &Device, prob: f64, dropout: &mut DeviceDropout) {
    device.seed(1);
    let model = AttentionLm::new(32, 2, 4, prob, 16, device);
    dropout.next_step(device).unwrap();
    let burn = values(model.forward(tokens(device)));
    let ours = values(model.forward_dropping(tokens(device), dropout));
    assert!(max_rel_diff(&burn, &ours) <= 1e-6, "{:e}", max_rel_diff(&burn, &ours));
}

#[test]
fn the_blocks_written_out_compute_burns_blocks_when_the_masks_are_off() {
    let _serial = serial();
    let plain = blaze_burn::default_device();
    let mut dropout = DeviceDropout::new(0);
    // No autodiff device: Burn's dropout and the device's are both off (the forward regime).
    assert_blocks_agree(&plain, 0.1, &mut dropout);
    // Training device, probability 0: both off again, now through autodiff tensors.
    assert_blocks_agree(&plain.autodiff(), 0.0, &mut dropout);
}

fn losses(model: &mut dyn Model, steps: usize) -> Vec<f32> {
    (0..steps).map(|_| model.step(false).loss).collect()
}

#[test]
fn it_trains_reproducibly_with_masks_of_its_own_and_its_forward_is_gpt_smalls() {
    let _serial = serial();
    let ours = find("gpt-small-device-dropout", SMALL).expect("a named workload");
    assert_eq!(ours.name(), "gpt-small-device-dropout-b2s16");
    let gpt = find("gpt-small", SMALL).unwrap();
    let run = |f: &dyn blaze_runtime::ModelFactory| losses(f.build(Regime::Training).unwrap().as_mut(), 6);
    let (first, again, burns) = (run(ours.as_ref()), run(ours.as_ref()), run(gpt.as_ref()));
    assert!(first.iter().all(|l| l.is_finite()), "{first:?}");
    assert_eq!(first, again, "two fresh instances draw the same masks");
    assert!(first.iter().zip(&burns).all(|(a, b)| a != b), "other masks than Burn's: {first:?} {burns:?}");
    // Without autodiff there are no masks: the forward regime is gpt-small's, number for number.
    let forward = |f: &dyn blaze_runtime::ModelFactory| losses(f.build(Regime::Forward).unwrap().as_mut(), 3);
    assert_eq!(forward(ours.as_ref()), forward(gpt.as_ref()));
}

#[test]
fn it_learns() {
    let _serial = serial();
    let factory = find("gpt-small-device-dropout", ShapeOverride { batch: Some(2), seq: Some(32) }).unwrap();
    let losses = losses(factory.build(Regime::Training).unwrap().as_mut(), 40);
    let tail: f32 = losses[35..].iter().sum::<f32>() / 5.0;
    assert!((losses[0] - 4.852).abs() < 0.5 && tail < 3.5, "{losses:?}");
}

#[test]
fn its_training_step_is_recorded_and_replays_on_the_eager_chain() {
    let _serial = serial();
    let factory = find("gpt-small-device-dropout", SMALL).unwrap();
    let eager = losses(factory.build(Regime::Training).unwrap().as_mut(), 24);
    let mut captured = Captured::new(factory.build(Regime::Training).unwrap()).warn_with(|w| panic!("{w}"));
    let replayed = losses(&mut captured, 24);
    assert_eq!(captured.execution(), "captured");
    let rel = max_rel_diff(&eager, &replayed);
    assert!(rel <= 1e-5, "{rel:e}\n{eager:?}\n{replayed:?}");
}
