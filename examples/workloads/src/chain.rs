//! chain-32 (docs/workloads.md): 32 elementwise ops, 8 × [tanh(1.01x + 0.1), exp(−x²), x·w,
//! sigmoid(x − 0.5)] with one learned scalar w, MSE against the input, on a fixed 4096 × 4096
//! standard-normal input. Nothing but elementwise work: the best case for fusion.
use crate::task::{self, HostRng, Task, TaskRun};
use blaze_ir::plan::Regime;
use blaze_runtime::{Model, ModelFactory};
use burn::module::{Module, Param};
use burn::nn::loss::{MseLoss, Reduction};
use burn::tensor::activation::sigmoid;
use burn::tensor::{Device, Tensor, TensorData};

pub const REPEATS: usize = 8;

#[derive(Module, Debug)]
pub struct Chain {
    /// The one learned scalar. The definition leaves its start open; 1 makes x·w the identity.
    w: Param<Tensor<1>>,
}

impl Chain {
    pub fn init(device: &Device) -> Self {
        Self { w: Param::from_tensor(Tensor::<1>::ones([1], device)) }
    }

    pub fn forward(&self, mut x: Tensor<2>) -> Tensor<2> {
        let w = self.w.val().reshape([1, 1]);
        for _ in 0..REPEATS {
            x = x.mul_scalar(1.01).add_scalar(0.1).tanh();
            x = x.square().neg().exp();
            x = x * w.clone();
            x = sigmoid(x.sub_scalar(0.5));
        }
        x
    }
}

/// The fixed input, which is also the target.
pub struct Identity {
    input: Tensor<2>,
    cols: usize,
}

impl Task for Identity {
    type Net = Chain;

    fn forward_loss(&mut self, net: &Chain, _device: &Device) -> (Tensor<2>, Tensor<1>) {
        let out = net.forward(self.input.clone());
        let loss = MseLoss::new().forward(out.clone(), self.input.clone(), Reduction::Mean);
        (out, loss)
    }

    fn classes(&self) -> usize {
        self.cols
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ChainSpec {
    pub name: String,
    pub rows: usize,
    pub cols: usize,
}

impl ChainSpec {
    /// chain-32 at the reference shape (4096 × 4096).
    pub fn chain() -> Self {
        Self { name: "chain-32".into(), rows: 4096, cols: 4096 }
    }

    /// The same chain on a `rows` × `cols` input, named `chain-32-b{rows}s{cols}` (the batch and
    /// sequence overrides read as rows and columns).
    pub fn with_shape(rows: usize, cols: usize) -> Self {
        Self { name: format!("chain-32-b{rows}s{cols}"), rows, cols }
    }

    pub fn shapes(&self) -> String {
        format!("rows={} cols={}", self.rows, self.cols)
    }

    pub fn run(&self, regime: Regime) -> TaskRun<Identity> {
        let (rows, cols) = (self.rows, self.cols);
        TaskRun::new(task::describe(&self.name, self.shapes(), regime), |device| {
            let data = HostRng::new(crate::trainer::SEED).normal(rows * cols);
            let input = Tensor::<2>::from_data(TensorData::new(data, [rows, cols]), device);
            (Chain::init(device), Identity { input, cols })
        })
    }
}

impl ModelFactory for ChainSpec {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn summary(&self) -> String {
        format!("{} elementwise ops with one learned scalar, MSE to the input; {}", 4 * REPEATS, self.shapes())
    }

    fn build(&self, regime: Regime) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(self.run(regime)))
    }
}
