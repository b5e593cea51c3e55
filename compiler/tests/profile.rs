//! Issue 10 item 4 on the real device (lavapipe in CI): `blazec profile` attributes a step's
//! host time to the executed blocks of Burn's plan and of a plan file.
mod common;
use blaze_compiler::profile::ArmProfile;
use common::*;

#[test]
fn profile_lists_every_executed_block_of_both_arms_with_its_host_time() {
    let dir = scratch("profile");
    let (trace_path, traced) = trace("training");
    let plan = dir.join("w1.ron");
    ok(&["plan", "--trace", trace_path.to_str().unwrap(), "--max-blocks", "1", "-o", plan.to_str().unwrap()]);
    let out_path = dir.join("profile.ron");
    let mut args = vec!["profile"];
    args.extend(SMALL);
    args.extend(["--regime", "training", "--steps", "3", "--top", "4", "--plan", plan.to_str().unwrap(), "-o", out_path.to_str().unwrap()]);
    let out = ok(&args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("under Burn's plan") && text.contains("(c1: blocks=1)") && text.contains("plan / Burn: step"), "{text}");
    assert!(["host-bound", "device-bound", "mixed"].iter().filter(|v| text.contains(*v)).count() >= 1, "{text}");

    let arms: Vec<ArmProfile> = ron::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(arms.len(), 2);
    assert_eq!(arms[0].blocks.len(), traced.partition.blocks.len(), "Burn's arm executes the traced partition");
    assert_ne!(arms[1].blocks.len(), arms[0].blocks.len(), "width 1 executes other blocks here");
    for arm in &arms {
        assert!(arm.steps_used > 0, "{}: timed steps matched the recorded blocks", arm.arm);
        let mut ops: Vec<u32> = arm.blocks.iter().flat_map(|b| b.ops.clone()).collect();
        ops.sort_unstable();
        assert_eq!(ops, (0..traced.ops.len() as u32).collect::<Vec<_>>(), "{}: every operation in exactly one block", arm.arm);
        assert!(arm.blocks.iter().all(|b| b.host_us.is_finite() && b.host_us > 0.0), "{}: every block has a host time", arm.arm);
        assert!(arm.host_ms > 0.0 && arm.host_ms < arm.step_ms * 1.05, "{}: host time in blocks {} within the step {}", arm.arm, arm.host_ms, arm.step_ms);
    }
}
