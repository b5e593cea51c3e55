//! One file per command, in the order of the pipeline: a model's step traced, plans written or
//! enumerated, tuned and raced, verified, run, bundled, checked, and the diagnostics.
pub mod bench;
pub mod bundle;
pub mod check;
pub mod demo;
pub mod doctor;
pub mod list;
pub mod live;
pub mod plan;
pub mod probe;
pub mod profile;
pub mod race_check;
pub mod run;
pub mod seed;
pub mod serve;
pub mod space;
pub mod stats;
pub mod table;
pub mod trace;
pub mod tune;
pub mod verify;
