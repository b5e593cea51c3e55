//! `cut-outside-burn-blocks`: a cut that splits no fused block of Burn's plan (a cut next to a
//! lone matmul, a convolution, an `Init`, …) changes no kernel: `(cut N) => none`.
use super::{Rule, num};
use crate::canon::Facts;
use egg::{Id, Subst, rewrite};
use std::sync::Arc;

pub(crate) fn cut_outside_burn_blocks(facts: Arc<Facts>) -> Rule {
    let n: egg::Var = "?n".parse().unwrap();
    rewrite!("cut-outside-burn-blocks"; "(cut ?n)" => "none"
        if move |eg: &mut egg::EGraph<_, ()>, _: Id, s: &Subst| num(eg, s[n]).is_some_and(|v| facts.splits_of(v).is_empty()))
}

#[cfg(test)]
mod tests {
    use crate::canon::tests::{cand, facts, same};

    #[test]
    fn cut_between_unfused_operations_is_burns_plan() {
        // Blocks {1,2,3} and {6,7}: a cut before 5 splits neither.
        assert!(same(&facts(), &cand(&[5]), &cand(&[])));
        assert!(!same(&facts(), &cand(&[2]), &cand(&[])));
    }
}
