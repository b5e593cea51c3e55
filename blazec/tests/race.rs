//! On the real device (lavapipe in CI): fusion off is an arm of the same process that
//! computes exactly what a BURN_FUSION_MAX_EXPLORATIONS=0 process computes, and `race-check`
//! finds a known slowdown.
mod common;
use blaze_compiler::verify::Probe;
use common::*;

#[test]
fn fusion_off_arm_computes_bit_for_bit_what_a_fusion_off_process_computes() {
    let dir = scratch("fusion-off-arm");
    std::fs::create_dir_all(dir.join("autotune")).unwrap();
    let stock_off = probe(&dir, "stock-off", "burn", &[], &[("BURN_FUSION_MAX_EXPLORATIONS", "0")]);
    // In-process: Burn's fused plans are explored and cached first, then the arm is installed.
    let arm = probe(&dir, "arm", "fusion-off", &["--burn-first", "3"], &[]);
    let fused = probe(&dir, "fused", "burn", &[], &[]);
    assert!(
        fused.fused_blocks > 0 && fused.fingerprint != stock_off.fingerprint,
        "Burn fuses this model, so the check can fail"
    );
    assert_eq!(stock_off.fused_blocks, 0);
    assert_eq!(
        (arm.fingerprint.as_str(), arm.blocks, arm.fused_blocks),
        (stock_off.fingerprint.as_str(), stock_off.blocks, 0),
        "same executed partition"
    );
    let bits = |p: &Probe| p.losses.iter().chain(&p.logits).map(|x| x.to_bits()).collect::<Vec<u32>>();
    assert_eq!(bits(&arm), bits(&stock_off), "same numbers, bit for bit");
    assert_eq!(arm.losses.len(), 3);
}

#[test]
fn race_check_finds_a_large_slowdown_and_reports_every_trial() {
    let dir = scratch("race-check");
    let out = dir.join("check.ron");
    let mut args = vec!["race-check"];
    args.extend(SMALL);
    args.extend([
        "--regime",
        "forward",
        "--trials",
        "2",
        "--slowdown",
        "0,0.5",
        "--calibrate-rounds",
        "20",
        "--rounds",
        "30",
        "--race-budget",
        "30",
    ]);
    let cache = seeded_autotune_cache(&dir);
    args.extend(["--autotune-cache", cache.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&ok(&args).stdout).into_owned();
    let check: blazec::commands::race_check::RaceCheck =
        ron::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(check.levels.len(), 2, "{stdout}");
    let (aa, slow) = (&check.levels[0], &check.levels[1]);
    // The A/A level's verdicts are random by design (a false win has probability <= 2.5 % per
    // race): its rate is measured by the unit tests and on the H200, not asserted here.
    assert_eq!((aa.slowdown, aa.trials.len(), aa.races.len()), (0.0, 2, 2), "{stdout}");
    assert!(aa.calibration.is_none(), "level 0 is not calibrated");
    assert_eq!(slow.slower, 2, "a 50 % slowdown is declared slower in both trials: {stdout}");
    let cal = slow.calibration.as_ref().expect("calibrated");
    // The wait is sized from one synchronised step, so its true size differs from the nominal
    // one (H200: 0.76 % for "1 %"; lavapipe: 1.3-1.9 for "0.5"): that is what calibration is
    // for. It must still be a clearly measured slowdown whose interval excludes 1. 20
    // calibration rounds, not 10: the sign-test interval at 10 needs 9 of 10 rounds slower,
    // which a loaded 2-core machine missed once (1.37 [0.90, 2.03], a build running beside the
    // suite); at 20 it needs 15 of 20.
    assert!(cal.ratio > 1.2 && cal.ratio < 3.0 && cal.lo > 1.0, "calibrated ratio {:?}", cal);
    assert!(check.autotune_cache.as_deref().is_some_and(|c| c.ends_with("autotune")));
    assert!(stdout.contains("| 0.500 |") && stdout.contains("| 0.000 |"), "{stdout}");
    // Raw visits are kept: every round of every race visits Burn's plan.
    assert!(slow.races.iter().all(|r| r.rounds.iter().all(|v| v.iter().any(|(id, _)| *id == 0))));
}
