//! blaze-ir: the data Blaze passes between its stages, and their text forms.
//!
//! Invariant: this crate never touches a device and never runs Burn. It only describes
//! operations (by their Burn IR signature), partitions, traces and plan files, so everything
//! here is testable without a GPU.
pub mod boundary;
pub mod bundle;
pub mod file;
pub mod hash;
pub mod heap;
pub mod partition;
pub mod plan;
pub mod signature;
pub mod store_key;
pub mod trace;

pub use boundary::BoundaryId;
pub use bundle::Bundle;
pub use partition::ExecutedPartition;
pub use plan::{Contract, PlanError, PlanFile};
pub use trace::Trace;
