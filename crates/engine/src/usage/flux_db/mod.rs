//! The usage side of a flux-accounting database: its `jobs` table read as job records, and the
//! usage state (`job_usage`, the bins, the half-life period) loaded and written back. They live
//! with the usage model rather than in [`crate::io::flux_db`], which opens the database for them,
//! because they speak the usage stage's types: the readers would otherwise import from `usage`
//! while `usage` imports the readers.

pub mod jobs;
pub mod usage_state;
