//! The `fairshare` Python module's native part: argument conversion around the library's
//! pipeline, and nothing else. Every computation is `fairshare::pipeline` (or the readers and the
//! pass it uses), run with the GIL released; results leave as Arrow record batches through the
//! Arrow PyCapsule interface ([`Table::__arrow_c_stream__`]), which polars and pyarrow import
//! without copying the columns. `fairshare/__init__.py` wraps them as polars DataFrames.

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use arrow::array::{RecordBatch, RecordBatchIterator};
use arrow::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use fairshare::io::TreeFormat;
use fairshare::io::parquet_tree::{columns_from_batches, records_to_batch};
use fairshare::jobs::PendingFormat;
use fairshare::output::parquet::{into_association_batch, jobs_batch};
use fairshare::pass::{Algorithm, FairShare};
use fairshare::pipeline::{Decay, EmbeddedSite, Observer, Queue, Site, SiteOptions, fair_share_after_charge};
use fairshare::tree::{AssocTree, Shares, TreeColumns};
use fairshare::usage::JobFormat;
use fairshare::usage::swf::SwfTree;
use pyo3::create_exception;
use pyo3::exceptions::{PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

create_exception!(
    _fairshare,
    FairshareError,
    PyValueError,
    "An input or option the engine refuses; the message is the command line's (file, line, problem)."
);

/// The capsule name the Arrow PyCapsule interface gives a C stream.
const STREAM: &CStr = c"arrow_array_stream";

/// What the errors of a table handed over in memory call it.
const IN_MEMORY: &str = "<table>";

fn error(e: fairshare::Error) -> PyErr {
    FairshareError::new_err(e.to_string())
}

fn usage_error(message: String) -> PyErr {
    FairshareError::new_err(message)
}

/// A result table: one Arrow record batch of the engine's, handed out through the Arrow C stream
/// interface. Each export shares the batch's buffers, so no consumer gets a copy.
#[pyclass(frozen, module = "fairshare._fairshare")]
struct Table {
    batch: RecordBatch,
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
        let reader = RecordBatchIterator::new([Ok(self.batch.clone())], self.batch.schema());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        // The capsule drops the stream (calling its release) unless a consumer moved it out.
        PyCapsule::new_with_value(py, stream, STREAM)
    }

    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }

    /// The column names, in order.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.batch.schema().fields().iter().map(|f| f.name().clone()).collect()
    }
}

fn table(batch: RecordBatch) -> Table {
    Table { batch }
}

/// A tree argument: a file of any format the command line reads, or a table in memory.
enum TreeArg {
    Path(PathBuf),
    Columns(Box<TreeColumns>),
}

/// Reads `obj` as a tree: a path (`str` or `os.PathLike`), or any object with
/// `__arrow_c_stream__` (polars, pyarrow, pandas), read with the Parquet tree's columns.
fn tree_arg(obj: &Bound<'_, PyAny>) -> PyResult<TreeArg> {
    if let Ok(path) = obj.extract::<PathBuf>() {
        return Ok(TreeArg::Path(path));
    }
    if !obj.hasattr("__arrow_c_stream__")? {
        return Err(usage_error(format!(
            "tree: expected a path or a table with __arrow_c_stream__ (polars, pyarrow, pandas), got {}",
            obj.get_type().name()?
        )));
    }
    let batches = import_stream(obj)?;
    let columns = obj.py().detach(|| columns_from_batches(Path::new(IN_MEMORY), &batches)).map_err(error)?;
    Ok(TreeArg::Columns(Box::new(columns)))
}

/// The record batches of an object exporting an Arrow C stream.
fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<Vec<RecordBatch>> {
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>().map_err(PyErr::from)?;
    let pointer = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: a capsule named `arrow_array_stream` holds an `ArrowArrayStream` by the interface's
    // contract; `from_raw` moves it out and marks the capsule's copy released, so the capsule's
    // destructor does not release it again.
    let stream = unsafe { FFI_ArrowArrayStream::from_raw(pointer.as_ptr().cast()) };
    let reader = RecordBatchStreamReader::try_new(stream).map_err(|e| usage_error(format!("tree: {e}")))?;
    reader.collect::<Result<Vec<_>, _>>().map_err(|e| usage_error(format!("tree: {e}")))
}

/// Looks `name` up among `(value, name)` pairs, saying the choices when it is none of them.
fn choice<T: Copy>(what: &str, name: &str, choices: &[(T, &str)]) -> PyResult<T> {
    choices.iter().find(|(_, n)| *n == name).map(|(v, _)| *v).ok_or_else(|| {
        let names: Vec<&str> = choices.iter().map(|(_, n)| *n).collect();
        usage_error(format!("{what}: unknown {name:?}; one of {}", names.join(", ")))
    })
}

const ALGORITHMS: [(Algorithm, &str); 3] =
    [(Algorithm::FairTree, "fair-tree"), (Algorithm::Classic, "classic"), (Algorithm::Flux, "flux")];
const DECAYS: [(Decay, &str); 4] =
    [(Decay::Slurm, "slurm"), (Decay::Exact, "exact"), (Decay::Flux, "flux"), (Decay::FluxClean, "flux-clean")];
const JOB_FORMATS: [(JobFormat, &str); 6] = [
    (JobFormat::Csv, "csv"),
    (JobFormat::Parquet, "parquet"),
    (JobFormat::Sacct, "sacct"),
    (JobFormat::SacctJson, "sacct-json"),
    (JobFormat::Swf(SwfTree::GroupUser), "swf"),
    (JobFormat::FluxDb, "flux-db"),
];
const SWF_TREES: [(SwfTree, &str); 2] =
    [(SwfTree::GroupUser, "group-user"), (SwfTree::PartitionUser, "partition-user")];
const PENDING_FORMATS: [(PendingFormat, &str); 3] =
    [(PendingFormat::Csv, "csv"), (PendingFormat::Parquet, "parquet"), (PendingFormat::SqueueJson, "squeue-json")];

/// The site options every function takes, as keyword arguments arrive.
#[derive(Default)]
struct Kwargs {
    algorithm: Option<String>,
    dampening: Option<u16>,
    depth_oblivious: bool,
    flux_exact_sums: bool,
    set_shares: Option<Vec<(String, String)>>,
    tree_format: Option<String>,
    jobs: Option<PathBuf>,
    jobs_format: Option<String>,
    swf_tree: Option<String>,
    now: Option<String>,
    decay: Option<String>,
    half_life: Option<String>,
    calc_period: Option<String>,
    reset_period: Option<String>,
    first_pass: Option<String>,
    timezone: Option<String>,
    billing: Option<Vec<(String, String)>>,
    slurm_conf: Option<PathBuf>,
    qos: Option<PathBuf>,
    pending: Option<PathBuf>,
    pending_format: Option<String>,
}

impl Kwargs {
    /// The options over `options` (a site file's, or none): what is given here wins.
    fn into_options(self, mut options: SiteOptions) -> PyResult<SiteOptions> {
        if let Some(a) = &self.algorithm {
            options.algorithm = Some(choice("algorithm", a, &ALGORITHMS)?);
        }
        if let Some(f) = &self.tree_format {
            options.tree_format = Some(choice("format", f, &TreeFormat::ALL)?);
        }
        if let Some(f) = &self.jobs_format {
            options.jobs_format = Some(choice("jobs_format", f, &JOB_FORMATS)?);
        }
        if let Some(t) = &self.swf_tree {
            options.swf_tree = Some(choice("swf_tree", t, &SWF_TREES)?);
        }
        if let Some(d) = &self.decay {
            options.decay = Some(choice("decay", d, &DECAYS)?);
        }
        if let Some(f) = &self.pending_format {
            options.pending_format = Some(choice("pending_format", f, &PENDING_FORMATS)?);
        }
        for (name, shares) in self.set_shares.unwrap_or_default() {
            let shares = if shares == "parent" {
                Shares::Parent
            } else {
                Shares::Value(shares.parse().map_err(|_| {
                    usage_error(format!("set_shares: {name}={shares}: expected a share count or \"parent\""))
                })?)
            };
            options.set_shares.push((name, shares));
        }
        options.billing.extend(self.billing.unwrap_or_default());
        options.dampening = self.dampening.or(options.dampening);
        options.depth_oblivious |= self.depth_oblivious;
        options.flux_exact_sums |= self.flux_exact_sums;
        let set = |slot: &mut Option<String>, value: Option<String>| {
            if value.is_some() {
                *slot = value;
            }
        };
        set(&mut options.now, self.now);
        set(&mut options.half_life, self.half_life);
        set(&mut options.calc_period, self.calc_period);
        set(&mut options.reset_period, self.reset_period);
        set(&mut options.first_pass, self.first_pass);
        set(&mut options.timezone, self.timezone);
        let set_path = |slot: &mut Option<PathBuf>, value: Option<PathBuf>| {
            if value.is_some() {
                *slot = value;
            }
        };
        set_path(&mut options.jobs, self.jobs);
        set_path(&mut options.slurm_conf, self.slurm_conf);
        set_path(&mut options.qos, self.qos);
        set_path(&mut options.pending, self.pending);
        Ok(options)
    }
}

/// A time argument as the command line spells it: text, or seconds since the epoch.
fn time_text(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    let Some(obj) = obj else { return Ok(None) };
    if let Ok(seconds) = obj.extract::<i64>() {
        return Ok(Some(seconds.to_string()));
    }
    Ok(Some(obj.extract::<String>()?))
}

/// Collects the warnings of a computation, to raise as Python warnings once the GIL is back.
#[derive(Default)]
struct Warnings(Mutex<Vec<String>>);

impl Observer for Warnings {
    fn warning(&self, message: &str) {
        self.0.lock().expect("no panic while held").push(message.to_string());
    }
}

impl Warnings {
    fn raise(self, py: Python<'_>) -> PyResult<()> {
        for message in self.0.into_inner().expect("no panic while held") {
            let message = std::ffi::CString::new(message).unwrap_or_default();
            PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, 1)?;
        }
        Ok(())
    }
}

/// The site of `options`, resolved, with the tree in memory when it is one.
fn resolve(tree: Option<TreeArg>, kwargs: Kwargs) -> PyResult<(Site, Option<TreeColumns>)> {
    let mut options = kwargs.into_options(SiteOptions::default())?;
    let columns = match tree {
        Some(TreeArg::Path(p)) => {
            options.tree = Some(p);
            None
        }
        Some(TreeArg::Columns(c)) => {
            if !options.set_shares.is_empty() {
                return Err(usage_error(
                    "set_shares: edits apply to a tree file; edit a table in memory before passing it".into(),
                ));
            }
            Some(*c)
        }
        None => None,
    };
    Ok((options.resolve().map_err(error)?, columns))
}

/// The tree with its usage (charged when the site has job records) and its fair-share, as
/// [`Site::fair_share`] gives it for a tree file, for a tree in memory too.
fn fair_share(
    site: &Site,
    columns: Option<TreeColumns>,
    observer: &dyn Observer,
) -> fairshare::Result<(AssocTree, FairShare)> {
    let Some(columns) = columns else {
        return site.fair_share(observer).map(|(tree, fs, _)| (tree, fs));
    };
    if site.usage.is_none() {
        let tree = AssocTree::from_columns(columns)?;
        let fs = fairshare::pass::compute(&tree, &site.params)?;
        return Ok((tree, fs));
    }
    let mut input = columns.into_input();
    let report = site.charge(&mut input, observer)?;
    fair_share_after_charge(input, report.as_ref(), &site.params)
}

/// read_tree(source, format=None)
/// --
///
/// The tree's canonical columns (what `fairshare usage --out` writes).
#[pyfunction]
#[pyo3(signature = (source, format = None))]
fn read_tree(py: Python<'_>, source: &Bound<'_, PyAny>, format: Option<String>) -> PyResult<Table> {
    let format = format.map(|f| choice("format", &f, &TreeFormat::ALL)).transpose()?;
    let batch = match tree_arg(source)? {
        TreeArg::Path(p) => {
            py.detach(|| fairshare::io::read_tree_input(&p, format).map(|input| records_to_batch(&input.records)))
        }
        TreeArg::Columns(c) => py.detach(move || Ok(records_to_batch(&c.into_input().records))),
    };
    batch.map(table).map_err(error)
}

/// compute(tree, algorithm="fair-tree", dampening=1, ...)
/// --
///
/// The fair-share of `tree`: the columns of `fairshare compute --out`.
#[pyfunction]
#[pyo3(signature = (tree, algorithm = "fair-tree".to_string(), dampening = 1, *, depth_oblivious = false,
    flux_exact_sums = false, set_shares = None, format = None))]
#[allow(clippy::too_many_arguments)] // one per keyword argument of the Python function
fn compute(
    py: Python<'_>,
    tree: &Bound<'_, PyAny>,
    algorithm: String,
    dampening: u16,
    depth_oblivious: bool,
    flux_exact_sums: bool,
    set_shares: Option<Vec<(String, String)>>,
    format: Option<String>,
) -> PyResult<Table> {
    let kwargs = Kwargs {
        algorithm: Some(algorithm),
        dampening: Some(dampening),
        depth_oblivious,
        flux_exact_sums,
        set_shares,
        tree_format: format,
        ..Kwargs::default()
    };
    let (site, columns) = resolve(Some(tree_arg(tree)?), kwargs)?;
    let warnings = Warnings::default();
    let batch = py
        .detach(|| fair_share(&site, columns, &warnings).map(|(tree, fs)| into_association_batch(&tree, fs)))
        .map_err(error)?;
    warnings.raise(py)?;
    Ok(table(batch))
}

/// usage(tree, jobs, *, now, decay="slurm", half_life=None, slurm_conf=None, qos=None, ...)
/// --
///
/// The tree with the usage charged from `jobs`: the columns of `fairshare usage --out`.
#[pyfunction]
#[pyo3(signature = (tree, jobs, *, now, decay = "slurm".to_string(), half_life = None, slurm_conf = None,
    qos = None, jobs_format = None, swf_tree = None, first_pass = None, calc_period = None, reset_period = None,
    timezone = None, billing = None, algorithm = None, set_shares = None, format = None))]
#[allow(clippy::too_many_arguments)] // one per keyword argument of the Python function
fn usage(
    py: Python<'_>,
    tree: Option<&Bound<'_, PyAny>>,
    jobs: PathBuf,
    now: &Bound<'_, PyAny>,
    decay: String,
    half_life: Option<String>,
    slurm_conf: Option<PathBuf>,
    qos: Option<PathBuf>,
    jobs_format: Option<String>,
    swf_tree: Option<String>,
    first_pass: Option<&Bound<'_, PyAny>>,
    calc_period: Option<String>,
    reset_period: Option<String>,
    timezone: Option<String>,
    billing: Option<Vec<(String, String)>>,
    algorithm: Option<String>,
    set_shares: Option<Vec<(String, String)>>,
    format: Option<String>,
) -> PyResult<Table> {
    let kwargs = Kwargs {
        jobs: Some(jobs),
        now: time_text(Some(now))?,
        decay: Some(decay),
        half_life,
        slurm_conf,
        qos,
        jobs_format,
        swf_tree,
        first_pass: time_text(first_pass)?,
        calc_period,
        reset_period,
        timezone,
        billing,
        algorithm,
        set_shares,
        tree_format: format,
        ..Kwargs::default()
    };
    let tree = tree.filter(|t| !t.is_none()).map(tree_arg).transpose()?;
    let (site, columns) = resolve(tree, kwargs)?;
    let warnings = Warnings::default();
    let batch = py
        .detach(|| {
            let mut input = match columns {
                Some(c) => c.into_input(),
                None => site.tree_input()?,
            };
            site.charge(&mut input, &warnings)?;
            Ok(records_to_batch(&input.records))
        })
        .map_err(error)?;
    warnings.raise(py)?;
    Ok(table(batch))
}

/// score(tree, pending, *, slurm_conf, now=None, qos=None, jobs=None, ...)
/// --
///
/// The pending queue scored with Slurm's multifactor formula: the columns of
/// `fairshare score --out`.
#[pyfunction]
#[pyo3(signature = (tree, pending, *, slurm_conf, now = None, qos = None, jobs = None, pending_format = None,
    jobs_format = None, decay = None, half_life = None, calc_period = None, reset_period = None, timezone = None,
    billing = None, algorithm = None, dampening = None, set_shares = None, format = None))]
#[allow(clippy::too_many_arguments)] // one per keyword argument of the Python function
fn score(
    py: Python<'_>,
    tree: &Bound<'_, PyAny>,
    pending: PathBuf,
    slurm_conf: PathBuf,
    now: Option<&Bound<'_, PyAny>>,
    qos: Option<PathBuf>,
    jobs: Option<PathBuf>,
    pending_format: Option<String>,
    jobs_format: Option<String>,
    decay: Option<String>,
    half_life: Option<String>,
    calc_period: Option<String>,
    reset_period: Option<String>,
    timezone: Option<String>,
    billing: Option<Vec<(String, String)>>,
    algorithm: Option<String>,
    dampening: Option<u16>,
    set_shares: Option<Vec<(String, String)>>,
    format: Option<String>,
) -> PyResult<Table> {
    let kwargs = Kwargs {
        pending: Some(pending),
        slurm_conf: Some(slurm_conf),
        now: time_text(now)?,
        qos,
        jobs,
        pending_format,
        jobs_format,
        decay,
        half_life,
        calc_period,
        reset_period,
        timezone,
        billing,
        algorithm,
        dampening,
        set_shares,
        tree_format: format,
        ..Kwargs::default()
    };
    let (site, columns) = resolve(Some(tree_arg(tree)?), kwargs)?;
    let warnings = Warnings::default();
    let batch = py
        .detach(|| {
            let (tree, fs) = fair_share(&site, columns, &warnings)?;
            let queue = site.score(&tree, &fs, &warnings)?.expect("the site has a pending queue");
            jobs_batch(queue.scores, &queue.jobs, &queue.weights)
        })
        .map_err(error)?;
    warnings.raise(py)?;
    Ok(table(batch))
}

/// run(site=None, ...)
/// --
///
/// The nightly run of a site (its TOML file; none: the embedded seed site, as `fairshare run`):
/// a dict of `associations`, `jobs` (None without a pending queue) and `parameters`.
#[pyfunction]
#[pyo3(signature = (site = None, *, tree = None, jobs = None, pending = None, slurm_conf = None, qos = None,
    now = None, algorithm = None, dampening = None, decay = None, half_life = None, set_shares = None,
    billing = None))]
#[allow(clippy::too_many_arguments)] // one per keyword argument of the Python function
fn run<'py>(
    py: Python<'py>,
    site: Option<PathBuf>,
    tree: Option<PathBuf>,
    jobs: Option<PathBuf>,
    pending: Option<PathBuf>,
    slurm_conf: Option<PathBuf>,
    qos: Option<PathBuf>,
    now: Option<&Bound<'py, PyAny>>,
    algorithm: Option<String>,
    dampening: Option<u16>,
    decay: Option<String>,
    half_life: Option<String>,
    set_shares: Option<Vec<(String, String)>>,
    billing: Option<Vec<(String, String)>>,
) -> PyResult<Bound<'py, PyDict>> {
    let kwargs = Kwargs {
        jobs,
        pending,
        slurm_conf,
        qos,
        now: time_text(now)?,
        algorithm,
        dampening,
        decay,
        half_life,
        set_shares,
        billing,
        ..Kwargs::default()
    };
    let (site, embedded) = whole_site(site, tree, kwargs)?;
    let warnings = Warnings::default();
    let run = py.detach(|| site.run(false, &warnings)).map_err(error)?;
    drop(embedded);
    warnings.raise(py)?;
    let mut parameters = vec![
        ("fairshare.algorithm".to_string(), run.fair_share.params.algorithm.name().to_string()),
        ("fairshare.dampening".to_string(), run.fair_share.params.dampening.to_string()),
        ("fairshare.source".to_string(), run.source.clone()),
    ];
    parameters.extend(run.metadata.iter().map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default())));
    let result = PyDict::new(py);
    result.set_item("parameters", parameters.into_iter().collect::<std::collections::BTreeMap<_, _>>())?;
    let jobs = match run.queue {
        Some(Queue { scores, jobs, weights, .. }) => Some(table(jobs_batch(scores, &jobs, &weights).map_err(error)?)),
        None => None,
    };
    result.set_item("associations", table(into_association_batch(&run.tree, run.fair_share)))?;
    result.set_item("jobs", jobs)?;
    Ok(result)
}

/// The site of a whole-site call ([`run`], [`explain`]): `site` (a TOML file) under the keyword
/// arguments, else, as the command line, the embedded seed site when nothing at all is given.
/// The embedded site's files live as long as the returned guard.
fn whole_site(site: Option<PathBuf>, tree: Option<PathBuf>, kwargs: Kwargs) -> PyResult<(Site, Option<EmbeddedSite>)> {
    let mut options = kwargs.into_options(SiteOptions { tree, ..SiteOptions::default() })?;
    let embedded = options.under_site(site.as_deref()).map_err(error)?;
    Ok((options.resolve().map_err(error)?, embedded))
}

/// explain(who, site=None, *, vs=None, ...)
/// --
///
/// What `fairshare explain WHO [--vs OTHER]` prints: why the factor of `who` (`USER`,
/// `USER@ACCOUNT` or an account) is what it is, or why it differs from `vs`'s.
#[pyfunction]
#[pyo3(signature = (who, site = None, *, vs = None, tree = None, jobs = None, slurm_conf = None, qos = None,
    now = None, algorithm = None, dampening = None, decay = None, half_life = None, set_shares = None))]
#[allow(clippy::too_many_arguments)] // one per keyword argument of the Python function
fn explain(
    py: Python<'_>,
    who: String,
    site: Option<PathBuf>,
    vs: Option<String>,
    tree: Option<PathBuf>,
    jobs: Option<PathBuf>,
    slurm_conf: Option<PathBuf>,
    qos: Option<PathBuf>,
    now: Option<&Bound<'_, PyAny>>,
    algorithm: Option<String>,
    dampening: Option<u16>,
    decay: Option<String>,
    half_life: Option<String>,
    set_shares: Option<Vec<(String, String)>>,
) -> PyResult<String> {
    let kwargs = Kwargs {
        jobs,
        slurm_conf,
        qos,
        now: time_text(now)?,
        algorithm,
        dampening,
        decay,
        half_life,
        set_shares,
        ..Kwargs::default()
    };
    let (site, embedded) = whole_site(site, tree, kwargs)?;
    let warnings = Warnings::default();
    let text = py
        .detach(|| {
            let (tree, fs, _) = site.fair_share(&warnings)?;
            fairshare::explain::explain_who(&tree, &fs, &who, vs.as_deref())
        })
        .map_err(error)?;
    drop(embedded);
    warnings.raise(py)?;
    Ok(text)
}

/// The native part of the `fairshare` package.
#[pymodule]
fn _fairshare(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FairshareError", m.py().get_type::<FairshareError>())?;
    m.add_class::<Table>()?;
    m.add_function(wrap_pyfunction!(read_tree, m)?)?;
    m.add_function(wrap_pyfunction!(compute, m)?)?;
    m.add_function(wrap_pyfunction!(usage, m)?)?;
    m.add_function(wrap_pyfunction!(score, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
