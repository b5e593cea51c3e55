//! Dropout whose masks a recorded training step draws afresh on every replay.
//!
//! Burn's `Dropout` draws each mask from a seed the host passes to the kernel at launch
//! (cubek-random), and a recording keeps that seed: every replay would drop the same units.
//! [`DeviceDropout`] draws its masks on the device from a counter-based hash instead: an
//! element is kept or dropped by a function of a seed held in a device tensor, the call's site
//! number and the element's index. [`DeviceDropout::next_step`] writes the step's seed before
//! each step, outside any recording (as `DeviceAdam::next_step` writes the learning rate), so a
//! replay reads the new seed and draws new masks; eager steps and replays of the same step
//! draw the same masks.
//!
//! The arithmetic on the data is Burn's `Dropout::forward`: `x * mask * (1 / (1 - p))` with a
//! 0/1 mask, under the same conditions (training flag on, an autodiff device, `p > 0`). Only
//! the masks differ from Burn's: a model using it computes other numbers than the same model
//! with Burn's dropout from the same seed (the same model in distribution), so it is a model
//! definition of its own, never a plan applied to one that uses Burn's.
//!
//! The hash is Wellons' `lowbias32` on the 32-bit integers Burn's int tensors hold, with the
//! logical shifts written as an arithmetic shift and a mask, and the multiplications wrapping
//! as GPU integer arithmetic does (`lowbias32` here is the host reference the tests compare
//! against). An element's mask bit: `lowbias32(lowbias32(index) ^ key) & 0xFFFFFF` against
//! `p * 2^24`, where `key` is the step's seed xor a constant per site. The first hash of each
//! index is computed once per shape and kept; the rest is integer arithmetic, which fuses with
//! the multiplication by the mask.
use crate::capture::StableInput;
use burn::config::Config;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

/// Dropout masks drawn on the device from a seed refreshed in place (see the module docs).
pub struct DeviceDropout {
    /// The current step's seed: one i32 in a device buffer written in place each step.
    seed: StableInput<1, Int>,
    /// The host generator of the seeds (SplitMix64 state): a run from the same seed draws the
    /// same masks.
    state: AtomicU64,
    /// The seed last drawn (the test-only baked-seed fault reads it on the host).
    current: AtomicI32,
    /// Per device and shape, `lowbias32` of every element's index (kept: a step reads, never
    /// writes it).
    hashed_indices: Mutex<HashMap<(String, Vec<usize>), Tensor<1, Int>>>,
}

/// Bits of the hash compared with the drop probability.
const MASK_BITS: u32 = 24;

impl DeviceDropout {
    /// Masks from the stream seeded by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            seed: StableInput::default(),
            state: AtomicU64::new(seed),
            current: AtomicI32::new(0),
            hashed_indices: Mutex::new(HashMap::new()),
        }
    }

    /// Begins the next step: writes its seed into the device tensor the masks read (in place
    /// after the first step). Call it before each step, outside any recording; `device` is the
    /// device the step's tensors live on (the autodiff device in training).
    pub fn next_step(&mut self, device: &Device) -> Result<(), String> {
        let seed = self.next_seed(device);
        self.seed.write_or_adopt(seed)
    }

    /// The next step's seed as a new tensor, for a step that takes it as one of its inputs
    /// (a user's step under `crate::CapturedTraining`, which writes its inputs in place before
    /// each replay) and hands it to [`Self::forward_seeded`]. Make it outside any recording.
    pub fn next_seed(&self, device: &Device) -> Tensor<1, Int> {
        let mut state = self.state.load(Ordering::Relaxed);
        let seed = splitmix64(&mut state) as u32 as i32;
        self.state.store(state, Ordering::Relaxed);
        self.current.store(seed, Ordering::Relaxed);
        Tensor::from_data(TensorData::new(vec![seed], [1]), device)
    }

    /// `dropout`'s forward with a mask drawn here: `x` unchanged where Burn's would leave it
    /// unchanged (training flag off, no autodiff device, probability 0). Each call in a step
    /// needs a `site` of its own, the same one in every step: two calls with one site draw
    /// one mask.
    pub fn forward<const D: usize>(&self, dropout: &Dropout, x: Tensor<D>, site: u32) -> Tensor<D> {
        match is_off(dropout, &x) {
            true => x,
            false => self.forward_seeded(dropout, x, &self.seed.get(), site),
        }
    }

    /// [`Self::forward`] with the step's seed given ([`Self::next_seed`]) instead of held.
    pub fn forward_seeded<const D: usize>(
        &self,
        dropout: &Dropout,
        x: Tensor<D>,
        seed: &Tensor<1, Int>,
        site: u32,
    ) -> Tensor<D> {
        if is_off(dropout, &x) {
            return x;
        }
        let keep = self.keep_ints(&x.dims(), dropout.prob, seed, site, &x.device());
        drop_with(dropout, x, keep)
    }

    /// The mask a call at `site` draws this step for `dims` (true: kept).
    pub fn keep_mask<const D: usize>(
        &self,
        dims: &[usize; D],
        prob: f64,
        site: u32,
        device: &Device,
    ) -> Tensor<D, Bool> {
        self.keep_ints(dims, prob, &self.seed.get(), site, device).equal_elem(1)
    }

    /// [`keep_ints`] with this instance's kept index hashes.
    fn keep_ints<const D: usize>(
        &self,
        dims: &[usize; D],
        prob: f64,
        seed: &Tensor<1, Int>,
        site: u32,
        device: &Device,
    ) -> Tensor<D, Int> {
        let seed = match crate::capture::baked_dropout_seed() {
            // Test only: the seed as a host scalar, which a recording keeps (Burn's dropout).
            true => seed.zeros_like().add_scalar(self.current.load(Ordering::Relaxed)),
            false => seed.clone(),
        };
        keep_ints(hashed_indices(&self.hashed_indices, dims, device), dims, prob, seed, site)
    }

    /// Device memory the kept index hashes hold, in bytes.
    pub fn memory(&self) -> usize {
        let kept = self.hashed_indices.lock().unwrap_or_else(|e| e.into_inner());
        kept.values().map(|t| t.shape().num_elements() * 4).sum()
    }
}

impl std::fmt::Debug for DeviceDropout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceDropout").field("state", &self.state.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

/// Burn's `DropoutConfig` for dropout a recorded training step can hold: a [`SeededDropout`]
/// module, its masks drawn on the device from the step's seed (see the module docs).
#[derive(Config, Debug)]
pub struct SeededDropoutConfig {
    /// The probability of dropping an element (Burn's `DropoutConfig::prob`).
    pub prob: f64,
    /// Which of the model's dropout layers this is: each layer its own number, the same in every
    /// instance of the model (two layers with one number draw one mask).
    #[config(default = 0)]
    pub site: u32,
}

impl SeededDropoutConfig {
    /// The module; panics on a probability outside [0, 1), as Burn's `DropoutConfig::init` does.
    pub fn init(&self) -> SeededDropout {
        SeededDropout { dropout: DropoutConfig::new(self.prob).init(), site: self.site }
    }
}

/// Burn's `Dropout` as a module whose masks a recorded training step draws afresh on every
/// replay: [`SeededDropout::forward`] takes the step's seed (a tensor made before each call by
/// [`DeviceDropout::next_seed`] and handed to the step with its batch, which
/// `crate::CapturedTraining` writes in place). Off exactly where Burn's is off (evaluation, no
/// autodiff device, probability 0); Burn's `Dropout` inside, so `Module` tools see its flag.
#[derive(Module, Debug)]
pub struct SeededDropout {
    pub dropout: Dropout,
    pub site: u32,
}

impl SeededDropout {
    /// Burn's `Dropout::forward` with the mask drawn from `seed` at this layer's site.
    pub fn forward<const D: usize>(&self, x: Tensor<D>, seed: &Tensor<1, Int>) -> Tensor<D> {
        if is_off(&self.dropout, &x) {
            return x;
        }
        // The index hashes are kept per device and shape for the process (a module holds no
        // cache); a step's first eager calls fill them, outside any recording.
        static HASHED: LazyLock<Mutex<HashMap<(String, Vec<usize>), Tensor<1, Int>>>> = LazyLock::new(Default::default);
        let dims = x.dims();
        let keep =
            keep_ints(hashed_indices(&HASHED, &dims, &x.device()), &dims, self.dropout.prob, seed.clone(), self.site);
        drop_with(&self.dropout, x, keep)
    }
}

/// Burn's dropout arithmetic with a 0/1 mask: `x * mask * (1 / (1 - p))`.
fn drop_with<const D: usize>(dropout: &Dropout, x: Tensor<D>, keep: Tensor<D, Int>) -> Tensor<D> {
    let prob_keep = 1.0 - dropout.prob;
    let x = x * keep.float();
    x * (1.0 / prob_keep)
}

/// The mask as 1 (kept) and 0 (dropped), all in integer arithmetic so that the hash, the
/// comparison and the conversion to floats fuse into one kernel with the multiplication.
fn keep_ints<const D: usize>(
    hashed: Tensor<1, Int>,
    dims: &[usize; D],
    prob: f64,
    seed: Tensor<1, Int>,
    site: u32,
) -> Tensor<D, Int> {
    let keyed = hashed.reshape(*dims).bitwise_xor(seed.reshape([1; D])).bitwise_xor_scalar(site_offset(site));
    let bits = lowbias32_tensor(keyed).bitwise_and_scalar((1i32 << MASK_BITS) - 1);
    // bits - threshold is negative exactly where the element is dropped (both are below
    // 2^24): its sign bit, shifted down, is -1 there and 0 elsewhere.
    bits.sub_scalar(drop_threshold(prob)).bitwise_right_shift_scalar(31).add_scalar(1)
}

/// `lowbias32` of every element's index for `dims` on `device`, computed once and kept in `kept`.
fn hashed_indices<const D: usize>(
    kept: &Mutex<HashMap<(String, Vec<usize>), Tensor<1, Int>>>,
    dims: &[usize; D],
    device: &Device,
) -> Tensor<1, Int> {
    let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
    kept.entry((format!("{device:?}"), dims.to_vec()))
        .or_insert_with(|| {
            let n: usize = dims.iter().product();
            lowbias32_tensor(Tensor::<1, Int>::arange(0..n as i64, device))
        })
        .clone()
}

/// Where Burn's `Dropout::forward` returns its input unchanged.
fn is_off<const D: usize>(dropout: &Dropout, x: &Tensor<D>) -> bool {
    !dropout.training.is_enabled() || !x.device().is_autodiff() || dropout.prob == 0.0
}

/// What a site mixes into the step's seed: far apart for neighbouring sites (golden-ratio steps).
fn site_offset(site: u32) -> i32 {
    site.wrapping_add(1).wrapping_mul(0x9E37_79B9) as i32
}

/// An element is dropped when its hash bits are below this.
fn drop_threshold(prob: f64) -> i32 {
    (prob * f64::from(1u32 << MASK_BITS)).round() as i32
}

/// Wellons' `lowbias32` on i32 tensors (see the module docs), elementwise.
fn lowbias32_tensor<const D: usize>(x: Tensor<D, Int>) -> Tensor<D, Int> {
    let shift_xor = |x: Tensor<D, Int>, by: i32| {
        let shifted = x.clone().bitwise_right_shift_scalar(by).bitwise_and_scalar(((1u32 << (32 - by)) - 1) as i32);
        x.bitwise_xor(shifted)
    };
    let x = shift_xor(x, 16).mul_scalar(0x7feb_352d_u32 as i32);
    let x = shift_xor(x, 15).mul_scalar(0x846c_a68b_u32 as i32);
    shift_xor(x, 16)
}

/// Wellons' `lowbias32`: the host reference of [`lowbias32_tensor`].
pub fn lowbias32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// Whether the element at `index` is kept under `seed` at `site` with drop probability
/// `prob`: the host reference of [`DeviceDropout::keep_mask`].
pub fn keeps(seed: i32, site: u32, index: u32, prob: f64) -> bool {
    let key = (seed ^ site_offset(site)) as u32;
    let bits = lowbias32(lowbias32(index) ^ key) & ((1 << MASK_BITS) - 1);
    bits as i32 >= drop_threshold(prob)
}

/// SplitMix64: the host stream of step seeds.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed [`DeviceDropout::next_step`] writes for the `step`-th step (from 1) of a stream
/// seeded by `seed`: what a test compares the device's masks with.
pub fn step_seed(seed: u64, step: usize) -> i32 {
    let mut state = seed;
    (0..step).map(|_| splitmix64(&mut state)).last().unwrap_or(0) as u32 as i32
}
