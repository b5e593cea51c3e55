//! Host time of each executed block: the wall time between `block_starts` and `block_ran` on
//! the fusion thread. Launches are asynchronous, so this is the host's own work for the block
//! (planning, kernel lookup, launch hand-off), not the device's. Two `Instant::now()` per block
//! and nothing per operation, so it is light enough to leave on during a timed step; it does
//! not know which operations a block holds (pair it with a `StepRecorder` step of the same
//! plan: blocks run in the same order every steady-state step).
use burn_fusion::observer::{BlockOperations, FusionObservation, FusionObserver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct State {
    started: Option<Instant>,
    spans: Vec<Duration>,
}

/// Times blocks while its guard lives.
pub struct BlockTimer {
    state: Mutex<State>,
}

/// Keeps a block timer installed.
pub struct BlockTimerGuard {
    timer: Arc<BlockTimer>,
    observation: Option<FusionObservation>,
}

impl BlockTimer {
    /// Starts timing; bracket the window with device syncs, as for a `StepRecorder`.
    pub fn start() -> BlockTimerGuard {
        let timer = Arc::new(BlockTimer { state: Mutex::new(State::default()) });
        let observation = FusionObservation::new(timer.clone());
        BlockTimerGuard { timer, observation: Some(observation) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl BlockTimerGuard {
    /// Stops timing; the host time of each block that ran, in order.
    pub fn finish(mut self) -> Vec<Duration> {
        drop(self.observation.take());
        std::mem::take(&mut self.timer.lock().spans)
    }
}

impl FusionObserver for BlockTimer {
    fn registered(&self, _op: &burn_ir::OperationIr) {}

    fn block_starts(&self, _block: BlockOperations<'_>) {
        self.lock().started = Some(Instant::now());
    }

    fn block_ran(&self) {
        let mut state = self.lock();
        if let Some(start) = state.started.take() {
            state.spans.push(start.elapsed());
        }
    }
}
