//! Command line. Exit codes: 0 success; 1 failure (message on stderr); 2 bad usage; 130 a
//! child process of blazec whose blazec parent went away (`orphan.rs`).
pub use crate::catalog::{Catalog, ModelArgs, Resolver, resolve_model};
use crate::catalog::{factory_named, factory_of_trace, read_trace};
use crate::{demo, run, tracing};
use blaze_ir::plan::Regime;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

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
    Trace {
        #[command(flatten)]
        model: ModelArgs,
        /// Steps run before the traced one (compilation, autotune, fusion exploration).
        #[arg(long, default_value_t = 3)]
        warmup: u32,
        /// Where to write the trace (RON).
        #[arg(short, long)]
        output: PathBuf,
        /// Also write a Graphviz DOT rendering (fused blocks as clusters).
        #[arg(long)]
        dot: Option<PathBuf>,
        /// Also write a readable text dump.
        #[arg(long)]
        text: Option<PathBuf>,
        /// Trace the partition Burn's search makes at this beam width (burn.toml `max_blocks`;
        /// default: Burn's configured one). Plans made from the trace carry the width, and
        /// their cuts refine that partition.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=blaze_ir::plan::MAX_SETTING as i64))]
        max_blocks: Option<u32>,
    },
    /// Run a model for some steps, optionally under a plan file; print losses, the executed
    /// partition of the last step and step times.
    Run(run::RunArgs),
    /// Internal (tune's race across processes): one model stepped on request over stdin/stdout.
    #[command(hide = true)]
    Serve(crate::serve::ServeArgs),
    /// A training run in live mode: arms verified on side instances, raced on the run's own
    /// steps, the winner kept and re-checked against the runner-up on a doubling delay.
    #[command(
        after_help = "Examples:\n  blazec live attention-d257 --steps 5000 -o live.ron\n  blazec live attention-d257 --batch 2 --seq 32 --steps 300 --first-check 50 --min-rounds 3 --rounds 12 -o /tmp/live.ron\n  blazec live moe-e8k2 --steps 6000 --switch-at 3000 --switch-batch 64 -o live.ron\n  blazec live attention-d257 --steps 8000 --switch-after-settle 1000 --switch-batch 64 -o live.ron\n\nIn a program of your own: `let mut live = blaze_compiler::live::Live::from_env(&factory, Regime::Training);` then `live.step(model)` for every step; BLAZE_LIVE=1 turns it on."
    )]
    Live(crate::live::command::LiveArgs),
    /// Measure candidate plans on the device and emit the winner as a plan file with a report.
    #[command(
        after_help = "Examples:\n  blazec tune attention-d257 --device vulkan -o plans/attention-d257.ron\n  blazec tune attention-d257 --device lavapipe --batch 2 --seq 32 --budget 8 -o /tmp/plan.ron\n  blazec tune attention-d257 --device vulkan --min-effect 0.02 --race-budget 60 -o plan.ron\n\nCandidates, Burn's plan and fusion off (in this process) are raced in rounds of paired visits (protocol blaze-measure/3); a plan is kept only when it is faster than Burn's plan with confidence by at least --min-effect and verifies. The report gives every candidate's ratio to Burn's plan with its interval and says why the race stopped. The candidates run in a worker process: one that hangs (no progress for --hang-timeout seconds) or crashes it is recorded as broken in the report and the tune goes on without it. Ctrl-C leaves no partial plan: every output is written at the end, each atomically."
    )]
    Tune(crate::tune_cli::TuneArgs),
    /// Measure the race's error rates on this device: A/A false wins and the power to see a
    /// known slowdown.
    #[command(
        after_help = "Examples:\n  blazec race-check attention-d258 --trials 40 -o aa.ron                      # A/A\n  blazec race-check attention-d258 --trials 20 --slowdown 0.01,0.02,0.05 -o power.ron"
    )]
    RaceCheck(crate::race_check::RaceCheckArgs),
    /// The main job end to end: tune attention-d257 training (Burn's default, fusion off, beam
    /// widths, captured execution), show what was kept and why, run the model under it.
    Demo(demo::DemoArgs),
    /// Write a plan file by hand from a trace: the cuts you name (or every k-th live cut point).
    #[command(
        after_help = "Examples:\n  blazec plan --trace t.ron --cuts b5,b65 -o plan.ron\n  blazec plan --trace t.ron --every-live 4 -o plan.ron"
    )]
    Plan {
        /// A trace written by `blazec trace`.
        #[arg(long)]
        trace: PathBuf,
        /// Boundary ids to cut, comma separated (b5,b65 or 5,65).
        #[arg(long, value_delimiter = ',')]
        cuts: Vec<blaze_ir::BoundaryId>,
        /// Cut every k-th live cut point instead.
        #[arg(long, conflicts_with = "cuts")]
        every_live: Option<usize>,
        /// Beam width of Burn's fusion search under this plan (burn.toml `max_blocks`; Burn's
        /// default 5). Makes a version-2 plan.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=blaze_ir::plan::MAX_SETTING as i64))]
        max_blocks: Option<u32>,
        /// Kernels per queue submission (CUBECL_WGPU_MAX_TASKS; CubeCL's default 32), set by the
        /// runtime when it loads the plan. Makes a version-2 plan.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=blaze_ir::plan::MAX_SETTING as i64))]
        max_tasks: Option<u32>,
        /// How Burn caches the plans it explores under this plan: `shared` (one per distinct
        /// segment, Burn's own store; not with cuts) or `position` (one per step position, what
        /// a plan with cuts does anyway). Default: by position with cuts, shared without. Makes
        /// a version-3 plan.
        #[arg(long, value_parser = parse_store)]
        store: Option<blaze_ir::plan::PlanStore>,
        /// Captured execution (forward regime): one step recorded after warm-up with this plan's
        /// fusion in force, replayed for every later step with its inputs written in place;
        /// eager execution with one warning whenever that fails. Makes a version-4 plan.
        #[arg(long)]
        captured: bool,
        #[arg(short, long)]
        output: PathBuf,
        /// Also add the plan to this bundle (replacing the entry for the same device, Burn
        /// version, model, regime and shapes; a new bundle when there is no file).
        #[arg(long)]
        bundle: Option<PathBuf>,
        /// With --bundle: also ship the CubeCL autotune decisions of this cache root (a
        /// directory a run or tune used as BLAZE_AUTOTUNE_CACHE) for this device.
        #[arg(long, requires = "bundle")]
        autotune_cache: Option<PathBuf>,
    },
    /// Enumerate candidate plans of a trace, collapse duplicates with the e-graph, confirm the
    /// survivors on the device, and report the counts (and false merges).
    #[command(after_help = "Example:\n  blazec space --trace t.ron --budget 33 --check-egraph -o space.ron")]
    Space {
        /// A trace written by `blazec trace` (its model is rebuilt to confirm candidates).
        #[arg(long)]
        trace: PathBuf,
        /// Candidates to request when there are more than 10 live cut points.
        #[arg(long, default_value_t = 33)]
        budget: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Confirm every request, not only the e-graph's representatives (counts false merges).
        #[arg(long)]
        check_egraph: bool,
        /// Enumerate and canonicalise only (no device): print the e-graph's groups.
        #[arg(long, conflicts_with = "check_egraph")]
        dry_run: bool,
        /// Requests by cut-point class (the same place in every layer) instead of sampled cut
        /// sets; with --dry-run the classes are printed too.
        #[arg(long)]
        classes: bool,
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Time every workload and regime under Burn's default and with fusion off.
    Bench(crate::bench::BenchArgs),
    /// Run the verification gate directly: the probe under a plan against Burn's plan.
    #[command(
        after_help = "Examples:\n  blazec verify --plan plan.ron              # the plan a user has\n  blazec verify --trace t.ron --every-live 4  # a plan made from a trace by a cut rule"
    )]
    Verify {
        /// A plan file: verify its cuts on the model and regime its contract names.
        #[arg(long, conflicts_with = "trace", required_unless_present = "trace")]
        plan: Option<PathBuf>,
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Cut every k-th live cut point.
        #[arg(long, default_value_t = 4)]
        every_live: usize,
        /// Test only: make the plan compute something different (the gate must refuse it).
        #[arg(long, hide = true)]
        inject_fault: bool,
        /// Steps of the captured gate for a captured plan (default: 24 forward, 207 training).
        #[arg(long, value_name = "N")]
        gate_steps: Option<u32>,
    },
    /// List the built-in workloads with their parameter counts.
    List,
    /// Print the campaign table of tune results files (`*.results.ron`): Burn's plan, fusion
    /// off, the best settings-only and the best plan with cuts, as ratios to Burn's plan with
    /// the race's intervals; what was kept, the kept plan against the best stock setting
    /// (the faster of Burn's plan and fusion off), the cold cost, window and break-even; then,
    /// per workload (the model name without its batch suffix), its best row and whether it is
    /// at least 5 % faster than the best stock setting (the campaign goal).
    #[command(after_help = "Example:\n  blazec table results/h200/*/plans/*.results.ron")]
    Table {
        /// Tune results files (`<model>.<regime>.results.ron`, written beside each tuned plan).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Add plan files (a tune's output, a doctor's plan, a plan from another machine) to a
    /// bundle, each replacing the entry of the same device, Burn version, model, regime and
    /// shapes; a new bundle when there is no file.
    #[command(
        after_help = "Examples:\n  blazec bundle model.blaze plans/m.training.ron plans/m.forward.ron\n  blazec bundle model.blaze plans/m.training.ron --autotune-cache /tmp/at   # with this device's autotune decisions\n\nEvery plan is validated before the bundle is written; nothing is written when one is not valid."
    )]
    Bundle {
        bundle: PathBuf,
        /// Plan files to add.
        #[arg(required = true)]
        plans: Vec<PathBuf>,
        /// Also ship the CubeCL autotune decisions of this cache root (a directory a run or
        /// tune used as BLAZE_AUTOTUNE_CACHE), for the device of the plans (all plans must then
        /// name one device).
        #[arg(long)]
        autotune_cache: Option<PathBuf>,
    },
    /// Does each entry of a bundle (or a plan file) still fit this machine and this build?
    /// Device and Burn version from its contract; for this device's entries the model is traced
    /// again and its op stream and cut points compared.
    #[command(
        after_help = "Examples:\n  blazec check model.blaze\n  blazec check model.blaze --model attention-d257   # in a user's CI\n\nExit 0 when an entry for this machine fits, 1 otherwise (the table says why)."
    )]
    Check {
        bundle: PathBuf,
        /// Check only the entries of this model.
        #[arg(long)]
        model: Option<String>,
    },
    /// Does Burn's fusion change this model's numbers? Compares Burn's plan with Burn executing
    /// nothing fused, finds the fused blocks at fault (delta debugging) and writes a plan that
    /// unfuses only them, with a report for a Burn bug report.
    #[command(
        after_help = "Examples:\n  blazec doctor attention-d257 -o fix.ron          # writes fix.ron only if fusion breaks numbers\n  blazec doctor my-model --regime forward --steps 3 --tolerance 1e-5 -o fix.ron\n\nWrites <output stem>.doctor.md and .doctor.ron beside the plan in every case. Exit 0 when the diagnosis is made (whether or not a plan was needed), 1 when it cannot be (a non-deterministic model, for example)."
    )]
    Doctor {
        #[command(flatten)]
        model: ModelArgs,
        /// Steps per probe (a wrong backward kernel shows in the next step's loss).
        #[arg(long, default_value_t = 3)]
        steps: u32,
        /// Largest relative difference from the unfused reference that counts as equal.
        #[arg(long, default_value_t = crate::tune::verify::REL_TOL as f64)]
        tolerance: f64,
        /// Most probes the search may run.
        #[arg(long, default_value_t = 200)]
        max_probes: usize,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Where a step's time goes, block by block: host time (fusion thread) and device time
    /// (CubeCL profile windows, in separate profiled steps) per executed block, and step time,
    /// under Burn's plan and, with --plan, under a plan file; says whether the step is bound by
    /// device work or by fixed per-step cost.
    #[command(
        after_help = "Examples:\n  blazec profile attention-d257 --regime forward\n  blazec profile attention-d257 --regime forward --plan plans/attention-d257.forward.h200.ron -o profile.ron"
    )]
    Profile {
        #[command(flatten)]
        model: ModelArgs,
        /// Also profile this plan file (its cuts and settings).
        #[arg(long)]
        plan: Option<PathBuf>,
        /// Timed steps per arm.
        #[arg(long, default_value_t = 20)]
        steps: u32,
        /// Blocks listed per arm, most device time first.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Also write every block of every arm (RON).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Run a fresh seeded instance for some steps under one arm (Burn's plan, fusion off in this
    /// process, or a plan's cuts) and write what it computed: every loss, the last logits and
    /// the executed partition. Compares arms bit for bit across processes.
    #[command(
        after_help = "Examples:\n  blazec probe attention-d257 --arm fusion-off --burn-first 3 -o off.ron\n  BURN_FUSION_MAX_EXPLORATIONS=0 blazec probe attention-d257 --arm burn -o stock-off.ron"
    )]
    Probe {
        #[command(flatten)]
        model: ModelArgs,
        /// burn, fusion-off, or a plan file's path (its cuts).
        #[arg(long, default_value = "burn")]
        arm: String,
        #[arg(long, default_value_t = crate::tune::verify::PROBE_STEPS)]
        steps: u32,
        /// First run this many steps of Burn's plan on another instance, so the arm is probed in
        /// a process where Burn's plans are already cached (as in a race).
        #[arg(long, default_value_t = 0)]
        burn_first: u32,
        #[arg(short, long)]
        output: PathBuf,
    },
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
    crate::orphan::exit_with_parent_if_asked();
    // A child of a tune uses the tune's pinned autotune cache.
    crate::autotune::adopt_pinned_autotune_cache();
    let fault = match injected_capture_fault().and_then(|()| injected_fused_fault()) {
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
            if crate::tune::supervise::is_worker() {
                std::panic::resume_unwind(payload);
            }
            Err(anyhow::anyhow!(
                "{}",
                crate::failure::summarize(&format!("panicked at\n{}", crate::failure::panic_text(payload.as_ref())))
            ))
        });
    match outcome.and_then(|()| if explores_here { check_fault_landed(fault) } else { Ok(()) }) {
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
    let mut command = Cli::command().name(name).bin_name(name);
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

/// Test only: `BLAZE_INJECT_FUSED_FAULT=<op>` makes the fused kernels around operation `op`
/// compute a wrong value in this process and its children (see `blaze_runtime::fault`).
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

/// Test only: `BLAZE_INJECT_CAPTURE_FAULT=write|realloc` breaks captured execution in this
/// process (see `blaze_runtime::fault::CaptureFault`).
fn injected_capture_fault() -> anyhow::Result<()> {
    use blaze_runtime::fault::{CAPTURE_FAULT_ENV, capture_fault_named, inject_capture};
    let Ok(text) = std::env::var(CAPTURE_FAULT_ENV) else { return Ok(()) };
    inject_capture(Some(capture_fault_named(text.trim()).map_err(anyhow::Error::msg)?));
    Ok(())
}

/// A fault that never reached a fuser would make a test pass for the wrong reason.
fn check_fault_landed(fault: Option<u64>) -> anyhow::Result<()> {
    let Some(op) = fault else { return Ok(()) };
    if blaze_runtime::fault::fused_faults_landed() > 0 {
        return Ok(());
    }
    anyhow::bail!(
        "the injected fused fault never reached a fuser: operation {op} is not a float add, sub, mul or div that Burn fuses after another operation"
    )
}

fn dispatch(command: Command, resolve: &Resolver) -> anyhow::Result<()> {
    match command {
        Command::Trace { model, warmup, output, dot, text, max_blocks } => {
            let factory = resolve_model(resolve, &model)?;
            let trace =
                tracing::trace(factory.as_ref(), &tracing::TraceOptions { regime: model.regime, warmup, max_blocks })?;
            crate::files::write_atomic(&output, &trace.to_ron())?;
            if let Some(dot) = dot {
                crate::files::write_atomic(&dot, &trace.to_dot())?;
            }
            if let Some(text) = text {
                crate::files::write_atomic(&text, &trace.to_text())?;
            }
            println!("{}", tracing::summary(&trace));
            Ok(())
        }
        Command::Plan {
            trace,
            cuts,
            every_live,
            max_blocks,
            max_tasks,
            store,
            captured,
            output,
            bundle,
            autotune_cache,
        } => {
            let trace = read_trace(&trace)?;
            let cuts = match every_live {
                Some(k) => trace.live_cut_points().into_iter().step_by(k.max(1)).collect(),
                None => cuts,
            };
            // The trace's width (a trace made with --max-blocks) unless the command gives one.
            let execution = captured.then_some(blaze_ir::plan::Execution::Captured);
            let plan = trace.plan(cuts).with_settings(blaze_ir::plan::Settings {
                max_blocks: max_blocks.or(trace.max_blocks),
                max_tasks,
                store,
                execution,
            });
            plan.validate()?;
            crate::files::write_atomic(&output, &plan.to_ron())?;
            let settings = if plan.settings.is_default() {
                String::new()
            } else {
                format!(", settings {}", plan.settings.to_text())
            };
            println!(
                "plan with {} cut(s) of {} cut points{settings} written to {}",
                plan.cuts.len(),
                plan.cut_points.len(),
                output.display()
            );
            match bundle {
                Some(bundle) => crate::tune_cli::add_plans_to_bundle(&bundle, vec![plan], autotune_cache.as_deref()),
                None => Ok(()),
            }
        }
        Command::Space { trace, budget, seed, check_egraph, dry_run, classes, output } => {
            let trace = read_trace(&trace)?;
            if dry_run {
                let (cands, canon) = if classes {
                    crate::space::class_candidates(&trace, budget)
                } else {
                    crate::space::candidates(&trace, budget, seed)
                };
                if classes {
                    let found = crate::classes::classes(&trace);
                    println!(
                        "{} live cut points in {} classes ({} repeating):",
                        trace.live_cut_points().len(),
                        found.len(),
                        found.iter().filter(|c| c.members.len() > 1).count()
                    );
                    for class in found.iter().filter(|c| c.members.len() > 1) {
                        println!("  {} x  {}", class.members.len(), class.context);
                    }
                }
                println!(
                    "requested {} / collapsed by e-graph {} ({}, {} iterations, {} e-nodes)",
                    cands.len(),
                    canon.collapsed(),
                    canon.stop_reason,
                    canon.iterations,
                    canon.egraph_nodes
                );
                for group in &canon.groups {
                    println!("  {}", group.iter().map(|i| cands[*i].to_text()).collect::<Vec<_>>().join("  ==  "));
                }
                return Ok(());
            }
            let factory = factory_of_trace(resolve, &trace)?;
            let report = crate::space::explore_space(factory.as_ref(), &trace, budget, seed, check_egraph, classes)?;
            println!("{}", crate::space::summary(&report));
            if let Some(out) = output {
                crate::files::write_atomic(&out, &crate::files::to_ron(&report))?;
            }
            anyhow::ensure!(
                report.false_merges.is_empty(),
                "the e-graph merged requests that executed differently: {:?}",
                report.false_merges
            );
            Ok(())
        }
        Command::Bench(args) if !args.table.is_empty() => crate::bench::table(&args.table),
        Command::Bench(args) => {
            let names = if args.models.is_empty() { resolve.names() } else { args.models.clone() };
            for name in &names {
                anyhow::ensure!(resolve.names().contains(name), "unknown model `{name}` (see `blazec list`)");
            }
            crate::bench::bench(names, &args)
        }
        Command::Verify { plan, trace, every_live, inject_fault, gate_steps } => {
            let (model, regime, cuts, settings) = match (plan, trace) {
                (Some(plan), _) => {
                    let plan = blaze_ir::PlanFile::read(&plan)?;
                    (plan.contract.model, plan.contract.regime, plan.cuts, plan.settings)
                }
                (None, Some(trace)) => {
                    let trace = read_trace(&trace)?;
                    let cuts = trace.live_cut_points().into_iter().step_by(every_live.max(1)).collect();
                    (trace.model, trace.regime, cuts, Default::default())
                }
                (None, None) => anyhow::bail!("give --plan or --trace"),
            };
            let factory = factory_named(resolve, &model)?;
            let candidate = crate::candidate::Candidate::with_settings(1, cuts, settings);
            let outcome = match gate_steps {
                Some(steps) if candidate.is_captured() => {
                    crate::tune::verify::verify_captured(factory.as_ref(), regime, &candidate, steps)
                }
                _ => crate::tune::verify::verify(factory.as_ref(), regime, &candidate, inject_fault),
            };
            println!(
                "verify {model} ({} cuts{}): {outcome:?}",
                candidate.cuts.len(),
                if inject_fault { ", fault injected" } else { "" }
            );
            Ok(())
        }
        Command::Run(args) => run::run(resolve, &args),
        Command::Serve(args) => crate::serve::serve(resolve, &args),
        Command::Live(args) => crate::live::command::live(resolve, &args),
        Command::Tune(args) => crate::tune_cli::run_tune(resolve, &args),
        Command::RaceCheck(args) => crate::race_check::race_check(resolve, &args),
        Command::Demo(args) => demo::demo(resolve, &args),
        Command::Doctor { model, steps, tolerance, max_probes, output } => {
            anyhow::ensure!(tolerance >= 0.0 && tolerance.is_finite(), "--tolerance must be a finite number >= 0");
            anyhow::ensure!(steps >= 1, "--steps must be at least 1");
            let factory = resolve_model(resolve, &model)?;
            crate::files::prepare_output(&output)?;
            let opts = crate::doctor::DoctorOptions { regime: model.regime, steps, tolerance, max_probes };
            let mut progress = crate::progress::progress_printer("doctor", false);
            let d = crate::doctor::doctor(factory.as_ref(), &opts, &mut progress)?;
            let stem = output.with_extension("");
            crate::files::write_atomic(&stem.with_extension("doctor.ron"), &crate::files::to_ron(&d.report))?;
            let md = crate::doctor::markdown(&d.report);
            crate::files::write_atomic(&stem.with_extension("doctor.md"), &md)?;
            if !d.report.cuts.is_empty() {
                let plan = d.trace.plan(d.report.cuts.iter().map(|&c| blaze_ir::BoundaryId(c)).collect());
                plan.validate()?;
                crate::files::write_atomic(&output, &plan.to_ron())?;
            }
            print!("{md}");
            Ok(())
        }
        Command::Profile { model, plan, steps, top, output } => {
            let factory = resolve_model(resolve, &model)?;
            let mut arms = vec![crate::profile::profile_arm(
                factory.as_ref(),
                model.regime,
                &crate::candidate::Candidate::new(0, vec![]),
                "Burn's plan",
                steps,
            )?];
            if let Some(path) = plan {
                let plan = blaze_ir::PlanFile::read(&path)?;
                let candidate = crate::candidate::Candidate::with_settings(1, plan.cuts, plan.settings);
                if candidate.is_captured() {
                    // A replay issues the recorded kernels with no per-block host work to time.
                    println!(
                        "note: {} is captured: profiled as its fusion run eagerly (its kernels are the ones a replay issues); `blazec run --plan` times its replays",
                        path.display()
                    );
                }
                let candidate = candidate.eager();
                arms.push(crate::profile::profile_arm(
                    factory.as_ref(),
                    model.regime,
                    &candidate,
                    &format!("{} ({})", path.display(), candidate.to_text()),
                    steps,
                )?);
            }
            print!("{}", crate::profile::text(&model.model, &arms, top));
            if let Some(out) = output {
                crate::files::write_atomic(&out, &crate::files::to_ron(&arms))?;
            }
            Ok(())
        }
        Command::Probe { model, arm, steps, burn_first, output } => {
            let factory = resolve_model(resolve, &model)?;
            let candidate = match arm.as_str() {
                "burn" => crate::candidate::Candidate::new(0, vec![]),
                "fusion-off" => crate::candidate::Candidate::fusion_off(1),
                path => {
                    let plan = blaze_ir::PlanFile::read(std::path::Path::new(path)).map_err(|e| {
                        anyhow::anyhow!("--arm {path}: not burn, fusion-off or a usable plan file ({e})")
                    })?;
                    crate::candidate::Candidate::with_settings(1, plan.cuts, plan.settings)
                }
            };
            if burn_first > 0 {
                let mut other = factory.build(model.regime).map_err(anyhow::Error::msg)?;
                crate::drive::warm_up(other.as_mut(), burn_first);
            }
            let probe = crate::tune::verify::probe_steps(factory.as_ref(), model.regime, &candidate, false, steps)
                .map_err(anyhow::Error::msg)?;
            crate::files::write_atomic(&output, &crate::files::to_ron(&probe))?;
            println!(
                "{} {}: losses {:?}; {} blocks ({} fused); partition {}",
                model.model,
                candidate.to_text(),
                probe.losses,
                probe.blocks,
                probe.fused_blocks,
                probe.fingerprint
            );
            Ok(())
        }
        Command::Check { bundle, model } => {
            let bundle = blaze_ir::Bundle::read(&bundle)?;
            let device = blaze_workloads::device::device_info();
            let mut progress = crate::progress::progress_printer("check", false);
            let rows = crate::check::check(&bundle, model.as_deref(), &device, resolve, &mut progress);
            print!("{}", crate::check::table(&rows));
            anyhow::ensure!(
                !rows.is_empty(),
                "the bundle holds no entry{}",
                model.map_or(String::new(), |m| format!(" of model `{m}`"))
            );
            anyhow::ensure!(
                rows.iter().any(|r| r.verdict.is_ok()),
                "no entry fits this machine ({}) and build",
                device.adapter
            );
            Ok(())
        }
        Command::Bundle { bundle, plans, autotune_cache } => {
            crate::tune_cli::bundle_command(&bundle, &plans, autotune_cache.as_deref())
        }
        Command::Table { files } => {
            print!("{}", crate::tune::table::table(&files)?);
            Ok(())
        }
        Command::List => {
            for name in resolve.names() {
                let Some(factory) = resolve.find(&name, None, None) else { continue };
                // Parameters are counted on a built (forward) instance.
                let params = factory.build(Regime::Forward).map(|m| m.describe().num_params).unwrap_or(0);
                println!("{:<16} {:>10} params  {}", name, params, factory.summary());
            }
            Ok(())
        }
    }
}

/// `--store shared|position`, read as a plan's text form reads it.
fn parse_store(value: &str) -> Result<blaze_ir::plan::PlanStore, String> {
    let mut settings = blaze_ir::plan::Settings::default();
    settings.read_word(&format!("store={value}"))?;
    settings.store.ok_or_else(|| format!("`{value}`: expected shared or position"))
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
