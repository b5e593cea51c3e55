//! blaze-compiler: the stages between a model and a plan file.
//!
//! Processing order: [`tracing`] (capture a step) → `enumerate` (candidate plans) →
//! `canon` (e-graph: collapse requests that must execute identically) → `confirm` (run each
//! once, collapse what executed identically) → `tune::race` over `tune::measure` visits (paired
//! rounds against Burn's plan, fusion off in-process) → `verify` (probe under the winner and
//! Burn's plan) → `select` (a confident winner that verifies) → `report`. `race_check` measures
//! the race's own error rates.
//! [`cli`] is the `blazec` front end; a user's own binary calls [`cli::main_with`] to get the
//! same commands for its models.
pub mod autotune;
pub mod bench;
pub mod candidate;
pub mod canon;
pub mod catalog;
pub mod check;
pub mod child;
pub mod classes;
pub mod cli;
pub mod confirm;
pub mod ddmin;
pub mod demo;
pub mod doctor;
pub mod drive;
pub mod enumerate;
pub mod failure;
pub mod files;
pub mod greedy;
pub mod live;
pub mod orphan;
pub mod profile;
pub mod progress;
pub mod race_check;
pub mod run;
pub mod runner;
pub mod serve;
pub mod space;
pub mod tracing;
pub mod tune;
pub mod tune_cli;
