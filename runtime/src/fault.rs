//! Test-only fault injection: lets a test make one plan compute something different on the
//! device, so the verification gate's refusal branch runs on real hardware. Models that honour
//! it (the built-in workloads) scale their logits by 1.01 on the device while it is set.
//!
//! The switches exist only with the cargo feature `faults` (the tests and the GPU campaign
//! binary turn it on; the default release build has none): without it the readers below are
//! constant `false` / `None`, and asking to turn a fault on panics, so code that relies on a
//! fault can never pass for the wrong reason in a build that cannot inject one.
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

/// Whether this build has the fault switches (feature `faults`).
pub const AVAILABLE: bool = cfg!(any(test, feature = "faults"));

/// Panics when a fault is asked for in a build without the switches.
fn require(on: bool, what: &str) {
    assert!(!on || AVAILABLE, "{what}: this build has no fault switches (cargo feature `faults` of blaze-runtime)");
}

static FAULT: AtomicBool = AtomicBool::new(false);

pub fn inject(on: bool) {
    require(on, "fault::inject");
    FAULT.store(on, Ordering::SeqCst);
}

pub fn injected() -> bool {
    AVAILABLE && FAULT.load(Ordering::Relaxed)
}

/// Environment variable naming the operation (step position) whose fused kernels
/// [`inject_fused`] faults; read by `blazec` and inherited by its children. `<op>` faults every
/// plan, Burn's own included; `<op>:plans` only plans with cuts (Burn's own stays right).
pub const FUSED_FAULT_ENV: &str = "BLAZE_INJECT_FUSED_FAULT";

/// Test-only plan-level fault: every fused kernel that contains operation `op` (its position in
/// the step, as cut points are named) computes add for sub, sub for add, mul for div or div for
/// mul at that operation, while the operation executed on its own stays right. Unlike
/// [`inject`], this changes what Burn's fused kernels compute, not the model's output.
pub fn inject_fused(op: Option<u64>, plans_only: bool) {
    require(op.is_some(), "fault::inject_fused");
    FUSED_TARGET.store(op.unwrap_or(u64::MAX), Ordering::SeqCst);
    burn_fusion::cut::inject_fused_fault(op, plans_only);
}

static FUSED_TARGET: AtomicU64 = AtomicU64::new(u64::MAX);

/// The operation [`inject_fused`] faulted in this process, if any (for reports).
pub fn fused_target() -> Option<u64> {
    Some(FUSED_TARGET.load(Ordering::Relaxed)).filter(|&op| op != u64::MAX)
}

/// How many times a fuser was handed the faulted operation in this process.
pub fn fused_faults_landed() -> u64 {
    burn_fusion::cut::fused_faults()
}

/// Test-only faults in captured execution, so the gate's and the recorder's refusal branches
/// run on a real device. Never set outside tests and blazec's hidden test switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureFault {
    /// A host write (a tensor made from data) inside the recording window: the backend refuses
    /// the recording at its stop.
    WriteInsideRecording,
    /// Inputs "refreshed" by adopting the fresh tensor's new buffer instead of writing into the
    /// held one: replays read the recorded (stale) buffer.
    RefreshByAllocation,
    /// A training step's optimizer assigns its new parameters and moments instead of writing
    /// them back into their buffers: replays update stale state.
    NoWriteBack,
    /// A plan's cuts are shifted one operation too far for its recording: the recording runs
    /// another partition than the plan's.
    MisplacedCuts,
    /// Device dropout draws its key from the step's seed as a host scalar (what Burn's
    /// host-seeded dropout does): eager steps draw fresh masks, replays repeat the recorded ones.
    BakedDropoutSeed,
}

/// Environment variable for [`inject_capture`] (`write`, `realloc`, `no-write-back`,
/// `misplaced-cuts` or `baked-dropout-seed`), read by blazec.
pub const CAPTURE_FAULT_ENV: &str = "BLAZE_INJECT_CAPTURE_FAULT";

static CAPTURE_FAULT: AtomicU8 = AtomicU8::new(0);

pub fn inject_capture(fault: Option<CaptureFault>) {
    require(fault.is_some(), "fault::inject_capture");
    let code = match fault {
        None => 0,
        Some(CaptureFault::WriteInsideRecording) => 1,
        Some(CaptureFault::RefreshByAllocation) => 2,
        Some(CaptureFault::NoWriteBack) => 3,
        Some(CaptureFault::MisplacedCuts) => 4,
        Some(CaptureFault::BakedDropoutSeed) => 5,
    };
    CAPTURE_FAULT.store(code, Ordering::SeqCst);
}

pub fn capture_fault() -> Option<CaptureFault> {
    if !AVAILABLE {
        return None;
    }
    match CAPTURE_FAULT.load(Ordering::Relaxed) {
        1 => Some(CaptureFault::WriteInsideRecording),
        2 => Some(CaptureFault::RefreshByAllocation),
        3 => Some(CaptureFault::NoWriteBack),
        4 => Some(CaptureFault::MisplacedCuts),
        5 => Some(CaptureFault::BakedDropoutSeed),
        _ => None,
    }
}

/// The fault an environment value names (`write`, `realloc`, `no-write-back`, `misplaced-cuts`).
pub fn capture_fault_named(value: &str) -> Result<CaptureFault, String> {
    match value {
        "write" => Ok(CaptureFault::WriteInsideRecording),
        "realloc" => Ok(CaptureFault::RefreshByAllocation),
        "no-write-back" => Ok(CaptureFault::NoWriteBack),
        "misplaced-cuts" => Ok(CaptureFault::MisplacedCuts),
        "baked-dropout-seed" => Ok(CaptureFault::BakedDropoutSeed),
        _ => Err(format!(
            "{CAPTURE_FAULT_ENV}={value}: expected write, realloc, no-write-back, misplaced-cuts or baked-dropout-seed"
        )),
    }
}
