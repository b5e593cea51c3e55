//! tiny-mlp-lm: predicts the next byte of this very source file from the previous one with an
//! embedding and a two-layer MLP. Written the way a Burn user would, against the Model trait.
use blaze_ir::plan::Regime;
use blaze_runtime::{Description, Model, ModelFactory, RecordFailure, RecordableStep, Recording, StepOutput};
use burn::module::Module;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::nn::{Embedding, EmbeddingConfig, Gelu, Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, DeviceKind, Int, Tensor, TensorData};

pub const NAME: &str = "tiny-mlp-lm";
static TEXT: &[u8] = include_bytes!("model.rs");

#[derive(Module, Debug)]
pub(crate) struct Net {
    embed: Embedding,
    hidden: Linear,
    act: Gelu,
    out: Linear,
}

impl Net {
    /// The seeded net on `device`, as every instance starts (parameters drawn now).
    pub(crate) fn seeded(device: &Device) -> Self {
        device.seed(0);
        // Burn initialises parameters lazily; force it now, right after seeding, so every
        // instance starts from the same weights (verification compares fresh instances).
        blaze_burn::init_params(Net {
            embed: EmbeddingConfig::new(128, 64).init(device),
            hidden: LinearConfig::new(64, 256).init(device),
            act: Gelu::new(),
            out: LinearConfig::new(256, 128).init(device),
        })
    }

    pub(crate) fn forward(&self, x: Tensor<2, Int>) -> Tensor<3> {
        self.out.forward(self.act.forward(self.hidden.forward(self.embed.forward(x))))
    }
}

pub struct TinyMlpLm {
    batch: usize,
    seq: usize,
}

impl TinyMlpLm {
    pub fn new(batch: usize, seq: usize) -> Self {
        Self { batch, seq }
    }

    fn name(&self) -> String {
        if (self.batch, self.seq) == (8, 32) { NAME.into() } else { format!("{NAME}-b{}s{}", self.batch, self.seq) }
    }
}

impl ModelFactory for TinyMlpLm {
    fn name(&self) -> String {
        TinyMlpLm::name(self)
    }

    fn summary(&self) -> String {
        format!("user example: embedding 128->64, MLP 64->256->128, batch {} seq {}", self.batch, self.seq)
    }

    fn build(&self, regime: Regime) -> Result<Box<dyn Model>, String> {
        let plain = Device::wgpu(DeviceKind::DefaultDevice);
        let device = if regime == Regime::Training { plain.autodiff() } else { plain };
        let net = Net::seeded(&device);
        let desc = Description {
            name: TinyMlpLm::name(self),
            shapes: format!("batch={} seq={}", self.batch, self.seq),
            num_params: net.num_params(),
            regime,
            device: blaze_burn::device_info(),
        };
        let loss = CrossEntropyLossConfig::new().init(&device);
        let (tokens, targets) = Default::default();
        Ok(Box::new(Run {
            desc,
            device,
            net: Some(net),
            optim: AdamConfig::new().init(),
            loss,
            step: 0,
            batch: self.batch,
            seq: self.seq,
            tokens,
            targets,
            adam: None,
            written: Ok(()),
        }))
    }
}

struct Run {
    desc: Description,
    device: Device,
    net: Option<Net>,
    optim: ModuleOptimizer,
    loss: CrossEntropyLoss,
    step: usize,
    batch: usize,
    seq: usize,
    /// The batch in device buffers written in place (captured execution of the forward step).
    tokens: blaze_burn::StableInput<2, Int>,
    targets: blaze_burn::StableInput<1, Int>,
    /// Captured training: `AdamConfig::new()`'s Adam with its state held in place.
    adam: Option<blaze_burn::DeviceAdam>,
    /// Whether the last update wrote everything in place.
    written: Result<(), String>,
}

impl Run {
    fn batch(&mut self) -> (Tensor<2, Int>, Tensor<1, Int>) {
        self.step += 1;
        batch(self.step - 1, self.batch, self.seq, &self.device)
    }
}

/// Batch number `step`: ([batch, seq] byte codes of this file, [batch * seq] next bytes).
pub(crate) fn batch(step: usize, batch: usize, seq: usize, device: &Device) -> (Tensor<2, Int>, Tensor<1, Int>) {
    let n = batch * seq;
    let start = (step * 7919) % (TEXT.len() - n - 1);
    let xs: Vec<i64> = TEXT[start..start + n].iter().map(|b| (b & 0x7f) as i64).collect();
    let ys: Vec<i64> = TEXT[start + 1..start + n + 1].iter().map(|b| (b & 0x7f) as i64).collect();
    (Tensor::from_data(TensorData::new(xs, [batch, seq]), device), Tensor::from_data(TensorData::new(ys, [n]), device))
}

/// The learning rate of every training step.
const LEARNING_RATE: f64 = 1e-3;

impl Run {
    /// A training step with Adam held in place (captured training), on the stable inputs
    /// (recorded) or the next batch (eager); the outputs as plain tensors.
    fn in_place_step(&mut self, stable: bool) -> (Tensor<3>, Tensor<1>) {
        let (x, y) = if stable { (self.tokens.get(), self.targets.get()) } else { self.batch() };
        let net = self.net.take().expect("net between steps");
        let (logits, loss) = logits_loss(&net, &self.loss, x, y);
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        let (logits, loss) = (logits.inner(), loss.inner());
        let adam = self.adam.as_mut().expect("held in place");
        // Written back in place only in the launches a recording replays; an eager step
        // assigns the update (the same values, fewer kernels).
        adam.write_in_place(stable);
        let (net, written) = adam.step(net, grads);
        self.written = self.written.clone().and(written);
        self.net = Some(net);
        (logits, loss)
    }

    fn next_adam_step(&mut self) -> Result<(), String> {
        let plain = self.device.clone().inner();
        self.adam.as_mut().map_or(Ok(()), |adam| adam.next_step(LEARNING_RATE, &plain))
    }
}

impl Model for Run {
    fn describe(&self) -> Description {
        self.desc.clone()
    }

    fn step(&mut self, capture: bool) -> StepOutput {
        if self.adam.is_some() {
            let _ = self.next_adam_step();
            let (logits, loss) = self.in_place_step(false);
            return read(&loss, &logits, capture);
        }
        let (x, y) = self.batch();
        let net = self.net.take().expect("net between steps");
        let (logits, loss) = logits_loss(&net, &self.loss, x, y);
        let net = match self.desc.regime {
            Regime::Training => {
                let grads = GradientsParams::from_grads(loss.backward(), &net);
                self.optim.step(LEARNING_RATE, net, grads)
            }
            Regime::Forward => net,
        };
        self.net = Some(net);
        read(&loss, &logits, capture)
    }

    fn sync(&self) {
        let _ = self.device.sync();
    }

    fn parameters(&self) -> Vec<f32> {
        self.net.as_ref().map(blaze_burn::parameter_values).unwrap_or_default()
    }

    fn recordable(&mut self) -> Result<&mut dyn RecordableStep, String> {
        Ok(self)
    }
}

/// A step that can be recorded: the batch is written into stable device tensors, and the
/// recorded step computes logits and loss from them (training: and updates the net with Adam
/// held in place).
/// What a failed recording of the training step restores (the parameters and Adam's state
/// it wrote in place are lost with it).
impl blaze_burn::capture::Rewind for Run {
    type Saved = Option<blaze_burn::capture::SavedTraining<Net>>;

    fn save(&self) -> Self::Saved {
        Some(blaze_burn::capture::SavedTraining::of(self.net.as_ref()?, self.adam.as_ref()?))
    }

    fn restore(&mut self, saved: Self::Saved) {
        if let Some(saved) = saved {
            (self.net, self.adam) = (Some(saved.module), Some(saved.adam));
        }
    }
}

impl RecordableStep for Run {
    fn refresh_inputs(&mut self) -> Result<(), String> {
        let (x, y) = self.batch();
        self.tokens.write(x)?;
        self.targets.write(y)?;
        self.next_adam_step()
    }

    /// Training: Burn's optimizer returns new tensors and bakes its learning rate into the
    /// kernels; a recorded step must write its state back in place instead.
    fn hold_state_in_place(&mut self) -> Result<(), String> {
        if self.desc.regime == Regime::Training {
            self.adam = Some(blaze_burn::DeviceAdam::new(0.9, 0.999, 1e-5)); // AdamConfig::new()
        }
        Ok(())
    }

    fn record(&mut self) -> Result<Box<dyn Recording>, RecordFailure> {
        if self.adam.is_some() {
            let plain = self.device.clone().inner();
            return blaze_burn::capture::record_training(
                self,
                &plain,
                |run| run.in_place_step(true),
                |run| run.refresh_inputs(),
                |(logits, loss), capture| read(loss, logits, capture),
                |run| std::mem::replace(&mut run.written, Ok(())).err(),
            );
        }
        let Self { device, net, loss, tokens, targets, .. } = self;
        let net = net.as_ref().expect("net between steps");
        blaze_burn::record(
            device,
            || logits_loss(net, loss, tokens.get(), targets.get()),
            |(logits, loss), capture| read(loss, logits, capture),
        )
    }
}

fn logits_loss(net: &Net, loss: &CrossEntropyLoss, x: Tensor<2, Int>, y: Tensor<1, Int>) -> (Tensor<3>, Tensor<1>) {
    let logits = net.forward(x);
    let [b, s, v] = logits.dims();
    let loss = loss.forward(logits.clone().reshape([b * s, v]), y);
    (logits, loss)
}

/// Loss first (a sync), then the logits by reference, so capturing adds no operation.
fn read(loss: &Tensor<1>, logits: &Tensor<3>, capture: bool) -> StepOutput {
    let loss = loss.to_data().try_to_vec::<f32>().map_or(f32::NAN, |v| v[0]);
    let logits = if capture { logits.to_data().try_to_vec::<f32>().unwrap_or_default() } else { Vec::new() };
    StepOutput { loss, logits, classes: 128 }
}
