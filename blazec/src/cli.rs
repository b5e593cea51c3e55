//! Command line. Exit codes: 0 success; 1 failure (message on stderr); 2 bad usage; 130 a
//! child process of blazec whose blazec parent went away (`orphan.rs`).
use crate::commands::{demo, run};
use blaze_compiler::catalog::Resolver;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "blazec",
    version,
    about = "Measure Burn kernel-fusion plans instead of guessing them",
    after_help = "Exit codes: 0 success, 1 failure, 2 bad usage."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Capture a model's Burn IR op stream, Burn's executed partition and its cut points.
    #[command(
        after_help = "Examples:\n  blazec trace attention-d257 -o trace.ron\n  blazec trace attention-d257 --regime forward --batch 2 --seq 32 -o t.ron --dot t.dot --text t.txt"
    )]
    Trace(crate::commands::trace::TraceArgs),
    /// Run a model for some steps, optionally under a plan file; print losses, the executed
    /// partition of the last step and step times.
    Run(run::RunArgs),
    /// Internal (tune's race across processes): one model stepped on request over stdin/stdout.
    #[command(hide = true)]
    Serve(crate::commands::serve::ServeArgs),
    /// A training run in live mode: arms verified on side instances, raced on the run's own
    /// steps, the winner kept and re-checked against the runner-up on a doubling delay.
    #[command(
        after_help = "Examples:\n  blazec live attention-d257 --steps 5000 -o live.ron\n  blazec live attention-d257 --batch 2 --seq 32 --steps 300 --first-check 50 --min-rounds 3 --rounds 12 -o /tmp/live.ron\n  blazec live moe-e8k2 --steps 6000 --switch-at 3000 --switch-batch 64 -o live.ron\n  blazec live attention-d257 --steps 8000 --switch-after-settle 1000 --switch-batch 64 -o live.ron\n\nIn a program of your own: `let mut live = blaze_compiler::live::Live::from_env(&factory, Regime::Training);` then `live.step(model)` for every step; BLAZE_LIVE=1 turns it on."
    )]
    Live(crate::commands::live::LiveArgs),
    /// Measure candidate plans on the device and emit the winner as a plan file with a report.
    #[command(
        after_help = "Examples:\n  blazec tune attention-d257 --device vulkan -o plans/attention-d257.ron\n  blazec tune attention-d257 --device lavapipe --batch 2 --seq 32 --budget 8 -o /tmp/plan.ron\n  blazec tune attention-d257 --device vulkan --min-effect 0.02 --race-budget 60 -o plan.ron\n\nCandidates, Burn's plan and fusion off (in this process) are raced in rounds of paired visits (protocol blaze-measure/3); a plan is kept only when it is faster than Burn's plan with confidence by at least --min-effect and verifies. The report gives every candidate's ratio to Burn's plan with its interval and says why the race stopped. The candidates run in a worker process: one that hangs (no progress for --hang-timeout seconds) or crashes it is recorded as broken in the report and the tune goes on without it. Ctrl-C leaves no partial plan: every output is written at the end, each atomically."
    )]
    Tune(crate::commands::tune::TuneArgs),
    /// Measure the race's error rates on this device: A/A false wins and the power to see a
    /// known slowdown.
    #[command(
        after_help = "Examples:\n  blazec race-check attention-d258 --trials 40 -o aa.ron                      # A/A\n  blazec race-check attention-d258 --trials 20 --slowdown 0.01,0.02,0.05 -o power.ron"
    )]
    RaceCheck(crate::commands::race_check::RaceCheckArgs),
    /// The main job end to end: tune attention-d257 training (Burn's default, fusion off, beam
    /// widths, captured execution), show what was kept and why, run the model under it.
    Demo(demo::DemoArgs),
    /// Write a plan file by hand from a trace: the cuts you name (or every k-th live cut point).
    #[command(
        after_help = "Examples:\n  blazec plan --trace t.ron --cuts b5,b65 -o plan.ron\n  blazec plan --trace t.ron --every-live 4 -o plan.ron"
    )]
    Plan(crate::commands::plan::PlanArgs),
    /// Enumerate candidate plans of a trace, collapse duplicates with the e-graph, confirm the
    /// survivors on the device, and report the counts (and false merges).
    #[command(after_help = "Example:\n  blazec space --trace t.ron --budget 33 --check-egraph -o space.ron")]
    Space(crate::commands::space::SpaceArgs),
    /// Time every workload and regime under Burn's default and with fusion off.
    Bench(crate::commands::bench::BenchArgs),
    /// Run the verification gate directly: the probe under a plan against Burn's plan.
    #[command(
        after_help = "Examples:\n  blazec verify --plan plan.ron              # the plan a user has\n  blazec verify --trace t.ron --every-live 4  # a plan made from a trace by a cut rule"
    )]
    Verify(crate::commands::verify::VerifyArgs),
    /// List the built-in workloads with their parameter counts.
    List,
    /// Print the campaign table of tune results files (`*.results.ron`): Burn's plan, fusion
    /// off, the best settings-only and the best plan with cuts, as ratios to Burn's plan with
    /// the race's intervals; what was kept, the kept plan against the best stock setting
    /// (the faster of Burn's plan and fusion off), the cold cost, window and break-even; then,
    /// per workload (the model name without its batch suffix), its best row and whether it is
    /// at least 5 % faster than the best stock setting (the campaign goal).
    #[command(after_help = "Example:\n  blazec table results/h200/*/plans/*.results.ron")]
    Table(crate::commands::table::TableArgs),
    /// The median of numbers on stdin with its sign-test interval and p-value (the rule every
    /// race uses), for scripts that summarise raw samples.
    #[command(
        after_help = "Example:\n  echo 0.01 0.02 -0.01 0.03 0.02 0.01 0.02 0.04 | blazec stats --level 0.95 --quantile 0.1\n\nPrints one line: n=8 median=… lo=… hi=… p=… q0.1=…"
    )]
    Stats(crate::commands::stats::StatsArgs),
    /// Add plan files (a tune's output, a doctor's plan, a plan from another machine) to a
    /// bundle, each replacing the entry of the same device, Burn version, model, regime and
    /// shapes; a new bundle when there is no file.
    #[command(
        after_help = "Examples:\n  blazec bundle model.blaze plans/m.training.ron plans/m.forward.ron\n  blazec bundle model.blaze plans/m.training.ron --autotune-cache /tmp/at   # with this device's autotune decisions\n\nEvery plan is validated before the bundle is written; nothing is written when one is not valid."
    )]
    Bundle(crate::commands::bundle::BundleArgs),
    /// Import the CubeCL autotune decisions shipped for this device (`plans/autotune/`, or the
    /// bundles you name) into the autotune cache, so a fresh machine skips autotuning the
    /// kernels they cover; bundles made on other devices are passed over.
    #[command(
        after_help = "Examples:\n  blazec seed                          # the checkout's plans/autotune/\n  blazec seed model.blaze              # one bundle's decisions for this device\n  BLAZE_AUTOTUNE_CACHE=/tmp/at blazec seed   # into a pinned cache root\n\nMake such a bundle on a warm machine with `blazec bundle decisions.blaze --autotune-cache ~/.cache/cubecl`."
    )]
    Seed(crate::commands::seed::SeedArgs),
    /// Does each entry of a bundle (or a plan file) still fit this machine and this build?
    /// Device and Burn version from its contract; for this device's entries the model is traced
    /// again and its op stream and cut points compared.
    #[command(
        after_help = "Examples:\n  blazec check model.blaze\n  blazec check model.blaze --model attention-d257   # in a user's CI\n\nExit 0 when an entry for this machine fits, 1 otherwise (the table says why)."
    )]
    Check(crate::commands::check::CheckArgs),
    /// Does Burn's fusion change this model's numbers? Compares Burn's plan with Burn executing
    /// nothing fused, finds the fused blocks at fault (delta debugging) and writes a plan that
    /// unfuses only them, with a report for a Burn bug report.
    #[command(
        after_help = "Examples:\n  blazec doctor attention-d257 -o fix.ron          # writes fix.ron only if fusion breaks numbers\n  blazec doctor my-model --regime forward --steps 3 --tolerance 1e-5 -o fix.ron\n\nWrites <output stem>.doctor.md and .doctor.ron beside the plan in every case. Exit 0 when the diagnosis is made (whether or not a plan was needed), 1 when it cannot be (a non-deterministic model, for example)."
    )]
    Doctor(crate::commands::doctor::DoctorArgs),
    /// Where a step's time goes, block by block: host time (fusion thread) and device time
    /// (CubeCL profile windows, in separate profiled steps) per executed block, and step time,
    /// under Burn's plan and, with --plan, under a plan file; says whether the step is bound by
    /// device work or by fixed per-step cost.
    #[command(
        after_help = "Examples:\n  blazec profile attention-d257 --regime forward\n  blazec profile attention-d257 --regime forward --plan plans/attention-d257.forward.h200.ron -o profile.ron"
    )]
    Profile(crate::commands::profile::ProfileArgs),
    /// Run a fresh seeded instance for some steps under one arm (Burn's plan, fusion off in this
    /// process, or a plan's cuts) and write what it computed: every loss, the last logits and
    /// the executed partition. Compares arms bit for bit across processes.
    #[command(
        after_help = "Examples:\n  blazec probe attention-d257 --arm fusion-off --burn-first 3 -o off.ron\n  BURN_FUSION_MAX_EXPLORATIONS=0 blazec probe attention-d257 --arm burn -o stock-off.ron"
    )]
    Probe(crate::commands::probe::ProbeArgs),
}

/// Runs the CLI with `resolve` for model names. Returns the exit code.
pub fn main_with(resolve: &Resolver) -> i32 {
    quiet_vulkan_loader();
    end_quietly_on_closed_pipe();
    let cli = match parse_as_this_binary(resolve) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    blaze_compiler::orphan::exit_with_parent_if_asked();
    // A child of a tune uses the tune's pinned autotune cache.
    blaze_compiler::autotune::adopt_pinned_autotune_cache();
    let fault = match crate::faults::from_env() {
        Ok(fault) => fault,
        Err(e) => {
            eprintln!("error: {e:#}");
            return 1;
        }
    };
    // Commands that explore in this process (a tune explores in its workers).
    let explores_here = matches!(
        cli.command,
        Command::Doctor { .. }
            | Command::Probe { .. }
            | Command::Verify { .. }
            | Command::Run(_)
            | Command::Serve(_)
            | Command::Live(_)
            | Command::Trace { .. }
    );
    // A model step that panics (the device out of memory at this shape, a lost device) ends
    // the command with one `error:` line naming the cause, after the panic's own report.
    // A tune worker keeps the panic's exit status: its supervisor reads a crash there and goes
    // on without the candidate.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(cli.command, resolve)))
        .unwrap_or_else(|payload| {
            if blaze_compiler::tune::supervise::is_worker() {
                std::panic::resume_unwind(payload);
            }
            Err(anyhow::anyhow!(
                "{}",
                blaze_compiler::failure::summarize(&format!(
                    "panicked at\n{}",
                    blaze_compiler::failure::panic_text(payload.as_ref())
                ))
            ))
        });
    match outcome.and_then(|()| if explores_here { crate::faults::check_landed(fault) } else { Ok(()) }) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}

/// Parses the command line with this binary's own name in usage and help, and without `demo`
/// (the attention-d257 demo) when the catalog does not offer that model.
fn parse_as_this_binary(resolve: &Resolver) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let name = std::env::args_os()
        .next()
        .and_then(|a| std::path::Path::new(&a).file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "blazec".into());
    // clap keeps a command's name as &'static str; once per process.
    let name: &'static str = Box::leak(name.into_boxed_str());
    // The shader compiler is part of what a plan is valid for: `--version` says which this
    // build has (the GPU build checks it says spirv).
    let version: &'static str =
        Box::leak(format!("{} (shader compiler {})", env!("CARGO_PKG_VERSION"), blaze_burn::COMPILER).into_boxed_str());
    let mut command = Cli::command().name(name).bin_name(name).version(version);
    if !resolve.names().iter().any(|n| n == "attention-d257") {
        command = command.mut_subcommand("demo", |demo| demo.hide(true));
    }
    Cli::from_arg_matches(&command.try_get_matches()?)
}

/// Mesa's Vulkan window-system code prints `error: XDG_RUNTIME_DIR is invalid or not set` lines
/// when the variable is missing, though no window is ever opened. Give it the temp directory.
/// `blazec space … --dry-run | head` used to panic ("failed printing to stdout: Broken pipe"):
/// Rust ignores SIGPIPE, so a closed pipe surfaces as a print error. Restore the default, as
/// command-line tools do: the process ends quietly when its reader goes away.
fn end_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called at the start of `main`, before any thread; SIG_DFL is always valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn quiet_vulkan_loader() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        // SAFETY: called first thing in `main_with`, before this program starts any thread.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir()) };
    }
}

fn dispatch(command: Command, resolve: &Resolver) -> anyhow::Result<()> {
    match command {
        Command::Trace(args) => crate::commands::trace::run(resolve, args),
        Command::Plan(args) => crate::commands::plan::run(resolve, args),
        Command::Space(args) => crate::commands::space::run(resolve, args),
        Command::Bench(args) if !args.table.is_empty() => crate::commands::bench::table(&args.table),
        Command::Bench(args) => {
            let names = if args.models.is_empty() { resolve.names() } else { args.models.clone() };
            for name in &names {
                let known = resolve.names().contains(name) || resolve.others().contains(name);
                anyhow::ensure!(known, "unknown model `{name}` (see `blazec list`)");
            }
            crate::commands::bench::bench(names, &args)
        }
        Command::Verify(args) => crate::commands::verify::run(resolve, args),
        Command::Run(args) => run::run(resolve, &args),
        Command::Serve(args) => crate::commands::serve::serve(resolve, &args),
        Command::Live(args) => crate::commands::live::live(resolve, &args),
        Command::Tune(args) => crate::commands::tune::run_tune(resolve, &args),
        Command::RaceCheck(args) => crate::commands::race_check::race_check(resolve, &args),
        Command::Demo(args) => demo::demo(resolve, &args),
        Command::Doctor(args) => crate::commands::doctor::run(resolve, args),
        Command::Profile(args) => crate::commands::profile::run(resolve, args),
        Command::Probe(args) => crate::commands::probe::run(resolve, args),
        Command::Check(args) => crate::commands::check::run(resolve, args),
        Command::Bundle(args) => crate::commands::bundle::run(resolve, args),
        Command::Seed(args) => crate::commands::seed::run(&args),
        Command::Table(args) => crate::commands::table::run(resolve, args),
        Command::Stats(args) => crate::commands::stats::run(resolve, args),
        Command::List => crate::commands::list::run(resolve),
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// A doc comment put above the wrong variant moves one command's help to its neighbour
    /// (this once gave `probe` no help and `profile` two); every command says what it does,
    /// in words of its own, with examples of itself.
    #[test]
    fn every_command_has_its_own_help() {
        let command = Cli::command();
        let mut abouts = Vec::new();
        for sub in command.get_subcommands() {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            assert!(!about.is_empty(), "`{}` has no help", sub.get_name());
            if let Some(examples) = sub.get_after_help() {
                let examples = examples.to_string();
                assert!(
                    !examples.contains("blazec ") || examples.contains(&format!("blazec {}", sub.get_name())),
                    "`{}`'s examples are another command's: {examples}",
                    sub.get_name()
                );
            }
            abouts.push(about);
        }
        let mut unique = abouts.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), abouts.len(), "two commands share a help text");
    }
}
