//! `cut-never-explored`: the policy is only consulted for operations Burn explores; a cut
//! before any other operation (inside a segment that replays a cached plan, or past a block
//! Burn closed earlier) is never seen: `(cut N) => none`.
use super::{Rule, num};
use crate::canon::Facts;
use egg::{Id, Subst, rewrite};
use std::sync::Arc;

pub(crate) fn cut_never_explored(facts: Arc<Facts>) -> Rule {
    let n: egg::Var = "?n".parse().unwrap();
    rewrite!("cut-never-explored"; "(cut ?n)" => "none"
        if move |eg: &mut egg::EGraph<_, ()>, _: Id, s: &Subst| num(eg, s[n]).is_some_and(|v| !facts.live.contains(&v)))
}

#[cfg(test)]
mod tests {
    use crate::canon::tests::{cand, facts, same};

    #[test]
    fn cut_where_burn_never_explores_does_nothing() {
        // Operation 17 is inside block {16,17,18} but was never explored.
        assert!(same(&facts(), &cand(&[17, 7]), &cand(&[7])));
        assert!(!same(&facts(), &cand(&[2, 7]), &cand(&[7])));
    }
}
