//! The pending queue, columnar: one entry per job, names interned.
//!
//! Inputs:
//! - CSV/Parquet with `job_id,user,account,partition,qos,submit_time,accrue_time,min_nodes,cpus,
//!   time_limit,nice,site_factor,tres_req` (extra columns allowed; `urgency` is read for flux);
//!   times as epoch seconds or `YYYY-MM-DDTHH:MM:SS`; `partition` and `qos` may be comma lists;
//!   `time_limit` in minutes or Slurm's time syntax, empty or `UNLIMITED` meaning the partition's
//!   MaxTime; `tres_req` a TRES string.
//! - `squeue --json` (pending jobs only).

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::text::{Interner, parse_timestamp, split_fields};
use crate::config::time::{TimeLimit, parse_time};
use crate::config::tres::{Tres, parse_tres_counts};
use crate::error::{Error, Result};

/// Slurm's `NO_VAL`: a job without its own time limit takes the partition's MaxTime.
pub const NO_VAL: u32 = 0xffff_fffe;

/// flux-accounting's default urgency.
pub const DEFAULT_URGENCY: u8 = 16;

/// A pending-jobs file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PendingFormat {
    /// CSV with the canonical header.
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
        use std::io::Read;
        let mut head = [0u8; 64];
        let n = File::open(path).and_then(|mut f| f.read(&mut head)).map_err(|e| Error::io(path, e))?;
        let head = &head[..n];
        Ok(if head.starts_with(b"PAR1") {
            PendingFormat::Parquet
        } else if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
            PendingFormat::SqueueJson
        } else {
            PendingFormat::Csv
        })
    }
}

/// One job as a reader found it.
struct RawJob<'a> {
    job_id: u64,
    user: &'a str,
    account: &'a str,
    partition: &'a str,
    qos: &'a str,
    submit: i64,
    accrue: Option<i64>,
    min_nodes: u32,
    cpus: u32,
    time_limit: u32,
    nice: i32,
    site_factor: i32,
    tres_req: &'a str,
    urgency: u8,
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
    /// The 1-based line or row each job came from.
    pub line: Vec<u64>,
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
        let mut jobs = PendingJobs {
            source: path.to_path_buf(),
            part_offsets: vec![0],
            qos_offsets: vec![0],
            tres: keep.to_vec(),
            tres_req: vec![Vec::new(); keep.len()],
            ..Default::default()
        };
        match format {
            PendingFormat::Csv => jobs.read_csv(path)?,
            PendingFormat::Parquet => jobs.read_parquet(path)?,
            PendingFormat::SqueueJson => jobs.read_squeue_json(path)?,
        }
        Ok(jobs)
    }

    fn push(&mut self, raw: RawJob<'_>, line: u64) -> Result<()> {
        let err = |m: String| Error::input(&self.source, line, m);
        if raw.user.is_empty() || raw.account.is_empty() || raw.partition.is_empty() {
            return Err(err("user, account and partition must not be empty".into()));
        }
        let counts = parse_tres_counts(raw.tres_req).map_err(|m| err(format!("tres_req: {m}")))?;
        self.job_id.push(raw.job_id);
        let user = self.names.intern(raw.user);
        let account = self.names.intern(raw.account);
        self.user.push(user);
        self.account.push(account);
        for p in raw.partition.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let id = self.names.intern(p);
            self.part_ids.push(id);
        }
        self.part_offsets.push(self.part_ids.len() as u32);
        for q in raw.qos.split(',').map(str::trim).filter(|q| !q.is_empty()) {
            let id = self.names.intern(q);
            self.qos_ids.push(id);
        }
        self.qos_offsets.push(self.qos_ids.len() as u32);
        self.submit_time.push(raw.submit);
        self.accrue_time.push(raw.accrue);
        self.min_nodes.push(raw.min_nodes);
        self.cpus.push(raw.cpus);
        self.time_limit.push(raw.time_limit);
        self.nice.push(raw.nice);
        self.site_factor.push(raw.site_factor);
        self.urgency.push(raw.urgency);
        for (col, t) in self.tres_req.iter_mut().zip(&self.tres) {
            col.push(counts.get(t));
        }
        self.line.push(line);
        Ok(())
    }

    fn read_csv(&mut self, path: &Path) -> Result<()> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut line = String::new();
        let mut buffer: Vec<Cow<'static, str>> = Vec::new();
        let mut line_no = 0u64;
        let mut header: Option<Columns> = None;
        loop {
            line.clear();
            let n = reader.read_line(&mut line).map_err(|e| Error::io(path, e))?;
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
            let raw = cols.raw(&fields).map_err(|m| err(&m))?;
            self.push(raw, line_no)?;
            buffer = recycle(fields);
        }
        if header.is_none() {
            return Err(Error::input(path, None, "empty file: expected a header starting with job_id"));
        }
        Ok(())
    }

    fn read_parquet(&mut self, path: &Path) -> Result<()> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|b| b.with_batch_size(64 * 1024).build())
            .map_err(|e| Error::format(path, e))?;
        let mut row = 0u64;
        for batch in reader {
            let batch = batch.map_err(|e| Error::format(path, e))?;
            self.read_batch(path, &batch, &mut row)?;
        }
        Ok(())
    }

    fn read_batch(&mut self, path: &Path, batch: &RecordBatch, row: &mut u64) -> Result<()> {
        let names: Vec<String> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
        let cols = Columns::resolve(&names).map_err(|m| Error::input(path, None, m))?;
        // Every column as text: one code path with the CSV reader, and time columns may hold
        // either epoch seconds or datetimes.
        let text: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|c| match c.data_type() {
                DataType::Timestamp(..) => cast(&cast(c, &DataType::Int64)?, &DataType::Utf8),
                _ => cast(c, &DataType::Utf8),
            })
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::format(path, e))?;
        let mut fields: Vec<Cow<'_, str>> = Vec::with_capacity(text.len());
        for i in 0..batch.num_rows() {
            *row += 1;
            fields.clear();
            fields.extend(text.iter().map(|a| {
                let s = a.as_string::<i32>();
                Cow::Borrowed(if s.is_null(i) { "" } else { s.value(i) })
            }));
            let raw = cols.raw(&fields).map_err(|m| Error::input(path, *row, format!("row {}: {m}", *row)))?;
            self.push(raw, *row)?;
        }
        Ok(())
    }

    fn read_squeue_json(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let doc: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| Error::input(path, e.line() as u64, format!("not JSON: {e}")))?;
        let Some(jobs) = doc.get("jobs").and_then(|j| j.as_array()) else {
            return Err(Error::input(path, None, "no `jobs` array: expected the output of `squeue --json`"));
        };
        for (i, job) in jobs.iter().enumerate() {
            let row = i as u64 + 1;
            let err = |m: String| Error::input(path, None, format!("jobs[{i}]: {m}"));
            let state = job.get("job_state").map(json_text).unwrap_or_default();
            if !state.contains("PENDING") {
                continue;
            }
            let int = |key: &str| job.get(key).and_then(json_number);
            let string = |key: &str| job.get(key).map(json_text).unwrap_or_default();
            let (user, account, partition, qos) =
                (string("user_name"), string("account"), string("partition"), string("qos"));
            let tres = string("tres_req_str");
            let submit = int("submit_time").ok_or_else(|| err("no submit_time".into()))?;
            let accrue = int("accrue_time").filter(|&t| t > 0);
            let time_limit = match job.get("time_limit") {
                Some(v) if json_is_infinite(v) => NO_VAL,
                Some(v) => json_number(v).map_or(NO_VAL, |m| m as u32),
                None => NO_VAL,
            };
            let raw = RawJob {
                job_id: int("job_id").ok_or_else(|| err("no job_id".into()))? as u64,
                user: &user,
                account: &account,
                partition: &partition,
                qos: &qos,
                submit,
                accrue,
                min_nodes: int("node_count").unwrap_or(1) as u32,
                cpus: int("cpus").unwrap_or(0) as u32,
                time_limit,
                nice: int("nice").unwrap_or(0) as i32,
                site_factor: int("site_factor").unwrap_or(0) as i32,
                tres_req: &tres,
                urgency: DEFAULT_URGENCY,
            };
            self.push(raw, row)?;
        }
        Ok(())
    }
}

/// Reuses an emptied vector's allocation under another lifetime (the in-place `collect` of an
/// empty iterator keeps the buffer), so splitting a line allocates nothing.
fn recycle<'b>(mut v: Vec<Cow<'_, str>>) -> Vec<Cow<'b, str>> {
    v.clear();
    v.into_iter().map(|_| Cow::Borrowed("")).collect()
}

/// A number in squeue's JSON: plain, or `{"set": true, "infinite": false, "number": N}`.
fn json_number(v: &serde_json::Value) -> Option<i64> {
    match v {
        serde_json::Value::Number(n) => n.as_i64(),
        serde_json::Value::Object(o) if o.get("set").and_then(|s| s.as_bool()) != Some(false) => {
            o.get("number").and_then(|n| n.as_i64())
        }
        _ => None,
    }
}

fn json_is_infinite(v: &serde_json::Value) -> bool {
    v.get("infinite").and_then(|i| i.as_bool()) == Some(true)
}

/// Text of a string, or the strings of an array joined by commas (`job_state: ["PENDING"]`).
fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) => a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(","),
        _ => String::new(),
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

    fn raw<'a>(&self, f: &'a [Cow<'a, str>]) -> Result<RawJob<'a>, String> {
        let get = |i: usize| f[i].trim();
        let int = |i: usize, what: &str, default: i64, range: std::ops::RangeInclusive<i64>| -> Result<i64, String> {
            match get(i) {
                "" => Ok(default),
                t => t
                    .parse::<i64>()
                    .ok()
                    .filter(|v| range.contains(v))
                    .ok_or_else(|| format!("{what} {t:?} is not an integer in {range:?}")),
            }
        };
        let time_limit = match get(self.time_limit) {
            "" => NO_VAL,
            t => match parse_time(t).map_err(|m| format!("time_limit: {m}"))? {
                TimeLimit::Unlimited => NO_VAL,
                TimeLimit::Minutes(m) => m,
            },
        };
        let job_id = get(self.job_id)
            .parse::<u64>()
            .map_err(|_| format!("job_id {:?} is not a non-negative integer", get(self.job_id)))?;
        let accrue = match get(self.accrue) {
            "" | "0" | "Unknown" | "None" => None,
            t => Some(parse_timestamp(t).map_err(|m| format!("accrue_time: {m}"))?),
        };
        Ok(RawJob {
            job_id,
            user: get(self.user),
            account: get(self.account),
            partition: get(self.partition),
            qos: get(self.qos),
            submit: parse_timestamp(get(self.submit)).map_err(|m| format!("submit_time: {m}"))?,
            accrue,
            min_nodes: int(self.min_nodes, "min_nodes", 1, 0..=u32::MAX as i64)? as u32,
            cpus: int(self.cpus, "cpus", 0, 0..=u32::MAX as i64)? as u32,
            time_limit,
            // Slurm accepts nice and site factor within ±(NICE_OFFSET - 3).
            nice: int(self.nice, "nice", 0, -2_147_483_645..=2_147_483_645)? as i32,
            site_factor: int(self.site_factor, "site_factor", 0, -2_147_483_645..=2_147_483_645)? as i32,
            tres_req: get(self.tres_req),
            urgency: match self.urgency {
                Some(i) => int(i, "urgency", DEFAULT_URGENCY.into(), 0..=31)? as u8,
                None => DEFAULT_URGENCY,
            },
        })
    }
}
