//! Canonicalise requested plans with an e-graph (egg), so that requests which must execute
//! identically are timed once.
//!
//! A request is the term `(plan (cut 5) (cut 9) …)`. Named rules (one file each under
//! `rules/`) rewrite it using facts from the trace: a cut that splits no fused block of
//! Burn's plan, or sits where Burn never explores, is `none`; a cut becomes the set of block
//! splits it causes (two cuts causing the same splits are the same request); a plan is a set
//! (order, duplicates and `none` do not matter); a block run that would start with a reduction
//! (no fuser takes a reduction without a prologue) is split after it. Requests whose roots end
//! in one e-class are one candidate. The rules model Burn's fusers and can be wrong (Option-B
//! cuts also re-segment the stream); `confirm` measures what executed and counts false merges.
pub mod facts;
pub mod lang;
pub mod rules;

use crate::candidate::Candidate;
use egg::{EGraph, Id, RecExpr, Runner};
pub use facts::Facts;
pub(crate) use lang::PlanLang;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Bounds of the e-graph run.
pub(crate) const ITER_LIMIT: usize = 30;
pub(crate) const NODE_LIMIT: usize = 200_000;
pub(crate) const TIME_LIMIT: Duration = Duration::from_secs(20);

/// The outcome: candidates grouped by e-class, in first-request order.
#[derive(Clone, Debug, PartialEq)]
pub struct Canonical {
    /// Each group lists candidate ids; the first is the representative that gets timed.
    pub groups: Vec<Vec<usize>>,
    /// Why the runner stopped (saturated, or which bound it hit).
    pub stop_reason: String,
    pub iterations: usize,
    pub egraph_nodes: usize,
}

impl Canonical {
    pub fn representatives(&self) -> Vec<usize> {
        self.groups.iter().map(|g| g[0]).collect()
    }

    /// Requests the e-graph found to duplicate an earlier one.
    pub fn collapsed(&self) -> usize {
        self.groups.iter().map(|g| g.len() - 1).sum()
    }
}

/// The term of a request.
pub(crate) fn term(candidate: &Candidate) -> RecExpr<PlanLang> {
    let mut expr = RecExpr::default();
    let cuts: Vec<Id> = candidate
        .cuts
        .iter()
        .map(|c| {
            let n = expr.add(PlanLang::Num(c.0));
            expr.add(PlanLang::Cut([n]))
        })
        .collect();
    expr.add(PlanLang::Plan(cuts));
    expr
}

/// Groups `candidates` by e-class after running every rule to saturation (or a bound).
pub fn canonicalise(candidates: &[Candidate], facts: Arc<Facts>) -> Canonical {
    let mut egraph: EGraph<PlanLang, ()> = EGraph::default();
    let roots: Vec<Id> = candidates.iter().map(|c| egraph.add_expr(&term(c))).collect();
    let runner = Runner::default()
        .with_iter_limit(ITER_LIMIT)
        .with_node_limit(NODE_LIMIT)
        .with_time_limit(TIME_LIMIT)
        .with_egraph(egraph)
        .run(&rules::all(facts));
    let stop_reason = match &runner.stop_reason {
        Some(reason) => format!("{reason:?}"),
        None => "not run".into(),
    };
    let mut by_class: BTreeMap<Id, usize> = BTreeMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (candidate, root) in candidates.iter().zip(roots) {
        let class = runner.egraph.find(root);
        match by_class.get(&class) {
            Some(&g) => groups[g].push(candidate.id),
            None => {
                by_class.insert(class, groups.len());
                groups.push(vec![candidate.id]);
            }
        }
    }
    Canonical {
        groups,
        stop_reason,
        iterations: runner.iterations.len(),
        egraph_nodes: runner.egraph.total_number_of_nodes(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
