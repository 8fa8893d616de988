//! Job records: a seeded history of finished (and a few running) jobs over the tree's user
//! associations, as canonical CSV, canonical Parquet or `sacct -P` text.
//!
//! Users are drawn with a heavy tail (a few users run most jobs, as on real clusters); partitions,
//! QOS and TRES shapes come from the site of [`crate::site`], so every record bills.

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, DictionaryArray, Int64Array, RecordBatch, UInt64Array};
use arrow::datatypes::Int32Type;
use fairshare_base::{Error, Result};
use fairshare_engine::tree::TreeInput;

use crate::SplitMix64;
use crate::batch_writer::{BATCH, BatchWriter};

/// What history to generate.
#[derive(Clone, Copy, Debug)]
pub struct HistorySpec {
    /// Number of job records.
    pub records: u64,
    /// Generator seed.
    pub seed: u64,
    /// Jobs start in `[from, to)`; a job still running at `to` has no end.
    pub from: i64,
    /// See `from`.
    pub to: i64,
}

/// The canonical job-record header.
pub const RECORDS_HEADER: &str = "job_id,user,account,partition,qos,start,end,tres_alloc";

/// XDMoD's `sacct` column list, as `sacct -P` prints its header.
pub const SACCT_HEADER: &str = "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|GID|User|UID|Submit|Eligible|Start|End|Elapsed|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|JobName";

const PARTITIONS: [&str; 5] = ["batch", "batch", "gpu", "long", "requeue"];
const QOS_NAMES: [&str; 5] = ["", "normal", "normal", "low", "high"];

/// One generated record, borrowing the tree's names.
pub struct Record<'a> {
    /// Job id.
    pub id: u64,
    /// User name.
    pub user: &'a str,
    /// Account name.
    pub account: &'a str,
    /// Partition.
    pub partition: &'static str,
    /// QOS (empty for none).
    pub qos: &'static str,
    /// Start.
    pub start: i64,
    /// End, `None` while running.
    pub end: Option<i64>,
    /// CPUs.
    pub cpus: u64,
    /// Nodes.
    pub nodes: u64,
    /// Allocated TRES string.
    pub tres: &'a str,
}

/// The TRES shapes jobs come in (a few thousand distinct strings, as on a real cluster).
struct Shapes {
    /// (cpus, nodes, tres string) per shape, CPU partitions then GPU ones.
    cpu: Vec<(u64, u64, String)>,
    gpu: Vec<(u64, u64, String)>,
}

impl Shapes {
    fn new() -> Self {
        let mut cpu = Vec::new();
        let mut gpu = Vec::new();
        for nodes in [1u64, 2, 4, 8, 16] {
            for per_node in [1u64, 2, 4, 8, 16, 32, 64] {
                let cpus = nodes * per_node;
                for gb in [1u64, 2, 4, 8] {
                    cpu.push((cpus, nodes, format!("cpu={cpus},mem={}G,node={nodes}", cpus * gb)));
                }
                for g in 1..=4u64 {
                    gpu.push((
                        cpus,
                        nodes,
                        format!("cpu={cpus},mem={}G,node={nodes},gres/gpu={}", cpus * 4, g * nodes),
                    ));
                }
            }
        }
        Shapes { cpu, gpu }
    }
}

/// Calls `f` for every record of the history, in job-id order (starts are not sorted).
pub fn for_each_record(
    tree: &TreeInput,
    spec: &HistorySpec,
    mut f: impl FnMut(&Record<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let users: Vec<(&str, &str)> =
        tree.records.iter().filter_map(|r| r.user.as_deref().map(|u| (u, r.account.as_str()))).collect();
    assert!(!users.is_empty(), "the tree has no user association");
    let shapes = Shapes::new();
    let mut rng = SplitMix64(spec.seed ^ 0x04A0_B5EC_04D5);
    let span = (spec.to - spec.from).max(1) as u64;
    for i in 0..spec.records {
        // u^3 skews the draw towards the first users: a heavy tail of busy users.
        let u = rng.unit();
        let (user, account) = users[((u * u * u) * users.len() as f64) as usize % users.len()];
        let partition = PARTITIONS[rng.below(PARTITIONS.len() as u64) as usize];
        let pool = if partition == "gpu" { &shapes.gpu } else { &shapes.cpu };
        // Small jobs are far more common than large ones.
        let k = (rng.unit().powi(3) * pool.len() as f64) as usize;
        let (cpus, nodes, tres) = &pool[k.min(pool.len() - 1)];
        let start = spec.from + rng.below(span) as i64;
        let run = rng.log_uniform(172_800.0) as i64;
        let end = start + run;
        f(&Record {
            id: 1 + i,
            user,
            account,
            partition,
            qos: QOS_NAMES[rng.below(QOS_NAMES.len() as u64) as usize],
            start,
            end: (end <= spec.to).then_some(end),
            cpus: *cpus,
            nodes: *nodes,
            tres,
        })?;
    }
    Ok(())
}

/// Writes the history as canonical CSV.
///
/// # Errors
/// Write errors.
pub fn write_records_csv(out: &mut dyn Write, tree: &TreeInput, spec: &HistorySpec) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 20, out);
    writeln!(out, "{RECORDS_HEADER}")?;
    for_each_record(tree, spec, |r| {
        let end = r.end.map(|e| e.to_string()).unwrap_or_default();
        writeln!(out, "{},{},{},{},{},{},{end},\"{}\"", r.id, r.user, r.account, r.partition, r.qos, r.start, r.tres)
    })?;
    out.flush()
}

/// `YYYY-MM-DDTHH:MM:SS` (UTC) of an epoch time, as `TZ=UTC sacct` prints it.
fn iso(t: i64) -> String {
    let (days, secs) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// `[D-]HH:MM:SS`.
fn elapsed(s: i64) -> String {
    let (d, h, m, s) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 { format!("{d}-{h:02}:{m:02}:{s:02}") } else { format!("{h:02}:{m:02}:{s:02}") }
}

/// Writes the history as `sacct -P` text with XDMoD's columns (running jobs end `Unknown`).
///
/// # Errors
/// Write errors.
pub fn write_records_sacct(out: &mut dyn Write, tree: &TreeInput, spec: &HistorySpec) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 20, out);
    writeln!(out, "{SACCT_HEADER}")?;
    for_each_record(tree, spec, |r| {
        let (end, state, run) = match r.end {
            Some(e) => (iso(e), "COMPLETED", e - r.start),
            None => ("Unknown".to_string(), "RUNNING", spec.to - r.start),
        };
        let submit = iso(r.start - 60);
        writeln!(
            out,
            "{id}|{id}|datagen|{p}|{q}|{a}|{a}|1000|{u}|1000|{submit}|{submit}|{start}|{end}|{el}|0:0|{state}|{n}|{c}|{c}|4G|billing={c},cpu={c},node={n}|{t}|2-00:00:00|c0001|job{id}",
            id = r.id,
            p = r.partition,
            q = r.qos,
            a = r.account,
            u = r.user,
            start = iso(r.start),
            el = elapsed(run),
            n = r.nodes,
            c = r.cpus,
            t = r.tres,
        )
    })?;
    out.flush()
}

/// Writes the history as canonical Parquet (ZSTD, 1M-row row groups, names and TRES strings
/// dictionary-encoded, times as Int64 epoch seconds), atomically.
///
/// # Errors
/// I/O or encoding errors naming `path`.
pub fn write_records_parquet(path: &Path, tree: &TreeInput, spec: &HistorySpec) -> Result<()> {
    let mut writer = BatchWriter::create(path)?;
    let mut chunk = Chunk::default();
    let mut failure = None;
    for_each_record(tree, spec, |r| {
        chunk.push(r);
        if chunk.id.len() == BATCH
            && let Err(e) = writer.write(chunk.take())
        {
            failure = Some(e);
            return Err(io::Error::other("flush failed"));
        }
        Ok(())
    })
    .map_err(|e| failure.take().unwrap_or_else(|| Error::io(path, e)))?;
    // An empty history still gets its schema from an empty batch.
    if !chunk.id.is_empty() || writer.is_empty() {
        writer.write(chunk.take())?;
    }
    writer.finish("an empty history")
}

/// One batch of records being gathered.
#[derive(Default)]
struct Chunk {
    id: Vec<u64>,
    user: Vec<String>,
    account: Vec<String>,
    partition: Vec<&'static str>,
    qos: Vec<&'static str>,
    start: Vec<i64>,
    end: Vec<Option<i64>>,
    tres: Vec<String>,
}

impl Chunk {
    fn push(&mut self, r: &Record<'_>) {
        self.id.push(r.id);
        self.user.push(r.user.to_string());
        self.account.push(r.account.to_string());
        self.partition.push(r.partition);
        self.qos.push(r.qos);
        self.start.push(r.start);
        self.end.push(r.end);
        self.tres.push(r.tres.to_string());
    }

    fn take(&mut self) -> std::result::Result<RecordBatch, arrow::error::ArrowError> {
        let dict = |v: Vec<&str>| -> ArrayRef { Arc::new(v.into_iter().collect::<DictionaryArray<Int32Type>>()) };
        let c = std::mem::take(self);
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("job_id", Arc::new(UInt64Array::from(c.id))),
            ("user", dict(c.user.iter().map(String::as_str).collect())),
            ("account", dict(c.account.iter().map(String::as_str).collect())),
            ("partition", dict(c.partition)),
            ("qos", dict(c.qos)),
            ("start", Arc::new(Int64Array::from(c.start))),
            ("end", Arc::new(Int64Array::from(c.end))),
            ("tres_alloc", dict(c.tres.iter().map(String::as_str).collect())),
        ];
        RecordBatch::try_from_iter(columns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{TreeSpec, generate_tree};

    #[test]
    fn iso_and_elapsed() {
        assert_eq!(iso(1_767_830_400), "2026-01-08T00:00:00");
        assert_eq!(iso(951_782_400 + 86_399), "2000-02-29T23:59:59");
        assert_eq!(elapsed(90_061), "1-01:01:01");
        assert_eq!(elapsed(59), "00:00:59");
    }

    /// The three formats describe the same jobs: the reader of each sees the same records.
    #[test]
    fn csv_parquet_and_sacct_read_back_the_same() {
        use fairshare_engine::usage::{JobFormat, for_each_job};
        let tree = generate_tree(&TreeSpec::new(300, 4));
        let spec = HistorySpec { records: 3000, seed: 9, from: 1_767_225_600, to: 1_767_225_600 + 30 * 86_400 };
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, f: &dyn Fn(&mut dyn Write) -> io::Result<()>| {
            let path = dir.path().join(name);
            let mut file = std::fs::File::create(&path).unwrap();
            f(&mut file).unwrap();
            path
        };
        let csv = write("jobs.csv", &|o| write_records_csv(o, &tree, &spec));
        let sacct = write("jobs.sacct", &|o| write_records_sacct(o, &tree, &spec));
        let parquet = dir.path().join("jobs.parquet");
        write_records_parquet(&parquet, &tree, &spec).unwrap();
        let read = |path: &Path| {
            let mut v = Vec::new();
            let format = JobFormat::detect(path).unwrap();
            for_each_job(path, format, &mut |j| {
                let key = (j.job_id, j.user.to_string(), j.account.to_string(), j.partition.to_string());
                v.push((key, j.qos.to_string(), j.start, j.end, j.tres_alloc.to_string()));
                Ok(())
            })
            .unwrap();
            (format, v)
        };
        let (fc, a) = read(&csv);
        let (fp, b) = read(&parquet);
        let (fs, c) = read(&sacct);
        assert_eq!((fc, fp, fs), (JobFormat::Csv, JobFormat::Parquet, JobFormat::Sacct));
        assert_eq!(a.len(), 3000);
        assert!(a.iter().any(|r| r.3.is_none()), "some jobs still run");
        assert_eq!(a, b);
        assert_eq!(a, c);
    }
}
