//! Parquet output of a fair-share pass: one row per association, ZSTD, parameters in the metadata.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, RecordBatch, UInt32Array, UInt64Array};
use arrow::datatypes::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use super::atomic::AtomicFile;
use crate::error::{Error, Result};
use crate::fairshare::FairShare;
use crate::tree::AssocTree;

/// Version of the association Parquet schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: &str = "1";

/// The per-association result columns as one record batch, rows in the tree's breadth-first order.
/// Values the emulated system leaves unset are null.
pub fn association_batch(tree: &AssocTree, fs: &FairShare) -> RecordBatch {
    let n = tree.len();
    let opt = |v: &[f64]| Float64Array::from_iter(v.iter().map(|&x| (!x.is_nan()).then_some(x)));
    let batch = tree.to_record_batch();
    let col = |name: &str| batch.column_by_name(name).expect("tree column").clone();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", col("id")),
        ("parent_id", Arc::new(UInt64Array::from_iter((0..n).map(|r| tree.parent_id(r))))),
        ("depth", col("depth")),
        ("account", col("account")),
        ("user", col("user")),
        ("partition", col("partition")),
        ("is_user", col("is_user")),
        ("raw_shares", col("raw_shares")),
        ("parent_shares", col("parent_shares")),
        ("norm_shares", Arc::new(opt(&fs.norm_shares))),
        ("raw_usage", col("raw_usage")),
        ("norm_usage", Arc::new(opt(&fs.norm_usage))),
        ("effective_usage", Arc::new(opt(&fs.effective_usage))),
        ("level_fs", Arc::new(opt(&fs.level_fs))),
        ("rank", Arc::new(UInt32Array::from_iter(fs.rank.iter().map(|&r| (r > 0).then_some(r))))),
        ("fs_factor", Arc::new(opt(&fs.fs_factor))),
        ("priority", col("priority")),
    ];
    let schema = Schema::new(
        columns.iter().map(|(name, a)| Field::new(*name, a.data_type().clone(), a.null_count() > 0 || nullable(name))).collect::<Vec<_>>(),
    );
    RecordBatch::try_new(Arc::new(schema), columns.into_iter().map(|(_, a)| a).collect()).expect("columns match their schema")
}

/// Columns that may hold nulls in some file, so the schema does not depend on the data.
fn nullable(name: &str) -> bool {
    matches!(name, "parent_id" | "user" | "partition" | "norm_shares" | "norm_usage" | "effective_usage" | "level_fs" | "rank" | "fs_factor" | "priority")
}

/// The metadata recorded with every association file.
pub fn metadata(fs: &FairShare, source: &str) -> Vec<KeyValue> {
    let p = fs.params;
    [
        ("fairshare.schema_version", SCHEMA_VERSION.to_string()),
        ("fairshare.version", env!("CARGO_PKG_VERSION").to_string()),
        ("fairshare.algorithm", p.algorithm.name().to_string()),
        ("fairshare.dampening", p.dampening.to_string()),
        ("fairshare.depth_oblivious", p.depth_oblivious.to_string()),
        ("fairshare.flux_exact_sums", p.flux_exact_sums.to_string()),
        ("fairshare.source", source.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| KeyValue::new(k.to_string(), v))
    .collect()
}

/// Writes `batch` to `path` atomically, ZSTD-compressed, with `metadata`.
///
/// # Errors
/// I/O or encoding errors naming `path`; the target is then untouched.
pub fn write_parquet(path: &Path, batch: &RecordBatch, metadata: Vec<KeyValue>) -> Result<()> {
    let file = AtomicFile::create(path)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).expect("valid level")))
        .set_max_row_group_row_count(Some(1 << 20))
        .set_key_value_metadata(Some(metadata))
        .build();
    let enc = |e: parquet::errors::ParquetError| Error::format(path, e);
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(enc)?;
    writer.write(batch).map_err(enc)?;
    writer.into_inner().map_err(enc)?.commit()
}
