//! Is the policy fair? The usage each account was delivered, window by window of a usage history
//! (`fairshare usage --every`), against the share of the machine its shares entitle it to.
//!
//! **Delivered usage.** For the window between two consecutive instants `t_{i-1} < t_i` of the
//! history and an account `a` with raw usage `U_a` (its row's `raw_usage`, its users' sum),
//! `d_a = U_a(t_i) - carry_i · U_a(t_{i-1})`, where `carry_i` is the decay between the instants as
//! the history itself applied it ([`Instants::carry`], rebuilt from each file's decay metadata:
//! Slurm's passes or the exact decay, half-life, calc period, first pass, reset boundary; 0 when
//! a reset falls in the window). It is the usage charged in the window *as decayed at its end*:
//! with a half-life of 0 (no decay) exactly the billing-seconds the account's jobs ran in the
//! window; with a week's half-life and daily windows, up to about 10% less. Differences below 0
//! from rounding are 0; a larger fall is an error (the instants are not one history).
//!
//! **Entitled share.** An association's level share is its shares over the shares of its level
//! (its siblings, users included, that have shares of their own); its entitlement is the product
//! of the level shares down the path from the root. An association with `parent` shares has no
//! level share of its own: its children join its parent's level (as Slurm compares them there),
//! so an account with `parent` shares is entitled to the sum of what its children are entitled to
//! at that level, and a user with `parent` shares adds nothing (it draws on the account's share).
//! The entitled shares `e_a` of the accounts compared (those at one depth) are their
//! entitlements renormalized to sum to 1; an account with 0 shares is entitled to 0.
//!
//! **Machine-share normalization.** `s_a = d_a / Σ_b d_b` over the compared accounts; per window
//! the sum of squared residuals `Σ_a (s_a - e_a)²` and Jain's index `J = (Σ x_a)² / (n Σ x_a²)`
//! over `x_a = s_a / e_a` for the `n` accounts with `e_a > 0`. `J = 1` when every account got the
//! same multiple of its entitlement, `1/n` when one account got everything. A window without
//! usage has neither (null).
//!
//! **Capacity normalization.** Using an idle machine is not unfair: with the machine's capacity
//! `C` in billing units per second, `c_a = d_a / (C · (t_i - t_{i-1}))`, and only shortfalls
//! count: the residual sum `Σ_a (min(c_a, e_a) - e_a)²` and Jain's index over
//! `x'_a = min(1, c_a / e_a)`. [`machine_capacity`] sums a slurm.conf's nodes' billing.
//!
//! **The period.** The same indices over the period's totals (`Σ_i d_a` per account, the whole
//! span's capacity).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use arrow::datatypes::{DataType, Field, Float64Type, Schema, UInt32Type, UInt64Type};
use parquet::file::metadata::KeyValue;
use rayon::prelude::*;

use crate::chart::{LineChart, Series, short_number};
use fairshare_base::time_format::TimeFormat;
use fairshare_base::{Error, Result};
use fairshare_engine::config::{HostList, SlurmConf, Tres, TresCounts, billable};
use fairshare_engine::pipeline::history::{HistoryFile, history_column, history_files, read_history_file};
use fairshare_engine::usage::DecayModel;
use fairshare_engine::usage::history::Instants;

/// The columns that make the tree: every instant of a history must have the same.
const TREE_COLUMNS: [&str; 6] = ["id", "parent_id", "depth", "is_user", "raw_shares", "parent_shares"];

/// The decay parameters every instant of one history shares (`now` and the reset boundary aside).
const DECAY_KEYS: [&str; 6] = [
    "fairshare.decay",
    "fairshare.half_life",
    "fairshare.calc_period",
    "fairshare.first_pass",
    "fairshare.reset_period",
    "fairshare.timezone",
];

/// Relative fall of an account's usage below the carried usage still taken as rounding.
const ROUNDING: f64 = 1e-6;

/// Delivered against entitled usage of the accounts at one depth, window by window.
#[derive(Clone, Debug)]
pub struct Fairness {
    /// The history directory.
    pub dir: PathBuf,
    /// The depth of the accounts compared (1: the root's children).
    pub depth: u32,
    /// The fair-share algorithm of the history (`fairshare.algorithm`), when its files say.
    pub algorithm: Option<String>,
    /// The accounts compared, in tree order (an account name held twice is told apart by `#id`).
    pub accounts: Vec<String>,
    /// Each account's entitled share (summing to 1).
    pub entitled: Vec<f64>,
    /// The instants, ascending (epoch seconds); window `w` runs from `times[w]` to `times[w + 1]`.
    pub times: Vec<i64>,
    /// Delivered usage (billing-seconds, decayed at the window's end) per window, per account.
    pub delivered: Vec<Vec<f64>>,
}

/// The fairness indices of one window (or of the period).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Indices {
    /// Usage delivered to the compared accounts.
    pub total: f64,
    /// `Σ (s_a - e_a)²`; `None` without usage.
    pub ssr: Option<f64>,
    /// Jain's index over `s_a / e_a`; `None` without usage.
    pub jain: Option<f64>,
    /// `Σ (min(c_a, e_a) - e_a)²`; `None` without a capacity.
    pub capacity_ssr: Option<f64>,
    /// Jain's index over `min(1, c_a / e_a)`; `None` without a capacity or without usage.
    pub capacity_jain: Option<f64>,
}

/// The machine's capacity and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Capacity {
    /// Billing units per second.
    pub per_second: f64,
    /// Its source, for the report (`--capacity`, `slurm.conf: 168 nodes`).
    pub source: String,
}

/// Jain's fairness index `(Σ x)² / (n Σ x²)`: 1 when all `x` are equal, `1/n` when one holds
/// everything; `None` for no values or all zero.
///
/// # Example
/// ```
/// use fairshare_analyses::fairness::jain;
/// assert_eq!(jain(&[2.0, 2.0, 2.0]), Some(1.0));
/// assert_eq!(jain(&[0.0, 5.0, 0.0, 0.0]), Some(0.25));
/// assert_eq!(jain(&[0.0, 0.0]), None);
/// ```
pub fn jain(x: &[f64]) -> Option<f64> {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    (squares > 0.0).then(|| sum * sum / (x.len() as f64 * squares))
}

/// The indices of delivered usage `delivered` against entitled shares `entitled` (one per
/// account), with `available` the billing-seconds the machine could deliver in the span (capacity
/// × seconds), when known.
pub fn indices(delivered: &[f64], entitled: &[f64], available: Option<f64>) -> Indices {
    let total: f64 = delivered.iter().sum();
    let entitled_ratios = |v: &[f64], cap: bool| -> Vec<f64> {
        v.iter()
            .zip(entitled)
            .filter(|(_, e)| **e > 0.0)
            .map(|(x, e)| if cap { (x / e).min(1.0) } else { x / e })
            .collect()
    };
    let (ssr, jain_index) = if total > 0.0 {
        let shares: Vec<f64> = delivered.iter().map(|d| d / total).collect();
        let ssr = shares.iter().zip(entitled).map(|(s, e)| (s - e) * (s - e)).sum();
        (Some(ssr), jain(&entitled_ratios(&shares, false)))
    } else {
        (None, None)
    };
    let (capacity_ssr, capacity_jain) = match available.filter(|a| *a > 0.0) {
        Some(a) => {
            let c: Vec<f64> = delivered.iter().map(|d| d / a).collect();
            let ssr = c.iter().zip(entitled).map(|(c, e)| (c.min(*e) - e).powi(2)).sum();
            (Some(ssr), jain(&entitled_ratios(&c, true)))
        }
        None => (None, None),
    };
    Indices { total, ssr, jain: jain_index, capacity_ssr, capacity_jain }
}

/// Each row's entitlement: the product of its level shares down the path from the root (see the
/// module docs for `parent` shares). `parent[r]` is row `r`'s parent row, every parent before its
/// children (the root, row 0, is its own); `shares` the raw shares; `parent_shares` the rows
/// whose shares are `parent`.
///
/// # Example
/// ```
/// // root → a (1), b (3); a → u (parent shares), v (2)
/// let e = fairshare_analyses::fairness::entitlements(&[0, 0, 0, 1, 1], &[1.0, 1.0, 3.0, 0.0, 2.0],
///     &[false, false, false, true, false]);
/// assert_eq!(e, vec![1.0, 0.25, 0.75, 0.0, 0.25]);
/// ```
pub fn entitlements(parent: &[usize], shares: &[f64], parent_shares: &[bool]) -> Vec<f64> {
    let n = parent.len();
    // The level each row competes in: its parent's, or for a `parent` parent, the level above.
    let mut level_of = vec![0usize; n];
    let mut level_sum = vec![0.0; n];
    for r in 1..n {
        let p = parent[r];
        level_of[r] = if parent_shares[p] { level_of[p] } else { p };
        if !parent_shares[r] {
            level_sum[level_of[r]] += shares[r];
        }
    }
    let mut e = vec![0.0; n];
    if n > 0 {
        e[0] = 1.0;
    }
    for r in 1..n {
        let g = level_of[r];
        if !parent_shares[r] && level_sum[g] > 0.0 {
            e[r] = e[g] * shares[r] / level_sum[g];
        }
    }
    // A `parent` row owns what its children took at the level they joined.
    for r in (1..n).rev() {
        let p = parent[r];
        if parent_shares[p] {
            e[p] += e[r];
        }
    }
    e
}

/// The machine's capacity in billing units per second: the sum over the nodes of a node's
/// billing, its TRES (CPUs, memory, GRES, one node) billed with the `TRESBillingWeights` of the
/// first partition holding it, or its CPUs when that partition has none (or no partition does).
///
/// # Errors
/// The slurm.conf defines no nodes (scontrol's output shows none), or a partition's node list
/// does not parse.
///
/// # Example
/// ```
/// let conf = fairshare_engine::config::slurm_conf::parse(std::path::Path::new("slurm.conf"),
///     "NodeName=a[1-2] CPUs=8 RealMemory=4096\nNodeName=b1 CPUs=4\n\
///      PartitionName=p Nodes=a[1-2] TRESBillingWeights=CPU=1.0,Mem=1G\nPartitionName=q Nodes=ALL\n")?;
/// assert_eq!(fairshare_analyses::fairness::machine_capacity(&conf), Ok(2.0 * (8.0 + 4.0) + 4.0));
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn machine_capacity(conf: &SlurmConf) -> std::result::Result<f64, String> {
    if conf.nodes.is_empty() {
        return Err("the slurm.conf defines no nodes (scontrol's output shows none)".into());
    }
    // Node name → the first partition holding it.
    let mut first: HashMap<String, usize> = HashMap::new();
    for (k, p) in conf.partitions.iter().enumerate() {
        if p.nodes.eq_ignore_ascii_case("ALL") {
            for name in conf.nodes.iter().flat_map(|g| g.names.iter()) {
                first.entry(name).or_insert(k);
            }
        } else {
            let list = HostList::parse(&p.nodes).map_err(|m| format!("partition {} Nodes={}: {m}", p.name, p.nodes))?;
            for name in list.iter() {
                first.entry(name).or_insert(k);
            }
        }
    }
    let mut total = 0.0;
    for group in &conf.nodes {
        let mut tres = TresCounts::new();
        tres.set(Tres::CPU, u64::from(group.cpus));
        tres.set(Tres::MEM, group.real_memory);
        tres.set(Tres::NODE, 1);
        for (gres, count) in group.gres.iter() {
            tres.set(gres.clone(), count);
        }
        for name in group.names.iter() {
            let weights = first.get(&name).and_then(|&k| conf.partitions[k].billing_weights.as_ref());
            total += billable(&tres, weights, conf.priority_flags);
        }
    }
    Ok(total)
}

/// The tree of a history's first file: the accounts compared, their rows and entitled shares.
struct Tree {
    path: PathBuf,
    columns: Vec<ArrayRef>,
    rows: Vec<usize>,
    accounts: Vec<String>,
    entitled: Vec<f64>,
}

/// One instant: its file, time, decay model and the compared accounts' raw usage.
struct Instant {
    path: PathBuf,
    at: i64,
    metadata: HashMap<String, String>,
    model: DecayModel,
    usage: Vec<f64>,
}

impl Tree {
    fn of(file: &HistoryFile, depth: u32) -> Result<Tree> {
        let path = &file.path;
        let column = |name: &str, to: &DataType| history_column(path, &file.batch, name, to);
        let ids = column("id", &DataType::UInt64)?;
        let ids = ids.as_primitive::<UInt64Type>();
        let parents = column("parent_id", &DataType::UInt64)?;
        let parents = parents.as_primitive::<UInt64Type>();
        let depths = column("depth", &DataType::UInt32)?;
        let depths = depths.as_primitive::<UInt32Type>().values();
        let is_user = column("is_user", &DataType::Boolean)?;
        let is_user = is_user.as_boolean();
        let shares = column("raw_shares", &DataType::Float64)?;
        let shares = shares.as_primitive::<Float64Type>().values();
        let parent_shares = column("parent_shares", &DataType::Boolean)?;
        let parent_shares: Vec<bool> = parent_shares.as_boolean().values().iter().collect();
        let names = column("account", &DataType::Utf8)?;
        let names = names.as_string::<i32>();

        let row_of: HashMap<u64, usize> = ids.values().iter().enumerate().map(|(r, &id)| (id, r)).collect();
        let mut parent = vec![0usize; ids.len()];
        for (r, slot) in parent.iter_mut().enumerate().skip(1) {
            let p = (parents.is_valid(r)).then(|| row_of.get(&parents.value(r)).copied()).flatten();
            *slot = match p {
                Some(p) if p < r => p,
                _ => {
                    return Err(Error::input(
                        path,
                        Some(r as u64 + 1),
                        "the parent of this row is not an earlier row: not the tree order `fairshare usage` writes",
                    ));
                }
            };
        }
        let e = entitlements(&parent, shares, &parent_shares);
        let rows: Vec<usize> = (0..ids.len()).filter(|&r| !is_user.value(r) && depths[r] == depth).collect();
        if rows.is_empty() {
            let deepest = (0..ids.len()).filter(|&r| !is_user.value(r)).map(|r| depths[r]).max().unwrap_or(0);
            return Err(Error::input(
                path,
                None,
                format!("no accounts at depth {depth}: the deepest account is at depth {deepest} (the root is 0)"),
            ));
        }
        let sum: f64 = rows.iter().map(|&r| e[r]).sum();
        if sum <= 0.0 {
            return Err(Error::input(
                path,
                None,
                format!("the {} accounts at depth {depth} have no shares between them", rows.len()),
            ));
        }
        let mut count: HashMap<&str, usize> = HashMap::new();
        for &r in &rows {
            *count.entry(names.value(r)).or_default() += 1;
        }
        let accounts = rows
            .iter()
            .map(|&r| match names.value(r) {
                n if count[n] > 1 => format!("{n}#{}", ids.value(r)),
                n => n.to_string(),
            })
            .collect();
        let columns = TREE_COLUMNS.iter().map(|c| file.batch.column_by_name(c).cloned()).collect::<Option<Vec<_>>>();
        Ok(Tree {
            path: path.clone(),
            columns: columns.expect("read above"),
            entitled: rows.iter().map(|&r| e[r] / sum).collect(),
            rows,
            accounts,
        })
    }

    /// The compared accounts' raw usage at `file`'s instant, once its tree is checked to be this.
    fn instant(&self, file: HistoryFile) -> Result<Instant> {
        let path = &file.path;
        for (name, mine) in TREE_COLUMNS.iter().zip(&self.columns) {
            let theirs = history_column(path, &file.batch, name, mine.data_type())?;
            if theirs.as_ref() != mine.as_ref() {
                return Err(Error::input(
                    path,
                    None,
                    format!(
                        "a different association tree from {} (its `{name}` column differs): fairness compares \
                         the instants of one tree",
                        self.path.display()
                    ),
                ));
            }
        }
        let usage = history_column(path, &file.batch, "raw_usage", &DataType::Float64)?;
        let usage = usage.as_primitive::<Float64Type>().values();
        let model = fairshare_engine::pipeline::model_from_metadata(&file.metadata)
            .map_err(|m| Error::input(path, None, format!("{m}: not a `fairshare usage --every` file")))?;
        Ok(Instant {
            usage: self.rows.iter().map(|&r| usage[r]).collect(),
            model,
            at: file.at,
            metadata: file.metadata,
            path: file.path,
        })
    }
}

impl Fairness {
    /// Reads the history in `dir` and the delivered usage of the accounts at `depth` in each
    /// window. Each file is read for the tree's columns and `raw_usage` only, in parallel.
    ///
    /// # Errors
    /// No history in `dir`, a file that is not a history file, fewer than two instants, two
    /// files of one instant, instants of different trees or decay parameters, no accounts (or no
    /// shares) at `depth`, or an account's usage falling faster than the decay allows.
    pub fn read(dir: &Path, depth: u32) -> Result<Fairness> {
        let paths = history_files(dir)?;
        let mut columns: Vec<&str> = TREE_COLUMNS.to_vec();
        columns.push("raw_usage");
        let first = read_history_file(&paths[0], &[columns.as_slice(), &["account"]].concat())?;
        let tree = Tree::of(&first, depth)?;
        let algorithm = first.metadata.get("fairshare.algorithm").cloned();
        let rest: Vec<Result<Instant>> =
            paths[1..].par_iter().map(|p| read_history_file(p, &columns).and_then(|f| tree.instant(f))).collect();
        let mut instants = vec![tree.instant(first)?];
        for i in rest {
            instants.push(i?);
        }
        instants.sort_by_key(|i| i.at);
        if instants.len() < 2 {
            return Err(Error::Usage(format!(
                "{}: one instant ({}): fairness compares the windows between instants; write a history of two or \
                 more (`fairshare usage --every`)",
                dir.display(),
                instants[0].path.display()
            )));
        }
        for pair in instants.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if a.at == b.at {
                return Err(Error::input(&b.path, None, format!("the same instant as {}", a.path.display())));
            }
            for key in DECAY_KEYS {
                if a.metadata.get(key) != b.metadata.get(key) {
                    return Err(Error::input(
                        &b.path,
                        None,
                        format!(
                            "`{key}` is {:?}, {:?} in {}: the instants of one history share their decay",
                            b.metadata.get(key).map_or("", String::as_str),
                            a.metadata.get(key).map_or("", String::as_str),
                            a.path.display()
                        ),
                    ));
                }
            }
        }
        let models: HashMap<i64, DecayModel> = instants.iter().map(|i| (i.at, i.model)).collect();
        let times: Vec<i64> = instants.iter().map(|i| i.at).collect();
        let carry = Instants::new(times.clone(), |t| models[&t]);
        let mut delivered = Vec::with_capacity(times.len() - 1);
        for i in 1..instants.len() {
            let c = carry.carry(i);
            let (before, now) = (&instants[i - 1], &instants[i]);
            let mut window = Vec::with_capacity(tree.rows.len());
            for (k, (&u0, &u1)) in before.usage.iter().zip(&now.usage).enumerate() {
                let carried = c * u0;
                let d = u1 - carried;
                if d < -ROUNDING * u1.max(carried) {
                    return Err(Error::input(
                        &now.path,
                        None,
                        format!(
                            "account {}'s raw usage is {u1}, below the {carried} its {u0} at {} decays to \
                             (carry {c}): the instants are not one history (the same job records and decay)",
                            tree.accounts[k],
                            before.path.display()
                        ),
                    ));
                }
                window.push(d.max(0.0));
            }
            delivered.push(window);
        }
        Ok(Fairness {
            dir: dir.to_path_buf(),
            depth,
            algorithm,
            accounts: tree.accounts,
            entitled: tree.entitled,
            times,
            delivered,
        })
    }

    /// The indices of window `w` (from `times[w]` to `times[w + 1]`).
    pub fn window(&self, w: usize, capacity: Option<f64>) -> Indices {
        let seconds = (self.times[w + 1] - self.times[w]) as f64;
        indices(&self.delivered[w], &self.entitled, capacity.map(|c| c * seconds))
    }

    /// Each account's delivered usage summed over the windows.
    pub fn period_delivered(&self) -> Vec<f64> {
        (0..self.accounts.len()).map(|a| self.delivered.iter().map(|w| w[a]).sum()).collect()
    }

    /// The indices of the whole period.
    pub fn period(&self, capacity: Option<f64>) -> Indices {
        let seconds = (self.times[self.times.len() - 1] - self.times[0]) as f64;
        indices(&self.period_delivered(), &self.entitled, capacity.map(|c| c * seconds))
    }

    /// One row per (window, account), window end first: `as_of` and `window_start` (UTC
    /// timestamps), `account`, `delivered_usage`, `delivered_share`, `entitled_share`,
    /// `residual` (delivered − entitled share), `capacity_share`, then the window's own indices,
    /// the same on each of its rows: `window_usage`, `ssr`, `jain`, `capacity_ssr`,
    /// `capacity_jain`. Null where a value is undefined (no usage, no capacity).
    pub fn to_batch(&self, capacity: Option<f64>) -> RecordBatch {
        let n = self.accounts.len();
        let windows = self.delivered.len();
        let time = |f: &dyn Fn(usize) -> i64| {
            let v: Vec<i64> = (0..windows * n).map(|r| f(r / n) * 1_000_000).collect();
            Arc::new(TimestampMicrosecondArray::from(v).with_timezone("UTC")) as ArrayRef
        };
        let per_row = |f: &dyn Fn(usize, usize) -> Option<f64>| {
            Arc::new(Float64Array::from((0..windows * n).map(|r| f(r / n, r % n)).collect::<Vec<_>>())) as ArrayRef
        };
        let idx: Vec<Indices> = (0..windows).map(|w| self.window(w, capacity)).collect();
        let share = |w: usize, a: usize| (idx[w].total > 0.0).then(|| self.delivered[w][a] / idx[w].total);
        let seconds = |w: usize| (self.times[w + 1] - self.times[w]) as f64;
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("as_of", time(&|w| self.times[w + 1])),
            ("window_start", time(&|w| self.times[w])),
            ("account", Arc::new(StringArray::from_iter_values((0..windows * n).map(|r| &self.accounts[r % n])))),
            ("delivered_usage", per_row(&|w, a| Some(self.delivered[w][a]))),
            ("delivered_share", per_row(&share)),
            ("entitled_share", per_row(&|_, a| Some(self.entitled[a]))),
            ("residual", per_row(&|w, a| share(w, a).map(|s| s - self.entitled[a]))),
            ("capacity_share", per_row(&|w, a| capacity.map(|c| self.delivered[w][a] / (c * seconds(w))))),
            ("window_usage", per_row(&|w, _| Some(idx[w].total))),
            ("ssr", per_row(&|w, _| idx[w].ssr)),
            ("jain", per_row(&|w, _| idx[w].jain)),
            ("capacity_ssr", per_row(&|w, _| idx[w].capacity_ssr)),
            ("capacity_jain", per_row(&|w, _| idx[w].capacity_jain)),
        ];
        let schema = Schema::new(
            columns
                .iter()
                .map(|(name, a)| Field::new(*name, a.data_type().clone(), a.null_count() > 0))
                .collect::<Vec<_>>(),
        );
        RecordBatch::try_new(Arc::new(schema), columns.into_iter().map(|(_, a)| a).collect())
            .expect("columns match their schema")
    }

    /// The Parquet metadata of [`Fairness::to_batch`]'s file: the history, the depth, the
    /// capacity and the period's indices (`fairshare.period_jain`, ...; empty when undefined).
    pub fn metadata(&self, capacity: Option<&Capacity>) -> Vec<KeyValue> {
        let p = self.period(capacity.map(|c| c.per_second));
        let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        let mut meta = fairshare_base::write::parquet::version_metadata();
        meta.extend(
            [
                ("fairshare.history", self.dir.display().to_string()),
                ("fairshare.depth", self.depth.to_string()),
                ("fairshare.algorithm", self.algorithm.clone().unwrap_or_default()),
                ("fairshare.capacity", opt(capacity.map(|c| c.per_second))),
                ("fairshare.capacity_source", capacity.map(|c| c.source.clone()).unwrap_or_default()),
                ("fairshare.period_usage", p.total.to_string()),
                ("fairshare.period_ssr", opt(p.ssr)),
                ("fairshare.period_jain", opt(p.jain)),
                ("fairshare.period_capacity_ssr", opt(p.capacity_ssr)),
                ("fairshare.period_capacity_jain", opt(p.capacity_jain)),
            ]
            .into_iter()
            .map(|(k, v)| KeyValue::new(k.to_string(), v)),
        );
        meta
    }

    /// The report: one line per window (its end, the usage delivered, both normalizations'
    /// residual sums and Jain's indices), the period's line, then each account's delivered
    /// against entitled share over the period.
    ///
    /// # Errors
    /// Writing to `out`.
    pub fn write_report(&self, out: &mut dyn Write, capacity: Option<&Capacity>) -> std::io::Result<()> {
        let cap = capacity.map(|c| c.per_second);
        let algorithm = self.algorithm.as_deref().map(|a| format!(" ({a})")).unwrap_or_default();
        writeln!(
            out,
            "{} accounts at depth {} of {}{algorithm}: {} windows from {}",
            self.accounts.len(),
            self.depth,
            self.dir.display(),
            self.delivered.len(),
            date(self.times[0])
        )?;
        match capacity {
            Some(c) => writeln!(out, "capacity: {} billing units per second ({})", short(c.per_second), c.source)?,
            None => writeln!(out, "capacity: unknown (capacity columns blank)")?,
        }
        let opt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |x| format!("{x:.4}"));
        writeln!(
            out,
            "{:<16} {:>10} {:>8} {:>8} {:>8} {:>8}",
            "window end", "usage", "SSR", "Jain", "cap SSR", "cap Jain"
        )?;
        let line = |out: &mut dyn Write, label: &str, i: Indices| {
            writeln!(
                out,
                "{label:<16} {:>10} {:>8} {:>8} {:>8} {:>8}",
                short(i.total),
                opt(i.ssr),
                opt(i.jain),
                opt(i.capacity_ssr),
                opt(i.capacity_jain)
            )
        };
        for w in 0..self.delivered.len() {
            line(out, &date(self.times[w + 1]), self.window(w, cap))?;
        }
        let period = self.period(cap);
        line(out, "period", period)?;
        let width = self.accounts.iter().map(String::len).max().unwrap_or(0).max(7);
        writeln!(out, "{:<width$} {:>10} {:>9} {:>9} {:>9}", "account", "delivered", "share", "entitled", "capacity")?;
        let seconds = (self.times[self.times.len() - 1] - self.times[0]) as f64;
        for (a, d) in self.period_delivered().into_iter().enumerate() {
            let share = (period.total > 0.0).then(|| d / period.total);
            let capacity_share = cap.map(|c| d / (c * seconds));
            writeln!(
                out,
                "{:<width$} {:>10} {:>9} {:>9.4} {:>9}",
                self.accounts[a],
                short(d),
                opt(share),
                self.entitled[a],
                opt(capacity_share)
            )?;
        }
        Ok(())
    }

    /// Two charts to draw one above the other: Jain's index per window under both normalizations,
    /// then each account's delivered share against its entitled share (the eight accounts
    /// furthest from theirs over the period, when there are more).
    pub fn charts(&self, capacity: Option<&Capacity>, width: u32) -> [(Vec<Series>, LineChart); 2] {
        let cap = capacity.map(|c| c.per_second);
        let ends: Vec<i64> = self.times[1..].to_vec();
        let windows: Vec<Indices> = (0..self.delivered.len()).map(|w| self.window(w, cap)).collect();
        let series = |name: &str, f: &dyn Fn(&Indices) -> Option<f64>| Series {
            name: name.to_string(),
            times: ends.clone(),
            values: windows.iter().map(|i| f(i).unwrap_or(f64::NAN)).collect(),
            band: None,
        };
        let mut jain_series = vec![series("machine share (of the usage delivered)", &|i| i.jain)];
        let mut notes = Vec::new();
        match capacity {
            Some(c) => jain_series
                .push(series(&format!("capacity (shortfalls only, {} units/s)", short(c.per_second)), &|i| {
                    i.capacity_jain
                })),
            None => notes.push("no capacity given: the capacity normalization is not drawn".to_string()),
        }
        let idle = windows.iter().filter(|i| i.jain.is_none()).count();
        if idle > 0 {
            notes.push(format!("{idle} window(s) without usage have no index: gaps in the lines"));
        }
        let n = self.accounts.len();
        let top = (
            jain_series,
            LineChart {
                width,
                title: format!("Fairness: Jain's index of the {n} accounts at depth {}", self.depth),
                subtitle: format!(
                    "Per window, over delivered ÷ entitled share: 1 when every account got the same multiple of its \
                     entitlement, 1/{n} when one got everything."
                ),
                y_label: "Jain's index".into(),
                unit_range: true,
                notes,
                legend_note: None,
                styles: None,
            },
        );

        let period = self.period_delivered();
        let total: f64 = period.iter().sum();
        let mut shown: Vec<usize> = (0..n).collect();
        let gap = |a: usize| if total > 0.0 { (period[a] / total - self.entitled[a]).abs() } else { 0.0 };
        shown.sort_by(|&a, &b| gap(b).total_cmp(&gap(a)).then(a.cmp(&b)));
        shown.truncate(8);
        shown.sort_unstable();
        let mut lines = Vec::new();
        let mut styles = Vec::new();
        for (k, &a) in shown.iter().enumerate() {
            let delivered = windows
                .iter()
                .enumerate()
                .map(|(w, i)| if i.total > 0.0 { self.delivered[w][a] / i.total } else { f64::NAN })
                .collect();
            lines.push(Series { name: self.accounts[a].clone(), times: ends.clone(), values: delivered, band: None });
            styles.push(k);
            let entitled = vec![self.entitled[a]; ends.len()];
            let name = format!("{} entitled", self.accounts[a]);
            lines.push(Series { name, times: ends.clone(), values: entitled, band: None });
            styles.push(k + 8);
        }
        let which = if shown.len() < n {
            format!("The {} of {n} accounts furthest from their entitlement over the period. ", shown.len())
        } else {
            String::new()
        };
        let bottom = (
            lines,
            LineChart {
                width,
                title: "Delivered share against entitled share".into(),
                subtitle: format!(
                    "{which}Solid: the account's share of the usage delivered in the window; dashed: its entitled share."
                ),
                y_label: "share of the usage delivered".into(),
                unit_range: false,
                notes: Vec::new(),
                legend_note: None,
                styles: Some(styles),
            },
        );
        [top, bottom]
    }
}

/// `2026-01-08 00:00` (UTC).
fn date(t: i64) -> String {
    TimeFormat::Minutes.format(t)
}

/// A usage for the report: `12.3M`.
fn short(v: f64) -> String {
    short_number(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jain's index as its definition reads, term by term.
    fn jain_by_definition(x: &[f64]) -> Option<f64> {
        let n = x.len() as f64;
        let mut sum = 0.0;
        let mut squares = 0.0;
        for v in x {
            sum += v;
            squares += v * v;
        }
        if squares == 0.0 { None } else { Some(sum * sum / (n * squares)) }
    }

    #[test]
    fn jain_on_hand_cases() {
        for v in [0.3, 1.0, 7e5] {
            let j = jain(&[v; 7]).unwrap();
            assert!((j - 1.0).abs() < 1e-15, "{v}: {j}");
        }
        for n in 1..10 {
            let mut x = vec![0.0; n];
            x[n / 2] = 42.0;
            assert_eq!(jain(&x), Some(1.0 / n as f64), "n = {n}");
        }
        // Two of four hold everything, equally: 2/4.
        assert_eq!(jain(&[0.0, 3.0, 3.0, 0.0]), Some(0.5));
        assert_eq!(jain(&[]), None);
        assert_eq!(jain(&[0.0; 3]), None);
    }

    proptest::proptest! {
        #[test]
        fn jain_matches_its_definition(x in proptest::collection::vec(0.0f64..1e6, 1..40)) {
            let (got, want) = (jain(&x), jain_by_definition(&x));
            match (got, want) {
                (Some(g), Some(w)) => {
                    proptest::prop_assert!((g - w).abs() <= 1e-12 * w, "{g} vs {w}");
                    proptest::prop_assert!(g <= 1.0 + 1e-12 && g >= 1.0 / x.len() as f64 - 1e-12);
                }
                (g, w) => proptest::prop_assert_eq!(g, w),
            }
        }
    }

    #[test]
    fn indices_of_a_fair_and_an_unfair_window() {
        let entitled = [0.5, 0.25, 0.25];
        // Delivered in proportion to the entitlement: no residual, J = 1.
        let fair = indices(&[200.0, 100.0, 100.0], &entitled, Some(1000.0));
        assert_eq!((fair.total, fair.ssr, fair.jain), (400.0, Some(0.0), Some(1.0)));
        // Capacity: 0.2, 0.1, 0.1 of the machine against 0.5, 0.25, 0.25; ratios 0.4 each.
        assert!((fair.capacity_ssr.unwrap() - (0.09 + 0.0225 + 0.0225)).abs() < 1e-12);
        assert_eq!(fair.capacity_jain, Some(1.0));
        // One account took everything.
        let hog = indices(&[0.0, 50.0, 0.0], &entitled, Some(50.0));
        assert!((hog.ssr.unwrap() - (0.25 + 0.5625 + 0.0625)).abs() < 1e-12);
        assert!((hog.jain.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        // On the capacity scale it used the whole machine: its excess does not count.
        assert!((hog.capacity_ssr.unwrap() - (0.25 + 0.0625)).abs() < 1e-12);
        assert!((hog.capacity_jain.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        // An account entitled to nothing counts in the residuals, not in Jain's index.
        let zero = indices(&[10.0, 10.0], &[1.0, 0.0], None);
        assert_eq!((zero.ssr, zero.jain, zero.capacity_ssr), (Some(0.5), Some(1.0), None));
        let idle = indices(&[0.0, 0.0, 0.0], &entitled, Some(10.0));
        assert_eq!((idle.ssr, idle.jain, idle.capacity_jain), (None, None, None));
        assert_eq!(idle.capacity_ssr, Some(0.375));
    }

    #[test]
    fn parent_shares_join_the_level_above() {
        // root → a (2), p (parent) → [x (1), y (1), u (user, parent)], b (0)
        let parent = [0, 0, 0, 2, 2, 2, 0];
        let shares = [1.0, 2.0, 0.0, 1.0, 1.0, 0.0, 0.0];
        let flags = [false, false, true, false, false, true, false];
        let e = entitlements(&parent, &shares, &flags);
        // a, x, y share the root's level 2:1:1; p owns x's and y's; b has none.
        assert_eq!(e, vec![1.0, 0.5, 0.5, 0.25, 0.25, 0.0, 0.0]);
    }
}
