//! Live mode (issue 15): selection during a real training run. See `driver` for the schedule.
pub mod driver;
