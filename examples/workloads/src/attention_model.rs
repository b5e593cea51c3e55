//! The attention language model itself (docs/workloads.md), depending on Burn only, so the
//! overhead benchmark can build it against stock Burn too.
use burn::module::Module;
use burn::nn::attention::generate_autoregressive_mask;
use burn::nn::transformer::{TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput};
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::{Bool, Device, Int, Tensor};

/// Vocabulary: the 128 ASCII codes.
pub const VOCAB: usize = 128;

#[derive(Module, Debug)]
pub struct AttentionLm {
    token: Embedding,
    position: Embedding,
    /// Burn's pre-LN blocks (read by gpt-small-device-dropout's own forward of them).
    pub(crate) blocks: TransformerEncoder,
    norm: LayerNorm,
    head: Linear,
}

impl AttentionLm {
    /// Token + learned position embeddings, `layers` pre-LN blocks with `heads` heads and a GELU
    /// MLP d -> 4d -> d, final LayerNorm, linear d -> 128.
    pub fn new(d: usize, layers: usize, heads: usize, dropout: f64, seq: usize, device: &Device) -> Self {
        let blocks = TransformerEncoderConfig::new(d, 4 * d, heads, layers).with_norm_first(true).with_dropout(dropout);
        AttentionLm {
            token: EmbeddingConfig::new(VOCAB, d).init(device),
            position: EmbeddingConfig::new(seq, d).init(device),
            blocks: blocks.init(device),
            norm: LayerNormConfig::new(d).init(device),
            head: LinearConfig::new(d, VOCAB).init(device),
        }
    }

    /// Logits [batch, seq, 128] under a causal mask.
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let (x, mask) = self.embed(tokens);
        let x = self.blocks.forward(TransformerEncoderInput::new(x).mask_attn(mask));
        self.logits_of(x)
    }

    /// The blocks' input (token + position embeddings) and the causal mask.
    pub fn embed(&self, tokens: Tensor<2, Int>) -> (Tensor<3>, Tensor<3, Bool>) {
        let [batch, seq] = tokens.dims();
        let device = tokens.device();
        let positions = Tensor::<1, Int>::arange(0..seq as i64, &device).reshape([1, seq]).repeat_dim(0, batch);
        let x = self.token.forward(tokens) + self.position.forward(positions);
        (x, generate_autoregressive_mask(batch, seq, &device))
    }

    /// Logits from the blocks' output: final LayerNorm, linear d -> 128.
    pub fn logits_of(&self, x: Tensor<3>) -> Tensor<3> {
        self.head.forward(self.norm.forward(x))
    }
}
