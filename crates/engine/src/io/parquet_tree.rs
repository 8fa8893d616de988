//! `parquet`: the canonical tree columns as Parquet.
//!
//! Columns: `id`, `parent_id` (null for the root), `account`, `user` (null or empty for accounts),
//! `shares` (or `raw_shares`), optional `parent_shares` (bool, `FairShare=parent`), `usage` (or
//! `raw_usage`), optional `partition`, `priority` and `grp_tres_mins` (`GrpTRESMins` as text). Numbers may be integers of any width, whole
//! floats or text (read as the `assoc-csv` reader reads it, `shares` text may say `parent`), so
//! the tree CSV written to Parquet by pandas, polars or DuckDB reads as the CSV does. The output
//! of `fairshare compute` reads back as a tree, so a what-if can edit it.
//!
//! [`write()`] produces the canonical form of these columns, which [`read`] reads back unchanged.

use parquet::arrow::ProjectionMask;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, BooleanBuilder, Float64Builder, RecordBatch, StringArray, StringBuilder,
    UInt32Builder, UInt64Array, UInt64Builder,
};
use arrow::buffer::BooleanBuffer;
use arrow::compute::{concat, or};
use arrow::datatypes::{DataType, UInt32Type, UInt64Type};
use arrow::error::ArrowError;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::file::metadata::KeyValue;
use rayon::prelude::*;

use super::tree_values::{MAX_SHARES, parse_shares, parse_usage};
use crate::tree::{AccountUsage, AssocRecord, Shares, SiblingOrder, TreeColumns, TreeInput, records_batch};
use fairshare_base::error::{Error, Result};
use fairshare_base::read::fields::strip_zero_fraction;
use fairshare_base::read::parquet_columns::{Bad, floats, holds_text, integers, strings};
use fairshare_base::read::row_groups::{first_rows, group_reader, guarded, open_checked};
use fairshare_base::write::parquet::write_parquet;

/// Reads a tree from a Parquet file as records (for the paths that edit them).
///
/// # Errors
/// As [`read_columns`].
pub fn read(path: &Path) -> Result<TreeInput> {
    Ok(read_columns(path)?.into_input())
}

/// Reads a tree from a Parquet file as columns, ready for
/// [`AssocTree::from_columns`](crate::tree::AssocTree::from_columns) without a record per row.
///
/// # Errors
/// Not Parquet, a missing column or one of a type that cannot hold it, a value that does not
/// convert (saying what was expected), or a null where a value is required, with its row (1-based).
pub fn read_columns(path: &Path) -> Result<TreeColumns> {
    guarded(path, || {
        let (_, metadata) = open_checked(path, ArrowReaderOptions::new())?;
        let rows = metadata.metadata().file_metadata().num_rows().max(0) as u64;
        fairshare_base::memory::ensure_fits(path, "this tree", rows * fairshare_base::memory::BYTES_PER_ASSOCIATION)?;
        let groups = metadata.metadata().row_groups();
        let first_row = first_rows(&metadata);
        // Row groups are decoded across cores, each as one batch of its size, a wave of one per core
        // at a time appended to the columns: only one wave's decoded parts are alive beside them
        // (joining all parts at the end held the file twice). The first bad row in the file is the
        // one reported.
        let read_group = |g: usize| -> Result<[ArrayRef; 10]> {
            let reader = group_reader(path, &metadata, g, groups[g].num_rows().max(0) as usize, ProjectionMask::all())?;
            let mut parts = Vec::new();
            let mut row = first_row[g];
            for batch in reader {
                let batch = batch.map_err(|e| Error::format(path, e))?;
                parts.push(canonical_columns(path, &batch, row)?);
                row += batch.num_rows() as u64;
            }
            concat_columns(path, parts)
        };
        let wave = rayon::current_num_threads().max(1);
        let mut columns: Option<[ColumnBuilder; 10]> = None;
        for first in (0..groups.len()).step_by(wave) {
            let parts: Vec<[ArrayRef; 10]> = (first..(first + wave).min(groups.len()))
                .into_par_iter()
                .map(read_group)
                .collect::<Vec<_>>()
                .into_iter()
                .collect::<Result<_>>()?;
            let columns = columns.get_or_insert_with(|| ColumnBuilder::sized_for(&parts, rows as usize));
            for part in parts {
                columns
                    .par_iter_mut()
                    .zip(part)
                    .try_for_each(|(c, a)| c.append(&a))
                    .map_err(|e| Error::format(path, e))?;
            }
        }
        let columns = match columns {
            Some(columns) => columns.map(ColumnBuilder::finish),
            None => CANONICAL_TYPES.clone().map(|t| arrow::array::new_empty_array(&t)),
        };
        Ok(tree_columns(path, columns))
    })
}

/// Reads a tree from record batches already in memory (a table handed over through the Arrow C
/// stream interface, say), with the columns and conversions of a Parquet tree; `source` names the
/// table in errors, and rows are numbered across the batches from 1.
///
/// # Errors
/// As [`read_columns`]: a missing column, one of a type that cannot hold it, a value that does not
/// convert, or a null where a value is required, with its row.
pub fn columns_from_batches(source: &Path, batches: &[RecordBatch]) -> Result<TreeColumns> {
    let mut parts = Vec::with_capacity(batches.len());
    let mut row = 0;
    for batch in batches {
        parts.push(canonical_columns(source, batch, row)?);
        row += batch.num_rows() as u64;
    }
    Ok(tree_columns(source, concat_columns(source, parts)?))
}

/// The tree columns of the canonical arrays (in [`CANONICAL_TYPES`]' order), read from `source`.
fn tree_columns(source: &Path, columns: [ArrayRef; 10]) -> TreeColumns {
    let [id, parent_id, account, user, partition, shares, parent_shares, usage, priority, grp_tres_mins] = columns;
    TreeColumns {
        source: source.to_path_buf(),
        id: id.as_primitive().clone(),
        parent_id: parent_id.as_primitive().clone(),
        account: account.as_string().clone(),
        user: user.as_string().clone(),
        partition: partition.as_string().clone(),
        shares: shares.as_primitive().clone(),
        parent_shares: parent_shares.as_boolean().clone(),
        usage: usage.as_primitive().clone(),
        priority: priority.as_primitive().clone(),
        grp_tres_mins: grp_tres_mins.as_string().clone(),
        tres: None,
        lines: None,
        sibling_order: SiblingOrder::Lineage,
        account_usage: AccountUsage::SumOfUsers,
    }
}

/// The canonical tree columns of `records` as one record batch: what [`write()`] writes (and
/// `fairshare usage --out`), for front ends that hand the table over in memory.
pub fn records_to_batch(records: &[AssocRecord]) -> RecordBatch {
    records_batch(records)
}

/// Each canonical column of `parts` in one array (no copy for a single part), columns across cores;
/// each column's parts are freed as soon as it is joined.
fn concat_columns(path: &Path, parts: Vec<[ArrayRef; 10]>) -> Result<[ArrayRef; 10]> {
    let mut by_column: Vec<Vec<ArrayRef>> =
        (0..CANONICAL_TYPES.len()).map(|_| Vec::with_capacity(parts.len())).collect();
    for part in parts {
        for (column, array) in by_column.iter_mut().zip(part) {
            column.push(array);
        }
    }
    let columns: Vec<ArrayRef> = by_column
        .into_par_iter()
        .enumerate()
        .map(|(i, column)| match column.as_slice() {
            [] => Ok(arrow::array::new_empty_array(&CANONICAL_TYPES[i])),
            [one] => Ok(one.clone()),
            many => concat(&many.iter().map(|a| a.as_ref()).collect::<Vec<_>>()).map_err(|e| Error::format(path, e)),
        })
        .collect::<Result<_>>()?;
    Ok(columns.try_into().expect("one array per canonical column"))
}

/// A canonical column being assembled from the row groups' parts.
enum ColumnBuilder {
    UInt64(UInt64Builder),
    UInt32(UInt32Builder),
    Float64(Float64Builder),
    Boolean(BooleanBuilder),
    Utf8(StringBuilder),
}

impl ColumnBuilder {
    /// Builders for `rows` rows of the canonical columns, string bytes estimated from the first
    /// parts (a little over, so most files never regrow them).
    fn sized_for(first: &[[ArrayRef; 10]], rows: usize) -> [ColumnBuilder; 10] {
        let seen: usize = first.iter().map(|p| p[0].len()).sum();
        std::array::from_fn(|i| match CANONICAL_TYPES[i] {
            DataType::UInt64 => ColumnBuilder::UInt64(UInt64Builder::with_capacity(rows)),
            DataType::UInt32 => ColumnBuilder::UInt32(UInt32Builder::with_capacity(rows)),
            DataType::Float64 => ColumnBuilder::Float64(Float64Builder::with_capacity(rows)),
            DataType::Boolean => ColumnBuilder::Boolean(BooleanBuilder::with_capacity(rows)),
            _ => {
                let bytes: usize = first.iter().map(|p| p[i].as_string::<i32>().values().len()).sum();
                let estimate = (bytes as f64 / seen.max(1) as f64 * rows as f64 * 1.0625) as usize;
                ColumnBuilder::Utf8(StringBuilder::with_capacity(rows, estimate))
            }
        })
    }

    /// Appends a part of this column's canonical type.
    fn append(&mut self, part: &ArrayRef) -> std::result::Result<(), ArrowError> {
        match self {
            ColumnBuilder::UInt64(b) => b.append_array(part.as_primitive()),
            ColumnBuilder::UInt32(b) => b.append_array(part.as_primitive()),
            ColumnBuilder::Float64(b) => b.append_array(part.as_primitive()),
            ColumnBuilder::Boolean(b) => b.append_array(part.as_boolean()),
            ColumnBuilder::Utf8(b) => b.append_array(part.as_string())?,
        }
        Ok(())
    }

    fn finish(self) -> ArrayRef {
        match self {
            ColumnBuilder::UInt64(mut b) => Arc::new(b.finish()),
            ColumnBuilder::UInt32(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Float64(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Boolean(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Utf8(mut b) => Arc::new(b.finish()),
        }
    }
}

/// Types of the canonical columns, in [`TreeColumns`] order.
const CANONICAL_TYPES: [DataType; 10] = [
    DataType::UInt64,
    DataType::UInt64,
    DataType::Utf8,
    DataType::Utf8,
    DataType::Utf8,
    DataType::UInt64,
    DataType::Boolean,
    DataType::Float64,
    DataType::UInt32,
    DataType::Utf8,
];

/// The first of `names` (a column and its aliases) that `batch` has.
fn column<'b>(batch: &'b RecordBatch, names: &[&str]) -> Option<&'b ArrayRef> {
    names.iter().find_map(|n| batch.column_by_name(n))
}

/// What `id` and `parent_id` hold, in the CSV reader's words.
const ID: &str = "a non-negative integer";

/// One batch as the canonical columns, checked: `rows_before` rows came before it. Columns of
/// other types convert strictly ([`integers`], [`floats`], [`strings`]), text as the CSV reader
/// reads it: the tree CSV written to Parquet by pandas, polars or DuckDB keeps `shares` as text,
/// `parent` included.
fn canonical_columns(path: &Path, batch: &RecordBatch, rows_before: u64) -> Result<[ArrayRef; 10]> {
    let bad = |b: Bad| b.error(path, rows_before);
    let required = |names: &[&str]| -> Result<&ArrayRef> {
        column(batch, names).ok_or_else(|| Error::input(path, None, format!("missing column {:?}", names[0])))
    };
    let ids = |name: &str| -> Result<ArrayRef> {
        let parse = |t: &str| strip_zero_fraction(t).parse().ok();
        Ok(Arc::new(integers::<UInt64Type>(required(&[name])?, name, ID, u64::MAX, parse).map_err(bad)?))
    };
    let n = batch.num_rows();
    let id = ids("id")?;
    let parent = ids("parent_id")?;
    let account: ArrayRef = Arc::new(strings(required(&["account"])?, "account").map_err(bad)?);
    let user = strings(required(&["user"])?, "user").map_err(bad)?;
    let (shares_in, text_parent) = shares(required(&["shares", "raw_shares"])?).map_err(bad)?;
    let usage = required(&["usage", "raw_usage"])?;
    let usage: ArrayRef =
        Arc::new(floats(usage, "usage", "a finite non-negative number", |t| parse_usage(t).ok()).map_err(bad)?);
    // A null flag is not `parent`.
    let parent_shares = match column(batch, &["parent_shares"]) {
        Some(a) if a.data_type() == &DataType::Boolean => {
            let flags = a.as_boolean();
            let set = flags.nulls().map_or_else(|| flags.values().clone(), |valid| flags.values() & valid.inner());
            BooleanArray::new(set, None)
        }
        Some(a) => return Err(bad(Bad::column_type("parent_shares", a.data_type(), "true or false"))),
        None => BooleanArray::new(BooleanBuffer::new_unset(n), None),
    };
    let parent_shares = match text_parent {
        Some(text) => or(&parent_shares, &text).map_err(|e| Error::format(path, e))?,
        None => parent_shares,
    };
    let partition = column(batch, &["partition"]).map(|a| strings(a, "partition")).transpose().map_err(bad)?;
    let priority: ArrayRef = match column(batch, &["priority"]) {
        Some(a) => Arc::new(
            integers::<UInt32Type>(a, "priority", "a 32-bit unsigned integer", u32::MAX, |t| {
                strip_zero_fraction(t).parse().ok()
            })
            .map_err(bad)?,
        ),
        None => arrow::array::new_null_array(&DataType::UInt32, n),
    };
    // The first row missing a value it needs; a column without nulls is not read value by value.
    let first_null = |a: &dyn Array, needed: &dyn Fn(usize) -> bool| {
        (a.null_count() > 0).then(|| (0..n).find(|&i| a.is_null(i) && needed(i))).flatten()
    };
    let always = |_| true;
    let missing = [
        (first_null(&id, &always), "id is null"),
        (first_null(&account, &always), "account is null"),
        (first_null(&usage, &always), "usage is null"),
        (
            first_null(&shares_in, &|i| !parent_shares.value(i)),
            "shares is null (set parent_shares for FairShare=parent)",
        ),
    ];
    if let Some((i, message)) = missing.into_iter().filter_map(|(i, m)| Some((i?, m))).min_by_key(|&(i, _)| i) {
        let row = rows_before + i as u64 + 1;
        return Err(Error::input(path, row, format!("row {row}: {message}")));
    }
    // `parent` rows hold 0 shares; empty names are absent ones.
    let shares =
        UInt64Array::from_iter_values((0..n).map(|i| if parent_shares.value(i) { 0 } else { shares_in.value(i) }));
    let absent_if_empty = |s: StringArray| -> ArrayRef {
        if s.iter().any(|v| v == Some("")) {
            Arc::new(s.iter().map(|v| v.filter(|v| !v.is_empty())).collect::<StringArray>())
        } else {
            Arc::new(s)
        }
    };
    let partition = partition.map_or_else(|| arrow::array::new_null_array(&DataType::Utf8, n), absent_if_empty);
    let grp_tres_mins = column(batch, &["grp_tres_mins"])
        .map(|a| strings(a, "grp_tres_mins"))
        .transpose()
        .map_err(bad)?
        .map_or_else(|| arrow::array::new_null_array(&DataType::Utf8, n), absent_if_empty);
    Ok([
        id,
        parent,
        account,
        absent_if_empty(user),
        partition,
        Arc::new(shares),
        Arc::new(parent_shares),
        usage,
        priority,
        grp_tres_mins,
    ])
}

/// The `shares` column: counts, and for a text column, which rows say `parent` (`FairShare=parent`).
fn shares(a: &ArrayRef) -> std::result::Result<(UInt64Array, Option<BooleanArray>), Bad> {
    let expected = format!("a share count (0..={MAX_SHARES}) or \"parent\"");
    let count = |t: &str| match parse_shares(t).ok()? {
        Shares::Value(v) => Some(v),
        Shares::Parent => Some(0),
    };
    let counts = integers::<UInt64Type>(a, "shares", &expected, MAX_SHARES, count)?;
    if !holds_text(a.data_type()) {
        return Ok((counts, None));
    }
    let text = strings(a, "shares")?;
    let parent = text.iter().map(|t| Some(t.is_some_and(|t| parse_shares(t) == Ok(Shares::Parent)))).collect();
    Ok((counts, Some(parent)))
}

/// Writes `records` as canonical tree Parquet (ZSTD), atomically.
///
/// Columns: `id` (u64), `parent_id` (u64, null for the root), `account`, `user` (null for accounts),
/// `partition` (nullable), `shares` (u64, 0 where `parent_shares`), `parent_shares` (bool), `usage`
/// (f64) and `priority` (u32, nullable), in the order of `records`, with `metadata` as the file's
/// key-value metadata. [`read`] reads the file back
/// into the same records, numbering `line` by row.
///
/// # Errors
/// I/O or encoding errors naming `path`; the target is then untouched.
pub fn write(path: &Path, records: &[AssocRecord], metadata: Vec<KeyValue>) -> Result<()> {
    write_parquet(path, &records_batch(records), metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: u64, parent_id: Option<u64>, user: Option<&str>, shares: Shares, usage: f64) -> AssocRecord {
        AssocRecord {
            id,
            parent_id,
            account: "physics".into(),
            user: user.map(Into::into),
            partition: None,
            shares,
            usage,
            priority: None,
            grp_tres_mins: None,
            line: 0,
        }
    }

    #[test]
    fn batches_in_memory_read_as_the_file() {
        let mut records = vec![
            record(10, None, None, Shares::Value(1), 0.0),
            record(7, Some(10), Some("alice"), Shares::Parent, 1234.0),
            record(3, Some(10), Some("bob"), Shares::Value(5), 0.25),
        ];
        for (row, r) in records.iter_mut().enumerate() {
            r.line = row as u64 + 1;
        }
        let batch = records_to_batch(&records);
        let halves = [batch.slice(0, 1), batch.slice(1, 2)];
        let input = columns_from_batches(Path::new("<table>"), &halves).unwrap().into_input();
        assert_eq!(input.records, records);
        // A bad value is reported at its row across batches.
        let account: ArrayRef = Arc::new(StringArray::from(vec![Some("physics"), Some("physics"), None]));
        let bad = batch.clone();
        let index = bad.schema().index_of("account").unwrap();
        let mut columns = bad.columns().to_vec();
        columns[index] = account;
        let schema = arrow::datatypes::Schema::new(
            bad.schema().fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect::<Vec<_>>(),
        );
        let bad = RecordBatch::try_new(Arc::new(schema), columns).unwrap();
        let err = columns_from_batches(Path::new("<table>"), &[bad.slice(0, 2), bad.slice(2, 1)]).unwrap_err();
        assert_eq!(err.to_string(), "<table>:3: row 3: account is null");
    }

    #[test]
    fn written_records_read_back_equal() {
        let mut records = vec![
            record(10, None, None, Shares::Value(1), 0.0),
            record(7, Some(10), Some("alice"), Shares::Parent, 1234.0),
            record(3, Some(10), Some("bob"), Shares::Value(0), 0.25),
            record(u64::MAX, Some(10), Some("carol"), Shares::Value(MAX_SHARES), 1e15),
        ];
        records[1].partition = Some("gpu".into());
        records[3].priority = Some(u32::MAX);
        for (row, r) in records.iter_mut().enumerate() {
            r.line = row as u64 + 1;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tree.parquet");
        write(&path, &records, Vec::new()).unwrap();
        let input = read(&path).unwrap();
        assert_eq!(input.records, records);
        assert_eq!(input.source, path);
    }

    /// A file of many row groups reads as one, and of two bad rows in different row groups
    /// the first in the file is named.
    #[test]
    fn row_groups_read_in_order_and_the_first_bad_row_is_named() {
        use parquet::arrow::ArrowWriter;
        use parquet::file::properties::WriterProperties;

        let mut records = vec![record(1, None, None, Shares::Value(1), 0.0)];
        for i in 2..=9 {
            records.push(record(i, Some(1), Some(&format!("u{i}")), Shares::Value(i), i as f64));
        }
        let dir = tempfile::tempdir().unwrap();
        let write_groups = |name: &str, batch: &RecordBatch| {
            let path = dir.path().join(name);
            let props = WriterProperties::builder().set_max_row_group_row_count(Some(2)).build();
            let mut w =
                ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), Some(props)).unwrap();
            w.write(batch).unwrap();
            w.close().unwrap();
            path
        };
        let good = write_groups("good.parquet", &records_batch(&records));
        let cols = read_columns(&good).unwrap();
        assert_eq!(cols.id.values().to_vec(), (1..=9).collect::<Vec<u64>>());
        assert_eq!(cols.user.value(8), "u9");

        let mut batch = records_batch(&records);
        let usage = |bad: &[usize]| -> ArrayRef {
            Arc::new(
                (0..records.len())
                    .map(|i| (!bad.contains(&i)).then_some(records[i].usage))
                    .collect::<arrow::array::Float64Array>(),
            )
        };
        let mut columns = batch.columns().to_vec();
        columns[7] = usage(&[6, 2]);
        let schema = arrow::datatypes::Schema::new(
            batch.schema().fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect::<Vec<_>>(),
        );
        batch = RecordBatch::try_new(Arc::new(schema), columns).unwrap();
        let bad = write_groups("bad.parquet", &batch);
        let e = read_columns(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.parquet:3:") && e.contains("row 3"), "{e}");
    }
}
