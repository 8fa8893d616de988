//! Comparing fair-share results: ranks, rank correlation, the associations that move most, and
//! algorithm or parameter variants computed side by side on one site ([`compare_variants`]).

use std::fmt::Write as _;
use std::sync::Arc;

use std::collections::HashMap;
use std::path::Path;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Float64Type};

use crate::explain::assoc_name;
use fairshare_base::named::Named;
use fairshare_base::{Error, Result};
use fairshare_engine::pass::{self as fs, Algorithm, FairShare, Params};
use fairshare_engine::pipeline::{Observer, Silent, Site, fair_share_after_charge};
use fairshare_engine::tree::{AssocTree, TreeInput};
use fairshare_engine::usage::ChargeReport;

/// A run directory's Parquet file, whole.
///
/// # Errors
/// The file cannot be read, or has no rows.
pub fn read_rows(path: &Path) -> Result<RecordBatch> {
    let batch = fairshare_engine::io::read_parquet_whole(path)?;
    if batch.num_rows() == 0 {
        return Err(Error::input(path, None, "no rows"));
    }
    Ok(batch)
}

/// Column `name` of `batch` (read from `path`) cast to `ty`.
///
/// # Errors
/// No such column, or it does not cast.
pub fn column_as(batch: &RecordBatch, path: &Path, name: &str, ty: DataType) -> Result<ArrayRef> {
    let a = batch.column_by_name(name).ok_or_else(|| Error::input(path, None, format!("no column {name:?}")))?;
    arrow::compute::cast(a, &ty).map_err(|e| Error::format(path, e))
}

/// The associations of a run, as `fairshare diff` compares two: each keyed by its display name
/// ([`assoc_name`]: `account/user@partition`), with its shares, usage and factor.
#[derive(Debug, Clone)]
pub struct RunAssociations {
    /// `account`, `account/user`, with `@partition`.
    pub key: Vec<String>,
    /// RawShares as text, or `parent`.
    pub shares: Vec<String>,
    /// RawUsage.
    pub usage: Vec<f64>,
    /// The fair-share factor (NaN for accounts).
    pub factor: Vec<f64>,
}

impl RunAssociations {
    /// The associations of a run directory's `associations.parquet`.
    ///
    /// # Errors
    /// The file cannot be read or lacks a column.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join("associations.parquet");
        let b = read_rows(&path)?;
        let text = |n: &str| column_as(&b, &path, n, DataType::Utf8);
        let (account, user, partition) = (text("account")?, text("user")?, text("partition")?);
        let (account, user, partition) =
            (account.as_string::<i32>(), user.as_string::<i32>(), partition.as_string::<i32>());
        let shares = column_as(&b, &path, "raw_shares", DataType::Utf8)?;
        let parent = column_as(&b, &path, "parent_shares", DataType::Boolean)?;
        let usage = column_as(&b, &path, "raw_usage", DataType::Float64)?;
        let factor = column_as(&b, &path, "fs_factor", DataType::Float64)?;
        let get = |a: &StringArray, i: usize| if a.is_valid(i) { a.value(i).to_string() } else { String::new() };
        let n = b.num_rows();
        Ok(RunAssociations {
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

    /// The associations of a computed tree, as [`RunAssociations::read`] reads them back from its
    /// run directory.
    pub fn of(tree: &AssocTree, fs: &FairShare) -> Self {
        let rows = 0..tree.len();
        RunAssociations {
            key: rows.clone().map(|r| assoc_name(tree, r)).collect(),
            shares: rows
                .clone()
                .map(|r| if tree.is_parent_shares(r) { "parent".into() } else { tree.raw_shares()[r].to_string() })
                .collect(),
            usage: tree.raw_usage().to_vec(),
            factor: fs.fs_factor.clone(),
        }
    }
}

/// The associations in both runs whose factor changed, as (row in `a`, row in `b`), largest
/// change first (ties in `a`'s order).
pub fn factor_changes(a: &RunAssociations, b: &RunAssociations) -> Vec<(usize, usize)> {
    let index_b: HashMap<&str, usize> = b.key.iter().enumerate().map(|(i, k)| (k.as_str(), i)).collect();
    let same = |x: f64, y: f64| x == y || (x.is_nan() && y.is_nan());
    let mut moved: Vec<(usize, usize)> = a
        .key
        .iter()
        .enumerate()
        .filter_map(|(i, k)| index_b.get(k.as_str()).map(|&j| (i, j)))
        .filter(|&(i, j)| !same(a.factor[i], b.factor[j]))
        .collect();
    moved.sort_by(|x, y| {
        let d = |p: &(usize, usize)| (b.factor[p.1] - a.factor[p.0]).abs();
        d(y).total_cmp(&d(x)).then(x.0.cmp(&y.0))
    });
    moved
}

/// One variant of a comparison: its label (the text it was given as, trimmed) and the pass it
/// runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// The label, as tables and column names show it (`classic:dampening=2`).
    pub label: String,
    /// The pass.
    pub params: Params,
}

impl Variant {
    /// Parses `fair-tree`, `classic` or `flux`, optionally followed by `:dampening=D`,
    /// `:depth-oblivious` or `:exact-sums` (in any number and order).
    ///
    /// # Errors
    /// [`Error::Usage`] naming the part that is not understood.
    ///
    /// # Example
    /// ```
    /// use fairshare_analyses::compare::Variant;
    /// let v = Variant::parse("classic:dampening=2")?;
    /// assert_eq!((v.label.as_str(), v.params.dampening), ("classic:dampening=2", 2));
    /// assert!(Variant::parse("fifo").is_err());
    /// # Ok::<(), fairshare_base::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<Variant> {
        let mut parts = text.split(':');
        let algo = parts.next().unwrap_or_default().trim();
        let algorithm = Algorithm::of_name(algo)
            .ok_or_else(|| Error::Usage(format!("--variants: {algo:?} is not fair-tree, classic or flux")))?;
        let mut params = Params::new(algorithm);
        for p in parts {
            match p.trim().split_once('=') {
                Some(("dampening", d)) => {
                    // The same rule and words as --dampening and FairShareDampeningFactor.
                    params.dampening = fairshare_engine::config::slurm_conf::parse_dampening(d)
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
        Ok(Variant { label: text.trim().to_string(), params })
    }
}

/// Variants computed on one site: the users' factors and places under each.
#[derive(Debug)]
pub struct Comparison {
    /// The tree (with the usage the first computed variant saw); every variant's tree holds the
    /// same rows in the same order.
    pub tree: AssocTree,
    /// The rows of `tree` that are user associations, in tree order.
    pub users: Vec<usize>,
    /// The variants computed, in the order given: label and result.
    pub results: Vec<(String, FairShare)>,
    /// The variants that could not be computed: label and why.
    pub left_out: Vec<(String, Error)>,
    /// Per computed variant, the factor of each of `users`.
    pub factors: Vec<Vec<f64>>,
    /// Per computed variant, the place of each of `users` by factor: 1 = highest, ties share a
    /// place.
    pub places: Vec<Vec<u32>>,
    /// What the first charging of the job records saw (the counts are every charging's), when
    /// there are records.
    pub charge: Option<ChargeReport>,
}

/// Computes every variant on `site`. Without job records each computes on the tree as given.
/// With them, each sees the usage its pass would (Slurm's Fair Tree charges running jobs on the
/// first pass, classic does not, and reads the accounts at the last pass's start): the records
/// are charged once per kind of pass among the variants, and the notes and warnings of charging
/// are said once, with the first charge. A variant whose pass fails is left out
/// ([`Comparison::left_out`]).
///
/// # Errors
/// The inputs cannot be read or charged, or no variant could be computed.
///
/// # Example
/// ```
/// use fairshare_analyses::compare::{Variant, compare_variants};
/// use fairshare_engine::pipeline::{Silent, SiteOptions};
///
/// let site = SiteOptions::default().resolve()?;
/// let variants = [Variant::parse("fair-tree")?, Variant::parse("classic")?];
/// let c = compare_variants(&site, &variants, &Silent)?;
/// assert_eq!(c.results.len(), 2);
/// assert_eq!(c.batch()?.num_columns(), 4 + 2 * 2);
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn compare_variants(site: &Site, variants: &[Variant], observer: &dyn Observer) -> Result<Comparison> {
    compare_variants_with(site, variants, observer, &mut |_, _| {})
}

/// [`compare_variants`], telling `left_out` of each variant left out as it happens (so that a
/// front end can say it in its place among the observer's messages).
///
/// # Errors
/// As [`compare_variants`].
pub fn compare_variants_with(
    site: &Site,
    variants: &[Variant],
    observer: &dyn Observer,
    left_out: &mut dyn FnMut(&str, &Error),
) -> Result<Comparison> {
    let given = match &site.usage {
        Some(_) => None,
        None => Some(site.tree.load()?),
    };
    // (Fair Tree or not, the charged input, what charging saw), one per kind of pass.
    let mut charged: Vec<(bool, TreeInput, Option<ChargeReport>)> = Vec::new();
    let mut results: Vec<(String, FairShare)> = Vec::new();
    let mut failed: Vec<(String, Error)> = Vec::new();
    let mut first_tree = None;
    let count = variants.len() as u64;
    for (k, v) in variants.iter().enumerate() {
        observer.progress("computing the variants", k as u64, count, "variants");
        let computed = match &given {
            Some(t) => fs::compute(t, &v.params).map(|r| (None, r)),
            None => {
                let fair_tree = v.params.algorithm == Algorithm::FairTree;
                if !charged.iter().any(|(f, _, _)| *f == fair_tree) {
                    let mut input = site.tree_input()?;
                    let quiet: &dyn Observer = if charged.is_empty() { observer } else { &Silent };
                    let report = site.charge_for(v.params.algorithm, &mut input, quiet)?;
                    charged.push((fair_tree, input, report));
                }
                let (_, input, report) = charged.iter().find(|(f, _, _)| *f == fair_tree).expect("charged above");
                fair_share_after_charge(input.clone(), report.as_ref(), &v.params).map(|(t, r)| (Some(t), r))
            }
        };
        match computed {
            Ok((t, r)) => {
                if first_tree.is_none() {
                    first_tree = t;
                }
                results.push((v.label.clone(), r));
            }
            // Say why a variant is missing rather than fail them all: the table compares what
            // could be computed.
            Err(e) => {
                left_out(&v.label, &e);
                failed.push((v.label.clone(), e));
            }
        }
    }
    observer.progress("computing the variants", count, count, "variants");
    let Some(tree) = given.or(first_tree).filter(|_| !results.is_empty()) else {
        return Err(Error::Usage("no variant could be computed".into()));
    };
    let users: Vec<usize> = (0..tree.len()).filter(|&r| tree.is_user(r)).collect();
    let factors: Vec<Vec<f64>> = results.iter().map(|(_, r)| users.iter().map(|&u| r.fs_factor[u]).collect()).collect();
    // Places count from the highest factor (Parquet's `rank` column is Slurm's Fair Tree rank,
    // which counts the other way).
    let places: Vec<Vec<u32>> = factors.iter().map(|f| competition_ranks(f)).collect();
    let charge = charged.into_iter().find_map(|(_, _, report)| report);
    Ok(Comparison { tree, users, results, left_out: failed, factors, places, charge })
}

/// A factor as the comparison prints it: 6 decimals, `-` when unset.
fn num(v: f64) -> String {
    if v.is_nan() { "-".into() } else { format!("{v:.6}") }
}

impl Comparison {
    /// The text `fairshare compare` prints: the Spearman correlation of every pair of variants,
    /// with `all` every user's factor and place under each, and the `top` biggest movers from
    /// the first variant to each other.
    pub fn text(&self, all: bool, top: usize) -> String {
        let (tree, users, results, factors, places) =
            (&self.tree, &self.users, &self.results, &self.factors, &self.places);
        let mut text = String::new();
        let _ =
            writeln!(text, "{} user associations; places are by factor, 1 = highest, ties share a place.", users.len());
        let _ = writeln!(text, "\nSpearman rank correlation of the users' factors:");
        let _ = write!(text, "{:>24}", "");
        for (label, _) in results {
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
        if all {
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
                let _ = write!(text, "{:<40}", assoc_name(tree, users[k]));
                for (v, cell) in cells.iter().enumerate() {
                    let _ =
                        write!(text, " {:>cell$}", format!("{:>9} ({:>digits$})", num(factors[v][k]), places[v][k]));
                }
                text.push('\n');
            }
        }
        for v in 1..results.len() {
            let mut movers: Vec<usize> = (0..users.len()).collect();
            let delta = |k: usize| i64::from(places[v][k]) - i64::from(places[0][k]);
            movers.sort_by_key(|&k| (std::cmp::Reverse(delta(k).abs()), k));
            let _ = writeln!(text, "\nBiggest movers, {} → {}:", results[0].0, results[v].0);
            for &k in movers.iter().take(top).filter(|&&k| delta(k) != 0) {
                let _ = writeln!(
                    text,
                    "  {:<40} place {:>7} → {:>7} ({:+}), factor {} → {}",
                    assoc_name(tree, users[k]),
                    places[0][k],
                    places[v][k],
                    -delta(k),
                    num(factors[0][k]),
                    num(factors[v][k])
                );
            }
        }
        text
    }

    /// One row per user association: `id`, `account`, `user`, `partition`, then per variant
    /// `fs_<variant>` and `place_<variant>` (1 = highest factor), the label's `:`, `=` and `-`
    /// made `_`.
    ///
    /// # Errors
    /// Arrow refuses the columns (it does not: they are equally long).
    pub fn batch(&self) -> Result<RecordBatch> {
        let (tree, users) = (&self.tree, &self.users);
        let mut columns: Vec<(String, ArrayRef)> = vec![
            ("id".into(), Arc::new(UInt64Array::from_iter_values(users.iter().map(|&u| tree.ids()[u])))),
            ("account".into(), Arc::new(StringArray::from_iter_values(users.iter().map(|&u| tree.account(u))))),
            ("user".into(), Arc::new(StringArray::from_iter(users.iter().map(|&u| tree.user_name(u))))),
            ("partition".into(), Arc::new(StringArray::from_iter(users.iter().map(|&u| tree.partition(u))))),
        ];
        for (v, (label, _)) in self.results.iter().enumerate() {
            let name = label.replace([':', '='], "_").replace('-', "_");
            columns.push((format!("fs_{name}"), Arc::new(Float64Array::from(self.factors[v].clone()))));
            columns.push((format!("place_{name}"), Arc::new(UInt32Array::from(self.places[v].clone()))));
        }
        RecordBatch::try_from_iter(columns).map_err(|e| Error::format("<comparison>", e))
    }
}

/// Competition ranks of `values`, best (highest) first: equal values share the better rank and
/// the next distinct value skips the tied places (1, 2, 2, 4). NaN ranks last.
///
/// # Example
/// ```
/// assert_eq!(fairshare_analyses::compare::competition_ranks(&[0.5, 0.9, 0.5, 0.1]), vec![2, 1, 2, 4]);
/// ```
pub fn competition_ranks(values: &[f64]) -> Vec<u32> {
    let key = |v: f64| if v.is_nan() { f64::NEG_INFINITY } else { v };
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| key(values[b]).total_cmp(&key(values[a])));
    let mut ranks = vec![0u32; values.len()];
    for (place, &i) in order.iter().enumerate() {
        ranks[i] = if place > 0 && key(values[order[place - 1]]) == key(values[i]) {
            ranks[order[place - 1]]
        } else {
            place as u32 + 1
        };
    }
    ranks
}

/// Fractional (average) ranks, ascending, for Spearman's coefficient.
fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = mean;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's rank correlation of two equally long series (Pearson's correlation of their average
/// ranks, so ties are handled); NaN when either series is constant or shorter than 2.
///
/// # Example
/// ```
/// use fairshare_analyses::compare::spearman;
/// assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0);
/// assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
/// ```
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "series of equal length");
    let n = a.len() as f64;
    if a.len() < 2 {
        return f64::NAN;
    }
    let (ra, rb) = (average_ranks(a), average_ranks(b));
    let mean = (n + 1.0) / 2.0;
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        cov += (x - mean) * (y - mean);
        va += (x - mean) * (x - mean);
        vb += (y - mean) * (y - mean);
    }
    cov / (va * vb).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_and_correlation_with_ties() {
        assert_eq!(competition_ranks(&[f64::NAN, 1.0, 1.0, 2.0]), vec![4, 2, 2, 1]);
        assert_eq!(average_ranks(&[5.0, 1.0, 5.0, 3.0]), vec![3.5, 1.0, 3.5, 2.0]);
        // Textbook example: d² = 0+1+1+0+0 over n=5 with no ties gives 1 - 6·2/(5·24) = 0.9.
        let r = spearman(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1.0, 3.0, 2.0, 4.0, 5.0]);
        assert!((r - 0.9).abs() < 1e-12, "{r}");
        assert!(spearman(&[1.0, 1.0], &[1.0, 2.0]).is_nan());
    }
}
