//! The `fairshare` Python module's native part: argument conversion around the library's
//! pipeline, and nothing else. Every computation is `fairshare_engine::pipeline` (or the readers and the
//! pass it uses), run with the GIL released; results leave as Arrow record batches through the
//! Arrow PyCapsule interface ([`table::Table`]), which polars and pyarrow import without copying
//! the columns. `fairshare/__init__.py` wraps them as polars DataFrames.
//!
//! Each function takes its site as one options dict ([`options::site_options`]) so the options
//! are named and checked in one place; the Python wrappers give them their documented keyword
//! signatures.

// The engine allocates and frees many short-lived buffers per stage; the command's allocator keeps
// a 10^7-job score as fast here as there (with glibc's malloc it spent a sixth of its time in
// free-list upkeep). Arrow buffers handed to Python are freed by their release callback, which
// runs this library's code, so they return to the allocator they came from.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod call;
mod errors;
mod options;
mod table;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fairshare_analyses::compare::{Variant, compare_variants};
use fairshare_base::named::Named;
use fairshare_engine::io::parquet_tree::{columns_from_batches, records_to_batch};
use fairshare_engine::output::parquet::{into_association_batch, jobs_batch};
use fairshare_engine::output::sshare::{Parsable, SshareOptions, write_sshare};
use fairshare_engine::pipeline::{EmbeddedSite, Observer, Queue, Site, for_each_history_instant, history_instants_of};
use fairshare_engine::usage::{JobFormat, PartialUsage};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use call::Call;
use errors::{FairshareError, usage_error};
use options::{TREE_TABLE, choice, file_or_table, named, site_options};
use table::{Table, import_stream, is_table};

/// The site of `options`, resolved.
fn resolve(call: &mut Call, options: Option<&Bound<'_, PyDict>>) -> PyResult<Site> {
    let o = site_options(call, options)?;
    call.finish_err(o.resolve())
}

/// The site of a whole-site call: the site file `site` under the options, else, as the command
/// line, the embedded seed site when nothing at all is given; its files live as long as the
/// returned guard.
fn whole_site(
    call: &mut Call,
    site: Option<PathBuf>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Site, Option<EmbeddedSite>)> {
    let mut o = site_options(call, options)?;
    let embedded = call.finish_err(o.under_site(site.as_deref()))?;
    Ok((call.finish_err(o.resolve())?, embedded))
}

/// read_tree(source, format=None)
/// --
///
/// The tree's canonical columns (what `fairshare usage --out` writes).
#[pyfunction]
#[pyo3(signature = (source, format = None))]
fn read_tree(py: Python<'_>, source: &Bound<'_, PyAny>, format: Option<String>) -> PyResult<Table> {
    let format = format.map(|f| named("format", &f)).transpose()?;
    let call = Call::default();
    let batch = if is_table(source)? {
        let batches = import_stream(source, "tree")?;
        py.detach(|| {
            columns_from_batches(Path::new(TREE_TABLE), &batches).map(|c| records_to_batch(&c.into_input().records))
        })
    } else {
        let path: PathBuf = source.extract().map_err(|_| {
            usage_error("source: expected a path or a table with __arrow_c_stream__ (polars, pyarrow, pandas)".into())
        })?;
        py.detach(|| fairshare_engine::io::read_tree_input(&path, format).map(|input| records_to_batch(&input.records)))
    };
    call.finish(py, batch).and_then(|b| Table::one(py, b))
}

/// compute(options)
/// --
///
/// The fair-share of the options' tree (usage charged first when they give job records): the
/// columns of `fairshare compute --out`.
#[pyfunction]
fn compute(py: Python<'_>, options: Option<Bound<'_, PyDict>>) -> PyResult<Table> {
    let mut call = Call::default();
    let site = resolve(&mut call, options.as_ref())?;
    let batch = py.detach(|| site.fair_share(&call).map(|(tree, fs, _)| into_association_batch(&tree, fs)));
    call.finish(py, batch).and_then(|b| Table::one(py, b))
}

/// usage(options)
/// --
///
/// The tree with the usage charged from the options' job records: the columns of
/// `fairshare usage --out`.
#[pyfunction]
fn usage(py: Python<'_>, options: Option<Bound<'_, PyDict>>) -> PyResult<Table> {
    let mut call = Call::default();
    let site = resolve(&mut call, options.as_ref())?;
    if site.usage.is_none() {
        return Err(usage_error("usage needs job records: give jobs".into()));
    }
    let batch = py.detach(|| {
        let mut input = site.tree_input()?;
        site.charge(&mut input, &call)?;
        Ok(records_to_batch(&input.records))
    });
    call.finish(py, batch).and_then(|b| Table::one(py, b))
}

/// history(options, at=None, every=None, start=None, end=None)
/// --
///
/// The usage and fair-share of every association at many instants (`at`, or `every` interval
/// from `start` to `end`), the job records charged once: the rows of `fairshare usage --every`'s
/// files, one instant after another, with their `as_of` column.
#[pyfunction]
#[pyo3(signature = (options, at = None, every = None, start = None, end = None))]
fn history(
    py: Python<'_>,
    options: Option<Bound<'_, PyDict>>,
    at: Option<Vec<String>>,
    every: Option<String>,
    start: Option<String>,
    end: Option<String>,
) -> PyResult<Table> {
    let mut call = Call::default();
    let mut o = site_options(&mut call, options.as_ref())?;
    let every = every.as_deref().map(|e| (e, start.as_deref(), end.as_deref()));
    let instants = call.finish_err(history_instants_of(&at.unwrap_or_default(), every, u64::MAX))?;
    let Some(last) = instants.last() else {
        return Err(usage_error("history: give the instants, at=[...] or every= with start= and end=".into()));
    };
    if o.now.is_none() {
        o.now = Some(last.to_string());
    }
    let site = call.finish_err(o.resolve())?;
    let mut batches = Vec::new();
    let report = py.detach(|| {
        for_each_history_instant(&site, instants, &call, |instant| {
            batches.push(instant.batch);
            Ok(())
        })
    });
    call.finish(py, report)?;
    let schema = batches.first().map(|b| b.schema()).expect("at least one instant");
    Table::of(py, schema, batches)
}

/// score(options, priority="slurm")
/// --
///
/// The options' pending queue scored with Slurm's multifactor formula (`priority="slurm"`) or
/// flux-accounting's (`"flux"`): the columns of `fairshare score --out`.
#[pyfunction]
#[pyo3(signature = (options, priority = "slurm".to_string()))]
fn score(py: Python<'_>, options: Option<Bound<'_, PyDict>>, priority: String) -> PyResult<Table> {
    let flux = choice("priority", &priority, &[(false, "slurm"), (true, "flux")])?;
    let mut call = Call::default();
    let site = resolve(&mut call, options.as_ref())?;
    if site.pending.is_none() {
        return Err(usage_error("score needs a pending queue: give pending".into()));
    }
    let batches = py.detach(|| {
        if flux {
            let q = site.score_flux(&call)?.expect("the site has a pending queue");
            return jobs_batch(q.scores, &q.jobs, &q.weights).map(|b| vec![b]);
        }
        // Streamed as the command's `score` is: a slice of rows at a time, each a batch of the
        // result (a chunk of the DataFrame), so the queue is never whole in memory.
        let (tree, fs, _) = site.fair_share(&call)?;
        let mut batches = Vec::new();
        site.score_streamed(&tree, &fs, &call, &mut |b| {
            batches.push(b);
            Ok(())
        })?;
        Ok(batches)
    });
    let batches = call.finish(py, batches)?;
    let schema = batches.first().map(|b| b.schema()).expect("a queue gives at least one batch");
    Table::of(py, schema, batches)
}

/// run(site=None, options=None)
/// --
///
/// The nightly run of a site (its TOML file; none: the embedded seed site, as `fairshare run`):
/// a dict of `associations`, `jobs` (None without a pending queue), `parameters`, `stages`
/// (seconds per stage) and `charge` (what the charging saw, under run.json's names, None without
/// job records).
#[pyfunction]
#[pyo3(signature = (site = None, options = None))]
fn run<'py>(
    py: Python<'py>,
    site: Option<PathBuf>,
    options: Option<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut call = Call::default();
    let (site, embedded) = whole_site(&mut call, site, options.as_ref())?;
    let run = py.detach(|| site.run(false, &call));
    let run = call.finish(py, run)?;
    drop(embedded);
    let mut parameters = BTreeMap::from([
        ("fairshare.algorithm".to_string(), run.fair_share.params.algorithm.name().to_string()),
        ("fairshare.dampening".to_string(), run.fair_share.params.dampening.to_string()),
        ("fairshare.source".to_string(), run.source.clone()),
    ]);
    parameters.extend(run.metadata.iter().map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default())));
    let result = PyDict::new(py);
    result.set_item("parameters", parameters)?;
    let stages: BTreeMap<&str, f64> = run.stages.done().iter().map(|(name, secs, _)| (*name, *secs)).collect();
    result.set_item("stages", stages)?;
    let charge = run.charge.as_ref().map(|r| r.counts().into_iter().collect::<BTreeMap<String, u64>>());
    result.set_item("charge", charge)?;
    let jobs = match run.queue {
        Some(Queue { scores, jobs, weights, .. }) => Some(Table::one(
            py,
            jobs_batch(scores, &jobs, &weights).map_err(|e| FairshareError::new_err(e.to_string()))?,
        )?),
        None => None,
    };
    result.set_item("associations", Table::one(py, into_association_batch(&run.tree, run.fair_share))?)?;
    result.set_item("jobs", jobs)?;
    Ok(result)
}

/// explain(who, site=None, vs=None, options=None)
/// --
///
/// What `fairshare explain WHO [--vs OTHER]` prints: why the factor of `who` (`USER`,
/// `USER@ACCOUNT` or an account) is what it is, or why it differs from `vs`'s.
#[pyfunction]
#[pyo3(signature = (who, site = None, vs = None, options = None))]
fn explain(
    py: Python<'_>,
    who: String,
    site: Option<PathBuf>,
    vs: Option<String>,
    options: Option<Bound<'_, PyDict>>,
) -> PyResult<String> {
    let mut call = Call::default();
    let (site, embedded) = whole_site(&mut call, site, options.as_ref())?;
    let text = py.detach(|| {
        let (tree, fs, _) = site.fair_share(&call)?;
        fairshare_analyses::explain::explain_who(&tree, &fs, &who, vs.as_deref())
    });
    drop(embedded);
    call.finish(py, text)
}

/// sshare(site=None, long=False, parsable=False, fields=None, accounts=None, users=None, options=None)
/// --
///
/// What `fairshare sshare -a` prints for the site: Slurm's `sshare` text, `-l` (`long`), `-P`
/// (`parsable`), `-o` (`fields`), `-A` (`accounts`), `-u` (`users`).
#[pyfunction]
#[pyo3(signature = (site = None, long = false, parsable = false, fields = None, accounts = None, users = None,
    options = None))]
#[allow(clippy::too_many_arguments)] // sshare's own flags, one each
fn sshare(
    py: Python<'_>,
    site: Option<PathBuf>,
    long: bool,
    parsable: bool,
    fields: Option<String>,
    accounts: Option<Vec<String>>,
    users: Option<Vec<String>>,
    options: Option<Bound<'_, PyDict>>,
) -> PyResult<String> {
    let mut call = Call::default();
    let (site, embedded) = whole_site(&mut call, site, options.as_ref())?;
    let opts = SshareOptions {
        long,
        parsable: if parsable { Parsable::NoEnding } else { Parsable::No },
        format: fields,
        accounts: accounts.unwrap_or_default(),
        users: users.unwrap_or_default(),
        ..SshareOptions::default()
    };
    let text = py.detach(|| {
        let (tree, fs, _) = site.fair_share(&call)?;
        let mut out = Vec::new();
        write_sshare(&mut out, &tree, &fs, &opts)?;
        Ok(String::from_utf8(out).expect("sshare writes UTF-8"))
    });
    drop(embedded);
    call.finish(py, text)
}

/// explain_path(who, site=None, options=None)
/// --
///
/// The numbers `explain` prints, as a table: one row per level of the path from the root to each
/// association `who` names, with S, U, Level FS, the place among siblings and the range of the
/// subtree's factors.
#[pyfunction]
#[pyo3(signature = (who, site = None, options = None))]
fn explain_path(
    py: Python<'_>,
    who: String,
    site: Option<PathBuf>,
    options: Option<Bound<'_, PyDict>>,
) -> PyResult<Table> {
    let mut call = Call::default();
    let (site, embedded) = whole_site(&mut call, site, options.as_ref())?;
    let batch = py.detach(|| {
        let (tree, fs, _) = site.fair_share(&call)?;
        fairshare_analyses::explain::explain_who_rows(&tree, &fs, &who)
            .map(|rows| fairshare_analyses::explain::path_batch(&rows))
    });
    drop(embedded);
    call.finish(py, batch).and_then(|b| Table::one(py, b))
}

/// diff(run_a, run_b, top=10)
/// --
///
/// What `fairshare diff RUN_A RUN_B` prints: what changed between two run directories.
#[pyfunction]
#[pyo3(signature = (run_a, run_b, top = 10))]
fn diff(py: Python<'_>, run_a: PathBuf, run_b: PathBuf, top: usize) -> PyResult<String> {
    let call = Call::default();
    let text = py.detach(|| fairshare_analyses::diff::diff(&run_a, &run_b, top));
    call.finish(py, text)
}

/// compare(variants, site=None, options=None)
/// --
///
/// The users' factors and places under each variant (`fair-tree`, `classic:dampening=4`, ...)
/// on one site: the columns of `fairshare compare --out`. A variant that cannot be computed is
/// left out with a warning.
#[pyfunction]
#[pyo3(signature = (variants, site = None, options = None))]
fn compare(
    py: Python<'_>,
    variants: Vec<String>,
    site: Option<PathBuf>,
    options: Option<Bound<'_, PyDict>>,
) -> PyResult<Table> {
    let variants = variants
        .iter()
        .map(|v| Variant::parse(v))
        .collect::<fairshare_base::Result<Vec<_>>>()
        .map_err(|e| usage_error(e.to_string()))?;
    let mut call = Call::default();
    let (site, embedded) = whole_site(&mut call, site, options.as_ref())?;
    let batch = py.detach(|| {
        let c = compare_variants(&site, &variants, &call)?;
        for (label, e) in &c.left_out {
            call.warning(&format!("{label} left out of the comparison: {e}"));
        }
        c.batch()
    });
    drop(embedded);
    call.finish(py, batch).and_then(|b| Table::one(py, b))
}

/// forecast(who, site=None, assume="idle", window=None, horizon=None, steps=48, target=0.5,
/// floor=0.5, budget_over=None, partition=None, options=None)
/// --
///
/// What `fairshare forecast WHO` answers, as a dict: the trajectory (a table: `as_of`,
/// `fs_factor`, `rank`, `raw_usage`), the instant the target is reached and the budget, with the
/// parameters (the keys of the Parquet metadata, without their `fairshare.forecast.` prefix).
#[pyfunction]
#[pyo3(signature = (who, site = None, assume = "idle".to_string(), window = None, horizon = None, steps = 48,
    target = 0.5, floor = 0.5, budget_over = None, partition = None, options = None))]
#[allow(clippy::too_many_arguments)] // the command's own flags, one each
fn forecast<'py>(
    py: Python<'py>,
    who: String,
    site: Option<PathBuf>,
    assume: String,
    window: Option<String>,
    horizon: Option<String>,
    steps: u32,
    target: f64,
    floor: f64,
    budget_over: Option<String>,
    partition: Option<String>,
    options: Option<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    use fairshare_analyses::forecast::ForecastOptions;
    let duration = |text: Option<String>, what: &str| {
        text.map(|t| {
            fairshare_engine::config::time::parse_duration(&t).map_err(|m| usage_error(format!("{what}: {m}")))
        })
        .transpose()
    };
    let options_f = ForecastOptions {
        assume: named("assume", &assume)?,
        window: duration(window, "window")?,
        horizon: duration(horizon, "horizon")?,
        steps,
        target,
        floor,
        budget_over: duration(budget_over, "budget_over")?,
        partition,
    };
    let mut call = Call::default();
    let (site, embedded) = whole_site(&mut call, site, options.as_ref())?;
    let f = py.detach(|| fairshare_analyses::forecast::forecast(&site, &who, &options_f, &call));
    let f = call.finish(py, f)?;
    drop(embedded);
    let result = PyDict::new(py);
    for kv in fairshare_analyses::forecast::render::metadata(&f) {
        let key = kv.key.trim_start_matches("fairshare.forecast.").to_string();
        result.set_item(key, kv.value.unwrap_or_default())?;
    }
    // Numbers as numbers; the instant as the command's ISO text, or None.
    result.set_item("target", f.target)?;
    result.set_item("floor", f.floor)?;
    result.set_item("rate", f.rate)?;
    result.set_item("reached_at", f.reached_at.map(fairshare_base::time_format::iso_utc))?;
    let (budget, amount) = match f.budget {
        fairshare_analyses::forecast::Budget::Amount(x) => ("amount", Some(x)),
        fairshare_analyses::forecast::Budget::Below => ("below", None),
        fairshare_analyses::forecast::Budget::Unlimited => ("unlimited", None),
    };
    result.set_item("budget", budget)?;
    result.set_item("budget_billing_secs", amount)?;
    result.set_item("budget_cpu_hours", f.budget_cpu_hours())?;
    result.set_item("trajectory", Table::one(py, fairshare_analyses::forecast::render::trajectory_batch(&f))?)?;
    Ok(result)
}

/// Charger(options)
/// --
///
/// The site of `options` with its tree read once, to charge parts of its job records apart
/// (`charge`, a cluster's tasks) and finish their merged sums into the tree (`finish`): the same
/// bits as `usage` on the whole record set. A part and a merged part are tables of exact sums
/// (`sum_0`..`sum_3`), one row per association.
#[pyclass(frozen, module = "fairshare._fairshare")]
struct Charger {
    site: Site,
    input: fairshare_engine::tree::TreeInput,
}

#[pymethods]
impl Charger {
    #[new]
    #[pyo3(signature = (options = None))]
    fn new(py: Python<'_>, options: Option<Bound<'_, PyDict>>) -> PyResult<Charger> {
        let mut call = Call::default();
        let site = resolve(&mut call, options.as_ref())?;
        let input = py.detach(|| site.tree_input());
        let input = call.finish(py, input)?;
        Ok(Charger { site, input })
    }

    /// The exact sums of the job records of `part`: a file in the records' format, or a table
    /// of canonical records in memory (a partition of a dask.dataframe).
    fn charge(&self, py: Python<'_>, part: &Bound<'_, PyAny>) -> PyResult<Table> {
        let mut call = Call::default();
        let path = file_or_table(&mut call, "part", part, "<jobs table>")?;
        let parquet = self.site.usage.as_ref().is_some_and(|u| u.format == JobFormat::Parquet);
        if call.spooled(Some(&path)) && !parquet {
            return Err(usage_error("part: a table of records needs the site's jobs_format \"parquet\"".into()));
        }
        let batch = py.detach(|| self.site.charge_part(&self.input, &path).map(|p| p.to_batch()));
        call.finish(py, batch).and_then(|b| Table::one(py, b))
    }

    /// The tree's columns (as `usage` returns them) with the merged `parts` written in.
    fn finish(&self, py: Python<'_>, parts: Vec<Bound<'_, PyAny>>) -> PyResult<Table> {
        let call = Call::default();
        let merged = merged_parts(py, &parts)?;
        let batch = py.detach(|| {
            let mut input = self.input.clone();
            let jobs = self.site.usage.as_ref().map(|u| u.jobs.clone()).unwrap_or_default();
            merged.finish(&mut input, &jobs)?;
            Ok(records_to_batch(&input.records))
        });
        call.finish(py, batch).and_then(|b| Table::one(py, b))
    }
}

/// Scorer(options)
/// --
///
/// The site of `options` with its fair-share computed once (the tree as given, its usage
/// included: the factor table every part is scored against), to score parts of a pending queue
/// apart, each into its own Parquet file (`score_to`): a cluster's tasks.
#[pyclass(frozen, module = "fairshare._fairshare")]
struct Scorer {
    site: Site,
    tree: fairshare_engine::tree::AssocTree,
    fair_share: fairshare_engine::pass::FairShare,
}

#[pymethods]
impl Scorer {
    #[new]
    #[pyo3(signature = (options = None))]
    fn new(py: Python<'_>, options: Option<Bound<'_, PyDict>>) -> PyResult<Scorer> {
        let mut call = Call::default();
        let site = resolve(&mut call, options.as_ref())?;
        let computed = py.detach(|| site.fair_share(&call).map(|(tree, fs, _)| (tree, fs)));
        let (tree, fair_share) = call.finish(py, computed)?;
        Ok(Scorer { site, tree, fair_share })
    }

    /// Scores the pending jobs of `part` (a file) with Slurm's formula into the Parquet file
    /// `out` (written atomically: nothing is there until it is whole).
    fn score_to(&self, py: Python<'_>, part: PathBuf, out: PathBuf) -> PyResult<()> {
        let call = Call::default();
        let done = py.detach(|| self.site.score_part_to_parquet(&self.tree, &self.fair_share, &part, &out, &call));
        call.finish(py, done)
    }
}

/// The parts (tables of exact sums) merged into one.
fn merged_parts(py: Python<'_>, parts: &[Bound<'_, PyAny>]) -> PyResult<PartialUsage> {
    let call = Call::default();
    let mut batches = Vec::new();
    for (k, part) in parts.iter().enumerate() {
        let what = format!("part {k}");
        batches.extend(import_stream(part, &what)?.into_iter().map(|b| (what.clone(), b)));
    }
    let merged = py.detach(|| {
        let mut parts = batches.iter().map(|(what, b)| PartialUsage::from_batch(b, what));
        let mut total = parts.next().ok_or_else(|| fairshare_base::Error::Usage("no parts to merge".into()))??;
        for part in parts {
            total.merge(&part?)?;
        }
        Ok(total)
    });
    call.finish(py, merged)
}

/// merge_parts(parts)
/// --
///
/// Parts of a charge (tables of exact sums, from `Charger.charge` or earlier merges) merged into
/// one, in any grouping and order with the same result.
#[pyfunction]
fn merge_parts(py: Python<'_>, parts: Vec<Bound<'_, PyAny>>) -> PyResult<Table> {
    let merged = merged_parts(py, &parts)?;
    Table::one(py, merged.to_batch())
}

/// The native part of the `fairshare` package.
#[pymodule]
fn _fairshare(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FairshareError", m.py().get_type::<FairshareError>())?;
    m.add_class::<Table>()?;
    m.add_class::<Charger>()?;
    m.add_class::<Scorer>()?;
    m.add_function(wrap_pyfunction!(merge_parts, m)?)?;
    m.add_function(wrap_pyfunction!(read_tree, m)?)?;
    m.add_function(wrap_pyfunction!(compute, m)?)?;
    m.add_function(wrap_pyfunction!(usage, m)?)?;
    m.add_function(wrap_pyfunction!(history, m)?)?;
    m.add_function(wrap_pyfunction!(score, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(sshare, m)?)?;
    m.add_function(wrap_pyfunction!(explain_path, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(forecast, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
