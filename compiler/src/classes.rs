//! Cut-point classes: live cut points that sit at the same place in every
//! layer, found by the operations around them, so that one decision covers every layer.
//!
//! Two live cut points are in one class when the [`CONTEXT`] operations before and after them
//! have the same signatures (kind, dtype, shapes). In a model whose layers repeat (the same
//! operations with the same shapes), the cut point between a layer's residual add and its norm
//! then forms one class with one member per layer. Two places inside one layer with identical
//! surroundings fall into one class too: a class is "every place that looks like this".
//!
//! Class-level requests are plain cut sets (the union of their classes' members), so the
//! e-graph canonicalises them like any request and confirm collapses what executes the same.
use crate::candidate::Candidate;
use blaze_ir::{BoundaryId, Trace};
use serde::{Deserialize, Serialize};

/// Operations compared on each side of a cut point.
pub(crate) const CONTEXT: usize = 2;
/// At most this many repeating classes: every combination is requested; more: one request per
/// class, largest first (the race, or `tune --greedy`, combines them).
pub(crate) const EXHAUSTIVE_CLASSES: usize = 4;

/// One class: the cut points with the same surroundings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CutClass {
    /// The surroundings, as `before … | after …` operation kinds.
    pub context: String,
    pub members: Vec<BoundaryId>,
}

/// The classes of `trace`'s live cut points, in order of their first member.
pub fn classes(trace: &Trace) -> Vec<CutClass> {
    let mut keyed: Vec<(Vec<String>, CutClass)> = Vec::new();
    for point in trace.live_cut_points() {
        let key = surroundings(trace, point.0 as usize);
        match keyed.iter_mut().find(|(k, _)| *k == key) {
            Some((_, class)) => class.members.push(point),
            None => {
                keyed.push((key, CutClass { context: context_text(trace, point.0 as usize), members: vec![point] }))
            }
        }
    }
    keyed.into_iter().map(|(_, c)| c).collect()
}

/// Signatures of the `CONTEXT` operations before op `at` and the `CONTEXT` from `at` on (the
/// boundary sits before op `at`); positions outside the step are `-`.
fn surroundings(trace: &Trace, at: usize) -> Vec<String> {
    (0..2 * CONTEXT)
        .map(|k| (at + k).checked_sub(CONTEXT).and_then(|i| trace.ops.get(i)))
        .map(|op| op.map_or("-".to_string(), |o| format!("{} {} {:?}", o.sig.kind, o.sig.dtype, o.sig.shapes)))
        .collect()
}

fn context_text(trace: &Trace, at: usize) -> String {
    let kind = |i: Option<usize>| i.and_then(|i| trace.ops.get(i)).map_or("-".to_string(), |o| o.sig.kind.clone());
    let before: Vec<String> = (1..=CONTEXT).rev().map(|k| kind(at.checked_sub(k))).collect();
    let after: Vec<String> = (0..CONTEXT).map(|k| kind(Some(at + k))).collect();
    format!("{} | {}", before.join(" "), after.join(" "))
}

/// Class-level requests, Burn's plan first: every combination of the repeating classes when
/// there are at most [`EXHAUSTIVE_CLASSES`], otherwise one request per repeating class, largest
/// first; at most `budget` requests in all.
pub(crate) fn class_candidates(classes: &[CutClass], budget: usize) -> Vec<Candidate> {
    let mut repeating: Vec<&CutClass> = classes.iter().filter(|c| c.members.len() > 1).collect();
    repeating.sort_by_key(|c| std::cmp::Reverse(c.members.len()));
    let sets: Vec<Vec<&CutClass>> = if repeating.len() <= EXHAUSTIVE_CLASSES {
        (1u32..1 << repeating.len())
            .map(|mask| repeating.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, c)| *c).collect())
            .collect()
    } else {
        repeating.iter().map(|c| vec![*c]).collect()
    };
    let union = |set: &[&CutClass]| set.iter().flat_map(|c| c.members.iter().copied()).collect::<Vec<_>>();
    std::iter::once(Vec::new())
        .chain(sets.iter().map(|s| union(s)))
        .take(budget.max(1))
        .enumerate()
        .map(|(i, cuts)| Candidate::new(i, cuts))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use blaze_ir::signature::OpSignature;
    use blaze_ir::trace::{TracedBoundary, TracedOp};

    /// A step of `layers` identical layers (matmul, add, gelu), every boundary live.
    pub(crate) fn layered(layers: usize) -> Trace {
        let kinds = ["Float/Matmul", "NumericFloat/Add", "Float/Gelu"];
        let ops: Vec<TracedOp> = (0..3 * layers)
            .map(|i| TracedOp {
                index: i as u32,
                sig: OpSignature { kind: kinds[i % 3].into(), dtype: "F32".into(), shapes: vec![vec![4, 8]] },
                inputs: if i == 0 { vec![] } else { vec![i as u32 - 1] },
            })
            .collect();
        let n = ops.len() as u32;
        Trace {
            format_version: blaze_ir::trace::TRACE_FORMAT_VERSION,
            model: "layered".into(),
            regime: blaze_ir::plan::Regime::Forward,
            shapes: "4x8".into(),
            device: blaze_ir::plan::DeviceInfo {
                adapter: "llvmpipe".into(),
                backend: "vulkan".into(),
                compiler: "wgsl".into(),
            },
            burn_version: "0.22.1".into(),
            warmup_steps: 2,
            ops,
            partition: blaze_ir::ExecutedPartition { blocks: (0..n).map(|i| vec![i]).collect() },
            boundaries: (1..3 * layers as u64).map(|i| TracedBoundary { id: BoundaryId(i), live: true }).collect(),
            explored: (0..n).collect(),
            max_blocks: None,
            recordable_step: None,
        }
    }

    #[test]
    fn the_same_place_in_every_layer_is_one_class() {
        let t = layered(4);
        let c = classes(&t);
        // Boundaries 1..11 (ops M A G repeated): the place after each layer's add is one class;
        // the first and last boundaries see the step's edges and stay alone.
        let add_gelu: Vec<&CutClass> =
            c.iter().filter(|c| c.context == "Float/Matmul NumericFloat/Add | Float/Gelu Float/Matmul").collect();
        assert_eq!(add_gelu.len(), 1, "{c:#?}");
        assert_eq!(add_gelu[0].members, vec![BoundaryId(2), BoundaryId(5), BoundaryId(8)], "{c:#?}");
        assert_eq!(c.len(), 5, "{c:#?}");
        assert_eq!(
            c.iter().map(|c| c.members.len()).sum::<usize>(),
            11,
            "every live cut point is in exactly one class"
        );
    }

    #[test]
    fn few_classes_are_combined_exhaustively_and_burn_comes_first() {
        let t = layered(6);
        let c = classes(&t);
        let repeating = c.iter().filter(|c| c.members.len() > 1).count();
        assert!((2..=EXHAUSTIVE_CLASSES).contains(&repeating), "{c:#?}");
        let cands = class_candidates(&c, 100);
        assert!(cands[0].is_burn());
        assert_eq!(cands.len(), 1 + (1 << repeating) - 1);
        let all: usize = c.iter().filter(|c| c.members.len() > 1).map(|c| c.members.len()).sum();
        assert_eq!(cands.iter().map(|c| c.cuts.len()).max(), Some(all), "the last request cuts every repeating class");
        assert_eq!(class_candidates(&c, 3).len(), 3, "the budget caps the requests");
    }
}
