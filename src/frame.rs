//! The analysts' side: results as polars `DataFrame`s.
//!
//! arrow-rs owns the engine and polars owns the dataframe side; this module is the one bridge
//! between them, through the Arrow C Data Interface, so columns are shared, not copied.

use arrow::array::{Array, RecordBatch};
use arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema, to_ffi};
use polars::prelude::{Column, DataFrame, Series};
use polars_arrow::ffi::{ArrowArray, ArrowSchema, import_array_from_c, import_field_from_c};

use crate::error::{Error, Result};
use crate::fairshare::FairShare;
use crate::output::parquet::association_batch;
use crate::tree::AssocTree;

// Both crates declare the C Data Interface structs `#[repr(C)]` with the standard layout.
const _: () = assert!(size_of::<FFI_ArrowArray>() == size_of::<ArrowArray>());
const _: () = assert!(size_of::<FFI_ArrowSchema>() == size_of::<ArrowSchema>());

fn bridge_error(e: impl std::fmt::Display) -> Error {
    Error::format("<dataframe>", e)
}

/// Hands an Arrow record batch to polars without copying its buffers.
///
/// # Errors
/// A column type polars cannot represent.
///
/// # Example
/// ```
/// let tree = fairshare::io::default_tree()?;
/// let batch = tree.to_record_batch();
/// let df = fairshare::frame::to_dataframe(&batch)?;
/// assert_eq!(df.height(), tree.len());
/// # Ok::<(), fairshare::Error>(())
/// ```
pub fn to_dataframe(batch: &RecordBatch) -> Result<DataFrame> {
    let columns = batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, array)| {
            let (ffi_array, ffi_schema) = to_ffi(&array.to_data()).map_err(bridge_error)?;
            // SAFETY: the layouts are equal (asserted above) and both follow the C Data Interface;
            // the schema is only borrowed, and the array's release callback moves to polars.
            let (dtype, imported) = unsafe {
                let schema = &*(&ffi_schema as *const FFI_ArrowSchema).cast::<ArrowSchema>();
                let pfield = import_field_from_c(schema).map_err(bridge_error)?;
                let parray = std::mem::transmute::<FFI_ArrowArray, ArrowArray>(ffi_array);
                (pfield.dtype().clone(), parray)
            };
            // SAFETY: `imported` is a valid C array of type `dtype`, exported just above.
            let array = unsafe { import_array_from_c(imported, dtype) }.map_err(bridge_error)?;
            let series = Series::from_arrow(field.name().as_str().into(), array).map_err(bridge_error)?;
            Ok(Column::from(series))
        })
        .collect::<Result<Vec<_>>>()?;
    DataFrame::new(batch.num_rows(), columns).map_err(bridge_error)
}

/// The per-association results (the columns of `fairshare compute`) as a `DataFrame`.
///
/// # Errors
/// As [`to_dataframe`].
///
/// # Example
/// ```
/// use fairshare::fairshare::{compute, Algorithm, Params};
/// let tree = fairshare::io::default_tree()?;
/// let fs = compute(&tree, &Params::new(Algorithm::Classic))?;
/// let df = fairshare::frame::associations_frame(&tree, &fs)?;
/// assert!(df.column("fs_factor").is_ok());
/// # Ok::<(), fairshare::Error>(())
/// ```
pub fn associations_frame(tree: &AssocTree, fs: &FairShare) -> Result<DataFrame> {
    to_dataframe(&association_batch(tree, fs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fairshare::{Algorithm, Params, compute};

    #[test]
    fn dataframe_sees_the_same_numbers() {
        let tree = crate::io::default_tree().unwrap();
        let fs = compute(&tree, &Params::new(Algorithm::FairTree)).unwrap();
        let df = associations_frame(&tree, &fs).unwrap();
        assert_eq!(df.height(), tree.len());
        let col = df.column("fs_factor").unwrap().as_materialized_series().f64().unwrap().clone();
        for row in 0..tree.len() {
            assert_eq!(col.get(row), (!fs.fs_factor[row].is_nan()).then_some(fs.fs_factor[row]));
        }
        let users = df.column("user").unwrap().as_materialized_series().str().unwrap().clone();
        assert_eq!(users.get(1), tree.user_name(1));
    }
}
