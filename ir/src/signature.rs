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
    kind_in(&debug_prefix(op, KIND_PREFIX))
}

/// The variant path in (a prefix of) an operation's Debug form.
fn kind_in(debug: &str) -> String {
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

/// The two variant names sit in the first few dozen characters of an operation's Debug form;
/// formatting the whole form (every tensor's shape and id) cost the op-stream watch most of its
/// time on a 1089-operation step.
const KIND_PREFIX: usize = 256;

/// The Debug form of `op` up to `cap` bytes, cut back to the last separator so no token is
/// partial.
fn debug_prefix(op: &dyn std::fmt::Debug, cap: usize) -> String {
    use std::fmt::Write;
    struct Capped(String, usize);
    impl Write for Capped {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let room = self.1.saturating_sub(self.0.len());
            if s.len() <= room {
                self.0.push_str(s);
                return Ok(());
            }
            let mut end = room;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.0.push_str(&s[..end]);
            Err(std::fmt::Error)
        }
    }
    let mut out = Capped(String::with_capacity(cap), cap);
    if write!(out, "{op:?}").is_err() {
        let keep = out.0.rfind(['(', ' ', '{', ',', ')']).unwrap_or(0);
        out.0.truncate(keep);
    }
    out.0
}

fn is_dtype(t: &str) -> bool {
    matches!(t, "F64" | "F32" | "F16" | "BF16" | "Flex32" | "I64" | "I32" | "I16" | "I8" | "U64" | "U32" | "U16" | "U8" | "Bool" | "QFloat")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debug like Burn's: `NumericFloat(F32, Add(BinaryOpIr { lhs: TensorIr { .. }, .. }))`,
    /// with a long tail of tensors.
    struct FakeOp(&'static str, usize);
    impl std::fmt::Debug for FakeOp {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}", self.0)?;
            for i in 0..self.1 {
                write!(f, "TensorIr {{ id: TensorId {{ value: {i} }}, shape: Shape {{ dims: [16, 256, 257] }}, status: ReadOnly, dtype: F32 }}, ")?;
            }
            write!(f, "}})")
        }
    }

    #[test]
    fn a_capped_debug_form_gives_the_kind_the_whole_form_gives() {
        for head in ["NumericFloat(F32, Add(BinaryOpIr { lhs: ", "Drop(", "Float(F32, Matmul(MatmulOpIr { ", "Init(InitOperationIr { out: "] {
            let op = FakeOp(head, 40);
            let whole = format!("{op:?}");
            let capped = debug_prefix(&op, KIND_PREFIX);
            assert!(capped.len() <= KIND_PREFIX && whole.len() > 4 * KIND_PREFIX);
            assert_eq!(kind_in(&capped), kind_in(&whole), "{head}");
        }
        assert_eq!(kind_in(&debug_prefix(&FakeOp("NumericFloat(F32, Add(BinaryOpIr { lhs: ", 3), KIND_PREFIX)), "NumericFloat/Add");
    }

    #[test]
    fn a_cut_never_leaves_a_partial_token() {
        // Cut inside `BinaryOpIr`: the partial word is dropped, not read as a variant.
        let capped = debug_prefix(&FakeOp("NumericFloat(F32, Add(BinaryOpIr { lhs: ", 1), 27);
        assert_eq!(capped, "NumericFloat(F32, Add");
        assert_eq!(kind_in(&capped), "NumericFloat/Add");
    }
}
