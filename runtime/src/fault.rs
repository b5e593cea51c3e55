//! Test-only fault injection: lets a test make one plan compute something different on the
//! device, so the verification gate's refusal branch runs on real hardware. Models that honour
//! it (the built-in workloads) scale their logits by 1.01 on the device while it is set.
//! Never set outside tests and `blazec tune --inject-fault`.
use std::sync::atomic::{AtomicBool, Ordering};

static FAULT: AtomicBool = AtomicBool::new(false);

pub fn inject(on: bool) {
    FAULT.store(on, Ordering::SeqCst);
}

pub fn injected() -> bool {
    FAULT.load(Ordering::Relaxed)
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
    FUSED_TARGET.store(op.unwrap_or(u64::MAX), Ordering::SeqCst);
    burn_fusion::cut::inject_fused_fault(op, plans_only);
}

static FUSED_TARGET: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);

/// The operation [`inject_fused`] faulted in this process, if any (for reports).
pub fn fused_target() -> Option<u64> {
    Some(FUSED_TARGET.load(Ordering::Relaxed)).filter(|&op| op != u64::MAX)
}

/// How many times a fuser was handed the faulted operation in this process.
pub fn fused_faults_landed() -> u64 {
    burn_fusion::cut::fused_faults()
}
