//! `blazec check` on a bundle: exit 0 when the entry for this machine still fits
//! (traced again: op stream and cut points), 1 when none does, with a table saying why.
mod common;
use blaze_ir::{Bundle, PlanFile};
use common::*;

fn check(bundle: &Bundle, tag: &str) -> (Option<i32>, String, String) {
    let path = scratch("check").join(format!("{tag}.blaze"));
    std::fs::write(&path, bundle.to_ron()).unwrap();
    let out = blazec(&["check", path.to_str().unwrap()]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_says_which_entries_fit_this_machine_and_exits_accordingly() {
    let (trace_path, _) = trace("forward");
    let plan_path = scratch("check").join("plan.ron");
    ok(&["plan", "--trace", trace_path.to_str().unwrap(), "--every-live", "4", "-o", plan_path.to_str().unwrap()]);
    let here = PlanFile::parse(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    let mut elsewhere = here.clone();
    elsewhere.contract.device.adapter = "NVIDIA H200".into();

    let mut both = Bundle::new();
    both.upsert(here.clone());
    both.upsert(elsewhere.clone());
    let (code, table, stderr) = check(&both, "both");
    assert_eq!(code, Some(0), "{table}{stderr}");
    assert!(table.contains("on llvmpipe") && table.contains("| yes |"), "{table}");
    assert!(table.contains("no: another device: made on `NVIDIA H200`"), "{table}");

    let mut only_elsewhere = Bundle::new();
    only_elsewhere.upsert(elsewhere);
    let (code, table, stderr) = check(&only_elsewhere, "elsewhere");
    assert_eq!(code, Some(1), "{table}{stderr}");
    assert!(
        stderr.lines().filter(|l| l.starts_with("error:")).count() == 1
            && stderr.contains("no entry fits this machine"),
        "{stderr}"
    );

    let mut stale = here;
    stale.contract.op_stream = "0123456789abcdef".into();
    let mut changed = Bundle::new();
    changed.upsert(stale);
    let (code, table, _) = check(&changed, "stale");
    assert_eq!(code, Some(1), "{table}");
    assert!(table.contains("no: plan was made for op stream `0123456789abcdef`"), "{table}");
}

/// Built-in run path: `run --bundle` starts as a user program does (one call, nothing
/// declared); the entry of the run's regime is installed after its first step and the last step
/// executes exactly the partition of `run --plan` with that entry's plan file.
#[test]
fn run_with_a_bundle_installs_the_entry_whose_op_stream_it_runs() {
    let dir = scratch("run-bundle");
    let bundle = dir.join("model.blaze");
    for regime in ["training", "forward"] {
        let (trace_path, _) = trace(regime);
        let plan = dir.join(format!("{regime}.ron"));
        ok(&[
            "plan",
            "--trace",
            trace_path.to_str().unwrap(),
            "--every-live",
            "3",
            "-o",
            plan.to_str().unwrap(),
            "--bundle",
            bundle.to_str().unwrap(),
        ]);
        let (planned, _) = run(regime, Some(&plan), &format!("bundle-plan-{regime}"));
        assert_ne!(
            planned.partition.fingerprint(),
            burn_default(regime).partition.fingerprint(),
            "{regime}: the plan changes the partition"
        );

        let report = dir.join(format!("{regime}.report.ron"));
        let mut args = vec!["run"];
        args.extend(SMALL);
        args.extend([
            "--regime",
            regime,
            "--steps",
            "1",
            "--settle-ms",
            "0",
            "--bundle",
            bundle.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ]);
        let out = ok(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let bundled = read_report(&report);
        assert!(
            bundled.plan.starts_with(&format!("applied (bundle entry attention-d257-b2s32 {regime} [")),
            "{stdout}"
        );
        assert_eq!(bundled.partition.fingerprint(), planned.partition.fingerprint(), "{regime}: {stdout}");
        assert!(stdout.contains("plan load ") && bundled.plan_load_ms.is_some(), "{stdout}");
    }
}

/// On lavapipe: the autotune decisions of a warm cache travel in the bundle
/// (version 2); a run on a fresh cache imports every one before its first operation, installs
/// the entry and computes exactly what a run of the plan file without them computes; the
/// decisions are then in the fresh cache (a second run finds them already present).
#[test]
fn a_bundle_ships_autotune_decisions_and_a_fresh_cache_imports_them() {
    let dir = scratch("autotune-bundle");
    let model = ["chain-32", "--batch", "4"];
    let cache = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let with_cache = |args: &[&str], name: &str| {
        let out = blazec_env(args, &[("BLAZE_AUTOTUNE_CACHE", &cache(name))]);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    };
    let run_args = |extra: &[&str], report: &std::path::Path| -> Vec<String> {
        let mut a: Vec<String> = ["run"]
            .iter()
            .chain(model.iter())
            .chain(["--steps", "1", "--settle-ms", "0", "--report"].iter())
            .map(|s| s.to_string())
            .collect();
        a.push(report.to_str().unwrap().into());
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };

    let trace_path = dir.join("t.ron");
    let mut trace_args = vec!["trace"];
    trace_args.extend(model);
    trace_args.extend(["-o", trace_path.to_str().unwrap()]);
    with_cache(&trace_args, "warm");
    let bundle = dir.join("model.blaze");
    let plan = dir.join("p.ron");
    let out = ok(&[
        "plan",
        "--trace",
        trace_path.to_str().unwrap(),
        "--every-live",
        "3",
        "-o",
        plan.to_str().unwrap(),
        "--bundle",
        bundle.to_str().unwrap(),
        "--autotune-cache",
        &cache("warm"),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // `bundle …: <n> autotune decisions for this device in <file>`
    let (decisions, file): (usize, String) = stdout
        .lines()
        .find_map(|l| {
            let (n, file) = l.split(": ").nth(1)?.split_once(" autotune decisions for this device in ")?;
            Some((n.parse().ok()?, file.to_string()))
        })
        .unwrap_or_default();
    assert!(
        decisions >= 1 && file.starts_with("model.blaze.autotune/llvmpipe") && file.ends_with(".cubecl"),
        "{stdout}"
    );
    assert!(std::fs::read_to_string(&bundle).unwrap().contains("format_version: 2"));

    let seeded_report = dir.join("seeded.ron");
    let a = run_args(&["--bundle", bundle.to_str().unwrap()], &seeded_report);
    let out = with_cache(&a.iter().map(String::as_str).collect::<Vec<_>>(), "fresh");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        stderr.contains(&format!(
            "autotune cache from {}: {decisions} decisions imported, 0 already present",
            dir.join(&file).display()
        )),
        "{stderr}"
    );
    let seeded = read_report(&seeded_report);
    assert!(seeded.plan.starts_with("applied (bundle entry chain-32-b4"), "{}", seeded.plan);

    let plain_report = dir.join("plain.ron");
    let a = run_args(&["--plan", plan.to_str().unwrap()], &plain_report);
    with_cache(&a.iter().map(String::as_str).collect::<Vec<_>>(), "fresh-without");
    let plain = read_report(&plain_report);
    assert_eq!(seeded.losses, plain.losses, "the shipped decisions change no number");
    assert_eq!(seeded.partition.fingerprint(), plain.partition.fingerprint());

    let again = dir.join("again.ron");
    let a = run_args(&["--bundle", bundle.to_str().unwrap()], &again);
    let out = with_cache(&a.iter().map(String::as_str).collect::<Vec<_>>(), "fresh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("0 decisions imported, {decisions} already present")),
        "the first run left them in its cache: {stderr}"
    );
    decisions_alone_are_bundled_and_seeded(&dir, &cache("warm"), decisions);
}

/// `blazec bundle` with no plan ships this machine's decisions alone (what `plans/autotune/`
/// holds); `blazec seed` imports them into an empty cache root before any run, passes over
/// bundles of other devices with one note, and refuses a path that is not there.
fn decisions_alone_are_bundled_and_seeded(dir: &std::path::Path, warm: &str, decisions: usize) {
    let only = dir.join("decisions").join("only.blaze");
    std::fs::create_dir_all(only.parent().unwrap()).unwrap();
    let out = ok(&["bundle", only.to_str().unwrap(), "--autotune-cache", warm]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(": {decisions} autotune decisions for this device in only.blaze.autotune/")),
        "{stdout}"
    );
    let held = Bundle::read(&only).unwrap();
    assert!(held.entries.is_empty() && held.autotune.len() == 1, "{held:?}");

    let root = dir.join("seeded-root");
    let seed = |from: &std::path::Path| {
        blazec_env(&["seed", from.to_str().unwrap()], &[("BLAZE_AUTOTUNE_CACHE", root.to_str().unwrap())])
    };
    let out = seed(only.parent().unwrap());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.contains(&format!("{decisions} decisions imported, 0 already present")),
        "{stderr}"
    );
    let out = seed(&only);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.contains(&format!("0 decisions imported, {decisions} already present")),
        "{stderr}"
    );

    // The H100's shipped decisions: another device here.
    let other = dir.join("other-device");
    std::fs::create_dir_all(&other).unwrap();
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans/autotune");
    let name = "attention-d257.training.h100.blaze";
    std::fs::copy(shipped.join(name), other.join(name)).unwrap();
    let out = seed(&other);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.contains("holds no autotune decisions this machine can use"), "{stderr}");

    let out = seed(&dir.join("not-there"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not-there: no such bundle or directory"), "{stderr}");
}

/// `blazec bundle`: plan files a user already has go into one bundle, each replacing the entry
/// of its key; a bad file among them leaves the bundle as it was. (Plan files of H200
/// campaigns: no device is needed.)
#[test]
fn bundle_adds_plan_files_validating_each_first() {
    let dir = scratch("bundle-add");
    let path = dir.join("model.blaze");
    let plans = env!("CARGO_MANIFEST_DIR").to_string() + "/../plans/withdrawn/";
    let (training, forward) =
        (plans.clone() + "attention-d257.training.h200.ron", plans + "attention-d257.forward.h200.ron");
    let out =
        String::from_utf8_lossy(&ok(&["bundle", path.to_str().unwrap(), &training, &forward]).stdout).into_owned();
    assert_eq!(out.matches(": added the entry for attention-d257").count(), 2, "{out}");
    let held = Bundle::read(&path).unwrap();
    assert_eq!(held.entries.len(), 2);
    for file in [&training, &forward] {
        let plan = PlanFile::read(std::path::Path::new(file)).unwrap();
        assert!(held.entries.contains(&plan), "{file} is held as it was written");
    }

    let again = String::from_utf8_lossy(&ok(&["bundle", path.to_str().unwrap(), &forward]).stdout).into_owned();
    assert!(again.contains(": replaced the entry for attention-d257 forward"), "{again}");
    let before = std::fs::read(&path).unwrap();

    let bad = dir.join("bad.ron");
    std::fs::write(&bad, "PlanFile(format_version: 2").unwrap();
    let refused = blazec(&["bundle", path.to_str().unwrap(), &training, bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.lines().filter(|l| l.starts_with("error:")).count() == 1 && stderr.contains("bad.ron: not a plan file"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before, "a refused call leaves the bundle as it was");
}
