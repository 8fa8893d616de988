//! Parquet outputs: the associations of a fair-share pass and the scored jobs as record batches
//! with their metadata, for the sink (`fairshare_base::write::parquet`).

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int32Array, RecordBatch, StringArray, StructArray,
    UInt32Array, UInt64Array,
};
use arrow::buffer::NullBuffer;

use arrow::array::Array;
use arrow::datatypes::{DataType, Field, Fields, Schema, UInt32Type};
use parquet::file::metadata::KeyValue;

use crate::jobs::PendingJobs;
use crate::pass::{Algorithm, FairShare};
use crate::priority::{NONE, Scores, Weights};
use crate::tree::{AssocTree, AssocTres};
use fairshare_base::error::{Error, Result};
use fairshare_base::named::Named;
use fairshare_base::parallel::column;
use fairshare_base::write::parquet::{NO_ID, UsedIds, version_metadata};

// A queue's id of no name (no QOS) is the sink's: `UsedIds` skips it and keys its row as a null.
const _: () = assert!(NONE == NO_ID);

/// The per-association result columns as one record batch, rows in the tree's breadth-first order.
/// Values the emulated system leaves unset are null. The result columns are copied;
/// [`into_association_batch`] moves them.
pub fn association_batch(tree: &AssocTree, fs: &FairShare) -> RecordBatch {
    into_association_batch(tree, fs.clone())
}

/// [`association_batch`], moving the result columns into the batch without a copy (at 10^7
/// associations, half a gigabyte less to write and hold).
pub fn into_association_batch(tree: &AssocTree, fs: FairShare) -> RecordBatch {
    // NaN marks an unset value: null in the file. Only the validity is computed per row.
    let opt = |v: Vec<f64>| {
        let nulls = v.iter().any(|x| x.is_nan()).then(|| NullBuffer::from_iter(v.iter().map(|x| !x.is_nan())));
        Float64Array::new(v.into(), nulls)
    };
    let rank_valid = NullBuffer::from_iter(fs.rank.iter().map(|&r| r > 0));
    let batch = tree.to_record_batch();
    let col = |name: &str| batch.column_by_name(name).expect("tree column").clone();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", col("id")),
        ("parent_id", Arc::new(parent_ids(tree))),
        ("depth", col("depth")),
        ("account", col("account")),
        ("user", col("user")),
        ("partition", col("partition")),
        ("is_user", col("is_user")),
        ("raw_shares", col("raw_shares")),
        ("parent_shares", col("parent_shares")),
        ("norm_shares", Arc::new(opt(fs.norm_shares))),
        ("raw_usage", col("raw_usage")),
        ("norm_usage", Arc::new(opt(fs.norm_usage))),
        ("effective_usage", Arc::new(opt(fs.effective_usage))),
        ("level_fs", Arc::new(opt(fs.level_fs))),
        ("rank", Arc::new(UInt32Array::new(fs.rank.into(), Some(rank_valid)))),
        ("fs_factor", Arc::new(opt(fs.fs_factor))),
        ("priority", col("priority")),
        ("grp_tres_mins", Arc::new(tree.grp_tres_mins_column().clone())),
    ];
    let mut columns = columns;
    if let Some(t) = tree.tres().filter(|t| t.is_tracked()) {
        columns.extend(tres_columns(t));
    }
    let schema = Schema::new(
        columns
            .iter()
            .map(|(name, a)| Field::new(*name, a.data_type().clone(), a.null_count() > 0 || nullable(name)))
            .collect::<Vec<_>>(),
    );
    RecordBatch::try_new(Arc::new(schema), columns.into_iter().map(|(_, a)| a).collect())
        .expect("columns match their schema")
}

/// The per-TRES columns, each a struct with a field per TRES of the cluster named as Slurm names
/// it (`cpu`, `gres/gpu`): `usage_tres_raw` (decayed TRES-seconds, sshare's GrpTRESRaw × 60) and
/// `tres_run_secs` (running jobs' remaining TRES-seconds, sshare's TRESRunMins × 60).
fn tres_columns(t: &AssocTres) -> [(&'static str, ArrayRef); 2] {
    let k = t.names.len();
    let strided = |i: usize| (0..t.usage_raw.len() / k.max(1)).map(move |r| r * k + i);
    let fields =
        |ty: DataType| -> Fields { t.names.iter().map(|n| Field::new(n.to_string(), ty.clone(), false)).collect() };
    let usage: Vec<ArrayRef> = (0..k)
        .map(|i| Arc::new(Float64Array::from_iter_values(strided(i).map(|x| t.usage_raw[x]))) as ArrayRef)
        .collect();
    let run: Vec<ArrayRef> = (0..k)
        .map(|i| Arc::new(UInt64Array::from_iter_values(strided(i).map(|x| t.run_secs[x]))) as ArrayRef)
        .collect();
    [
        ("usage_tres_raw", Arc::new(StructArray::new(fields(DataType::Float64), usage, None))),
        ("tres_run_secs", Arc::new(StructArray::new(fields(DataType::UInt64), run, None))),
    ]
}

/// The parent's id of every row (null for the root), gathered by parent row.
fn parent_ids(tree: &AssocTree) -> UInt64Array {
    let ids = tree.ids();
    let values: Vec<u64> = tree.parents().iter().map(|&p| ids[p as usize]).collect();
    let mut valid = vec![true; values.len()];
    if let Some(root) = valid.first_mut() {
        *root = false;
    }
    UInt64Array::new(values.into(), Some(NullBuffer::from(valid)))
}

/// Columns that may hold nulls in some file, so the schema does not depend on the data.
fn nullable(name: &str) -> bool {
    matches!(
        name,
        "parent_id"
            | "user"
            | "partition"
            | "norm_shares"
            | "norm_usage"
            | "effective_usage"
            | "level_fs"
            | "rank"
            | "fs_factor"
            | "priority"
            | "grp_tres_mins"
    )
}

/// The metadata recorded with every association file.
pub fn metadata(fs: &FairShare, source: &str) -> Vec<KeyValue> {
    let p = fs.params;
    let mut meta = version_metadata();
    meta.extend(
        [
            ("fairshare.algorithm", p.algorithm.name().to_string()),
            ("fairshare.dampening", p.dampening.to_string()),
            ("fairshare.depth_oblivious", p.depth_oblivious.to_string()),
            ("fairshare.flux_exact_sums", p.flux_exact_sums.to_string()),
            ("fairshare.source", source.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| KeyValue::new(k.to_string(), v)),
    );
    meta
}

/// The metadata recorded with every scored-jobs file: the schema version, the priority formula
/// (`slurm` or `flux`), the fair-share algorithm and the time of the computation.
pub fn jobs_metadata(formula: &str, algorithm: Algorithm, now: i64) -> Vec<KeyValue> {
    let mut meta = version_metadata();
    meta.extend(
        [
            ("fairshare.priority", formula.to_string()),
            ("fairshare.algorithm", algorithm.name().to_string()),
            ("fairshare.now", now.to_string()),
            ("fairshare.prio_columns", WEIGHTED.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| KeyValue::new(k.to_string(), v)),
    );
    meta
}

/// What the `prio_*` columns hold, in the file's metadata and on each column.
const WEIGHTED: &str = "weighted: PriorityWeight<Factor> × the factor (0..1), the terms sprio prints and the \
                        priority sums; divide by the weight for the factor (sprio -n)";

/// The scored rows as one record batch: one row per (job, partition, QOS), weighted factors as
/// `prio_*` columns, each weighted TRES as `prio_tres_<name>` (`/` becomes `_`). Names are
/// dictionary-encoded from the queue's interner.
///
/// # Errors
/// Never in practice: the columns are built to match.
pub fn jobs_batch(scores: Scores, jobs: &PendingJobs, weights: &Weights) -> Result<RecordBatch> {
    // Every name column shares as its values the names these rows use, in id order (the queue's
    // interner may hold a whole tree's); the ids, renumbered, move in as keys, NONE (no QOS) as
    // a null.
    let mut used = UsedIds::new(jobs.names.len());
    for &j in &scores.job {
        used.mark(jobs.user[j as usize]);
        used.mark(jobs.account[j as usize]);
    }
    scores.partition.iter().chain(&scores.qos).for_each(|&id| used.mark(id));
    let used = used.ranked();
    let values: ArrayRef = Arc::new(StringArray::from_iter_values(used.ids().map(|id| jobs.names.name(id))));
    let dict = |ids: Vec<u32>| -> Result<ArrayRef> {
        let nulls = ids.contains(&NONE).then(|| NullBuffer::from_iter(ids.iter().map(|&k| k != NONE)));
        let keys = UInt32Array::new(column(ids.len(), |r| used.key(ids[r])).into(), nulls);
        let a = DictionaryArray::<UInt32Type>::try_new(keys, values.clone()).map_err(|e| Error::format("<jobs>", e))?;
        Ok(Arc::new(a))
    };
    // A job's values repeated on each of its rows, gathered in parallel tasks (a 10^7-row queue
    // has half a dozen such columns).
    let n = scores.job.len();
    let per_row = |f: &(dyn Fn(usize) -> u32 + Sync)| -> Vec<u32> { column(n, |r| f(scores.job[r] as usize)) };
    // The score columns move into Arrow without a copy.
    let f64s = |v: Vec<f64>| -> ArrayRef { Arc::new(Float64Array::from(v)) };
    let mut columns: Vec<(String, ArrayRef)> = vec![
        ("job_id".into(), Arc::new(UInt64Array::from(column(n, |r| jobs.job_id[scores.job[r] as usize])))),
        ("user".into(), dict(per_row(&|j| jobs.user[j]))?),
        ("account".into(), dict(per_row(&|j| jobs.account[j]))?),
        ("partition".into(), dict(scores.partition)?),
        ("qos".into(), dict(scores.qos)?),
        ("assoc_found".into(), Arc::new(BooleanArray::from(column(n, |r| scores.assoc[r] != NONE)))),
        ("priority".into(), Arc::new(UInt32Array::from(scores.priority))),
        ("prio_age".into(), f64s(scores.age)),
        ("prio_assoc".into(), f64s(scores.assoc_factor)),
        ("prio_fairshare".into(), f64s(scores.fairshare)),
        ("prio_jobsize".into(), f64s(scores.job_size)),
        ("prio_partition".into(), f64s(scores.partition_factor)),
        ("prio_qos".into(), f64s(scores.qos_factor)),
        ("site_factor".into(), Arc::new(Int32Array::from(column(n, |r| jobs.site_factor[scores.job[r] as usize])))),
        ("nice".into(), Arc::new(Int32Array::from(column(n, |r| jobs.nice[scores.job[r] as usize])))),
    ];
    for ((tres, _), col) in weights.tres.iter().zip(scores.tres) {
        columns.push((format!("prio_tres_{}", tres.to_string().replace('/', "_")), f64s(col)));
    }
    let schema = Schema::new(
        columns
            .iter()
            .map(|(n, a)| {
                let field = Field::new(n, a.data_type().clone(), matches!(n.as_str(), "qos"));
                if n.starts_with("prio_") {
                    let description =
                        std::collections::HashMap::from([("description".to_string(), WEIGHTED.to_string())]);
                    field.with_metadata(description)
                } else {
                    field
                }
            })
            .collect::<Vec<_>>(),
    );
    RecordBatch::try_new(Arc::new(schema), columns.into_iter().map(|(_, a)| a).collect())
        .map_err(|e| Error::format("<jobs>", e))
}
