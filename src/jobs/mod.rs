//! Job inputs: the pending queue to score (and, later, the job records that make usage).

pub mod pending;
mod text;

pub use pending::{ParquetWaves, PendingFormat, PendingJobs};
pub use text::{Interner, TIME_RANGE, check_time, parse_time_arg, parse_timestamp, whole_numbers};
