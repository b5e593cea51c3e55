//! mlp-w1024, mlp-w1025 (docs/workloads.md): 4 residual blocks
//! x + Linear(w,w)(GELU(Linear(w,w)(LayerNorm(x)))), MSE against a fixed random target, on a
//! fixed 4096 × w standard-normal input. w = 1025 is the odd width next to a round one.
use crate::task::{self, HostRng, Task, TaskRun};
use blaze_ir::plan::Regime;
use blaze_runtime::{Model, ModelFactory};
use burn::module::Module;
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::{LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::gelu;
use burn::tensor::{Device, Tensor, TensorData};

pub const BLOCKS: usize = 4;

#[derive(Module, Debug)]
pub struct Block {
    norm: LayerNorm,
    up: Linear,
    down: Linear,
}

#[derive(Module, Debug)]
pub struct Mlp {
    blocks: Vec<Block>,
}

impl Mlp {
    pub fn init(w: usize, device: &Device) -> Self {
        let block = || Block {
            norm: LayerNormConfig::new(w).init(device),
            up: LinearConfig::new(w, w).init(device),
            down: LinearConfig::new(w, w).init(device),
        };
        Self { blocks: (0..BLOCKS).map(|_| block()).collect() }
    }

    pub fn forward(&self, mut x: Tensor<2>) -> Tensor<2> {
        for b in &self.blocks {
            x = x.clone() + b.down.forward(gelu(b.up.forward(b.norm.forward(x))));
        }
        x
    }
}

/// The fixed input and target; every step sees the same pair.
pub struct Regression {
    input: Tensor<2>,
    target: Tensor<2>,
    width: usize,
}

impl Regression {
    /// `rows` × `width` input then target, both standard normal from the host RNG seeded 0.
    pub fn new(rows: usize, width: usize, device: &Device) -> Self {
        let mut rng = HostRng::new(crate::trainer::SEED);
        let mut upload = || Tensor::<2>::from_data(TensorData::new(rng.normal(rows * width), [rows, width]), device);
        let input = upload();
        let target = upload();
        Self { input, target, width }
    }
}

impl Task for Regression {
    type Net = Mlp;

    fn forward_loss(&mut self, net: &Mlp, _device: &Device) -> (Tensor<2>, Tensor<1>) {
        let out = net.forward(self.input.clone());
        let loss = MseLoss::new().forward(out.clone(), self.target.clone(), Reduction::Mean);
        (out, loss)
    }

    fn classes(&self) -> usize {
        self.width
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MlpSpec {
    pub name: String,
    pub width: usize,
    /// Rows of the input (the batch).
    pub rows: usize,
}

impl MlpSpec {
    /// mlp-w{width} at the reference shape (4096 rows).
    pub fn mlp(width: usize) -> Self {
        Self { name: format!("mlp-w{width}"), width, rows: 4096 }
    }

    /// The same model on `rows` rows, named `mlp-w{width}-b{rows}`.
    pub fn with_rows(self, rows: usize) -> Self {
        Self { name: format!("mlp-w{}-b{rows}", self.width), rows, ..self }
    }

    pub fn shapes(&self) -> String {
        format!("rows={} w={}", self.rows, self.width)
    }

    pub fn run(&self, regime: Regime) -> TaskRun<Regression> {
        let (w, rows) = (self.width, self.rows);
        TaskRun::new(task::describe(&self.name, self.shapes(), regime), |device| {
            (Mlp::init(w, device), Regression::new(rows, w, device))
        })
    }
}

impl ModelFactory for MlpSpec {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn summary(&self) -> String {
        format!("{BLOCKS} pre-LN residual GELU blocks, MSE to a fixed random target; {}", self.shapes())
    }

    fn build(&self, regime: Regime) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(self.run(regime)))
    }
}
