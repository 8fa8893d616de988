//! A usage history: the job records charged once for many instants, and one Parquet file per
//! instant with the usage and fair-share of every association (`usage --every`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, RecordBatch, TimestampMicrosecondArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Int64Type, Schema, TimeUnit};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::file::metadata::KeyValue;

use super::{Observer, Site};
use crate::output::parquet::{association_batch, metadata};
use crate::tree::AssocTree;
use crate::usage::ChargeReport;
use crate::usage::charge::{share_among_copies, user_copies};
use crate::usage::history::{Instants, charge_history};
use fairshare_base::time_format::TimeFormat;
use fairshare_base::write::atomic::{AtomicDir, DirKind};
use fairshare_base::write::parquet::write_parquet;
use fairshare_base::{Error, Result};

/// What a history run wrote.
#[derive(Debug)]
pub struct HistoryWritten {
    /// Instants written by this run.
    pub written: usize,
    /// Instants of an earlier run of the same directory kept (not written again).
    pub kept: usize,
    /// Instants of an earlier run replaced by this one.
    pub replaced: usize,
    /// What the charging saw.
    pub report: ChargeReport,
}

/// `YYYY-MM-DD` and `HHMMSS` of an epoch time (UTC), for the history's partition paths.
fn date_and_time(t: i64) -> (String, String) {
    (TimeFormat::Day.format(t), TimeFormat::Clock.format(t))
}

/// One instant of a usage history: the usage and fair-share of every association, with an
/// `as_of` UTC timestamp column, and the parameters of that state for the output metadata.
#[derive(Debug)]
pub struct HistoryInstant {
    /// The instant (epoch seconds).
    pub at: i64,
    /// `as_of`, then the columns of [`association_batch`], rows in the tree's order.
    pub batch: RecordBatch,
    /// The pass and usage parameters of the state at `at`.
    pub metadata: Vec<KeyValue>,
}

/// Charges the site's job records once for every instant of `instants`, tells `observer` what
/// the charging saw ([`super::UsageConfig::tell`]), and hands each instant's state to `each`, in
/// order; returns what the charging saw.
///
/// # Errors
/// No job records in the site, reading or charging them (every record skipped included), the
/// tree, or `each`'s error.
pub fn for_each_history_instant(
    site: &Site,
    instants: Vec<i64>,
    observer: &dyn Observer,
    mut each: impl FnMut(HistoryInstant) -> Result<()>,
) -> Result<ChargeReport> {
    let usage = site.usage.as_ref().ok_or_else(|| Error::Usage("a usage history needs job records".into()))?;
    let input = site.tree_input()?;
    let params = &site.params;
    let algorithm = params.algorithm;
    let (conf, qos) = (site.slurm_conf.as_ref(), site.qos.as_ref());
    let ctx = crate::usage::ChargeContext::new(&input, conf, qos, usage.model(algorithm));
    let instants = Instants::new(instants, |t| usage.model_at(algorithm, t));
    let history = charge_history(&usage.jobs, usage.format, &ctx, instants)?;
    usage.check_charged(&history.report)?;
    usage.tell(&history.report, observer);
    let tree = AssocTree::build(input.clone())?;
    // Tree row of each input record.
    let row_of_id: HashMap<u64, usize> = tree.ids().iter().enumerate().map(|(row, &id)| (id, row)).collect();
    let tree_rows: Vec<usize> = input.records.iter().map(|r| row_of_id[&r.id]).collect();
    // A flux tree may hold an association twice: each copy holds the usage charged to it.
    let copies: Vec<(usize, usize)> =
        user_copies(&input).into_iter().map(|(copy, first)| (tree_rows[copy], tree_rows[first])).collect();
    let source = site.tree.source();
    let mut by_row = vec![0.0; tree.len()];
    let total = history.instants().times().len() as u64;
    let mut start_by_row = vec![0.0; tree.len()];
    history.for_each_instant(|i, record_usage, pass_start| {
        observer.progress("writing the history", i as u64, total, "instants");
        if observer.interrupted() {
            return Err(Error::Interrupted("computing the history"));
        }
        let t = history.instants().times()[i];
        for (&row, &u) in tree_rows.iter().zip(record_usage) {
            by_row[row] = u;
        }
        share_among_copies(&copies, &mut by_row, |a, b| *a += b);
        let at_tree = tree.with_user_usage(&by_row);
        // As Slurm holds it after the instant's last pass: classic reads its accounts at that
        // pass's start (as `fair_share_after_charge` does for one instant).
        let result = match pass_start {
            Some(start) => {
                for (&row, &u) in tree_rows.iter().zip(start) {
                    start_by_row[row] = u;
                }
                share_among_copies(&copies, &mut start_by_row, |a, b| *a += b);
                crate::pass::compute_after_pass(&at_tree, &tree.with_user_usage(&start_by_row), params)?
            }
            None => crate::pass::compute(&at_tree, params)?,
        };
        let batch = association_batch(&at_tree, &result);
        // A UTC timestamp, named so that SQL needs no quoting (`at` is a DuckDB keyword).
        let as_of = TimestampMicrosecondArray::from(vec![t * 1_000_000; at_tree.len()]).with_timezone("UTC");
        let as_of: ArrayRef = Arc::new(as_of);
        let mut fields: Vec<Field> =
            vec![Field::new("as_of", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), false)];
        fields.extend(batch.schema().fields().iter().map(|f| f.as_ref().clone()));
        let mut columns = vec![as_of];
        columns.extend(batch.columns().iter().cloned());
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|e| Error::format(site.tree.source(), e))?;
        let mut meta = metadata(&result, &source);
        meta.extend(site.tree.what_if_metadata());
        meta.extend(usage.metadata_at(algorithm, t).into_iter().map(|(k, v)| KeyValue::new(k, v)));
        meta.extend(super::charge_metadata(Some(&history.report)));
        each(HistoryInstant { at: t, batch, metadata: meta })
    })?;
    observer.progress("writing the history", total, total, "instants");
    Ok(history.report)
}

/// Charges the site's job records once for every instant and writes one Parquet file per instant
/// (usage and fair-share of every association, with an `as_of` UTC timestamp column),
/// partitioned by date, as one directory that appears atomically; instants of an earlier history
/// in `out` are kept.
///
/// # Errors
/// No job records in the site, reading or charging them, the tree, or writing.
pub fn write_history(site: &Site, instants: Vec<i64>, out: &Path, observer: &dyn Observer) -> Result<HistoryWritten> {
    let dir = AtomicDir::create(out, DirKind::History)?;
    let carried = dir.keep_previous()?;
    let mut written = HashSet::new();
    let report = for_each_history_instant(site, instants, observer, |instant| {
        let (date, hms) = date_and_time(instant.at);
        let part = dir.path().join(format!("date={date}"));
        std::fs::create_dir_all(&part).map_err(|e| Error::io(&part, e))?;
        written.insert(format!("date={date}/{hms}.parquet"));
        write_parquet(&part.join(format!("{hms}.parquet")), &instant.batch, instant.metadata)
    })?;
    dir.commit()?;
    let replaced = carried.iter().filter(|f| written.contains(f.as_str())).count();
    Ok(HistoryWritten { written: written.len(), kept: carried.len() - replaced, replaced, report })
}

/// The instants of a history: `every` (interval, from, to) from `from` to `to` inclusive, else
/// the times `at`; at most `max` of them (each is a Parquet file).
///
/// # Errors
/// A bad time or interval, `to` before `from`, or more than `max` instants.
pub fn history_instants_of(
    at: &[String],
    every: Option<(&str, Option<&str>, Option<&str>)>,
    max: u64,
) -> Result<Vec<i64>> {
    let time = |text: &str, flag: &str| {
        fairshare_base::read::time::parse_time_arg(text).map_err(|m| Error::Usage(format!("{flag}: {m}")))
    };
    if let Some((every, from, to)) = every {
        let step = crate::config::time::parse_duration(every).map_err(|m| Error::Usage(format!("--every: {m}")))?;
        let from = time(from.unwrap_or_default(), "--from")?;
        let to = time(to.unwrap_or_default(), "--to")?;
        if to < from {
            return Err(Error::Usage(format!("--to {to} is before --from {from}")));
        }
        let count = (to - from) / step + 1;
        check_instant_count(count as u64, max, &format!("--every {every} from --from to --to"))?;
        return Ok((0..count).map(|k| from + k * step).collect());
    }
    check_instant_count(at.len() as u64, max, "--at")?;
    at.iter().map(|t| time(t, "--at")).collect()
}

/// Refuses a history of more instants than `max` (each is a Parquet file).
fn check_instant_count(count: u64, max: u64, what: &str) -> Result<()> {
    if count > max {
        return Err(Error::Usage(format!(
            "{what} is {count} instants (one Parquet file each), more than --max-instants {max}: \
             give a coarser interval or raise --max-instants"
        )));
    }
    Ok(())
}

/// The Parquet files of a history directory: `*.parquet` in it and in its subdirectories
/// (`date=YYYY-MM-DD/HHMMSS.parquet`), sorted by path.
///
/// # Errors
/// The directory cannot be read, or holds no Parquet file.
pub fn history_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let list = |d: &Path| -> Result<Vec<PathBuf>> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map_err(|e| Error::io(d, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
            .collect();
        v.sort();
        Ok(v)
    };
    let mut out = Vec::new();
    for p in list(dir)? {
        if p.is_dir() {
            out.extend(list(&p)?.into_iter().filter(|f| f.extension().is_some_and(|e| e == "parquet")));
        } else if p.extension().is_some_and(|e| e == "parquet") {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err(Error::Usage(format!(
            "{}: no history files (date=YYYY-MM-DD/HHMMSS.parquet, from `fairshare usage --every`)",
            dir.display()
        )));
    }
    Ok(out)
}

/// Column `name` of a history file's `batch`, cast to `to`.
///
/// # Errors
/// The file has no such column (it is not a history file), or it does not cast.
pub fn history_column(path: &Path, batch: &RecordBatch, name: &str, to: &DataType) -> Result<ArrayRef> {
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| Error::input(path, None, format!("no `{name}` column: not a `fairshare usage --every` file")))?;
    cast(col, to).map_err(|e| Error::format(path, e))
}

/// The instant of each row in epoch seconds: `as_of` (a UTC timestamp), or the `at` epoch
/// integers of histories written before it.
fn instant_column(path: &Path, batch: &RecordBatch) -> Result<ArrayRef> {
    if batch.column_by_name("as_of").is_some() {
        let seconds = history_column(path, batch, "as_of", &DataType::Timestamp(TimeUnit::Second, None))?;
        return cast(&seconds, &DataType::Int64).map_err(|e| Error::format(path, e));
    }
    history_column(path, batch, "at", &DataType::Int64)
        .map_err(|_| Error::input(path, None, "no `as_of` column: not a `fairshare usage --every` file"))
}

/// One file of a history: its instant, the columns read, and its key-value metadata.
#[derive(Clone, Debug)]
pub struct HistoryFile {
    /// The file.
    pub path: PathBuf,
    /// Its instant (epoch seconds).
    pub at: i64,
    /// The columns read (those of the ones asked for that the file has), every row.
    pub batch: RecordBatch,
    /// The Parquet key-value metadata (`fairshare.algorithm`, the decay parameters, ...).
    pub metadata: HashMap<String, String>,
}

/// Reads `columns` of one history file (only those: a history of a large tree is mostly other
/// columns), with its instant and metadata.
///
/// # Errors
/// Not a Parquet file, no `as_of` column, no rows, or a damaged file.
pub fn read_history_file(path: &Path, columns: &[&str]) -> Result<HistoryFile> {
    fairshare_base::read::row_groups::guarded(path, || {
        let (file, metadata) = fairshare_base::read::row_groups::open_checked(path, ArrowReaderOptions::new())?;
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata);
        let metadata: HashMap<String, String> = (builder.metadata().file_metadata().key_value_metadata())
            .map(|kv| kv.iter().filter_map(|k| Some((k.key.clone(), k.value.clone()?))).collect())
            .unwrap_or_default();
        let wanted = ["as_of", "at"].into_iter().chain(columns.iter().copied());
        let mask = ProjectionMask::columns(builder.parquet_schema(), wanted);
        let reader = builder.with_projection(mask).build().map_err(|e| Error::format(path, e))?;
        let schema = arrow::array::RecordBatchReader::schema(&reader);
        let batches = reader.collect::<std::result::Result<Vec<_>, _>>().map_err(|e| Error::format(path, e))?;
        let batch = arrow::compute::concat_batches(&schema, &batches).map_err(|e| Error::format(path, e))?;
        let at = instant_column(path, &batch)?;
        let at = at.as_primitive::<Int64Type>();
        if at.is_empty() {
            return Err(Error::input(path, None, "no rows"));
        }
        Ok(HistoryFile { path: path.to_path_buf(), at: at.value(0), batch, metadata })
    })
}
