//! Device time of each executed block: a CubeCL profile window opened in `block_starts` and
//! closed in `block_ran` on the fusion thread, where every kernel of the block is issued
//! (`burn-fusion` observer docs). Windows are per stream, and the stream is the calling
//! thread's, so the window covers exactly the block's kernels.
//!
//! Why this lives here and not in blaze-runtime: it needs CubeCL's client for the default
//! device, which only a crate that knows the backend (this one) can name.
//!
//! Cost: opening and closing a window each wait for the device thread and flush, so a profiled
//! step runs one submission per block and is slower than a plain step. Use it to attribute
//! time, never to time a step; `blazec profile` runs its timed steps without it.
use burn_fusion::observer::{BlockOperations, FusionObservation, FusionObserver};
use cubecl::client::{Client, ProfileWindow};
use cubecl::profile::{ProfileDuration, TimingMethod};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the device answered for the blocks of one profiled window of steps.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSpans {
    /// One entry per executed block, in order: its device time, or `None` when the window
    /// carried no measurement (a block that launched nothing, e.g. a reshape) or failed.
    pub spans: Vec<Option<Duration>>,
    /// `device` when the adapter has timestamp queries, `system` when CubeCL fell back to host
    /// clocks around a device sync (then the figures include the sync's round trip).
    pub method: &'static str,
}

#[derive(Default)]
struct State {
    open: Option<ProfileWindow>,
    closed: Vec<Option<ProfileDuration>>,
}

/// Times blocks on the device while its guard lives.
pub struct DeviceBlockTimer {
    client: Client,
    state: Mutex<State>,
}

/// Keeps a device block timer installed.
pub struct DeviceBlockTimerGuard {
    timer: Arc<DeviceBlockTimer>,
    observation: Option<FusionObservation>,
}

/// The CubeCL client of [`crate::default_device`]: the same device id, so the same server
/// Burn's backend launches on (a different id would start a second server, whose windows
/// would see none of the model's kernels).
fn default_client() -> Client {
    #[cfg(feature = "cuda")]
    {
        cubecl::Device::Cuda(cubecl::device::CudaDevice::new(0)).client()
    }
    #[cfg(not(feature = "cuda"))]
    {
        cubecl::Device::Wgpu(cubecl::device::WgpuDevice::default().on(crate::device::default_backend())).client()
    }
}

impl DeviceBlockTimer {
    /// Starts timing blocks of the default device; bracket the window with device syncs.
    pub fn start() -> DeviceBlockTimerGuard {
        let timer = Arc::new(DeviceBlockTimer { client: default_client(), state: Mutex::new(State::default()) });
        let observation = FusionObservation::new(timer.clone());
        DeviceBlockTimerGuard { timer, observation: Some(observation) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl DeviceBlockTimerGuard {
    /// Stops timing and waits for the device's answers (call after a device sync).
    pub fn finish(mut self) -> DeviceSpans {
        drop(self.observation.take());
        let closed = {
            let mut state = self.timer.lock();
            if let Some(window) = state.open.take() {
                self.timer.client.profile_abandon(window);
            }
            std::mem::take(&mut state.closed)
        };
        let mut method = "device";
        let spans = closed
            .into_iter()
            .map(|d| {
                let d = d?;
                if d.timing_method() == TimingMethod::System {
                    method = "system";
                }
                cubecl::future::block_on(d.resolve()).map(|ticks| ticks.duration())
            })
            .collect();
        DeviceSpans { spans, method }
    }
}

impl FusionObserver for DeviceBlockTimer {
    fn registered(&self, _op: &burn_ir::OperationIr) {}

    // A window the device refuses to open or close leaves that block unmeasured (`None`).
    fn block_starts(&self, _block: BlockOperations<'_>) {
        let window = self.client.profile_start().ok();
        self.lock().open = window;
    }

    fn block_ran(&self) {
        let window = self.lock().open.take();
        let closed = window.and_then(|w| self.client.profile_end(w).ok());
        self.lock().closed.push(closed);
    }
}
