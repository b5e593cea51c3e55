//! Recording a step with CubeCL's graph capture (Burn 0.22.1), for captured execution.
//!
//! Burn's own `burn::tensor::capture` swallows the error of a failed recording and silently
//! re-runs the closure on every "replay" (`Graph::is_hardware` false), which a user cannot tell
//! from a real replay. [`record`] goes through the calls underneath it
//! (`Dispatch::graph_prepare / graph_start_capture / graph_stop_capture / graph_replay`), so a
//! recording either exists or its error is returned, with the cause in one line: the backend
//! has no graph support, a host write or read inside the window, no room in the memory pools.
//!
//! [`StableInput`] is how a model keeps a step input in one device buffer for the whole run.
use blaze_runtime::{RecordFailure, Recording, RecordingMemory, StepOutput, StepRecorder};
use burn::backend::{Backend, Dispatch, DispatchGraph};
use burn::tensor::{Device, Float, Tensor, kind::Basic};

/// Eager launches of the recorded form between `graph_prepare` and recording: the first
/// explores and compiles the plan for it, the next ones fill the persistent pools the
/// recording must allocate from (Burn's `capture` runs three).
pub const PREPARE_LAUNCHES: usize = 3;

/// Records one `launch` of a step on `device` (the plain device: autodiff has no graph
/// support) after [`PREPARE_LAUNCHES`] eager ones, for a model's
/// `blaze_runtime::RecordableStep`: `launch` registers the step's work on stable inputs and
/// returns the tensors its outputs are read from; `read` reads them after the recording or a
/// replay.
pub fn record<T: 'static>(
    device: &Device,
    launch: impl FnMut() -> T,
    read: impl FnMut(&T, bool) -> StepOutput + 'static,
) -> Result<Box<dyn Recording>, RecordFailure> {
    let graph = record_graph(device, launch)?;
    Ok(Box::new(Reading { graph, read: Box::new(read), prepared: Vec::new() }))
}

/// [`record`] for a step that changes state (a training step): each of the
/// [`PREPARE_LAUNCHES`] launches before the recorded one is a real step on a batch of its own.
/// Its outputs are read then (`Recording::prepared` hands them out, oldest first) and
/// `refresh` writes the next batch and step scalars before the next launch. The recorded
/// launch runs on what the last `refresh` wrote. A failure hands back the outputs of the
/// preparing steps that ran.
pub fn record_stepping<T: 'static>(
    device: &Device,
    launch: impl FnMut() -> T,
    mut refresh: impl FnMut() -> Result<(), String>,
    mut read: impl FnMut(&T, bool) -> StepOutput + 'static,
) -> Result<Box<dyn Recording>, RecordFailure> {
    let mut prepared = Vec::new();
    let graph = record_graph_stepping(device, launch, |outputs| {
        prepared.push(read(outputs, true));
        refresh()
    });
    match graph {
        Ok(graph) => Ok(Box::new(Reading { graph, read: Box::new(read), prepared })),
        Err(why) => Err(RecordFailure { why, ran: prepared }),
    }
}

/// Records one `launch` after [`PREPARE_LAUNCHES`] eager ones; the recording keeps the output
/// tensors the recorded launch returned, which every replay writes. The executed partition of
/// the recorded launch is observed.
pub fn record_graph<T>(device: &Device, launch: impl FnMut() -> T) -> Result<Recorded<T>, String> {
    record_graph_stepping(device, launch, |_| Ok(()))
}

/// [`record_graph`] with `between` called after each preparing launch has synced, with its
/// outputs (a stateful step reads them and refreshes its inputs there).
pub fn record_graph_stepping<T>(
    device: &Device,
    mut launch: impl FnMut() -> T,
    mut between: impl FnMut(&T) -> Result<(), String>,
) -> Result<Recorded<T>, String> {
    let dispatch = device.as_dispatch();
    let reserved_before = device.memory_pool_usage().map(|u| u.bytes_reserved);
    // Every launch starts at a sync, so its operations are numbered from 0 in each (a plan's
    // cut positions are shifted to that numbering: `blaze_runtime::captured::record_plan_on`).
    device.sync().map_err(|e| cause("the sync before the launches", e))?;
    Dispatch::graph_prepare(dispatch).map_err(|e| cause("graph_prepare", e))?;
    for _ in 0..PREPARE_LAUNCHES {
        // Kept alive across the sync: fusion skips work whose result is dropped undrained.
        let outputs = launch();
        if let Err(e) = device.sync() {
            // A prepared stream stays held until a stop closes it.
            let _ = Dispatch::graph_stop_capture(dispatch);
            return Err(cause("a launch before recording", e));
        }
        if let Err(e) = between(&outputs) {
            let _ = Dispatch::graph_stop_capture(dispatch);
            return Err(format!("between launches before recording: {e}"));
        }
        drop(outputs);
        if let Err(e) = device.sync() {
            let _ = Dispatch::graph_stop_capture(dispatch);
            return Err(cause("the sync after an input refresh", e));
        }
    }
    let observer = StepRecorder::start();
    if let Err(e) = Dispatch::graph_start_capture(dispatch) {
        drop(observer.finish());
        return Err(cause("graph_start_capture", e));
    }
    // A host read, write or sync inside the window is refused by the backend, and Burn's
    // reading calls (`into_scalar`, `into_data`) panic on the refusal: caught here, the window
    // closed, and the recording refused with the cause, so the caller runs the step eagerly.
    let launched = catch_quietly(&mut launch);
    fault_hooks::write_inside_recording(device);
    let graph = Dispatch::graph_stop_capture(dispatch).map_err(|e| cause("graph_stop_capture", e));
    let observed = observer.finish();
    let outputs = launched.map_err(|panic| {
        format!(
            "the step panicked inside the recording window ({panic}): a host read, write or sync cannot be recorded"
        )
    })?;
    let graph = graph?;
    let live = device.memory_pool_usage();
    let memory = RecordingMemory {
        reserved_before,
        reserved_live: live.map(|u| u.bytes_reserved),
        in_use_live: live.map(|u| u.bytes_in_use),
    };
    let recorded = Recorded {
        device: device.clone(),
        graph,
        outputs,
        memory,
        registered_ops: observed.ops.len(),
        partition: observed.partition,
    };
    // Recording registers the launch's kernels without running them (its outputs hold what
    // the buffers held before): one replay runs the recorded step, so its outputs, and a
    // training step's state, are that step's. Measured on lavapipe: without it a training
    // run's recorded step returned a stale loss and every later step was one batch behind.
    recorded.replay()?;
    Ok(recorded)
}

/// Runs `launch`, catching a panic on this thread: its message is returned instead of printed
/// (the caller turns it into its one warning). Other threads' panics reach the hook that was
/// installed before, which is put back afterwards.
fn catch_quietly<T>(launch: &mut impl FnMut() -> T) -> Result<T, String> {
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::{Arc, Mutex};
    let this = std::thread::current().id();
    let message: Arc<Mutex<Option<String>>> = Default::default();
    let previous = Arc::new(panic::take_hook());
    {
        let (message, previous) = (message.clone(), previous.clone());
        panic::set_hook(Box::new(move |info| match std::thread::current().id() == this {
            true => *message.lock().unwrap_or_else(|e| e.into_inner()) = Some(panic_text(info)),
            false => previous(info),
        }));
    }
    // SAFETY of the unwind (AssertUnwindSafe): after a panic the recording is refused and the
    // caller runs the step again eagerly from state it holds outside the closure (a training
    // step's saved copy); nothing the closure left half-done is read again.
    let result = panic::catch_unwind(AssertUnwindSafe(launch));
    let _ours = panic::take_hook();
    panic::set_hook(Box::new(move |info| previous(info)));
    result.map_err(|_| message.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_else(|| "a panic".into()))
}

/// A panic's message on one line, with where it was raised.
fn panic_text(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into());
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match info.location() {
        Some(at) => format!("{text}, at {}:{}", at.file(), at.line()),
        None => text,
    }
}

/// One line for a failed graph call: where, and Burn's reason without its line breaks.
fn cause(call: &str, e: impl std::fmt::Display) -> String {
    let text = e.to_string().replace("An error happened during execution", "").replace("Caused by:", "");
    format!("{call}: {}", text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// A training run's state that a failed recording rolls back to. A recording that fails at
/// its stop loses the buffers its launch wrote (the backend marks them never written): a
/// training step writes its parameters and moments back in place there, so without a copy
/// taken before the window every later read of the state fails.
pub trait Rewind {
    /// The state in buffers of its own.
    type Saved;
    fn save(&self) -> Self::Saved;
    fn restore(&mut self, saved: Self::Saved);
}

/// The usual [`Rewind::Saved`] of a training run: the module's parameters and the optimizer,
/// copied into new buffers.
pub struct SavedTraining<M> {
    pub module: M,
    pub adam: crate::DeviceAdam,
}

impl<M: burn::module::Module> SavedTraining<M> {
    pub fn of(module: &M, adam: &crate::DeviceAdam) -> Self {
        Self { module: crate::params::copy_parameters(module), adam: adam.duplicate() }
    }
}

/// Records a training step of `run` (the model's state) on the plain device `plain`: `launch`
/// runs one step on the stable inputs, its optimizer writing parameters and moments back in
/// place ([`crate::DeviceAdam`]), and returns the tensors the outputs are read from; `refresh`
/// writes the next batch and step scalars; `read` reads a step's outputs; `failure` returns
/// the first write since its last call that was not in place, which refuses the recording (a
/// replay would update a buffer the next step does not read). See [`record_stepping`].
///
/// The state is saved ([`Rewind`]) before the preparing launches (copies made after
/// `graph_prepare` would take the room in the memory pools the recording must allocate from);
/// a recording that fails restores it, so the run goes on from the last step it reported. The
/// batches given to the failed recording's launches are not given again.
pub fn record_training<S: Rewind, O: 'static>(
    run: &mut S,
    plain: &Device,
    launch: impl Fn(&mut S) -> O,
    refresh: impl Fn(&mut S) -> Result<(), String>,
    read: impl FnMut(&O, bool) -> StepOutput + 'static,
    failure: impl Fn(&mut S) -> Option<String>,
) -> Result<Box<dyn Recording>, RecordFailure> {
    // Writes the warm-up steps could not do in place are harmless to them: judge the recording's.
    let _ = failure(run);
    let saved = run.save();
    let cell = std::cell::RefCell::new(run);
    let recording = record_stepping(plain, || launch(&mut cell.borrow_mut()), || refresh(&mut cell.borrow_mut()), read);
    let run = cell.into_inner();
    match (failure(run), recording) {
        (None, Ok(recording)) => Ok(recording),
        // The recorded step ran (its first replay): it is handed back with the preparing ones.
        (Some(e), Ok(mut recorded)) => {
            let mut ran = recorded.prepared();
            ran.push(recorded.read(true));
            Err(RecordFailure { why: format!("optimizer state not written in place: {e}"), ran })
        }
        (written, Err(failure)) => {
            run.restore(saved);
            let why = match written {
                Some(e) => format!("optimizer state not written in place: {e}; {}", failure.why),
                None => failure.why,
            };
            // The preparing steps are undone with the state: none of them is reported.
            Err(RecordFailure::new(why))
        }
    }
}

/// A live recording and the output tensors its replays write.
pub struct Recorded<T> {
    device: Device,
    graph: DispatchGraph,
    outputs: T,
    memory: RecordingMemory,
    partition: blaze_ir::ExecutedPartition,
    registered_ops: usize,
}

impl<T> Recorded<T> {
    /// Replays the recorded kernels on the buffers they recorded.
    pub fn replay(&self) -> Result<(), String> {
        // SAFETY: the graph replays against the buffers it recorded: the step's parameters and
        // stable inputs (held by their owner for the recording's life, per the contract of
        // `blaze_runtime::RecordableStep` and of `CapturedForward`), its intermediates and
        // `self.outputs` (pinned by the live graph until it is dropped). No buffer is freed
        // under it; whether a replay computes the eager step's numbers is checked by the
        // verification gate or by `CapturedForward`'s first replays.
        unsafe { Dispatch::graph_replay(self.device.as_dispatch(), &self.graph) }.map_err(|e| cause("graph_replay", e))
    }

    /// The tensors the recorded launch returned (written by every replay).
    pub fn outputs(&self) -> &T {
        &self.outputs
    }

    pub fn memory(&self) -> RecordingMemory {
        self.memory
    }

    /// The executed partition observed while recording.
    pub fn partition(&self) -> &blaze_ir::ExecutedPartition {
        &self.partition
    }
}

/// A recording whose outputs are read into a `StepOutput` (a model's recordable step).
struct Reading<T> {
    graph: Recorded<T>,
    read: Box<dyn FnMut(&T, bool) -> StepOutput>,
    /// Outputs of the steps the preparing launches ran ([`record_stepping`]).
    prepared: Vec<StepOutput>,
}

impl<T> Recording for Reading<T> {
    fn replay(&mut self) -> Result<(), String> {
        self.graph.replay()
    }

    fn read(&mut self, capture: bool) -> StepOutput {
        (self.read)(&self.graph.outputs, capture)
    }

    fn memory(&self) -> RecordingMemory {
        self.graph.memory
    }

    fn prepared(&mut self) -> Vec<StepOutput> {
        std::mem::take(&mut self.prepared)
    }

    fn partition(&self) -> Option<blaze_ir::ExecutedPartition> {
        Some(self.graph.partition.clone())
    }

    fn registered_ops(&self) -> Option<usize> {
        Some(self.graph.registered_ops)
    }
}

/// A step input held in one device buffer for the whole run and refreshed in place, so a
/// recording that read it reads every later batch.
pub struct StableInput<const D: usize, K: Basic = Float> {
    tensor: Option<Tensor<D, K>>,
}

impl<const D: usize, K: Basic> Default for StableInput<D, K> {
    fn default() -> Self {
        Self { tensor: None }
    }
}

impl<const D: usize, K: Basic> StableInput<D, K> {
    /// Writes `fresh` into the held buffer; the first write adopts `fresh`'s buffer.
    pub fn write(&mut self, fresh: Tensor<D, K>) -> Result<(), String> {
        match &mut self.tensor {
            None => {
                self.tensor = Some(fresh);
                Ok(())
            }
            Some(held) => write_in_place(held, fresh),
        }
    }

    /// [`Self::write`], or, when the held buffer cannot be written in place, holds `fresh`
    /// instead and says why ([`write_or_adopt`]).
    pub fn write_or_adopt(&mut self, fresh: Tensor<D, K>) -> Result<(), String> {
        match &mut self.tensor {
            None => self.write(fresh),
            Some(held) => write_or_adopt(held, fresh),
        }
    }

    /// The input, for a step to read (a clone: drop it before the next write).
    pub fn get(&self) -> Tensor<D, K> {
        self.tensor.clone().expect("a stable input is written before it is read")
    }

    pub fn is_written(&self) -> bool {
        self.tensor.is_some()
    }
}

/// `tensor`'s values in a new device buffer: a whole-tensor `slice_assign` into a new, uniquely
/// owned tensor (a copy kernel, bit for bit, no sync). What a captured step hands its caller
/// instead of the recording's own output buffers, which the next replay writes.
pub fn device_copy<const D: usize, K: Basic>(tensor: &Tensor<D, K>) -> Tensor<D, K> {
    let whole: Vec<std::ops::Range<usize>> = tensor.dims().iter().map(|&n| 0..n).collect();
    let mut copy = tensor.empty_like();
    copy.inplace(|t| t.slice_assign(whole.as_slice(), tensor.clone()));
    copy
}

/// Writes `fresh` into `held`'s buffer (a whole-tensor `slice_assign` on a uniquely owned
/// tensor runs in place); refused when [`can_write_in_place`] refuses.
pub fn write_in_place<const D: usize, K: Basic>(held: &mut Tensor<D, K>, fresh: Tensor<D, K>) -> Result<(), String> {
    can_write_in_place(held, &fresh)?;
    if fault_hooks::refresh_by_allocation() {
        *held = fresh;
        return Ok(());
    }
    let whole: Vec<std::ops::Range<usize>> = held.dims().iter().map(|&n| 0..n).collect();
    held.inplace(|t| t.slice_assign(whole.as_slice(), fresh));
    Ok(())
}

/// Writes `fresh` into `held`'s buffer in place when it can; otherwise `held` becomes `fresh`
/// (another buffer, which a recording does not read) and the reason is returned. Eager
/// execution computes the same either way.
pub fn write_or_adopt<const D: usize, K: Basic>(held: &mut Tensor<D, K>, fresh: Tensor<D, K>) -> Result<(), String> {
    match can_write_in_place(held, &fresh) {
        Ok(()) => write_in_place(held, fresh),
        Err(e) => {
            *held = fresh;
            Err(e)
        }
    }
}

/// Why `fresh` cannot be written into `held` in place: another shape, or a clone of `held`
/// alive elsewhere (the write would go to a copy).
pub fn can_write_in_place<const D: usize, K: Basic>(held: &Tensor<D, K>, fresh: &Tensor<D, K>) -> Result<(), String> {
    let (want, got) = (held.dims(), fresh.dims());
    if want != got {
        return Err(format!("the fresh batch has shape {got:?}, the input {want:?}"));
    }
    if !held.can_mut() {
        return Err("a clone of the input is alive elsewhere, so it cannot be written in place".into());
    }
    Ok(())
}

/// Where the test-only capture faults (`blaze_runtime::fault::CaptureFault`) act.
mod fault_hooks {
    use blaze_runtime::fault::{CaptureFault, capture_fault};
    use burn::tensor::{Device, Tensor};

    /// A host write inside the recording window.
    pub fn write_inside_recording(device: &Device) {
        if capture_fault() == Some(CaptureFault::WriteInsideRecording) {
            drop(Tensor::<1>::from_floats([1.0], device));
        }
    }

    pub fn refresh_by_allocation() -> bool {
        capture_fault() == Some(CaptureFault::RefreshByAllocation)
    }

    pub fn skip_write_back() -> bool {
        capture_fault() == Some(CaptureFault::NoWriteBack)
    }

    pub fn baked_dropout_seed() -> bool {
        capture_fault() == Some(CaptureFault::BakedDropoutSeed)
    }
}

pub(crate) use fault_hooks::{baked_dropout_seed, skip_write_back};
