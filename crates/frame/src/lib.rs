//! The analysts' side: results as polars `DataFrame`s.
//!
//! arrow-rs owns the engine and polars owns the dataframe side; this module is the one bridge
//! between them, through the Arrow C Data Interface, so columns are shared, not copied. Each
//! stage's result has its frame: the tree with its raw usage ([`tree_frame`], after
//! [`fairshare_engine::usage::charge_jobs`]), the fair-share pass ([`associations_frame`]) and the scored
//! queue ([`jobs_frame`]); [`parquet_frame`] reads back what `fairshare run --out-dir` wrote.
//! The frames have the columns of the Parquet files, so code written against one reads the other.

use std::path::Path;

use arrow::array::{Array, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema, to_ffi};
use polars::prelude::{Column, DataFrame, Series};
use polars_arrow::ffi::{ArrowArray, ArrowSchema, import_array_from_c, import_field_from_c};

use fairshare_base::error::{Error, Result};
use fairshare_engine::jobs::PendingJobs;
use fairshare_engine::output::parquet::{association_batch, jobs_batch};
use fairshare_engine::pass::FairShare;
use fairshare_engine::priority::{Scores, Weights};
use fairshare_engine::tree::AssocTree;

// Both crates declare the C Data Interface structs `#[repr(C)]` with the standard layout.
const _: () = assert!(size_of::<FFI_ArrowArray>() == size_of::<ArrowArray>());
const _: () = assert!(size_of::<FFI_ArrowSchema>() == size_of::<ArrowSchema>());

fn bridge_error(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::format("<dataframe>", e)
}

/// Hands an Arrow record batch to polars without copying its buffers. Dictionary-encoded
/// columns arrive as plain columns of their values (decoded, so copied).
///
/// # Errors
/// A column type polars cannot represent.
///
/// # Example
/// ```
/// let tree = fairshare_engine::io::default_tree()?;
/// let batch = tree.to_record_batch();
/// let df = fairshare_frame::to_dataframe(&batch)?;
/// assert_eq!(df.height(), tree.len());
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn to_dataframe(batch: &RecordBatch) -> Result<DataFrame> {
    let columns = batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, array)| {
            // This polars build has no categorical dtype (it would panic on a dictionary array):
            // dictionary-encoded columns go over as their values.
            let decoded;
            let array = match array.data_type() {
                DataType::Dictionary(_, values) => {
                    decoded = cast(array, values).map_err(bridge_error)?;
                    &decoded
                }
                _ => array,
            };
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
/// use fairshare_engine::pass::{compute, Algorithm, Params};
/// let tree = fairshare_engine::io::default_tree()?;
/// let fs = compute(&tree, &Params::new(Algorithm::Classic))?;
/// let df = fairshare_frame::associations_frame(&tree, &fs)?;
/// assert!(df.column("fs_factor").is_ok());
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn associations_frame(tree: &AssocTree, fs: &FairShare) -> Result<DataFrame> {
    to_dataframe(&association_batch(tree, fs))
}

/// The tree as built (ids, shares, raw usage; no fair-share results) as a `DataFrame`: what the
/// usage stage produced.
///
/// # Errors
/// As [`to_dataframe`].
///
/// # Example
/// ```
/// let tree = fairshare_engine::io::default_tree()?;
/// let df = fairshare_frame::tree_frame(&tree)?;
/// assert!(df.column("raw_usage").is_ok());
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn tree_frame(tree: &AssocTree) -> Result<DataFrame> {
    to_dataframe(&tree.to_record_batch())
}

/// The scored pending queue (the columns of `jobs.parquet`: one row per job, partition and QOS,
/// weighted `prio_*` factors) as a `DataFrame`. Name columns are plain strings.
///
/// # Errors
/// As [`to_dataframe`].
///
/// # Example
/// ```
/// use fairshare_engine::pass::{compute, Algorithm, Params};
/// use fairshare_engine::priority::SlurmPriority;
/// let site = std::path::Path::new("../../examples/seed-site");
/// let conf = fairshare_engine::config::read_slurm_conf(&site.join("slurm.conf"), None)?;
/// let qos = fairshare_engine::config::qos::read(&site.join("qos.txt"))?;
/// let tree = fairshare_engine::io::read_tree(&site.join("tree.csv"), None)?;
/// let fs = compute(&tree, &Params::new(Algorithm::Classic))?;
/// let prio = SlurmPriority::new(&conf, Some(&qos), 1_767_830_400);
/// let pending = site.join("pending.csv");
/// let jobs = fairshare_engine::jobs::PendingJobs::read(&pending, None, &prio.weights.tres_keys())?;
/// let (scores, _unknown) = prio.score(&jobs, &tree, &fs)?;
/// let rows = scores.len();
/// let df = fairshare_frame::jobs_frame(scores, &jobs, &prio.weights)?;
/// assert_eq!(df.height(), rows);
/// assert!(df.column("prio_fairshare").is_ok());
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn jobs_frame(scores: Scores, jobs: &PendingJobs, weights: &Weights) -> Result<DataFrame> {
    to_dataframe(&jobs_batch(scores, jobs, weights)?)
}

/// Reads a Parquet file of a run directory (`associations.parquet`, `jobs.parquet`) into one
/// `DataFrame`, all row groups in file order.
///
/// # Errors
/// An unreadable file, or one that is not Parquet, naming `path`.
///
/// # Example
/// ```
/// use fairshare_engine::pass::{compute, Algorithm, Params};
/// use fairshare_base::write::parquet::write_parquet;
/// use fairshare_engine::output::parquet::{association_batch, metadata};
/// let tree = fairshare_engine::io::default_tree()?;
/// let fs = compute(&tree, &Params::new(Algorithm::FairTree))?;
/// let dir = std::env::temp_dir().join(format!("fairshare-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("associations.parquet");
/// write_parquet(&path, &association_batch(&tree, &fs), metadata(&fs, "doc"))?;
/// let df = fairshare_frame::parquet_frame(&path)?;
/// assert!(df.equals_missing(&fairshare_frame::associations_frame(&tree, &fs)?));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn parquet_frame(path: &Path) -> Result<DataFrame> {
    to_dataframe(&fairshare_engine::io::read_parquet_whole(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairshare_engine::pass::{Algorithm, Params, compute};

    #[test]
    fn dataframe_sees_the_same_numbers() {
        let tree = fairshare_engine::io::default_tree().unwrap();
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

    #[test]
    fn jobs_frame_has_the_parquet_columns() {
        use fairshare_engine::priority::SlurmPriority;
        let site = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/seed-site");
        let conf = fairshare_engine::config::read_slurm_conf(&site.join("slurm.conf"), None).unwrap();
        let tree = fairshare_engine::io::read_tree(&site.join("tree.csv"), None).unwrap();
        let fs = compute(&tree, &Params::new(Algorithm::Classic)).unwrap();
        let prio = SlurmPriority::new(&conf, None, 1_767_830_400);
        let jobs = PendingJobs::read(&site.join("pending.csv"), None, &prio.weights.tres_keys()).unwrap();
        let (scores, _) = prio.score(&jobs, &tree, &fs).unwrap();
        let first_job_index = scores.job[0] as usize;
        let (first_job, first_fs) = (jobs.job_id[first_job_index], scores.fairshare[0]);
        let batch = jobs_batch(scores.clone(), &jobs, &prio.weights).unwrap();
        let df = jobs_frame(scores, &jobs, &prio.weights).unwrap();
        let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
        let schema = batch.schema();
        let expected: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, expected);
        assert_eq!(df.column("job_id").unwrap().u64().unwrap().get(0), Some(first_job));
        assert_eq!(df.column("prio_fairshare").unwrap().f64().unwrap().get(0), Some(first_fs));
        // Dictionary-encoded names arrive as plain strings.
        let users = df.column("user").unwrap().as_materialized_series().str().unwrap().clone();
        assert_eq!(users.get(0), Some(jobs.names.name(jobs.user[first_job_index])));
    }
}
