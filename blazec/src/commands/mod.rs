//! One file per command, in the order of the pipeline: a model's step traced, plans written or
//! enumerated, tuned and raced, verified, run, bundled, checked, and the diagnostics.
pub mod trace;
pub mod plan;
pub mod space;
pub mod tune;
pub mod race_check;
pub mod verify;
pub mod run;
pub mod serve;
pub mod live;
pub mod demo;
pub mod bench;
pub mod bundle;
pub mod check;
pub mod table;
pub mod stats;
pub mod doctor;
pub mod profile;
pub mod probe;
