//! The plans under `plans/` are public files. Shipped ones (`plans/captured/`) and withdrawn
//! ones (`plans/withdrawn/`, kept for re-checks) must each read and validate under the current
//! format, sit beside the tune report it came from, name the model, regime and device its file
//! name says, and change something (a plan equal to Burn's own is not worth shipping).
use blaze_ir::PlanFile;
use std::path::Path;

/// A shipped plan's file name ends `.<device>.ron`; the device's adapter name. A `-cuda` device
/// is the same card under Burn's CUDA backend (its plans record backend and compiler `cuda`).
const DEVICES: [(&str, &str); 4] = [
    ("h200", "NVIDIA H200"),
    ("h100", "NVIDIA H100 80GB HBM3"),
    ("lavapipe", "llvmpipe (LLVM 15.0.6, 256 bits)"),
    ("h100-cuda", "NVIDIA H100 80GB HBM3"),
];

/// Checks every `<model>.<regime>.<device>.ron` in `dir` and returns how many there were.
fn check_plans_in(dir: &Path) -> usize {
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some((stem, device, adapter)) =
            DEVICES.iter().find_map(|(d, a)| Some((name.strip_suffix(&format!(".{d}.ron"))?, *d, *a)))
        else {
            continue;
        };
        let plan = PlanFile::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (model, regime) =
            stem.rsplit_once('.').unwrap_or_else(|| panic!("{name}: not <model>.<regime>.<device>.ron"));
        assert_eq!(plan.contract.model, model, "{name}");
        assert_eq!(format!("{:?}", plan.contract.regime).to_lowercase(), regime, "{name}");
        assert_eq!(plan.contract.device.adapter, adapter, "{name}");
        let cuda = device.ends_with("-cuda");
        assert_eq!(plan.contract.device.backend == "cuda", cuda, "{name}: backend {}", plan.contract.device.backend);
        assert_eq!(plan.contract.device.compiler == "cuda", cuda, "{name}: compiler {}", plan.contract.device.compiler);
        assert!(!plan.cuts.is_empty() || !plan.settings.is_default(), "{name}: Burn's own plan");
        let verification = plan.measurements.as_ref().and_then(|m| m.verification());
        assert!(verification.as_ref().is_some_and(|v| v.keeps()), "{name}: verified? {verification:?}");
        let report = dir.join(format!("{stem}.{device}.report.md"));
        let text = std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("{}: {e}", report.display()));
        assert!(
            text.contains("**Selected:**") && text.contains("verified"),
            "{}: a tune report with its selection and verification",
            report.display()
        );
        seen += 1;
    }
    seen
}

#[test]
fn every_shipped_and_withdrawn_plan_reads_validates_and_has_its_report() {
    // This checkout's plans (cargo runs a test in its package's directory; a compile-time path
    // can name another checkout when two share a target directory).
    let plans = std::env::current_dir().unwrap().join("../plans");
    let shipped = check_plans_in(&plans.join("captured"));
    let withdrawn = check_plans_in(&plans.join("withdrawn"));
    assert!(shipped >= 40, "{shipped} shipped plans");
    assert!(withdrawn >= 11, "{withdrawn} withdrawn plans");
    // Nothing ships from the top of plans/: a plan there would escape the shipping rule.
    assert_eq!(check_plans_in(&plans), 0, "plans/ holds plans outside captured/ and withdrawn/");
}

/// `plans/autotune/` ships CubeCL's decisions for a device (`blazec demo` seeds them): each
/// bundle there reads and validates, holds no plan (it is not a plan's way in), names a device
/// in its file name, and its side files are present and not empty.
#[test]
fn every_shipped_autotune_bundle_reads_and_has_its_decisions() {
    let dir = std::env::current_dir().unwrap().join("../plans/autotune");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "blaze") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bundle = blaze_ir::Bundle::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(bundle.entries.is_empty(), "{name}: holds plans");
        assert!(!bundle.autotune.is_empty(), "{name}: holds no decisions");
        for file in &bundle.autotune {
            // The file name says the device, and `-cuda` when Burn's CUDA backend made them.
            let cuda = file.device.backend == "cuda";
            let named = DEVICES.iter().any(|(suffix, adapter)| {
                *adapter == file.device.adapter
                    && suffix.ends_with("-cuda") == cuda
                    && name.ends_with(&format!(".{suffix}.blaze"))
            });
            assert!(named, "{name}: made on {} ({})", file.device.adapter, file.device.backend);
            let side = std::fs::metadata(dir.join(&file.file)).unwrap_or_else(|e| panic!("{}: {e}", file.file));
            assert!(side.is_file() && side.len() > 0, "{}: empty", file.file);
        }
        seen += 1;
    }
    assert!(seen >= 1, "no shipped autotune bundle");
}
