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

use std::borrow::Cow;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::{cast, cast_with_options};
use arrow::datatypes::DataType;
use rayon::prelude::*;
use std::sync::Arc;

use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};

use super::text::{Interner, parse_timestamp, whole_numbers};
use crate::config::time::{TimeLimit, parse_time};
use crate::config::tres::{Tres, read_kept_counts};
use crate::error::{Error, Result};
use crate::io::parquet_columns::{Bad, STRICT, Text, holds_text, numbers, strings, text};
use crate::io::row_groups::{first_rows, group_reader, guarded, open_checked};
use crate::io::text::strip_zero_fraction;
use crate::io::text::{recycle, split_fields};

/// Slurm's `NO_VAL`: a job without its own time limit takes the partition's MaxTime.
pub const NO_VAL: u32 = 0xffff_fffe;

/// Nice and site factor values Slurm accepts: within ±(NICE_OFFSET - 3).
const NICE_RANGE: std::ops::RangeInclusive<i64> = -2_147_483_645..=2_147_483_645;

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

impl PendingFormat {
    /// Tells the format of `path` from its first bytes.
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn detect(path: &Path) -> Result<Self> {
        let head = crate::io::source::head(path, 64)?;
        Ok(if head.starts_with(b"PAR1") {
            PendingFormat::Parquet
        } else if starts_json(&head) {
            PendingFormat::SqueueJson
        } else {
            PendingFormat::Csv
        })
    }
}

/// Whether `head` (the first bytes of an input) opens a JSON object.
fn starts_json(head: &[u8]) -> bool {
    head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// One job as a reader found it.
struct RawJob<'a> {
    job_id: u64,
    user: Names<'a>,
    account: Names<'a>,
    partition: Names<'a>,
    qos: Names<'a>,
    submit: i64,
    accrue: Option<i64>,
    min_nodes: u32,
    cpus: u32,
    time_limit: u32,
    nice: i32,
    site_factor: i32,
    tres_req: TresReq<'a>,
    urgency: u8,
}

/// A job's `tres_req` as a reader has it: text, or the kept counts already read (a Parquet
/// dictionary value is read once for all the jobs that share it).
#[derive(Clone, Copy)]
enum TresReq<'a> {
    Text(&'a str),
    Read(&'a std::result::Result<Vec<u64>, String>),
}

/// Names as a reader has them: text (a comma list for partitions and QOS), or already interned.
#[derive(Clone, Copy)]
enum Names<'a> {
    Text(&'a str),
    Ids(&'a [u32]),
}

impl Names<'_> {
    fn is_empty(&self) -> bool {
        match self {
            Names::Text(t) => t.is_empty(),
            Names::Ids(ids) => ids.is_empty(),
        }
    }

    /// Appends the ids of these names to `out`, interning text.
    fn push_ids(&self, names: &mut Interner, out: &mut Vec<u32>) {
        match self {
            Names::Text(t) => {
                for n in t.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    out.push(names.intern(n));
                }
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

    /// Reads a pending-jobs file, keeping the requested counts of the TRES in `keep`.
    ///
    /// # Errors
    /// An unreadable file, a missing column, or a bad value, naming the line or row.
    pub fn read(path: &Path, format: Option<PendingFormat>, keep: &[Tres]) -> Result<Self> {
        let format = match format {
            Some(f) => f,
            None => PendingFormat::detect(path)?,
        };
        let mut jobs = PendingJobs { format, ..PendingJobs::empty(path.to_path_buf(), keep.to_vec()) };
        let mut kept = KeptTres::new(keep);
        let fits =
            |rows: u64| crate::memory::ensure_fits(path, "this queue", rows * crate::memory::BYTES_PER_PENDING_JOB);
        // Text queues run about 80 bytes per job.
        let text_rows = || crate::memory::file_size(path) / 80;
        match format {
            PendingFormat::Parquet => {
                let waves = ParquetWaves::open(path, keep)?;
                fits(waves.rows())?;
                jobs.read_parquet(waves)?;
            }
            PendingFormat::Csv => {
                fits(text_rows())?;
                jobs.read_csv(path, &mut kept)?;
            }
            PendingFormat::SqueueJson => {
                fits(text_rows())?;
                jobs.read_squeue_json(path, &mut kept)?;
            }
        }
        Ok(jobs)
    }

    fn push(&mut self, raw: RawJob<'_>, line: u64, kept: &mut KeptTres) -> Result<()> {
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
        raw.partition.push_ids(&mut self.names, &mut self.part_ids);
        self.part_offsets.push(self.part_ids.len() as u32);
        raw.qos.push_ids(&mut self.names, &mut self.qos_ids);
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

    fn read_csv(&mut self, path: &Path, kept: &mut KeptTres) -> Result<()> {
        let mut reader = BufReader::with_capacity(1 << 20, crate::io::source::open(path)?);
        let mut line = String::new();
        let mut buffer: Vec<Cow<'static, str>> = Vec::new();
        let mut line_no = 0u64;
        let mut header: Option<Columns> = None;
        loop {
            let n = crate::io::source::read_line(&mut reader, &mut line, path, line_no + 1)?;
            if n == 0 {
                break;
            }
            line_no += 1;
            let text = line.trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() {
                continue;
            }
            let err = |m: &str| Error::input(path, line_no, m.to_string());
            let mut fields = recycle(std::mem::take(&mut buffer));
            split_fields(text, &mut fields).map_err(err)?;
            let Some(cols) = &header else {
                let names: Vec<String> =
                    fields.iter().map(|f| f.trim().trim_start_matches('\u{feff}').to_string()).collect();
                header = Some(Columns::resolve(&names).map_err(|m| err(&m))?);
                continue;
            };
            if fields.len() != cols.width {
                return Err(err(&format!("expected {} fields, found {}", cols.width, fields.len())));
            }
            let raw = cols.raw(|i| Cell::Text(&fields[i])).map_err(|m| err(&m))?;
            self.push(raw, line_no, kept)?;
            buffer = recycle(fields);
        }
        if header.is_none() {
            return Err(Error::input(path, None, "empty file: expected a header starting with job_id"));
        }
        Ok(())
    }

    fn read_parquet(&mut self, mut waves: ParquetWaves) -> Result<()> {
        self.reserve(waves.rows() as usize);
        // Each row group's chunk has its own name ids; appended in file order, names get the ids a
        // sequential read gives them and the first bad row in the file is the one reported.
        while let Some(chunks) = waves.next_chunks() {
            for chunk in chunks {
                self.append(chunk?);
            }
        }
        Ok(())
    }

    /// An empty queue of `source` keeping the counts of `tres`.
    fn empty(source: PathBuf, tres: Vec<Tres>) -> PendingJobs {
        PendingJobs {
            source,
            part_offsets: vec![0],
            qos_offsets: vec![0],
            tres_req: vec![Vec::new(); tres.len()],
            tres,
            ..Default::default()
        }
    }

    /// Reads one record batch; `row` counts the rows before it and is advanced past it.
    fn push_batch(&mut self, path: &Path, batch: &RecordBatch, row: &mut u64, kept: &mut KeptTres) -> Result<()> {
        let names: Vec<String> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
        let cols = Columns::resolve(&names).map_err(|m| Error::input(path, None, m))?;
        let name_columns = [cols.user, cols.account, cols.partition, cols.qos];
        let number_columns = [
            cols.job_id,
            cols.submit,
            cols.accrue,
            cols.min_nodes,
            cols.cpus,
            cols.time_limit,
            cols.nice,
            cols.site_factor,
        ];
        // Only the columns read are converted: an extra column may hold anything.
        let columns: Vec<Column> = batch
            .columns()
            .iter()
            .zip(&names)
            .enumerate()
            .map(|(c, (a, name))| match c {
                c if c == cols.tres_req => Column::tres(a, name, &self.tres, &kept.names),
                c if name_columns.contains(&c) => Column::names(a, name, &mut self.names),
                c if number_columns.contains(&c) || cols.urgency == Some(c) => Column::from_array(a, name),
                _ => Ok(Column::Unused),
            })
            .collect::<std::result::Result<_, Bad>>()
            .map_err(|b| b.error(path, *row))?;
        if self.push_columns(&cols, &columns, batch.num_rows(), *row) {
            *row += batch.num_rows() as u64;
            return Ok(());
        }
        for i in 0..batch.num_rows() {
            *row += 1;
            let line = *row;
            let raw =
                cols.raw(|c| columns[c].cell(i)).map_err(|m| Error::input(path, line, format!("row {line}: {m}")))?;
            self.push(raw, line, kept)?;
        }
        Ok(())
    }

    /// Appends a batch of typed columns a column at a time, with no cell per value; false, with
    /// nothing appended, when a column is text or some value needs the row path, which then reports
    /// the first bad row as it does for any input.
    fn push_columns(&mut self, cols: &Columns, columns: &[Column], n: usize, rows_before: u64) -> bool {
        let jobs = self.len();
        let pushed = self.try_push_columns(cols, columns, n, rows_before).is_some();
        if !pushed {
            self.truncate(jobs);
        }
        pushed
    }

    fn try_push_columns(&mut self, cols: &Columns, columns: &[Column], n: usize, rows_before: u64) -> Option<()> {
        const U32: std::ops::RangeInclusive<i64> = 0..=u32::MAX as i64;
        let required = |c: usize| match &columns[c] {
            Column::Int(a) if a.null_count() == 0 => Some(a.values()),
            _ => None,
        };
        let job_id = required(cols.job_id)?;
        if job_id.iter().any(|&v| v < 0) {
            return None;
        }
        self.job_id.extend(job_id.iter().map(|&v| v as u64));
        let single = |c: usize, out: &mut Vec<u32>| -> Option<()> {
            let Column::Names(keys, lists) = &columns[c] else { return None };
            if keys.null_count() > 0 || lists.iter().any(|l| l.len() != 1) {
                return None;
            }
            out.extend(keys.values().iter().map(|&k| lists[k as usize][0]));
            Some(())
        };
        single(cols.user, &mut self.user)?;
        single(cols.account, &mut self.account)?;
        let lists = |c: usize, ids: &mut Vec<u32>, offsets: &mut Vec<u32>, required: bool| -> Option<()> {
            let Column::Names(keys, lists) = &columns[c] else { return None };
            for i in 0..n {
                match keys.is_valid(i).then(|| &lists[keys.value(i) as usize]) {
                    Some(l) if !l.is_empty() => ids.extend_from_slice(l),
                    _ if required => return None,
                    _ => {}
                }
                offsets.push(ids.len() as u32);
            }
            Some(())
        };
        lists(cols.partition, &mut self.part_ids, &mut self.part_offsets, true)?;
        lists(cols.qos, &mut self.qos_ids, &mut self.qos_offsets, false)?;
        self.submit_time.extend_from_slice(required(cols.submit)?);
        // Slurm's accrue time 0 means "not yet eligible".
        let Column::Int(accrue) = &columns[cols.accrue] else { return None };
        self.accrue_time.extend(accrue.iter().map(|t| t.filter(|&t| t != 0)));
        self.min_nodes.extend(in_range(&columns[cols.min_nodes], 1, U32)?.map(|v| v as u32));
        self.cpus.extend(in_range(&columns[cols.cpus], 0, U32)?.map(|v| v as u32));
        self.time_limit.extend(in_range(&columns[cols.time_limit], NO_VAL.into(), U32)?.map(|v| v as u32));
        self.nice.extend(in_range(&columns[cols.nice], 0, NICE_RANGE)?.map(|v| v as i32));
        self.site_factor.extend(in_range(&columns[cols.site_factor], 0, NICE_RANGE)?.map(|v| v as i32));
        match cols.urgency {
            Some(c) => self.urgency.extend(in_range(&columns[c], DEFAULT_URGENCY.into(), 0..=31)?.map(|v| v as u8)),
            None => self.urgency.resize(self.urgency.len() + n, DEFAULT_URGENCY),
        }
        let Column::Tres(keys, counts) = &columns[cols.tres_req] else { return None };
        let counts: Vec<&[u64]> = counts.iter().map(|c| c.as_deref().ok()).collect::<Option<_>>()?;
        for (t, col) in self.tres_req.iter_mut().enumerate() {
            // A null request asks for nothing.
            col.extend((0..n).map(|i| if keys.is_valid(i) { counts[keys.value(i) as usize][t] } else { 0 }));
        }
        self.line.extend(rows_before + 1..=rows_before + n as u64);
        Some(())
    }

    /// Drops every job from `jobs` on.
    fn truncate(&mut self, jobs: usize) {
        self.part_ids.truncate(self.part_offsets[jobs] as usize);
        self.part_offsets.truncate(jobs + 1);
        self.qos_ids.truncate(self.qos_offsets[jobs] as usize);
        self.qos_offsets.truncate(jobs + 1);
        self.job_id.truncate(jobs);
        self.user.truncate(jobs);
        self.account.truncate(jobs);
        self.submit_time.truncate(jobs);
        self.accrue_time.truncate(jobs);
        self.min_nodes.truncate(jobs);
        self.cpus.truncate(jobs);
        self.time_limit.truncate(jobs);
        self.nice.truncate(jobs);
        self.site_factor.truncate(jobs);
        self.urgency.truncate(jobs);
        for col in &mut self.tres_req {
            col.truncate(jobs);
        }
        self.line.truncate(jobs);
    }

    /// Appends `chunk`, read from a later part of the same file, mapping its name ids to ours.
    fn append(&mut self, chunk: PendingJobs) {
        let ids: Vec<u32> = (0..chunk.names.len() as u32).map(|i| self.names.intern(chunk.names.name(i))).collect();
        fn map<'a>(ids: &'a [u32], v: &'a [u32]) -> impl Iterator<Item = u32> + 'a {
            v.iter().map(|&i| ids[i as usize])
        }
        self.job_id.extend_from_slice(&chunk.job_id);
        self.user.extend(map(&ids, &chunk.user));
        self.account.extend(map(&ids, &chunk.account));
        let (parts, qos) = (self.part_ids.len() as u32, self.qos_ids.len() as u32);
        self.part_ids.extend(map(&ids, &chunk.part_ids));
        self.part_offsets.extend(chunk.part_offsets[1..].iter().map(|o| o + parts));
        self.qos_ids.extend(map(&ids, &chunk.qos_ids));
        self.qos_offsets.extend(chunk.qos_offsets[1..].iter().map(|o| o + qos));
        self.submit_time.extend_from_slice(&chunk.submit_time);
        self.accrue_time.extend_from_slice(&chunk.accrue_time);
        self.min_nodes.extend_from_slice(&chunk.min_nodes);
        self.cpus.extend_from_slice(&chunk.cpus);
        self.time_limit.extend_from_slice(&chunk.time_limit);
        self.nice.extend_from_slice(&chunk.nice);
        self.site_factor.extend_from_slice(&chunk.site_factor);
        self.urgency.extend_from_slice(&chunk.urgency);
        for (col, part) in self.tres_req.iter_mut().zip(&chunk.tres_req) {
            col.extend_from_slice(part);
        }
        self.line.extend_from_slice(&chunk.line);
    }

    fn reserve(&mut self, n: usize) {
        self.job_id.reserve(n);
        self.user.reserve(n);
        self.account.reserve(n);
        self.part_offsets.reserve(n);
        self.part_ids.reserve(n);
        self.qos_offsets.reserve(n);
        self.submit_time.reserve(n);
        self.accrue_time.reserve(n);
        self.min_nodes.reserve(n);
        self.cpus.reserve(n);
        self.time_limit.reserve(n);
        self.nice.reserve(n);
        self.site_factor.reserve(n);
        self.urgency.reserve(n);
        self.line.reserve(n);
        for c in &mut self.tres_req {
            c.reserve(n);
        }
    }

    fn read_squeue_json(&mut self, path: &Path, kept: &mut KeptTres) -> Result<()> {
        // A JSON document may be one line of any length: checked by its first byte instead, so
        // that an endless stream of anything else stops at once.
        let head = crate::io::source::head(path, 64)?;
        if head.iter().any(|b| !b.is_ascii_whitespace()) && !starts_json(&head) {
            return Err(Error::input(path, 1, "not JSON: expected the output of `squeue --json`"));
        }
        let text = crate::io::source::read_text(path, None)?;
        let doc: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| Error::input(path, e.line() as u64, format!("not JSON: {e}")))?;
        let Some(jobs) = doc.get("jobs").and_then(|j| j.as_array()) else {
            return Err(Error::input(path, None, "no `jobs` array: expected the output of `squeue --json`"));
        };
        for (i, job) in jobs.iter().enumerate() {
            let mut job = JsonJob::new(path, i, job)?;
            let state = "a string or a list of strings";
            // squeue lists every job; only the pending ones are scored.
            match job.text("job_state", state)? {
                Some(s) if s.contains("PENDING") => {}
                Some(_) => continue,
                None => return Err(job.err(format!("no job_state: expected {state}"))),
            }
            let job_id = job.required("job_id", "a whole number", 0..=i64::MAX)? as u64;
            job.at = format!("jobs[{i}] (job {job_id})");
            let name = |key: &str| job.text(key, "a string");
            let required_name = |key: &str| name(key)?.ok_or_else(|| job.err(format!("no {key}: expected a string")));
            let (user, account, partition) =
                (required_name("user_name")?, required_name("account")?, required_name("partition")?);
            let (qos, tres) = (name("qos")?.unwrap_or_default(), name("tres_req_str")?.unwrap_or_default());
            let time_limit = match job.number("time_limit", "whole minutes")? {
                JsonNumber::Unset | JsonNumber::Infinite => NO_VAL,
                _ => job.ranged("time_limit", "whole minutes", 0, 0..=u32::MAX.into())? as u32,
            };
            let raw = RawJob {
                job_id,
                user: Names::Text(&user),
                account: Names::Text(&account),
                partition: Names::Text(&partition),
                qos: Names::Text(&qos),
                submit: job.required("submit_time", "whole seconds", i64::MIN..=i64::MAX)?,
                // Slurm's accrue time 0 means "not yet eligible".
                accrue: Some(job.ranged("accrue_time", "whole seconds", 0, i64::MIN..=i64::MAX)?).filter(|&t| t > 0),
                min_nodes: job.ranged("node_count", "a whole number", 1, 0..=u32::MAX.into())? as u32,
                cpus: job.ranged("cpus", "a whole number", 0, 0..=u32::MAX.into())? as u32,
                time_limit,
                nice: job.ranged("nice", "a whole number", 0, NICE_RANGE)? as i32,
                site_factor: job.ranged("site_factor", "a whole number", 0, NICE_RANGE)? as i32,
                tres_req: TresReq::Text(&tres),
                urgency: DEFAULT_URGENCY,
            };
            // The job's index names it: a JSON document has no useful line numbers.
            self.push(raw, i as u64 + 1, kept).map_err(|e| match e {
                Error::Input { message, .. } => job.err(message),
                e => e,
            })?;
        }
        Ok(())
    }
}

/// A Parquet queue read a wave of row groups at a time, one row group per thread, for commands
/// that handle each job on its own and need not hold the whole queue (`score`).
///
/// # Example
/// ```no_run
/// use fairshare::jobs::ParquetWaves;
/// let mut waves = ParquetWaves::open("pending.parquet".as_ref(), &[])?;
/// while let Some(jobs) = waves.next_wave() {
///     println!("{} jobs", jobs?.len());
/// }
/// # Ok::<(), fairshare::Error>(())
/// ```
pub struct ParquetWaves {
    path: PathBuf,
    metadata: ArrowReaderMetadata,
    first_row: Vec<u64>,
    tres: Vec<Tres>,
    next: usize,
}

impl ParquetWaves {
    /// Reads the footer of `path`; the jobs will keep the counts of the TRES in `keep`.
    ///
    /// # Errors
    /// An unreadable file or one that is not Parquet.
    pub fn open(path: &Path, keep: &[Tres]) -> Result<Self> {
        guarded(path, || {
            let (_, plain) = open_checked(path, ArrowReaderOptions::new())?;
            // Read the name and TRES columns as dictionaries: Parquet stores them dictionary-encoded,
            // and each distinct value is then interned or read once instead of once per job.
            let fields: Vec<arrow::datatypes::FieldRef> = plain
                .schema()
                .fields()
                .iter()
                .map(|f| {
                    let dict_col = matches!(f.name().as_str(), "user" | "account" | "partition" | "qos" | "tres_req");
                    if dict_col && matches!(f.data_type(), DataType::Utf8 | DataType::LargeUtf8) {
                        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(f.data_type().clone()));
                        Arc::new(f.as_ref().clone().with_data_type(dict))
                    } else {
                        f.clone()
                    }
                })
                .collect();
            // The footer is read once; only the Arrow schema is re-derived with the hint.
            let options = ArrowReaderOptions::new().with_schema(Arc::new(arrow::datatypes::Schema::new(fields)));
            let metadata =
                ArrowReaderMetadata::try_new(plain.metadata().clone(), options).map_err(|e| Error::format(path, e))?;
            let first_row = first_rows(&metadata);
            Ok(ParquetWaves { path: path.to_path_buf(), metadata, first_row, tres: keep.to_vec(), next: 0 })
        })
    }

    /// Jobs in the file.
    pub fn rows(&self) -> u64 {
        self.metadata.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// The next wave's jobs, its row groups joined in file order; `None` past the last.
    ///
    /// # Errors
    /// A missing column or a bad value, naming the row; the first bad row of the wave is the one
    /// named.
    pub fn next_wave(&mut self) -> Option<Result<PendingJobs>> {
        let mut chunks = self.next_chunks()?.into_iter();
        let mut jobs = match chunks.next()? {
            Ok(first) => first,
            Err(e) => return Some(Err(e)),
        };
        for chunk in chunks {
            match chunk {
                Ok(c) => jobs.append(c),
                Err(e) => return Some(Err(e)),
            }
        }
        Some(Ok(jobs))
    }

    /// The next wave's row groups, decoded across the threads, one queue each in file order.
    fn next_chunks(&mut self) -> Option<Vec<Result<PendingJobs>>> {
        let groups = self.metadata.metadata().row_groups();
        if self.next >= groups.len() {
            return None;
        }
        let wave = self.next..(self.next + rayon::current_num_threads().max(1)).min(groups.len());
        self.next = wave.end;
        Some(wave.into_par_iter().map(|g| guarded(&self.path, || self.read_group(g))).collect())
    }

    fn read_group(&self, g: usize) -> Result<PendingJobs> {
        let path = &self.path;
        let mut chunk =
            PendingJobs { format: PendingFormat::Parquet, ..PendingJobs::empty(path.clone(), self.tres.clone()) };
        chunk.reserve(self.metadata.metadata().row_group(g).num_rows().max(0) as usize);
        let mut kept = KeptTres::new(&self.tres);
        let reader = group_reader(path, &self.metadata, g, 1 << 20)?;
        let mut row = self.first_row[g];
        for batch in reader {
            chunk.push_batch(path, &batch.map_err(|e| Error::format(path, e))?, &mut row, &mut kept)?;
        }
        Ok(chunk)
    }
}

/// The TRES the scorer needs, as text, and a reusable buffer for one job's counts.
struct KeptTres {
    names: Vec<String>,
    counts: Vec<u64>,
}

impl KeptTres {
    fn new(keep: &[Tres]) -> Self {
        KeptTres { names: keep.iter().map(Tres::to_string).collect(), counts: vec![0; keep.len()] }
    }
}

/// One value of a job row: text (CSV, JSON, string columns) or an integer (typed Parquet columns).
#[derive(Clone, Copy)]
enum Cell<'a> {
    Text(&'a str),
    Int(i64),
    /// A dictionary-encoded name column, already interned.
    Ids(&'a [u32]),
    /// A dictionary-encoded `tres_req`, already read.
    Tres(&'a std::result::Result<Vec<u64>, String>),
    Null,
}

/// A Parquet column in the form the reader consumes it.
enum Column {
    Text(arrow::array::StringArray),
    Int(arrow::array::Int64Array),
    /// Dictionary keys and, per dictionary value, its interned names (a comma list may hold several).
    Names(arrow::array::Int32Array, Vec<Vec<u32>>),
    /// Dictionary keys and, per dictionary value, the kept TRES counts it requests.
    Tres(arrow::array::Int32Array, Vec<std::result::Result<Vec<u64>, String>>),
    /// A column the reader does not read.
    Unused,
}

impl Column {
    /// Column `name` of numbers: integers, timestamps (in seconds) and whole floats are numbers;
    /// text is kept for the row parse.
    ///
    /// # Errors
    /// Text that is not UTF-8, or a column of a type that holds neither numbers nor text.
    fn from_array(a: &ArrayRef, name: &str) -> std::result::Result<Self, Bad> {
        let a = &numbers(a, name)?;
        let arrow_err = |e| Bad::arrow(name, e);
        Ok(match a.data_type() {
            DataType::Timestamp(..) => {
                let secs =
                    cast(a, &DataType::Timestamp(arrow::datatypes::TimeUnit::Second, None)).map_err(arrow_err)?;
                let secs = cast(&secs, &DataType::Int64).map_err(arrow_err)?;
                Column::Int(secs.as_primitive::<arrow::datatypes::Int64Type>().clone())
            }
            // Unsigned values beyond i64 go as text, so the row check names the value and the
            // range, as it does for a CSV (a plain cast would make them nulls: defaults).
            t if t.is_integer() => match cast_with_options(a, &DataType::Int64, &STRICT) {
                Ok(ints) => Column::Int(ints.as_primitive::<arrow::datatypes::Int64Type>().clone()),
                Err(_) => Column::Text(strings(a, name)?),
            },
            // Whole floats are integers with gaps as pandas stores them. With a fraction among
            // them the column goes as text, whole values written as integers, so the row check
            // names the fraction.
            t if t.is_floating() => {
                let f = cast(a, &DataType::Float64).map_err(arrow_err)?;
                let f = f.as_primitive::<arrow::datatypes::Float64Type>();
                match whole_numbers(f) {
                    Ok(ints) => Column::Int(ints),
                    Err(_) => Column::Text(
                        f.iter()
                            .map(|v| v.map(|v| if v.fract() == 0.0 { format!("{v:.0}") } else { v.to_string() }))
                            .collect(),
                    ),
                }
            }
            t if holds_text(t) => Column::Text(strings(a, name)?),
            t => return Err(Bad::column_type(name, t, "a number or text")),
        })
    }

    /// Column `name` of names: a dictionary's values are each interned once, so rows carry ids
    /// without hashing; plain text is kept for the row path.
    ///
    /// # Errors
    /// As [`text`].
    fn names(a: &ArrayRef, name: &str, names: &mut Interner) -> std::result::Result<Self, Bad> {
        Ok(match text(a, name)? {
            Text::Plain(values) => Column::Text(values),
            Text::Dict(keys, values) => {
                let lists = (0..values.len())
                    .map(|v| {
                        let mut ids = Vec::new();
                        if values.is_valid(v) {
                            Names::Text(values.value(v)).push_ids(names, &mut ids);
                        }
                        ids
                    })
                    .collect();
                Column::Names(keys, lists)
            }
        })
    }

    /// Column `name` of `tres_req`: each value of a dictionary is read once; plain text is kept
    /// for the row path.
    ///
    /// # Errors
    /// As [`text`].
    fn tres(a: &ArrayRef, name: &str, kept: &[Tres], names: &[String]) -> std::result::Result<Self, Bad> {
        Ok(match text(a, name)? {
            Text::Plain(values) => Column::Text(values),
            Text::Dict(keys, values) => {
                let counts = (0..values.len())
                    .map(|v| {
                        let mut out = vec![0; kept.len()];
                        let text = if values.is_valid(v) { values.value(v).trim() } else { "" };
                        read_kept_counts(text, kept, names, &mut out).map(|()| out)
                    })
                    .collect();
                Column::Tres(keys, counts)
            }
        })
    }

    fn cell(&self, i: usize) -> Cell<'_> {
        match self {
            Column::Tres(keys, counts) if keys.is_valid(i) => Cell::Tres(&counts[keys.value(i) as usize]),
            Column::Text(a) if a.is_valid(i) => Cell::Text(a.value(i)),
            Column::Int(a) if a.is_valid(i) => Cell::Int(a.value(i)),
            Column::Names(keys, lists) if keys.is_valid(i) => Cell::Ids(&lists[keys.value(i) as usize]),
            _ => Cell::Null,
        }
    }
}

/// The values of an integer column, `default` for nulls; `None` when the column is not integers or
/// a value is outside `range`.
fn in_range(
    col: &Column,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
) -> Option<impl Iterator<Item = i64> + '_> {
    let Column::Int(a) = col else { return None };
    let values = a.values();
    let fits = match a.nulls() {
        None => values.iter().all(|v| range.contains(v)),
        Some(nulls) => values.iter().zip(nulls.iter()).all(|(v, valid)| !valid || range.contains(v)),
    };
    fits.then(|| a.iter().map(move |v| v.unwrap_or(default)))
}

/// One entry of `squeue --json`'s `jobs`, read field by field. Its errors name the file and the
/// entry (`jobs[3]`, then `jobs[3] (job 17)` once the id is read), the field, its value and what
/// was expected: a job with a missing or mistyped field is refused, never read as empty.
struct JsonJob<'a> {
    path: &'a Path,
    fields: &'a serde_json::Map<String, serde_json::Value>,
    /// How errors name the job.
    at: String,
}

/// A number in squeue's JSON: plain, or data_parser's `{"set": true, "infinite": false, "number":
/// N}` (`set: false` is Slurm's NO_VAL: unset; `infinite` wins over the rest). `null`, which the
/// data_parser's complex mode writes for NO_VAL, is unset too.
enum JsonNumber {
    Unset,
    Infinite,
    Whole(i128),
}

impl<'a> JsonJob<'a> {
    /// Entry `index`, which must be an object.
    fn new(path: &'a Path, index: usize, job: &'a serde_json::Value) -> Result<Self> {
        match job.as_object() {
            Some(fields) => Ok(JsonJob { path, fields, at: format!("jobs[{index}]") }),
            None => Err(Error::input(path, None, format!("jobs[{index}]: expected an object, found {}", shown(job)))),
        }
    }

    fn err(&self, message: impl std::fmt::Display) -> Error {
        Error::input(self.path, None, format!("{}: {message}", self.at))
    }

    /// `{key} {value}: expected {what}`.
    fn wrong(&self, key: &str, what: &str) -> Error {
        self.err(format!("{key} {}: expected {what}", self.fields.get(key).map_or_else(String::new, shown)))
    }

    /// A number field; unset when absent.
    fn number(&self, key: &str, what: &str) -> Result<JsonNumber> {
        let Some(v) = self.fields.get(key) else { return Ok(JsonNumber::Unset) };
        let whole = |n: &serde_json::Number| {
            n.as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                // A whole float (`1.0`, as some tools write every number) loses nothing.
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 2f64.powi(64)).map(|f| f as i128))
        };
        let number = match v {
            serde_json::Value::Null => Some(JsonNumber::Unset),
            serde_json::Value::Number(n) => whole(n).map(JsonNumber::Whole),
            serde_json::Value::Object(o) => match (o.get("set"), o.get("infinite"), o.get("number")) {
                (_, Some(serde_json::Value::Bool(true)), _) => Some(JsonNumber::Infinite),
                (Some(serde_json::Value::Bool(false)), _, _) => Some(JsonNumber::Unset),
                (_, _, Some(serde_json::Value::Number(n))) => whole(n).map(JsonNumber::Whole),
                _ => None,
            },
            _ => None,
        };
        number.ok_or_else(|| self.wrong(key, what))
    }

    /// A whole number field in `range`, `default` when unset.
    fn ranged(&self, key: &str, what: &str, default: i64, range: std::ops::RangeInclusive<i64>) -> Result<i64> {
        match self.number(key, what)? {
            JsonNumber::Unset => Ok(default),
            JsonNumber::Infinite => Err(self.wrong(key, what)),
            JsonNumber::Whole(n) => i64::try_from(n)
                .ok()
                .filter(|n| range.contains(n))
                .ok_or_else(|| self.err(format!("{key} {n} is not in {range:?}"))),
        }
    }

    /// A whole number field that must be present and set.
    fn required(&self, key: &str, what: &str, range: std::ops::RangeInclusive<i64>) -> Result<i64> {
        match self.number(key, what)? {
            JsonNumber::Whole(_) => self.ranged(key, what, 0, range),
            _ if !self.fields.contains_key(key) => Err(self.err(format!("no {key}: expected {what}"))),
            _ => Err(self.wrong(key, what)),
        }
    }

    /// A text field: a string, or a list of strings joined by commas (`job_state: ["PENDING"]`);
    /// `None` when absent or null.
    fn text(&self, key: &str, what: &str) -> Result<Option<String>> {
        match self.fields.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str())
                .collect::<Option<Vec<_>>>()
                .map(|parts| Some(parts.join(",")))
                .ok_or_else(|| self.wrong(key, what)),
            Some(_) => Err(self.wrong(key, what)),
        }
    }
}

/// A JSON value as compact text for a message, cut short when long.
fn shown(v: &serde_json::Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// Column positions of the canonical header.
struct Columns {
    width: usize,
    job_id: usize,
    user: usize,
    account: usize,
    partition: usize,
    qos: usize,
    submit: usize,
    accrue: usize,
    min_nodes: usize,
    cpus: usize,
    time_limit: usize,
    nice: usize,
    site_factor: usize,
    tres_req: usize,
    urgency: Option<usize>,
}

impl Columns {
    fn resolve(names: &[String]) -> Result<Self, String> {
        let find = |n: &str| {
            names.iter().position(|h| h == n).ok_or_else(|| {
                format!(
                    "missing column {n:?}: the header must have job_id,user,account,partition,qos,submit_time,\
                     accrue_time,min_nodes,cpus,time_limit,nice,site_factor,tres_req"
                )
            })
        };
        Ok(Columns {
            width: names.len(),
            job_id: find("job_id")?,
            user: find("user")?,
            account: find("account")?,
            partition: find("partition")?,
            qos: find("qos")?,
            submit: find("submit_time")?,
            accrue: find("accrue_time")?,
            min_nodes: find("min_nodes")?,
            cpus: find("cpus")?,
            time_limit: find("time_limit")?,
            nice: find("nice")?,
            site_factor: find("site_factor")?,
            tres_req: find("tres_req")?,
            urgency: names.iter().position(|h| h == "urgency"),
        })
    }

    fn raw<'a>(&self, cell: impl Fn(usize) -> Cell<'a>) -> Result<RawJob<'a>, String> {
        let text = |i: usize| match cell(i) {
            Cell::Text(t) => t.trim(),
            _ => "",
        };
        let names = |i: usize| match cell(i) {
            Cell::Ids(ids) => Names::Ids(ids),
            _ => Names::Text(text(i)),
        };
        let int = |i: usize, what: &str, default: i64, range: std::ops::RangeInclusive<i64>| -> Result<i64, String> {
            let v = match cell(i) {
                Cell::Null | Cell::Ids(_) | Cell::Tres(_) => return Ok(default),
                Cell::Int(v) => v,
                Cell::Text(t) if t.trim().is_empty() => return Ok(default),
                Cell::Text(t) => {
                    let digits = strip_zero_fraction(t.trim());
                    match digits.parse::<i64>() {
                        Ok(v) => v,
                        // Digits beyond 64 bits are out of range, not "not an integer".
                        Err(_) if digits.parse::<i128>().is_ok() => {
                            return Err(format!("{what} {digits} is not in {range:?}"));
                        }
                        Err(_) => return Err(format!("{what} {:?} is not an integer", t.trim())),
                    }
                }
            };
            if range.contains(&v) { Ok(v) } else { Err(format!("{what} {v} is not in {range:?}")) }
        };
        let time = |i: usize, what: &str| -> Result<Option<i64>, String> {
            match cell(i) {
                Cell::Null | Cell::Ids(_) | Cell::Tres(_) => Ok(None),
                Cell::Int(v) => Ok(Some(v)),
                Cell::Text(t) => match t.trim() {
                    "" | "Unknown" | "None" => Ok(None),
                    t => parse_timestamp(t).map(Some).map_err(|m| format!("{what}: {m}")),
                },
            }
        };
        let time_limit = match cell(self.time_limit) {
            Cell::Int(m) => u32::try_from(m).map_err(|_| format!("time_limit {m} is not a number of minutes"))?,
            Cell::Text(t) if !t.trim().is_empty() => {
                match parse_time(strip_zero_fraction(t.trim())).map_err(|m| format!("time_limit: {m}"))? {
                    TimeLimit::Unlimited => NO_VAL,
                    TimeLimit::Minutes(m) => m,
                }
            }
            _ => NO_VAL,
        };
        if matches!(cell(self.job_id), Cell::Null) || matches!(cell(self.job_id), Cell::Text(t) if t.trim().is_empty())
        {
            return Err("job_id is empty".into());
        }
        Ok(RawJob {
            job_id: int(self.job_id, "job_id", 0, 0..=i64::MAX)? as u64,
            user: names(self.user),
            account: names(self.account),
            partition: names(self.partition),
            qos: names(self.qos),
            submit: time(self.submit, "submit_time")?.ok_or("submit_time is empty")?,
            // Slurm's accrue time 0 means "not yet eligible".
            accrue: time(self.accrue, "accrue_time")?.filter(|&t| t != 0),
            min_nodes: int(self.min_nodes, "min_nodes", 1, 0..=u32::MAX as i64)? as u32,
            cpus: int(self.cpus, "cpus", 0, 0..=u32::MAX as i64)? as u32,
            time_limit,
            nice: int(self.nice, "nice", 0, NICE_RANGE)? as i32,
            site_factor: int(self.site_factor, "site_factor", 0, NICE_RANGE)? as i32,
            tres_req: match cell(self.tres_req) {
                Cell::Tres(counts) => TresReq::Read(counts),
                _ => TresReq::Text(text(self.tres_req)),
            },
            urgency: match self.urgency {
                Some(i) => int(i, "urgency", DEFAULT_URGENCY.into(), 0..=31)? as u8,
                None => DEFAULT_URGENCY,
            },
        })
    }
}
