//! The named rewrite rules, one per file, each with its own tests.
mod cut_as_block_splits;
mod cut_never_explored;
mod cut_outside_burn_blocks;
mod plan_as_set;
mod reduce_needs_prologue;

use super::{Facts, PlanLang};
use egg::{EGraph, Id, Rewrite};
use std::sync::Arc;

pub(crate) use cut_as_block_splits::cut_as_block_splits;
pub(crate) use cut_never_explored::cut_never_explored;
pub(crate) use cut_outside_burn_blocks::cut_outside_burn_blocks;
pub(crate) use plan_as_set::plan_as_set;
pub(crate) use reduce_needs_prologue::reduce_needs_prologue;

pub(crate) type Rule = Rewrite<PlanLang, ()>;

/// Every rule, in a fixed order (the result does not depend on it; the order keeps runs
/// reproducible step by step).
pub(crate) fn all(facts: Arc<Facts>) -> Vec<Rule> {
    vec![
        cut_outside_burn_blocks(facts.clone()),
        cut_never_explored(facts.clone()),
        cut_as_block_splits(facts.clone()),
        plan_as_set(),
        reduce_needs_prologue(facts),
    ]
}

/// The number held by e-class `id`, if it holds one.
pub(crate) fn num(egraph: &EGraph<PlanLang, ()>, id: Id) -> Option<u64> {
    egraph[id].nodes.iter().find_map(|n| match n {
        PlanLang::Num(v) => Some(*v),
        _ => None,
    })
}

/// The children of every `plan` node in e-class `eclass`.
pub(crate) fn plan_children(egraph: &EGraph<PlanLang, ()>, eclass: Id) -> Vec<Vec<Id>> {
    egraph[eclass]
        .nodes
        .iter()
        .filter_map(|n| match n {
            PlanLang::Plan(children) => Some(children.clone()),
            _ => None,
        })
        .collect()
}

/// Searcher matching every e-class that holds a `plan` node.
pub(crate) struct PlanNodes;

impl egg::Searcher<PlanLang, ()> for PlanNodes {
    fn search_eclass_with_limit(
        &self,
        egraph: &EGraph<PlanLang, ()>,
        eclass: Id,
        _limit: usize,
    ) -> Option<egg::SearchMatches<'_, PlanLang>> {
        egraph[eclass].nodes.iter().any(|n| matches!(n, PlanLang::Plan(_))).then(|| egg::SearchMatches {
            eclass,
            substs: vec![egg::Subst::default()],
            ast: None,
        })
    }

    fn vars(&self) -> Vec<egg::Var> {
        vec![]
    }
}
