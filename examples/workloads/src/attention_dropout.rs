//! gpt-small-device-dropout's forward: gpt-small's model, parameters and operations, with each
//! dropout's mask drawn by [`blaze_burn::DeviceDropout`] instead of Burn's host-seeded
//! generator, so its training step can be recorded and replayed with fresh masks.
//!
//! Burn's `TransformerEncoderLayer` and `MultiHeadAttention` call their `Dropout` modules from
//! inside their forward, so the blocks' forward is written out here, operation for operation as
//! burn-nn 0.22.1 writes it for a pre-LN layer (transformer/encoder.rs `forward`,
//! attention/mha.rs `forward`, transformer/pwff.rs `forward`), over the same modules. With the
//! masks off (no autodiff device, or probability 0) it computes what [`AttentionLm::forward`]
//! computes; a test holds it to that.
use crate::attention_model::AttentionLm;
use blaze_burn::DeviceDropout;
use burn::nn::Linear;
use burn::nn::attention::MultiHeadAttention;
use burn::nn::transformer::TransformerEncoderLayer;
use burn::tensor::activation::{quiet_softmax, softmax};
use burn::tensor::{Bool, Int, Tensor};

/// Dropout sites per block: attention weights, the attention residual, the MLP's hidden
/// activations, the MLP residual.
const SITES_PER_BLOCK: u32 = 4;

impl AttentionLm {
    /// [`AttentionLm::forward`] with every dropout mask drawn by `dropout`.
    pub fn forward_dropping(&self, tokens: Tensor<2, Int>, dropout: &DeviceDropout) -> Tensor<3> {
        let (mut x, mask) = self.embed(tokens);
        for (i, layer) in self.blocks.layers.iter().enumerate() {
            x = block(layer, x, mask.clone(), dropout, SITES_PER_BLOCK * i as u32);
        }
        self.logits_of(x)
    }
}

/// A pre-LN `TransformerEncoderLayer::forward` with its dropouts at sites `site..site + 4`.
fn block(
    layer: &TransformerEncoderLayer,
    x: Tensor<3>,
    mask_attn: Tensor<3, Bool>,
    dropout: &DeviceDropout,
    site: u32,
) -> Tensor<3> {
    assert!(layer.norm_first, "gpt-small's blocks normalise first");
    let residual = layer.norm_2.forward(x.clone());
    let residual = attention(&layer.mha, residual, mask_attn, dropout, site);
    let residual = dropout.forward(&layer.dropout, residual, site + 1);
    let x = x + residual;
    let residual = layer.norm_1.forward(x.clone());
    let pwff = &layer.pwff;
    let hidden = pwff.activation.forward(pwff.linear_inner.forward(residual));
    let residual = pwff.linear_outer.forward(dropout.forward(&pwff.dropout, hidden, site + 2));
    let residual = dropout.forward(&layer.dropout, residual, site + 3);
    x + residual
}

/// `MultiHeadAttention::forward` for self-attention under `mask_attn`, the attention weights'
/// dropout at `site`; returns the context.
fn attention(
    mha: &MultiHeadAttention,
    x: Tensor<3>,
    mask_attn: Tensor<3, Bool>,
    dropout: &DeviceDropout,
    site: u32,
) -> Tensor<3> {
    let [batch, seq, d_model] = x.dims();
    let heads = |linear: &Linear| linear.forward(x.clone()).reshape([batch, seq, mha.n_heads, mha.d_k]).swap_dims(1, 2);
    let (query, key, value) = (heads(&mha.query), heads(&mha.key), heads(&mha.value));
    let scores = query.matmul(key.transpose()).div_scalar((mha.d_k as f32).sqrt());
    let [b, s1, s2] = mask_attn.dims();
    let scores = scores.mask_fill(mask_attn.reshape([b, 1, s1, s2]), mha.min_float);
    let weights = match mha.quiet_softmax {
        true => quiet_softmax(scores, 3),
        false => softmax(scores, 3),
    };
    let weights = dropout.forward(&mha.dropout, weights, site);
    let context = weights.matmul(value).swap_dims(1, 2).reshape([batch, seq, d_model]);
    mha.output.forward(context)
}
