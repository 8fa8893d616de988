//! `fairshare compare`: algorithms and parameter variants side by side on the same inputs;
//! `fairshare diff`: what changed between two run directories.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Float64Type};
use fairshare::compare::{RunAssociations, Variant, column_as, compare_variants_with, factor_changes, read_rows};
use fairshare::output::parquet::{version_metadata, write_parquet};
use fairshare::{Error, Result};
use parquet::file::metadata::KeyValue;

use super::args::{CompareArgs, DiffArgs};
use super::progress::Terminal;
use super::settings::Settings;

fn num(v: f64) -> String {
    if v.is_nan() { "-".into() } else { format!("{v:.6}") }
}

pub(crate) fn compare(a: &CompareArgs) -> Result<()> {
    let variants: Vec<Variant> = a.variants.iter().map(|v| Variant::parse(v)).collect::<Result<_>>()?;
    let settings = Settings::new(&a.tree, &a.usage, None)?;
    let site = settings.options.resolve()?;
    let observer = Terminal::new(settings.default_notes());
    // Said as it happens, among the notes of charging (on stderr: the table compares what could
    // be computed).
    let mut say = |label: &str, e: &Error| eprintln!("fairshare: {label} left out of the comparison: {e}");
    let comparison = compare_variants_with(&site, &variants, &observer, &mut say)?;
    let text = comparison.text(a.all, a.top);
    if let Some(out) = &a.out {
        let mut meta = version_metadata();
        meta.extend([
            KeyValue::new("fairshare.source".to_string(), site.tree.source()),
            KeyValue::new("fairshare.variants".to_string(), a.variants.join(",")),
        ]);
        meta.extend(site.metadata());
        meta.extend(fairshare::pipeline::charge_metadata(comparison.charge.as_ref()));
        write_parquet(out, &comparison.batch()?, meta)?;
    }
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    w.write_all(text.as_bytes()).and_then(|()| w.flush()).map_err(|e| Error::io("<stdout>", e))
}

pub(crate) fn diff(a: &DiffArgs) -> Result<()> {
    let (ra, rb) = (RunAssociations::read(&a.run_a)?, RunAssociations::read(&a.run_b)?);
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
        a.run_a.display(),
        only_b.len(),
        a.run_b.display()
    );
    for (label, keys) in [("removed", &only_a), ("added", &only_b)] {
        for k in keys.iter().take(a.top) {
            let _ = writeln!(text, "  {label}: {k}");
        }
    }
    let params = parameter_changes(&a.run_a, &a.run_b)?;
    let _ = writeln!(text, "\n{}", count(params.len(), "parameter change", "parameter changes"));
    for (key, x, y) in &params {
        let _ = writeln!(text, "  {key:<40} {x} → {y}");
    }
    let shares: Vec<&(usize, usize)> = common.iter().filter(|(i, j)| ra.shares[*i] != rb.shares[*j]).collect();
    let _ = writeln!(text, "\n{}", count(shares.len(), "share change", "share changes"));
    for &&(i, j) in shares.iter().take(a.top) {
        let _ = writeln!(text, "  {:<40} {} → {}", ra.key[i], ra.shares[i], rb.shares[j]);
    }
    let same = |x: f64, y: f64| x == y || (x.is_nan() && y.is_nan());
    let mut used: Vec<&(usize, usize)> = common.iter().filter(|(i, j)| !same(ra.usage[*i], rb.usage[*j])).collect();
    used.sort_by(|x, y| {
        let d = |p: &(usize, usize)| (rb.usage[p.1] - ra.usage[p.0]).abs();
        d(y).total_cmp(&d(x)).then(x.0.cmp(&y.0))
    });
    let _ = writeln!(text, "\n{}, largest first:", count(used.len(), "usage change", "usage changes"));
    for &&(i, j) in used.iter().take(a.top) {
        let _ = writeln!(text, "  {:<40} RawUsage {:.0} → {:.0}", ra.key[i], ra.usage[i], rb.usage[j]);
    }
    let moved = factor_changes(&ra, &rb);
    let _ = writeln!(
        text,
        "\n{}, largest first:",
        count(moved.len(), "fair-share factor change", "fair-share factor changes")
    );
    for &(i, j) in moved.iter().take(a.top) {
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
    let (ja, jb) = (a.run_a.join("jobs.parquet"), a.run_b.join("jobs.parquet"));
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
        for (k, x, y) in changes.iter().take(a.top) {
            let _ = writeln!(text, "  job/partition/qos {k:<30} {x:.0} → {y:.0} ({:+.0})", y - x);
        }
    }
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    w.write_all(text.as_bytes()).and_then(|()| w.flush()).map_err(|e| Error::io("<stdout>", e))
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
