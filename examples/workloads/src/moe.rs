//! moe-e8k2 (docs/workloads.md): a character LM of embedding 128 -> 256, LayerNorm, router
//! Linear(256, 8) + softmax, top-2 gate weights as a dense mask, 8 expert MLPs
//! 256 -> 1024 -> 256 with GELU evaluated densely and summed by gate weight, residual,
//! linear 256 -> 128; cross-entropy. Every expert runs on every token (no dispatch), so the
//! workload measures dense matmuls plus the router's reductions and masks.
use crate::{task, text::VOCAB, trainer::CharLm};
use blaze_ir::plan::Regime;
use blaze_runtime::{Model, ModelFactory};
use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::{gelu, softmax};
use burn::tensor::{Device, Int, Tensor};

pub const EXPERTS: usize = 8;
pub const TOP_K: usize = 2;

#[derive(Module, Debug)]
pub struct Expert {
    up: Linear,
    down: Linear,
}

#[derive(Module, Debug)]
pub struct MoeLm {
    embed: Embedding,
    norm: LayerNorm,
    router: Linear,
    experts: Vec<Expert>,
    head: Linear,
}

/// `gates` with all but the 2 largest entries of the last dimension set to 0 (not
/// renormalised). Built from two max reductions and compares rather than a sort, so it stays
/// fusable; the mask is computed on detached values (a selection carries no gradient), the kept
/// weights keep theirs. Exact ties for second place (measure zero) would keep more than 2.
fn top2(gates: Tensor<3>) -> Tensor<3> {
    let g = gates.clone().detach();
    let first = g.clone().max_dim(2);
    // Gate weights are in [0, 1]; -1 removes the first from the second reduction.
    let second = g.clone().mask_fill(g.clone().greater_equal(first), -1.0).max_dim(2);
    gates.mask_fill(g.lower(second), 0.0)
}

impl CharLm for MoeLm {
    fn logits(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let x = self.embed.forward(tokens);
        let h = self.norm.forward(x.clone());
        let gates = top2(softmax(self.router.forward(h.clone()), 2));
        let mut mixed = x;
        for (e, expert) in self.experts.iter().enumerate() {
            let out = expert.down.forward(gelu(expert.up.forward(h.clone())));
            mixed = mixed + out * gates.clone().narrow(2, e, 1);
        }
        self.head.forward(mixed)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MoeSpec {
    pub name: String,
    pub d: usize,
    pub hidden: usize,
    pub batch: usize,
    pub seq: usize,
}

impl MoeSpec {
    /// moe-e8k2 at the reference shape (batch 16, sequence 256).
    pub fn moe() -> Self {
        Self { name: format!("moe-e{EXPERTS}k{TOP_K}"), d: 256, hidden: 1024, batch: 16, seq: 256 }
    }

    pub fn shapes(&self) -> String {
        format!("batch={} seq={} d={} experts={EXPERTS} top={TOP_K}", self.batch, self.seq, self.d)
    }

    fn init(&self, device: &Device) -> MoeLm {
        let expert = || Expert {
            up: LinearConfig::new(self.d, self.hidden).init(device),
            down: LinearConfig::new(self.hidden, self.d).init(device),
        };
        MoeLm {
            embed: EmbeddingConfig::new(VOCAB, self.d).init(device),
            norm: LayerNormConfig::new(self.d).init(device),
            router: LinearConfig::new(self.d, EXPERTS).init(device),
            experts: (0..EXPERTS).map(|_| expert()).collect(),
            head: LinearConfig::new(self.d, VOCAB).init(device),
        }
    }
}

impl ModelFactory for MoeSpec {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn summary(&self) -> String {
        format!("character LM, {EXPERTS} dense experts with top-{TOP_K} gates, residual; {}", self.shapes())
    }

    fn build(&self, regime: Regime) -> Result<Box<dyn Model>, String> {
        let desc = task::describe(&self.name, self.shapes(), regime);
        Ok(task::char_lm_run(desc, self.batch, self.seq, |device| self.init(device)))
    }
}
