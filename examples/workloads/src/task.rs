//! The runner for the workloads that are not character models (mlp, cnn, chain): a module, a
//! task that feeds it and scores it, Adam. Also the seeded host RNG their data comes from and a
//! helper that builds a character-model run, shared by lstm and moe.
use crate::{
    device,
    device::device_info,
    trainer::{self, CharLm, CharLmRun, LEARNING_RATE, SEED},
};
use blaze_ir::plan::Regime;
use blaze_runtime::{Description, Model, RecordFailure, RecordableStep, Recording, StepOutput};
use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};

/// The device of a regime (autodiff only in training), seeded before anything is initialised.
pub fn regime_device(regime: Regime) -> Device {
    let plain = device::default_device();
    let device = match regime {
        Regime::Training => plain.autodiff(),
        Regime::Forward => plain,
    };
    device.seed(SEED);
    device
}

/// What a non-sequence workload does besides its module: where batches come from and the loss.
pub trait Task: 'static {
    type Net: Module + 'static;
    /// Output [rows, classes] of the next batch and the scalar loss.
    fn forward_loss(&mut self, net: &Self::Net, device: &Device) -> (Tensor<2>, Tensor<1>);
    /// Width of the output, reported with captured logits.
    fn classes(&self) -> usize;
    /// Captured execution: writes the next batch into the task's stable inputs, in place.
    /// Default: the inputs are device tensors fixed for the whole run (mlp, chain), so there is
    /// nothing to write.
    fn refresh_inputs(&mut self, _device: &Device) -> Result<(), String> {
        Ok(())
    }
    /// Output and loss computed from the stable inputs, with no host write (it is recorded).
    /// Default: `forward_loss`, for tasks whose inputs are fixed device tensors.
    fn stable_forward_loss(&mut self, net: &Self::Net, device: &Device) -> (Tensor<2>, Tensor<1>) {
        self.forward_loss(net, device)
    }
}

pub struct TaskRun<T: Task> {
    desc: Description,
    device: Device,
    net: Option<T::Net>,
    optim: ModuleOptimizer,
    task: T,
    /// Captured training: Adam with its state held in place (replaces `optim`).
    in_place: Option<trainer::InPlaceTraining>,
}

impl<T: Task> TaskRun<T> {
    /// `init` builds the module and the task (its data) on the seeded regime device. The
    /// description's parameter count is filled in from the module.
    pub fn new(mut desc: Description, init: impl FnOnce(&Device) -> (T::Net, T)) -> Self {
        let device = regime_device(desc.regime);
        let (net, task) = init(&device);
        let net = trainer::init_params(net);
        desc.num_params = net.num_params();
        Self { desc, device, net: Some(net), optim: trainer::adam(), task, in_place: None }
    }

    pub fn net(&self) -> &T::Net {
        self.net.as_ref().expect("module present between steps")
    }

    pub fn task(&self) -> &T {
        &self.task
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// One training step with Adam held in place, from the stable inputs (recorded) or the
    /// next batch (eager); the outputs as plain tensors.
    fn in_place_step(&mut self, stable: bool) -> (Tensor<2>, Tensor<1>) {
        let net = self.net.take().expect("module present between steps");
        let (out, loss) = match stable {
            true => self.task.stable_forward_loss(&net, &self.device),
            false => self.task.forward_loss(&net, &self.device),
        };
        let training = self.in_place.as_mut().expect("held in place");
        let (net, out, loss) = training.step(net, out, loss, stable);
        self.net = Some(net);
        (out, loss)
    }
}

impl<T: Task> Model for TaskRun<T> {
    fn describe(&self) -> Description {
        self.desc.clone()
    }

    fn step(&mut self, read_logits: bool) -> StepOutput {
        if let Some(training) = &mut self.in_place {
            if let Err(e) = training.next_step() {
                eprintln!("warning: blaze: step scalars not written in place: {e}");
            }
            let (out, loss) = self.in_place_step(false);
            return blaze_burn::step_output(loss, &out, self.task.classes(), read_logits);
        }
        let net = self.net.take().expect("module present between steps");
        let (out, loss) = self.task.forward_loss(&net, &self.device);
        let net = match self.desc.regime {
            Regime::Training => {
                let grads = GradientsParams::from_grads(loss.backward(), &net);
                self.optim.step(LEARNING_RATE, net, grads)
            }
            Regime::Forward => net,
        };
        self.net = Some(net);
        blaze_burn::step_output(loss, &out, self.task.classes(), read_logits)
    }

    fn sync(&self) {
        let _ = self.device.sync();
    }

    fn parameters(&self) -> Vec<f32> {
        self.net.as_ref().map(blaze_burn::parameter_values).unwrap_or_default()
    }

    fn recordable(&mut self) -> Result<&mut dyn RecordableStep, String> {
        Ok(self)
    }
}

impl<T: Task> blaze_burn::capture::Rewind for TaskRun<T> {
    type Saved = Option<blaze_burn::capture::SavedTraining<T::Net>>;

    fn save(&self) -> Self::Saved {
        Some(self.in_place.as_ref()?.save(self.net.as_ref()?))
    }

    fn restore(&mut self, saved: Self::Saved) {
        if let (Some(saved), Some(training)) = (saved, self.in_place.as_mut()) {
            self.net = Some(training.restore(saved));
        }
    }
}

impl<T: Task> RecordableStep for TaskRun<T> {
    fn refresh_inputs(&mut self) -> Result<(), String> {
        self.task.refresh_inputs(&self.device)?;
        self.in_place.as_mut().map_or(Ok(()), |t| t.next_step())
    }

    fn hold_state_in_place(&mut self) -> Result<(), String> {
        if self.desc.regime == Regime::Training {
            self.in_place = Some(trainer::InPlaceTraining::new(&self.device));
        }
        Ok(())
    }

    fn record(&mut self) -> Result<Box<dyn Recording>, RecordFailure> {
        if let Some(training) = &self.in_place {
            let plain = training.plain().clone();
            let classes = self.task.classes();
            return blaze_burn::capture::record_training(
                self,
                &plain,
                |run| run.in_place_step(true),
                |run| run.refresh_inputs(),
                move |(out, loss), capture| blaze_burn::step_output(loss.clone(), out, classes, capture),
                |run| run.in_place.as_mut().and_then(|t| t.take_failure()),
            );
        }
        if self.desc.regime == Regime::Training {
            return Err(
                "a training step is recorded only with its state held in place (RecordableStep::hold_state_in_place)"
                    .into(),
            );
        }
        let Self { net, task, device, .. } = self;
        let net = net.as_ref().expect("module present between steps");
        let classes = task.classes();
        blaze_burn::record(
            device,
            || task.stable_forward_loss(net, device),
            move |(out, loss), capture| blaze_burn::step_output(loss.clone(), out, classes, capture),
        )
    }
}

/// Description of a workload before its parameters are counted.
pub fn describe(name: &str, shapes: String, regime: Regime) -> Description {
    Description { name: name.into(), shapes, num_params: 0, regime, device: device_info() }
}

/// A character-model run of `init`'s module, described with its parameter count.
pub fn char_lm_run<M: CharLm>(
    desc: Description,
    batch: usize,
    seq: usize,
    init: impl FnOnce(&Device) -> M,
) -> Box<dyn Model> {
    let mut desc = desc;
    let mut num_params = 0;
    let run = CharLmRun::new(desc.clone(), batch, seq, |device| {
        let model = init(device);
        num_params = model.num_params();
        model
    });
    desc.num_params = num_params;
    Box::new(run.with_description(desc))
}

/// Seeded host RNG for workload data: identical on every device and machine, and independent
/// of the device RNG, so data never shifts the (lazy) parameter initialisation.
pub struct HostRng(u64);

impl HostRng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// xorshift64*, as the text batcher uses.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in (0, 1].
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// `n` standard normal samples (Box-Muller, both outputs used).
    pub fn normal(&mut self, n: usize) -> Vec<f32> {
        let mut out = Vec::with_capacity(n + 1);
        while out.len() < n {
            let (u, v) = (self.uniform(), self.uniform());
            let r = (-2.0 * u.ln()).sqrt();
            let t = std::f64::consts::TAU * v;
            out.push((r * t.cos()) as f32);
            out.push((r * t.sin()) as f32);
        }
        out.truncate(n);
        out
    }
}
