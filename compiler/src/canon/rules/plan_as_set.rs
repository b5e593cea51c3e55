//! `plan-as-set`: a plan is the set of its atoms. Order and duplicates do not matter, `none`
//! contributes nothing, and the splits a cut causes count one by one.
use super::{PlanNodes, Rule, plan_children};
use crate::canon::PlanLang;
use egg::{Applier, EGraph, Id, PatternAst, Rewrite, Subst, Symbol};

struct Normalise;

impl Applier<PlanLang, ()> for Normalise {
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
            let node = PlanLang::Plan(normal_children(eg, &children));
            let id = eg.add(node);
            if eg.union(eclass, id) {
                changed.push(eclass);
            }
        }
        changed
    }
}

/// Children with `none` removed, `splits` flattened, sorted by e-class and deduplicated.
fn normal_children(eg: &EGraph<PlanLang, ()>, children: &[Id]) -> Vec<Id> {
    let mut out = Vec::new();
    for &child in children {
        let class = &eg[child];
        if class.nodes.iter().any(|n| matches!(n, PlanLang::Nothing)) {
            continue;
        }
        match class.nodes.iter().find_map(|n| match n {
            PlanLang::Splits(atoms) => Some(atoms.clone()),
            _ => None,
        }) {
            Some(atoms) => out.extend(atoms.iter().map(|a| eg.find(*a))),
            None => out.push(eg.find(child)),
        }
    }
    out.sort();
    out.dedup();
    out
}

pub(crate) fn plan_as_set() -> Rule {
    Rewrite::new("plan-as-set", PlanNodes, Normalise).expect("valid rule")
}

#[cfg(test)]
mod tests {
    use crate::canon::tests::{cand, facts, same};

    #[test]
    fn order_and_duplicates_do_not_matter() {
        let f = facts();
        assert!(same(&f, &cand(&[2, 7]), &cand(&[7, 2])));
        assert!(same(&f, &cand(&[2, 2, 7]), &cand(&[2, 7])));
        assert!(!same(&f, &cand(&[2, 7]), &cand(&[2])));
    }
}
