//! `fairshare diff`: what changed between two run directories, from their Parquet files and
//! `run.json`s alone (no inputs are read again).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Float64Type};
use fairshare_base::{Error, Result};

use crate::compare::{RunAssociations, column_as, factor_changes, read_rows};

/// A factor as the text prints it: 6 decimals, `-` where it is unset.
fn num(v: f64) -> String {
    if v.is_nan() { "-".into() } else { format!("{v:.6}") }
}

/// What changed from run directory `run_a` to `run_b`, as `fairshare diff` prints it: the
/// associations added and removed, the run parameters, shares, usage, fair-share factors and (when
/// both have a `jobs.parquet`) job priorities that changed, at most `top` of each, largest first.
///
/// # Errors
/// A run directory's files cannot be read or lack a column; a `run.json` that is not JSON.
pub fn diff(run_a: &Path, run_b: &Path, top: usize) -> Result<String> {
    let (ra, rb) = (RunAssociations::read(run_a)?, RunAssociations::read(run_b)?);
    let index_b: HashMap<&str, usize> = rb.key.iter().enumerate().map(|(i, k)| (k.as_str(), i)).collect();
    let index_a: HashMap<&str, usize> = ra.key.iter().enumerate().map(|(i, k)| (k.as_str(), i)).collect();
    let mut text = String::new();
    let only_a: Vec<&str> = ra.key.iter().map(String::as_str).filter(|k| !index_b.contains_key(k)).collect();
    let only_b: Vec<&str> = rb.key.iter().map(String::as_str).filter(|k| !index_a.contains_key(k)).collect();
    let common: Vec<(usize, usize)> =
        ra.key.iter().enumerate().filter_map(|(i, k)| index_b.get(k.as_str()).map(|&j| (i, j))).collect();
    let _ = writeln!(
        text,
        "{} associations in both, {} only in {}, {} only in {}",
        common.len(),
        only_a.len(),
        run_a.display(),
        only_b.len(),
        run_b.display()
    );
    for (label, keys) in [("removed", &only_a), ("added", &only_b)] {
        for k in keys.iter().take(top) {
            let _ = writeln!(text, "  {label}: {k}");
        }
    }
    let params = parameter_changes(run_a, run_b)?;
    let _ = writeln!(text, "\n{}", count(params.len(), "parameter change", "parameter changes"));
    for (key, x, y) in &params {
        let _ = writeln!(text, "  {key:<40} {x} → {y}");
    }
    let shares: Vec<&(usize, usize)> = common.iter().filter(|(i, j)| ra.shares[*i] != rb.shares[*j]).collect();
    let _ = writeln!(text, "\n{}", count(shares.len(), "share change", "share changes"));
    for &&(i, j) in shares.iter().take(top) {
        let _ = writeln!(text, "  {:<40} {} → {}", ra.key[i], ra.shares[i], rb.shares[j]);
    }
    let same = |x: f64, y: f64| x == y || (x.is_nan() && y.is_nan());
    let mut used: Vec<&(usize, usize)> = common.iter().filter(|(i, j)| !same(ra.usage[*i], rb.usage[*j])).collect();
    used.sort_by(|x, y| {
        let d = |p: &(usize, usize)| (rb.usage[p.1] - ra.usage[p.0]).abs();
        d(y).total_cmp(&d(x)).then(x.0.cmp(&y.0))
    });
    let _ = writeln!(text, "\n{}, largest first:", count(used.len(), "usage change", "usage changes"));
    for &&(i, j) in used.iter().take(top) {
        let _ = writeln!(text, "  {:<40} RawUsage {:.0} → {:.0}", ra.key[i], ra.usage[i], rb.usage[j]);
    }
    let moved = factor_changes(&ra, &rb);
    let _ = writeln!(
        text,
        "\n{}, largest first:",
        count(moved.len(), "fair-share factor change", "fair-share factor changes")
    );
    for &(i, j) in moved.iter().take(top) {
        let _ = writeln!(
            text,
            "  {:<40} {} → {} ({:+.6}); RawUsage {:.0} → {:.0}",
            ra.key[i],
            num(ra.factor[i]),
            num(rb.factor[j]),
            rb.factor[j] - ra.factor[i],
            ra.usage[i],
            rb.usage[j]
        );
    }
    let (ja, jb) = (run_a.join("jobs.parquet"), run_b.join("jobs.parquet"));
    if ja.exists() && jb.exists() {
        let prio = |p: &Path| -> Result<HashMap<String, f64>> {
            let b = read_rows(p)?;
            let id = column_as(&b, p, "job_id", DataType::Utf8)?;
            let part = column_as(&b, p, "partition", DataType::Utf8)?;
            let qos = column_as(&b, p, "qos", DataType::Utf8)?;
            let pr = column_as(&b, p, "priority", DataType::Float64)?;
            let (id, part, qos) = (id.as_string::<i32>(), part.as_string::<i32>(), qos.as_string::<i32>());
            let pr = pr.as_primitive::<Float64Type>();
            Ok((0..b.num_rows())
                .map(|i| {
                    let q = if qos.is_valid(i) { qos.value(i) } else { "" };
                    (format!("{} {} {q}", id.value(i), part.value(i)), pr.value(i))
                })
                .collect())
        };
        let (pa, pb) = (prio(&ja)?, prio(&jb)?);
        let mut changes: Vec<(&String, f64, f64)> =
            pa.iter().filter_map(|(k, &x)| pb.get(k).filter(|&&y| y != x).map(|&y| (k, x, y))).collect();
        changes.sort_by(|x, y| (y.2 - y.1).abs().total_cmp(&(x.2 - x.1).abs()).then(x.0.cmp(y.0)));
        let _ = writeln!(
            text,
            "\njobs: {} priority rows in both, {} changed, largest first:",
            pa.keys().filter(|k| pb.contains_key(*k)).count(),
            changes.len()
        );
        for (k, x, y) in changes.iter().take(top) {
            let _ = writeln!(text, "  job/partition/qos {k:<30} {x:.0} → {y:.0} ({:+.0})", y - x);
        }
    }
    Ok(text)
}

/// `1 share change`, `2 share changes`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The run parameters (`run.json`'s `parameters`) that differ between two run directories, as
/// (key, value in A, value in B); a key missing on one side reads `(none)`. Runs without a
/// `run.json` have no parameters to compare.
fn parameter_changes(run_a: &Path, run_b: &Path) -> Result<Vec<(String, String, String)>> {
    let read = |dir: &Path| -> Result<serde_json::Map<String, serde_json::Value>> {
        let path = dir.join("run.json");
        let Ok(text) = std::fs::read_to_string(&path) else { return Ok(serde_json::Map::new()) };
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::input(&path, Some(e.line() as u64), format!("not valid JSON: {e}")))?;
        Ok(json.get("parameters").and_then(|p| p.as_object()).cloned().unwrap_or_default())
    };
    let (pa, pb) = (read(run_a)?, read(run_b)?);
    let keys: std::collections::BTreeSet<&String> = pa.keys().chain(pb.keys()).collect();
    let shown = |v: Option<&serde_json::Value>| match v {
        None => "(none)".to_string(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    Ok(keys
        .into_iter()
        .filter(|k| pa.get(*k) != pb.get(*k))
        .map(|k| (k.clone(), shown(pa.get(k)), shown(pb.get(k))))
        .collect())
}
