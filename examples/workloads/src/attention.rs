//! attention-d{256,257,258} and gpt-small (docs/workloads.md): a character LM with token and
//! learned position embeddings, pre-LN transformer blocks (Burn's TransformerEncoder, GELU MLP
//! d -> 4d -> d), causal mask, final LayerNorm, linear d -> 128, cross-entropy.
use crate::{device::device_info, text::VOCAB, trainer::{CharLm, CharLmRun}};
use blaze_ir::plan::Regime;
use blaze_runtime::{Description, Model, ModelFactory};
use burn::module::Module;
use burn::nn::attention::generate_autoregressive_mask;
use burn::nn::transformer::{TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput};
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::{Device, Int, Tensor};

#[derive(Module, Debug)]
pub struct AttentionLm {
    token: Embedding,
    position: Embedding,
    blocks: TransformerEncoder,
    norm: LayerNorm,
    head: Linear,
}

/// Architecture and input shape of one attention workload.
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionSpec {
    pub name: String,
    pub d: usize,
    pub layers: usize,
    pub heads: usize,
    pub dropout: f64,
    pub batch: usize,
    pub seq: usize,
}

impl AttentionSpec {
    /// attention-d{d} at the reference shape (batch 16, sequence 256).
    pub fn attention(d: usize) -> Self {
        Self { name: format!("attention-d{d}"), d, layers: 2, heads: 1, dropout: 0.0, batch: 16, seq: 256 }
    }

    /// gpt-small: as attention with d = 256, 4 blocks, 4 heads, dropout 0.1.
    pub fn gpt_small() -> Self {
        Self { name: "gpt-small".into(), d: 256, layers: 4, heads: 4, dropout: 0.1, ..Self::attention(256) }
    }

    pub fn shapes(&self) -> String {
        format!("batch={} seq={} d={}", self.batch, self.seq, self.d)
    }

    fn init(&self, device: &Device) -> AttentionLm {
        let blocks = TransformerEncoderConfig::new(self.d, 4 * self.d, self.heads, self.layers)
            .with_norm_first(true)
            .with_dropout(self.dropout);
        AttentionLm {
            token: EmbeddingConfig::new(VOCAB, self.d).init(device),
            position: EmbeddingConfig::new(self.seq, self.d).init(device),
            blocks: blocks.init(device),
            norm: LayerNormConfig::new(self.d).init(device),
            head: LinearConfig::new(self.d, VOCAB).init(device),
        }
    }
}

impl CharLm for AttentionLm {
    fn logits(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let [batch, seq] = tokens.dims();
        let device = tokens.device();
        let positions = Tensor::<1, Int>::arange(0..seq as i64, &device).reshape([1, seq]).repeat_dim(0, batch);
        let x = self.token.forward(tokens) + self.position.forward(positions);
        let mask = generate_autoregressive_mask(batch, seq, &device);
        let x = self.blocks.forward(TransformerEncoderInput::new(x).mask_attn(mask));
        self.head.forward(self.norm.forward(x))
    }
}

impl ModelFactory for AttentionSpec {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn summary(&self) -> String {
        format!("character LM, {} pre-LN block(s), {} head(s), d={}, dropout {}; {}", self.layers, self.heads, self.d, self.dropout, self.shapes())
    }

    fn build(&self, regime: Regime) -> Result<Box<dyn Model>, String> {
        let spec = self.clone();
        let mut desc = Description { name: self.name.clone(), shapes: self.shapes(), num_params: 0, regime, device: device_info() };
        let mut num_params = 0;
        let run = CharLmRun::new(desc.clone(), self.batch, self.seq, |device| {
            let model = spec.init(device);
            num_params = model.num_params();
            model
        });
        desc.num_params = num_params;
        Ok(Box::new(run.with_description(desc)))
    }
}
