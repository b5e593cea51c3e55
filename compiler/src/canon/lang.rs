//! The term language of requested plans.
use egg::{Id, define_language};

define_language! {
    /// `(plan a b …)`: a set of atoms. Atoms: `(cut N)` a requested cut before operation N;
    /// `(split B I)` block B of Burn's plan split before its I-th member; `(splits …)` the
    /// splits one cut causes; `none` a cut that changes nothing.
    pub(crate) enum PlanLang {
        "plan" = Plan(Vec<Id>),
        "cut" = Cut([Id; 1]),
        "splits" = Splits(Vec<Id>),
        "split" = Split([Id; 2]),
        "none" = Nothing,
        Num(u64),
    }
}
