//! Arrow across the boundary, both ways, through the Arrow PyCapsule interface: results leave as
//! [`Table`]s (an Arrow C stream polars and pyarrow import without copying the columns), and
//! tables in memory arrive as record batches from any object with `__arrow_c_stream__`.

use std::ffi::CStr;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchIterator};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use rayon::prelude::*;

use crate::errors::usage_error;

/// The capsule name the Arrow PyCapsule interface gives a C stream.
const STREAM: &CStr = c"arrow_array_stream";

/// A result table: the engine's record batches, handed out through the Arrow C stream
/// interface. Each export shares the batches' buffers, so no consumer gets a copy.
#[pyclass(frozen, module = "fairshare._fairshare")]
pub struct Table {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

#[pymethods]
impl Table {
    /// The table as an Arrow C stream in a PyCapsule (the Arrow PyCapsule interface). A requested
    /// schema is not honoured: the columns go as the engine made them.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new(self.batches.clone().into_iter().map(Ok), self.schema.clone());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        // The capsule drops the stream (calling its release) unless a consumer moved it out.
        PyCapsule::new_with_value(py, stream, STREAM)
    }

    fn __len__(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// The column names, in order.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.schema.fields().iter().map(|f| f.name().clone()).collect()
    }
}

impl Table {
    /// One batch as a table.
    pub fn one(py: Python<'_>, batch: RecordBatch) -> PyResult<Table> {
        Table::of(py, batch.schema(), vec![batch])
    }

    /// Batches of one schema as a table, with every name column as a string view.
    ///
    /// Names are one Arrow type in everything we return: `Utf8View`, polars' own string layout,
    /// so polars takes them without converting (a plain `Utf8` column is rebuilt as views on
    /// import) and the engine's dictionary-encoded names (a queue's users, accounts, partitions)
    /// join a tree's names without a cast. The cast keeps the engine's value bytes and writes a
    /// 16-byte view per row, with the GIL released.
    pub fn of(py: Python<'_>, schema: SchemaRef, batches: Vec<RecordBatch>) -> PyResult<Table> {
        py.detach(|| Table::views(&schema, batches)).map_err(|e| usage_error(format!("result table: {e}")))
    }

    fn views(schema: &SchemaRef, batches: Vec<RecordBatch>) -> Result<Table, arrow::error::ArrowError> {
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Utf8 | DataType::LargeUtf8 => f.as_ref().clone().with_data_type(DataType::Utf8View),
                DataType::Dictionary(_, v) if matches!(v.as_ref(), DataType::Utf8 | DataType::LargeUtf8) => {
                    f.as_ref().clone().with_data_type(DataType::Utf8View)
                }
                _ => f.as_ref().clone(),
            })
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        // One task per (batch, column) to convert: they are independent, and a 10^7-row column
        // takes a tenth of a second to gather.
        let tasks: Vec<(usize, usize)> = (0..batches.len())
            .flat_map(|b| (0..schema.fields().len()).map(move |c| (b, c)))
            .filter(|&(b, c)| batches[b].column(c).data_type() != schema.field(c).data_type())
            .collect();
        let converted = tasks
            .par_iter()
            .map(|&(b, c)| arrow::compute::cast(batches[b].column(c), schema.field(c).data_type()))
            .collect::<Result<Vec<ArrayRef>, _>>()?;
        let mut columns: Vec<Vec<ArrayRef>> = batches.iter().map(|b| b.columns().to_vec()).collect();
        for (&(b, c), array) in tasks.iter().zip(converted) {
            columns[b][c] = array;
        }
        let batches =
            columns.into_iter().map(|c| RecordBatch::try_new(schema.clone(), c)).collect::<Result<Vec<_>, _>>()?;
        Ok(Table { schema, batches })
    }
}

/// The record batches of an object exporting an Arrow C stream; `what` names the argument in
/// errors.
pub fn import_stream(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<RecordBatch>> {
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>().map_err(PyErr::from)?;
    let pointer = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: a capsule named `arrow_array_stream` holds an `ArrowArrayStream` by the interface's
    // contract; `from_raw` moves it out and marks the capsule's copy released, so the capsule's
    // destructor does not release it again.
    let stream = unsafe { FFI_ArrowArrayStream::from_raw(pointer.as_ptr().cast()) };
    let reader = RecordBatchStreamReader::try_new(stream).map_err(|e| usage_error(format!("{what}: {e}")))?;
    reader.collect::<Result<Vec<_>, _>>().map_err(|e| usage_error(format!("{what}: {e}")))
}

/// Whether `obj` is a table in memory (exports an Arrow C stream).
pub fn is_table(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    obj.hasattr("__arrow_c_stream__")
}
