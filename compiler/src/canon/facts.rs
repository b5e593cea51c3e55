//! What the rules know about a traced step.
use blaze_ir::Trace;
use std::collections::{BTreeMap, BTreeSet};

/// Facts about Burn's plan for one traced step.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// Fused blocks of Burn's plan: block id -> members in registration order.
    pub blocks: BTreeMap<u32, Vec<u32>>,
    /// Operations Burn explores under a cut plan (a cut before any other does nothing).
    pub live: BTreeSet<u64>,
    /// Operations that are reductions (no fuser takes one at the head of a block).
    pub reductions: BTreeSet<u32>,
}

const REDUCTIONS: [&str; 10] =
    ["SumDim", "MeanDim", "ProdDim", "ArgMax", "ArgMin", "MinDim", "MaxDim", "MaxAbsDim", "AnyDim", "AllDim"];

impl Facts {
    pub(crate) fn from_trace(trace: &Trace) -> Self {
        let blocks =
            trace.partition.fused_blocks_sorted().into_iter().map(|(i, members)| (i as u32, members)).collect();
        let reductions = trace
            .ops
            .iter()
            .filter(|op| REDUCTIONS.iter().any(|r| op.sig.kind.ends_with(r)))
            .map(|op| op.index)
            .collect();
        Self { blocks, live: trace.explored.iter().map(|&i| i as u64).collect(), reductions }
    }

    /// The splits a cut before operation `n` causes: (block, index of the first member on
    /// the cut's right side), for every fused block with members on both sides.
    pub(crate) fn splits_of(&self, n: u64) -> Vec<(u32, u32)> {
        self.blocks
            .iter()
            .filter_map(|(&b, members)| {
                let left = members.iter().filter(|&&m| (m as u64) < n).count();
                (left > 0 && left < members.len()).then_some((b, left as u32))
            })
            .collect()
    }
}
