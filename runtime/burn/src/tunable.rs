//! A user's Burn network, its data and its loss as a model blazec can trace, tune and verify,
//! without writing a training loop: [`Tunable`] is a [`ModelFactory`] whose instances are
//! [`Model`]s with a recordable step (captured execution, forward and training).
//!
//! ```ignore
//! let tiny = Tunable::new("tiny-mlp-lm", Net::seeded, |step, device| batch(step, 8, 32, device), |net, (x, y)| {
//!     let logits = net.forward(x);
//!     let [b, s, v] = logits.dims();
//!     let loss = CrossEntropyLossConfig::new().init(&logits.device()).forward(logits.clone().reshape([b * s, v]), y);
//!     (logits, loss)
//! })
//! .with_shapes("batch=8 seq=32");
//! ```
//!
//! What a step is: batch `n` from the batcher (a function of the step's index, so that two
//! fresh instances see the same batches, which verification relies on), the loss closure on it,
//! and in training the backward pass and one Adam step (Burn's `AdamConfig`, `AdamConfig::new()`
//! unless [`Tunable::with_optimizer`] says otherwise, at the learning rate of
//! [`Tunable::with_learning_rate`]). Eager steps run Burn's own optimizer (`config.init()`); a
//! captured run holds the same Adam in place ([`crate::DeviceAdam::from_config`], continuing
//! the moments of Burn's from its record) and writes each batch
//! into the recording's input buffers ([`crate::captured_step::StepInputs`]).
use crate::captured_step::StepInputs;
use crate::{DeviceAdam, device_info};
use blaze_ir::plan::Regime;
use blaze_runtime::{Description, Model, ModelFactory, RecordFailure, RecordableStep, Recording, StepOutput};
use burn::module::Module;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use std::sync::Arc;

/// Learning rate of every training step unless [`Tunable::with_learning_rate`] says otherwise.
pub const DEFAULT_LEARNING_RATE: f64 = 1e-3;

type Init<N> = dyn Fn(&Device) -> N + Send + Sync;
type Batcher<I> = dyn Fn(usize, &Device) -> I + Send + Sync;
type Loss<N, I, const D: usize> = dyn Fn(&N, I) -> (Tensor<D>, Tensor<1>) + Send + Sync;

/// A network `N`, batches `I` and a loss with logits of rank `D`, as a [`ModelFactory`].
pub struct Tunable<N, I, const D: usize> {
    name: String,
    shapes: String,
    summary: String,
    learning_rate: f64,
    optimizer: AdamConfig,
    init: Arc<Init<N>>,
    batcher: Arc<Batcher<I>>,
    loss: Arc<Loss<N, I, D>>,
}

impl<N, I, const D: usize> Tunable<N, I, D>
where
    N: Module + 'static,
    I: StepInputs + Clone + 'static,
{
    /// `init` builds the seeded network on a device (the same weights every call), `batcher`
    /// makes batch number `step` on a device, `loss` returns the step's logits and loss.
    pub fn new(
        name: impl Into<String>,
        init: impl Fn(&Device) -> N + Send + Sync + 'static,
        batcher: impl Fn(usize, &Device) -> I + Send + Sync + 'static,
        loss: impl Fn(&N, I) -> (Tensor<D>, Tensor<1>) + Send + Sync + 'static,
    ) -> Self {
        let name = name.into();
        Self {
            summary: format!("{name} (a Tunable network)"),
            name,
            shapes: String::new(),
            learning_rate: DEFAULT_LEARNING_RATE,
            optimizer: AdamConfig::new(),
            init: Arc::new(init),
            batcher: Arc::new(batcher),
            loss: Arc::new(loss),
        }
    }

    /// The shapes plans record for this model (`batch=8 seq=32`).
    pub fn with_shapes(mut self, shapes: impl Into<String>) -> Self {
        self.shapes = shapes.into();
        self
    }

    /// The line `blazec list` shows.
    pub fn with_summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = summary.into();
        self
    }

    pub fn with_learning_rate(mut self, learning_rate: f64) -> Self {
        self.learning_rate = learning_rate;
        self
    }

    /// The optimizer of training steps (Burn's `AdamConfig`; default `AdamConfig::new()`).
    pub fn with_optimizer(mut self, optimizer: AdamConfig) -> Self {
        self.optimizer = optimizer;
        self
    }
}

impl<N, I, const D: usize> ModelFactory for Tunable<N, I, D>
where
    N: Module + 'static,
    I: StepInputs + Clone + 'static,
{
    fn name(&self) -> String {
        self.name.clone()
    }

    fn summary(&self) -> String {
        self.summary.clone()
    }

    fn build(&self, regime: Regime) -> Result<Box<dyn Model>, String> {
        let plain = crate::default_device();
        let device = if regime == Regime::Training { plain.autodiff() } else { plain };
        let net = (self.init)(&device);
        let desc = Description {
            name: self.name.clone(),
            shapes: self.shapes.clone(),
            num_params: net.num_params(),
            regime,
            device: device_info(),
        };
        Ok(Box::new(Run {
            desc,
            device,
            net: Some(net),
            optim: self.optimizer.init(),
            optimizer: self.optimizer.clone(),
            learning_rate: self.learning_rate,
            batcher: self.batcher.clone(),
            loss: self.loss.clone(),
            step: 0,
            inputs: None,
            adam: None,
            written: Ok(()),
        }))
    }
}

/// One instance: the network, the next batch's index, and (captured) the held inputs and Adam.
struct Run<N, I, const D: usize> {
    desc: Description,
    device: Device,
    net: Option<N>,
    optim: ModuleOptimizer,
    /// What `optim` was made from; captured training makes its `DeviceAdam` from it.
    optimizer: AdamConfig,
    learning_rate: f64,
    batcher: Arc<Batcher<I>>,
    loss: Arc<Loss<N, I, D>>,
    step: usize,
    /// The batch in device buffers written in place (captured execution).
    inputs: Option<I>,
    /// Captured training: the config's Adam with its state held in place.
    adam: Option<DeviceAdam>,
    /// Whether the updates since the last look wrote everything in place.
    written: Result<(), String>,
}

impl<N: Module + 'static, I: StepInputs + Clone + 'static, const D: usize> Run<N, I, D> {
    fn next_batch(&mut self) -> I {
        self.step += 1;
        (self.batcher)(self.step - 1, &self.device)
    }

    /// One step on `inputs`: logits and loss as plain (non-autodiff) tensors; in training the
    /// update, through the held Adam when there is one (written in place when `in_place`).
    fn step_on(&mut self, inputs: I, in_place: bool) -> (Tensor<D>, Tensor<1>) {
        let net = self.net.take().expect("the network is held between steps");
        let (logits, loss) = (self.loss)(&net, inputs);
        let net = match (self.desc.regime, self.adam.as_mut()) {
            (Regime::Forward, _) => net,
            (Regime::Training, adam) => {
                let grads = GradientsParams::from_grads(loss.backward(), &net);
                match adam {
                    Some(adam) => {
                        // Written back in place only in the launches a recording replays; an
                        // eager step assigns the update (the same values, fewer kernels).
                        adam.write_in_place(in_place);
                        let (net, written) = adam.step(net, grads);
                        self.written = std::mem::replace(&mut self.written, Ok(())).and(written);
                        net
                    }
                    None => self.optim.step(self.learning_rate, net, grads),
                }
            }
        };
        self.net = Some(net);
        (logits.inner(), loss.inner())
    }

    fn next_adam_step(&mut self) -> Result<(), String> {
        let plain = self.device.clone().inner();
        let lr = self.learning_rate;
        self.adam.as_mut().map_or(Ok(()), |adam| adam.next_step(lr, &plain))
    }

    fn held_inputs(&self) -> I {
        self.inputs.clone().expect("a recorded step holds its inputs")
    }
}

/// The step's report ([`crate::step_output`]); the logits' last dimension is their classes.
fn read<const D: usize>(loss: Tensor<1>, logits: &Tensor<D>, read_logits: bool) -> StepOutput {
    crate::step_output(loss, logits, logits.dims()[D - 1], read_logits)
}

impl<N: Module + 'static, I: StepInputs + Clone + 'static, const D: usize> Model for Run<N, I, D> {
    fn describe(&self) -> Description {
        self.desc.clone()
    }

    fn step(&mut self, read_logits: bool) -> StepOutput {
        let _ = self.next_adam_step();
        let inputs = self.next_batch();
        let (logits, loss) = self.step_on(inputs, false);
        read(loss, &logits, read_logits)
    }

    fn sync(&self) {
        let _ = self.device.sync();
    }

    fn parameters(&self) -> Vec<f32> {
        self.net.as_ref().map(crate::parameter_values).unwrap_or_default()
    }

    fn recordable(&mut self) -> Result<&mut dyn RecordableStep, String> {
        Ok(self)
    }
}

/// What a failed recording of the training step restores (the parameters and Adam's state it
/// wrote in place are lost with it).
impl<N: Module + 'static, I: StepInputs + Clone + 'static, const D: usize> crate::capture::Rewind for Run<N, I, D> {
    type Saved = Option<crate::capture::SavedTraining<N>>;

    fn save(&self) -> Self::Saved {
        Some(crate::capture::SavedTraining::of(self.net.as_ref()?, self.adam.as_ref()?))
    }

    fn restore(&mut self, saved: Self::Saved) {
        if let Some(saved) = saved {
            (self.net, self.adam) = (Some(saved.module), Some(saved.adam));
        }
    }
}

impl<N: Module + 'static, I: StepInputs + Clone + 'static, const D: usize> RecordableStep for Run<N, I, D> {
    fn refresh_inputs(&mut self) -> Result<(), String> {
        let fresh = self.next_batch();
        match self.inputs.as_mut() {
            Some(held) => {
                held.check(&fresh)?;
                held.write(fresh)?;
            }
            None => self.inputs = Some(fresh),
        }
        self.next_adam_step()
    }

    /// Training: Burn's optimizer returns new tensors and bakes its learning rate into the
    /// kernels; a recorded step writes its state back in place instead.
    fn hold_state_in_place(&mut self) -> Result<(), String> {
        if self.desc.regime == Regime::Training {
            // Burn's moments so far carry over: the two optimizers' records are the same.
            self.adam = Some(DeviceAdam::from_config(&self.optimizer).load_record(self.optim.to_record()));
        }
        Ok(())
    }

    fn record(&mut self) -> Result<Box<dyn Recording>, RecordFailure> {
        if self.inputs.is_none() {
            return Err(RecordFailure::new("recorded before its inputs were written (RecordableStep::refresh_inputs)"));
        }
        if self.adam.is_some() {
            let plain = self.device.clone().inner();
            return crate::capture::record_training(
                self,
                &plain,
                |run| {
                    let inputs = run.held_inputs();
                    run.step_on(inputs, true)
                },
                |run| run.refresh_inputs(),
                |(logits, loss), read_logits| read(loss.clone(), logits, read_logits),
                |run| std::mem::replace(&mut run.written, Ok(())).err(),
            );
        }
        let Self { device, net, loss, inputs, .. } = self;
        let net = net.as_ref().expect("the network is held between steps");
        let held = inputs.as_ref().expect("checked above");
        crate::record(
            device,
            || loss(net, held.clone()),
            |(logits, loss), read_logits| read(loss.clone(), logits, read_logits),
        )
    }
}
