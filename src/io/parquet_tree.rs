//! `parquet`: the canonical tree columns as Parquet.
//!
//! Columns: `id`, `parent_id` (null for the root), `account`, `user` (null or empty for accounts),
//! `shares` (or `raw_shares`), optional `parent_shares` (bool, `FairShare=parent`), `usage` (or
//! `raw_usage`), optional `partition` and `priority`. Integer and float columns of any width are
//! accepted. The output of `fairshare compute` reads back as a tree, so a what-if can edit it.

use std::fs::File;
use std::path::Path;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type, UInt32Type, UInt64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::error::{Error, Result};
use crate::tree::{AccountUsage, AssocRecord, Shares, SiblingOrder, TreeInput};

/// Reads a tree from a Parquet file.
///
/// # Errors
/// Not Parquet, a missing column, or a null where a value is required, with its row (1-based).
pub fn read(path: &Path) -> Result<TreeInput> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.with_batch_size(64 * 1024).build())
        .map_err(|e| Error::format(path, e))?;
    let mut records = Vec::new();
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| Error::format(path, e))?;
        read_batch(path, &batch, &mut row, &mut records)?;
    }
    Ok(TreeInput { source: path.to_path_buf(), records, sibling_order: SiblingOrder::Lineage, account_usage: AccountUsage::SumOfUsers })
}

fn column(path: &Path, batch: &RecordBatch, names: &[&str], to: &DataType) -> Result<Option<std::sync::Arc<dyn Array>>> {
    let Some(c) = names.iter().find_map(|n| batch.column_by_name(n)) else { return Ok(None) };
    cast(c, to).map(Some).map_err(|e| Error::format(path, format!("column {:?}: {e}", names[0])))
}

fn read_batch(path: &Path, batch: &RecordBatch, row: &mut u64, out: &mut Vec<AssocRecord>) -> Result<()> {
    let required = |names: &[&str], to: &DataType| -> Result<std::sync::Arc<dyn Array>> {
        column(path, batch, names, to)?.ok_or_else(|| Error::input(path, None, format!("missing column {:?}", names[0])))
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
        let text = |a: &arrow::array::StringArray| (a.is_valid(i) && !a.value(i).is_empty()).then(|| a.value(i).to_string());
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
