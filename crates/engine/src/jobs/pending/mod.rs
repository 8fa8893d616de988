//! The pending queue, columnar: one entry per job, names interned.
//!
//! Inputs:
//! - CSV/Parquet with `job_id,user,account,partition,qos,submit_time,accrue_time,min_nodes,cpus,
//!   time_limit,nice,site_factor,tres_req` (extra columns allowed; `urgency` is read for flux);
//!   times as epoch seconds or `YYYY-MM-DDTHH:MM:SS`; `partition` and `qos` may be comma lists;
//!   `time_limit` in minutes or Slurm's time syntax, empty or `UNLIMITED` meaning the partition's
//!   MaxTime; `tres_req` a TRES string.
//! - `squeue --json` (pending jobs only; numbers plain or as data_parser's `{"set", "infinite",
//!   "number"}`). Every entry of `jobs` must be an object with a `job_state`, and a pending one
//!   needs `job_id`, `submit_time`, `user_name`, `account` and `partition`.
//!
//! The columns and the checks every job passes are in `queue`; each format has its reader (`csv`,
//! `parquet`, `squeue_json`), and the CSV and Parquet readers share the canonical header
//! (`columns`).

mod columns;
mod csv;
mod parquet;
mod queue;
mod squeue_json;
mod tree_names;

use std::path::Path;
use std::sync::Arc;

pub use self::parquet::ParquetRowGroups;
pub use self::queue::{DEFAULT_URGENCY, NO_VAL, PendingFormat, PendingJobs};
pub use self::tree_names::TreeNames;
pub(crate) use self::tree_names::user_associations;
use crate::config::tres::Tres;
use fairshare_base::error::Result;
use fairshare_base::read::source;

impl PendingFormat {
    /// Tells the format of `path` from its first bytes.
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn detect(path: &Path) -> Result<Self> {
        let head = source::head(path, 64)?;
        Ok(if head.starts_with(b"PAR1") {
            PendingFormat::Parquet
        } else if squeue_json::starts_json(&head) {
            PendingFormat::SqueueJson
        } else {
            PendingFormat::Csv
        })
    }
}

impl PendingJobs {
    /// Reads a pending-jobs file, keeping the requested counts of the TRES in `keep`.
    ///
    /// # Errors
    /// An unreadable file, a missing column, or a bad value, naming the line or row.
    pub fn read(path: &Path, format: Option<PendingFormat>, keep: &[Tres]) -> Result<Self> {
        Self::read_against(path, format, keep, None)
    }

    /// [`Self::read`] against the names of the tree the queue will be scored against: a job's
    /// names take their ids from `names`, and
    /// [`SlurmPriority::prepare_with`](crate::priority::SlurmPriority::prepare_with) then
    /// indexes the associations without a lookup.
    ///
    /// # Errors
    /// As [`Self::read`].
    pub fn read_with(
        path: &Path,
        format: Option<PendingFormat>,
        keep: &[Tres],
        names: &Arc<TreeNames>,
    ) -> Result<Self> {
        Self::read_against(path, format, keep, Some(names))
    }

    fn read_against(
        path: &Path,
        format: Option<PendingFormat>,
        keep: &[Tres],
        tree_names: Option<&Arc<TreeNames>>,
    ) -> Result<Self> {
        let format = match format {
            Some(f) => f,
            None => PendingFormat::detect(path)?,
        };
        let names = tree_names.map(|t| t.interner()).unwrap_or_default();
        let mut jobs = PendingJobs { format, names, ..PendingJobs::empty(path.to_path_buf(), keep.to_vec()) };
        let fits = |rows: u64| {
            fairshare_base::memory::ensure_fits(
                path,
                "this queue",
                rows * fairshare_base::memory::BYTES_PER_PENDING_JOB,
            )
        };
        // Text queues run about 80 bytes per job.
        let text_rows = || fairshare_base::memory::file_size(path) / 80;
        match format {
            PendingFormat::Parquet => {
                let mut groups = ParquetRowGroups::open(path, keep)?;
                if let Some(t) = tree_names {
                    groups = groups.with_names(t.clone());
                }
                fits(groups.rows())?;
                jobs.read_parquet(groups)?;
            }
            PendingFormat::Csv => {
                fits(text_rows())?;
                jobs.read_csv(path)?;
            }
            PendingFormat::SqueueJson => {
                fits(text_rows())?;
                jobs.read_squeue_json(path)?;
            }
        }
        Ok(jobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_is_told_by_the_first_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let detect = |bytes: &[u8]| {
            let path = dir.path().join("queue");
            std::fs::write(&path, bytes).unwrap();
            PendingFormat::detect(&path).unwrap()
        };
        assert_eq!(detect(b"PAR1\0\0"), PendingFormat::Parquet);
        assert_eq!(detect(b" \n\t{\"jobs\": []}"), PendingFormat::SqueueJson);
        assert_eq!(detect(b"job_id,user\n{"), PendingFormat::Csv);
        assert_eq!(detect(b""), PendingFormat::Csv);
    }
}
