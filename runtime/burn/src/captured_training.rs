//! A user's own training step, captured: recorded once after warm-up, its first replays checked
//! against an eager step from the same state, then replayed with each call's batch written in
//! place. Any failure or mismatch leaves eager execution in force for the rest of the run with
//! one warning; the caller always gets the step's outputs and a model trained as Burn trains it.
//!
//! ```ignore
//! let adam = blaze_burn::DeviceAdam::from_config(&AdamConfig::new());  // Burn's Adam, held in place
//! let step = |net: Net, adam: &mut DeviceAdam, (x, y): &(Tensor<2, Int>, Tensor<1, Int>)| {
//!     let loss = net.loss(x.clone(), y.clone());                       // on autodiff tensors
//!     let grads = GradientsParams::from_grads(loss.backward(), &net);
//!     (adam.update(net, grads), loss.inner())                          // state written in place
//! };
//! let mut train = blaze_burn::CapturedTraining::new(&device, net, adam, step);
//! for (lr, batch) in schedule.zip(batches) {
//!     let loss = train.run(lr, batch);        // eager, then recorded, checked, replayed
//!     let value = loss.into_scalar();         // read after the step, outside any recording
//! }
//! let net = train.into_module();
//! ```
//!
//! What the step must be, beyond what a captured forward step must be (`crate::CapturedForward`):
//! * its optimizer is [`DeviceAdam`] (`update`), so parameters and moments stay in their
//!   buffers and the learning rate and bias corrections are device scalars written before each
//!   call, outside the recording (a schedule's rate changes are honoured);
//! * it changes no other state (a batch norm's running statistics, a host step counter) and
//!   draws no randomness from the host (Burn's dropout): a replay would repeat the recorded
//!   values. Dropout can be recorded with a [`crate::SeededDropout`] layer (or
//!   [`crate::DeviceDropout::forward_seeded`]), its seed
//!   one of the call's inputs ([`crate::DeviceDropout::next_seed`]), written in place as the
//!   batch is;
//!   The checked replays refuse what changes the numbers; state read only in evaluation is the
//!   caller's to keep out;
//! * `device` is the plain device (recording happens there); the step runs on its autodiff.
//!
//! Checking a replay: at recording, the state (parameters, moments, step scalars) is copied
//! into new buffers, and for the recorded call and the next [`CHECKED_REPLAYS`] calls that copy
//! takes the same step eagerly; outputs and parameters of both must agree within the
//! verification tolerance. On a mismatch the copy, which Burn's eager execution computed, is
//! the state from then on. (A recording's state cannot be rewound and replayed again instead:
//! on lavapipe, parameters written back from a host copy between two replays did not reach
//! the buffers the recording reads.) The copy costs the model and its
//! moments once more in device memory, and a read of the parameters per checked call.
use crate::capture::{PREPARE_LAUNCHES, Recorded, record_graph};
use crate::captured_step::{CHECKED_REPLAYS, HandOut, State, StepInputs, StepOutputs, WARM_CALLS, difference};
use crate::device_adam::DeviceAdam;
use crate::params::{copy_parameters, parameter_values};
use blaze_ir::plan::Regime;
use blaze_runtime::captured::{Decision, decide};
use burn::module::Module;
use burn::tensor::Device;

/// A training step captured for a user's program (see the module docs).
pub struct CapturedTraining<M, I, O, F> {
    device: Device,
    trainee: Trainee<M>,
    step: F,
    inputs: Option<I>,
    state: State<O>,
    replays: usize,
    /// The eager copy the recorded call and the checked replays are compared with.
    copy: Option<Trainee<M>>,
    /// Held from recording until a fallback: the bundle's op-stream watch ignores captured steps.
    capturing: Option<blaze_runtime::watch::Capturing>,
    /// Made with [`CapturedTraining::from_bundle`]: the bundle decides whether to record.
    bundle: Option<(blaze_runtime::CaptureSource, Regime)>,
    /// Replays hand out copies (always, except under the `measure` feature's hook).
    hand_out: HandOut,
}

/// What a training step changes: the module's parameters and the optimizer's state.
struct Trainee<M> {
    /// Handed through the step by value (None only while it runs).
    module: Option<M>,
    adam: DeviceAdam,
}

impl<M: Module> Trainee<M> {
    fn module(&self) -> &M {
        self.module.as_ref().expect("the module is held between steps")
    }

    /// A copy in new buffers (copy kernels on the device).
    fn copy(&self) -> Self {
        Trainee { module: Some(copy_parameters(self.module())), adam: self.adam.duplicate() }
    }

    /// One step of `step`; its outputs, and why its optimizer could not write in place.
    fn step<I, O>(
        &mut self,
        step: &mut impl FnMut(M, &mut DeviceAdam, &I) -> (M, O),
        inputs: &I,
    ) -> (O, Option<String>) {
        let (module, out) = step(self.module.take().expect("the module is held between steps"), &mut self.adam, inputs);
        self.module = Some(module);
        (out, self.adam.take_failure())
    }

    fn next_step(&mut self, lr: f64, device: &Device) -> Result<(), String> {
        self.adam.next_step(lr, device).map_err(|e| format!("the step's scalars: {e}"))
    }
}

impl<M: Module, I: StepInputs, O: StepOutputs, F: Fn(M, &mut DeviceAdam, &I) -> (M, O)> CapturedTraining<M, I, O, F> {
    /// A captured training step of `module` with `adam`, recorded on the plain `device`.
    ///
    /// The step is `Fn`: while a call is recorded and checked it runs more than once (eager
    /// preparing launches on a throwaway copy of the module and the `DeviceAdam`, the recorded
    /// launch, the eager copy it is compared with), and only what it is handed is copied. State
    /// it holds itself would take every one of those steps, so a step that updates any (Burn's
    /// own optimizer, a host step counter) does not compile:
    ///
    /// ```compile_fail,E0596
    /// use blaze_burn::{CapturedTraining, DeviceAdam};
    /// use burn::nn::{Linear, LinearConfig};
    /// use burn::optim::{AdamConfig, GradientsParams, Optimizer};
    /// use burn::tensor::Tensor;
    /// let device = blaze_burn::default_device();
    /// let net: Linear = LinearConfig::new(4, 1).init(&device.clone().autodiff());
    /// let mut optim = AdamConfig::new().init(); // Burn's Adam, held by the step itself
    /// let step = |net: Linear, _: &mut DeviceAdam, x: &Tensor<2>| {
    ///     let loss = net.forward(x.clone()).mean();
    ///     let grads = GradientsParams::from_grads(loss.backward(), &net);
    ///     (optim.step(1e-3, net, grads), loss.inner())
    /// };
    /// let train = CapturedTraining::new(&device, net, DeviceAdam::new(0.9, 0.999, 1e-8), step);
    /// ```
    pub fn new(device: &Device, module: M, adam: DeviceAdam, step: F) -> Self {
        Self {
            device: device.clone(),
            trainee: Trainee { module: Some(module), adam },
            step,
            inputs: None,
            state: State::Warming(0),
            replays: 0,
            copy: None,
            capturing: None,
            bundle: None,
            hand_out: HandOut::Copy,
        }
    }

    /// Measuring only (the `measure` feature, never a user's build): steady replays hand out
    /// the recording's own output buffers, which the next call overwrites, so the cost of the
    /// copies [`CapturedTraining::run`] makes can be timed against this.
    #[cfg(feature = "measure")]
    pub fn without_output_copies(mut self) -> Self {
        self.hand_out = HandOut::Shared;
        self
    }

    /// The step as the bundle of `blaze` says ([`blaze_runtime::captured::decide`]): recorded
    /// (as [`CapturedTraining::new`]) when the entry installed for the op stream this step runs
    /// is a captured training entry, eager when that entry runs eagerly; when no entry is
    /// recognised, recorded if the bundle holds a captured training entry for this device.
    pub fn from_bundle(
        blaze: &blaze_runtime::BundleHandle,
        device: &Device,
        module: M,
        adam: DeviceAdam,
        step: F,
    ) -> Self {
        Self { bundle: Some((blaze.capture_source(), Regime::Training)), ..Self::new(device, module, adam, step) }
    }

    /// The same step never recorded (eager execution, e.g. when the bundle's entry for the
    /// training regime does not ask for captured execution).
    pub fn eager(device: &Device, module: M, adam: DeviceAdam, step: F, why: &str) -> Self {
        Self { state: State::Eager(why.into()), ..Self::new(device, module, adam, step) }
    }

    /// Runs one step at learning rate `lr` on `inputs` and returns its outputs (read them
    /// after this returns; they are the caller's, never changed by a later call). Each call starts at a device sync: the step boundary a bundle's
    /// plans need ([`crate::step_boundary`]), which a recording needs anyway.
    pub fn run(&mut self, lr: f64, inputs: I) -> O {
        crate::step_boundary(&self.device);
        let scalars = self.trainee.next_step(lr, &self.device);
        let copy_scalars = self.copy.as_mut().map_or(Ok(()), |c| c.next_step(lr, &self.device));
        match std::mem::replace(&mut self.state, State::Eager(String::new())) {
            State::Warming(n) if n < WARM_CALLS => {
                self.state = State::Warming(n + 1);
                self.trainee.step(&mut self.step, &inputs).0
            }
            State::Warming(_) => match (decide(self.bundle.as_ref()), scalars) {
                (Decision::Record, Ok(())) => self.record(inputs),
                (Decision::Record, Err(cause)) => self.fall_back(cause, Some(inputs)),
                (Decision::Eager(why), _) => {
                    self.state = State::Eager(why);
                    self.trainee.step(&mut self.step, &inputs).0
                }
            },
            State::Checking(graph, left) => match copy_scalars {
                Ok(()) => self.checked_replay(graph, left, inputs, scalars),
                Err(cause) => self.fall_back(cause, Some(inputs)),
            },
            State::Replaying(graph) => self.replay(graph, inputs, scalars),
            State::Eager(why) => {
                self.state = State::Eager(why);
                self.trainee.step(&mut self.step, &inputs).0
            }
        }
    }

    /// `captured (N replays)`, `captured, checking (N replays)`, `warming up` or `eager: <cause>`.
    pub fn execution(&self) -> String {
        self.state.describe(self.replays)
    }

    pub fn is_captured(&self) -> bool {
        self.state.is_captured()
    }

    /// Device memory around the live recording.
    pub fn memory(&self) -> Option<blaze_runtime::RecordingMemory> {
        self.state.memory()
    }

    /// The module as trained so far.
    pub fn module(&self) -> &M {
        self.trainee.module()
    }

    /// The trained module and its optimizer (the recording is dropped).
    pub fn into_parts(self) -> (M, DeviceAdam) {
        (self.trainee.module.expect("the module is held between steps"), self.trainee.adam)
    }

    pub fn into_module(self) -> M {
        self.into_parts().0
    }

    /// Records this call's step. The preparing launches run on a throwaway copy of the state,
    /// so the state itself takes exactly one step: the recorded one, run by its first replay.
    fn record(&mut self, inputs: I) -> O {
        self.capturing = Some(blaze_runtime::watch::Capturing::begin());
        self.copy = Some(self.trainee.copy());
        // One throwaway copy takes the preparing launches (what they leave behind is dropped).
        let mut scratch = self.trainee.copy();
        let held = &*self.inputs.insert(inputs);
        let (trainee, step) = (&mut self.trainee, &mut self.step);
        let mut launches = 0;
        let recorded = record_graph(&self.device, || {
            launches += 1;
            match launches <= PREPARE_LAUNCHES {
                true => scratch.step(step, held).0,
                false => trainee.step(step, held).0,
            }
        });
        if let Some(e) = self.trainee.adam.take_failure() {
            return self.fall_back(format!("optimizer state not written in place: {e}"), None);
        }
        match recorded {
            Ok(graph) => self.check(graph, CHECKED_REPLAYS),
            Err(cause) => self.fall_back(format!("recording refused: {cause}"), None),
        }
    }

    /// Compares the outputs the recording or a replay just computed with the eager copy's
    /// step on the same inputs; replays from then on (after `left` more checks) if they agree.
    fn check(&mut self, graph: Recorded<O>, left: usize) -> O {
        let copy = self.copy.as_mut().expect("checked steps have an eager copy");
        // The copy runs eagerly only: a write it could not do in place changes nothing there.
        let (eager, _) = copy.step(&mut self.step, self.inputs.as_ref().expect("held"));
        let replayed = graph.outputs().copied();
        let expected = (eager.values(), parameter_values(copy.module()));
        let got = (replayed.values(), parameter_values(self.trainee.module()));
        let differs = difference(&expected.0, &got.0)
            .map(|d| format!("outputs: {d}"))
            .or_else(|| difference(&expected.1, &got.1).map(|d| format!("parameters: {d}")));
        if let Some(diff) = differs {
            let which = match self.replays {
                0 => "the recorded step".to_string(),
                n => format!("replay {n}"),
            };
            self.adopt_copy(format!("{which} differs from the same step run eagerly ({diff})"));
            return eager;
        }
        self.state = match left {
            0 => {
                self.copy = None;
                State::Replaying(graph)
            }
            _ => State::Checking(graph, left),
        };
        replayed
    }

    /// Writes `fresh` into the held inputs (after this call's step scalars were written) and
    /// replays. When `fresh` cannot be written in place, it is handed back with the reason.
    fn refresh_and_replay(
        &mut self,
        graph: &Recorded<O>,
        fresh: I,
        scalars: Result<(), String>,
    ) -> Result<(), (String, Option<I>)> {
        let held = self.inputs.as_mut().expect("recorded steps hold their inputs");
        if let Err(e) = held.check(&fresh) {
            return Err((format!("input refresh: {e}"), Some(fresh)));
        }
        held.write(fresh).map_err(|e| (format!("input refresh: {e}"), None))?;
        scalars.map_err(|e| (e, None))?;
        graph.replay().map_err(|e| (format!("replay: {e}"), None))?;
        self.trainee.adam.mark_applied();
        self.replays += 1;
        Ok(())
    }

    fn checked_replay(&mut self, graph: Recorded<O>, left: usize, fresh: I, scalars: Result<(), String>) -> O {
        match self.refresh_and_replay(&graph, fresh, scalars) {
            Ok(()) => self.check(graph, left - 1),
            Err((cause, unwritten)) => self.fall_back(cause, unwritten),
        }
    }

    fn replay(&mut self, graph: Recorded<O>, fresh: I, scalars: Result<(), String>) -> O {
        match self.refresh_and_replay(&graph, fresh, scalars) {
            Ok(()) => {
                // A copy: the next replay writes the recording's output buffers again.
                let out = self.hand_out.outputs(graph.outputs());
                self.state = State::Replaying(graph);
                out
            }
            Err((cause, unwritten)) => self.fall_back(cause, unwritten),
        }
    }

    /// Eager execution from now on, with one warning (the recording is dropped); the eager
    /// copy, when there is one, is the state from now on (it has not taken this call's step).
    fn fall_back(&mut self, cause: String, unwritten: Option<I>) -> O {
        self.adopt_copy(cause);
        match unwritten {
            Some(inputs) => self.trainee.step(&mut self.step, &inputs).0,
            None => {
                let held = self.inputs.take().expect("inputs are held once recording starts");
                let out = self.trainee.step(&mut self.step, &held).0;
                self.inputs = Some(held);
                out
            }
        }
    }

    /// Eager execution from now on, with one warning; the eager copy, if any, becomes the state.
    fn adopt_copy(&mut self, cause: String) {
        eprintln!("{}", blaze_runtime::captured::fallback_warning(&cause));
        self.capturing = None;
        self.state = State::Eager(cause);
        if let Some(copy) = self.copy.take() {
            self.trainee = copy;
        }
    }
}
