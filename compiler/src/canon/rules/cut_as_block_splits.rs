//! `cut-as-block-splits`: what a cut does to Burn's plan is the set of fused blocks it splits
//! and where. Two cuts between the same two members of every block they split cause the same
//! splits: `(cut N) => (splits (split B I) …)`.
use super::{Rule, num};
use crate::canon::{Facts, PlanLang};
use egg::{Applier, EGraph, Id, PatternAst, Subst, Symbol, Var, rewrite};
use std::sync::Arc;

struct ToSplits {
    facts: Arc<Facts>,
    n: Var,
}

impl Applier<PlanLang, ()> for ToSplits {
    fn apply_one(
        &self,
        eg: &mut EGraph<PlanLang, ()>,
        eclass: Id,
        subst: &Subst,
        _: Option<&PatternAst<PlanLang>>,
        _: Symbol,
    ) -> Vec<Id> {
        let Some(n) = num(eg, subst[self.n]) else { return vec![] };
        let splits = self.facts.splits_of(n);
        if splits.is_empty() {
            return vec![];
        }
        let atoms: Vec<Id> = splits
            .into_iter()
            .map(|(b, i)| {
                let b = eg.add(PlanLang::Num(b as u64));
                let i = eg.add(PlanLang::Num(i as u64));
                eg.add(PlanLang::Split([b, i]))
            })
            .collect();
        let node = eg.add(PlanLang::Splits(atoms));
        if eg.union(eclass, node) { vec![eclass] } else { vec![] }
    }
}

pub(crate) fn cut_as_block_splits(facts: Arc<Facts>) -> Rule {
    let n: Var = "?n".parse().unwrap();
    rewrite!("cut-as-block-splits"; "(cut ?n)" => { ToSplits { facts, n } })
}

#[cfg(test)]
mod tests {
    use crate::canon::tests::{cand, facts, same};

    #[test]
    fn cuts_in_the_same_gap_of_a_block_are_one_request() {
        // Block {6,7} and block {9,12}: cuts before 10, 11 and 12 all split {9,12} alone.
        let f = facts();
        assert!(same(&f, &cand(&[10]), &cand(&[11])));
        assert!(same(&f, &cand(&[10]), &cand(&[12])));
        assert!(!same(&f, &cand(&[10]), &cand(&[7])));
    }
}
