//! Reading a Parquet file a row group at a time, so the groups can be decoded across cores while
//! errors still name rows of the whole file; and [`guarded`], which every Parquet read runs in.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// A whole Parquet file as one record batch (the files `compare`, `diff` and the DataFrame view read
/// back: results, not inputs sized for streaming), guarded as every Parquet read is.
///
/// # Errors
/// The file cannot be opened or decoded, naming `path`.
pub fn read_whole(path: &Path) -> Result<arrow::array::RecordBatch> {
    use arrow::array::RecordBatchReader;
    guarded(path, || {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|b| b.build())
            .map_err(|e| Error::format(path, e))?;
        let schema = reader.schema();
        let batches = reader.collect::<std::result::Result<Vec<_>, _>>().map_err(|e| Error::format(path, e))?;
        arrow::compute::concat_batches(&schema, &batches).map_err(|e| Error::format(path, e))
    })
}

/// Parquet reads in progress inside [`guarded`], on any thread.
static GUARDED_READS: AtomicUsize = AtomicUsize::new(0);

/// Runs `read` of the Parquet file `path`, turning a panic into an error naming the file: the
/// Parquet reader asserts on some damaged metadata (a negative column offset, say) instead of
/// returning an error, and a bad input must never crash the program.
///
/// # Errors
/// Those of `read`, and a panic inside it as [`Error::Format`].
pub(crate) fn guarded<T>(path: &Path, read: impl FnOnce() -> Result<T>) -> Result<T> {
    GUARDED_READS.fetch_add(1, Ordering::SeqCst);
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read));
    GUARDED_READS.fetch_sub(1, Ordering::SeqCst);
    out.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::format(path, format!("the Parquet reader failed on this file (damaged?): {message}")))
    })
}

/// Whether a panic comes from the Parquet or Arrow reader during a guarded read (every Parquet
/// read is), which reports it as an error: the binary's panic hook stays quiet about those and prints every other.
pub fn is_guarded_reader_panic(info: &std::panic::PanicHookInfo<'_>) -> bool {
    GUARDED_READS.load(Ordering::SeqCst) > 0
        && info.location().is_some_and(|l| ["/parquet-", "/arrow-"].iter().any(|c| l.file().contains(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_a_guarded_read_is_an_error_naming_the_file() {
        let path = Path::new("queue.parquet");
        let err = guarded::<()>(path, || panic!("column start and length should not be negative")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("queue.parquet") && text.contains("should not be negative"), "{text}");
        assert_eq!(guarded(path, || Ok(7)).unwrap(), 7);
    }
}
