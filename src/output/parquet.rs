//! Parquet outputs: the associations of a fair-share pass and the scored jobs, ZSTD, parameters in
//! the metadata.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int32Array, RecordBatch, StringArray, StructArray,
    UInt32Array, UInt64Array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use std::collections::HashSet;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{
    DataType, Field, Fields, Float64Type, Int32Type, Int64Type, Schema, SchemaRef, UInt32Type, UInt64Type,
};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowRowGroupWriterFactory, compute_leaves};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT, EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use super::atomic::AtomicFile;
use crate::error::{Error, Result};
use crate::jobs::PendingJobs;
use crate::memory::prefetch;
use crate::parallel::{column, for_each_task};
use crate::pass::{Algorithm, FairShare};
use crate::priority::{NONE, Scores, Weights};
use crate::tree::{AssocTree, AssocTres};

/// Version of the association Parquet schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: &str = "1";

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

/// The Parquet leaf columns of an Arrow type: one, or one per field of a struct.
fn leaf_count(data_type: &DataType) -> usize {
    match data_type {
        DataType::Struct(fields) => fields.iter().map(|f| leaf_count(f.data_type())).sum(),
        _ => 1,
    }
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

/// The metadata every file the engine writes starts with: the schema and engine versions.
pub fn version_metadata() -> Vec<KeyValue> {
    vec![
        KeyValue::new("fairshare.schema_version".to_string(), SCHEMA_VERSION.to_string()),
        KeyValue::new("fairshare.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
    ]
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

/// Rows per row group.
const ROW_GROUP_ROWS: usize = 1 << 20;

/// Rows sampled, evenly spaced, to tell a column's distinctness.
const DISTINCT_SAMPLE: usize = 4096;

/// True for a numeric column whose sampled values are more than half distinct; strings and
/// booleans never are (names repeat, and booleans have no dictionary to gain).
fn mostly_distinct(column: &dyn Array) -> bool {
    let Some(bits) = value_bits(column) else { return false };
    let step = column.len().div_ceil(DISTINCT_SAMPLE).max(1);
    let seen: HashSet<u64> = (0..column.len()).step_by(step).map(&bits).collect();
    2 * seen.len() > column.len().div_ceil(step)
}

/// True for a numeric column whose distinct values in a row group's worth of rows would overflow
/// a dictionary page, though a sample finds them repeating: the writer would hash every row into
/// a dictionary only to fall back to plain pages. The ages of a 10^7-job queue (2·10^5 distinct
/// in a row group, the oldest jobs all at the maximum) cost a tenth of `score` that way.
fn numbers_overflow_dictionary(column: &dyn Array) -> bool {
    let (Some(bits), Some(width)) = (value_bits(column), column.data_type().primitive_width()) else {
        return false;
    };
    let most = DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT / width;
    let mut seen = hashbrown::HashSet::with_capacity_and_hasher(1024, foldhash::fast::FixedState::default());
    (0..column.len().min(ROW_GROUP_ROWS)).any(|i| seen.insert(bits(i)) && seen.len() > most)
}

/// True for an integer column whose neighbouring values are close (job ids in queue order,
/// associations' ids in tree order): written as differences (`DELTA_BINARY_PACKED`) they take a
/// few bits each instead of 8 bytes for ZSTD to crunch (a 10^7-job queue's ids: 5 MB before ZSTD
/// per row group, 92 kB as differences). Scattered values (priorities) pack no smaller as
/// differences, and ZSTD then finds nothing left to compress. Judged on the first rows, in order.
fn neighbours_close(column: &dyn Array) -> bool {
    let Some(bits) = value_bits(column).filter(|_| column.data_type().is_integer()) else { return false };
    let rows = column.len().min(DISTINCT_SAMPLE);
    let width = |x: u64| 64 - x.leading_zeros();
    let (low, high) = (0..rows).map(|i| bits(i) as i64).fold((i64::MAX, i64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    // Differences zigzagged as the encoding stores them: small either way, signed.
    let step = (1..rows).map(|i| bits(i).wrapping_sub(bits(i - 1)) as i64).map(|d| ((d << 1) ^ (d >> 63)) as u64);
    rows > 1 && width(step.max().unwrap_or(0)) + 8 <= width(high.wrapping_sub(low) as u64)
}

/// Value `i` of a numeric column as bits (equal values, equal bits); `None` for another column.
fn value_bits(column: &dyn Array) -> Option<Box<dyn Fn(usize) -> u64 + '_>> {
    Some(match column.data_type() {
        DataType::Float64 => {
            let v = column.as_primitive::<Float64Type>().values();
            Box::new(move |i| v[i].to_bits())
        }
        DataType::UInt64 => {
            let v = column.as_primitive::<UInt64Type>().values();
            Box::new(move |i| v[i])
        }
        DataType::Int64 => {
            let v = column.as_primitive::<Int64Type>().values();
            Box::new(move |i| v[i] as u64)
        }
        DataType::UInt32 => {
            let v = column.as_primitive::<UInt32Type>().values();
            Box::new(move |i| u64::from(v[i]))
        }
        DataType::Int32 => {
            let v = column.as_primitive::<Int32Type>().values();
            Box::new(move |i| v[i] as u64)
        }
        _ => return None,
    })
}

/// True for a name column whose distinct names in a row group's worth of rows would overflow a
/// dictionary page: the writer would hash every row into a dictionary only to fall back to plain
/// pages (a 10^7-job queue against 9·10^5 users spent a tenth of `score` there).
fn names_overflow_dictionary(column: &dyn Array) -> bool {
    let Some(dict) = column.as_any_dictionary_opt() else { return false };
    let Some(values) = dict.values().as_string_opt::<i32>().filter(|v| !v.is_empty()) else { return false };
    let rows = dict.slice(0, dict.len().min(ROW_GROUP_ROWS));
    let mut seen = vec![false; values.len()];
    let mut bytes = 0;
    for (i, k) in rows.as_any_dictionary().normalized_keys().into_iter().enumerate() {
        if rows.is_valid(i) && !std::mem::replace(&mut seen[k], true) {
            bytes += values.value_length(k) as usize + 4;
            if bytes > DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT {
                return true;
            }
        }
    }
    false
}

/// A dictionary column of names as the plain strings it stands for (any other column as it is),
/// gathered a task of rows at a time across rayon.
///
/// The writer gathers a dictionary column with plain pages itself, one thread per column, a
/// random read of the dictionary per row; at 9·10^5 names that was a tenth of a 10^7-job `score`
/// and the longest task of each row group. Here the reads are spread over the cores, the next
/// rows' names prefetched, and the writer copies the strings in order. The pages are the same.
fn gathered_names(names: &ArrayRef) -> ArrayRef {
    let Some(dict) = names.as_dictionary_opt::<UInt32Type>() else { return names.clone() };
    let Some(values) = dict.values().as_string_opt::<i32>() else { return names.clone() };
    let keys = dict.keys();
    let name = |r: usize| if keys.is_valid(r) { values.value(keys.value(r) as usize).as_bytes() } else { &[] };
    let lengths = column(keys.len(), |r| name(r).len());
    // Past 2 GiB of names the rows need 64-bit offsets: the writer then gathers them itself.
    if lengths.iter().sum::<usize>() > i32::MAX as usize {
        return names.clone();
    }
    let offsets = OffsetBuffer::<i32>::from_lengths(lengths);
    let mut bytes = vec![0u8; offsets.last() as usize];
    // Tasks of rows, each with the bytes its rows fill.
    let mut tasks = Vec::new();
    let mut rest = bytes.as_mut_slice();
    for start in (0..keys.len()).step_by(GATHER_ROWS) {
        let end = (start + GATHER_ROWS).min(keys.len());
        let (task, after) = std::mem::take(&mut rest).split_at_mut((offsets[end] - offsets[start]) as usize);
        tasks.push((start..end, task));
        rest = after;
    }
    let (starts, data) = (values.value_offsets(), values.value_data());
    for_each_task(&mut tasks, |(rows, out)| {
        let mut at = 0;
        for r in rows.clone() {
            // A name's offset two strides ahead, then its bytes (the offset arrived) one ahead. A
            // null row's key may point anywhere: looked up with `get`, never indexed.
            let start_of = |ahead: usize| keys.values().get(r + ahead).and_then(|&k| starts.get(k as usize));
            if let Some(offset) = start_of(2 * GATHER_AHEAD) {
                prefetch(offset);
            }
            if let Some(byte) = start_of(GATHER_AHEAD).and_then(|&o| data.get(o as usize)) {
                prefetch(byte);
            }
            let name = name(r);
            out[at..at + name.len()].copy_from_slice(name);
            at += name.len();
        }
    });
    Arc::new(StringArray::new(offsets, bytes.into(), keys.nulls().cloned()))
}

/// Rows per task of [`gathered_names`].
const GATHER_ROWS: usize = 1 << 15;

/// How many rows ahead [`gathered_names`] prefetches a name's bytes (and twice that, its offset).
const GATHER_AHEAD: usize = 16;

/// ZSTD level of every Parquet output.
const ZSTD_LEVEL: i32 = 1;

/// Writes `batch` to `path` atomically, ZSTD-compressed, with `metadata`.
///
/// # Errors
/// I/O or encoding errors naming `path`; the target is then untouched.
pub fn write_parquet(path: &Path, batch: &RecordBatch, metadata: Vec<KeyValue>) -> Result<()> {
    let mut sink = ParquetSink::create(path, batch, metadata)?;
    sink.write(batch)?;
    sink.finish()
}

/// `schema` with dictionary-encoded names declared as their plain values: Parquet's pages hold
/// names the same way either way, and the file's Arrow schema then tells every reader the one
/// name type of all our outputs (`string`), so a jobs file joins an associations file without a
/// cast.
fn plain_names(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Dictionary(_, value) => f.as_ref().clone().with_data_type(value.as_ref().clone()),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// A Parquet file written batch by batch, atomically: nothing is at `path` until [`Self::finish`].
///
/// Each batch is cut into row groups of at most 2^20 rows, encoded and compressed
/// column by column across rayon, a few row groups at a time, and appended in order. Each column
/// chunk is encoded on its own, so the bytes depend on the rows and their batches, never on the
/// thread count.
pub struct ParquetSink {
    path: std::path::PathBuf,
    schema: SchemaRef,
    /// Per field: a dictionary of names written as plain pages, handed to the writer as the plain
    /// strings it would gather ([`gathered_names`]).
    gathered: Vec<bool>,
    writer: SerializedFileWriter<AtomicFile>,
    factory: ArrowRowGroupWriterFactory,
    row_groups: usize,
}

impl ParquetSink {
    /// Starts a file at `path` (ZSTD, `metadata` in the footer) for batches of the schema of
    /// `first`, the first batch to be written, whose values also choose each column's encoding.
    ///
    /// # Errors
    /// The temporary file cannot be created.
    pub fn create(path: &Path, first: &RecordBatch, metadata: Vec<KeyValue>) -> Result<Self> {
        let file = AtomicFile::create(path)?;
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL).expect("valid level")))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_key_value_metadata(Some(metadata));
        // A dictionary makes few-valued numbers (weighted factors, depths) smaller and faster to
        // compress, but on nearly distinct ones (ids, usage) it is built only to be thrown away.
        let mut gathered = Vec::new();
        // (Whether the column gets no dictionary, whether its names overflow one.)
        let plain: Vec<(bool, bool)> = first
            .columns()
            .par_iter()
            .map(|c| {
                let overflows = names_overflow_dictionary(c.as_ref());
                (overflows || mostly_distinct(c.as_ref()) || numbers_overflow_dictionary(c.as_ref()), overflows)
            })
            .collect();
        for ((field, c), (plain, overflows)) in first.schema().fields().iter().zip(first.columns()).zip(plain) {
            let path = || ColumnPath::from(field.name().as_str());
            if plain {
                props = props.set_column_dictionary_enabled(path(), false);
                if neighbours_close(c) {
                    props = props.set_column_encoding(path(), Encoding::DELTA_BINARY_PACKED);
                }
            }
            gathered.push(overflows);
            // Names repeated row after row (users, accounts, partitions of jobs) in no order: each
            // row group's min and max would span nearly every name, so they could prune nothing,
            // and comparing every value for them was a tenth of a 10^7-job `score`.
            if matches!(field.data_type(), DataType::Dictionary(..)) {
                props = props.set_column_statistics_enabled(path(), EnabledStatistics::None);
            }
        }
        let schema = plain_names(&first.schema());
        let (writer, factory) = ArrowWriter::try_new(file, schema.clone(), Some(props.build()))
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(|e| Error::format(path, e))?;
        Ok(ParquetSink { path: path.to_path_buf(), schema, gathered, writer, factory, row_groups: 0 })
    }

    /// Appends the rows of `batch` (of the sink's schema).
    ///
    /// # Errors
    /// Encoding or I/O errors naming the file.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let enc = |e: parquet::errors::ParquetError| Error::format(&self.path, e);
        let groups: Vec<usize> = (0..batch.num_rows().div_ceil(ROW_GROUP_ROWS)).collect();
        for wave in groups.chunks(rayon::current_num_threads().max(1)) {
            let mut tasks = Vec::new();
            for &g in wave {
                let rows = batch.slice(g * ROW_GROUP_ROWS, ROW_GROUP_ROWS.min(batch.num_rows() - g * ROW_GROUP_ROWS));
                let mut writers = self.factory.create_column_writers(self.row_groups + g).map_err(enc)?.into_iter();
                let columns = rows
                    .columns()
                    .iter()
                    .zip(&self.gathered)
                    .map(|(c, &gather)| if gather { gathered_names(c) } else { c.clone() });
                // A struct column has a writer per field (leaf), in order.
                for (field, column) in self.schema.fields().iter().zip(columns) {
                    tasks.push((
                        writers.by_ref().take(leaf_count(field.data_type())).collect::<Vec<_>>(),
                        field,
                        column,
                    ));
                }
            }
            let chunks = tasks
                .into_par_iter()
                .map(|(writers, field, column)| {
                    let leaves = compute_leaves(field, &column)?;
                    writers
                        .into_iter()
                        .zip(leaves)
                        .map(|(mut w, leaf)| {
                            w.write(&leaf)?;
                            w.close()
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()
                })
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(enc)?;
            let chunks: Vec<_> = chunks.into_iter().flatten().collect();
            let leaves: usize = self.schema.fields().iter().map(|f| leaf_count(f.data_type())).sum();
            let mut chunks = chunks.into_iter();
            for _ in wave {
                let mut row_group = self.writer.next_row_group().map_err(enc)?;
                for chunk in chunks.by_ref().take(leaves) {
                    chunk.append_to_row_group(&mut row_group).map_err(enc)?;
                }
                row_group.close().map_err(enc)?;
            }
        }
        self.row_groups += groups.len();
        Ok(())
    }

    /// Writes the footer and moves the file into place.
    ///
    /// # Errors
    /// Encoding or I/O errors naming the file; the target is then untouched.
    pub fn finish(self) -> Result<()> {
        self.writer.into_inner().map_err(|e| Error::format(&self.path, e))?.commit()
    }
}

/// The name ids a batch's rows use, as one bit per id, and then each used id's key in the
/// batch's dictionary: its rank among them. The bits of a queue's 10^6 names fit in the L2 cache,
/// where a table of 10^6 keys did not: marking a slice's ids there and numbering them took
/// 16-19 ms of the 26-40 ms a 2^19-job slice's batch took (on one thread), 9-11 ms with the bits.
struct UsedIds {
    bits: Vec<u64>,
    /// Per word of `bits`, the used ids before it.
    ranks: Vec<u32>,
}

impl UsedIds {
    /// No id of `0..len` used.
    fn new(len: usize) -> Self {
        UsedIds { bits: vec![0; len.div_ceil(64)], ranks: Vec::new() }
    }

    /// `id` used ([`NONE`]: no name, nothing to mark).
    fn mark(&mut self, id: u32) {
        if id != NONE {
            self.bits[id as usize / 64] |= 1 << (id % 64);
        }
    }

    /// The ranks counted, once every id is marked.
    fn ranked(mut self) -> Self {
        let mut before = 0;
        self.ranks = (self.bits.iter())
            .map(|w| {
                let rank = before;
                before += w.count_ones();
                rank
            })
            .collect();
        self
    }

    /// The key of a used `id` (0 for [`NONE`], whose row is null).
    fn key(&self, id: u32) -> u32 {
        if id == NONE {
            return 0;
        }
        let (w, b) = (id as usize / 64, id % 64);
        self.ranks[w] + (self.bits[w] & ((1u64 << b) - 1)).count_ones()
    }

    /// The used ids in order.
    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.bits.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let b = rest.trailing_zeros();
                    rest &= rest - 1;
                    (w * 64) as u32 + b
                })
            })
        })
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    /// Used ids come back in order, each keyed by its rank among them, across words of bits; no
    /// name (NONE) is not marked, and keys as 0.
    #[test]
    fn used_ids_are_keyed_by_their_rank() {
        let marked = [5u32, 64, 63, 0, 200, 5, 129, NONE, 64];
        let mut used = UsedIds::new(201);
        marked.iter().for_each(|&id| used.mark(id));
        let used = used.ranked();
        let ids: Vec<u32> = used.ids().collect();
        assert_eq!(ids, [0, 5, 63, 64, 129, 200]);
        let keys: Vec<u32> = ids.iter().map(|&id| used.key(id)).collect();
        assert_eq!(keys, [0, 1, 2, 3, 4, 5]);
        assert_eq!(used.key(NONE), 0);
    }

    /// `batch` written by [`write_parquet`]: the metadata of its first row group, and the file
    /// read back.
    fn written(batch: &RecordBatch) -> (parquet::file::metadata::RowGroupMetaData, RecordBatch) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        write_parquet(&path, batch, Vec::new()).unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        (reader.metadata().row_group(0).clone(), crate::io::read_parquet_whole(&path).unwrap())
    }

    /// The metadata of the first row group of `batch` written by [`write_parquet`].
    fn first_row_group(batch: &RecordBatch) -> parquet::file::metadata::RowGroupMetaData {
        written(batch).0
    }

    /// Whether each column of `group` has pages in `encoding`.
    fn encoded(group: &parquet::file::metadata::RowGroupMetaData, encoding: Encoding) -> Vec<bool> {
        group.columns().iter().map(|c| c.encodings().any(|e| e == encoding)).collect()
    }

    #[test]
    fn few_valued_numbers_get_a_dictionary_and_distinct_ones_do_not() {
        let n = 600_000;
        // Two thirds at the maximum, then 2·10^5 distinct ages: a sample sees them repeat, but
        // they overflow a dictionary page.
        let age = |i: u32| if i < 400_000 { 1.0 } else { f64::from(i) / f64::from(n) };
        let batch = RecordBatch::try_from_iter([
            ("factor", Arc::new(Float64Array::from_iter_values((0..n).map(|i| f64::from(i % 7) / 7.0))) as ArrayRef),
            ("usage", Arc::new(Float64Array::from_iter_values((0..n).map(|i| f64::from(i) * 1.5))) as ArrayRef),
            ("depth", Arc::new(UInt32Array::from_iter_values((0..n).map(|i| i % 4))) as ArrayRef),
            ("id", Arc::new(UInt64Array::from_iter_values((0..n).map(u64::from))) as ArrayRef),
            ("age", Arc::new(Float64Array::from_iter_values((0..n).map(age))) as ArrayRef),
        ])
        .unwrap();
        assert_eq!(encoded(&first_row_group(&batch), Encoding::RLE_DICTIONARY), [true, false, true, false, false]);
        assert!(mostly_distinct(batch.column(1).as_ref()) && !mostly_distinct(batch.column(0).as_ref()));
        let overflows = |c: usize| numbers_overflow_dictionary(batch.column(c).as_ref());
        assert!(!mostly_distinct(batch.column(4).as_ref()) && overflows(4) && !overflows(0) && !overflows(2));
    }

    #[test]
    fn integers_close_to_their_neighbours_are_written_as_differences() {
        let n = 100_000u32;
        // Ids rising by 1 to 3 (and one step back); scattered priorities; a float counter.
        let ids = (0..n).map(|i| 7_000_000 + i64::from(i) * 2 + i64::from(i % 3) - i64::from(i == 500) * 9);
        let scattered = (0..n).map(|i| (i.wrapping_mul(2_654_435_761) >> 12) as i32);
        let batch = RecordBatch::try_from_iter([
            ("job_id", Arc::new(Int64Array::from_iter_values(ids)) as ArrayRef),
            ("priority", Arc::new(Int32Array::from_iter_values(scattered)) as ArrayRef),
            ("usage", Arc::new(Float64Array::from_iter_values((0..n).map(f64::from))) as ArrayRef),
        ])
        .unwrap();
        let (group, back) = written(&batch);
        assert_eq!(encoded(&group, Encoding::DELTA_BINARY_PACKED), [true, false, false]);
        assert_eq!(back, batch);
    }

    #[test]
    fn name_columns_carry_no_min_max_and_the_others_do() {
        let n = 1000u32;
        let names = StringArray::from(vec!["physics", "chem", "bio"]);
        let keys = UInt32Array::from_iter_values((0..n).map(|i| i % 3));
        let batch = RecordBatch::try_from_iter([
            ("account", Arc::new(DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(names)).unwrap()) as ArrayRef),
            ("factor", Arc::new(Float64Array::from_iter_values((0..n).map(|i| f64::from(i % 7)))) as ArrayRef),
            ("user", Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("u{i}")))) as ArrayRef),
        ])
        .unwrap();
        let group = first_row_group(&batch);
        let has_min_max = |c: usize| group.column(c).statistics().is_some_and(|s| s.min_bytes_opt().is_some());
        assert_eq!((0..3).map(has_min_max).collect::<Vec<_>>(), [false, true, true]);
    }

    #[test]
    fn names_too_many_for_a_dictionary_page_are_written_plain() {
        // 60,000 distinct 20-byte names overflow a 1 MiB dictionary page; 3 names do not.
        let many = StringArray::from_iter_values((0..60_000).map(|i| format!("user-with-a-name{i:04}")));
        let n = 120_000u32;
        let dict = |values: StringArray, modulo: u32| -> ArrayRef {
            let keys = UInt32Array::from_iter((0..n).map(|i| (i % 7 != 0).then_some(i % modulo)));
            Arc::new(DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(values)).unwrap())
        };
        let batch = RecordBatch::try_from_iter([
            ("user", dict(many.clone(), 60_000)),
            ("account", dict(StringArray::from(vec!["physics", "chem", "bio"]), 3)),
            ("few_of_many", dict(many, 50)),
        ])
        .unwrap();
        assert_eq!(
            batch.columns().iter().map(|c| names_overflow_dictionary(c)).collect::<Vec<_>>(),
            [true, false, false]
        );
        let (group, back) = written(&batch);
        assert_eq!(encoded(&group, Encoding::RLE_DICTIONARY), [false, true, true]);
        let expected = arrow::compute::cast(batch.column(0), &DataType::Utf8).unwrap();
        assert_eq!(back.column(0).as_ref(), expected.as_ref());
    }

    #[test]
    fn gathered_names_are_the_dictionary_values_row_by_row() {
        // Empty names, null rows, and more rows than one task.
        let names = (0..5000).map(|i| if i % 100 == 0 { String::new() } else { format!("name-{i}") });
        let values = StringArray::from_iter_values(names);
        let n = 3 * GATHER_ROWS as u32 + 17;
        let keys =
            UInt32Array::from_iter((0..n).map(|i| (i % 11 != 0).then_some(i.wrapping_mul(2_654_435_761) % 5000)));
        // A null row's key is not a name's: one far out of range.
        let (mut raw, nulls) = (keys.values().to_vec(), keys.nulls().cloned());
        raw[44] = u32::MAX;
        let keys = UInt32Array::new(raw.into(), nulls);
        let dict: ArrayRef = Arc::new(DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(values)).unwrap());
        let expected = arrow::compute::cast(&dict, &DataType::Utf8).unwrap();
        assert_eq!(gathered_names(&dict).as_ref(), expected.as_ref());
        let numbers: ArrayRef = Arc::new(UInt32Array::from(vec![1, 2]));
        assert!(Arc::ptr_eq(&gathered_names(&numbers), &numbers));
    }

    #[test]
    fn dictionary_names_read_back_as_plain_strings_with_their_values() {
        let names = StringArray::from(vec!["physics", "chem"]);
        let keys = UInt32Array::from(vec![Some(1), None, Some(0), Some(1)]);
        let dict = DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(names)).unwrap();
        let batch = RecordBatch::try_from_iter([("account", Arc::new(dict) as ArrayRef)]).unwrap();
        let back = written(&batch).1;
        assert_eq!(back.schema().field(0).data_type(), &DataType::Utf8);
        let values: Vec<Option<&str>> = back.column(0).as_string::<i32>().iter().collect();
        assert_eq!(values, [Some("chem"), None, Some("physics"), Some("chem")]);
    }
}
