//! lstm-h256 (docs/workloads.md): a character LM of embedding 128 -> 256, one LSTM layer
//! (Burn's Lstm, hidden 256, with biases), linear 256 -> 128; cross-entropy. The recurrence is a
//! chain of `seq` small steps, the opposite of the attention workloads' few large kernels.
use crate::{task, text::VOCAB, trainer::CharLm};
use blaze_ir::plan::Regime;
use blaze_runtime::{Model, ModelFactory};
use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig, Lstm, LstmConfig};
use burn::tensor::{Device, Int, Tensor};

#[derive(Module, Debug)]
pub struct LstmLm {
    embed: Embedding,
    lstm: Lstm,
    head: Linear,
}

impl CharLm for LstmLm {
    fn logits(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let (hidden, _state) = self.lstm.forward(self.embed.forward(tokens), None);
        self.head.forward(hidden)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LstmSpec {
    pub name: String,
    pub hidden: usize,
    pub batch: usize,
    pub seq: usize,
}

impl LstmSpec {
    /// lstm-h256 at the reference shape (batch 32, sequence 64).
    pub fn lstm() -> Self {
        Self { name: "lstm-h256".into(), hidden: 256, batch: 32, seq: 64 }
    }

    pub fn shapes(&self) -> String {
        format!("batch={} seq={} hidden={}", self.batch, self.seq, self.hidden)
    }

    fn init(&self, device: &Device) -> LstmLm {
        LstmLm {
            embed: EmbeddingConfig::new(VOCAB, self.hidden).init(device),
            lstm: LstmConfig::new(self.hidden, self.hidden, true).init(device),
            head: LinearConfig::new(self.hidden, VOCAB).init(device),
        }
    }
}

impl ModelFactory for LstmSpec {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn summary(&self) -> String {
        format!("character LM, one LSTM layer; {}", self.shapes())
    }

    fn build(&self, regime: Regime) -> Result<Box<dyn Model>, String> {
        let desc = task::describe(&self.name, self.shapes(), regime);
        Ok(task::char_lm_run(desc, self.batch, self.seq, |device| self.init(device)))
    }
}
