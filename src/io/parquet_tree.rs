//! `parquet`: the canonical tree columns as Parquet.
//!
//! Columns: `id`, `parent_id` (null for the root), `account`, `user` (null or empty for accounts),
//! `shares` (or `raw_shares`), optional `parent_shares` (bool, `FairShare=parent`), `usage` (or
//! `raw_usage`), optional `partition` and `priority`. Integer and float columns of any width are
//! accepted. The output of `fairshare compute` reads back as a tree, so a what-if can edit it.
//!
//! [`write()`] produces the canonical form of these columns, which [`read`] reads back unchanged.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Float64Type, Schema, UInt32Type, UInt64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::metadata::KeyValue;

use crate::error::{Error, Result};
use crate::output::parquet::write_parquet;
use crate::tree::{AccountUsage, AssocRecord, Shares, SiblingOrder, TreeInput};

/// Reads a tree from a Parquet file.
///
/// # Errors
/// Not Parquet, a missing column, or a null where a value is required, with its row (1-based).
pub fn read(path: &Path) -> Result<TreeInput> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::format(path, e))?;
    // The row count is in the footer: one allocation instead of doubling (and copying) a vector
    // of 10^7 records.
    let rows = builder.metadata().file_metadata().num_rows().max(0) as u64;
    crate::memory::ensure_fits(path, "this tree", rows * crate::memory::BYTES_PER_ASSOCIATION)?;
    let mut records = Vec::with_capacity(rows as usize);
    let reader = builder.with_batch_size(64 * 1024).build().map_err(|e| Error::format(path, e))?;
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| Error::format(path, e))?;
        read_batch(path, &batch, &mut row, &mut records)?;
    }
    Ok(TreeInput {
        source: path.to_path_buf(),
        records,
        sibling_order: SiblingOrder::Lineage,
        account_usage: AccountUsage::SumOfUsers,
    })
}

fn column(
    path: &Path,
    batch: &RecordBatch,
    names: &[&str],
    to: &DataType,
) -> Result<Option<std::sync::Arc<dyn Array>>> {
    let Some(c) = names.iter().find_map(|n| batch.column_by_name(n)) else { return Ok(None) };
    cast(c, to).map(Some).map_err(|e| Error::format(path, format!("column {:?}: {e}", names[0])))
}

fn read_batch(path: &Path, batch: &RecordBatch, row: &mut u64, out: &mut Vec<AssocRecord>) -> Result<()> {
    let required = |names: &[&str], to: &DataType| -> Result<std::sync::Arc<dyn Array>> {
        column(path, batch, names, to)?
            .ok_or_else(|| Error::input(path, None, format!("missing column {:?}", names[0])))
    };
    let id = required(&["id"], &DataType::UInt64)?;
    let parent = required(&["parent_id"], &DataType::UInt64)?;
    let account = required(&["account"], &DataType::Utf8)?;
    let user = required(&["user"], &DataType::Utf8)?;
    let shares = required(&["shares", "raw_shares"], &DataType::UInt64)?;
    let usage = required(&["usage", "raw_usage"], &DataType::Float64)?;
    let parent_shares = column(path, batch, &["parent_shares"], &DataType::Boolean)?;
    let partition = column(path, batch, &["partition"], &DataType::Utf8)?;
    let priority = column(path, batch, &["priority"], &DataType::UInt32)?;
    let (id, parent) = (id.as_primitive::<UInt64Type>(), parent.as_primitive::<UInt64Type>());
    let (account, user) = (account.as_string::<i32>(), user.as_string::<i32>());
    let (shares, usage) = (shares.as_primitive::<UInt64Type>(), usage.as_primitive::<Float64Type>());
    let parent_shares = parent_shares.as_ref().map(|a| a.as_boolean().clone());
    let partition = partition.as_ref().map(|a| a.as_string::<i32>().clone());
    let priority = priority.as_ref().map(|a| a.as_primitive::<UInt32Type>().clone());
    for i in 0..batch.num_rows() {
        *row += 1;
        let err = |m: &str| Error::input(path, *row, format!("row {}: {m}", *row));
        if id.is_null(i) || account.is_null(i) || usage.is_null(i) {
            return Err(err("id, account and usage must not be null"));
        }
        let is_parent = parent_shares.as_ref().is_some_and(|p| p.is_valid(i) && p.value(i));
        if !is_parent && shares.is_null(i) {
            return Err(err("shares is null (set parent_shares for FairShare=parent)"));
        }
        let text =
            |a: &arrow::array::StringArray| (a.is_valid(i) && !a.value(i).is_empty()).then(|| a.value(i).to_string());
        out.push(AssocRecord {
            id: id.value(i),
            parent_id: parent.is_valid(i).then(|| parent.value(i)),
            account: account.value(i).to_string(),
            user: text(user),
            partition: partition.as_ref().and_then(text),
            shares: if is_parent { Shares::Parent } else { Shares::Value(shares.value(i)) },
            usage: usage.value(i),
            priority: priority.as_ref().and_then(|p| p.is_valid(i).then(|| p.value(i))),
            line: *row,
        });
    }
    Ok(())
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
    write_parquet(path, &record_batch(records), metadata)
}

/// The canonical tree columns of `records` as one record batch.
fn record_batch(records: &[AssocRecord]) -> RecordBatch {
    let shares = |r: &AssocRecord| match r.shares {
        Shares::Value(v) => v,
        Shares::Parent => 0,
    };
    let columns: Vec<(&str, ArrayRef, bool)> = vec![
        ("id", Arc::new(UInt64Array::from_iter_values(records.iter().map(|r| r.id))), false),
        ("parent_id", Arc::new(records.iter().map(|r| r.parent_id).collect::<UInt64Array>()), true),
        ("account", Arc::new(StringArray::from_iter_values(records.iter().map(|r| r.account.as_str()))), false),
        ("user", Arc::new(records.iter().map(|r| r.user.as_deref()).collect::<StringArray>()), true),
        ("partition", Arc::new(records.iter().map(|r| r.partition.as_deref()).collect::<StringArray>()), true),
        ("shares", Arc::new(UInt64Array::from_iter_values(records.iter().map(shares))), false),
        (
            "parent_shares",
            Arc::new(records.iter().map(|r| Some(r.shares == Shares::Parent)).collect::<BooleanArray>()),
            false,
        ),
        ("usage", Arc::new(Float64Array::from_iter_values(records.iter().map(|r| r.usage))), false),
        ("priority", Arc::new(records.iter().map(|r| r.priority).collect::<UInt32Array>()), true),
    ];
    let fields: Vec<Field> =
        columns.iter().map(|(name, a, nullable)| Field::new(*name, a.data_type().clone(), *nullable)).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns.into_iter().map(|(_, a, _)| a).collect())
        .expect("columns match their schema by construction")
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
            line: 0,
        }
    }

    #[test]
    fn written_records_read_back_equal() {
        let mut records = vec![
            record(10, None, None, Shares::Value(1), 0.0),
            record(7, Some(10), Some("alice"), Shares::Parent, 1234.0),
            record(3, Some(10), Some("bob"), Shares::Value(0), 0.25),
            record(u64::MAX, Some(10), Some("carol"), Shares::Value(u64::from(u32::MAX)), 1e15),
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
}
