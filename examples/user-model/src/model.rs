//! tiny-mlp-lm: predicts the next byte of this very source file from the previous one with an
//! embedding and a two-layer MLP. Written the way a Burn user would, against the Model trait.
use blaze_ir::plan::Regime;
use blaze_runtime::{Description, Model, ModelFactory, StepOutput};
use burn::module::Module;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::nn::{Embedding, EmbeddingConfig, Gelu, Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, DeviceKind, Int, Tensor, TensorData};

pub const NAME: &str = "tiny-mlp-lm";
static TEXT: &[u8] = include_bytes!("model.rs");

#[derive(Module, Debug)]
struct Net {
    embed: Embedding,
    hidden: Linear,
    act: Gelu,
    out: Linear,
}

impl Net {
    fn forward(&self, x: Tensor<2, Int>) -> Tensor<3> {
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
        device.seed(0);
        // Burn initialises parameters lazily; force it now, right after seeding, so every
        // instance starts from the same weights (verification compares fresh instances).
        let net = blaze_burn::init_params(Net {
            embed: EmbeddingConfig::new(128, 64).init(&device),
            hidden: LinearConfig::new(64, 256).init(&device),
            act: Gelu::new(),
            out: LinearConfig::new(256, 128).init(&device),
        });
        let desc = Description {
            name: TinyMlpLm::name(self),
            shapes: format!("batch={} seq={}", self.batch, self.seq),
            num_params: net.num_params(),
            regime,
            device: blaze_burn::device_info(),
        };
        let loss = CrossEntropyLossConfig::new().init(&device);
        Ok(Box::new(Run { desc, device, net: Some(net), optim: AdamConfig::new().init(), loss, step: 0, batch: self.batch, seq: self.seq }))
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
}

impl Run {
    fn batch(&mut self) -> (Tensor<2, Int>, Tensor<1, Int>) {
        let n = self.batch * self.seq;
        let start = (self.step * 7919) % (TEXT.len() - n - 1);
        self.step += 1;
        let xs: Vec<i64> = TEXT[start..start + n].iter().map(|b| (b & 0x7f) as i64).collect();
        let ys: Vec<i64> = TEXT[start + 1..start + n + 1].iter().map(|b| (b & 0x7f) as i64).collect();
        (
            Tensor::from_data(TensorData::new(xs, [self.batch, self.seq]), &self.device),
            Tensor::from_data(TensorData::new(ys, [n]), &self.device),
        )
    }
}

impl Model for Run {
    fn describe(&self) -> Description {
        self.desc.clone()
    }

    fn step(&mut self, capture: bool) -> StepOutput {
        let (x, y) = self.batch();
        let net = self.net.take().expect("net between steps");
        let logits = net.forward(x);
        let [b, s, v] = logits.dims();
        let loss = self.loss.forward(logits.clone().reshape([b * s, v]), y);
        let net = match self.desc.regime {
            Regime::Training => {
                let grads = GradientsParams::from_grads(loss.backward(), &net);
                self.optim.step(1e-3, net, grads)
            }
            Regime::Forward => net,
        };
        self.net = Some(net);
        // Loss first (a sync), then the logits by reference, so capturing adds no operation.
        let loss = loss.into_data().try_to_vec::<f32>().map_or(f32::NAN, |v| v[0]);
        let logits_out = if capture { logits.to_data().try_to_vec::<f32>().unwrap_or_default() } else { Vec::new() };
        StepOutput { loss, logits: logits_out, classes: 128 }
    }

    fn sync(&self) {
        let _ = self.device.sync();
    }
}
