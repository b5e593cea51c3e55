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
    producer: Producers<u32>,
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

/// Which recorded operation wrote each live tensor so far. Tensor ids are a counter, so a
/// multiply-shift hash spreads them as well as SipHash does, at a fraction of its cost: the
/// op-stream watch looks up every node of every operation it fingerprints.
pub(crate) type Producers<I> = HashMap<TensorId, I, std::hash::BuildHasherDefault<IdHasher>>;

/// The hasher of [`Producers`]: a tensor id's one `u64`, multiplied by a large odd constant.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The recorded operations `op` reads, in node order without repeats, given `producer` (which
/// recorded operation wrote each tensor so far); records `op` as the writer of its outputs
/// under `index`. Shared by the step recorder (window indices) and the op-stream watch
/// (sequence numbers since load).
pub(crate) fn reads_of<I: Copy + PartialEq>(op: &OperationIr, index: I, producer: &mut Producers<I>) -> Vec<I> {
    let mut inputs = Vec::new();
    reads_of_nodes(&op.nodes(), index, producer, &mut inputs);
    inputs
}

/// [`reads_of`] given the operation's nodes (`op.nodes()`: inputs, then outputs), written into
/// `inputs` (cleared first), which keeps its capacity from one operation to the next. A tensor
/// read for the last time (`ReadWrite`: a drop, or an operation that may reuse its buffer) is
/// forgotten: no later operation names it, so `producer` holds the live tensors only.
pub(crate) fn reads_of_nodes<I: Copy + PartialEq>(
    nodes: &[&TensorIr],
    index: I,
    producer: &mut Producers<I>,
    inputs: &mut Vec<I>,
) {
    inputs.clear();
    for node in nodes {
        if node.status == TensorStatus::NotInit {
            producer.insert(node.id, index);
        } else if let Some(&p) = producer.get(&node.id)
            && !inputs.contains(&p)
        {
            inputs.push(p);
        }
    }
    for node in nodes {
        if node.status == TensorStatus::ReadWrite {
            producer.remove(&node.id);
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

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{DType, Shape};

    fn node(id: u64, status: TensorStatus) -> TensorIr {
        TensorIr { id: TensorId::new(id), shape: Shape::new([4]), status, dtype: DType::F32 }
    }

    #[test]
    fn a_tensor_read_for_the_last_time_is_forgotten_and_reads_are_unchanged() {
        let mut producer = Producers::default();
        let mut reads = Vec::new();
        // Operation 0 writes tensors 1 and 2.
        let (t1, t2) = (node(1, TensorStatus::NotInit), node(2, TensorStatus::NotInit));
        reads_of_nodes(&[&t1, &t2], 0u32, &mut producer, &mut reads);
        assert!(reads.is_empty() && producer.len() == 2);
        // Operation 1 reads 1 (not for the last time) and 2 for the last time, twice named.
        let (r1, w2, out) =
            (node(1, TensorStatus::ReadOnly), node(2, TensorStatus::ReadWrite), node(3, TensorStatus::NotInit));
        reads_of_nodes(&[&r1, &w2, &w2, &out], 1, &mut producer, &mut reads);
        assert_eq!(reads, [0]);
        assert!(producer.contains_key(&TensorId::new(1)) && !producer.contains_key(&TensorId::new(2)));
        // Operation 2 drops 1 and reads 3.
        let (d1, r3) = (node(1, TensorStatus::ReadWrite), node(3, TensorStatus::ReadOnly));
        reads_of_nodes(&[&d1, &r3], 2, &mut producer, &mut reads);
        assert_eq!(reads, [0, 1]);
        assert_eq!(producer.keys().copied().collect::<Vec<_>>(), [TensorId::new(3)]);
    }
}
