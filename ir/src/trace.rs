//! A traced step: Burn IR operations, the tensors between them, Burn's executed partition and
//! the boundaries a plan may cut. Saved as versioned RON; viewable as text and Graphviz DOT;
//! analysed as a petgraph graph.
use crate::{
    boundary::BoundaryId,
    partition::ExecutedPartition,
    plan::{DeviceInfo, Regime},
    signature::OpSignature,
};
use petgraph::graph::{DiGraph, NodeIndex};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

pub const TRACE_FORMAT_VERSION: u32 = 1;

/// One operation of the traced step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TracedOp {
    /// Registration index within the step (= the boundary id of the gap before it).
    pub index: u32,
    pub sig: OpSignature,
    /// Operations of this step whose output this operation reads (data edges).
    pub inputs: Vec<u32>,
}

/// A boundary between operation `id - 1` and operation `id` that Burn's plan merged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracedBoundary {
    pub id: BoundaryId,
    /// Burn explores this operation when plans are cached per step position (as under every
    /// cut plan), so a cut here takes effect. A boundary that is not live is never explored
    /// (it sits inside a segment Burn closes earlier, or replays a plan cached earlier,
    /// internals §3.5 risk 1): a cut there alone does nothing.
    pub live: bool,
}

/// A traced steady-state step of one workload and regime.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub format_version: u32,
    pub model: String,
    pub regime: Regime,
    pub shapes: String,
    pub device: DeviceInfo,
    pub burn_version: String,
    /// Steps run before the traced one.
    pub warmup_steps: u32,
    pub ops: Vec<TracedOp>,
    /// Burn's default executed partition of the step.
    pub partition: ExecutedPartition,
    /// Cut points: every boundary inside one of Burn's fused blocks.
    pub boundaries: Vec<TracedBoundary>,
    /// Operations Burn explored (cut policy consulted) anywhere in the traced process.
    pub explored: Vec<u32>,
    /// Beam width of Burn's fusion search the partition and cut points were traced under
    /// (`None`: Burn's configured one). Cuts made from this trace refine that partition, so a
    /// plan made from it carries the same width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_blocks: Option<u32>,
    /// Training traces of a model that can be recorded: the step in the form captured execution
    /// runs it (state written in place), which plans made captured carry in their contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recordable_step: Option<crate::plan::StepStream>,
}

/// Node weight of the trace graph.
#[derive(Clone, Debug)]
pub struct OpNode {
    pub index: u32,
    pub kind: String,
    pub block: Option<usize>,
}

impl Trace {
    /// Stable fingerprint of the op stream (signatures and edges, not partition).
    pub fn op_stream_fingerprint(&self) -> String {
        op_stream_fingerprint(&self.ops)
    }

    /// The trace as a petgraph graph: one node per operation, one edge per tensor read.
    pub fn graph(&self) -> DiGraph<OpNode, ()> {
        let block_of = self.partition.block_of(self.ops.len());
        let mut g = DiGraph::with_capacity(self.ops.len(), self.ops.len() * 2);
        let nodes: Vec<NodeIndex> = self
            .ops
            .iter()
            .map(|op| {
                g.add_node(OpNode {
                    index: op.index,
                    kind: op.sig.kind.clone(),
                    block: block_of.get(op.index as usize).copied().flatten(),
                })
            })
            .collect();
        for op in &self.ops {
            for &src in &op.inputs {
                g.add_edge(nodes[src as usize], nodes[op.index as usize], ());
            }
        }
        g
    }

    /// The contract a plan made from this trace is valid under.
    pub fn contract(&self) -> crate::plan::Contract {
        crate::plan::Contract {
            model: self.model.clone(),
            regime: self.regime,
            shapes: self.shapes.clone(),
            op_stream: self.op_stream_fingerprint(),
            ops_per_step: self.ops.len() as u64,
            device: self.device.clone(),
            burn_version: self.burn_version.clone(),
            recordable_step: None,
        }
    }

    /// A plan for this trace's contract with the given cuts. Cuts refine the partition this
    /// trace was made under: the plan carries its width.
    pub fn plan(&self, cuts: Vec<BoundaryId>) -> crate::plan::PlanFile {
        self.plan_with(cuts, crate::plan::Settings::beam_width(self.max_blocks))
    }

    /// A plan for this trace's contract with `cuts` and `settings`; a captured training plan
    /// carries the trace's recordable step, which its op-stream check confirms it from.
    pub fn plan_with(&self, cuts: Vec<BoundaryId>, settings: crate::plan::Settings) -> crate::plan::PlanFile {
        let mut contract = self.contract();
        if settings.records_held_state(self.regime) {
            contract.recordable_step = self.recordable_step.clone();
        }
        let mut plan = crate::plan::PlanFile::burn_default(contract, self.cut_points());
        plan.cuts = cuts;
        plan.with_settings(settings)
    }

    /// Live cut points.
    pub fn live_cut_points(&self) -> Vec<BoundaryId> {
        self.boundaries.iter().filter(|b| b.live).map(|b| b.id).collect()
    }

    pub fn cut_points(&self) -> Vec<BoundaryId> {
        self.boundaries.iter().map(|b| b.id).collect()
    }

    /// Readable dump: one line per operation, with its block and boundary marks.
    pub fn to_text(&self) -> String {
        let block_of = self.partition.block_of(self.ops.len());
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# {} {} ({}) on {} [{}]",
            self.model, self.regime, self.shapes, self.device.adapter, self.device.compiler
        );
        let _ = writeln!(
            out,
            "# {} ops, {} blocks ({} fused), {} cut points ({} live)",
            self.ops.len(),
            self.partition.blocks.len(),
            self.partition.fused_blocks().count(),
            self.boundaries.len(),
            self.live_cut_points().len()
        );
        let marks: std::collections::BTreeMap<u64, bool> = self.boundaries.iter().map(|b| (b.id.0, b.live)).collect();
        for op in &self.ops {
            let block = block_of[op.index as usize].map_or("-".to_string(), |b| format!("B{b}"));
            let mark = match marks.get(&(op.index as u64)) {
                Some(true) => "cut? live ",
                Some(false) => "cut? cache",
                None => "          ",
            };
            let inputs: Vec<String> = op.inputs.iter().map(|i| format!("%{i}")).collect();
            let _ = writeln!(out, "{mark} %{:<5} {:<5} {} <- {}", op.index, block, op.sig.to_line(), inputs.join(" "));
        }
        out
    }

    /// Graphviz DOT: fused blocks are clusters, merged boundaries are bold edges.
    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph trace {\n  rankdir=TB;\n  node [shape=box, fontsize=9];\n");
        for (b, block) in self.partition.blocks.iter().enumerate() {
            if block.len() > 1 {
                let _ = writeln!(
                    out,
                    "  subgraph cluster_b{b} {{\n    label=\"block {b}\"; style=filled; color=lightblue;"
                );
                for op in block {
                    let _ = writeln!(out, "    {};", node_decl(&self.ops[*op as usize]));
                }
                out.push_str("  }\n");
            } else {
                for op in block {
                    let _ = writeln!(out, "  {};", node_decl(&self.ops[*op as usize]));
                }
            }
        }
        for op in &self.ops {
            for src in &op.inputs {
                let _ = writeln!(out, "  n{src} -> n{};", op.index);
            }
        }
        out.push_str("}\n");
        out
    }

    pub fn to_ron(&self) -> String {
        let config = ron::ser::PrettyConfig::new().depth_limit(3).struct_names(true);
        ron::ser::to_string_pretty(self, config).expect("traces always serialise")
    }

    pub fn from_ron(text: &str) -> Result<Self, String> {
        let trace: Trace = ron::from_str(text).map_err(|e| format!("not a trace file: {e}"))?;
        if trace.format_version != TRACE_FORMAT_VERSION {
            return Err(format!(
                "trace format version {} (this Blaze reads {TRACE_FORMAT_VERSION})",
                trace.format_version
            ));
        }
        trace.verify()?;
        Ok(trace)
    }

    /// The invariants every stage after tracing relies on (so a hand-edited or damaged trace is
    /// an error here, never an index out of bounds later): operation `i` has index `i` and reads
    /// only earlier operations; the partition covers each operation exactly once; boundaries
    /// name operations 1..n in increasing order; explored operations exist.
    pub fn verify(&self) -> Result<(), String> {
        let n = self.ops.len();
        for (i, op) in self.ops.iter().enumerate() {
            if op.index as usize != i {
                return Err(format!("operation {i} carries index {}", op.index));
            }
            if let Some(bad) = op.inputs.iter().find(|&&src| src as usize >= i) {
                return Err(format!("operation {i} reads operation {bad}, which is not earlier"));
            }
        }
        let mut covered = vec![false; n];
        for op in self.partition.blocks.iter().flatten() {
            match covered.get_mut(*op as usize) {
                Some(seen) if !*seen => *seen = true,
                Some(_) => return Err(format!("the partition lists operation {op} twice")),
                None => return Err(format!("the partition names operation {op}, but the step has {n}")),
            }
        }
        if let Some(missing) = covered.iter().position(|c| !c) {
            return Err(format!("the partition leaves out operation {missing}"));
        }
        let mut last = 0;
        for b in &self.boundaries {
            if b.id.0 <= last || b.id.0 >= n as u64 {
                return Err(format!("boundary {} is out of order or outside operations 1..{n}", b.id));
            }
            last = b.id.0;
        }
        if let Some(bad) = self.explored.iter().find(|&&o| o as usize >= n) {
            return Err(format!("explored operation {bad} is outside the step ({n} operations)"));
        }
        Ok(())
    }
}

fn node_decl(op: &TracedOp) -> String {
    format!("n{} [label=\"%{} {}\"]", op.index, op.index, op.sig.kind)
}

/// Stable fingerprint of an op stream.
pub fn op_stream_fingerprint(ops: &[TracedOp]) -> String {
    let mut fingerprint = OpStreamHasher::default();
    for op in ops {
        fingerprint.push(&op.sig.to_line(), op.inputs.iter().copied());
    }
    fingerprint.finish()
}

/// [`op_stream_fingerprint`] one operation at a time, from each operation's signature line
/// ([`OpSignature::to_line`], which a caller can format once and keep) and the step-relative
/// indices it reads. The hashed bytes are the same: one line `<signature> <- [i, j]` per op.
#[derive(Clone, Default)]
pub struct OpStreamHasher {
    hasher: crate::hash::StableHasher,
    scratch: String,
}

impl OpStreamHasher {
    pub fn push(&mut self, line: &str, inputs: impl Iterator<Item = u32>) {
        self.scratch.clear();
        self.scratch.push_str(line);
        self.scratch.push_str(" <- [");
        for (k, i) in inputs.enumerate() {
            if k > 0 {
                self.scratch.push_str(", ");
            }
            crate::signature::push_decimal(&mut self.scratch, i as usize);
        }
        self.scratch.push_str("]\n");
        self.hasher.update(self.scratch.as_bytes());
    }

    pub fn finish(self) -> String {
        self.hasher.hex()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn tiny() -> Trace {
        let sig = |k: &str| OpSignature { kind: k.into(), dtype: "F32".into(), shapes: vec![vec![2, 3]] };
        Trace {
            format_version: TRACE_FORMAT_VERSION,
            model: "tiny".into(),
            regime: Regime::Forward,
            shapes: "2x3".into(),
            device: DeviceInfo { adapter: "llvmpipe".into(), backend: "vulkan".into(), compiler: "wgsl".into() },
            burn_version: "0.22.1".into(),
            warmup_steps: 2,
            ops: vec![
                TracedOp { index: 0, sig: sig("Float/Matmul"), inputs: vec![] },
                TracedOp { index: 1, sig: sig("NumericFloat/Add"), inputs: vec![0] },
                TracedOp { index: 2, sig: sig("Float/Exp"), inputs: vec![1] },
            ],
            partition: ExecutedPartition { blocks: vec![vec![0, 1, 2]] },
            boundaries: vec![
                TracedBoundary { id: BoundaryId(1), live: true },
                TracedBoundary { id: BoundaryId(2), live: false },
            ],
            explored: vec![0, 1],
            max_blocks: None,
            recordable_step: None,
        }
    }

    #[test]
    fn only_a_captured_training_plan_carries_the_recordable_step() {
        use crate::plan::{Settings, StepStream};
        let mut t = tiny();
        t.regime = Regime::Training;
        let step = StepStream { op_stream: "0abc".into(), ops_per_step: 4 };
        t.recordable_step = Some(step.clone());
        let captured = t.plan_with(vec![], Settings::default().captured());
        assert_eq!(captured.contract.recordable_step, Some(step.clone()));
        assert_eq!(captured.format_version, 5);
        assert_eq!(crate::PlanFile::parse(&captured.to_ron()), Ok(captured));
        let eager = t.plan_with(vec![], Settings::beam_width(Some(3)));
        assert_eq!((eager.contract.recordable_step, eager.format_version), (None, 2));
        t.regime = Regime::Forward;
        let forward = t.plan_with(vec![], Settings::default().captured());
        assert_eq!((forward.contract.recordable_step, forward.format_version), (None, 4));
        // A trace written before traces held it reads as one without.
        let mut old = tiny();
        old.recordable_step = None;
        assert!(!old.to_ron().contains("recordable_step"));
        t.recordable_step = Some(step);
        assert_eq!(Trace::from_ron(&t.to_ron()).map(|r| r.recordable_step.is_some()), Ok(true));
    }

    #[test]
    fn verifier_names_what_a_damaged_trace_breaks() {
        assert_eq!(tiny().verify(), Ok(()));
        let broken = |f: fn(&mut Trace)| {
            let mut t = tiny();
            f(&mut t);
            Trace::from_ron(&t.to_ron()).unwrap_err()
        };
        assert_eq!(broken(|t| t.ops[1].index = 5), "operation 1 carries index 5");
        assert_eq!(broken(|t| t.ops[1].inputs = vec![2]), "operation 1 reads operation 2, which is not earlier");
        assert_eq!(broken(|t| t.partition.blocks = vec![vec![0, 1, 2, 1]]), "the partition lists operation 1 twice");
        assert_eq!(
            broken(|t| t.partition.blocks = vec![vec![0, 1, 7]]),
            "the partition names operation 7, but the step has 3"
        );
        assert_eq!(broken(|t| t.partition.blocks = vec![vec![0, 2]]), "the partition leaves out operation 1");
        assert_eq!(
            broken(|t| t.boundaries[1].id = BoundaryId(1)),
            "boundary b1 is out of order or outside operations 1..3"
        );
        assert_eq!(broken(|t| t.explored = vec![9]), "explored operation 9 is outside the step (3 operations)");
    }

    #[test]
    fn ron_round_trip() {
        let t = tiny();
        assert_eq!(Trace::from_ron(&t.to_ron()), Ok(t));
    }

    #[test]
    fn graph_has_an_edge_per_tensor_read() {
        let g = tiny().graph();
        assert_eq!((g.node_count(), g.edge_count()), (3, 2));
    }

    #[test]
    fn dot_draws_fused_blocks_as_clusters() {
        let dot = tiny().to_dot();
        assert!(dot.contains("subgraph cluster_b0"));
        assert!(dot.contains("n0 -> n1;"));
    }

    #[test]
    fn text_marks_live_and_cached_cut_points() {
        let text = tiny().to_text();
        assert!(text.contains("cut? live  %1"), "{text}");
        assert!(text.contains("cut? cache %2"), "{text}");
    }

    #[test]
    fn the_streamed_fingerprint_hashes_the_text_plan_files_were_made_with() {
        // The form every shipped plan's `op_stream` was computed from (kept here verbatim):
        // changing the bytes would make every existing plan file mismatch.
        let mut t = tiny();
        t.ops[2].inputs = vec![0, 1];
        let mut text = String::new();
        for op in &t.ops {
            let _ = writeln!(text, "{} <- {:?}", op.sig.to_line(), op.inputs);
        }
        assert!(text.contains("Float/Exp F32 [2,3] <- [0, 1]\n"), "{text}");
        assert_eq!(t.op_stream_fingerprint(), crate::hash::stable_hex(text.as_bytes()));
        assert_ne!(t.op_stream_fingerprint(), tiny().op_stream_fingerprint());
    }
}
