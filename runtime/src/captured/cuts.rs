//! Recording a plan with cuts. A plan names a cut by the index, since the step's sync, of the
//! operation it cuts before. A recorded step does not register the operations that make its
//! inputs from data (they are written in place before the recording, outside it), and its
//! launch starts at a sync of its own (`blaze_burn::record_graph_stepping`), so there an
//! operation's index is its index in the eager step less the step's leading input operations.
//! The recording is made with the cuts shifted by that count, and kept only if what it executed
//! is the plan's eager partition over the same operations, shifted alike (the eager step's
//! last operations read its outputs, which a recording leaves to after the replay): a recording
//! is never trusted to have run the plan's partition, it is observed to.
use super::record_on;
use crate::model::{Model, RecordFailure, Recording};
use crate::recorder::RecordedStep;
use blaze_ir::plan::Settings;
use blaze_ir::{BoundaryId, ExecutedPartition};

/// The kind of the operations that make a step's inputs from data (`Tensor::from_data`).
const INPUT_KIND: &str = "Init";

/// Records one step of `model` on its next batch under the plan with `cuts` and `settings`,
/// whose eager step (observed from its sync, under the plan) was `eager`; with no cuts, as
/// [`record_on`]. The plan's own cuts are installed again afterwards, so eager steps (a
/// fallback) run the plan as it was.
pub fn record_plan_on(
    model: &mut dyn Model,
    cuts: &[BoundaryId],
    settings: &Settings,
    eager: &RecordedStep,
) -> Result<Box<dyn Recording>, RecordFailure> {
    if cuts.is_empty() {
        return record_on(model);
    }
    let inputs = leading_inputs(eager);
    let shifted = shift_cuts(cuts, inputs)?;
    crate::policy::activate_with(&shifted, settings);
    let recorded = record_on(model);
    crate::policy::activate_with(cuts, settings);
    let mut recording = recorded?;
    let checked = check_partition(recording.as_ref(), eager, inputs);
    match checked {
        Ok(()) => Ok(recording),
        // The recording's own steps ran (the recorded one too, by its first replay): hand them
        // back with the refusal.
        Err(why) => {
            let mut ran = recording.prepared();
            ran.push(recording.read(true));
            Err(RecordFailure { why, ran })
        }
    }
}

/// Whether `recording` executed `eager`'s partition over the operations after its `inputs`
/// leading input operations, and if not, what differed.
fn check_partition(recording: &dyn Recording, eager: &RecordedStep, inputs: u32) -> Result<(), String> {
    let launch = recording.registered_ops().ok_or("the recording's operations were not observed")? as u32;
    let expected = window(&eager.partition, inputs, launch);
    match recording.partition() {
        Some(observed) if same_blocks(&observed, &expected) => Ok(()),
        Some(observed) => Err(format!(
            "the recording did not execute the plan's partition: {} blocks ({} fused) recorded, {} ({} fused) in the plan's eager step after its {inputs} input operations; {}",
            observed.blocks.len(),
            observed.fused_blocks().count(),
            expected.blocks.len(),
            expected.fused_blocks().count(),
            difference(&observed, &expected)
        )),
        None => Err("the recording's executed partition was not observed".into()),
    }
}

/// Operations at the start of the eager step that make its inputs from data.
pub(crate) fn leading_inputs(eager: &RecordedStep) -> u32 {
    eager.ops.iter().take_while(|op| op.sig.kind.starts_with(INPUT_KIND)).count() as u32
}

/// The cuts as the recorded launch numbers its operations (less `inputs`); a cut among or
/// right after the input operations has no place there. Test-only fault: off by one.
pub(crate) fn shift_cuts(cuts: &[BoundaryId], inputs: u32) -> Result<Vec<BoundaryId>, String> {
    let misplaced = u64::from(crate::fault::capture_fault() == Some(crate::fault::CaptureFault::MisplacedCuts));
    cuts.iter()
        .map(|c| match c.0.checked_sub(u64::from(inputs)) {
            Some(at) if at > 0 => Ok(BoundaryId(at + misplaced)),
            _ => Err(format!(
                "the plan cuts b{} among the step's {inputs} input operations, which a recording does not run",
                c.0
            )),
        })
        .collect()
}

/// The blocks of `partition` over the `launch` operations after the first `inputs`, renumbered
/// from there. The eager step's operations after them read its outputs (outside a recording),
/// and a block the eager step fused across that end is cut there: the recording cannot fuse
/// its last operation with reads it does not run.
pub(crate) fn window(partition: &ExecutedPartition, inputs: u32, launch: u32) -> ExecutedPartition {
    let blocks = partition
        .blocks
        .iter()
        .map(|b| {
            b.iter().filter(|&&op| op >= inputs && op - inputs < launch).map(|op| op - inputs).collect::<Vec<u32>>()
        })
        .filter(|b| !b.is_empty())
        .collect();
    ExecutedPartition { blocks }
}

/// The blocks only one of the two holds (at most three of each), for the refusal's message.
fn difference(recorded: &ExecutedPartition, expected: &ExecutedPartition) -> String {
    let (a, b) = (block_set(recorded), block_set(expected));
    let show = |only: Vec<&Vec<u32>>| only.iter().take(3).map(|b| format!("{b:?}")).collect::<Vec<_>>().join(" ");
    format!(
        "only recorded: {}; only in the eager step: {}",
        show(a.difference(&b).collect()),
        show(b.difference(&a).collect())
    )
}

fn block_set(p: &ExecutedPartition) -> std::collections::BTreeSet<Vec<u32>> {
    p.canonical().into_iter().collect()
}

/// The same blocks, in whatever order they ran.
pub(crate) fn same_blocks(a: &ExecutedPartition, b: &ExecutedPartition) -> bool {
    a.canonical() == b.canonical()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_and_blocks_shift_past_the_input_operations() {
        assert_eq!(shift_cuts(&[BoundaryId(5), BoundaryId(9)], 2), Ok(vec![BoundaryId(3), BoundaryId(7)]));
        let err = shift_cuts(&[BoundaryId(2)], 2).unwrap_err();
        assert!(err.contains("b2 among the step's 2 input operations"), "{err}");
        let eager = ExecutedPartition { blocks: vec![vec![0], vec![1], vec![2, 3, 4], vec![5, 6], vec![7]] };
        // Two input operations, a launch of four, then the reads of its outputs (6 and 7).
        assert_eq!(window(&eager, 2, 4).blocks, vec![vec![0, 1, 2], vec![3]]);
        let reordered = ExecutedPartition { blocks: vec![vec![3], vec![2, 0, 1]] };
        assert!(same_blocks(&window(&eager, 2, 4), &reordered));
        let other = ExecutedPartition { blocks: vec![vec![0, 1], vec![2, 3]] };
        assert!(!same_blocks(&window(&eager, 2, 4), &other));
    }
}
