//! One call into the engine from Python: what it hears while the GIL is released (warnings, a
//! Ctrl-C), the tables it spooled, and how its outcome becomes a Python result or exception.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use arrow::array::RecordBatch;
use fairshare_base::write::parquet::ParquetSink;
use fairshare_engine::pipeline::Observer;
use pyo3::exceptions::{PyKeyboardInterrupt, PyUserWarning};
use pyo3::prelude::*;

use crate::errors::{FairshareError, usage_error};

/// A table in memory written to a private temporary Parquet file, for the readers that take job
/// records and pending queues a row group at a time. Errors about the file name the table
/// instead (its rows keep their numbers).
pub struct Spool {
    _dir: tempfile::TempDir,
    path: PathBuf,
    label: &'static str,
}

impl Spool {
    /// Writes `batches` to a new private directory; `label` (`<jobs table>`) names the table in
    /// errors.
    pub fn write(batches: &[RecordBatch], label: &'static str) -> fairshare_base::Result<Spool> {
        let dir = tempfile::Builder::new()
            .prefix("fairshare-table-")
            .tempdir()
            .map_err(|e| fairshare_base::Error::io(std::env::temp_dir(), e))?;
        let path = dir.path().join("table.parquet");
        let first = batches
            .first()
            .ok_or_else(|| fairshare_base::Error::input(label, None, "no record batches: the table has no schema"))?;
        let mut sink = ParquetSink::create(&path, first, Vec::new())?;
        for batch in batches {
            sink.write(batch)?;
        }
        sink.finish()?;
        Ok(Spool { _dir: dir, path, label })
    }

    /// The spooled file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// What one call hears: warnings to raise once the GIL is back, a Ctrl-C, and the spools whose
/// paths its errors must not show.
#[derive(Default)]
pub struct Call {
    warnings: Mutex<Vec<String>>,
    interrupt: Mutex<Option<PyErr>>,
    spools: Vec<Spool>,
}

impl Observer for Call {
    fn warning(&self, message: &str) {
        self.warnings.lock().expect("no panic while held").push(self.named(message));
    }

    /// Python runs its signal handlers only when asked, with the GIL, on its main thread (the one
    /// that called, which a charge asks between its parts): between two pieces of a long
    /// stage, take it for a moment and ask. A handler's exception (KeyboardInterrupt) stops the
    /// stage and is what the call raises.
    fn interrupted(&self) -> bool {
        match Python::attach(|py| py.check_signals()) {
            Ok(()) => false,
            Err(e) => {
                *self.interrupt.lock().expect("no panic while held") = Some(e);
                true
            }
        }
    }
}

impl Call {
    /// Keeps `spool` alive for the call and returns its path.
    pub fn spool(&mut self, spool: Spool) -> PathBuf {
        let path = spool.path().to_path_buf();
        self.spools.push(spool);
        path
    }

    /// Whether `path` is one of the call's spooled tables.
    pub fn spooled(&self, path: Option<&Path>) -> bool {
        path.is_some_and(|p| self.spools.iter().any(|s| s.path == p))
    }

    /// An engine error as [`FairshareError`], naming tables rather than their spooled files.
    pub fn finish_err<T>(&self, result: fairshare_base::Result<T>) -> PyResult<T> {
        result.map_err(|e| FairshareError::new_err(self.named(&e.to_string())))
    }

    /// `text` with every spooled file's path replaced by its table's name.
    fn named(&self, text: &str) -> String {
        self.spools.iter().fold(text.to_string(), |t, s| t.replace(&s.path.display().to_string(), s.label))
    }

    /// The call's outcome for Python: warnings raised as `UserWarning`s, an engine error as
    /// [`FairshareError`] with the command line's message, an interruption as the exception the
    /// signal handler raised (a bare KeyboardInterrupt says what it stopped).
    pub fn finish<T>(self, py: Python<'_>, result: fairshare_base::Result<T>) -> PyResult<T> {
        let warnings = std::mem::take(&mut *self.warnings.lock().expect("no panic while held"));
        match result {
            Ok(value) => {
                for message in warnings {
                    let message = std::ffi::CString::new(message).unwrap_or_default();
                    PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, 1)?;
                }
                Ok(value)
            }
            Err(fairshare_base::Error::Interrupted(what)) => {
                let raised = self.interrupt.lock().expect("no panic while held").take();
                Err(match raised {
                    Some(e)
                        if e.is_instance_of::<PyKeyboardInterrupt>(py) && e.value(py).getattr("args")?.len()? == 0 =>
                    {
                        PyKeyboardInterrupt::new_err(format!("interrupted while {what}"))
                    }
                    Some(e) => e,
                    None => usage_error(format!("interrupted while {what}")),
                })
            }
            Err(e) => self.finish_err(Err(e)),
        }
    }
}
