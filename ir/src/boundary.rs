//! Boundary identity.
//!
//! A boundary is the gap just before an operation. It is named by that operation's per-stream
//! registration index counted from the stream's last sync (the patched burn-fusion's
//! `ExploredOp::index`). The harness syncs at the start of every step, so within a step the
//! index is the operation's position in the step, independent of what Burn fused before it.
use serde::{Deserialize, Serialize};
use std::fmt;

/// The boundary just before operation `n` of a step (n > 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BoundaryId(pub u64);

impl fmt::Display for BoundaryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b{}", self.0)
    }
}

impl std::str::FromStr for BoundaryId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let digits = s.strip_prefix('b').unwrap_or(s);
        digits
            .parse::<u64>()
            .map(BoundaryId)
            .map_err(|_| format!("`{s}` is not a boundary id (expected b<N>, e.g. b42)"))
    }
}

#[cfg(test)]
mod tests {
    use super::BoundaryId;

    #[test]
    fn text_round_trip() {
        let id = BoundaryId(42);
        assert_eq!(id.to_string().parse::<BoundaryId>(), Ok(id));
        assert_eq!("17".parse::<BoundaryId>(), Ok(BoundaryId(17)));
        assert!("bx".parse::<BoundaryId>().unwrap_err().contains("not a boundary id"));
    }
}
