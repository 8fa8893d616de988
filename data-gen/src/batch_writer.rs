//! A generated table written as Parquet batch by batch, so a generator never holds it whole.

use std::path::Path;

use arrow::array::RecordBatch;
use arrow::error::ArrowError;
use fairshare_base::write::atomic::AtomicFile;
use fairshare_base::{Error, Result};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// Rows per batch (and so per row group) the generators gather.
pub(crate) const BATCH: usize = 1 << 20;

/// A ZSTD Parquet file whose schema is the first batch's, committed atomically by
/// [`BatchWriter::finish`].
pub(crate) struct BatchWriter<'p> {
    path: &'p Path,
    file: Option<AtomicFile>,
    writer: Option<ArrowWriter<AtomicFile>>,
}

impl<'p> BatchWriter<'p> {
    /// Opens the temporary file beside `path`.
    pub(crate) fn create(path: &'p Path) -> Result<Self> {
        Ok(BatchWriter { path, file: Some(AtomicFile::create(path)?), writer: None })
    }

    /// Appends one batch.
    pub(crate) fn write(&mut self, batch: std::result::Result<RecordBatch, ArrowError>) -> Result<()> {
        let path = self.path;
        let enc = |e: parquet::errors::ParquetError| Error::format(path, e);
        let batch = batch.map_err(|e| Error::format(path, e))?;
        if self.writer.is_none() {
            let props = WriterProperties::builder()
                .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("level")))
                .build();
            let file = self.file.take().expect("file until the first batch");
            self.writer = Some(ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(enc)?);
        }
        self.writer.as_mut().expect("writer").write(&batch).map_err(enc)
    }

    /// Whether no batch was written yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.writer.is_none()
    }

    /// Closes and commits the file; `empty` names what was empty when no batch gave a schema.
    pub(crate) fn finish(self, empty: &str) -> Result<()> {
        match self.writer {
            Some(w) => w.into_inner().map_err(|e| Error::format(self.path, e))?.commit(),
            None => Err(Error::Usage(format!("{empty} has no Parquet schema to write"))),
        }
    }
}
