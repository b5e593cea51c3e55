//! A mutation fuzzer for Blaze's file parsers that runs on stable Rust (no cargo-fuzz): the plan
//! file (`PlanFile::parse`), the bundle (`Bundle::parse`, `select`), the trace (`Trace::from_ron` and what blazec does with a trace it
//! accepted) and the partition text form. Every execution runs under `catch_unwind`, is timed
//! and has its heap peak measured; a panic, an execution over 1 s or a heap peak over 256 MiB is
//! saved under `ir/fuzz/findings/` and fails the run (exit 1).
//!
//! Guidance without instrumentation: an input is kept in the corpus when it produces an outcome
//! not seen before (accepted, or an error message with its numbers stripped).
//!
//! Usage: blaze-fuzz [plan|bundle|trace|partition|all] [execs per target] [seed] [--root DIR] [--save-corpus] [--write-seeds]
//! (built with the workspace: `$CARGO_TARGET_DIR/release/blaze-fuzz`).
use blaze_ir::{Bundle, ExecutedPartition, PlanFile, Trace};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[global_allocator]
static HEAP: blaze_ir::heap::Counting = blaze_ir::heap::Counting;

const SLOW: Duration = Duration::from_secs(1);
const HEAVY: usize = 256 << 20;

/// Runs one input through a target; the outcome class (for guidance).
fn run(target: &str, text: &str) -> String {
    match target {
        "plan" => match PlanFile::parse(text) {
            Ok(p) => {
                let _ = p.to_ron();
                let _ = p.check_contract(&p.contract);
                "ok".into()
            }
            Err(e) => class(&e.to_string()),
        },
        "trace" => match Trace::from_ron(text) {
            Ok(t) => {
                // What blazec does with an accepted trace.
                let _ = (
                    t.to_text(),
                    t.to_dot(),
                    t.graph(),
                    t.live_cut_points(),
                    t.contract(),
                    t.partition.fused_blocks_sorted(),
                );
                let _ = t.plan(t.live_cut_points()).validate();
                "ok".into()
            }
            Err(e) => class(&e),
        },
        "bundle" => match Bundle::parse(text) {
            Ok(b) => {
                let _ = b.to_ron();
                for plan in &b.entries {
                    let _ = b.select(&plan.contract);
                }
                "ok".into()
            }
            Err(e) => class(&e.to_string()),
        },
        "partition" => match ExecutedPartition::from_text(text) {
            Ok(p) => {
                let _ = (p.canonical(), p.fingerprint(), p.to_text(), p.merged_boundaries(), p.fused_blocks_sorted());
                "ok".into()
            }
            Err(e) => class(&e),
        },
        _ => unreachable!(),
    }
}

/// An error message up to its first quoted piece of input, digits dropped, at most 48
/// characters: its kind.
fn class(msg: &str) -> String {
    msg.chars().take_while(|&c| c != '`').filter(|c| !c.is_ascii_digit()).take(48).collect()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&str] = &[
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    "\"",
    "-1",
    "0",
    "18446744073709551616",
    "4294967296",
    "1e309",
    "NaN",
    "Some(",
    "None",
    "true",
    "b",
    "\n",
    "PlanFile(",
    "Trace(",
    "format_version: 2",
    "cuts: [",
    "ops: [",
    "inputs: [",
    "blocks: [",
    "|",
    " ",
    "settings: (",
    "max_blocks: Some(",
    "max_tasks: Some(",
    "format_version: 1",
    "max_blocks: Some(4096)",
    "max_blocks: Some(0)",
];

fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => v.insert(at, rng.next() as u8),
            2 if !v.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            3 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                v.splice(at..at, t.iter().copied());
            }
            4 if !v.is_empty() => {
                let start = rng.below(v.len());
                let end = (start + 1 + rng.below(64)).min(v.len());
                let piece = v[start..end].to_vec();
                v.splice(at..at, piece);
            }
            5 => {
                let other = &corpus[rng.below(corpus.len())];
                let from = rng.below(other.len());
                let end = (from + 1 + rng.below(256)).min(other.len());
                v.splice(at..at, other[from..end].iter().copied());
            }
            _ => v.truncate(at),
        }
    }
    v
}

fn load_corpus(dir: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    files.sort();
    files.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

struct Totals {
    execs: u64,
    findings: u64,
    slowest: Duration,
    heaviest: usize,
    classes: BTreeSet<String>,
    corpus: usize,
}

fn fuzz(target: &str, execs: u64, seed: u64, root: &Path, save: bool) -> Totals {
    let dir = root.join("corpus").join(target);
    let mut corpus = load_corpus(&dir);
    assert!(!corpus.is_empty(), "no seeds in {}", dir.display());
    let mut rng = Rng(seed | 1);
    let mut t =
        Totals { execs: 0, findings: 0, slowest: Duration::ZERO, heaviest: 0, classes: BTreeSet::new(), corpus: 0 };
    std::panic::set_hook(Box::new(|_| {}));
    for _ in 0..execs {
        let pick = rng.below(corpus.len());
        let input = mutate(&mut rng, &corpus[pick], &corpus);
        let text = String::from_utf8_lossy(&input).into_owned();
        let base = blaze_ir::heap::start();
        let start = Instant::now();
        let outcome = std::panic::catch_unwind(|| run(target, &text));
        let took = start.elapsed();
        let heap = blaze_ir::heap::peak_since(base);
        t.execs += 1;
        t.slowest = t.slowest.max(took);
        t.heaviest = t.heaviest.max(heap);
        let class = match outcome {
            Ok(class) if took < SLOW && heap < HEAVY => class,
            other => {
                let why = if other.is_err() {
                    "panic"
                } else if took >= SLOW {
                    "slow"
                } else {
                    "heavy"
                };
                t.findings += 1;
                let out = root.join("findings");
                let _ = std::fs::create_dir_all(&out);
                let _ = std::fs::write(out.join(format!("{target}-{why}-{}.txt", t.execs)), &input);
                eprintln!("{target}: {why} at execution {} ({took:?}, {heap} bytes)", t.execs);
                continue;
            }
        };
        if t.classes.insert(class) && corpus.len() < 4096 {
            if save {
                let _ = std::fs::write(dir.join(format!("found-{seed}-{}.txt", t.execs)), &input);
            }
            corpus.push(input);
        }
    }
    let _ = std::panic::take_hook();
    t.corpus = corpus.len();
    t
}

/// Writes the built-in seeds (a small plan, a three-operation trace, a partition) into the corpus.
fn write_seeds(root: &Path) {
    use blaze_ir::BoundaryId;
    use blaze_ir::plan::{Contract, DeviceInfo, Regime};
    use blaze_ir::signature::OpSignature;
    use blaze_ir::trace::{TRACE_FORMAT_VERSION, TracedBoundary, TracedOp};
    let device = DeviceInfo { adapter: "llvmpipe".into(), backend: "vulkan".into(), compiler: "wgsl".into() };
    let contract = Contract {
        model: "m".into(),
        regime: Regime::Training,
        shapes: "b=2".into(),
        op_stream: "ab".into(),
        ops_per_step: 10,
        device: device.clone(),
        burn_version: "0.22.1".into(),
        recordable_step: None,
    };
    let mut plan = PlanFile::burn_default(contract, vec![BoundaryId(2), BoundaryId(5)]);
    plan.cuts = vec![BoundaryId(5)];
    let mut bundle = Bundle::new();
    bundle.upsert(plan.clone());
    let mut forward = plan.clone();
    forward.contract.regime = Regime::Forward;
    bundle.upsert(forward);
    let sig = |k: &str| OpSignature { kind: k.into(), dtype: "F32".into(), shapes: vec![vec![2, 3], vec![2, 3]] };
    let trace = Trace {
        format_version: TRACE_FORMAT_VERSION,
        model: "tiny".into(),
        regime: Regime::Forward,
        shapes: "2x3".into(),
        device,
        burn_version: "0.22.1".into(),
        warmup_steps: 2,
        ops: vec![
            TracedOp { index: 0, sig: sig("Float/Matmul"), inputs: vec![] },
            TracedOp { index: 1, sig: sig("NumericFloat/Add"), inputs: vec![0] },
            TracedOp { index: 2, sig: sig("Float/Exp"), inputs: vec![1, 0] },
        ],
        partition: ExecutedPartition { blocks: vec![vec![0], vec![1, 2]] },
        boundaries: vec![TracedBoundary { id: BoundaryId(2), live: true }],
        explored: vec![0, 1, 2],
        max_blocks: None,
        recordable_step: None,
    };
    let c = root.join("corpus");
    for (dir, name, text) in [
        ("plan", "seed-small.ron", plan.to_ron()),
        ("bundle", "seed-two.blaze", bundle.to_ron()),
        ("trace", "seed-tiny.ron", trace.to_ron()),
        ("partition", "seed.txt", trace.partition.to_text()),
    ] {
        std::fs::create_dir_all(c.join(dir)).unwrap();
        std::fs::write(c.join(dir).join(name), text).unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--write-seeds") {
        write_seeds(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz"));
        return;
    }
    let save = args.iter().any(|a| a == "--save-corpus");
    // `--root DIR`: the fuzz directory (corpus/, findings/). The default is the one this binary
    // was compiled beside, which is wrong when a target directory shared by two checkouts kept
    // the other checkout's build (cargo's hashes of path packages ignore where they are).
    let root_at = args.iter().position(|a| a == "--root");
    let root = match root_at {
        Some(i) => PathBuf::from(args.get(i + 1).unwrap_or_else(|| {
            eprintln!("error: --root needs a directory");
            std::process::exit(2)
        })),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz"),
    };
    let pos: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|&(i, a)| !a.starts_with("--") && root_at.map(|r| r + 1) != Some(i))
        .map(|(_, a)| a)
        .collect();
    let which = pos.first().map_or("all", |s| s.as_str());
    let execs: u64 = pos.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let seed: u64 = pos.get(2).and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    let targets: Vec<&str> = match which {
        "all" => vec!["plan", "bundle", "trace", "partition"],
        t @ ("plan" | "bundle" | "trace" | "partition") => vec![t],
        other => {
            eprintln!("error: unknown target `{other}` (plan, bundle, trace, partition or all)");
            std::process::exit(2);
        }
    };
    let mut failed = false;
    for target in targets {
        let start = Instant::now();
        let t = fuzz(target, execs, seed, &root, save);
        failed |= t.findings > 0;
        println!(
            "{target}: {} executions in {:.1} s, {} findings, slowest {:.2} ms, heap peak {} KiB, {} outcome classes, corpus {}",
            t.execs,
            start.elapsed().as_secs_f64(),
            t.findings,
            t.slowest.as_secs_f64() * 1e3,
            t.heaviest.div_ceil(1024),
            t.classes.len(),
            t.corpus
        );
    }
    std::process::exit(if failed { 1 } else { 0 });
}
