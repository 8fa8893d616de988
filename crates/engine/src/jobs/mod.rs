//! Job inputs: the pending queue to score (and, later, the job records that make usage).

pub mod pending;

pub use pending::{ParquetRowGroups, PendingFormat, PendingJobs, TreeNames};
