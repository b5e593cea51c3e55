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
