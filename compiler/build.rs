//! Records the commit the binary was built from, for results files.
fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = std::process::Command::new("git")
        .args(["diff", "--quiet", "HEAD"])
        .status()
        .map(|s| !s.success())
        .unwrap_or(false);
    println!("cargo:rustc-env=BLAZE_COMMIT={commit}{}", if dirty { "-dirty" } else { "" });
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/index");
    // A commit moves the branch, not HEAD; an edit not yet staged changes neither, and must
    // still mark the binary `-dirty`.
    println!("cargo:rerun-if-changed=../.git/refs/heads");
    for dir in ["src", "../ir/src", "../runtime/src", "../runtime/burn/src", "../examples/workloads/src", "../patches"]
    {
        println!("cargo:rerun-if-changed={dir}");
    }
}
