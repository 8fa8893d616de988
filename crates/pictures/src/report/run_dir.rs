//! A report's data read back from a run directory (`fairshare run --out-dir`): the tree and the
//! run's own fair-share numbers from `associations.parquet` (not recomputed: the page shows what
//! the run computed), the parameters from `run.json`, the queue from `jobs.parquet`.

use std::path::Path;

use arrow::array::AsArray;
use arrow::datatypes::{DataType, Float64Type, UInt32Type, UInt64Type};

use super::{Jobs, Part, RunFacts, rows_by_id};
use fairshare_analyses::compare::{column_as, read_rows};
use fairshare_base::named::Named;
use fairshare_base::{Error, Result};
use fairshare_engine::io::TreeFormat;
use fairshare_engine::pass::{Algorithm, FairShare, Params};
use fairshare_engine::pipeline::shown;
use fairshare_engine::tree::AssocTree;

/// What a run directory gives a report.
#[derive(Debug)]
pub struct RunDirReport {
    /// The tree, with the run's usage.
    pub tree: AssocTree,
    /// The run's fair-share.
    pub fs: FairShare,
    /// Its source, time and parameters.
    pub run: RunFacts,
    /// Its scored queue (left out when the run had none).
    pub jobs: Part<Jobs>,
}

/// Reads the run directory `dir`.
///
/// # Errors
/// `dir` has no `associations.parquet`, or a file of it cannot be read or lacks a column.
pub fn read_run_dir(dir: &Path) -> Result<RunDirReport> {
    let path = dir.join("associations.parquet");
    if !path.is_file() {
        return Err(Error::Usage(format!(
            "{}: no associations.parquet; give a directory written by `fairshare run --out-dir`",
            dir.display()
        )));
    }
    let run_json = dir.join("run.json");
    let json: Option<serde_json::Value> = match std::fs::read_to_string(&run_json) {
        Ok(text) => Some(
            serde_json::from_str(&text)
                .map_err(|e| Error::input(&run_json, Some(e.line() as u64), format!("not valid JSON: {e}")))?,
        ),
        Err(_) => None,
    };
    let parameters = json.as_ref().and_then(|j| j.get("parameters")).cloned().unwrap_or_default();
    let params = params_of(&parameters, &path)?;
    let tree = fairshare_engine::io::read_tree(&path, Some(TreeFormat::Parquet))?;
    let fs = fair_share_of(&tree, &path, params)?;
    let run = RunFacts {
        source: json.as_ref().and_then(|j| j.get("source")?.as_str().map(str::to_string)).unwrap_or_else(|| shown(dir)),
        now: parameters.get("now").and_then(serde_json::Value::as_i64),
        parameters: RunFacts::parameters_of(&parameters),
    };
    let jobs_path = dir.join("jobs.parquet");
    let jobs = if jobs_path.is_file() {
        Part::Shown(Jobs::from_batch(&read_rows(&jobs_path)?, &jobs_path, &tree, None)?)
    } else {
        Part::LeftOut(format!("{} holds no jobs.parquet (the run had no pending queue)", dir.display()))
    };
    Ok(RunDirReport { tree, fs, run, jobs })
}

/// The pass's parameters from `run.json`'s (the algorithm from the file's metadata without one).
fn params_of(parameters: &serde_json::Value, path: &Path) -> Result<Params> {
    let name = match parameters.get("algorithm").and_then(serde_json::Value::as_str) {
        Some(a) => a.to_string(),
        None => file_algorithm(path)?,
    };
    let algorithm = Algorithm::of_name(&name)
        .ok_or_else(|| Error::input(path, None, format!("algorithm {name:?} is not fair_tree, classic or flux")))?;
    let mut params = Params::new(algorithm);
    if let Some(d) = parameters.get("dampening").and_then(serde_json::Value::as_u64) {
        params.dampening = u16::try_from(d).unwrap_or(u16::MAX);
    }
    params.depth_oblivious = parameters.get("depth_oblivious").and_then(serde_json::Value::as_bool).unwrap_or(false);
    Ok(params)
}

/// `fairshare.algorithm` of a Parquet file's metadata.
fn file_algorithm(path: &Path) -> Result<String> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let reader = SerializedFileReader::new(file).map_err(|e| Error::format(path, e))?;
    let meta = reader.metadata().file_metadata().key_value_metadata().cloned().unwrap_or_default();
    meta.into_iter()
        .find(|kv| kv.key == "fairshare.algorithm")
        .and_then(|kv| kv.value)
        .ok_or_else(|| Error::input(path, None, "no fairshare.algorithm in the file's metadata and no run.json"))
}

/// The fair-share columns of `associations.parquet`, in `tree`'s rows (matched by id).
fn fair_share_of(tree: &AssocTree, path: &Path, params: Params) -> Result<FairShare> {
    let batch = read_rows(path)?;
    let ids = column_as(&batch, path, "id", DataType::UInt64)?;
    let by_id = rows_by_id(tree);
    let rows: Vec<usize> = ids
        .as_primitive::<UInt64Type>()
        .values()
        .iter()
        .map(|id| by_id.get(id).copied().ok_or_else(|| Error::input(path, None, format!("id {id} is not in the tree"))))
        .collect::<Result<_>>()?;
    let floats = |name: &str| -> Result<Vec<f64>> {
        let a = column_as(&batch, path, name, DataType::Float64)?;
        let mut out = vec![f64::NAN; tree.len()];
        for (i, v) in a.as_primitive::<Float64Type>().iter().enumerate() {
            out[rows[i]] = v.unwrap_or(f64::NAN);
        }
        Ok(out)
    };
    let rank_col = column_as(&batch, path, "rank", DataType::UInt32)?;
    let mut rank = vec![0; tree.len()];
    for (i, v) in rank_col.as_primitive::<UInt32Type>().iter().enumerate() {
        rank[rows[i]] = v.unwrap_or(0);
    }
    Ok(FairShare {
        params,
        norm_shares: floats("norm_shares")?,
        norm_usage: floats("norm_usage")?,
        effective_usage: floats("effective_usage")?,
        level_fs: floats("level_fs")?,
        rank,
        fs_factor: floats("fs_factor")?,
    })
}
