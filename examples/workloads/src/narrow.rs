//! narrow-head-mlp: not a reference workload, a reproduction attempt of a reported Burn fusion
//! defect (tracel-ai/burn#5122: on CUDA, the batched forward of a small MLP whose head
//! narrows to one column, `... -> Linear(_, 1) -> tanh`, is wrong with fusion and right without;
//! row 0 right, later rows wrong). Linear(16,64) tanh, Linear(64,32) tanh, Linear(32,1) tanh on
//! a fixed `rows` × 16 standard-normal batch; MSE to a fixed random target in (-1, 1).
use crate::task::{self, HostRng, Task, TaskRun};
use blaze_ir::plan::Regime;
use blaze_runtime::{Model, ModelFactory};
use burn::module::Module;
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor, TensorData};

pub const NAME: &str = "narrow-head-mlp";
const INPUT: usize = 16;

#[derive(Module, Debug)]
pub struct NarrowMlp {
    a: Linear,
    b: Linear,
    head: Linear,
}

impl NarrowMlp {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let x = self.a.forward(x).tanh();
        let x = self.b.forward(x).tanh();
        self.head.forward(x).tanh()
    }
}

pub struct NarrowTask {
    input: Tensor<2>,
    target: Tensor<2>,
}

impl Task for NarrowTask {
    type Net = NarrowMlp;

    fn forward_loss(&mut self, net: &NarrowMlp, _device: &Device) -> (Tensor<2>, Tensor<1>) {
        let out = net.forward(self.input.clone());
        let loss = MseLoss::new().forward(out.clone(), self.target.clone(), Reduction::Mean);
        (out, loss)
    }

    fn classes(&self) -> usize {
        1
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct NarrowSpec {
    pub name: String,
    pub rows: usize,
}

impl NarrowSpec {
    /// 64 rows by default; `-b<rows>` in the name records another batch.
    pub fn with_rows(rows: Option<usize>) -> Self {
        match rows {
            Some(rows) => Self { name: format!("{NAME}-b{rows}"), rows },
            None => Self { name: NAME.into(), rows: 64 },
        }
    }

    fn run(&self, regime: Regime) -> TaskRun<NarrowTask> {
        let rows = self.rows;
        TaskRun::new(task::describe(&self.name, format!("rows={rows} in={INPUT}"), regime), move |device| {
            let net = NarrowMlp {
                a: LinearConfig::new(INPUT, 64).init(device),
                b: LinearConfig::new(64, 32).init(device),
                head: LinearConfig::new(32, 1).init(device),
            };
            let mut rng = HostRng::new(crate::trainer::SEED);
            let input = Tensor::<2>::from_data(TensorData::new(rng.normal(rows * INPUT), [rows, INPUT]), device);
            let target: Vec<f32> = rng.normal(rows).into_iter().map(|v| (v * 0.5).tanh()).collect();
            let target = Tensor::<2>::from_data(TensorData::new(target, [rows, 1]), device);
            (net, NarrowTask { input, target })
        })
    }
}

impl ModelFactory for NarrowSpec {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn summary(&self) -> String {
        format!(
            "tracel-ai/burn#5122 reproduction attempt: MLP 16-64-32-1, tanh, narrow [N, 1] head; rows={}",
            self.rows
        )
    }

    fn build(&self, regime: Regime) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(self.run(regime)))
    }
}
