//! A character language model run: real text, cross-entropy, Adam. Implements
//! `blaze_runtime::Model` for any Burn module that maps token ids to logits.
use crate::{
    device,
    text::{CharBatcher, VOCAB},
};
use blaze_burn::DeviceDropout;
use blaze_ir::plan::Regime;
use blaze_runtime::{Description, Model, RecordFailure, RecordableStep, Recording, StepOutput};
use burn::module::Module;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Int, Tensor};

/// Adam as every workload uses it (docs/workloads.md).
pub const LEARNING_RATE: f64 = 3e-4;

pub fn adam() -> ModuleOptimizer {
    AdamConfig::new().with_beta_1(0.9).with_beta_2(0.999).with_epsilon(1e-8).init()
}

/// A model from token ids [batch, seq] to logits [batch, seq, 128].
pub trait CharLm: Module + 'static {
    fn logits(&self, tokens: Tensor<2, Int>) -> Tensor<3>;

    /// The logits with any dropout mask drawn by `dropout` (a model without dropout ignores it).
    fn logits_dropping(&self, tokens: Tensor<2, Int>, dropout: &DeviceDropout) -> Tensor<3> {
        let _ = dropout;
        self.logits(tokens)
    }
}

/// The seed every workload initialises and samples with.
pub const SEED: u64 = 0;

pub use blaze_burn::init_params;

pub struct CharLmRun<M: CharLm> {
    desc: Description,
    device: Device,
    model: Option<M>,
    optim: ModuleOptimizer,
    batcher: CharBatcher,
    loss: CrossEntropyLoss,
    /// The batch in device buffers refreshed in place (captured execution only).
    tokens: blaze_burn::StableInput<2, Int>,
    targets: blaze_burn::StableInput<1, Int>,
    /// Captured training: Adam with its state held in place (replaces `optim`).
    in_place: Option<InPlaceTraining>,
    /// Why this model's training step cannot be recorded, if it cannot.
    capture_refusal: Option<String>,
    /// Dropout masks drawn on the device (a model definition of its own: gpt-small-device-dropout).
    dropout: Option<DeviceDropout>,
}

impl<M: CharLm> CharLmRun<M> {
    /// Seeds the device, then builds the model with `init` on a device with autodiff in
    /// training and without it in the forward regime.
    pub fn new(desc: Description, batch: usize, seq: usize, init: impl FnOnce(&Device) -> M) -> Self {
        let plain = device::default_device();
        let device = match desc.regime {
            Regime::Training => plain.autodiff(),
            Regime::Forward => plain,
        };
        device.seed(SEED);
        let model = init_params(init(&device));
        let loss = CrossEntropyLossConfig::new().init(&device);
        let batcher = CharBatcher::new(batch, seq, SEED);
        Self {
            desc,
            device,
            model: Some(model),
            optim: adam(),
            batcher,
            loss,
            tokens: Default::default(),
            targets: Default::default(),
            in_place: None,
            capture_refusal: None,
            dropout: None,
        }
    }

    /// Draws the model's dropout masks with [`DeviceDropout`] (seeded with [`SEED`]) in the
    /// training regime; the forward regime draws none.
    pub fn with_device_dropout(mut self) -> Self {
        if self.desc.regime == Regime::Training {
            self.dropout = Some(DeviceDropout::new(SEED));
        }
        self
    }

    /// Writes the next step's device scalars, outside any recording: Adam's when it is held in
    /// place, the dropout seed.
    fn next_step_scalars(&mut self) -> Result<(), String> {
        let dropout = self.dropout.as_mut().map_or(Ok(()), |d| d.next_step(&self.device));
        let adam = self.in_place.as_mut().map_or(Ok(()), |t| t.next_step());
        dropout.and(adam)
    }

    /// Replaces the description (e.g. once the parameter count is known).
    pub fn with_description(mut self, desc: Description) -> Self {
        self.desc = desc;
        self
    }

    /// Refuses to record the training step, for `reason` (e.g. dropout drawn from a host seed).
    pub fn refusing_training_capture(mut self, reason: &str) -> Self {
        self.capture_refusal = Some(reason.into());
        self
    }

    /// One training step with Adam held in place, from the stable inputs (recorded) or a
    /// fresh batch (eager); the outputs as plain tensors.
    fn in_place_step(&mut self, stable: bool) -> (Tensor<3>, Tensor<1>) {
        let model = self.model.take().expect("model present between steps");
        let (x, y) = match stable {
            true => (self.tokens.get(), self.targets.get()),
            false => self.batcher.next(&self.device),
        };
        let (logits, loss) = logits_loss(&model, &self.loss, x, y, self.dropout.as_ref());
        let training = self.in_place.as_mut().expect("held in place");
        let (model, logits, loss) = training.step(model, logits, loss, stable);
        self.model = Some(model);
        (logits, loss)
    }

    fn forward_loss(&mut self, model: &M) -> (Tensor<3>, Tensor<1>) {
        let (x, y) = self.batcher.next(&self.device);
        logits_loss(model, &self.loss, x, y, self.dropout.as_ref())
    }
}

/// Logits and loss of one batch (the test-only fault scales the logits on the device).
fn logits_loss<M: CharLm>(
    model: &M,
    loss: &CrossEntropyLoss,
    x: Tensor<2, Int>,
    y: Tensor<1, Int>,
    dropout: Option<&DeviceDropout>,
) -> (Tensor<3>, Tensor<1>) {
    let mut logits = match dropout {
        Some(dropout) => model.logits_dropping(x, dropout),
        None => model.logits(x),
    };
    if blaze_runtime::fault::injected() {
        logits = logits.mul_scalar(1.01);
    }
    let [b, s, v] = logits.dims();
    let loss = loss.forward(logits.clone().reshape([b * s, v]), y);
    (logits, loss)
}

/// A training step with Adam held in place ([`blaze_burn::DeviceAdam`], the workloads'
/// hyper-parameters), for captured execution. Burn's `ModuleOptimizer` moves parameters and
/// moments to new buffers each step and bakes the learning rate into the kernels, so a replay
/// of a step it ran would compute wrong numbers.
pub struct InPlaceTraining {
    adam: blaze_burn::DeviceAdam,
    plain: Device,
    /// The first write of a step that could not be done in place.
    failure: Option<String>,
}

impl InPlaceTraining {
    /// For a model on the autodiff `device`.
    pub fn new(device: &Device) -> Self {
        Self { adam: blaze_burn::DeviceAdam::new(0.9, 0.999, 1e-8), plain: device.clone().inner(), failure: None }
    }

    /// A copy of `module` and of this optimizer, in buffers of their own (what a failed
    /// recording restores: `blaze_burn::capture::Rewind`).
    pub fn save<N: Module>(&self, module: &N) -> blaze_burn::capture::SavedTraining<N> {
        blaze_burn::capture::SavedTraining::of(module, &self.adam)
    }

    /// Restores what [`Self::save`] copied: the module is returned, the optimizer replaced.
    pub fn restore<N>(&mut self, saved: blaze_burn::capture::SavedTraining<N>) -> N {
        self.adam = saved.adam;
        saved.module
    }

    /// The plain device the step is recorded on (autodiff has no graph support).
    pub fn plain(&self) -> &Device {
        &self.plain
    }

    /// Writes the next step's learning rate and bias corrections to the device.
    pub fn next_step(&mut self) -> Result<(), String> {
        self.adam.next_step(LEARNING_RATE, &self.plain)
    }

    /// Backward and the update. The outputs become plain tensors before the update, so no
    /// autodiff wrapper keeps a parameter shared while it is written. `recorded`: the launch is
    /// recorded (or prepares a recording), so the update writes back in place; an eager step
    /// assigns it (the same values, fewer kernels).
    pub fn step<N: Module, const D: usize>(
        &mut self,
        model: N,
        out: Tensor<D>,
        loss: Tensor<1>,
        recorded: bool,
    ) -> (N, Tensor<D>, Tensor<1>) {
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let (out, loss) = (out.inner(), loss.inner());
        self.adam.write_in_place(recorded);
        let (model, written) = self.adam.step(model, grads);
        if let Err(e) = written {
            self.failure.get_or_insert(e);
        }
        (model, out, loss)
    }

    /// The first write since the last call that could not be done in place.
    pub fn take_failure(&mut self) -> Option<String> {
        self.failure.take()
    }
}

impl<M: CharLm> Model for CharLmRun<M> {
    fn describe(&self) -> Description {
        self.desc.clone()
    }

    fn step(&mut self, read_logits: bool) -> StepOutput {
        // An eager step computes the same whether or not a scalar went to a buffer of its own;
        // a later recording would not read it, hence the warning when one is to come.
        let scalars = self.next_step_scalars();
        if self.in_place.is_some() {
            if let Err(e) = scalars {
                eprintln!("warning: blaze: step scalars not written in place: {e}");
            }
            let (logits, loss) = self.in_place_step(false);
            return blaze_burn::step_output(loss, &logits, VOCAB, read_logits);
        }
        let model = self.model.take().expect("model present between steps");
        let (logits, loss) = self.forward_loss(&model);
        let model = match self.desc.regime {
            Regime::Training => {
                let grads = GradientsParams::from_grads(loss.backward(), &model);
                self.optim.step(LEARNING_RATE, model, grads)
            }
            Regime::Forward => model,
        };
        self.model = Some(model);
        blaze_burn::step_output(loss, &logits, VOCAB, read_logits)
    }

    fn sync(&self) {
        let _ = self.device.sync();
    }

    fn parameters(&self) -> Vec<f32> {
        self.model.as_ref().map(blaze_burn::parameter_values).unwrap_or_default()
    }

    fn recordable(&mut self) -> Result<&mut dyn RecordableStep, String> {
        Ok(self)
    }
}

impl<M: CharLm> blaze_burn::capture::Rewind for CharLmRun<M> {
    type Saved = Option<blaze_burn::capture::SavedTraining<M>>;

    fn save(&self) -> Self::Saved {
        Some(self.in_place.as_ref()?.save(self.model.as_ref()?))
    }

    fn restore(&mut self, saved: Self::Saved) {
        if let (Some(saved), Some(training)) = (saved, self.in_place.as_mut()) {
            self.model = Some(training.restore(saved));
        }
    }
}

impl<M: CharLm> RecordableStep for CharLmRun<M> {
    fn refresh_inputs(&mut self) -> Result<(), String> {
        let (x, y) = self.batcher.next(&self.device);
        self.tokens.write(x)?;
        self.targets.write(y)?;
        self.next_step_scalars()
    }

    fn hold_state_in_place(&mut self) -> Result<(), String> {
        if self.desc.regime == Regime::Training {
            if let Some(reason) = &self.capture_refusal {
                return Err(reason.clone());
            }
            self.in_place = Some(InPlaceTraining::new(&self.device));
        }
        Ok(())
    }

    fn record(&mut self) -> Result<Box<dyn Recording>, RecordFailure> {
        if let Some(training) = &self.in_place {
            let plain = training.plain().clone();
            return blaze_burn::capture::record_training(
                self,
                &plain,
                |run| run.in_place_step(true),
                |run| run.refresh_inputs(),
                |(logits, loss), capture| blaze_burn::step_output(loss.clone(), logits, VOCAB, capture),
                |run| run.in_place.as_mut().and_then(|t| t.take_failure()),
            );
        }
        if self.desc.regime == Regime::Training {
            return Err(
                "a training step is recorded only with its state held in place (RecordableStep::hold_state_in_place)"
                    .into(),
            );
        }
        let Self { device, model, loss, tokens, targets, dropout, .. } = self;
        let model = model.as_ref().expect("model present between steps");
        blaze_burn::record(
            device,
            || logits_loss(model, loss, tokens.get(), targets.get(), dropout.as_ref()),
            |(logits, loss), capture| blaze_burn::step_output(loss.clone(), logits, VOCAB, capture),
        )
    }
}
