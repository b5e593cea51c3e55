//! A short fuzz run of the plan, trace and partition parsers (the long runs are
//! recorded under results/fuzz/). Fails on any panic, execution over 1 s or heap peak over
//! 256 MiB (blaze-fuzz exits 1 and saves the input under ir/fuzz/findings/).
#[test]
fn parsers_survive_a_short_fuzz_run() {
    // This checkout's corpus: cargo runs a test in its package's directory.
    let root = std::env::current_dir().unwrap().join("fuzz");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_blaze-fuzz"))
        .args(["all", "20000", "7", "--root", root.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for target in ["plan", "bundle", "trace", "partition"] {
        assert!(stdout.contains(&format!("{target}: 20000 executions")), "{stdout}");
    }
    assert_eq!(stdout.matches(", 0 findings,").count(), 4, "{stdout}");
}
