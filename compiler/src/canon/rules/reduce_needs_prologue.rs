//! `reduce-needs-prologue`: no fuser takes a reduction at the head of a block (Reduce and
//! ReduceBroadcasted need an elementwise prologue; ElementWise takes no reduction), so a run
//! of a split block that starts with a reduction runs it alone: splitting right after it as
//! well changes nothing. `(plan … (split B I) …)`, member I of B a reduction, is the same plan
//! with `(split B I+1)` added.
use super::{PlanNodes, Rule, num, plan_children};
use crate::canon::{Facts, PlanLang};
use egg::{Applier, EGraph, Id, PatternAst, Rewrite, Subst, Symbol};
use std::sync::Arc;

struct SplitAfterHeadReduction {
    facts: Arc<Facts>,
}

impl Applier<PlanLang, ()> for SplitAfterHeadReduction {
    fn apply_one(
        &self,
        eg: &mut EGraph<PlanLang, ()>,
        eclass: Id,
        _: &Subst,
        _: Option<&PatternAst<PlanLang>>,
        _: Symbol,
    ) -> Vec<Id> {
        let plans = plan_children(eg, eclass);
        let mut changed = vec![];
        for children in plans {
            let extra = self.extra_splits(eg, &children);
            if extra.is_empty() {
                continue;
            }
            let present: Vec<Id> = children.iter().map(|c| eg.find(*c)).collect();
            let mut all = children.clone();
            for (b, i) in extra {
                let b = eg.add(PlanLang::Num(b as u64));
                let i = eg.add(PlanLang::Num(i as u64));
                let atom = eg.add(PlanLang::Split([b, i]));
                // Only what is not there yet: re-adding would grow the plan forever.
                if !present.contains(&eg.find(atom)) && !all.contains(&atom) {
                    all.push(atom);
                }
            }
            if all.len() == children.len() {
                continue;
            }
            let id = eg.add(PlanLang::Plan(all));
            if eg.union(eclass, id) {
                changed.push(eclass);
            }
        }
        changed
    }
}

impl SplitAfterHeadReduction {
    /// Splits (B, I+1) implied by a split (B, I) whose run starts with a reduction.
    fn extra_splits(&self, eg: &EGraph<PlanLang, ()>, children: &[Id]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for &child in children {
            for node in &eg[child].nodes {
                let PlanLang::Split([b, i]) = node else { continue };
                let (Some(b), Some(i)) = (num(eg, *b), num(eg, *i)) else { continue };
                let Some(members) = self.facts.blocks.get(&(b as u32)) else { continue };
                let head = members[i as usize];
                if self.facts.reductions.contains(&head) && (i as usize + 1) < members.len() {
                    out.push((b as u32, i as u32 + 1));
                }
            }
        }
        out
    }
}

pub(crate) fn reduce_needs_prologue(facts: Arc<Facts>) -> Rule {
    Rewrite::new("reduce-needs-prologue", PlanNodes, SplitAfterHeadReduction { facts }).expect("valid rule")
}

#[cfg(test)]
mod tests {
    use crate::canon::tests::{cand, facts, same};

    #[test]
    fn a_run_headed_by_a_reduction_is_split_after_it() {
        // Block {13,14,15}, 14 a reduction: cutting before 14 leaves [14,15], whose head no
        // fuser takes, so it is the same as cutting before 14 and 15.
        let f = facts();
        assert!(same(&f, &cand(&[14]), &cand(&[14, 15])));
        // Block {1,2,3}: 2 is not a reduction.
        assert!(!same(&f, &cand(&[2]), &cand(&[2, 3])));
    }
}
