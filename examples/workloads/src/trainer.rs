//! A character language model run: real text, cross-entropy, Adam. Implements
//! `blaze_runtime::Model` for any Burn module that maps token ids to logits.
use crate::{device, text::{CharBatcher, VOCAB}};
use blaze_ir::plan::Regime;
use blaze_runtime::{Description, Model, RecordableStep, Recording, StepOutput};
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
        Self { desc, device, model: Some(model), optim: adam(), batcher, loss, tokens: Default::default(), targets: Default::default() }
    }

    /// Replaces the description (e.g. once the parameter count is known).
    pub fn with_description(mut self, desc: Description) -> Self {
        self.desc = desc;
        self
    }

    fn forward_loss(&mut self, model: &M) -> (Tensor<3>, Tensor<1>) {
        let (x, y) = self.batcher.next(&self.device);
        logits_loss(model, &self.loss, x, y)
    }
}

/// Logits and loss of one batch (the test-only fault scales the logits on the device).
fn logits_loss<M: CharLm>(model: &M, loss: &CrossEntropyLoss, x: Tensor<2, Int>, y: Tensor<1, Int>) -> (Tensor<3>, Tensor<1>) {
    let mut logits = model.logits(x);
    if blaze_runtime::fault::injected() {
        logits = logits.mul_scalar(1.01);
    }
    let [b, s, v] = logits.dims();
    let loss = loss.forward(logits.clone().reshape([b * s, v]), y);
    (logits, loss)
}

/// Captured execution records forward steps only: a training step's state (parameters, Adam's
/// moments) moves between buffers, and its learning rate is a host scalar baked into a
/// recording, so a replay would compute wrong numbers.
pub fn forward_only(regime: Regime) -> Result<(), String> {
    match regime {
        Regime::Forward => Ok(()),
        Regime::Training => Err("training steps cannot be recorded yet: a replay would not write the parameters and optimiser state back in place".into()),
    }
}

impl<M: CharLm> Model for CharLmRun<M> {
    fn describe(&self) -> Description {
        self.desc.clone()
    }

    fn step(&mut self, capture: bool) -> StepOutput {
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
        read_outputs(loss, logits, VOCAB, capture)
    }

    fn sync(&self) {
        let _ = self.device.sync();
    }

    fn recordable(&mut self) -> Result<&mut dyn RecordableStep, String> {
        forward_only(self.desc.regime)?;
        Ok(self)
    }
}

impl<M: CharLm> RecordableStep for CharLmRun<M> {
    fn refresh_inputs(&mut self) -> Result<(), String> {
        let (x, y) = self.batcher.next(&self.device);
        self.tokens.write(x)?;
        self.targets.write(y)
    }

    fn record(&mut self) -> Result<Box<dyn Recording>, String> {
        let Self { device, model, loss, tokens, targets, .. } = self;
        let model = model.as_ref().expect("model present between steps");
        blaze_burn::record(device, || logits_loss(model, loss, tokens.get(), targets.get()), |(logits, loss), capture| {
            read_outputs(loss.clone(), logits.clone(), VOCAB, capture)
        })
    }
}

/// Reads the loss (a sync), then the logits if asked. `logits` is alive until here in both
/// cases and is read by reference, so capturing registers no operation a plain step does not.
/// `classes` is the logits' last dimension (128 for the character models).
pub fn read_outputs<const D: usize>(loss: Tensor<1>, logits: Tensor<D>, classes: usize, capture: bool) -> StepOutput {
    let loss = loss.into_data().try_to_vec::<f32>().ok().and_then(|v| v.first().copied()).unwrap_or(f32::NAN);
    let captured = match capture {
        true => logits.to_data().try_to_vec::<f32>().unwrap_or_default(),
        false => Vec::new(),
    };
    drop(logits);
    StepOutput { loss, logits: captured, classes }
}
