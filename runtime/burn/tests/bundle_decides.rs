//! A captured step made from a bundle (`CapturedForward::from_bundle`) follows the entry the
//! bundle's watch installs for the op stream the program actually runs: an eager entry for this
//! step keeps the loop eager even when the bundle also holds another model's captured entry;
//! its own captured entry records it; before the program's step has been seen the bundle says
//! it does not know yet, and afterwards it says which entry answered. One test: Burn's fusion
//! and the bundle's watch are process-wide. Runs on the default wgpu device (lavapipe in CI).
mod common;
use blaze_burn::{CapturedForward, Captures, Regime};
use blaze_ir::plan::{PlanFile, Settings};
use blaze_ir::{Bundle, Contract};
use blaze_runtime::numerics::same_numbers;
use burn::tensor::{Device, Tensor};
use common::*;

const CALLS: usize = 12;

fn values(t: &Tensor<2>) -> Vec<f32> {
    t.to_data().convert::<f32>().try_to_vec::<f32>().unwrap()
}

/// The forward loop's op stream as the bundle's watch sees it, recorded as `blazec trace` records
/// a step: one window between two syncs of the loop's own calls (the batch made from data, then
/// the step), run eagerly; its fingerprint and length.
fn op_stream_of(net: &Net, device: &Device) -> (String, usize) {
    let mut eager = CapturedForward::eager(device, |x: &Tensor<2>| net.forward(x.clone()), "traced");
    let mut kept = vec![call(&mut eager, 0, device)];
    let _ = device.sync();
    let recording = blaze_runtime::StepRecorder::start();
    kept.push(call(&mut eager, 1, device));
    let _ = device.sync();
    let step = recording.finish();
    (blaze_ir::trace::op_stream_fingerprint(&step.traced_ops()), step.ops.len())
}

/// One call of the loop: batch `c` made from data, the step run on its inputs.
fn call<F: Fn(&Tensor<2>) -> Tensor<2>>(
    eval: &mut CapturedForward<Tensor<2>, Tensor<2>, F>,
    c: usize,
    device: &Device,
) -> Tensor<2> {
    let (x, _) = batch(c, device);
    eval.run(x)
}

/// A forward entry for a step with this op stream, made for `name`, captured or eager.
fn entry(name: &str, op_stream: &str, ops_per_step: usize, captured: bool) -> PlanFile {
    let contract = Contract {
        model: name.into(),
        regime: Regime::Forward,
        shapes: format!("rows={ROWS}"),
        op_stream: op_stream.into(),
        ops_per_step: ops_per_step as u64,
        device: blaze_burn::device_info(),
        burn_version: blaze_runtime::BURN_VERSION.into(),
        recordable_step: None,
    };
    let settings = if captured { Settings::default().captured() } else { Settings::default() };
    PlanFile::burn_default(contract, Vec::new()).with_settings(settings)
}

/// A bundle of these entries, written to `dir/name.blaze`.
fn bundle(dir: &std::path::Path, name: &str, entries: Vec<PlanFile>) -> std::path::PathBuf {
    let mut bundle = Bundle::new();
    for plan in entries {
        bundle.upsert(plan);
    }
    let path = dir.join(format!("{name}.blaze"));
    std::fs::write(&path, bundle.to_ron()).unwrap();
    path
}

/// Runs the forward loop under `bundle`; the step's execution, what the bundle answered before
/// the first call and after the last, and whether every call computed the eager numbers.
fn run_loop(net: &Net, device: &Device, bundle: &std::path::Path, eager: &[Vec<f32>]) -> (String, Captures, Captures) {
    let blaze = blaze_burn::BlazeConfig::new(bundle.display().to_string()).init(device);
    let before = blaze.captures(Regime::Forward);
    let mut eval = CapturedForward::from_bundle(&blaze, device, |x: &Tensor<2>| net.forward(x.clone()));
    let kept: Vec<Tensor<2>> = (0..CALLS).map(|c| call(&mut eval, c, device)).collect();
    for (call, (out, want)) in kept.iter().zip(eager).enumerate() {
        assert!(
            same_numbers(want, &values(out)),
            "call {call} computes what eager Burn computes ({})",
            eval.execution()
        );
    }
    (eval.execution(), before, blaze.captures(Regime::Forward))
}

#[test]
fn a_bundle_records_a_step_only_when_its_entry_for_the_running_op_stream_asks_for_it() {
    let dir = std::env::temp_dir().join(format!("blaze-bundle-decides-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let device = blaze_burn::default_device();
    let net = Net::new(&device);
    let eager: Vec<Vec<f32>> = (0..CALLS).map(|c| values(&net.forward(batch(c, &device).0))).collect();
    let (op_stream, ops) = op_stream_of(&net, &device);

    let another = "0123456789abcdef0123456789abcdef";

    // This step's own entry runs eagerly; the bundle also holds another model's captured
    // forward entry. The watch recognises this step as its own entry, which decides.
    let both = vec![entry("this-model", &op_stream, ops, false), entry("another-model", another, ops, true)];
    let (execution, before, after) = run_loop(&net, &device, &bundle(&dir, "both", both), &eager);
    assert_eq!(before, Captures::NotYetKnown, "nothing has run yet");
    assert!(
        execution.starts_with("eager: the bundle's entry for this op stream (this-model forward")
            && execution.ends_with(") runs eagerly"),
        "another model's captured entry does not make this loop record: {execution}"
    );
    assert!(matches!(&after, Captures::No(why) if why.contains("this-model forward")), "{after:?}");

    // This step's own captured entry: recorded after the warm-up calls.
    let own = vec![entry("this-model", &op_stream, ops, true)];
    let (execution, before, after) = run_loop(&net, &device, &bundle(&dir, "own", own), &eager);
    assert_eq!(before, Captures::NotYetKnown);
    assert!(execution.starts_with("captured ("), "the entry for this op stream records it: {execution}");
    assert!(matches!(&after, Captures::Yes(key) if key.starts_with("this-model forward")), "{after:?}");

    // Only another model's captured entry: the watch recognises no entry and says so; the loop
    // goes by the bundle's captured forward entry (its recording checked against eager calls).
    let other = vec![entry("another-model", another, ops, true)];
    let (execution, _, after) = run_loop(&net, &device, &bundle(&dir, "other", other), &eager);
    assert!(matches!(after, Captures::Unrecognised(_)), "{after:?}");
    assert!(execution.starts_with("captured ("), "{execution}");
    let _ = std::fs::remove_dir_all(&dir);
}
