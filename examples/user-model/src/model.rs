//! tiny-mlp-lm: predicts the next byte of this very source file from the previous one with an
//! embedding and a two-layer MLP. Written the way a Burn user would: the network, its batches
//! and its loss, handed to blazec as a `blaze_burn::Tunable` (which runs the steps, eager and
//! captured, with Adam at the default learning rate).
use blaze_burn::Tunable;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Embedding, EmbeddingConfig, Gelu, Linear, LinearConfig};
use burn::tensor::{Device, Int, Tensor, TensorData};

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

    /// The logits and the next-byte cross-entropy.
    pub(crate) fn logits_loss(&self, (x, y): Batch) -> (Tensor<3>, Tensor<1>) {
        let logits = self.forward(x);
        let [b, s, v] = logits.dims();
        let loss = CrossEntropyLossConfig::new().init(&logits.device()).forward(logits.clone().reshape([b * s, v]), y);
        (logits, loss)
    }
}

/// A batch: [batch, seq] byte codes and the [batch * seq] bytes that follow them.
pub(crate) type Batch = (Tensor<2, Int>, Tensor<1, Int>);

/// Batch number `step` of this file's bytes.
pub(crate) fn batch(step: usize, batch: usize, seq: usize, device: &Device) -> Batch {
    let n = batch * seq;
    let start = (step * 7919) % (TEXT.len() - n - 1);
    let xs: Vec<i64> = TEXT[start..start + n].iter().map(|b| (b & 0x7f) as i64).collect();
    let ys: Vec<i64> = TEXT[start + 1..start + n + 1].iter().map(|b| (b & 0x7f) as i64).collect();
    (Tensor::from_data(TensorData::new(xs, [batch, seq]), device), Tensor::from_data(TensorData::new(ys, [n]), device))
}

/// tiny-mlp-lm at `b` sequences of `s` bytes, as blazec's commands run it.
pub(crate) fn tiny_mlp_lm(b: usize, s: usize) -> Tunable<Net, Batch, 3> {
    let name = if (b, s) == (8, 32) { NAME.into() } else { format!("{NAME}-b{b}s{s}") };
    Tunable::new(name, Net::seeded, move |step, device| batch(step, b, s, device), Net::logits_loss)
        .with_shapes(format!("batch={b} seq={s}"))
        .with_summary(format!("user example: embedding 128->64, MLP 64->256->128, batch {b} seq {s}"))
}
