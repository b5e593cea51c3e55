//! attention-d{256,257,258} and gpt-small (docs/workloads.md): a character LM with token and
//! learned position embeddings, pre-LN transformer blocks (Burn's TransformerEncoder, GELU MLP
//! d -> 4d -> d), causal mask, final LayerNorm, linear d -> 128, cross-entropy.
pub use crate::attention_model::AttentionLm;
use crate::{
    device::device_info,
    trainer::{CharLm, CharLmRun},
};
use blaze_ir::plan::Regime;
use blaze_runtime::{Description, Model, ModelFactory};
use burn::module::Module;
use burn::tensor::{Device, Int, Tensor};

/// Architecture and input shape of one attention workload.
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionSpec {
    pub name: String,
    pub d: usize,
    pub layers: usize,
    pub heads: usize,
    pub dropout: f64,
    /// Dropout masks drawn on the device ([`blaze_burn::DeviceDropout`]) instead of Burn's
    /// host-seeded generator: gpt-small-device-dropout.
    pub device_dropout: bool,
    pub batch: usize,
    pub seq: usize,
}

impl AttentionSpec {
    /// attention-d{d} at the reference shape (batch 16, sequence 256).
    pub fn attention(d: usize) -> Self {
        Self {
            name: format!("attention-d{d}"),
            d,
            layers: 2,
            heads: 1,
            dropout: 0.0,
            device_dropout: false,
            batch: 16,
            seq: 256,
        }
    }

    /// gpt-small: as attention with d = 256, 4 blocks, 4 heads, dropout 0.1.
    pub fn gpt_small() -> Self {
        Self { name: "gpt-small".into(), d: 256, layers: 4, heads: 4, dropout: 0.1, ..Self::attention(256) }
    }

    /// gpt-small-device-dropout: gpt-small with its masks drawn on the device, so that its
    /// training step can be recorded. Not a reference workload: the same model as gpt-small
    /// in distribution, other numbers (another stream of masks); its forward regime is
    /// gpt-small's.
    pub fn gpt_small_device_dropout() -> Self {
        Self { name: DEVICE_DROPOUT_NAME.into(), device_dropout: true, ..Self::gpt_small() }
    }

    pub fn shapes(&self) -> String {
        format!("batch={} seq={} d={}", self.batch, self.seq, self.d)
    }

    fn init(&self, device: &Device) -> AttentionLm {
        AttentionLm::new(self.d, self.layers, self.heads, self.dropout, self.seq, device)
    }
}

/// The name of [`AttentionSpec::gpt_small_device_dropout`].
pub const DEVICE_DROPOUT_NAME: &str = "gpt-small-device-dropout";

impl CharLm for AttentionLm {
    fn logits(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        self.forward(tokens)
    }

    fn logits_dropping(&self, tokens: Tensor<2, Int>, dropout: &blaze_burn::DeviceDropout) -> Tensor<3> {
        self.forward_dropping(tokens, dropout)
    }
}

impl ModelFactory for AttentionSpec {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn summary(&self) -> String {
        format!(
            "character LM, {} pre-LN block(s), {} head(s), d={}, dropout {}{}; {}",
            self.layers,
            self.heads,
            self.d,
            self.dropout,
            if self.device_dropout { " (masks drawn on the device)" } else { "" },
            self.shapes()
        )
    }

    fn build(&self, regime: Regime) -> Result<Box<dyn Model>, String> {
        let spec = self.clone();
        let mut desc = Description {
            name: self.name.clone(),
            shapes: self.shapes(),
            num_params: 0,
            regime,
            device: device_info(),
        };
        let mut num_params = 0;
        let run = CharLmRun::new(desc.clone(), self.batch, self.seq, |device| {
            let model = spec.init(device);
            num_params = model.num_params();
            model
        });
        desc.num_params = num_params;
        let run = match self.dropout > 0.0 && !self.device_dropout {
            // Burn draws a dropout mask from a host seed; a recording would bake one mask in.
            true => run.refusing_training_capture(&format!(
                "dropout {} draws its masks from a host seed, which a recording would replay unchanged \
                 ({DEVICE_DROPOUT_NAME} is this model with its masks drawn on the device)",
                self.dropout
            )),
            false if self.device_dropout => run.with_device_dropout(),
            false => run,
        };
        Ok(Box::new(run.with_description(desc)))
    }
}
