//! Test-only fault switches, present only with the cargo feature `faults` (the tests and the
//! GPU campaign binary have it; the default release build has neither these flags nor the
//! `BLAZE_INJECT_*` variables). Each command's switches are one struct, flattened into its
//! arguments with the feature and all off without it.
use blaze_compiler::measure::Slowdown;
use clap::Args;

/// `blazec tune`'s switches.
#[derive(Args, Clone, Debug, Default)]
pub struct TuneFaults {
    /// Test only: make candidate N compute something different during verification.
    #[arg(long, hide = true)]
    pub inject_fault: Option<usize>,
    /// Test only: `N:F` makes candidate N's visits slower by the fraction F of Burn's step.
    #[arg(long, hide = true, value_parser = crate::commands::tune::parse_slowdown)]
    pub inject_slowdown: Option<Slowdown>,
    /// Test only: `M:F` makes the server process with submission batch M slower by the fraction
    /// F of its step (a known effect for the race across processes).
    #[arg(long, hide = true, value_parser = crate::commands::tune::parse_process_slowdown)]
    pub inject_process_slowdown: Option<(u32, f64)>,
    /// Test only: make installing candidate N block forever (a hung candidate).
    #[arg(long, hide = true)]
    pub inject_hang: Option<usize>,
    /// Test only: make installing candidate N panic (a crashing candidate).
    #[arg(long, hide = true)]
    pub inject_panic: Option<usize>,
    /// Test only: installing candidate N destroys the wgpu device under the default device (a
    /// lost device, as after a driver reset), in the worker process only.
    #[arg(long, hide = true)]
    pub inject_device_lost: Option<usize>,
}

/// `blazec verify`'s switch.
#[derive(Args, Clone, Debug, Default)]
pub struct VerifyFaults {
    /// Test only: make the plan compute something different (the gate must refuse it).
    #[arg(long, hide = true)]
    pub inject_fault: bool,
}

/// `blazec serve`'s switch (set by a tune's `--inject-process-slowdown`).
#[derive(Args, Clone, Debug, Default)]
pub struct ServeFaults {
    /// Test only: every visit's timed block is longer by this fraction of the server's own
    /// median step time per step (a busy wait inside the timed region).
    #[arg(long, hide = true)]
    pub slowdown: Option<f64>,
}

/// `blazec live`'s switch.
#[derive(Args, Clone, Debug, Default)]
pub struct LiveFaults {
    /// Test only: from the first settle on, the kept arm's steps take this fraction longer (a
    /// sleep after each), so a drift check has a known slowdown to find.
    #[arg(long, hide = true)]
    pub inject_drift: Option<f64>,
    /// Test only: once the arms are verified, captured execution in this process meets this
    /// fault (`write`, `realloc`, `no-write-back`, `misplaced-cuts`, `baked-dropout-seed`), so a recording on the
    /// run's own steps fails after the gate passed it.
    #[arg(long, hide = true)]
    pub capture_fault_after_start: Option<String>,
}

/// The switches of a command's arguments: the parsed ones with the feature, all off without.
macro_rules! faults_of {
    ($args:ty, $faults:ty) => {
        impl $args {
            pub fn faults(&self) -> $faults {
                #[cfg(feature = "faults")]
                let faults = self.faults.clone();
                #[cfg(not(feature = "faults"))]
                let faults = <$faults>::default();
                faults
            }
        }
    };
}
faults_of!(crate::commands::tune::TuneArgs, TuneFaults);
faults_of!(crate::commands::verify::VerifyArgs, VerifyFaults);
faults_of!(crate::commands::serve::ServeArgs, ServeFaults);
faults_of!(crate::commands::live::LiveArgs, LiveFaults);

/// Reads the `BLAZE_INJECT_*` variables (this process and its children): the capture fault,
/// then the fused-kernel fault, whose operation is returned so the command can check that it
/// reached a fuser. Without the feature the variables mean nothing.
pub fn from_env() -> anyhow::Result<Option<u64>> {
    #[cfg(feature = "faults")]
    let fused = {
        injected_capture_fault()?;
        injected_fused_fault()?
    };
    #[cfg(not(feature = "faults"))]
    let fused = None;
    Ok(fused)
}

/// `BLAZE_INJECT_FUSED_FAULT=<op>` makes the fused kernels around operation `op` compute a
/// wrong value in this process and its children (see `blaze_runtime::fault`).
#[cfg(feature = "faults")]
fn injected_fused_fault() -> anyhow::Result<Option<u64>> {
    use blaze_runtime::fault::{FUSED_FAULT_ENV, inject_fused};
    let Ok(text) = std::env::var(FUSED_FAULT_ENV) else { return Ok(None) };
    let (op, plans_only) = match text.trim().split_once(':') {
        Some((op, "plans")) => (op, true),
        None => (text.trim(), false),
        Some(_) => anyhow::bail!("{FUSED_FAULT_ENV}={text}: expected <op> or <op>:plans"),
    };
    let op = op.parse::<u64>().map_err(|_| anyhow::anyhow!("{FUSED_FAULT_ENV}={text}: not an operation index"))?;
    inject_fused(Some(op), plans_only);
    Ok(Some(op))
}

/// `BLAZE_INJECT_CAPTURE_FAULT=write|realloc|no-write-back` breaks captured execution in this
/// process (see `blaze_runtime::fault::CaptureFault`).
#[cfg(feature = "faults")]
fn injected_capture_fault() -> anyhow::Result<()> {
    use blaze_runtime::fault::{CAPTURE_FAULT_ENV, capture_fault_named, inject_capture};
    let Ok(text) = std::env::var(CAPTURE_FAULT_ENV) else { return Ok(()) };
    inject_capture(Some(capture_fault_named(text.trim()).map_err(anyhow::Error::msg)?));
    Ok(())
}

/// Turns on the capture fault `name` names now (nothing for None).
pub fn inject_capture_fault(name: Option<&str>) -> anyhow::Result<()> {
    let Some(name) = name else { return Ok(()) };
    let fault = blaze_runtime::fault::capture_fault_named(name).map_err(anyhow::Error::msg)?;
    blaze_runtime::fault::inject_capture(Some(fault));
    Ok(())
}

/// A fault that never reached a fuser would make a test pass for the wrong reason.
pub fn check_landed(fault: Option<u64>) -> anyhow::Result<()> {
    let Some(op) = fault else { return Ok(()) };
    if blaze_runtime::fault::fused_faults_landed() > 0 {
        return Ok(());
    }
    anyhow::bail!(
        "the injected fused fault never reached a fuser: operation {op} is not a float add, sub, mul or div that Burn fuses after another operation"
    )
}
