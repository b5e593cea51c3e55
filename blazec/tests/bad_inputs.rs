//! blazec given a bad trace exits 1 with exactly one `error:` line naming the reason,
//! quickly, whatever the path holds. No device is needed: the file is refused before any model
//! is built.
mod common;
use common::*;
use std::time::{Duration, Instant};

/// A tune whose plan could not be written is refused before anything is measured.
#[test]
fn tune_refuses_an_unwritable_output_before_measuring() {
    for (output, why) in [
        ("/dev/null/plan.ron", "cannot create /dev/null"),
        ("/proc/self/plan.ron", "cannot write to /proc/self (the output goes there)"),
    ] {
        let start = Instant::now();
        let out =
            blazec(&["tune", "attention-d257", "--batch", "2", "--seq", "32", "--device", "vulkan", "-o", output]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{output}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert!(errors.len() == 1 && errors[0].contains(why), "{output}: {stderr}");
        assert!(start.elapsed() < Duration::from_secs(20), "refused before measuring");
    }
}

#[test]
fn blazec_refuses_bad_trace_files_with_one_error_line() {
    let dir = scratch("bad-inputs");
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let fifo = dir.join("fifo");
    let _ = std::process::Command::new("mkfifo").arg(&fifo).status();
    let plan = write("plan.ron", "PlanFile(format_version: 1)");
    let damaged = write(
        "damaged.ron",
        &std::fs::read_to_string(env!("CARGO_MANIFEST_DIR").to_string() + "/../ir/fuzz/corpus/trace/seed-tiny.ron")
            .unwrap()
            .replace("inputs: [0]", "inputs: [2]"),
    );
    let cases: Vec<(String, &str)> = vec![
        (dir.join("missing.ron").to_str().unwrap().into(), "No such file or directory"),
        (dir.to_str().unwrap().into(), "it is a directory"),
        ("/dev/zero".into(), "it is not a regular file"),
        (fifo.to_str().unwrap().into(), "it is not a regular file"),
        (write("empty.ron", ""), "not a trace file"),
        (plan, "not a trace file"),
        (damaged, "operation 1 reads operation 2, which is not earlier"),
    ];
    for (path, why) in cases {
        let start = Instant::now();
        let out = blazec(&["space", "--trace", &path, "--dry-run"]);
        let took = start.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{path}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{path}: {stderr}");
        assert!(errors[0].contains(why), "{path}: expected `{why}` in {stderr}");
        assert!(took < Duration::from_secs(5), "{path}: {took:?}");
    }
}

/// A reader that goes away (`blazec list | head -c 1`) ends blazec quietly: no panic message
/// on stderr (it used to print "failed printing to stdout: Broken pipe").
#[test]
fn a_closed_pipe_ends_blazec_without_a_panic() {
    let err = std::env::temp_dir().join(format!("blaze-pipe-{}.err", std::process::id()));
    let status = std::process::Command::new("sh")
        .args(["-c", &format!("{} list 2> {} | head -c 1 > /dev/null", env!("CARGO_BIN_EXE_blazec"), err.display())])
        .env("XDG_RUNTIME_DIR", "/tmp")
        .status()
        .unwrap();
    assert!(status.success());
    let stderr = std::fs::read_to_string(&err).unwrap();
    let _ = std::fs::remove_file(&err);
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
}

/// A shape that exhausts the device's memory. On lavapipe device memory is the process's own,
/// so an address-space limit (`ulimit -v`, 5 GB) makes the allocation fail as a full GPU's
/// would: `run` and `tune` each end with exit 1 and one last `error:` line naming the panic's
/// cause and saying it is memory, and the tune writes no plan.
#[test]
fn a_shape_that_exhausts_memory_ends_with_one_clear_error_and_no_plan() {
    let dir = scratch("oom");
    let plan = dir.join("plan.ron");
    let limited = |args: &str| {
        std::process::Command::new("sh")
            .args(["-c", &format!("ulimit -v 5000000 && exec \"$0\" {args}"), env!("CARGO_BIN_EXE_blazec")])
            .env("XDG_RUNTIME_DIR", std::env::var("XDG_RUNTIME_DIR").unwrap_or("/tmp".into()))
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("blazec runs")
    };
    let run = limited("run mlp-w1024-b200000 --regime training --warmup 1 --steps 1 --settle-ms 0");
    let tune =
        limited(&format!("tune mlp-w1024-b200000 --regime training --device vulkan --budget 2 -o {}", plan.display()));
    for (what, out) in [("run", run), ("tune", tune)] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        assert!(
            last.starts_with("error:")
                && last.contains("can't allocate buffer")
                && last.contains("the device ran out of memory"),
            "{what}: {last}"
        );
        assert_eq!(stderr.lines().filter(|l| l.starts_with("error:")).count(), 1, "{what}: {stderr}");
    }
    assert!(!plan.exists(), "no plan from a tune that could not measure");
    // Nothing is left behind that stops the next tune: one at a shape that fits, under the
    // same limit, writes its plan.
    let again = limited(&format!(
        "tune mlp-w1024 --batch 4 --regime forward --device vulkan --budget 2 --rounds 3 --max-blocks none --no-fusion-off -o {}",
        plan.display()
    ));
    assert!(
        again.status.success(),
        "a second tune after the one that ran out of memory: {}",
        String::from_utf8_lossy(&again.stderr)
    );
    blaze_ir::PlanFile::parse(&std::fs::read_to_string(&plan).unwrap()).expect("the second tune writes a valid plan");
}

/// A plan is valid for one shader compiler, so `--version` says which this build has: WGSL in
/// the default build the tests use (SPIR-V only with feature `vulkan`, which the GPU build
/// checks before it packs the binary).
#[test]
fn the_version_names_the_shader_compiler_of_this_build() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_blazec")).arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.trim(), format!("blazec {} (shader compiler wgsl)", env!("CARGO_PKG_VERSION")));
}
