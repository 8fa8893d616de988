//! Reading a Parquet file a row group at a time, so the groups can be decoded across cores while
//! errors still name rows of the whole file.

use std::path::Path;

use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use crate::error::{Error, Result};

/// The number of rows before each row group: row `i` (from 0) of group `g` is row
/// `first_rows[g] + i + 1` of the file.
pub(crate) fn first_rows(metadata: &ArrowReaderMetadata) -> Vec<u64> {
    metadata
        .metadata()
        .row_groups()
        .iter()
        .scan(0u64, |before, g| {
            let first = *before;
            *before += g.num_rows().max(0) as u64;
            Some(first)
        })
        .collect()
}

/// A reader of row group `g` of `path` alone, in batches of `batch_rows`, on its own file handle
/// (clones of one handle would share the seek position).
///
/// # Errors
/// The file cannot be opened, or the group cannot be read, naming `path`.
pub(crate) fn group_reader(
    path: &Path,
    metadata: &ArrowReaderMetadata,
    g: usize,
    batch_rows: usize,
) -> Result<ParquetRecordBatchReader> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata.clone())
        .with_row_groups(vec![g])
        .with_batch_size(batch_rows.max(1))
        .build()
        .map_err(|e| Error::format(path, e))
}
