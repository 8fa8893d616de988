//! The queue's columns ([`PendingJobs`]) and what every reader fills them from: a job as the
//! reader found it, checked and appended with its names interned.

use std::path::PathBuf;

use crate::config::tres::{Tres, read_kept_counts};
use fairshare_base::error::{Error, Result};
use fairshare_base::named::{Choice, Named};
use fairshare_base::read::interner::Interner;

/// Slurm's `NO_VAL`: a job without its own time limit takes the partition's MaxTime.
pub const NO_VAL: u32 = 0xffff_fffe;

/// Nice and site factor values Slurm accepts: within ±(NICE_OFFSET - 3).
pub(super) const NICE_RANGE: std::ops::RangeInclusive<i64> = -2_147_483_645..=2_147_483_645;

/// flux-accounting's default urgency.
pub const DEFAULT_URGENCY: u8 = 16;

/// A pending-jobs file format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PendingFormat {
    /// CSV with the canonical header.
    #[default]
    Csv,
    /// Parquet with the canonical columns.
    Parquet,
    /// `squeue --json`.
    SqueueJson,
}

/// The formats' names on the command line and in site files.
impl Named for PendingFormat {
    const CHOICES: &'static [Choice<Self>] = &[
        Choice::new(PendingFormat::Csv, "csv", ""),
        Choice::new(PendingFormat::Parquet, "parquet", ""),
        Choice::new(PendingFormat::SqueueJson, "squeue-json", ""),
    ];
}

/// One job as a reader found it.
pub(super) struct RawJob<'a> {
    pub(super) job_id: u64,
    pub(super) user: Names<'a>,
    pub(super) account: Names<'a>,
    pub(super) partition: Names<'a>,
    pub(super) qos: Names<'a>,
    pub(super) submit: i64,
    pub(super) accrue: Option<i64>,
    pub(super) min_nodes: u32,
    pub(super) cpus: u32,
    pub(super) time_limit: u32,
    pub(super) nice: i32,
    pub(super) site_factor: i32,
    pub(super) tres_req: TresReq<'a>,
    pub(super) urgency: u8,
}

/// A job's `tres_req` as a reader has it: text, or the kept counts already read (a Parquet
/// dictionary value is read once for all the jobs that share it).
#[derive(Clone, Copy)]
pub(super) enum TresReq<'a> {
    Text(&'a str),
    Read(&'a std::result::Result<Vec<u64>, String>),
}

/// Names as a reader has them: text (a comma list for partitions and QOS), or already interned.
#[derive(Clone, Copy)]
pub(super) enum Names<'a> {
    Text(&'a str),
    Ids(&'a [u32]),
}

impl Names<'_> {
    pub(super) fn is_empty(&self) -> bool {
        match self {
            Names::Text(t) => t.is_empty(),
            Names::Ids(ids) => ids.is_empty(),
        }
    }

    /// Appends the ids of these names to `out`, interning text; a name listed twice is kept
    /// once ([`keep_first_of_each`]), so every reader of a list (a Parquet dictionary's value
    /// included) sees one job row per name.
    pub(super) fn push_ids(&self, names: &mut Interner, out: &mut Vec<u32>) {
        match self {
            Names::Text(t) => {
                let from = out.len();
                for n in t.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    out.push(names.intern(n));
                }
                keep_first_of_each(out, from);
            }
            Names::Ids(ids) => out.extend_from_slice(ids),
        }
    }
}

/// The pending queue, column by column.
#[derive(Clone, Debug, Default)]
pub struct PendingJobs {
    /// The file read.
    pub source: PathBuf,
    /// User, account, partition and QOS names.
    pub names: Interner,
    /// Job ids.
    pub job_id: Vec<u64>,
    /// User name ids.
    pub user: Vec<u32>,
    /// Account name ids.
    pub account: Vec<u32>,
    /// Partitions of job `j`: `part_ids[part_offsets[j]..part_offsets[j + 1]]`.
    pub part_offsets: Vec<u32>,
    /// Partition name ids.
    pub part_ids: Vec<u32>,
    /// QOS of job `j`: `qos_ids[qos_offsets[j]..qos_offsets[j + 1]]` (empty: no QOS).
    pub qos_offsets: Vec<u32>,
    /// QOS name ids.
    pub qos_ids: Vec<u32>,
    /// Submit times (epoch seconds).
    pub submit_time: Vec<i64>,
    /// Accrue times; `None` when the job is not yet eligible.
    pub accrue_time: Vec<Option<i64>>,
    /// Minimum node counts.
    pub min_nodes: Vec<u32>,
    /// Requested CPUs.
    pub cpus: Vec<u32>,
    /// Time limits in minutes ([`NO_VAL`]: the partition's MaxTime).
    pub time_limit: Vec<u32>,
    /// Nice values.
    pub nice: Vec<i32>,
    /// Site factors.
    pub site_factor: Vec<i32>,
    /// flux urgency (16 by default).
    pub urgency: Vec<u8>,
    /// The TRES kept from `tres_req` (those that carry a priority weight).
    pub tres: Vec<Tres>,
    /// Requested counts of each kept TRES, one column per entry of `tres`.
    pub tres_req: Vec<Vec<u64>>,
    /// The 1-based line or row each job came from (for squeue JSON, the job's index plus one).
    pub line: Vec<u64>,
    /// The format read, which says what `line` counts.
    pub format: PendingFormat,
}

impl PendingJobs {
    /// Number of jobs.
    pub fn len(&self) -> usize {
        self.job_id.len()
    }

    /// True when the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.job_id.is_empty()
    }

    /// Where job `j` is: `file:line` (CSV), `file:row` (Parquet, rows counted from 1) or
    /// `file jobs[index]` (squeue JSON).
    pub fn location(&self, j: usize) -> String {
        match self.format {
            PendingFormat::SqueueJson => format!("{} jobs[{}]", self.source.display(), self.line[j] - 1),
            _ => format!("{}:{}", self.source.display(), self.line[j]),
        }
    }

    /// An input error about job `j`, naming the file and the job's line, row or index in it (and
    /// its id, for squeue JSON), as the reader's own errors do.
    pub fn error_at(&self, j: usize, message: impl std::fmt::Display) -> Error {
        let at = self.line[j];
        match self.format {
            PendingFormat::Csv => Error::input(&self.source, at, message.to_string()),
            PendingFormat::Parquet => Error::input(&self.source, at, format!("row {at}: {message}")),
            PendingFormat::SqueueJson => {
                Error::input(&self.source, None, format!("jobs[{}] (job {}): {message}", at - 1, self.job_id[j]))
            }
        }
    }

    /// Partitions of job `j`.
    pub fn partitions(&self, j: usize) -> &[u32] {
        &self.part_ids[self.part_offsets[j] as usize..self.part_offsets[j + 1] as usize]
    }

    /// QOS of job `j`.
    pub fn qos(&self, j: usize) -> &[u32] {
        &self.qos_ids[self.qos_offsets[j] as usize..self.qos_offsets[j + 1] as usize]
    }

    pub(super) fn push(&mut self, raw: RawJob<'_>, line: u64, kept: &mut KeptTres) -> Result<()> {
        let err = |m: String| Error::input(&self.source, line, m);
        if raw.user.is_empty() || raw.account.is_empty() || raw.partition.is_empty() {
            return Err(err("user, account and partition must not be empty".into()));
        }
        match raw.tres_req {
            TresReq::Text(t) => read_kept_counts(t, &self.tres, &kept.names, &mut kept.counts),
            TresReq::Read(Ok(counts)) => {
                kept.counts.copy_from_slice(counts);
                Ok(())
            }
            TresReq::Read(Err(m)) => Err(m.clone()),
        }
        .map_err(|m| err(format!("tres_req: {m}")))?;
        self.job_id.push(raw.job_id);
        let (user_at, account_at) = (self.user.len(), self.account.len());
        raw.user.push_ids(&mut self.names, &mut self.user);
        raw.account.push_ids(&mut self.names, &mut self.account);
        if self.user.len() != user_at + 1 || self.account.len() != account_at + 1 {
            self.user.truncate(user_at);
            self.account.truncate(account_at);
            return Err(err("user and account must be single names".into()));
        }
        let part_at = self.part_ids.len();
        raw.partition.push_ids(&mut self.names, &mut self.part_ids);
        keep_first_of_each(&mut self.part_ids, part_at);
        self.part_offsets.push(self.part_ids.len() as u32);
        let qos_at = self.qos_ids.len();
        raw.qos.push_ids(&mut self.names, &mut self.qos_ids);
        keep_first_of_each(&mut self.qos_ids, qos_at);
        self.qos_offsets.push(self.qos_ids.len() as u32);
        self.submit_time.push(raw.submit);
        self.accrue_time.push(raw.accrue);
        self.min_nodes.push(raw.min_nodes);
        self.cpus.push(raw.cpus);
        self.time_limit.push(raw.time_limit);
        self.nice.push(raw.nice);
        self.site_factor.push(raw.site_factor);
        self.urgency.push(raw.urgency);
        for (col, &c) in self.tres_req.iter_mut().zip(&kept.counts) {
            col.push(c);
        }
        self.line.push(line);
        Ok(())
    }

    /// An empty queue of `source` keeping the counts of `tres`.
    pub(super) fn empty(source: PathBuf, tres: Vec<Tres>) -> PendingJobs {
        PendingJobs {
            source,
            part_offsets: vec![0],
            qos_offsets: vec![0],
            tres_req: vec![Vec::new(); tres.len()],
            tres,
            ..Default::default()
        }
    }
}

/// Drops the repeats among `ids[from..]`, keeping each name's first place: slurmctld keeps a
/// partition (or QOS) named twice in a job's list once (`batch,batch` is `batch`), so a job never
/// has two rows with the same (partition, QOS). Lists are a few names long: a quadratic scan.
fn keep_first_of_each(ids: &mut Vec<u32>, from: usize) {
    let mut end = from;
    for i in from..ids.len() {
        let id = ids[i];
        if !ids[from..end].contains(&id) {
            ids[end] = id;
            end += 1;
        }
    }
    ids.truncate(end);
}

/// The TRES the scorer needs, as text, and a reusable buffer for one job's counts.
pub(super) struct KeptTres {
    pub(super) names: Vec<String>,
    pub(super) counts: Vec<u64>,
}

impl KeptTres {
    pub(super) fn new(keep: &[Tres]) -> Self {
        KeptTres { names: keep.iter().map(Tres::to_string).collect(), counts: vec![0; keep.len()] }
    }
}

#[cfg(test)]
mod tests {
    use super::keep_first_of_each;

    #[test]
    fn repeated_names_are_kept_once_in_first_order() {
        let mut ids = vec![9, 3, 1, 3, 2, 1, 3];
        keep_first_of_each(&mut ids, 1);
        assert_eq!(ids, [9, 3, 1, 2]);
        let mut single = vec![4, 4];
        keep_first_of_each(&mut single, 0);
        assert_eq!(single, [4]);
    }
}
