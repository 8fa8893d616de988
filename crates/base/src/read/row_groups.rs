//! Reading a Parquet file a row group at a time, so the groups can be decoded across cores while
//! errors still name rows of the whole file; `guarded`, which every Parquet read runs in; and
//! `open_checked`, which every Parquet read opens its file with.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};
use parquet::basic::Type as PhysicalType;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::serialized_reader::SerializedPageReader;

use crate::error::{Error, Result};

/// A handle of its own on the Parquet file `path` (or `-`, or a stream, spooled).
fn parquet_file(path: &Path) -> Result<std::fs::File> {
    super::source::file(path, "Parquet", b"PAR1")
}

/// The number of rows before each row group: row `i` (from 0) of group `g` is row
/// `first_rows[g] + i + 1` of the file.
pub fn first_rows(metadata: &ArrowReaderMetadata) -> Vec<u64> {
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
pub fn group_reader(
    path: &Path,
    metadata: &ArrowReaderMetadata,
    g: usize,
    batch_rows: usize,
    columns: ProjectionMask,
) -> Result<ParquetRecordBatchReader> {
    let file = parquet_file(path)?;
    ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata.clone())
        .with_row_groups(vec![g])
        .with_projection(columns)
        .with_batch_size(batch_rows.max(1))
        .build()
        .map_err(|e| Error::format(path, e))
}

/// Opens the Parquet file `path` and reads its footer with `options`, then `check_pages`: so no
/// reader decodes a page before its header has been checked.
///
/// # Errors
/// The file cannot be opened, is not Parquet, or has a damaged page header, naming `path`.
pub fn open_checked(path: &Path, options: ArrowReaderOptions) -> Result<(std::fs::File, ArrowReaderMetadata)> {
    let file = parquet_file(path)?;
    let metadata = ArrowReaderMetadata::load(&file, options).map_err(|e| Error::format(path, e))?;
    check_pages(path, metadata.metadata())?;
    Ok((file, metadata))
}

/// Checks the page headers of every column chunk of `path` before anything is decoded: a
/// dictionary page must hold the values it declares (at the least width of its type), and a page of
/// a column without repetition cannot declare more values than its row group has rows.
///
/// The Parquet reader sizes a dictionary by its declared count and zero-fills it before decoding:
/// a 5 KB file declaring 939 million entries made it fill 7.5 GB before the error. Only the headers
/// are read, and the dictionary pages (small: writers cap them at about 1 MB).
///
/// # Errors
/// A page that declares more than it can hold, or a header that cannot be read, naming `path`.
fn check_pages(path: &Path, metadata: &ParquetMetaData) -> Result<()> {
    let file = Arc::new(parquet_file(path)?);
    (0..metadata.num_row_groups()).try_for_each(|g| check_group_pages(path, &file, metadata, g))
}

/// Opens the Parquet file `path` and reads its footer with `options`, leaving the pages
/// unchecked: the caller checks each row group with [`check_group`] before it reads it (so that
/// parallel readers check their own groups, where [`open_checked`] reads every header first).
///
/// # Errors
/// The file cannot be opened or is not Parquet, naming `path`.
pub fn open_unchecked(path: &Path, options: ArrowReaderOptions) -> Result<ArrowReaderMetadata> {
    ArrowReaderMetadata::load(&parquet_file(path)?, options).map_err(|e| Error::format(path, e))
}

/// `check_pages` of row group `g` alone.
///
/// # Errors
/// As `check_pages`.
pub fn check_group(path: &Path, metadata: &ParquetMetaData, g: usize) -> Result<()> {
    check_group_pages(path, &Arc::new(parquet_file(path)?), metadata, g)
}

fn check_group_pages(path: &Path, file: &Arc<std::fs::File>, metadata: &ParquetMetaData, g: usize) -> Result<()> {
    let format = |e| Error::format(path, e);
    let group = metadata.row_group(g);
    let rows = usize::try_from(group.num_rows()).unwrap_or(0);
    for column in group.columns() {
        let damaged = |what: String| {
            Error::input(
                path,
                None,
                format!("row group {g}, column {}: {what}: the file is damaged", column.column_path()),
            )
        };
        let descr = column.column_descr();
        let value_bits: u64 = match column.column_type() {
            PhysicalType::BOOLEAN => 1,
            PhysicalType::INT32 | PhysicalType::FLOAT | PhysicalType::BYTE_ARRAY => 32,
            PhysicalType::INT64 | PhysicalType::DOUBLE => 64,
            PhysicalType::INT96 => 96,
            PhysicalType::FIXED_LEN_BYTE_ARRAY => 8 * u64::try_from(descr.type_length()).unwrap_or(0).max(1),
        };
        let mut pages = SerializedPageReader::new(Arc::clone(file), column, rows, None).map_err(format)?;
        while let Some(page) = pages.peek_next_page().map_err(format)? {
            if page.is_dict {
                if let Some(Page::DictionaryPage { buf, num_values, .. }) = pages.get_next_page().map_err(format)?
                    && u64::from(num_values) * value_bits > buf.len() as u64 * 8
                {
                    return Err(damaged(format!(
                        "a dictionary page declares {num_values} values in {} bytes",
                        buf.len()
                    )));
                }
                continue;
            }
            let declared = page.num_rows.max(page.num_levels).unwrap_or(0);
            if descr.max_rep_level() == 0 && declared > rows {
                return Err(damaged(format!("a page declares {declared} values in a row group of {rows} rows")));
            }
            pages.skip_next_page().map_err(format)?;
        }
    }
    Ok(())
}

/// A whole Parquet file as one record batch (the files `compare`, `diff` and the DataFrame view read
/// back: results, not inputs sized for streaming), guarded as every Parquet read is.
///
/// # Errors
/// The file cannot be opened or decoded, naming `path`.
pub fn read_whole(path: &Path) -> Result<arrow::array::RecordBatch> {
    use arrow::array::RecordBatchReader;
    guarded(path, || {
        let (file, metadata) = open_checked(path, ArrowReaderOptions::new())?;
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata)
            .build()
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
pub fn guarded<T>(path: &Path, read: impl FnOnce() -> Result<T>) -> Result<T> {
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
    fn columns_with_repetition_may_hold_more_values_than_rows() {
        use arrow::array::{ArrayRef, Int64Array, ListArray};
        use arrow::datatypes::Int64Type;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lists.parquet");
        let ids: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3]));
        let lists: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some((0..4).map(Some).collect::<Vec<_>>()),
            Some((0..5).map(Some).collect()),
            Some(vec![Some(7)]),
        ]));
        let batch = arrow::array::RecordBatch::try_from_iter([("id", ids), ("values", lists)]).unwrap();
        let mut writer =
            parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap()).unwrap();
        check_pages(&path, builder.metadata()).unwrap();
        assert_eq!(read_whole(&path).unwrap().num_rows(), 3);
    }

    #[test]
    fn a_panic_inside_a_guarded_read_is_an_error_naming_the_file() {
        let path = Path::new("queue.parquet");
        let err = guarded::<()>(path, || panic!("column start and length should not be negative")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("queue.parquet") && text.contains("should not be negative"), "{text}");
        assert_eq!(guarded(path, || Ok(7)).unwrap(), 7);
    }
}
