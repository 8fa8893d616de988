//! The Parquet sink: record batches written as one file, atomically, ZSTD, row groups encoded in
//! parallel with the same bytes for any thread count, names and repeating numbers
//! dictionary-encoded from their keys (`dictionary_chunk`).

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray};
use arrow::buffer::OffsetBuffer;
use std::collections::HashSet;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Field, Float64Type, Int32Type, Int64Type, Schema, SchemaRef, UInt32Type, UInt64Type};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowColumnChunk, ArrowRowGroupWriterFactory, compute_leaves};
use parquet::basic::{Compression, Encoding, Type as PhysicalType, ZstdLevel};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT, EnabledStatistics, WriterProperties};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescPtr, ColumnPath};
use rayon::prelude::*;

use super::atomic::AtomicFile;
use super::dictionary_chunk::{self, Dictionary, NO_RANK, ValueOrder};
use crate::error::{Error, Result};
use crate::memory::prefetch;
use crate::parallel::{column, for_each_task};

/// Version of the association Parquet schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: &str = "1";

/// The id of no name: [`UsedIds`] marks nothing for it and keys its row as a null.
pub const NO_ID: u32 = u32::MAX;

/// The Parquet leaf columns of an Arrow type: one, or one per field of a struct.
fn leaf_count(data_type: &DataType) -> usize {
    match data_type {
        DataType::Struct(fields) => fields.iter().map(|f| leaf_count(f.data_type())).sum(),
        _ => 1,
    }
}

/// The metadata every file the engine writes starts with: the schema and engine versions.
pub fn version_metadata() -> Vec<KeyValue> {
    vec![
        KeyValue::new("fairshare.schema_version".to_string(), SCHEMA_VERSION.to_string()),
        KeyValue::new("fairshare.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
    ]
}

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
    let mut seen = hashbrown::HashSet::with_capacity_and_hasher(1024, crate::hash::FixedState::default());
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

/// A dictionary column of names as the plain strings it stands for (any other column as it is),
/// gathered a task of rows at a time across rayon: the names a chunk cannot be keyed with
/// ([`name_dictionary`]) are written plain by arrow-rs.
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

fn zstd_level() -> ZstdLevel {
    ZstdLevel::try_new(ZSTD_LEVEL).expect("valid level")
}

/// A chunk of a name column (an Arrow dictionary of strings) as keys and the dictionary of the
/// names its rows use, keyed by their order in the column's values; `None` for another column,
/// rows of no name, or names past [`MAX_NAME_DICTIONARY`] bytes.
fn name_dictionary(names: &ArrayRef) -> Option<(Vec<u32>, Dictionary)> {
    let dict = names.as_dictionary_opt::<UInt32Type>()?;
    // A null among the values makes its rows null, which keys alone do not say.
    let values = dict.values().as_string_opt::<i32>().filter(|v| v.null_count() == 0)?;
    let keys = dict.keys();
    let mut used = UsedIds::new(values.len());
    for r in (0..keys.len()).filter(|&r| keys.is_valid(r)) {
        used.mark(keys.value(r));
    }
    let used = used.ranked();
    let (mut plain, mut len) = (Vec::new(), 0);
    for id in used.ids() {
        let name = values.value(id as usize).as_bytes();
        plain.extend_from_slice(&(name.len() as u32).to_le_bytes());
        plain.extend_from_slice(name);
        len += 1;
        if plain.len() > MAX_NAME_DICTIONARY {
            return None;
        }
    }
    if len == 0 {
        return None;
    }
    let keys = column(keys.len(), |r| if keys.is_valid(r) { used.key(keys.value(r)) } else { 0 });
    Some((keys, Dictionary { plain, len, statistics: None, order: None }))
}

/// A chunk of a column of numbers (`Float64`, `Int32` or `Int64`) as keys and the dictionary of
/// its distinct values, with their statistics (min and max as arrow-rs takes them: NaN left out,
/// -0 below +0); `None` for another column, or past a dictionary page's worth of values.
fn number_dictionary(numbers: &ArrayRef) -> Option<(Vec<u32>, Dictionary)> {
    let width = numbers.data_type().primitive_width()?;
    let nulls = numbers.logical_nulls();
    let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
    let most = DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT / width;
    // Each type's values read directly: a call through `value_bits` per row was 2% of a `score`.
    let (keys, values) = match numbers.data_type() {
        DataType::Float64 => {
            let v = numbers.as_primitive::<Float64Type>().values();
            dictionary_chunk::intern(v.len(), |i| valid(i).then(|| v[i].to_bits()), most)
        }
        DataType::Int32 => {
            let v = numbers.as_primitive::<Int32Type>().values();
            dictionary_chunk::intern(v.len(), |i| valid(i).then(|| v[i] as u64), most)
        }
        DataType::Int64 => {
            let v = numbers.as_primitive::<Int64Type>().values();
            dictionary_chunk::intern(v.len(), |i| valid(i).then(|| v[i] as u64), most)
        }
        _ => None,
    }?;
    if values.is_empty() {
        return None;
    }
    let nulls = Some(numbers.logical_null_count() as u64);
    // Keys in the order of their values, NaN last; the statistics' bounds are the first and the
    // last of those that are not NaN.
    let mut key: Vec<u32> = (0..values.len() as u32).collect();
    let (statistics, physical, numbers) = match numbers.data_type() {
        DataType::Float64 => {
            let value = |k: u32| f64::from_bits(values[k as usize]);
            key.sort_unstable_by(|&a, &b| {
                value(a).is_nan().cmp(&value(b).is_nan()).then(value(a).total_cmp(&value(b)))
            });
            let numbers = key.iter().take_while(|&&k| !value(k).is_nan()).count();
            let (min, max) = (key[..numbers].first(), key[..numbers].last());
            // Rows of NaN, counted as arrow-rs counts them.
            let nans = match key.len() - numbers {
                0 => 0,
                _ => (0..keys.len()).filter(|&r| valid(r) && value(keys[r]).is_nan()).count() as u64,
            };
            let stats = ValueStatistics::new(min.map(|&k| value(k)), max.map(|&k| value(k)), None, nulls, false);
            let stats = stats.with_nan_count(Some(nans)).with_backwards_compatible_min_max(true);
            (Statistics::from(stats), PhysicalType::DOUBLE, numbers)
        }
        DataType::Int32 | DataType::Int64 => {
            // The bits are sign-extended: as i64 they order, and cast back, as their own type.
            let value = |k: u32| values[k as usize] as i64;
            key.sort_unstable_by_key(|&k| value(k));
            let (min, max) = (key.first().map(|&k| value(k)), key.last().map(|&k| value(k)));
            let narrow = |v: Option<i64>| v.map(|v| v as i32);
            let (stats, physical) = match numbers.data_type() {
                DataType::Int32 => (
                    ValueStatistics::new(narrow(min), narrow(max), None, nulls, false)
                        .with_backwards_compatible_min_max(true)
                        .into(),
                    PhysicalType::INT32,
                ),
                _ => (
                    ValueStatistics::new(min, max, None, nulls, false).with_backwards_compatible_min_max(true).into(),
                    PhysicalType::INT64,
                ),
            };
            (stats, physical, key.len())
        }
        _ => return None,
    };
    let mut plain = Vec::with_capacity(values.len() * width);
    for &v in &values {
        plain.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    let mut rank = vec![NO_RANK; values.len()];
    for (r, &k) in key[..numbers].iter().enumerate() {
        rank[k as usize] = r as u32;
    }
    let order = ValueOrder { rank, key, physical, width };
    Some((keys, Dictionary { plain, len: values.len(), statistics: Some(statistics), order: Some(order) }))
}

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
/// thread count. Names, and numbers that repeat, are dictionary-encoded here from their keys
/// (`output::dictionary_chunk`), the rest by arrow-rs.
pub struct ParquetSink {
    path: std::path::PathBuf,
    schema: SchemaRef,
    /// Per field: how its chunks are written.
    kinds: Vec<ChunkKind>,
    writer: SerializedFileWriter<AtomicFile>,
    factory: ArrowRowGroupWriterFactory,
    row_groups: usize,
}

/// How a field's column chunks are written.
enum ChunkKind {
    /// By arrow-rs, as the writer's properties say.
    Arrow,
    /// A dictionary of names keyed by rank ([`name_dictionary`]), written here; past
    /// [`MAX_NAME_DICTIONARY`] bytes, plain by arrow-rs, gathered first ([`gathered_names`]).
    Names(ColumnDescPtr),
    /// Numbers that repeat, interned here ([`number_dictionary`]); past a dictionary page's worth,
    /// plain by arrow-rs.
    Numbers(ColumnDescPtr),
}

/// One encoded column chunk.
enum Chunk {
    Arrow(ArrowColumnChunk),
    Keyed(bytes::Bytes, ColumnCloseResult),
}

/// The largest dictionary of names (its PLAIN bytes) a chunk is written with; a page must stay
/// under 2 GiB, and a reader holds the dictionary whole.
const MAX_NAME_DICTIONARY: usize = 1 << 28;

impl ParquetSink {
    /// Starts a file at `path` (ZSTD, `metadata` in the footer) for batches of the schema of
    /// `first`, the first batch to be written, whose values also choose each column's encoding.
    ///
    /// # Errors
    /// The temporary file cannot be created.
    pub fn create(path: &Path, first: &RecordBatch, metadata: Vec<KeyValue>) -> Result<Self> {
        let file = AtomicFile::create(path)?;
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(zstd_level()))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_key_value_metadata(Some(metadata));
        // A dictionary makes few-valued numbers (weighted factors, depths) smaller and faster to
        // compress, but on nearly distinct ones (ids, usage) it is built only to be thrown away.
        let plain: Vec<bool> = first
            .columns()
            .par_iter()
            .map(|c| mostly_distinct(c.as_ref()) || numbers_overflow_dictionary(c.as_ref()))
            .collect();
        let mut keyed = Vec::new();
        for ((field, c), plain) in first.schema().fields().iter().zip(first.columns()).zip(plain) {
            let path = || ColumnPath::from(field.name().as_str());
            let names = matches!(field.data_type(), DataType::Dictionary(..));
            let numbers = !plain && matches!(field.data_type(), DataType::Float64 | DataType::Int32 | DataType::Int64);
            // What arrow-rs writes of a keyed column is the fallback: plain.
            if plain || names || numbers {
                props = props.set_column_dictionary_enabled(path(), false);
                if plain && neighbours_close(c) {
                    props = props.set_column_encoding(path(), Encoding::DELTA_BINARY_PACKED);
                }
            }
            // Names repeated row after row (users, accounts, partitions of jobs) in no order: each
            // row group's min and max would span nearly every name, so they could prune nothing,
            // and comparing every value for them was a tenth of a 10^7-job `score`.
            if names {
                props = props.set_column_statistics_enabled(path(), EnabledStatistics::None);
            }
            keyed.push((names, numbers));
        }
        let schema = plain_names(&first.schema());
        let (writer, factory) = ArrowWriter::try_new(file, schema.clone(), Some(props.build()))
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(|e| Error::format(path, e))?;
        let mut leaf = 0;
        let kinds = schema
            .fields()
            .iter()
            .zip(keyed)
            .map(|(field, (names, numbers))| {
                let descr = writer.schema_descr().column(leaf);
                leaf += leaf_count(field.data_type());
                match (names, numbers) {
                    (true, _) => ChunkKind::Names(descr),
                    (_, true) => ChunkKind::Numbers(descr),
                    _ => ChunkKind::Arrow,
                }
            })
            .collect();
        Ok(ParquetSink { path: path.to_path_buf(), schema, kinds, writer, factory, row_groups: 0 })
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
                // A struct column has a writer per field (leaf), in order.
                for ((field, column), kind) in self.schema.fields().iter().zip(rows.columns()).zip(&self.kinds) {
                    let writers = writers.by_ref().take(leaf_count(field.data_type())).collect::<Vec<_>>();
                    tasks.push((writers, field, column.clone(), kind));
                }
            }
            let chunks = tasks
                .into_par_iter()
                .map(|(writers, field, column, kind)| {
                    let keyed = match kind {
                        ChunkKind::Arrow => None,
                        ChunkKind::Names(descr) => name_dictionary(&column).map(|k| (descr, k)),
                        ChunkKind::Numbers(descr) => number_dictionary(&column).map(|k| (descr, k)),
                    };
                    if let Some((descr, (keys, dictionary))) = keyed {
                        let (bytes, close) = dictionary_chunk::write_chunk(
                            descr.clone(),
                            zstd_level(),
                            &keys,
                            column.nulls(),
                            dictionary,
                        )?;
                        return Ok(vec![Chunk::Keyed(bytes, close)]);
                    }
                    let column = if matches!(kind, ChunkKind::Names(_)) { gathered_names(&column) } else { column };
                    let leaves = compute_leaves(field, &column)?;
                    writers
                        .into_iter()
                        .zip(leaves)
                        .map(|(mut w, leaf)| {
                            w.write(&leaf)?;
                            w.close().map(Chunk::Arrow)
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
                    match chunk {
                        Chunk::Arrow(chunk) => chunk.append_to_row_group(&mut row_group),
                        Chunk::Keyed(bytes, close) => row_group.append_column(&bytes, close),
                    }
                    .map_err(enc)?;
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
pub struct UsedIds {
    bits: Vec<u64>,
    /// Per word of `bits`, the used ids before it.
    ranks: Vec<u32>,
}

impl UsedIds {
    /// No id of `0..len` used.
    pub fn new(len: usize) -> Self {
        UsedIds { bits: vec![0; len.div_ceil(64)], ranks: Vec::new() }
    }

    /// `id` used ([`NO_ID`]: no name, nothing to mark).
    pub fn mark(&mut self, id: u32) {
        if id != NO_ID {
            self.bits[id as usize / 64] |= 1 << (id % 64);
        }
    }

    /// The ranks counted, once every id is marked.
    pub fn ranked(mut self) -> Self {
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

    /// The key of a used `id` (0 for [`NO_ID`], whose row is null).
    pub fn key(&self, id: u32) -> u32 {
        if id == NO_ID {
            return 0;
        }
        let (w, b) = (id as usize / 64, id % 64);
        self.ranks[w] + (self.bits[w] & ((1u64 << b) - 1)).count_ones()
    }

    /// The used ids in order.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{DictionaryArray, Float64Array, Int32Array, Int64Array, UInt32Array, UInt64Array};
    use parquet::file::reader::{FileReader, SerializedFileReader};

    /// Used ids come back in order, each keyed by its rank among them, across words of bits; no
    /// name (NO_ID) is not marked, and keys as 0.
    #[test]
    fn used_ids_are_keyed_by_their_rank() {
        let marked = [5u32, 64, 63, 0, 200, 5, 129, NO_ID, 64];
        let mut used = UsedIds::new(201);
        marked.iter().for_each(|&id| used.mark(id));
        let used = used.ranked();
        let ids: Vec<u32> = used.ids().collect();
        assert_eq!(ids, [0, 5, 63, 64, 129, 200]);
        let keys: Vec<u32> = ids.iter().map(|&id| used.key(id)).collect();
        assert_eq!(keys, [0, 1, 2, 3, 4, 5]);
        assert_eq!(used.key(NO_ID), 0);
    }

    /// `batch` written by [`write_parquet`]: the metadata of its first row group, and the file
    /// read back.
    fn written(batch: &RecordBatch) -> (parquet::file::metadata::RowGroupMetaData, RecordBatch) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        write_parquet(&path, batch, Vec::new()).unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        (reader.metadata().row_group(0).clone(), crate::read::row_groups::read_whole(&path).unwrap())
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
    fn names_are_dictionary_encoded_from_their_keys_however_many() {
        // 60,000 distinct 20-byte names (more than arrow-rs's 1 MiB dictionary page), 3 names, and
        // 50 of the 60,000; null rows, and six pages of rows.
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
            // No row with a name: nothing to key, written plain by arrow-rs (gathered).
            ("no_name", {
                let keys = UInt32Array::from_iter((0..n).map(|_| None::<u32>));
                Arc::new(DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(StringArray::from(vec!["x"]))).unwrap())
            }),
        ])
        .unwrap();
        let (group, back) = written(&batch);
        assert_eq!(encoded(&group, Encoding::RLE_DICTIONARY), [true, true, true, false]);
        assert_eq!(encoded(&group, Encoding::PLAIN), [true, true, true, true], "the dictionary pages");
        for (i, c) in batch.columns().iter().enumerate() {
            let expected = arrow::compute::cast(c, &DataType::Utf8).unwrap();
            assert_eq!(back.column(i).as_ref(), expected.as_ref(), "column {i}");
        }
        // The dictionary holds the names the rows use, not the 60,000 the values offer.
        let few = group.column(2);
        let dictionary_page = few.data_page_offset() - few.dictionary_page_offset().expect("a dictionary page");
        assert!(dictionary_page < 2000, "{dictionary_page} bytes");
    }

    /// Numbers keyed here carry what arrow-rs gives the same values (its chunk statistics; NaN
    /// left out of the bounds, -0 below +0), each page's bounds in the column index, and read
    /// back the same, whole and by pages through the offset index.
    #[test]
    fn keyed_numbers_read_back_with_arrow_rs_statistics_and_page_bounds() {
        use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection};
        use parquet::file::metadata::PageIndexPolicy;
        use parquet::file::page_index::column_index::ColumnIndexMetaData;
        let n = 70_000usize;
        let floats = [1.5, -0.0, 0.0, f64::NAN, -3.25, 1e300];
        let batch = RecordBatch::try_from_iter([
            (
                "factor",
                Arc::new(Float64Array::from_iter((0..n).map(|i| (i % 11 != 0).then_some(floats[(i / 3) % 6]))))
                    as ArrayRef,
            ),
            // A page (rows 40,000-59,999) of NaN alone: no bounds, so no column index.
            (
                "nan_page",
                Arc::new(Float64Array::from_iter_values(
                    (0..n).map(|i| if (40_000..60_000).contains(&i) { f64::NAN } else { (i % 4) as f64 }),
                )),
            ),
            ("nice", Arc::new(Int32Array::from_iter_values((0..n).map(|i| (i % 9) as i32 - 4)))),
            ("level", Arc::new(Int64Array::from_iter((0..n).map(|i| (i >= 20_000).then_some((i % 5) as i64 * -7))))),
        ])
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("ours.parquet");
        write_parquet(&ours, &batch, Vec::new()).unwrap();
        let theirs = dir.path().join("theirs.parquet");
        let mut w = ArrowWriter::try_new(std::fs::File::create(&theirs).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let meta = |p: &Path| {
            let file = std::fs::File::open(p).unwrap();
            let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
            ParquetRecordBatchReaderBuilder::try_new_with_options(file, options).unwrap().metadata().clone()
        };
        let (ours_meta, theirs_meta) = (meta(&ours), meta(&theirs));
        let group = ours_meta.row_group(0);
        assert_eq!(encoded(group, Encoding::RLE_DICTIONARY), [true; 4]);
        for c in 0..4 {
            assert_eq!(group.column(c).statistics(), theirs_meta.row_group(0).column(c).statistics(), "column {c}");
        }
        let pages = ours_meta.page_index_for_row_group(0);
        assert!(pages.column_index(1).is_none(), "a page of NaN: no index");
        for c in [0, 2, 3] {
            let index = pages.column_index(c).expect("an index");
            let locations = pages.offset_index(c).expect("an offset index").page_locations();
            let starts: Vec<usize> = locations.iter().map(|l| l.first_row_index as usize).collect();
            assert_eq!(starts, [0, 20_000, 40_000, 60_000], "column {c}");
            for (p, &start) in starts.iter().enumerate() {
                let rows = batch.column(c).slice(start, 20_000.min(n - start));
                let nulls = rows.null_count() as i64;
                let bounds = |i: usize| -> Option<(f64, f64)> {
                    let v: Vec<f64> = match (i, &rows) {
                        (0, r) => r.as_primitive::<Float64Type>().iter().flatten().filter(|v| !v.is_nan()).collect(),
                        (2, r) => r.as_primitive::<Int32Type>().iter().flatten().map(f64::from).collect(),
                        (_, r) => r.as_primitive::<Int64Type>().iter().flatten().map(|v| v as f64).collect(),
                    };
                    let low = v.iter().copied().min_by(f64::total_cmp)?;
                    Some((low, v.iter().copied().max_by(f64::total_cmp)?))
                };
                let (low, high, null_count) = match index {
                    ColumnIndexMetaData::DOUBLE(x) => {
                        (x.min_value(p).copied(), x.max_value(p).copied(), x.null_count(p))
                    }
                    ColumnIndexMetaData::INT32(x) => {
                        (x.min_value(p).map(|&v| f64::from(v)), x.max_value(p).map(|&v| f64::from(v)), x.null_count(p))
                    }
                    ColumnIndexMetaData::INT64(x) => {
                        (x.min_value(p).map(|&v| v as f64), x.max_value(p).map(|&v| v as f64), x.null_count(p))
                    }
                    other => panic!("column {c}: {other:?}"),
                };
                let bits = |b: Option<(f64, f64)>| b.map(|(l, h)| (l.to_bits(), h.to_bits()));
                assert_eq!(bits(low.zip(high)), bits(bounds(c)), "column {c} page {p}");
                assert_eq!(null_count, Some(nulls), "column {c} page {p}");
            }
        }
        let read = |selection: Option<RowSelection>| {
            let file = std::fs::File::open(&ours).unwrap();
            let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
            let mut b = ParquetRecordBatchReaderBuilder::try_new_with_options(file, options).unwrap();
            if let Some(s) = selection {
                b = b.with_row_selection(s);
            }
            let batches: Vec<_> = b.build().unwrap().map(|b| b.unwrap()).collect();
            arrow::compute::concat_batches(&batch.schema(), &batches).unwrap()
        };
        // NaN compares unequal: compare by bits, as the written values.
        let same = |a: &RecordBatch, b: &RecordBatch| {
            a.num_rows() == b.num_rows()
                && (0..a.num_columns()).all(|c| {
                    let (x, y) = (a.column(c).to_data(), b.column(c).to_data());
                    let bytes = |d: &arrow::array::ArrayData| {
                        let w = d.data_type().primitive_width().unwrap();
                        d.buffers()[0].as_slice()[d.offset() * w..(d.offset() + d.len()) * w].to_vec()
                    };
                    let valid = |d: &arrow::array::ArrayData| (0..d.len()).map(|i| d.is_valid(i)).collect::<Vec<_>>();
                    let v = valid(&x);
                    // Null rows' slots hold anything.
                    let values = |d: &arrow::array::ArrayData| {
                        let w = d.data_type().primitive_width().unwrap();
                        bytes(d)
                            .chunks(w)
                            .zip(&v)
                            .map(|(b, &ok)| if ok { b.to_vec() } else { vec![] })
                            .collect::<Vec<_>>()
                    };
                    v == valid(&y) && values(&x) == values(&y)
                })
        };
        assert!(same(&read(None), &batch));
        let selection = RowSelection::from_consecutive_ranges([45_000..46_000, 61_000..61_010].into_iter(), n);
        let picked =
            arrow::compute::concat_batches(&batch.schema(), &[batch.slice(45_000, 1000), batch.slice(61_000, 10)])
                .unwrap();
        assert!(same(&read(Some(selection)), &picked));
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
