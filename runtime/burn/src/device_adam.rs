//! Burn's Adam and AdamW with their whole state held in the device buffers it started in, so
//! that a recorded training step replays correctly (captured execution, training regime).
//!
//! Burn's optimizers return new tensors: parameters and moments move to other buffers each step
//! (which ones depends on fusion's aliasing), so a replay would read the buffers the recording
//! saw, now stale. And they bake their step-dependent scalars (the learning rate, the bias
//! corrections, AdamW's decay) into the kernels as host constants, so a replay would repeat the
//! recorded step's. [`HeldAdam`] is a [`burn::optim::Optimizer`] computing Burn's update, in the
//! same order of floating-point operations, with two differences:
//! * every parameter and its moments are written back into their own buffers (a whole-tensor
//!   `slice_assign` on a uniquely owned tensor, [`crate::capture::write_in_place`]);
//! * the step's scalars are device tensors written before the step, outside any recording, from
//!   the same host arithmetic Burn does. A learning-rate schedule is then honoured by replays as
//!   by eager steps.
//!
//! [`DeviceAdam`] is the whole-module optimizer a captured step uses: Burn's own
//! [`ModuleOptimizer`] over a [`HeldAdam`] (so gradient clipping is Burn's, and its records are
//! Burn's [`OptimizerRecord`], interchangeable with Burn's `Adam`/`AdamW`), plus the call that
//! writes the step's scalars ([`DeviceAdam::next_step`]). Converted into a [`ModuleOptimizer`] it
//! goes wherever Burn's optimizers go (burn-train's `Learner` included) and computes eagerly what
//! Burn's computes.
//!
//! Nothing here changes Burn's own execution: a model uses it only when it chooses to.
use crate::capture::{StableInput, write_or_adopt};
use burn::module::Module;
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{
    AdamConfig, AdamWConfig, AdaptiveMomentumState, GradientsParams, LearningRate, ModuleOptimizer, Optimizer,
    OptimizerRecord, RecordState, StateSink, StateSource, join_path,
};
use burn::tensor::{Device, Tensor, TensorData};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Which of Burn's update rules, with its settings.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Rule {
    /// Burn's `Adam`: L2 weight decay (`grad + penalty * param`) when `penalty` is set.
    Adam { penalty: Option<f32> },
    /// Burn's `AdamW`: decoupled weight decay, optionally cautious (no decay where it works
    /// against the update's direction).
    AdamW { weight_decay: f32, cautious: bool },
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Settings {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    amsgrad: bool,
    rule: Rule,
}

impl Settings {
    /// The step's scalars at step `time` and rate `lr`, from the host arithmetic Burn does:
    /// Adam `[lr, combined_factor, epsilon * sqrt(1 - beta_2^t)]`; AdamW
    /// `[lr, 1 - beta_1^t, 1 - beta_2^t, decay]` with decay `1 - lr * weight_decay` (cautious:
    /// `lr * weight_decay`). Burn converts its f64 rate products to f32 as they are used.
    fn scalars(&self, time: usize, lr: LearningRate) -> Vec<f32> {
        let t = time as i32;
        match self.rule {
            Rule::Adam { .. } => {
                let bias_correction2_sqrt = (1.0 - self.beta_2.powi(t)).sqrt();
                let combined_factor = bias_correction2_sqrt / (1.0 - self.beta_1.powi(t));
                vec![lr as f32, combined_factor, self.epsilon * bias_correction2_sqrt]
            }
            Rule::AdamW { weight_decay, cautious } => {
                let decay_rate = lr * weight_decay as f64;
                let decay = match cautious {
                    true => decay_rate as f32,
                    false => (1.0 - decay_rate) as f32,
                };
                vec![lr as f32, 1f32 - self.beta_1.powi(t), 1f32 - self.beta_2.powi(t), decay]
            }
        }
    }
}

/// What a [`HeldAdam`] and its clones share: the step's scalars and the step count.
struct Held {
    /// Steps are begun by [`DeviceAdam::next_step`] (one count and rate for every parameter);
    /// otherwise each parameter counts its own steps and takes the rate it is handed, as Burn's
    /// optimizers do.
    managed: bool,
    /// Steps begun so far (managed).
    time: usize,
    /// Steps applied so far (managed): `time`, or one less between [`DeviceAdam::next_step`]
    /// and the step's update or replay. What a record says every parameter has taken.
    clock: Arc<AtomicUsize>,
    /// The (step, rate) the scalars hold.
    written: Option<(usize, LearningRate)>,
    scalars: Vec<StableInput<1>>,
    /// The first write that could not be done in place (the step then went to a new buffer).
    failure: Option<String>,
    /// Whether updates are written back in place (what a recorded step needs) or assigned as
    /// Burn's optimizers assign them (the same values, fewer kernels).
    in_place: bool,
    /// Test-only: never write back (what a plain optimizer does), so the verification gate's
    /// refusal of such a replay can be tested.
    write_back: bool,
}

impl Held {
    fn new(in_place: bool) -> Self {
        Held {
            managed: false,
            time: 0,
            clock: Arc::new(AtomicUsize::new(0)),
            written: None,
            scalars: Vec::new(),
            failure: None,
            in_place,
            write_back: !crate::capture::skip_write_back(),
        }
    }

    fn applied(&self) -> usize {
        self.clock.load(Ordering::Relaxed)
    }

    fn set_applied(&mut self, applied: usize) {
        self.clock.store(applied, Ordering::Relaxed);
    }

    /// Writes the scalars for (`time`, `lr`) unless they hold them already: in place after the
    /// first write. Every scalar is written even when an earlier one could not be written in
    /// place (eager steps stay right; a recording would not see it, hence the error).
    fn write_scalars(
        &mut self,
        settings: &Settings,
        time: usize,
        lr: LearningRate,
        device: &Device,
    ) -> Result<(), String> {
        if self.written == Some((time, lr)) {
            return Ok(());
        }
        let values = settings.scalars(time, lr);
        self.scalars.resize_with(values.len(), StableInput::default);
        let mut result = Ok(());
        for (held, v) in self.scalars.iter_mut().zip(values) {
            let written = held.write_or_adopt(Tensor::<1>::from_data(TensorData::new(vec![v], [1]), device));
            result = result.and(written);
        }
        self.written = Some((time, lr));
        result.map_err(|e| format!("the step's scalars: {e}"))
    }

    /// Assigns `fresh` to `held`: written into `held`'s buffer when updates are written back.
    fn store<const D: usize>(&mut self, held: &mut Tensor<D>, fresh: Tensor<D>, what: &str) {
        if !self.write_back || !self.in_place {
            *held = fresh;
            return;
        }
        if let Err(e) = write_or_adopt(held, fresh) {
            self.failure.get_or_insert(format!("{what}: {e}"));
        }
    }
}

/// Burn's Adam or AdamW as a [`burn::optim::Optimizer`] whose state stays in its buffers and
/// whose step scalars are device tensors (see the module docs). `ModuleOptimizer::from` takes
/// it as it takes Burn's `Adam`; [`DeviceAdam`] is the whole-module form captured steps use.
#[derive(Clone)]
pub struct HeldAdam {
    settings: Settings,
    held: Arc<Mutex<Held>>,
}

impl HeldAdam {
    /// `AdamConfig::build()`'s Adam (weight decay and AMSGrad included; gradient clipping is the
    /// module optimizer's, see [`DeviceAdam::from_config`]). Updates are assigned, as Burn's are.
    pub fn from_config(config: &AdamConfig) -> Self {
        Self::with(adam_settings(config).0, false)
    }

    /// `AdamWConfig::build()`'s AdamW (cautious weight decay and AMSGrad included).
    pub fn from_adamw(config: &AdamWConfig) -> Self {
        Self::with(adamw_settings(config).0, false)
    }

    fn with(settings: Settings, in_place: bool) -> Self {
        HeldAdam { settings, held: Arc::new(Mutex::new(Held::new(in_place))) }
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        // A panic inside a step leaves nothing half-written that a later step would misread.
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A parameter's state: Burn's `AdamState`/`AdamWState` layout (its records read and write
/// the same names, `momentum.time`, `momentum.moment_1`, ...), with the step count a managed
/// optimizer keeps for every parameter (replays advance no host counter).
#[derive(Clone)]
pub struct DeviceAdamState<const D: usize> {
    pub momentum: AdaptiveMomentumState<D>,
    clock: Option<Arc<AtomicUsize>>,
}

impl<const D: usize> DeviceAdamState<D> {
    /// Zero moments: the first step's `0 * beta + g * (1 - beta)` equals Burn's `g * (1 - beta)`.
    fn zeros(value: &Tensor<D>, amsgrad: bool) -> Self {
        let momentum = AdaptiveMomentumState {
            time: 0,
            moment_1: value.zeros_like(),
            moment_2: value.zeros_like(),
            max_moment_2: amsgrad.then(|| value.zeros_like()),
        };
        DeviceAdamState { momentum, clock: None }
    }

    fn time(&self) -> usize {
        let counted = self.clock.as_ref().map_or(0, |c| c.load(Ordering::Relaxed));
        self.momentum.time.max(counted)
    }
}

impl<const D: usize> RecordState for DeviceAdamState<D> {
    fn state_flatten(&self, prefix: &str, out: &mut StateSink) {
        let mut momentum = self.momentum.clone();
        momentum.time = self.time();
        momentum.state_flatten(&join_path(prefix, "momentum"), out);
    }

    fn state_unflatten(prefix: &str, src: &mut StateSource, device: &Device) -> Option<Self> {
        let momentum = AdaptiveMomentumState::state_unflatten(&join_path(prefix, "momentum"), src, device)?;
        Some(DeviceAdamState { momentum, clock: None })
    }
}

impl Optimizer for HeldAdam {
    type State<const D: usize> = DeviceAdamState<D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<D>, Option<Self::State<D>>) {
        let s = self.settings;
        let mut held = self.held();
        let counted = state.as_ref().map_or(0, |state| state.momentum.time);
        let time = match held.managed {
            // A state loaded from a record can be ahead of a fresh optimizer's count.
            true => held.time.max(counted + 1),
            false => counted + 1,
        };
        if held.managed && time > held.time {
            held.time = time;
        }
        if let Err(e) = held.write_scalars(&s, time, lr, &tensor.device()) {
            held.failure.get_or_insert(e);
        }
        // The scalars' reshapes first, then a new parameter's zero moments: the operations a
        // recorded step registers keep this order (plans name operations by their index).
        // Each is read once and moved into its operation, as a constant would be.
        let mut scalars: Vec<Option<Tensor<D>>> =
            held.scalars.iter().map(|held| Some(held.get().reshape([1; D]))).collect();
        let mut scalar = |i: usize| scalars[i].take().expect("each step scalar is read once");
        let mut state = state.unwrap_or_else(|| DeviceAdamState::zeros(&tensor, s.amsgrad));
        // Burn's transforms, operation for operation, with the step's scalars read on the device.
        let grad = match s.rule {
            Rule::Adam { penalty: Some(p) } => tensor.clone().mul_scalar(p).add(grad),
            _ => grad,
        };
        let momentum = &mut state.momentum;
        let m = momentum.moment_1.clone().mul_scalar(s.beta_1).add(grad.clone().mul_scalar(1.0 - s.beta_1));
        let v = momentum.moment_2.clone().mul_scalar(s.beta_2).add(grad.square().mul_scalar(1.0 - s.beta_2));
        let v_max = momentum.max_moment_2.as_ref().map(|max| max.clone().max_pair(v.clone()));
        let v_used = v_max.clone().unwrap_or_else(|| v.clone());
        let updated = match s.rule {
            Rule::Adam { .. } => {
                let delta = m.clone().mul(scalar(1)).div(v_used.sqrt().add(scalar(2)));
                tensor.clone() - delta.mul(scalar(0))
            }
            Rule::AdamW { cautious, .. } => {
                let delta = m.clone().div(scalar(1)).div(v_used.div(scalar(2)).sqrt().add_scalar(s.epsilon));
                let decayed = match cautious {
                    true => {
                        let differ =
                            tensor.clone().greater_equal_scalar(0.0).not_equal(m.clone().greater_equal_scalar(0.0));
                        tensor.clone() - tensor.clone().mul(scalar(3)).mask_fill(differ, 0.0)
                    }
                    false => tensor.clone().mul(scalar(3)),
                };
                decayed - delta.mul(scalar(0))
            }
        };
        held.store(&mut momentum.moment_1, m, "first moment");
        held.store(&mut momentum.moment_2, v, "second moment");
        if let (Some(max), Some(fresh)) = (momentum.max_moment_2.as_mut(), v_max) {
            held.store(max, fresh, "maximum second moment");
        }
        momentum.time = time;
        state.clock = held.managed.then(|| held.clock.clone());
        let mut value = tensor;
        held.store(&mut value, updated, "parameter");
        (value, Some(state))
    }

    fn to_device<const D: usize>(mut state: Self::State<D>, device: &Device) -> Self::State<D> {
        state.momentum = state.momentum.to_device(device);
        state
    }
}

/// Burn's Adam or AdamW for a whole module, its state held in place; the optimizer of
/// [`crate::CapturedTraining`] (see the module docs).
pub struct DeviceAdam {
    held: HeldAdam,
    clipping: Option<GradientClippingConfig>,
    optim: ModuleOptimizer,
}

impl DeviceAdam {
    /// Adam with these betas and epsilon, no weight decay, AMSGrad or clipping.
    pub fn new(beta_1: f32, beta_2: f32, epsilon: f32) -> Self {
        Self::build(Settings { beta_1, beta_2, epsilon, amsgrad: false, rule: Rule::Adam { penalty: None } }, None)
    }

    /// Burn's `AdamConfig` as a `DeviceAdam`: every setting (betas, epsilon, weight decay,
    /// AMSGrad, gradient clipping), computed as `AdamConfig::init()`'s optimizer computes it.
    pub fn from_config(config: &AdamConfig) -> Self {
        let (settings, clipping) = adam_settings(config);
        Self::build(settings, clipping)
    }

    /// Burn's `AdamWConfig` as a `DeviceAdam`, as [`DeviceAdam::from_config`] for `AdamConfig`.
    pub fn from_adamw(config: &AdamWConfig) -> Self {
        let (settings, clipping) = adamw_settings(config);
        Self::build(settings, clipping)
    }

    fn build(settings: Settings, clipping: Option<GradientClippingConfig>) -> Self {
        let held = HeldAdam::with(settings, true);
        let mut optim = ModuleOptimizer::from(held.clone());
        if let Some(config) = &clipping {
            optim = optim.with_grad_clipping(config.init());
        }
        DeviceAdam { held, clipping, optim }
    }

    /// Whether the next updates write parameters and moments back into their buffers (on, the
    /// default: what a recorded step needs) or assign the new tensors, as Burn's optimizer
    /// does (the same values, fewer kernels: for eager steps no recording replays).
    pub fn write_in_place(&mut self, on: bool) {
        self.held.held().in_place = on;
    }

    /// Steps begun so far.
    pub fn time(&self) -> usize {
        self.held.held().time
    }

    /// Begins the next step at learning rate `lr`: writes its scalars into the device tensors
    /// the update reads (in place after the first step). Call it before each step, outside any
    /// recording; `device` is the plain (non-autodiff) device.
    pub fn next_step(&mut self, lr: LearningRate, device: &Device) -> Result<(), String> {
        let mut held = self.held.held();
        held.managed = true;
        // The step before this one is applied (by its update, or by a replay no host code saw).
        let time = held.time;
        held.set_applied(time);
        held.time = time + 1;
        held.write_scalars(&self.held.settings, time + 1, lr, device)
    }

    /// The begun step is applied: by [`Self::update`], or by a recording's replay, which no host
    /// code sees (the runner says so), so that a record made now counts it.
    pub(crate) fn mark_applied(&mut self) {
        let mut held = self.held.held();
        let time = held.time;
        held.set_applied(time);
    }

    /// Applies one update to every parameter of `module` that has a gradient in `grads`;
    /// `Err` when a write could not be done in place (the update is applied all the same, to
    /// new buffers, which a recording would not see).
    pub fn step<M: Module>(&mut self, module: M, grads: GradientsParams) -> (M, Result<(), String>) {
        let module = self.update(module, grads);
        (module, self.take_failure().map_or(Ok(()), Err))
    }

    /// [`Self::step`] keeping a failed in-place write for [`Self::take_failure`] (the form a
    /// step handed to `crate::CapturedTraining` uses: it takes the failure itself).
    pub fn update<M: Module>(&mut self, module: M, grads: GradientsParams) -> M {
        let written = self.held.held().written;
        let (_, lr) = written.expect("DeviceAdam::next_step comes before each step");
        let module = self.optim.step(lr, module, grads);
        self.mark_applied();
        module
    }

    /// The first write since the last call that could not be done in place, if any.
    pub fn take_failure(&mut self) -> Option<String> {
        self.held.held().failure.take()
    }

    /// The state as Burn's optimizers record it (the same names as Burn's `Adam` and `AdamW`,
    /// so either resumes the other's checkpoint); reads the moments back (a sync).
    pub fn to_record(&self) -> OptimizerRecord {
        self.optim.to_record()
    }

    /// Resumes from `record` (this optimizer's, or Burn's `Adam`/`AdamW`'s): the moments and
    /// step counts; the next step continues the count.
    pub fn load_record(mut self, record: OptimizerRecord) -> Self {
        self.optim = self.optim.load_record(record);
        self
    }

    /// An independent copy: the same step count, scalars and moments, in new buffers (the
    /// moments pass through the host: a sync).
    pub fn duplicate(&self) -> Self {
        let mut copy = Self::build(self.held.settings, self.clipping.clone());
        copy.optim = copy.optim.load_record(self.to_record());
        {
            let (from, mut to) = (self.held.held(), copy.held.held());
            to.managed = from.managed;
            to.time = from.time;
            let applied = from.applied();
            to.set_applied(applied);
            to.in_place = from.in_place;
            to.write_back = from.write_back;
            to.written = from.written;
            to.scalars = from
                .scalars
                .iter()
                .map(|s| {
                    let mut c = StableInput::default();
                    let _ = c.write(crate::params::copy_tensor(&s.get()));
                    c
                })
                .collect();
        }
        copy
    }
}

/// Burn's module optimizer over this `DeviceAdam`'s state: each parameter counts its steps and
/// takes the rate it is handed, updates are assigned (eager steps compute what Burn's Adam or
/// AdamW computes). For burn-train's `Learner` and any code written for Burn's optimizers.
impl From<DeviceAdam> for ModuleOptimizer {
    fn from(adam: DeviceAdam) -> Self {
        let mut held = adam.held.held();
        held.managed = false;
        held.in_place = false;
        drop(held);
        adam.optim
    }
}

/// Config fields Burn keeps private, read through their serde form (a `Config` serialises
/// every field).
#[derive(serde::Deserialize)]
struct AdamFields {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    amsgrad: bool,
    weight_decay: Option<WeightDecayFields>,
    grad_clipping: Option<GradientClippingConfig>,
}

#[derive(serde::Deserialize)]
struct WeightDecayFields {
    penalty: f32,
}

#[derive(serde::Deserialize)]
struct AdamWFields {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    weight_decay: f32,
    cautious_weight_decay: bool,
    amsgrad: bool,
    grad_clipping: Option<GradientClippingConfig>,
}

/// A config's fields through its serde form. Burn's configs serialise every field, so this
/// fails only if Burn renames one: a programming error caught by the tests below.
fn fields<C: serde::Serialize, F: serde::de::DeserializeOwned>(config: &C) -> F {
    let text = ron::to_string(config).expect("a Burn config serialises");
    ron::from_str(&text).unwrap_or_else(|e| panic!("Burn's optimizer config changed its fields ({text}): {e}"))
}

fn adam_settings(config: &AdamConfig) -> (Settings, Option<GradientClippingConfig>) {
    let f: AdamFields = fields(config);
    let rule = Rule::Adam { penalty: f.weight_decay.map(|w| w.penalty) };
    (Settings { beta_1: f.beta_1, beta_2: f.beta_2, epsilon: f.epsilon, amsgrad: f.amsgrad, rule }, f.grad_clipping)
}

fn adamw_settings(config: &AdamWConfig) -> (Settings, Option<GradientClippingConfig>) {
    let f: AdamWFields = fields(config);
    let rule = Rule::AdamW { weight_decay: f.weight_decay, cautious: f.cautious_weight_decay };
    (Settings { beta_1: f.beta_1, beta_2: f.beta_2, epsilon: f.epsilon, amsgrad: f.amsgrad, rule }, f.grad_clipping)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::optim::decay::WeightDecayConfig;

    #[test]
    fn burns_adam_config_gives_every_setting() {
        let (s, clip) = adam_settings(&AdamConfig::new());
        assert_eq!((s.beta_1, s.beta_2, s.epsilon, s.amsgrad), (0.9, 0.999, 1e-5, false));
        assert_eq!(s.rule, Rule::Adam { penalty: None });
        assert!(clip.is_none());
        let config = AdamConfig::new()
            .with_beta_1(0.8)
            .with_beta_2(0.99)
            .with_epsilon(1e-8)
            .with_amsgrad(true)
            .with_weight_decay(Some(WeightDecayConfig::new(1e-4)))
            .with_grad_clipping(Some(GradientClippingConfig::Norm(1.0)));
        let (s, clip) = adam_settings(&config);
        assert_eq!((s.beta_1, s.beta_2, s.epsilon, s.amsgrad), (0.8, 0.99, 1e-8, true));
        assert_eq!(s.rule, Rule::Adam { penalty: Some(1e-4) });
        assert!(matches!(clip, Some(GradientClippingConfig::Norm(n)) if n == 1.0));
    }

    #[test]
    fn burns_adamw_config_gives_every_setting() {
        let (s, clip) = adamw_settings(&AdamWConfig::new());
        assert_eq!((s.beta_1, s.beta_2, s.epsilon, s.amsgrad), (0.9, 0.999, 1e-5, false));
        assert_eq!(s.rule, Rule::AdamW { weight_decay: 1e-4, cautious: false });
        assert!(clip.is_none());
        let config = AdamWConfig::new()
            .with_weight_decay(0.05)
            .with_cautious_weight_decay(true)
            .with_grad_clipping(Some(GradientClippingConfig::Value(0.5)));
        let (s, clip) = adamw_settings(&config);
        assert_eq!(s.rule, Rule::AdamW { weight_decay: 0.05, cautious: true });
        assert!(matches!(clip, Some(GradientClippingConfig::Value(v)) if v == 0.5));
    }

    #[test]
    fn step_scalars_are_burns_host_arithmetic() {
        // At run time, as Burn computes them (a constant-folded `powi` can round differently).
        let (b1, b2) = (std::hint::black_box(0.9f32), std::hint::black_box(0.999f32));
        let adam = adam_settings(&AdamConfig::new()).0;
        let [lr, factor, eps] = adam.scalars(3, 1e-3)[..] else { panic!() };
        let bc2 = (1.0 - b2.powi(3)).sqrt();
        assert_eq!((lr, factor, eps), (1e-3, bc2 / (1.0 - b1.powi(3)), 1e-5 * bc2));
        let adamw = adamw_settings(&AdamWConfig::new().with_weight_decay(0.5)).0;
        let [lr, c1, c2, decay] = adamw.scalars(2, 0.1)[..] else { panic!() };
        assert_eq!((lr, c1, c2, decay), (0.1, 1.0 - b1.powi(2), 1.0 - b2.powi(2), (1.0 - 0.1 * 0.5f64) as f32));
    }
}
