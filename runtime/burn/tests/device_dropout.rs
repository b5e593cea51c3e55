//! `DeviceDropout` on the default wgpu device (lavapipe in CI): its masks are the host
//! reference hash bit for bit (so the device's integer arithmetic wraps as the hash needs), keep
//! the asked fraction, change from step to step and site to site; its forward is Burn's dropout
//! arithmetic and is off where Burn's is off; and a recorded step draws the next step's masks
//! on every replay, which a seed baked in as a host scalar (Burn's dropout) does not.
use blaze_burn::capture::record_graph_stepping;
use blaze_burn::device_dropout::{keeps, step_seed};
use blaze_burn::{DeviceDropout, default_device};
use blaze_runtime::fault::{CaptureFault, inject_capture};
use burn::module::Param;
use burn::nn::DropoutConfig;
use burn::tensor::{Bool, Device, Tensor};
use std::cell::{Cell, RefCell};
use std::sync::{Mutex, MutexGuard};

const SEED: u64 = 3;
const DIMS: [usize; 3] = [4, 33, 65];

/// The fault switch is one per process: tests that run with it run one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn bits<const D: usize>(mask: Tensor<D, Bool>) -> Vec<bool> {
    mask.int().into_data().convert::<i32>().try_to_vec::<i32>().unwrap().into_iter().map(|v| v != 0).collect()
}

fn reference(seed: i32, site: u32, prob: f64) -> Vec<bool> {
    let n: usize = DIMS.iter().product();
    (0..n as u32).map(|i| keeps(seed, site, i, prob)).collect()
}

fn kept_fraction(mask: &[bool]) -> f64 {
    mask.iter().filter(|k| **k).count() as f64 / mask.len() as f64
}

fn differing(a: &[bool], b: &[bool]) -> f64 {
    a.iter().zip(b).filter(|(x, y)| x != y).count() as f64 / a.len() as f64
}

#[test]
fn the_devices_masks_are_the_host_hash_bit_for_bit_and_change_by_step_and_site() {
    let _serial = serial();
    let device = default_device();
    let mut dropout = DeviceDropout::new(SEED);
    let mut seen = Vec::new();
    for step in 1..=2 {
        dropout.next_step(&device).unwrap();
        for site in [0, 5] {
            let mask = bits(dropout.keep_mask(&DIMS, 0.1, site, &device));
            assert_eq!(mask, reference(step_seed(SEED, step), site, 0.1), "step {step}, site {site}");
            // 8,580 elements: 4 standard deviations of the kept fraction are 0.013.
            let kept = kept_fraction(&mask);
            assert!((kept - 0.9).abs() < 0.013, "step {step}, site {site}: kept {kept}");
            seen.push(mask);
        }
    }
    // Independent masks at p = 0.1 differ in 2 p (1 - p) = 18 % of the elements.
    for (a, b) in [(0, 1), (0, 2), (1, 3)] {
        let d = differing(&seen[a], &seen[b]);
        assert!((0.14..0.22).contains(&d), "masks {a} and {b} differ in {d}");
    }
    assert!(dropout.memory() >= DIMS.iter().product::<usize>() * 4, "the index hashes are kept");
}

#[test]
fn forward_is_burns_dropout_arithmetic_and_off_where_burns_is_off() {
    let _serial = serial();
    let plain = default_device();
    let device = plain.clone().autodiff();
    let mut dropout = DeviceDropout::new(SEED);
    dropout.next_step(&device).unwrap();
    let burn = DropoutConfig::new(0.25).init();
    let x = Tensor::<3>::ones(DIMS, &device).require_grad();
    let out = dropout.forward(&burn, x.clone(), 7);
    let values = out.clone().into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
    let kept = reference(step_seed(SEED, 1), 7, 0.25);
    for (v, k) in values.iter().zip(&kept) {
        assert_eq!(*v, if *k { 1.0 / 0.75 } else { 0.0 }, "x * mask * (1 / (1 - p))");
    }
    // The gradient flows through the kept elements only.
    let grads = out.sum().backward();
    let grad = x.grad(&grads).unwrap().into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
    assert_eq!(grad, values);
    // Off where Burn's dropout is off: no autodiff device, probability 0, training flag off.
    let ones = vec![1.0f32; DIMS.iter().product()];
    let same = |t: Tensor<3>| t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap() == ones;
    assert!(same(dropout.forward(&burn, Tensor::<3>::ones(DIMS, &plain), 7)));
    assert!(same(dropout.forward(&DropoutConfig::new(0.0).init(), Tensor::<3>::ones(DIMS, &device), 7)));
    let mut frozen = DropoutConfig::new(0.25).init();
    frozen.training = Param::from_bool(false);
    assert!(same(dropout.forward(&frozen, Tensor::<3>::ones(DIMS, &device), 7)));
}

/// Records one mask draw after its preparing launches (each followed by the next step's seed),
/// then replays it for 3 more steps: each replay's mask against the host hash of that step.
/// Returns how many replays drew their own step's mask.
fn replays_drawing_their_steps_mask(device: &Device) -> usize {
    let dropout = RefCell::new(DeviceDropout::new(SEED));
    let step = Cell::new(1);
    dropout.borrow_mut().next_step(device).unwrap();
    let recorded = record_graph_stepping(
        device,
        || dropout.borrow().keep_mask(&DIMS, 0.1, 2, device).int(),
        |_| {
            step.set(step.get() + 1);
            dropout.borrow_mut().next_step(device)
        },
    )
    .expect("a mask draw records");
    let read = || recorded.outputs().clone().into_data().convert::<i32>().try_to_vec::<i32>().unwrap();
    let recorded_mask: Vec<bool> = read().into_iter().map(|v| v != 0).collect();
    assert_eq!(recorded_mask, reference(step_seed(SEED, step.get()), 2, 0.1), "the recorded step's own mask");
    let mut right = 0;
    for _ in 0..3 {
        step.set(step.get() + 1);
        dropout.borrow_mut().next_step(device).unwrap();
        recorded.replay().unwrap();
        let mask: Vec<bool> = read().into_iter().map(|v| v != 0).collect();
        right += usize::from(mask == reference(step_seed(SEED, step.get()), 2, 0.1));
    }
    right
}

#[test]
fn a_recorded_step_draws_the_next_steps_masks_on_every_replay() {
    let _serial = serial();
    let device = default_device();
    assert_eq!(replays_drawing_their_steps_mask(&device), 3);
    // The seed baked into the recording as a host scalar, as Burn's dropout bakes its seed:
    // every replay repeats the recorded mask.
    inject_capture(Some(CaptureFault::BakedDropoutSeed));
    let right = std::panic::catch_unwind(|| replays_drawing_their_steps_mask(&device));
    inject_capture(None);
    assert_eq!(right.expect("records and replays all the same"), 0);
}
