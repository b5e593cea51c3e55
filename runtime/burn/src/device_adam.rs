//! Adam whose whole state stays in the device buffers it started in, so that a recorded
//! training step replays correctly (captured execution, training regime).
//!
//! Burn's `ModuleOptimizer` returns new tensors: parameters and moments move to other buffers
//! each step (which ones depends on fusion's aliasing), so a replay would read the buffers the
//! recording saw, now stale. And Burn's Adam bakes its step-dependent scalars (the learning
//! rate, the bias corrections) into the kernels as host constants, so a replay would repeat
//! the recorded step's. [`DeviceAdam`] computes the same update, in the same order of
//! floating-point operations, with two differences:
//! * every parameter and both moments are written back into their own buffers (a whole-tensor
//!   `slice_assign` on a uniquely owned tensor, [`crate::capture::write_in_place`]);
//! * the learning rate and the two bias-correction factors are device tensors that
//!   [`DeviceAdam::next_step`] writes before each step, outside any recording, from the same
//!   f32 host arithmetic Burn's Adam does. A learning-rate schedule is then honoured by
//!   replays as by eager steps.
//!
//! A step no recording will replay need not write back: with [`DeviceAdam::write_in_place`]
//! off, the update is assigned as Burn's optimizer assigns it (the same values, without the
//! whole-tensor writes, which cost an eager step a kernel per tensor). Models turn it on for the
//! launches they record.
//!
//! Nothing here changes Burn's own execution: a model uses it only when it is captured.
use crate::capture::{StableInput, write_or_adopt};
use burn::module::{Module, ModuleMapper, Param, ParamId};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Tensor, TensorData};
use std::any::Any;
use std::collections::HashMap;

/// One parameter's two moments (`(Tensor<D>, Tensor<D>)` for the parameter's rank D), with the
/// function that copies them into new buffers (captured training checks its first replays
/// against an eager copy: `crate::CapturedTraining`).
struct Moments {
    held: Box<dyn Any>,
    copy: fn(&dyn Any) -> Box<dyn Any>,
}

impl Moments {
    fn zeros<const D: usize>(value: &Tensor<D>) -> Self {
        Moments { held: Box::new((value.zeros_like(), value.zeros_like())), copy: copy_moments::<D> }
    }

    fn of<const D: usize>(&mut self) -> &mut (Tensor<D>, Tensor<D>) {
        self.held.downcast_mut().expect("a parameter keeps its rank")
    }
}

fn copy_moments<const D: usize>(held: &dyn Any) -> Box<dyn Any> {
    let (m, v) = held.downcast_ref::<(Tensor<D>, Tensor<D>)>().expect("a parameter keeps its rank");
    Box::new((crate::params::copy_tensor(m), crate::params::copy_tensor(v)))
}

/// Adam (no weight decay, no AMSGrad) with its state held in place; see the module docs.
pub struct DeviceAdam {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    /// Steps begun so far (Burn's `AdaptiveMomentumState::time` after this step's update).
    time: usize,
    lr: StableInput<1>,
    /// `sqrt(1 - beta_2^t) / (1 - beta_1^t)`, Burn's `combined_factor`.
    factor: StableInput<1>,
    /// `epsilon * sqrt(1 - beta_2^t)`.
    epsilon_t: StableInput<1>,
    /// Per parameter, its two moments.
    moments: HashMap<ParamId, Moments>,
    /// The first write that could not be done in place (the step then went to a new buffer).
    failure: Option<String>,
    /// Test-only: assign the new tensors instead of writing them back (what a plain optimizer
    /// does), so the verification gate's refusal of such a replay can be tested.
    write_back: bool,
    /// Whether this step writes back in place ([`Self::write_in_place`]).
    in_place: bool,
}

impl DeviceAdam {
    pub fn new(beta_1: f32, beta_2: f32, epsilon: f32) -> Self {
        Self {
            beta_1,
            beta_2,
            epsilon,
            time: 0,
            lr: StableInput::default(),
            factor: StableInput::default(),
            epsilon_t: StableInput::default(),
            moments: HashMap::new(),
            failure: None,
            write_back: !crate::capture::skip_write_back(),
            in_place: true,
        }
    }

    /// Burn's `AdamConfig` as a `DeviceAdam`: the same betas and epsilon
    /// (`DeviceAdam::from_config(&AdamConfig::new())` is `AdamConfig::new().init()`'s Adam).
    /// `Err` naming the setting for what `DeviceAdam` does not compute: weight decay, AMSGrad
    /// and gradient clipping (a step with them is not recordable; run it with Burn's optimizer).
    pub fn from_config(config: &AdamConfig) -> Result<Self, String> {
        let (fields, text) = adam_fields(config)?;
        let unsupported: Vec<&str> = [
            (fields.weight_decay.is_some(), "weight decay"),
            (fields.amsgrad, "AMSGrad"),
            (fields.grad_clipping.is_some(), "gradient clipping"),
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
        .collect();
        if !unsupported.is_empty() {
            return Err(format!(
                "DeviceAdam does not compute Adam's {} (AdamConfig {text}); train with Burn's optimizer",
                unsupported.join(", ")
            ));
        }
        Ok(Self::new(fields.beta_1, fields.beta_2, fields.epsilon))
    }

    /// Whether the next updates write parameters and moments back into their buffers (on, the
    /// default: what a recorded step needs) or assign the new tensors, as Burn's optimizer
    /// does (the same values, fewer kernels: for eager steps no recording replays).
    pub fn write_in_place(&mut self, on: bool) {
        self.in_place = on;
    }

    /// Steps begun so far.
    pub fn time(&self) -> usize {
        self.time
    }

    /// Begins the next step at learning rate `lr`: writes its scalars into the device tensors
    /// the update reads (in place after the first step). Call it before each step, outside any
    /// recording; `device` is the plain (non-autodiff) device.
    pub fn next_step(&mut self, lr: f64, device: &Device) -> Result<(), String> {
        self.time += 1;
        let t = self.time as i32;
        // Burn's AdaptiveMomentum::transform, operation for operation.
        let bias_correction2_sqrt = (1.0 - self.beta_2.powi(t)).sqrt();
        let combined_factor = bias_correction2_sqrt / (1.0 - self.beta_1.powi(t));
        let scalar = |v: f32| Tensor::<1>::from_data(TensorData::new(vec![v], [1]), device);
        // Burn multiplies by the f64 rate converted to the tensor's element type. Each scalar
        // is written even when an earlier one could not be written in place (eager steps
        // stay right; a recording would not see it, hence the error).
        let lr = self.lr.write_or_adopt(scalar(lr as f32));
        let factor = self.factor.write_or_adopt(scalar(combined_factor));
        let epsilon = self.epsilon_t.write_or_adopt(scalar(self.epsilon * bias_correction2_sqrt));
        lr.and(factor).and(epsilon)
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
        assert!(self.time > 0, "DeviceAdam::next_step comes before each step");
        let mut mapper = Mapper { adam: self, grads };
        module.map(&mut mapper)
    }

    /// The first write since the last call that could not be done in place, if any.
    pub fn take_failure(&mut self) -> Option<String> {
        self.failure.take()
    }

    /// An independent copy: the same step count, scalars and moments, in new buffers (a sync).
    pub fn duplicate(&self) -> Self {
        let scalar = |s: &StableInput<1>| {
            let mut copy = StableInput::default();
            if s.is_written() {
                let _ = copy.write(crate::params::copy_tensor(&s.get()));
            }
            copy
        };
        let moments = self
            .moments
            .iter()
            .map(|(id, m)| (*id, Moments { held: (m.copy)(m.held.as_ref()), copy: m.copy }))
            .collect();
        Self {
            time: self.time,
            lr: scalar(&self.lr),
            factor: scalar(&self.factor),
            epsilon_t: scalar(&self.epsilon_t),
            moments,
            failure: None,
            ..*self
        }
    }

    fn store<const D: usize>(&mut self, held: &mut Tensor<D>, fresh: Tensor<D>, what: &str) {
        if !self.write_back || !self.in_place {
            *held = fresh;
            return;
        }
        if let Err(e) = write_or_adopt(held, fresh) {
            self.failure.get_or_insert(format!("{what}: {e}"));
        }
    }

    fn update_one<const D: usize>(&mut self, id: ParamId, value: &mut Tensor<D>, grad: Tensor<D>) {
        let (b1, b2) = (self.beta_1, self.beta_2);
        let scalar = |s: &StableInput<1>| s.get().reshape([1; D]);
        let (lr, factor, epsilon) = (scalar(&self.lr), scalar(&self.factor), scalar(&self.epsilon_t));
        let mut state = self.moments.remove(&id).unwrap_or_else(|| Moments::zeros(value));
        let (m, v) = state.of::<D>();
        // Zero moments make the first step's `0 * beta + g * (1 - beta)` equal Burn's `g * (1 - beta)`.
        let m_new = m.clone().mul_scalar(b1).add(grad.clone().mul_scalar(1.0 - b1));
        let v_new = v.clone().mul_scalar(b2).add(grad.square().mul_scalar(1.0 - b2));
        let delta = m_new.clone().mul(factor).div(v_new.clone().sqrt().add(epsilon)).mul(lr);
        let updated = value.clone() - delta;
        self.store(m, m_new, "first moment");
        self.store(v, v_new, "second moment");
        self.store(value, updated, "parameter");
        self.moments.insert(id, state);
    }
}

/// `AdamConfig`'s fields, which Burn keeps private, read through its serde form (a `Config`
/// serialises every field).
#[derive(serde::Deserialize)]
struct AdamFields {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    amsgrad: bool,
    weight_decay: Option<serde::de::IgnoredAny>,
    grad_clipping: Option<serde::de::IgnoredAny>,
}

/// The fields, and the config on one line (for messages).
fn adam_fields(config: &AdamConfig) -> Result<(AdamFields, String), String> {
    let text = ron::to_string(config).map_err(|e| format!("AdamConfig could not be read: {e}"))?;
    let fields = ron::from_str(&text).map_err(|e| format!("AdamConfig could not be read ({text}): {e}"))?;
    Ok((fields, text))
}

struct Mapper<'a> {
    adam: &'a mut DeviceAdam,
    grads: GradientsParams,
}

impl ModuleMapper for Mapper<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let id = param.id;
        match self.grads.remove::<D>(id) {
            Some(grad) => map_inner(param, |value| self.adam.update_one(id, value, grad)),
            None => param,
        }
    }
}

/// Changes a parameter's inner (non-autodiff) value in place with `change`, as Burn's optimizer
/// updates it, then lifts it back with the parameter's autodiff settings.
pub(crate) fn map_inner<const D: usize>(
    param: Param<Tensor<D>>,
    change: impl FnOnce(&mut Tensor<D>),
) -> Param<Tensor<D>> {
    let (id, tensor, mapper) = param.consume();
    let (require_grad, checkpointing) = (tensor.is_require_grad(), tensor.gradient_checkpointing_strategy());
    let mut value = tensor.inner();
    change(&mut value);
    let mut lifted = Tensor::from_inner(value);
    if let Some(strategy) = checkpointing {
        lifted = lifted.with_gradient_checkpointing_strategy(strategy);
    }
    if require_grad {
        lifted = lifted.require_grad();
    }
    Param::from_mapped_value(id, lifted, mapper)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burns_adam_config_gives_its_betas_and_epsilon() {
        let adam = DeviceAdam::from_config(&AdamConfig::new()).unwrap();
        assert_eq!((adam.beta_1, adam.beta_2, adam.epsilon), (0.9, 0.999, 1e-5));
        let config = AdamConfig::new().with_beta_1(0.8).with_beta_2(0.99).with_epsilon(1e-8);
        let adam = DeviceAdam::from_config(&config).unwrap();
        assert_eq!((adam.beta_1, adam.beta_2, adam.epsilon), (0.8, 0.99, 1e-8));
    }

    #[test]
    fn settings_device_adam_does_not_compute_are_refused_by_name() {
        use burn::optim::decay::WeightDecayConfig;
        use burn::optim::grad_clipping::GradientClippingConfig;
        let config = AdamConfig::new()
            .with_weight_decay(Some(WeightDecayConfig::new(1e-4)))
            .with_grad_clipping(Some(GradientClippingConfig::Norm(1.0)));
        let Err(err) = DeviceAdam::from_config(&config) else { panic!("weight decay and clipping refused") };
        assert!(err.starts_with("DeviceAdam does not compute Adam's weight decay, gradient clipping"), "{err}");
        let Err(err) = DeviceAdam::from_config(&AdamConfig::new().with_amsgrad(true)) else {
            panic!("AMSGrad refused")
        };
        assert!(err.contains("AMSGrad"), "{err}");
    }
}
