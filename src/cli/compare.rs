//! `fairshare compare`: algorithms and parameter variants side by side on the same inputs;
//! `fairshare diff`: what changed between two run directories.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Float64Type};
use fairshare::compare::{competition_ranks, spearman};
use fairshare::explain::assoc_name;
use fairshare::output::parquet::{version_metadata, write_parquet};
use fairshare::pass::{self as fs, Algorithm, FairShare, Params};
use fairshare::tree::AssocTree;
use fairshare::{Error, Result};
use parquet::file::metadata::KeyValue;

use super::args::{CompareArgs, DiffArgs};
use fairshare::pipeline::{Observer, Silent, fair_share_after_charge};
use fairshare::tree::TreeInput;
use fairshare::usage::ChargeReport;

use super::progress::Terminal;
use super::settings::Settings;

/// One variant: a label and its parameters.
fn parse_variant(text: &str) -> Result<(String, Params)> {
    let mut parts = text.split(':');
    let algo = parts.next().unwrap_or_default().trim();
    let algorithm = match algo {
        "fair-tree" => Algorithm::FairTree,
        "classic" => Algorithm::Classic,
        "flux" => Algorithm::Flux,
        _ => return Err(Error::Usage(format!("--variants: {algo:?} is not fair-tree, classic or flux"))),
    };
    let mut params = Params::new(algorithm);
    for p in parts {
        match p.trim().split_once('=') {
            Some(("dampening", d)) => {
                // The same rule and words as --dampening and FairShareDampeningFactor.
                params.dampening = fairshare::config::slurm_conf::parse_dampening(d)
                    .map_err(|m| Error::Usage(format!("--variants {text}: dampening={d}: {m}")))?;
            }
            None if p.trim() == "depth-oblivious" => params.depth_oblivious = true,
            None if p.trim() == "exact-sums" => params.flux_exact_sums = true,
            _ => {
                return Err(Error::Usage(format!(
                    "--variants {text}: {p:?} is not dampening=D, depth-oblivious or exact-sums"
                )));
            }
        }
    }
    Ok((text.trim().to_string(), params))
}

fn num(v: f64) -> String {
    if v.is_nan() { "-".into() } else { format!("{v:.6}") }
}

pub(crate) fn compare(a: &CompareArgs) -> Result<()> {
    let variants: Vec<(String, Params)> = a.variants.iter().map(|v| parse_variant(v)).collect::<Result<_>>()?;
    let settings = Settings::new(&a.tree, &a.usage, None)?;
    let site = settings.options.resolve()?;
    let observer = Terminal::new(settings.default_notes());
    // Without job records every variant computes on the tree as given. With them, each variant
    // sees the usage its pass would (Slurm's Fair Tree charges running jobs on the first pass,
    // classic does not, and reads the accounts at the last pass's start): the records are charged
    // once per kind of pass among the variants.
    let given = match &site.usage {
        Some(_) => None,
        None => Some(site.tree.load()?),
    };
    let mut charged: Vec<(bool, TreeInput, Option<ChargeReport>)> = Vec::new();
    let (source, usage_meta) = (site.tree.source(), site.metadata());
    let mut results: Vec<(String, FairShare)> = Vec::new();
    let mut first_tree = None;
    let mut text = String::new();
    let count = variants.len() as u64;
    for (k, (label, params)) in variants.into_iter().enumerate() {
        observer.progress("computing the variants", k as u64, count, "variants");
        let computed = match &given {
            Some(t) => fs::compute(t, &params).map(|r| (None, r)),
            None => {
                let fair_tree = params.algorithm == Algorithm::FairTree;
                if !charged.iter().any(|(f, _, _)| *f == fair_tree) {
                    let mut input = site.tree_input()?;
                    // Notes and warnings are said once, with the first charge.
                    let quiet: &dyn Observer = if charged.is_empty() { &observer } else { &Silent };
                    let report = site.charge_for(params.algorithm, &mut input, quiet)?;
                    charged.push((fair_tree, input, report));
                }
                let (_, input, report) = charged.iter().find(|(f, _, _)| *f == fair_tree).expect("charged above");
                fair_share_after_charge(input.clone(), report.as_ref(), &params).map(|(t, r)| (Some(t), r))
            }
        };
        match computed {
            Ok((t, r)) => {
                // Every variant's tree holds the same rows in the same order; the first names them.
                if first_tree.is_none() {
                    first_tree = t;
                }
                results.push((label, r));
            }
            // flux has no `parent` shares: say why a variant is missing rather than fail them all
            // (on stderr: the table compares what could be computed).
            Err(e) => eprintln!("fairshare: {label} left out of the comparison: {e}"),
        }
    }
    observer.progress("computing the variants", count, count, "variants");
    let Some(tree) = given.or(first_tree).filter(|_| !results.is_empty()) else {
        return Err(Error::Usage("no variant could be computed".into()));
    };
    let users: Vec<usize> = (0..tree.len()).filter(|&r| tree.is_user(r)).collect();
    let factors: Vec<Vec<f64>> = results.iter().map(|(_, r)| users.iter().map(|&u| r.fs_factor[u]).collect()).collect();
    // Places, 1 = highest factor. (Parquet's `rank` column is Slurm's Fair Tree rank, which
    // counts the other way: the highest rank is the highest factor.)
    let places: Vec<Vec<u32>> = factors.iter().map(|f| competition_ranks(f)).collect();
    let _ = writeln!(text, "{} user associations; places are by factor, 1 = highest, ties share a place.", users.len());
    let _ = writeln!(text, "\nSpearman rank correlation of the users' factors:");
    let _ = write!(text, "{:>24}", "");
    for (label, _) in &results {
        let _ = write!(text, " {label:>24}");
    }
    text.push('\n');
    for (i, (label, _)) in results.iter().enumerate() {
        let _ = write!(text, "{label:>24}");
        for j in 0..results.len() {
            let _ = write!(text, " {:>24}", format!("{:.4}", spearman(&factors[i], &factors[j])));
        }
        text.push('\n');
    }
    if a.all {
        // The place is padded to the widest, so the factors stay aligned past place 9.
        let digits = users.len().to_string().len();
        let header = |label: &str| format!("{label} (place)");
        let cells: Vec<usize> = results.iter().map(|(l, _)| header(l).len().max(9 + 3 + digits)).collect();
        let _ = write!(text, "\n{:<40}", "association");
        for ((label, _), cell) in results.iter().zip(&cells) {
            let _ = write!(text, " {:>cell$}", header(label));
        }
        text.push('\n');
        // Listed by the first variant's place, then in tree order.
        let mut order: Vec<usize> = (0..users.len()).collect();
        order.sort_by_key(|&k| (places[0][k], k));
        for k in order {
            let _ = write!(text, "{:<40}", assoc_name(&tree, users[k]));
            for (v, cell) in cells.iter().enumerate() {
                let _ = write!(text, " {:>cell$}", format!("{:>9} ({:>digits$})", num(factors[v][k]), places[v][k]));
            }
            text.push('\n');
        }
    }
    for v in 1..results.len() {
        let mut movers: Vec<usize> = (0..users.len()).collect();
        let delta = |k: usize| i64::from(places[v][k]) - i64::from(places[0][k]);
        movers.sort_by_key(|&k| (std::cmp::Reverse(delta(k).abs()), k));
        let _ = writeln!(text, "\nBiggest movers, {} → {}:", results[0].0, results[v].0);
        for &k in movers.iter().take(a.top).filter(|&&k| delta(k) != 0) {
            let _ = writeln!(
                text,
                "  {:<40} place {:>7} → {:>7} ({:+}), factor {} → {}",
                assoc_name(&tree, users[k]),
                places[0][k],
                places[v][k],
                -delta(k),
                num(factors[0][k]),
                num(factors[v][k])
            );
        }
    }
    if let Some(out) = &a.out {
        let mut meta = version_metadata();
        meta.extend([
            KeyValue::new("fairshare.source".to_string(), source),
            KeyValue::new("fairshare.variants".to_string(), a.variants.join(",")),
        ]);
        meta.extend(usage_meta);
        write_comparison(out, &tree, &users, &results, &factors, &places, meta)?;
    }
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    w.write_all(text.as_bytes()).and_then(|()| w.flush()).map_err(|e| Error::io("<stdout>", e))
}

/// One row per user association: its id and names, then `fs_<variant>` and `place_<variant>`
/// (1 = highest factor) per variant; the inputs and variants in the metadata.
fn write_comparison(
    out: &Path,
    tree: &AssocTree,
    users: &[usize],
    results: &[(String, FairShare)],
    factors: &[Vec<f64>],
    places: &[Vec<u32>],
    meta: Vec<KeyValue>,
) -> Result<()> {
    let mut columns: Vec<(String, ArrayRef)> = vec![
        ("id".into(), Arc::new(UInt64Array::from_iter_values(users.iter().map(|&u| tree.ids()[u])))),
        ("account".into(), Arc::new(StringArray::from_iter_values(users.iter().map(|&u| tree.account(u))))),
        ("user".into(), Arc::new(StringArray::from_iter(users.iter().map(|&u| tree.user_name(u))))),
        ("partition".into(), Arc::new(StringArray::from_iter(users.iter().map(|&u| tree.partition(u))))),
    ];
    for (v, (label, _)) in results.iter().enumerate() {
        let name = label.replace([':', '='], "_").replace('-', "_");
        columns.push((format!("fs_{name}"), Arc::new(Float64Array::from(factors[v].clone()))));
        columns.push((format!("place_{name}"), Arc::new(UInt32Array::from(places[v].clone()))));
    }
    let batch = RecordBatch::try_from_iter(columns).map_err(|e| Error::format(out, e))?;
    write_parquet(out, &batch, meta)
}

/// The association columns `diff` reads from a run's `associations.parquet`.
struct RunAssocs {
    key: Vec<String>,
    shares: Vec<String>,
    usage: Vec<f64>,
    factor: Vec<f64>,
}

fn read_batch(path: &Path) -> Result<RecordBatch> {
    let batch = fairshare::io::read_parquet_whole(path)?;
    if batch.num_rows() == 0 {
        return Err(Error::input(path, None, "no rows"));
    }
    Ok(batch)
}

fn column(batch: &RecordBatch, path: &Path, name: &str, ty: DataType) -> Result<ArrayRef> {
    let a = batch.column_by_name(name).ok_or_else(|| Error::input(path, None, format!("no column {name:?}")))?;
    arrow::compute::cast(a, &ty).map_err(|e| Error::format(path, e))
}

fn read_run(dir: &Path) -> Result<RunAssocs> {
    let path = dir.join("associations.parquet");
    let b = read_batch(&path)?;
    let text = |n: &str| column(&b, &path, n, DataType::Utf8);
    let (account, user, partition) = (text("account")?, text("user")?, text("partition")?);
    let (account, user, partition) =
        (account.as_string::<i32>(), user.as_string::<i32>(), partition.as_string::<i32>());
    let shares = column(&b, &path, "raw_shares", DataType::Utf8)?;
    let parent = column(&b, &path, "parent_shares", DataType::Boolean)?;
    let usage = column(&b, &path, "raw_usage", DataType::Float64)?;
    let factor = column(&b, &path, "fs_factor", DataType::Float64)?;
    let get =
        |a: &arrow::array::StringArray, i: usize| if a.is_valid(i) { a.value(i).to_string() } else { String::new() };
    let n = b.num_rows();
    Ok(RunAssocs {
        key: (0..n)
            .map(|i| {
                let mut k = get(account, i);
                if user.is_valid(i) {
                    k.push('/');
                    k.push_str(user.value(i));
                }
                if partition.is_valid(i) {
                    k.push('@');
                    k.push_str(partition.value(i));
                }
                k
            })
            .collect(),
        shares: (0..n)
            .map(|i| if parent.as_boolean().value(i) { "parent".into() } else { get(shares.as_string::<i32>(), i) })
            .collect(),
        usage: usage.as_primitive::<Float64Type>().iter().map(|v| v.unwrap_or(f64::NAN)).collect(),
        factor: factor.as_primitive::<Float64Type>().iter().map(|v| v.unwrap_or(f64::NAN)).collect(),
    })
}

pub(crate) fn diff(a: &DiffArgs) -> Result<()> {
    let (ra, rb) = (read_run(&a.run_a)?, read_run(&a.run_b)?);
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
    let mut moved: Vec<&(usize, usize)> = common.iter().filter(|(i, j)| !same(ra.factor[*i], rb.factor[*j])).collect();
    moved.sort_by(|x, y| {
        let d = |p: &(usize, usize)| (rb.factor[p.1] - ra.factor[p.0]).abs();
        d(y).total_cmp(&d(x)).then(x.0.cmp(&y.0))
    });
    let _ = writeln!(
        text,
        "\n{}, largest first:",
        count(moved.len(), "fair-share factor change", "fair-share factor changes")
    );
    for &&(i, j) in moved.iter().take(a.top) {
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
            let b = read_batch(p)?;
            let id = column(&b, p, "job_id", DataType::Utf8)?;
            let part = column(&b, p, "partition", DataType::Utf8)?;
            let qos = column(&b, p, "qos", DataType::Utf8)?;
            let pr = column(&b, p, "priority", DataType::Float64)?;
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
