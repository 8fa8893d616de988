//! Job priority: Slurm's priority/multifactor formula ([`SlurmPriority`]) and flux-accounting's
//! `mf_priority` ([`flux`]), both scoring a pending queue into [`Scores`].

pub mod check;
pub mod flux;
mod slurm;

pub use slurm::{PreparedQueue, QueueAssociations, SlurmPriority, Weights, age_factor, clamp_priority};

/// Marks "none" in the per-row QOS and association columns.
pub const NONE: u32 = u32::MAX;

/// Scored rows, one per (job, partition, QOS), column by column. Factors are weighted.
#[derive(Clone, Debug, Default)]
pub struct Scores {
    /// Job index into the pending queue.
    pub job: Vec<u32>,
    /// Partition name id (the queue's interner).
    pub partition: Vec<u32>,
    /// QOS name id, or [`NONE`].
    pub qos: Vec<u32>,
    /// Association row, or [`NONE`] when the job's association is unknown.
    pub assoc: Vec<u32>,
    /// Weighted age factor.
    pub age: Vec<f64>,
    /// Weighted association factor.
    pub assoc_factor: Vec<f64>,
    /// Weighted fair-share factor.
    pub fairshare: Vec<f64>,
    /// Weighted job-size factor.
    pub job_size: Vec<f64>,
    /// Weighted partition factor.
    pub partition_factor: Vec<f64>,
    /// Weighted QOS factor.
    pub qos_factor: Vec<f64>,
    /// Weighted TRES terms, one column per entry of [`Weights::tres`].
    pub tres: Vec<Vec<f64>>,
    /// The job priority as the plugin stores it: clamped to [1, 2^32-1], truncated.
    pub priority: Vec<u32>,
    /// The sum as sprio recomputes it for `%Y`/`%y` (at least 1, not clamped above).
    pub sprio_sum: Vec<f64>,
}

impl Scores {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.job.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.job.is_empty()
    }
}
