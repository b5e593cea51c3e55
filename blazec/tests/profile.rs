//! On the real device (lavapipe in CI): `blazec profile` attributes a step's
//! host time and device time to the executed blocks of Burn's plan and of a plan file.
mod common;
use blaze_compiler::profile::ArmProfile;
use common::*;

#[test]
fn profile_lists_every_executed_block_of_both_arms_with_its_host_and_device_time() {
    let dir = scratch("profile");
    let (trace_path, traced) = trace("training");
    let plan = dir.join("w1.ron");
    ok(&["plan", "--trace", trace_path.to_str().unwrap(), "--max-blocks", "1", "-o", plan.to_str().unwrap()]);
    let out_path = dir.join("profile.ron");
    let mut args = vec!["profile"];
    args.extend(SMALL);
    args.extend([
        "--regime",
        "training",
        "--steps",
        "3",
        "--top",
        "4",
        "--plan",
        plan.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    let out = ok(&args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("under Burn's plan") && text.contains("(c1: blocks=1)") && text.contains("plan / Burn: step"),
        "{text}"
    );
    assert!(text.contains("bound by device work") || text.contains("bound by fixed per-step cost"), "{text}");
    assert!(text.contains("device time in blocks") && text.contains("(device timing;"), "{text}");

    let arms: Vec<ArmProfile> = ron::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(arms.len(), 2);
    assert_eq!(arms[0].blocks.len(), traced.partition.blocks.len(), "Burn's arm executes the traced partition");
    assert_ne!(arms[1].blocks.len(), arms[0].blocks.len(), "width 1 executes other blocks here");
    for arm in &arms {
        assert!(arm.steps_used > 0, "{}: timed steps matched the recorded blocks", arm.arm);
        let mut ops: Vec<u32> = arm.blocks.iter().flat_map(|b| b.ops.clone()).collect();
        ops.sort_unstable();
        assert_eq!(
            ops,
            (0..traced.ops.len() as u32).collect::<Vec<_>>(),
            "{}: every operation in exactly one block",
            arm.arm
        );
        assert!(
            arm.blocks.iter().all(|b| b.host_us.is_finite() && b.host_us > 0.0),
            "{}: every block has a host time",
            arm.arm
        );
        assert!(
            arm.host_ms > 0.0 && arm.host_ms < arm.step_ms * 1.05,
            "{}: host time in blocks {} within the step {}",
            arm.arm,
            arm.host_ms,
            arm.step_ms
        );
        device_times_land_on_the_blocks_that_compute(arm);
    }
}

/// Device times come from the device's timestamps, on the server Burn launches on (a client of
/// another server would see windows with no work: no measurement at all), and the most
/// expensive block is one doing matrix products.
fn device_times_land_on_the_blocks_that_compute(arm: &ArmProfile) {
    assert_eq!(arm.device_method, "device", "{}: lavapipe has timestamp queries", arm.arm);
    assert!(arm.device_steps_used > 0, "{}: profiled steps matched the recorded blocks", arm.arm);
    let device_ms = arm.device_ms.unwrap_or_else(|| panic!("{}: no block measured on the device", arm.arm));
    // Profiled steps are not the timed steps: on lavapipe (the device is the CPU) a busy
    // machine stretches one set more than the other, so the bound is loose; a device time
    // summed twice over, or taken from the wrong clock, still exceeds it.
    assert!(
        device_ms > 0.0 && device_ms < arm.step_ms * 3.0,
        "{}: device time {device_ms} ms against a step of {} ms",
        arm.arm,
        arm.step_ms
    );
    let measured = arm.blocks.iter().filter(|b| b.device_us.is_some()).count();
    assert!(measured * 2 > arm.blocks.len(), "{}: {measured} of {} blocks measured", arm.arm, arm.blocks.len());
    let top =
        arm.blocks.iter().max_by(|a, b| a.device_us.unwrap_or(0.0).total_cmp(&b.device_us.unwrap_or(0.0))).unwrap();
    assert!(
        top.kinds.contains("Matmul"),
        "{}: the block with most device time ({:?} µs) is {}",
        arm.arm,
        top.device_us,
        top.kinds
    );
}
