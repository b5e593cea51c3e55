//! Operation signatures: what an operation is, without the tensor ids that differ run to run.
use burn_ir::OperationIr;
use serde::{Deserialize, Serialize};

/// Kind, dtype-bearing variant path and tensor shapes of one operation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OpSignature {
    /// Variant path, e.g. `NumericFloat/Add` or `Drop`.
    pub kind: String,
    /// Data type of the first tensor, e.g. `F32`.
    pub dtype: String,
    /// Shapes of the tensors the operation touches, in Burn's field order.
    pub shapes: Vec<Vec<usize>>,
}

impl OpSignature {
    /// The signature of a Burn IR operation.
    pub fn of(op: &OperationIr) -> Self {
        let nodes = op.nodes();
        Self {
            kind: kind_of(op),
            dtype: nodes.first().map(|n| format!("{:?}", n.dtype)).unwrap_or_default(),
            shapes: nodes.iter().map(|n| n.shape.to_vec()).collect(),
        }
    }

    /// One line: `NumericFloat/Add F32 [16,256,257] [16,256,257] [16,256,257]`.
    pub fn to_line(&self) -> String {
        let shapes: Vec<String> = self
            .shapes
            .iter()
            .map(|s| format!("[{}]", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")))
            .collect();
        format!("{} {} {}", self.kind, self.dtype, shapes.join(" ")).trim_end().to_string()
    }

    /// Whether no fuser of Burn 0.22.1 ever takes this operation into a fused block
    /// (internals note §7): matmul is only a fused block's *head*, so it is not listed.
    pub fn never_fused(&self) -> bool {
        const NEVER: [&str; 6] = ["Init", "Custom", "Module/Conv", "Module/Embedding", "Random", "Float/IntoInt"];
        NEVER.iter().any(|k| self.kind.starts_with(k))
    }

    /// Whether this is a `Drop`.
    pub fn is_drop(&self) -> bool {
        self.kind == "Drop"
    }
}

/// `NumericFloat/Add`: the outer and inner variant names of `op`'s Debug form.
pub fn kind_of(op: &OperationIr) -> String {
    let debug = format!("{op:?}");
    let mut parts = Vec::new();
    for token in debug.split(['(', ' ', '{', ',', ')']) {
        let t = token.trim();
        if t.is_empty() {
            continue;
        }
        if !t.chars().next().is_some_and(|c| c.is_ascii_uppercase()) || is_dtype(t) {
            continue;
        }
        parts.push(t.to_string());
        if parts.len() == 2 || t.ends_with("Ir") {
            break;
        }
    }
    // Drop(TensorIr..) and Init(InitOperationIr..) have one level.
    if parts.last().is_some_and(|p| p.ends_with("Ir")) {
        parts.pop();
    }
    parts.join("/")
}

fn is_dtype(t: &str) -> bool {
    matches!(t, "F64" | "F32" | "F16" | "BF16" | "Flex32" | "I64" | "I32" | "I16" | "I8" | "U64" | "U32" | "U16" | "U8" | "Bool" | "QFloat")
}
