//! Captured execution (plan format versions 4 and 5) on the real device (lavapipe in CI), forward
//! regime of attention-d257 at batch 2, sequence 32: a recorded step replays fresh batches and
//! computes what eager steps compute; the gate refuses a replay whose inputs are not written in
//! place; a recording the backend refuses leaves eager execution with one warning; a plan with
//! cuts is recorded running its own partition, and a recording that ran another is refused.
//! Training: a recorded step with its state written back in place follows
//! Burn's eager Adam and passes the gate (30 replays here, the default 200 in the long tier),
//! and the gate refuses one that does not write it back.
mod common;
use blaze_compiler::runner::RunReport;
use common::*;
use std::path::{Path, PathBuf};

const FAULT: &str = "BLAZE_INJECT_CAPTURE_FAULT";

/// A plan of Burn's own fusion (or with `extra` flags) for the forward trace, captured.
fn captured_plan(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let (trace, _) = trace("forward");
    let out = dir.join(name);
    let mut args = vec!["plan", "--trace", trace.to_str().unwrap(), "--captured", "-o", out.to_str().unwrap()];
    args.extend(extra);
    ok(&args);
    out
}

/// `blazec run` forward with `steps` timed steps and no settling, so runs line up step by step.
fn run_forward(dir: &Path, tag: &str, plan: Option<&Path>, steps: u32, env: &[(&str, &str)]) -> (RunReport, String) {
    let plan_text = plan.map(|p| p.to_str().unwrap().to_string());
    let load: Vec<&str> = plan_text.iter().flat_map(|p| ["--plan", p.as_str()]).collect();
    run_forward_with(dir, tag, &load, steps, env)
}

/// `run_forward` with `load` (`--plan <file>` or `--bundle <dir>`) added.
fn run_forward_with(dir: &Path, tag: &str, load: &[&str], steps: u32, env: &[(&str, &str)]) -> (RunReport, String) {
    let report = dir.join(format!("{tag}.report.ron"));
    let steps = steps.to_string();
    let mut args = vec!["run"];
    args.extend(SMALL);
    args.extend([
        "--regime",
        "forward",
        "--steps",
        &steps,
        "--settle-steps",
        "0",
        "--report",
        report.to_str().unwrap(),
    ]);
    args.extend(load);
    let out = blazec_env(&args, env);
    assert!(out.status.success(), "run {tag}: {}", String::from_utf8_lossy(&out.stderr));
    (read_report(&report), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn verify(plan: &Path, env: &[(&str, &str)]) -> String {
    let out = blazec_env(&["verify", "--plan", plan.to_str().unwrap()], env);
    assert!(out.status.success(), "verify: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_captured_plan_replays_fresh_batches_and_computes_the_eager_numbers() {
    let dir = scratch("captured-replay");
    let plan = captured_plan(&dir, "burn-captured.ron", &[]);
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.contains("format_version: 4") && text.contains("execution: Some(Captured)"), "{text}");
    let (eager, _) = run_forward(&dir, "eager", None, 8, &[]);
    let (captured, stderr) = run_forward(&dir, "captured", Some(&plan), 8, &[]);
    assert_eq!(captured.execution.as_deref(), Some("captured"), "{stderr}");
    // Confirmed from the eager warm-up steps: the window that decides ends where the
    // recording begins (before 2026-12-05: "applied (op stream not confirmed)").
    assert_eq!(captured.plan, "applied", "{stderr}");
    assert!(captured.replays >= 8, "every timed step and the last are replays: {}", captured.replays);
    assert!(!stderr.contains("captured execution not in force"), "{stderr}");
    // Fresh batches: the losses move from step to step, and each equals the eager step's.
    assert_eq!(captured.losses.len(), eager.losses.len());
    let distinct: std::collections::BTreeSet<u32> = captured.losses.iter().map(|l| l.to_bits()).collect();
    assert!(distinct.len() >= captured.losses.len() - 1, "the replays see new batches: {:?}", captured.losses);
    let rel = max_rel_diff(&eager.losses, &captured.losses).max(max_rel_diff(&eager.logits, &captured.logits));
    assert!(
        rel <= 1e-5,
        "replayed losses and outputs equal eager ones within 1e-5: {rel:e}\n{:?}\n{:?}",
        eager.losses,
        captured.losses
    );
    let memory = captured.recording.expect("the memory around the recording is reported");
    assert!(
        memory.reserved_live.unwrap_or(0) >= memory.in_use_live.unwrap_or(0) && memory.in_use_live.unwrap_or(0) > 0,
        "{memory:?}"
    );
    let recorded = captured.recorded_partition.expect("the partition executed while recording is observed");
    assert!(
        recorded.fused_blocks().count() > 0 && recorded.blocks.len() + 10 > eager.partition.blocks.len(),
        "the recording executed the fused step: {} blocks ({} fused), eager {}",
        recorded.blocks.len(),
        recorded.fused_blocks().count(),
        eager.partition.blocks.len()
    );
    // The gate verifies it: 20 replays on fresh batches against eager execution.
    let verdict = verify(&plan, &[]);
    assert!(verdict.contains("Verified"), "{verdict}");
}

#[test]
fn a_bundle_whose_entry_is_captured_replays_without_a_drift_warning() {
    let dir = scratch("captured-bundle");
    let plan = captured_plan(&dir, "burn-captured.ron", &[]);
    let bundle = dir.join("captured.blaze");
    ok(&["bundle", bundle.to_str().unwrap(), plan.to_str().unwrap()]);
    let (report, stderr) = run_forward_with(&dir, "bundle", &["--bundle", bundle.to_str().unwrap()], 8, &[]);
    assert!(report.plan.starts_with("applied"), "{}\n{stderr}", report.plan);
    assert_eq!(report.execution.as_deref(), Some("captured"), "{stderr}");
    assert!(report.replays >= 8, "{}", report.replays);
    // Replays register only the input refreshes: the bundle's watch must not take them for a
    // program whose steps changed.
    assert!(!stderr.contains("warning"), "no warning while the entry is replayed: {stderr}");
}

#[test]
fn the_gate_refuses_a_replay_whose_inputs_are_reallocated_instead_of_written_in_place() {
    let dir = scratch("captured-realloc");
    let plan = captured_plan(&dir, "burn-captured.ron", &[]);
    let env = [(FAULT, "realloc")];
    // The run cannot see it: the recording exists and replays.
    let (captured, _) = run_forward(&dir, "realloc", Some(&plan), 4, &env);
    assert_eq!(captured.execution.as_deref(), Some("captured"));
    let verdict = verify(&plan, &env);
    assert!(
        verdict.contains("Refused") && verdict.contains("different"),
        "the stale input shows in the numbers: {verdict}"
    );
}

#[test]
fn a_recording_the_backend_refuses_leaves_eager_execution_with_one_warning() {
    let dir = scratch("captured-write");
    let plan = captured_plan(&dir, "burn-captured.ron", &[]);
    let env = [(FAULT, "write")];
    let (eager, _) = run_forward(&dir, "eager", None, 4, &[]);
    let (fell_back, stderr) = run_forward(&dir, "write", Some(&plan), 3, &env);
    let execution = fell_back.execution.clone().unwrap_or_default();
    assert!(execution.starts_with("eager: recording refused: graph_stop_capture"), "{execution}");
    assert_eq!(stderr.matches("captured execution not in force").count(), 1, "one warning: {stderr}");
    assert_eq!(fell_back.replays, 0);
    // Three eager warm-up steps, then the recording consumed batch 4: from there every step
    // runs eagerly on the batches after it, computing eager numbers.
    let (l, e) = (&fell_back.losses, &eager.losses);
    assert_eq!((l.len(), e.len()), (7, 8));
    assert!(
        max_rel_diff(&e[..3], &l[..3]) <= 1e-5 && max_rel_diff(&e[4..], &l[3..]) <= 1e-5,
        "eager numbers: {l:?} vs {e:?}"
    );
    let verdict = verify(&plan, &env);
    assert!(verdict.contains("Refused") && verdict.contains("not captured"), "{verdict}");
}

/// A plan of Burn's own fusion for the training trace, captured.
fn captured_training_plan(dir: &Path) -> PathBuf {
    let (trace, _) = trace("training");
    let out = dir.join("training-captured.ron");
    ok(&["plan", "--trace", trace.to_str().unwrap(), "--captured", "-o", out.to_str().unwrap()]);
    out
}

/// `blazec run` training of the small shape with `load` added, `steps` timed steps, no settling.
fn run_training(dir: &Path, tag: &str, load: &[&str], steps: u32, env: &[(&str, &str)]) -> (RunReport, String) {
    run_training_of(&SMALL, dir, tag, load, steps, env)
}

/// The captured gate on `plan` with `gate` steps (the default, 207 for training, when None).
fn verify_gate(plan: &Path, gate: Option<u32>, env: &[(&str, &str)]) -> String {
    let steps = gate.map(|n| n.to_string());
    let mut args = vec!["verify", "--plan", plan.to_str().unwrap()];
    args.extend(steps.iter().flat_map(|n| ["--gate-steps", n.as_str()]));
    let out = blazec_env(&args, env);
    assert!(out.status.success(), "verify: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Gate steps of the fast tier's training gate: the warm-up (3), the recording's preparing
/// steps (4) and 30 replays. The default gate (207 steps, 200 replays) is the long tier's.
const SHORT_TRAINING_GATE: u32 = 37;

#[test]
fn a_captured_training_step_replays_burns_adam_and_the_gate_verifies_30_replays() {
    let dir = scratch("captured-training");
    let plan = captured_training_plan(&dir);
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.contains("regime: Training") && text.contains("execution: Some(Captured)"), "{text}");
    assert!(text.contains("format_version: 5") && text.contains("recordable_step: Some("), "{text}");
    let (eager, _) = run_training(&dir, "eager", &[], 16, &[]);
    let (captured, stderr) = run_training(&dir, "captured", &["--plan", plan.to_str().unwrap()], 16, &[]);
    assert_eq!(captured.execution.as_deref(), Some("captured"), "{stderr}");
    // Its warm-up steps run the step with the state held in place, whose op stream the plan
    // carries (a version-4 plan, which has none: "applied (op stream not confirmed)").
    assert_eq!(captured.plan, "applied", "{stderr}");
    assert!(captured.replays >= 8, "{}", captured.replays);
    // Parameters and Adam's moments written back in place, the learning rate and bias
    // corrections on the device: every step's loss is Burn's eager Adam's.
    let rel = max_rel_diff(&eager.losses, &captured.losses);
    assert!(
        rel <= 1e-5,
        "captured training follows the eager chain: {rel:e}\n{:?}\n{:?}",
        eager.losses,
        captured.losses
    );
    assert!(eager.losses.last() < eager.losses.first(), "it learns: {:?}", eager.losses);
    let verdict = verify_gate(&plan, Some(SHORT_TRAINING_GATE), &[]);
    assert!(verdict.contains("Verified"), "{verdict}");
}

#[test]
#[ignore = "long tier: the default 207-step training gate; fast: blazec/tests/captured.rs::a_captured_training_step_replays_burns_adam_and_the_gate_verifies_30_replays"]
fn a_captured_training_step_passes_the_default_gate_of_200_replays() {
    let dir = scratch("captured-training-long");
    let plan = captured_training_plan(&dir);
    let verdict = verify_gate(&plan, None, &[]);
    assert!(verdict.contains("Verified"), "{verdict}");
}

#[test]
fn the_gate_refuses_a_captured_training_step_that_does_not_write_its_state_back() {
    let dir = scratch("captured-training-stale");
    let plan = captured_training_plan(&dir);
    let env = [(FAULT, "no-write-back")];
    // The run cannot tell: it records and replays.
    let (captured, _) = run_training(&dir, "stale", &["--plan", plan.to_str().unwrap()], 8, &env);
    assert_eq!(captured.execution.as_deref(), Some("captured"));
    let verdict = verify_gate(&plan, Some(SHORT_TRAINING_GATE), &env);
    // On lavapipe the losses leave the eager chain and turn NaN within a few steps, as on the H200.
    assert!(verdict.contains("detail: \"different"), "the stale state shows in the numbers: {verdict}");
}

/// The forward trace's plan cutting every third live cut point, eager and captured.
fn cut_plans(dir: &Path) -> (PathBuf, PathBuf) {
    let (trace, _) = trace("forward");
    let every = ["--every-live", "3"];
    let eager = dir.join("cuts.ron");
    ok(&["plan", "--trace", trace.to_str().unwrap(), every[0], every[1], "-o", eager.to_str().unwrap()]);
    (eager, captured_plan(dir, "cuts-captured.ron", &every))
}

/// Blocks as sets, in any order, over the `len` operations after the first `inputs`
/// (renumbered from there).
fn blocks_after(
    partition: &blaze_ir::ExecutedPartition,
    inputs: u32,
    len: u32,
) -> std::collections::BTreeSet<Vec<u32>> {
    partition
        .blocks
        .iter()
        .map(|b| {
            let mut b: Vec<u32> =
                b.iter().filter(|&&op| op >= inputs && op - inputs < len).map(|op| op - inputs).collect();
            b.sort_unstable();
            b
        })
        .filter(|b| !b.is_empty())
        .collect()
}

#[test]
fn a_plan_with_cuts_is_recorded_running_its_own_partition_and_computes_its_numbers() {
    let dir = scratch("captured-cuts");
    let (eager_plan, plan) = cut_plans(&dir);
    let (eager, _) = run_forward(&dir, "eager-cuts", Some(&eager_plan), 8, &[]);
    let (captured, stderr) = run_forward(&dir, "captured-cuts", Some(&plan), 8, &[]);
    assert_eq!(captured.execution.as_deref(), Some("captured"), "{stderr}");
    assert!(captured.replays >= 8 && !stderr.contains("captured execution not in force"), "{stderr}");
    // What the recording executed, observed while recording, is the eager plan's partition
    // over the same operations: after the step's input operations and before the reads of its
    // outputs (neither runs in a recording).
    let (_, traced) = trace("forward");
    let inputs = traced.ops.iter().take_while(|op| op.sig.kind.starts_with("Init")).count() as u32;
    let recorded = captured.recorded_partition.expect("observed while recording");
    let launch = recorded.blocks.iter().flatten().max().map_or(0, |&op| op + 1);
    let reads = traced.ops.len() as u32 - inputs - launch;
    assert!(launch > 150 && reads <= 3, "{launch} operations recorded, {reads} left for the reads");
    let all = u32::MAX;
    assert_eq!(
        blocks_after(&recorded, 0, all),
        blocks_after(&eager.partition, inputs, launch),
        "after {inputs} inputs"
    );
    // The cuts took effect: Burn's own plan, recorded, runs another partition.
    let (burn, _) = run_forward(&dir, "captured-burn", Some(&captured_plan(&dir, "burn-captured.ron", &[])), 2, &[]);
    assert_ne!(blocks_after(&burn.recorded_partition.unwrap(), 0, all), blocks_after(&recorded, 0, all));
    let rel = max_rel_diff(&eager.losses, &captured.losses).max(max_rel_diff(&eager.logits, &captured.logits));
    assert!(rel <= 1e-5, "replays compute the eager plan's numbers: {rel:e}");
    let verdict = verify(&plan, &[]);
    assert!(verdict.contains("Verified"), "{verdict}");
}

#[test]
fn a_recording_that_runs_another_partition_than_its_plan_is_refused() {
    let dir = scratch("captured-misplaced-cuts");
    let (_, plan) = cut_plans(&dir);
    let env = [(FAULT, "misplaced-cuts")];
    let (fell_back, stderr) = run_forward(&dir, "misplaced", Some(&plan), 3, &env);
    let execution = fell_back.execution.clone().unwrap_or_default();
    assert!(
        execution.starts_with("eager: recording refused: the recording did not execute the plan's partition"),
        "{execution}"
    );
    assert_eq!(stderr.matches("captured execution not in force").count(), 1, "one warning: {stderr}");
    assert_eq!(fell_back.replays, 0);
    let verdict = verify(&plan, &env);
    assert!(verdict.contains("Refused") && verdict.contains("not captured"), "{verdict}");
}
