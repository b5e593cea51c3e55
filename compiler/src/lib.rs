//! blaze-compiler: the stages between a model and a plan file.
//!
//! Processing order: [`tracer`] (capture a step) → `enumerate` (candidate plans) →
//! `canon` (e-graph: collapse requests that must execute identically) → `confirm` (run each
//! once, collapse what executed identically) → `race` over `measure` visits (paired
//! rounds against Burn's plan, fusion off in-process) → `verify` (probe under the winner and
//! Burn's plan) → `select` (a confident winner that verifies) → `report`. `race_check` measures
//! the race's own error rates.
//! No command line and no printing here: the `blazec` crate parses arguments, calls these
//! stages and prints what they return (a user's own binary gets the same commands through
//! `blazec::main_with`).
pub mod autotune;
/// The commit this build was made from (`git rev-parse --short=12 HEAD`, with `-dirty` when the
/// checkout had uncommitted changes; `unknown` outside a git checkout), set by this crate's build
/// script: every results file records it. Read from here, never with `option_env!` in another
/// crate, where the variable is not set.
pub const COMMIT: &str = env!("BLAZE_COMMIT");
pub mod bundling;
pub mod candidate;
pub mod canon;
pub mod catalog;
pub mod child;
pub mod classes;
pub mod confirm;
pub mod ddmin;
pub mod doctor;
pub mod drive;
pub mod enumerate;
pub mod failure;
pub mod files;
pub mod greedy;
pub mod live;
pub mod measure;
pub mod orphan;
pub mod profile;
pub mod race;
pub mod runner;
pub mod space;
pub mod stats;
pub mod tracer;
pub mod tune;
pub mod verify;
