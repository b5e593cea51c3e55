//! Every kind of bad or mismatched plan input gives one exact warning, leaves Burn's
//! own plan in force, and is handled in bounded time and memory. Run with `--nocapture` for
//! the table (kind, time, peak heap).
use blaze_ir::plan::{DeviceInfo, Regime};
use blaze_ir::{BoundaryId, Contract, PlanFile};
use blaze_runtime::{LoadOutcome, fallback_warning, load_plan};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[global_allocator]
static HEAP: blaze_ir::heap::Counting = blaze_ir::heap::Counting;

fn contract() -> Contract {
    Contract {
        model: "attention-d257".into(),
        regime: Regime::Training,
        shapes: "batch=2 seq=32 d=257".into(),
        op_stream: String::new(),
        ops_per_step: 100,
        device: DeviceInfo { adapter: "llvmpipe".into(), backend: "vulkan".into(), compiler: "wgsl".into() },
        burn_version: "0.22.1".into(),
        recordable_step: None,
    }
}

fn good() -> PlanFile {
    let mut c = contract();
    c.op_stream = "00ff".into();
    let mut p = PlanFile::burn_default(c, vec![BoundaryId(3), BoundaryId(7), BoundaryId(9)]);
    p.cuts = vec![BoundaryId(7)];
    p
}

fn edited(f: impl FnOnce(&mut PlanFile)) -> String {
    let mut p = good();
    f(&mut p);
    p.to_ron()
}

fn text(t: &str) -> impl Fn(&Path) -> PathBuf + '_ {
    move |dir: &Path| {
        let path = dir.join("plan.ron");
        std::fs::write(&path, t).unwrap();
        path
    }
}

/// (kind, how to make the path, the reason the warning must contain)
type Kind = (&'static str, Box<dyn Fn(&Path) -> PathBuf>, String);

fn kinds() -> Vec<Kind> {
    let good = good().to_ron();
    let k = |name, make: Box<dyn Fn(&Path) -> PathBuf>, why: &str| (name, make, why.to_string());
    let t = |s: String| -> Box<dyn Fn(&Path) -> PathBuf> { Box::new(move |d: &Path| text(&s)(d)) };
    vec![
        k("missing file", Box::new(|d: &Path| d.join("nope.ron")), "No such file or directory"),
        k("directory", Box::new(|d: &Path| d.to_path_buf()), "it is a directory"),
        k("character device /dev/zero", Box::new(|_: &Path| "/dev/zero".into()), "it is not a regular file"),
        k(
            "FIFO with no writer",
            Box::new(|d: &Path| {
                let p = d.join("fifo");
                let _ = std::process::Command::new("mkfifo").arg(&p).status();
                p
            }),
            "it is not a regular file",
        ),
        k(
            "file over the size limit",
            Box::new(|d: &Path| {
                let p = d.join("huge.ron");
                std::fs::File::create(&p).unwrap().set_len(1 << 30).unwrap();
                p
            }),
            "larger than the 16 MiB limit",
        ),
        k(
            "symlink loop",
            Box::new(|d: &Path| {
                let p = d.join("loop");
                let _ = std::os::unix::fs::symlink(&p, &p);
                p
            }),
            "Too many levels of symbolic links",
        ),
        k(
            "binary (not UTF-8)",
            Box::new(|d: &Path| {
                let p = d.join("bin.ron");
                std::fs::write(&p, [0x50, 0x6c, 0xff, 0x00, 0xfe]).unwrap();
                p
            }),
            "it is not UTF-8 text",
        ),
        k("empty file", t(String::new()), "plan file is empty"),
        k("whitespace only", t(" \n\t\n".into()), "plan file is empty"),
        k("truncated", t(good[..good.len() / 2].to_string()), "not valid plan RON"),
        k("JSON instead of RON", t("{\"format_version\": 1, \"cuts\": [7]}".into()), "not valid plan RON"),
        k("a trace file", t("Trace(format_version: 1, model: \"x\")".into()), "not valid plan RON"),
        k(
            "wrong type (version as text)",
            t(good.replace("format_version: 1", "format_version: \"1\"")),
            "not valid plan RON",
        ),
        k("negative number", t(good.replace("ops_per_step: 100", "ops_per_step: -100")), "not valid plan RON"),
        k(
            "number out of range",
            t(good.replace("cuts: [\n        BoundaryId(7),", "cuts: [\n        BoundaryId(1180591620717411303424),")),
            "not valid plan RON",
        ),
        k("missing field", t(good.replace("burn_version: \"0.22.1\",", "")), "not valid plan RON"),
        k("duplicate field", t(good.replacen("cuts: [", "cuts: [], cuts: [", 1)), "not valid plan RON"),
        k(
            "nested 100 000 deep",
            t(format!("PlanFile(format_version: 1, cuts: {}{})", "[".repeat(100_000), "]".repeat(100_000))),
            "not valid plan RON",
        ),
        k(
            "newer format version",
            t(good.replace("format_version: 1", "format_version: 7")),
            &format!("format version 7; this Blaze reads versions 1..={}", blaze_ir::plan::FORMAT_VERSION),
        ),
        k("format version 0", t(good.replace("format_version: 1", "format_version: 0")), "format version 0"),
        k(
            "beam width 0",
            t(edited(|p| {
                p.format_version = 2;
                p.settings.max_blocks = Some(0)
            })),
            "plan setting out of range: max_blocks = 0",
        ),
        k(
            "submission batch too large",
            t(edited(|p| {
                p.format_version = 2;
                p.settings.max_tasks = Some(1 << 20)
            })),
            "plan setting out of range: max_tasks = 1048576",
        ),
        k(
            "settings in a version-1 file",
            t(good.replace("cuts: [", "settings: (max_blocks: Some(2)),\n    cuts: [")),
            "version 1 cannot hold settings",
        ),
        k(
            "cut that is not a cut point",
            t(edited(|p| p.cuts = vec![BoundaryId(5)])),
            "not cut points of its model: b5",
        ),
        k(
            "cut at operation 0",
            t(edited(|p| {
                p.cut_points.push(BoundaryId(0));
                p.cuts = vec![BoundaryId(0)]
            })),
            "not cut points of its model: b0",
        ),
        k(
            "cut beyond the step",
            t(edited(|p| {
                p.cut_points.push(BoundaryId(100));
                p.cuts = vec![BoundaryId(100)]
            })),
            "not cut points of its model: b100",
        ),
        k(
            "duplicate cut",
            t(edited(|p| p.cuts = vec![BoundaryId(7), BoundaryId(3), BoundaryId(7)])),
            "lists a cut more than once: b7",
        ),
        k(
            "another model",
            t(edited(|p| p.contract.model = "mlp-w1025".into())),
            "made for model `mlp-w1025`, but this run has `attention-d257`",
        ),
        k(
            "another regime",
            t(edited(|p| p.contract.regime = Regime::Forward)),
            "made for regime `forward`, but this run has `training`",
        ),
        k(
            "other shapes",
            t(edited(|p| p.contract.shapes = "batch=16 seq=256 d=257".into())),
            "made for shapes `batch=16 seq=256 d=257`",
        ),
        k(
            "another device",
            t(edited(|p| p.contract.device.adapter = "NVIDIA H200".into())),
            "made for device adapter `NVIDIA H200`",
        ),
        k(
            "another shader compiler",
            t(edited(|p| p.contract.device.compiler = "spirv".into())),
            "made for shader compiler `spirv`",
        ),
        k(
            "another Burn version",
            t(edited(|p| p.contract.burn_version = "0.21.0".into())),
            "made for Burn version `0.21.0`",
        ),
    ]
}

#[test]
fn every_bad_plan_kind_warns_once_with_its_reason_and_keeps_burns_plan_in_bounded_time_and_memory() {
    let root = std::env::temp_dir().join(format!("blaze-bad-plans-{}", std::process::id()));
    let mut table = vec!["| kind | reason | time | peak heap |".to_string(), "|---|---|---|---|".into()];
    let all = kinds();
    assert!(all.len() >= 20, "at least 20 kinds");
    for (i, (kind, make, why)) in all.iter().enumerate() {
        let dir = root.join(i.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let path = make(&dir);
        let base = blaze_ir::heap::start();
        let start = Instant::now();
        let outcome = load_plan(&path, &contract());
        let took = start.elapsed();
        let peak = blaze_ir::heap::peak_since(base);
        let LoadOutcome::Fallback(err) = outcome else { panic!("{kind}: the plan was applied") };
        let warning = fallback_warning(&err);
        assert!(
            warning.starts_with("warning: blaze: ") && warning.ends_with("; using Burn's own fusion plan"),
            "{kind}: {warning}"
        );
        assert!(warning.contains(why.as_str()), "{kind}: expected `{why}` in: {warning}");
        assert_eq!(warning.lines().count(), 1, "{kind}: one line");
        assert_eq!(burn_fusion::cut::store_key(), 0, "{kind}: Burn's own plan stays in force");
        assert!(took < Duration::from_secs(1), "{kind}: took {took:?}");
        assert!(peak < 64 << 20, "{kind}: peak heap {peak} bytes");
        table.push(format!("| {kind} | {} | {:.2} ms | {} KiB |", err, took.as_secs_f64() * 1e3, peak.div_ceil(1024)));
    }
    // The good plan applies, and an op stream that differs after the first step withdraws it.
    let path = text(&good().to_ron())(&root);
    let LoadOutcome::Applied(handle) = load_plan(&path, &contract()) else { panic!("the good plan applies") };
    assert_ne!(burn_fusion::cut::store_key(), 0);
    let err = handle.confirm_op_stream("beef").unwrap_err();
    assert!(fallback_warning(&err).contains("made for op stream `00ff`, but this run has `beef`"));
    assert_eq!(burn_fusion::cut::store_key(), 0, "withdrawn");
    table.push(format!("| op stream differs after the first step | {err} | – | – |"));
    println!("{}", table.join("\n"));
    let _ = std::fs::remove_dir_all(&root);
}
