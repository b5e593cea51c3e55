//! Executed partitions: which operations of a step ran together as one block.
use crate::hash::stable_hex;
use serde::{Deserialize, Serialize};

/// Blocks in execution order; each block lists step-relative operation indices in the order
/// the block ran them. A one-element block is an operation that ran alone (or a fused block of
/// one operation: the observer cannot tell them apart).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutedPartition {
    pub blocks: Vec<Vec<u32>>,
}

impl ExecutedPartition {
    /// Blocks of two or more operations.
    pub fn fused_blocks(&self) -> impl Iterator<Item = &Vec<u32>> {
        self.blocks.iter().filter(|b| b.len() > 1)
    }

    /// The partition as a set: each block sorted, blocks sorted. Two plans with equal
    /// canonical forms grouped the same operations, whatever order they ran them in.
    pub fn canonical(&self) -> Vec<Vec<u32>> {
        let mut blocks: Vec<Vec<u32>> = self
            .blocks
            .iter()
            .map(|b| {
                let mut b = b.clone();
                b.sort_unstable();
                b
            })
            .collect();
        blocks.sort();
        blocks
    }

    /// Stable fingerprint of the canonical form.
    pub fn fingerprint(&self) -> String {
        stable_hex(self.to_text_of(&self.canonical()).as_bytes())
    }

    /// Text form, one block per line in execution order: `3 4 5`.
    pub fn to_text(&self) -> String {
        self.to_text_of(&self.blocks)
    }

    fn to_text_of(&self, blocks: &[Vec<u32>]) -> String {
        blocks.iter().map(|b| b.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")).collect::<Vec<_>>().join("\n")
    }

    /// Parses [`Self::to_text`].
    pub fn from_text(text: &str) -> Result<Self, String> {
        let blocks = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                line.split_whitespace()
                    .map(|t| t.parse::<u32>().map_err(|_| format!("bad operation index `{t}`")))
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { blocks })
    }

    /// Fused blocks with their index in the partition, each block's operations sorted.
    pub fn fused_blocks_sorted(&self) -> Vec<(usize, Vec<u32>)> {
        self.blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.len() > 1)
            .map(|(i, b)| {
                let mut ops = b.clone();
                ops.sort_unstable();
                (i, ops)
            })
            .collect()
    }

    /// Boundaries (index of the later operation) inside fused blocks: where two neighbouring
    /// operations of one block were merged. Sorted.
    pub fn merged_boundaries(&self) -> Vec<u32> {
        let mut out: Vec<u32> = self
            .fused_blocks()
            .flat_map(|b| {
                let mut s = b.clone();
                s.sort_unstable();
                s.into_iter().skip(1)
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// The requested cuts that some executed block spans (has operations on both sides of).
    /// Empty when the partition shows every requested cut.
    pub fn spanned_cuts(&self, cuts: &[u64]) -> Vec<u64> {
        cuts.iter()
            .copied()
            .filter(|&n| {
                self.blocks.iter().any(|b| b.iter().any(|&o| (o as u64) < n) && b.iter().any(|&o| (o as u64) >= n))
            })
            .collect()
    }

    /// Block index of every operation, or `None` if an operation is missing.
    pub fn block_of(&self, num_ops: usize) -> Vec<Option<usize>> {
        let mut of = vec![None; num_ops];
        for (b, ops) in self.blocks.iter().enumerate() {
            for &op in ops {
                if let Some(slot) = of.get_mut(op as usize) {
                    *slot = Some(b);
                }
            }
        }
        of
    }
}

#[cfg(test)]
mod tests {
    use super::ExecutedPartition;

    fn p(blocks: &[&[u32]]) -> ExecutedPartition {
        ExecutedPartition { blocks: blocks.iter().map(|b| b.to_vec()).collect() }
    }

    #[test]
    fn text_round_trip() {
        let part = p(&[&[0], &[2, 1, 3], &[4]]);
        assert_eq!(ExecutedPartition::from_text(&part.to_text()), Ok(part));
    }

    #[test]
    fn fingerprint_ignores_execution_order_only() {
        let a = p(&[&[0], &[1, 2]]);
        let b = p(&[&[2, 1], &[0]]);
        let c = p(&[&[0, 1], &[2]]);
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_ne!(a.fingerprint(), c.fingerprint());
    }

    #[test]
    fn spanned_cuts_are_those_a_block_crosses() {
        let part = p(&[&[0, 1], &[2, 4], &[3]]);
        assert_eq!(part.spanned_cuts(&[1, 2, 3, 4]), vec![1, 3, 4]);
    }

    #[test]
    fn merged_boundaries_are_inside_fused_blocks() {
        assert_eq!(p(&[&[0], &[3, 1, 2], &[4, 5]]).merged_boundaries(), vec![2, 3, 5]);
    }
}
