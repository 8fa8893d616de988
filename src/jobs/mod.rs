//! Job inputs: the pending queue to score (and, later, the job records that make usage).

pub mod pending;

pub use pending::{ParquetWaves, PendingFormat, PendingJobs};

// The readers' helpers live in `crate::io::read`; these paths are the ones callers have long used.
pub use crate::io::read::interner::Interner;
pub use crate::io::read::parquet_columns::whole_numbers;
pub use crate::io::read::time::{TIME_RANGE, check_time, parse_time_arg, parse_timestamp};
