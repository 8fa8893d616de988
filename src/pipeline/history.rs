//! A usage history: the job records charged once for many instants, and one Parquet file per
//! instant with the usage and fair-share of every association (`usage --every`).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, TimestampMicrosecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use parquet::file::metadata::KeyValue;

use super::{Observer, Site};
use crate::output::atomic::{AtomicDir, DirKind};
use crate::output::parquet::{association_batch, metadata, write_parquet};
use crate::tree::AssocTree;
use crate::usage::ChargeReport;
use crate::usage::charge::{share_among_copies, user_copies};
use crate::usage::history::{Instants, charge_history};
use crate::{Error, Result};

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
    let dt = chrono::DateTime::from_timestamp(t, 0).unwrap_or_default();
    (dt.format("%Y-%m-%d").to_string(), dt.format("%H%M%S").to_string())
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
        crate::io::read::time::parse_time_arg(text).map_err(|m| Error::Usage(format!("{flag}: {m}")))
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
