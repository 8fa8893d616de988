//! Keyword arguments to [`SiteOptions`]: every function of the package takes the site's options
//! as one dict under the command line's names (snake_case), checked here once.

use std::path::{Path, PathBuf};

use fairshare_base::named::Named;
use fairshare_engine::io::parquet_tree::columns_from_batches;
use fairshare_engine::jobs::PendingFormat;
use fairshare_engine::pipeline::SiteOptions;
use fairshare_engine::tree::Shares;
use fairshare_engine::usage::JobFormat;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::call::{Call, Spool};
use crate::errors::usage_error;
use crate::table::{import_stream, is_table};

/// What errors call a tree handed over in memory.
pub const TREE_TABLE: &str = "<table>";

/// Every option a function takes in its options dict.
pub const OPTIONS: [&str; 25] = [
    "tree",
    "format",
    "jobs",
    "jobs_format",
    "swf_tree",
    "swf_unknown_wait",
    "pending",
    "pending_format",
    "slurm_conf",
    "slurm_conf_format",
    "qos",
    "now",
    "first_pass",
    "decay",
    "half_life",
    "calc_period",
    "reset_period",
    "timezone",
    "flux_interval",
    "billing",
    "algorithm",
    "dampening",
    "depth_oblivious",
    "flux_exact_sums",
    "set_shares",
];

/// The library's value named `name` (as the command line spells it), saying the choices when it is
/// none of them.
pub fn named<T: Named>(what: &str, name: &str) -> PyResult<T> {
    T::of_name(name).ok_or_else(|| usage_error(format!("{what}: unknown {name:?}; one of {}", T::names())))
}

/// Looks `name` up among `(value, name)` pairs, saying the choices when it is none of them.
pub fn choice<T: Copy>(what: &str, name: &str, choices: &[(T, &str)]) -> PyResult<T> {
    choices.iter().find(|(_, n)| *n == name).map(|(v, _)| *v).ok_or_else(|| {
        let names: Vec<&str> = choices.iter().map(|(_, n)| *n).collect();
        usage_error(format!("{what}: unknown {name:?}; one of {}", names.join(", ")))
    })
}

/// The options of `dict` (None: none) as [`SiteOptions`]; tables in memory become the tree's
/// columns or, for job records and pending queues, files spooled for `call`.
///
/// # Errors
/// An unknown option, or a value of the wrong kind or out of its choices.
pub fn site_options(call: &mut Call, dict: Option<&Bound<'_, PyDict>>) -> PyResult<SiteOptions> {
    let mut o = SiteOptions::default();
    let Some(dict) = dict else { return Ok(o) };
    let py = dict.py();
    for (key, value) in dict.iter() {
        let key: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        let text = || -> PyResult<String> { value.extract::<String>().map_err(|_| kind(&key, "a string", &value)) };
        match key.as_str() {
            "tree" => {
                if is_table(&value)? {
                    let batches = import_stream(&value, "tree")?;
                    let columns = py.detach(|| columns_from_batches(Path::new(TREE_TABLE), &batches));
                    o.tree_table = Some(call.finish_err(columns)?);
                } else {
                    o.tree = Some(path(&key, &value)?);
                }
            }
            "format" => o.tree_format = Some(named("format", &text()?)?),
            "jobs" => o.jobs = Some(file_or_table(call, &key, &value, "<jobs table>")?),
            "jobs_format" => o.jobs_format = Some(named("jobs_format", &text()?)?),
            "swf_tree" => o.swf_tree = Some(named("swf_tree", &text()?)?),
            "swf_unknown_wait" => {
                o.swf_unknown_wait = Some(named("swf_unknown_wait", &text()?)?);
            }
            "pending" => o.pending = Some(file_or_table(call, &key, &value, "<pending table>")?),
            "pending_format" => o.pending_format = Some(named("pending_format", &text()?)?),
            "slurm_conf" => o.slurm_conf = Some(path(&key, &value)?),
            "slurm_conf_format" => {
                o.slurm_conf_format = Some(named("slurm_conf_format", &text()?)?);
            }
            "qos" => o.qos = Some(path(&key, &value)?),
            "now" => o.now = Some(time(&key, &value)?),
            "first_pass" => o.first_pass = Some(time(&key, &value)?),
            "decay" => o.decay = Some(named("decay", &text()?)?),
            "half_life" => o.half_life = Some(text()?),
            "calc_period" => o.calc_period = Some(text()?),
            "reset_period" => o.reset_period = Some(text()?),
            "timezone" => o.timezone = Some(text()?),
            "flux_interval" => o.flux_interval = Some(text()?),
            "billing" => o.billing = pairs(&key, &value)?,
            "algorithm" => o.algorithm = Some(named("algorithm", &text()?)?),
            "dampening" => o.dampening = Some(value.extract().map_err(|_| kind(&key, "an integer 1..=65535", &value))?),
            "depth_oblivious" => o.depth_oblivious = flag(&key, &value)?,
            "flux_exact_sums" => o.flux_exact_sums = flag(&key, &value)?,
            "set_shares" => {
                for (name, shares) in pairs(&key, &value)? {
                    let shares = if shares == "parent" {
                        Shares::Parent
                    } else {
                        Shares::Value(shares.parse().map_err(|_| {
                            usage_error(format!("set_shares: {name}={shares}: expected a share count or \"parent\""))
                        })?)
                    };
                    o.set_shares.push((name, shares));
                }
            }
            _ => {
                return Err(usage_error(format!("unknown option {key:?}; the options are {}", OPTIONS.join(", "))));
            }
        }
    }
    // A table spooled for the readers is Parquet, whatever the format of a file would be.
    if o.jobs_format.is_none() && call.spooled(o.jobs.as_deref()) {
        o.jobs_format = Some(JobFormat::Parquet);
    }
    if o.pending_format.is_none() && call.spooled(o.pending.as_deref()) {
        o.pending_format = Some(PendingFormat::Parquet);
    }
    Ok(o)
}

fn kind(key: &str, expected: &str, value: &Bound<'_, PyAny>) -> PyErr {
    let got = value.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    usage_error(format!("{key}: expected {expected}, got {got}"))
}

fn path(key: &str, value: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    value.extract::<PathBuf>().map_err(|_| kind(key, "a path", value))
}

fn flag(key: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    value.extract::<bool>().map_err(|_| kind(key, "True or False", value))
}

/// A path, or a table in memory spooled to a private Parquet file named `label` in errors.
pub fn file_or_table(call: &mut Call, key: &str, value: &Bound<'_, PyAny>, label: &'static str) -> PyResult<PathBuf> {
    if !is_table(value)? {
        return value.extract::<PathBuf>().map_err(|_| kind(key, "a path or a table with __arrow_c_stream__", value));
    }
    let batches = import_stream(value, key)?;
    let spool = value.py().detach(|| Spool::write(&batches, label));
    let spool = call.finish_err(spool)?;
    Ok(call.spool(spool))
}

/// A time as the command line spells it: text, seconds since the epoch, or a `datetime`/`date`
/// (its ISO form; a naive one is UTC, as the command line reads a time without a zone).
fn time(key: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(seconds) = value.extract::<i64>() {
        return Ok(seconds.to_string());
    }
    if let Ok(text) = value.extract::<String>() {
        return Ok(text);
    }
    if value.hasattr("isoformat")? {
        return value.call_method0("isoformat")?.extract();
    }
    Err(kind(key, "a time (text, epoch seconds, datetime)", value))
}

/// A mapping `{name: value}` as text pairs, in the mapping's order.
fn pairs(key: &str, value: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    let dict = value.cast::<PyDict>().map_err(|_| kind(key, "a dict", value))?;
    dict.iter().map(|(k, v)| Ok((k.str()?.to_string(), v.str()?.to_string()))).collect()
}
