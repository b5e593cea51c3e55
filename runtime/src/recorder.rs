//! Records one window of operations and the blocks that executed them.
use blaze_ir::{ExecutedPartition, signature::OpSignature, trace::TracedOp};
use burn_fusion::observer::{BlockOperations, FusionObservation, FusionObserver};
use burn_ir::{OperationIr, TensorId, TensorIr, TensorStatus};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One registered operation.
#[derive(Clone, Debug)]
pub struct RecordedOp {
    pub sig: OpSignature,
    pub inputs: Vec<u32>,
}

/// What a window recorded.
#[derive(Clone, Debug, Default)]
pub struct RecordedStep {
    pub ops: Vec<RecordedOp>,
    pub partition: ExecutedPartition,
    /// Blocks that ran operations registered before the window (ignored in `partition`).
    pub foreign_blocks: usize,
}

impl RecordedStep {
    pub fn traced_ops(&self) -> Vec<TracedOp> {
        self.ops
            .iter()
            .enumerate()
            .map(|(i, op)| TracedOp { index: i as u32, sig: op.sig.clone(), inputs: op.inputs.clone() })
            .collect()
    }
}

#[derive(Default)]
struct State {
    step: RecordedStep,
    /// Operation identity (its Debug form holds unique tensor ids) -> window index.
    index_of: HashMap<String, u32>,
    producer: HashMap<TensorId, u32>,
}

/// A `FusionObserver` over one window. Bracket the window with device syncs (see
/// `burn_fusion::observer::FusionObservation`): `start` after a sync, `finish` after the next.
pub struct StepRecorder {
    state: Mutex<State>,
}

impl StepRecorder {
    /// Starts recording; recording stops when the returned guard's `finish` is called.
    pub fn start() -> RecordingGuard {
        let recorder = Arc::new(StepRecorder { state: Mutex::new(State::default()) });
        let observation = FusionObservation::new(recorder.clone());
        RecordingGuard { recorder, observation: Some(observation) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Keeps a recording alive.
pub struct RecordingGuard {
    recorder: Arc<StepRecorder>,
    observation: Option<FusionObservation>,
}

impl RecordingGuard {
    /// Stops recording and returns the window. Sync the device first.
    pub fn finish(mut self) -> RecordedStep {
        drop(self.observation.take());
        std::mem::take(&mut self.recorder.lock().step)
    }
}

/// The recorded operations `op` reads, in node order without repeats, given `producer` (which
/// recorded operation wrote each tensor so far); records `op` as the writer of its outputs
/// under `index`. Shared by the step recorder (window indices) and the op-stream watch
/// (sequence numbers since load).
pub(crate) fn reads_of<I: Copy + PartialEq>(op: &OperationIr, index: I, producer: &mut HashMap<TensorId, I>) -> Vec<I> {
    let mut inputs = Vec::new();
    reads_of_nodes(&op.nodes(), index, producer, &mut inputs);
    inputs
}

/// [`reads_of`] given the operation's nodes (`op.nodes()`: inputs, then outputs), written into
/// `inputs` (cleared first), which keeps its capacity from one operation to the next.
pub(crate) fn reads_of_nodes<I: Copy + PartialEq>(
    nodes: &[&TensorIr],
    index: I,
    producer: &mut HashMap<TensorId, I>,
    inputs: &mut Vec<I>,
) {
    inputs.clear();
    for node in nodes {
        match node.status {
            TensorStatus::NotInit => {
                producer.insert(node.id, index);
            }
            _ => {
                if let Some(&p) = producer.get(&node.id)
                    && !inputs.contains(&p)
                {
                    inputs.push(p);
                }
            }
        }
    }
}

impl FusionObserver for StepRecorder {
    fn registered(&self, op: &OperationIr) {
        let mut state = self.lock();
        let index = state.step.ops.len() as u32;
        let inputs = reads_of(op, index, &mut state.producer);
        state.index_of.insert(format!("{op:?}"), index);
        state.step.ops.push(RecordedOp { sig: OpSignature::of(op), inputs });
    }

    fn block_starts(&self, block: BlockOperations<'_>) {
        let mut state = self.lock();
        let ops: Vec<u32> = block.iter().filter_map(|op| state.index_of.get(&format!("{op:?}")).copied()).collect();
        if ops.is_empty() {
            state.step.foreign_blocks += 1;
        } else {
            state.step.partition.blocks.push(ops);
        }
    }

    fn block_ran(&self) {}
}
