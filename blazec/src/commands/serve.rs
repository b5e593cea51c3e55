//! `blazec serve` (internal): one model in a process of its own, stepped on request, so that a
//! setting fixed per process (the submission batch `CUBECL_WGPU_MAX_TASKS`, read once when the
//! device starts) can be raced against another process's under the same paired protocol as
//! in-process candidates (`tune::processes`).
//!
//! Protocol, one line each way:
//! * after warm-up and exactly `--settle-steps` untimed steps (a step count, so every server of
//!   one race sees the same batches and their losses compare step by step) the server prints
//!   `ready <median step ms> <loss>,<loss>,...` (the losses of every step so far);
//! * `visit K` runs one untimed step and then K timed steps with the device synchronised only at
//!   the block's ends, and answers `visit <ms per step>`;
//! * `quit` or the end of input ends the process (exit 0).
//!
//! A plan that does not apply (fallback, or an op stream the runtime withdraws) ends the server
//! with exit 1 and one `error:` line: the arm would not be what it claims to be.
use crate::model_args::{ModelArgs, resolve_model};
use blaze_compiler::catalog::Resolver;
use blaze_compiler::drive::{Settle, settle};
use blaze_compiler::measure::{median_step_ms, visit_block};
use blaze_compiler::runner::contract_of;
use blaze_runtime::watch::OpStreamCheck;
use blaze_runtime::{LoadOutcome, load_plan, preset_submission_batch};
use clap::Args;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Args, Clone)]
pub struct ServeArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Plan file to run under (Burn's own plan when absent).
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// Untimed warm-up steps (compilation, autotune, exploration).
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Untimed steps after warm-up, before `ready`.
    #[arg(long, default_value_t = 20)]
    pub settle_steps: usize,
    #[cfg(feature = "faults")]
    #[command(flatten)]
    pub faults: crate::faults::ServeFaults,
}

pub fn serve(resolve: &Resolver, args: &ServeArgs) -> anyhow::Result<()> {
    let begun = Instant::now();
    let factory = resolve_model(resolve, &args.model)?;
    // The plan's submission batch before building the model starts the device (CubeCL reads it
    // then); a fallback below ends this server anyway.
    if let Some(p) = &args.plan {
        preset_submission_batch(p, &blaze_burn::device_info());
    }
    let mut model = factory.build(args.model.regime).map_err(anyhow::Error::msg)?;
    let built_s = begun.elapsed().as_secs_f64();
    let loaded = args.plan.as_ref().map(|p| load_plan(p, &contract_of(model.as_ref(), "")));
    if let Some(LoadOutcome::Fallback(why)) = &loaded {
        anyhow::bail!("serve: the plan does not apply: {why}");
    }
    // The first step apart: on the H200 servers started from a tune took minutes to get ready
    // where a fresh run takes seconds, and this line (in the tune's progress) says where.
    let first = Instant::now();
    let mut losses = settle(model.as_mut(), Settle::Steps(1));
    let first_s = first.elapsed().as_secs_f64();
    let rest = Instant::now();
    let more = (args.warmup as usize + args.settle_steps).saturating_sub(1);
    losses.extend(settle(model.as_mut(), Settle::Steps(more)));
    eprintln!("{}", warm_up_line(built_s, first_s, more, rest.elapsed().as_secs_f64()));
    if let Some(LoadOutcome::Applied(h)) = &loaded
        && let OpStreamCheck::Withdrawn(why) = h.op_stream_check()
    {
        anyhow::bail!("serve: the runtime withdrew the plan: {why}");
    }
    let (step_ms, sized) = median_step_ms(model.as_mut());
    losses.extend(sized);
    let delay = args.faults().slowdown.map(|f| Duration::from_secs_f64(f.max(0.0) * step_ms / 1e3));
    let mut out = std::io::stdout().lock();
    let text: Vec<String> = losses.iter().map(|l| l.to_string()).collect();
    writeln!(out, "ready {step_ms} {}", text.join(","))?;
    out.flush()?;
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["visit", k] => {
                let k: u32 = k.parse().map_err(|_| anyhow::anyhow!("serve: `{line}`: K is not a whole number"))?;
                let k = k.max(1);
                writeln!(out, "visit {}", visit_block(model.as_mut(), k, delay.map(|d| d * k)))?;
                out.flush()?;
            }
            ["quit"] => break,
            _ => anyhow::bail!("serve: unknown request `{line}` (expected `visit K` or `quit`)"),
        }
    }
    Ok(())
}

/// One stderr line on where a server's start-up went.
fn warm_up_line(built_s: f64, first_s: f64, more_steps: usize, rest_s: f64) -> String {
    format!(
        "serve: model built in {built_s:.1} s; first step {first_s:.1} s; {more_steps} more untimed steps in {rest_s:.1} s"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_warm_up_line_names_each_part() {
        assert_eq!(
            super::warm_up_line(0.31, 61.04, 33, 2.5),
            "serve: model built in 0.3 s; first step 61.0 s; 33 more untimed steps in 2.5 s"
        );
    }
}
