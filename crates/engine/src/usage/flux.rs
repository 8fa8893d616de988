//! flux-accounting's usage stage (`flux account-update-usage`), emulated exactly.
//!
//! flux-accounting charges only finished jobs. A job costs
//! `round((nnodes·node_weight + ncores·core_weight + ngpus·gpu_weight) · elapsed, 5)` ([`job_usage`],
//! with the counts read from the job's resource set `R`, [`parse_r`]). Each association keeps `N`
//! usage bins of one half-life `P` each; bin 0 is the current period. One hourly run
//! ([`update_association`]) either leaves an association alone, rotates its bins (×`D` per step, the
//! oldest bin dropped), or adds its new jobs, and the branch taken carries the quirks of the Python
//! code (spec `flux.md` §5.3, Q1–Q5): only the last new job's `t_inactive` picks the period, the
//! "new period" branch stores historical usage in bin 0, and the period boundary
//! ([`check_end_hl`]) moves by at most one period per run. Bank usage is the sum over the tree
//! ([`bank_usages`]).
//!
//! [`FluxDbUsage`] runs all of this over a flux-accounting SQLite database: it loads what
//! update-usage reads, updates in memory, and writes back in one transaction what update-usage
//! writes, together with the result of update-fshare (computed elsewhere in the crate), so one
//! run replaces both cron steps. This module is the model only: the SQL (loading, writing back,
//! [`FluxUsageConfig::read`]) is [`crate::usage::flux_db::usage_state`].
//! [`clean_usage`] is the same bin model without the quirks, for plain job records.

use std::path::Path;

use fairshare_base::hash::{FastMap, FastSet};

use fairshare_base::error::{Error, Result};

/// `priority_decay_half_life` when `config_table` has no row: one week.
pub const DEFAULT_HALF_LIFE: f64 = 604_800.0;
/// `decay_factor` when `config_table` has no row.
pub const DEFAULT_DECAY_FACTOR: f64 = 0.5;
/// Bins per association when the reset period / half-life ratio is unusable.
pub const DEFAULT_BINS: usize = 4;

/// The usage parameters flux-accounting keeps in `config_table`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FluxUsageConfig {
    /// `P`: length of one bin, seconds (`priority_decay_half_life`).
    pub half_life: f64,
    /// `D`: factor applied to every bin at each rotation (`decay_factor`).
    pub decay_factor: f64,
    /// Weight of one node-second.
    pub node_weight: f64,
    /// Weight of one core-second.
    pub core_weight: f64,
    /// Weight of one GPU-second.
    pub gpu_weight: f64,
    /// `N`: bins per association.
    pub bins: usize,
}

impl Default for FluxUsageConfig {
    fn default() -> Self {
        FluxUsageConfig {
            half_life: DEFAULT_HALF_LIFE,
            decay_factor: DEFAULT_DECAY_FACTOR,
            node_weight: 1.0,
            core_weight: 0.0,
            gpu_weight: 0.0,
            bins: DEFAULT_BINS,
        }
    }
}

/// What `config_table` says, including the time of the last re-bin (0 when there was none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ConfigRows {
    pub(crate) cfg: FluxUsageConfig,
    pub(crate) reconfigure_time: f64,
}

impl FluxUsageConfig {
    /// Builds the configuration from `config_table` rows (`key`, `value`); a missing row keeps
    /// its default. `bins` is what a new association would get: `int(reset/half_life)` as at
    /// add-user, or `ceil(reset/half_life)` once a re-bin has run (`reconfigure_time` is set),
    /// falling back to 4 when that is not a positive number.
    ///
    /// # Errors
    /// A value that is not a finite number; `path` names the database in the message.
    pub fn from_rows<'a>(path: &Path, rows: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self> {
        Ok(parse_config(path, rows)?.cfg)
    }
}

pub(crate) fn parse_config<'a>(path: &Path, rows: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<ConfigRows> {
    let mut cfg = FluxUsageConfig::default();
    let mut reset: Option<f64> = None;
    let mut reconfigure_time: Option<f64> = None;
    for (key, value) in rows {
        // Python's float() accepts surrounding whitespace, and `nan` or `inf`: those would turn every
        // usage non-finite, to be blamed on a usage instead of on this row.
        let num = || match value.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            Ok(_) => Err(Error::input(path, None, format!("config_table: {key} = {value:?} is not a finite number"))),
            Err(_) => Err(Error::input(path, None, format!("config_table: {key} = {value:?} is not a number"))),
        };
        match key {
            "priority_decay_half_life" => cfg.half_life = num()?,
            "priority_usage_reset_period" => reset = Some(num()?),
            "decay_factor" => cfg.decay_factor = num()?,
            "node_weight" => cfg.node_weight = num()?,
            "core_weight" => cfg.core_weight = num()?,
            "gpu_weight" => cfg.gpu_weight = num()?,
            "reconfigure_time" => reconfigure_time = Some(num()?),
            _ => {}
        }
    }
    if let Some(reset) = reset {
        let ratio = reset / cfg.half_life;
        let n = if reconfigure_time.is_some() { ratio.ceil() } else { ratio.trunc() };
        if n.is_finite() && n > 0.0 {
            cfg.bins = n as usize;
        }
    }
    Ok(ConfigRows { cfg, reconfigure_time: reconfigure_time.unwrap_or(0.0) })
}

// ------------------------------------------------------------------------------------------------
// Per-job usage

/// Python's `round(x, digits)` for a float: the exact binary value rounded to `digits` decimals,
/// ties to even, then read back as the nearest double.
///
/// Rust's fixed-precision formatting is exact and rounds ties to even, as CPython's dtoa does.
///
/// ```
/// use fairshare_engine::usage::flux::py_round;
/// assert_eq!(py_round(0.015625, 5), 0.01562); // exact tie, 2 is even
/// assert_eq!(py_round(0.046875, 5), 0.04688); // exact tie, 7 is odd
/// ```
pub fn py_round(x: f64, digits: usize) -> f64 {
    format!("{x:.digits$}").parse().unwrap_or(x)
}

/// flux-accounting's usage of one job:
/// `round((nnodes·node_weight + ncores·core_weight + ngpus·gpu_weight) · elapsed, 5)`.
pub fn job_usage(nnodes: u64, ncores: u64, ngpus: u64, elapsed: f64, cfg: &FluxUsageConfig) -> f64 {
    let rate = (nnodes as f64 * cfg.node_weight) + (ncores as f64 * cfg.core_weight) + (ngpus as f64 * cfg.gpu_weight);
    py_round(rate * elapsed, 5)
}

/// The resource counts of one job's `R`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobResources {
    /// Number of broker ranks (nodes).
    pub nnodes: u64,
    /// Cores over all ranks.
    pub ncores: u64,
    /// GPUs over all ranks.
    pub ngpus: u64,
}

/// Reads the node, core and GPU counts from a job's resource set (`R` version 1, `R_lite`):
/// every entry adds its ranks, and its per-rank core and GPU counts times its ranks.
///
/// Returns `None` when flux's `ResourceSet` would reject it (not JSON, version ≠ 1, no `R_lite`,
/// a malformed idset); flux-accounting skips such jobs.
///
/// ```
/// use fairshare_engine::usage::flux::{parse_r, JobResources};
/// let r = r#"{"version":1,"execution":{"R_lite":[{"rank":"0-3","children":{"core":"0-7","gpu":"0-1"}}]}}"#;
/// assert_eq!(parse_r(r.as_bytes()), Some(JobResources { nnodes: 4, ncores: 32, ngpus: 8 }));
/// ```
pub fn parse_r(r: &[u8]) -> Option<JobResources> {
    let v: serde_json::Value = serde_json::from_slice(r).ok()?;
    if v.get("version")?.as_i64()? != 1 {
        return None;
    }
    let mut res = JobResources::default();
    for entry in v.get("execution")?.get("R_lite")?.as_array()? {
        let ranks = idset_len(entry.get("rank")?.as_str()?)?;
        let children = entry.get("children")?.as_object()?;
        let count = |kind: &str| match children.get(kind) {
            Some(ids) => idset_len(ids.as_str()?),
            None => Some(0),
        };
        res.nnodes = res.nnodes.checked_add(ranks)?;
        res.ncores = res.ncores.checked_add(ranks.checked_mul(count("core")?)?)?;
        res.ngpus = res.ngpus.checked_add(ranks.checked_mul(count("gpu")?)?)?;
    }
    Some(res)
}

/// Size of a flux idset (`0-3,5,7-8`, optionally in brackets); repeated ids count once, as in
/// `idset_decode`.
fn idset_len(s: &str) -> Option<u64> {
    let s = s.strip_prefix('[').and_then(|t| t.strip_suffix(']')).unwrap_or(s);
    if s.is_empty() {
        return Some(0);
    }
    let id = |t: &str| -> Option<u64> {
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        t.parse().ok()
    };
    let mut ranges = Vec::new();
    for part in s.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (id(a)?, id(b)?),
            None => (id(part)?, id(part)?),
        };
        if hi < lo {
            return None;
        }
        ranges.push((lo, hi));
    }
    ranges.sort_unstable();
    let mut total = 0u64;
    let mut next_free = 0u64; // first id not yet counted
    for (lo, hi) in ranges {
        let lo = lo.max(next_free);
        if lo <= hi {
            total = total.checked_add(hi - lo + 1)?;
        }
        next_free = next_free.max(hi.saturating_add(1));
    }
    Some(total)
}

// ------------------------------------------------------------------------------------------------
// One association, one run

/// The usage state of one association.
#[derive(Clone, Debug, PartialEq)]
pub struct AssocUsage {
    /// `job_usage_per_association_table` values by period; index 0 is the current period.
    pub bins: Vec<f64>,
    /// `job_usage_factor_table.last_job_timestamp`.
    pub last_job_timestamp: f64,
    /// `association_table.job_usage`.
    pub job_usage: f64,
}

impl AssocUsage {
    /// The state a re-bin leaves: `n` zero bins and `last_job_timestamp = 0`. `job_usage` is kept,
    /// as flux-accounting keeps it until the next run that writes it.
    pub fn reset_bins(&mut self, n: usize) {
        self.bins = vec![0.0; n];
        self.last_job_timestamp = 0.0;
    }
}

/// Which of update-usage's four branches an association took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageBranch {
    /// (1) No new jobs, same period: nothing is written.
    Unchanged,
    /// (2) No new jobs, the period rolled over: bins rotate, bin 0 becomes 0.
    Decayed,
    /// (3) New jobs in the current period: they are added to bin 0.
    CurrentPeriod,
    /// (4) New jobs in a new period: bins rotate and bin 0 gets the new historical total.
    NewPeriod,
}

/// What one run did to one association.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UsageUpdate {
    /// The branch taken.
    pub branch: UsageBranch,
    /// The historical usage computed; written to `job_usage` except in [`UsageBranch::Unchanged`].
    pub historical: f64,
    /// Σ usage of the new jobs.
    pub current: f64,
}

/// Rotates the bins one period: bin k+1 takes bin k × `decay_factor`, the oldest bin is dropped,
/// bin 0 becomes 0. Returns the sum of the rotated bins 1.. (the past usage).
pub fn decay(bins: &mut [f64], decay_factor: f64) -> f64 {
    for k in (1..bins.len()).rev() {
        bins[k] = bins[k - 1] * decay_factor;
    }
    if let Some(b0) = bins.first_mut() {
        *b0 = 0.0;
    }
    bins.iter().skip(1).fold(0.0, |s, &b| s + b)
}

/// One association in one run of update-usage (spec §5.3), in memory.
///
/// `new_jobs` are its `(t_inactive, usage)` pairs that passed the new-jobs filter; they are
/// sorted here by `t_inactive` (stably, as Python's sort). `end_hl` is the end of the current
/// half-life period as read at the start of the run, `half_life` is `P`.
///
/// Missing bins behave as SQL UPDATEs of missing rows: nothing is stored and bin 0 reads as 0.
pub fn update_association(
    assoc: &mut AssocUsage,
    new_jobs: &mut [(f64, f64)],
    end_hl: f64,
    now: f64,
    half_life: f64,
    decay_factor: f64,
) -> UsageUpdate {
    new_jobs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let current = new_jobs.iter().fold(0.0, |s, j| s + j.1);
    let last = new_jobs.last().map_or(0.0, |j| j.0);
    if !new_jobs.is_empty() {
        assoc.last_job_timestamp = last;
    }
    let sum_rest = |bins: &[f64]| bins.iter().skip(1).fold(0.0, |s, &b| s + b);
    let (branch, historical) = if new_jobs.is_empty() && end_hl > now - half_life {
        (UsageBranch::Unchanged, assoc.bins.iter().fold(0.0, |s, &b| s + b))
    } else if new_jobs.is_empty() && end_hl < now - half_life {
        let hist = decay(&mut assoc.bins, decay_factor);
        if let Some(b0) = assoc.bins.first_mut() {
            *b0 = current;
        }
        (UsageBranch::Decayed, hist)
    } else if (last - end_hl) < half_life {
        // Q2: the last job alone decides, so earlier jobs of a past period land in bin 0 too.
        let b0 = current + assoc.bins.first().copied().unwrap_or(0.0);
        if let Some(slot) = assoc.bins.first_mut() {
            *slot = b0;
        }
        (UsageBranch::CurrentPeriod, b0 + sum_rest(&assoc.bins))
    } else {
        let hist = current + decay(&mut assoc.bins, decay_factor);
        // Q3: bin 0 holds the historical total, not the current usage.
        if let Some(b0) = assoc.bins.first_mut() {
            *b0 = hist;
        }
        (UsageBranch::NewPeriod, hist)
    };
    if branch != UsageBranch::Unchanged {
        assoc.job_usage = historical;
    }
    UsageUpdate { branch, historical, current }
}

/// The end of the half-life period after a run: advanced by one period when it lies more than a
/// period behind `now` (Q5: never by more than one).
pub fn check_end_hl(end_hl: f64, now: f64, half_life: f64) -> f64 {
    if end_hl < now - half_life { end_hl + half_life } else { end_hl }
}

/// What `reconfigure_usage_bins` (run after `edit-config` of the half-life, reset period or decay
/// factor) sets. Apply [`AssocUsage::reset_bins`] with `bins` to every association.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rebin {
    /// New bin count: `ceil(reset_period / half_life)`.
    pub bins: usize,
    /// New `end_half_life_period`: `now + half_life`.
    pub end_half_life_period: f64,
    /// New `reconfigure_time`: jobs inactive at or before it are never counted.
    pub reconfigure_time: f64,
}

/// flux-accounting's re-bin after a configuration change.
pub fn reconfigure_usage_bins(now: f64, half_life: f64, reset_period: f64) -> Rebin {
    Rebin {
        bins: (reset_period / half_life).ceil() as usize,
        end_half_life_period: now + half_life,
        reconfigure_time: now,
    }
}

/// `bank_table.job_usage` as update-usage writes it, in the order of its UPDATEs.
///
/// `banks` are `(bank, parent_bank)` rows in rowid order (`None` for a NULL parent), `assocs` are
/// `(bank, job_usage)` rows of ALL associations in rowid order. From the first bank whose parent is
/// `''`: a bank with no sub-bank rows gets the sum of its associations, a bank with sub-banks the
/// sum of its sub-banks (its own associations are ignored). Banks not under the root are not
/// written. A bank that is its own ancestor is not descended into again.
pub fn bank_usages<'a>(banks: &[(&'a str, Option<&str>)], assocs: &[(&str, f64)]) -> Vec<(&'a str, f64)> {
    walk_banks(banks, assocs).0
}

/// [`bank_usages`] and whether a cycle was cut.
pub(crate) fn walk_banks<'a>(banks: &[(&'a str, Option<&str>)], assocs: &[(&str, f64)]) -> (Vec<(&'a str, f64)>, bool) {
    let Some(root) = banks.iter().find(|b| b.1 == Some("")).map(|b| b.0) else {
        return (Vec::new(), false);
    };
    let mut subs: FastMap<&str, Vec<&'a str>> = FastMap::default();
    for &(bank, parent) in banks {
        if let Some(p) = parent {
            subs.entry(p).or_default().push(bank);
        }
    }
    // Sums in rowid order, as the Python loop adds them.
    let mut leaf: FastMap<&str, f64> = FastMap::default();
    for &(bank, usage) in assocs {
        *leaf.entry(bank).or_insert(0.0) += usage;
    }
    struct Walk<'m, 'a> {
        subs: &'m FastMap<&'m str, Vec<&'a str>>,
        leaf: &'m FastMap<&'m str, f64>,
        on_path: FastSet<&'a str>,
        writes: Vec<(&'a str, f64)>,
        cycle: bool,
    }
    fn visit<'a>(w: &mut Walk<'_, 'a>, bank: &'a str) -> f64 {
        if !w.on_path.insert(bank) {
            w.cycle = true;
            return 0.0;
        }
        let total = match w.subs.get(bank) {
            None => w.leaf.get(bank).copied().unwrap_or(0.0),
            Some(children) => {
                let mut total = 0.0;
                for &c in children {
                    total += visit(w, c);
                }
                total
            }
        };
        w.on_path.remove(bank);
        w.writes.push((bank, total));
        total
    }
    let mut w = Walk { subs: &subs, leaf: &leaf, on_path: FastSet::default(), writes: Vec::new(), cycle: false };
    visit(&mut w, root);
    (w.writes, w.cycle)
}

// ------------------------------------------------------------------------------------------------
// Clean variant

/// The bin model without the quirks: usage that became inactive k whole periods before `now`
/// (period k = `(now-(k+1)P, now-kP]`) weighs `D^k` for `k < bins`, and 0 afterwards. Jobs
/// inactive after `now` have not finished yet and count nothing; a non-positive or NaN half-life
/// gives 0.
pub fn clean_usage(jobs: impl Iterator<Item = (f64, f64)>, now: f64, cfg: &FluxUsageConfig) -> f64 {
    let p = cfg.half_life;
    if p.is_nan() || p <= 0.0 || cfg.bins == 0 {
        return 0.0;
    }
    let mut per_bin = vec![0.0; cfg.bins];
    for (t_inactive, usage) in jobs {
        let age = now - t_inactive;
        if age.is_nan() || age < 0.0 {
            continue;
        }
        let k = (age / p).floor();
        if k < cfg.bins as f64 {
            per_bin[k as usize] += usage;
        }
    }
    // Weights built by repeated ×D, as the rotations apply it.
    let mut weight = 1.0;
    let mut total = 0.0;
    for u in per_bin {
        total += u * weight;
        weight *= cfg.decay_factor;
    }
    total
}

// ------------------------------------------------------------------------------------------------
// A database's usage state, in memory

/// One `job_usage_factor_table` row.
#[derive(Clone, Debug)]
pub(crate) struct FactorRow {
    pub(crate) username: String,
    pub(crate) bank: String,
    /// Index of its `(userid, bank)` job group; `None` for a NULL userid (no job matches).
    pub(crate) group: Option<usize>,
    /// `None` for NULL: no job passes `t_inactive > NULL`.
    pub(crate) last: Option<f64>,
    pub(crate) last_written: bool,
}

/// One association and its state.
#[derive(Clone, Debug)]
pub(crate) struct DbAssoc {
    pub(crate) username: String,
    pub(crate) bank: String,
    /// Its `job_usage_factor_table` row, if any.
    pub(crate) factor: Option<usize>,
    /// The `period` of each bin, to write each value back to the row it came from.
    pub(crate) periods: Vec<i64>,
    pub(crate) state: AssocUsage,
    pub(crate) written: bool,
}

/// A job that passed the static part of the new-jobs filter.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DbJob {
    /// The `job_usage_factor_table` row it was joined with.
    pub(crate) factor: usize,
    pub(crate) t_inactive: f64,
    pub(crate) usage: f64,
}

/// Everything `flux account-update-usage` reads from a flux-accounting database, and the result of
/// running it in memory. [`load`](Self::load) and [`write_back`](Self::write_back) are in
/// [`crate::usage::flux_db::usage_state`].
///
/// ```no_run
/// # fn main() -> fairshare_base::Result<()> {
/// use fairshare_engine::usage::flux::FluxDbUsage;
/// let db = std::path::Path::new("FluxAccounting.db");
/// let mut usage = FluxDbUsage::load(db)?;
/// usage.update(1_760_000_000.0);
/// usage.write_back(db, &[])?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct FluxDbUsage {
    pub(crate) cfg: FluxUsageConfig,
    pub(crate) reconfigure_time: f64,
    pub(crate) end_hl: f64,
    pub(crate) end_hl_written: bool,
    pub(crate) assocs: Vec<DbAssoc>,
    pub(crate) factors: Vec<FactorRow>,
    /// Number of distinct `(userid, bank)` job groups.
    pub(crate) groups: usize,
    pub(crate) jobs: Vec<DbJob>,
    /// `(bank, parent_bank)` in rowid order.
    pub(crate) banks: Vec<(String, Option<String>)>,
    /// `bank_table.job_usage` UPDATEs of the last run, in order.
    pub(crate) bank_writes: Vec<(String, f64)>,
    /// Jobs skipped because their `R` or `t_run` was unusable.
    pub(crate) skipped_jobs: u64,
}

impl FluxDbUsage {
    /// One run of `flux account-update-usage` at time `now`, in memory: every association's
    /// branch (§5.3), then the bank sums, then [`check_end_hl`]. Can be called again for later
    /// runs; jobs already counted are not counted twice.
    pub fn update(&mut self, now: f64) {
        let (p, d) = (self.cfg.half_life, self.cfg.decay_factor);
        // The new jobs are selected once, before any association is updated.
        let mut by_group: Vec<Vec<(f64, f64)>> = vec![Vec::new(); self.groups];
        for job in &self.jobs {
            let f = &self.factors[job.factor];
            if let (Some(g), Some(last)) = (f.group, f.last)
                && job.t_inactive > last
            {
                by_group[g].push((job.t_inactive, job.usage));
            }
        }
        let mut scratch = Vec::new();
        for a in &mut self.assocs {
            scratch.clear();
            if let Some(g) = a.factor.and_then(|f| self.factors[f].group) {
                scratch.extend_from_slice(&by_group[g]);
            }
            let out = update_association(&mut a.state, &mut scratch, self.end_hl, now, p, d);
            if out.branch != UsageBranch::Unchanged {
                a.written = true;
            }
            if !scratch.is_empty()
                && let Some(f) = a.factor
            {
                self.factors[f].last = Some(a.state.last_job_timestamp);
                self.factors[f].last_written = true;
            }
        }
        let bank_rows: Vec<(&str, Option<&str>)> = self.banks.iter().map(|(b, p)| (b.as_str(), p.as_deref())).collect();
        let assoc_rows: Vec<(&str, f64)> = self.assocs.iter().map(|a| (a.bank.as_str(), a.state.job_usage)).collect();
        self.bank_writes = bank_usages(&bank_rows, &assoc_rows).into_iter().map(|(b, u)| (b.to_owned(), u)).collect();
        let next = check_end_hl(self.end_hl, now, p);
        if next != self.end_hl {
            self.end_hl = next;
            self.end_hl_written = true;
        }
    }

    /// `(username, bank, job_usage)` of every association in `association_table` rowid order,
    /// active or not: the usage the fair-share tree takes.
    pub fn job_usages(&self) -> impl Iterator<Item = (&str, &str, f64)> + '_ {
        self.assocs.iter().map(|a| (a.username.as_str(), a.bank.as_str(), a.state.job_usage))
    }

    /// The usage state of one association.
    pub fn association(&self, username: &str, bank: &str) -> Option<&AssocUsage> {
        self.assocs.iter().find(|a| a.username == username && a.bank == bank).map(|a| &a.state)
    }

    /// `(bank, job_usage)` as the last [`update`](Self::update) wrote them, in write order.
    pub fn bank_usages(&self) -> impl Iterator<Item = (&str, f64)> + '_ {
        self.bank_writes.iter().map(|(b, u)| (b.as_str(), *u))
    }

    /// The configuration read from `config_table`.
    pub fn config(&self) -> &FluxUsageConfig {
        &self.cfg
    }

    /// `end_half_life_period`, after the last [`update`](Self::update).
    pub fn end_half_life_period(&self) -> f64 {
        self.end_hl
    }

    /// `reconfigure_time` from `config_table` (0 when unset).
    pub fn reconfigure_time(&self) -> f64 {
        self.reconfigure_time
    }

    /// Jobs that passed the filter but were skipped for an unparsable `R` or a missing `t_run`.
    pub fn skipped_jobs(&self) -> u64 {
        self.skipped_jobs
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const WEEK: f64 = 604_800.0;

    fn assoc(bins: &[f64]) -> AssocUsage {
        AssocUsage { bins: bins.to_vec(), last_job_timestamp: 0.0, job_usage: 0.0 }
    }

    /// A job's `R` with one entry of ranks, cores and optionally GPUs (also for the database tests).
    pub(crate) fn r_json(rank: &str, core: &str, gpu: Option<&str>) -> String {
        let gpu = gpu.map(|g| format!(r#","gpu":"{g}""#)).unwrap_or_default();
        format!(
            r#"{{"version":1,"execution":{{"R_lite":[{{"rank":"{rank}","children":{{"core":"{core}"{gpu}}}}}],"starttime":0,"expiration":0}}}}"#
        )
    }

    /// A t1006-style job: `(t_inactive, usage)` for `nnodes` nodes over `elapsed` seconds.
    fn job(t_inactive: f64, nnodes: u64, elapsed: f64) -> (f64, f64) {
        (t_inactive, job_usage(nnodes, 0, 0, elapsed, &FluxUsageConfig::default()))
    }

    #[test]
    fn py_round_matches_python() {
        // Ties on the exact binary value go to even, as CPython's round().
        assert_eq!(py_round(0.015625, 5), 0.01562);
        assert_eq!(py_round(0.046875, 5), 0.04688);
        assert_eq!(py_round(2.5, 0), 2.0);
        assert_eq!(py_round(0.125, 2), 0.12);
        assert_eq!(py_round(0.375, 2), 0.38);
        // Not ties: the binary value decides. 1.000005 is stored as 1.00000500000000003…, 4.500005
        // as 4.50000499999999981…; Python gives 1.00001 and 4.5.
        assert_eq!(py_round(1.000005, 5), 1.00001);
        assert_eq!(py_round(4.500005, 5), 4.5);
        assert_eq!(py_round(2.675, 2), 2.67);
        assert_eq!(py_round(123_456_789.123_455, 5), 123_456_789.123_46);
        assert_eq!(py_round(1e300, 5), 1e300);
        assert_eq!(py_round(-0.000001, 5).to_bits(), (-0.0f64).to_bits());
        assert!(py_round(f64::INFINITY, 5).is_infinite());
    }

    #[test]
    fn r_parsing() {
        let r = r#"{"version":1,"execution":{"R_lite":[{"rank":"0-3,5,7-8","children":{"core":"0-7","gpu":"0-1"}},{"rank":"10","children":{"core":"0-3"}}],"nodelist":["n[0-3,5,7-8,10]"]}}"#;
        assert_eq!(parse_r(r.as_bytes()), Some(JobResources { nnodes: 8, ncores: 7 * 8 + 4, ngpus: 14 }));
        assert_eq!(
            parse_r(r_json("[0-1]", "0,0,1", None).as_bytes()),
            Some(JobResources { nnodes: 2, ncores: 4, ngpus: 0 })
        );
        assert_eq!(parse_r(b"not json"), None);
        assert_eq!(parse_r(br#"{"version":2,"execution":{"R_lite":[]}}"#), None);
        assert_eq!(parse_r(br#"{"version":1,"execution":{}}"#), None);
        assert_eq!(parse_r(r_json("3-1", "0", None).as_bytes()), None);
        assert_eq!(parse_r(r_json("0-", "0", None).as_bytes()), None);
        assert_eq!(parse_r(r_json("0", "a", None).as_bytes()), None);
        assert_eq!(idset_len("0-3,2-5,9"), Some(7));
        assert_eq!(idset_len(""), Some(0));
    }

    #[test]
    fn config_rows() {
        let p = Path::new("test.db");
        let cfg = FluxUsageConfig::from_rows(p, []).unwrap();
        assert_eq!(cfg, FluxUsageConfig::default());
        // add-user floors the ratio; after a re-bin flux uses ceil.
        let rows = [("priority_usage_reset_period", "1000"), ("priority_decay_half_life", "300")];
        assert_eq!(FluxUsageConfig::from_rows(p, rows).unwrap().bins, 3);
        let rows =
            [("priority_usage_reset_period", "1000"), ("priority_decay_half_life", "300"), ("reconfigure_time", "5")];
        assert_eq!(FluxUsageConfig::from_rows(p, rows).unwrap().bins, 4);
        let rows = [("priority_usage_reset_period", "100"), ("priority_decay_half_life", "300")];
        assert_eq!(FluxUsageConfig::from_rows(p, rows).unwrap().bins, 4);
        let rows = [("decay_factor", " 0.1 "), ("gpu_weight", "10")];
        let cfg = FluxUsageConfig::from_rows(p, rows).unwrap();
        assert_eq!((cfg.decay_factor, cfg.gpu_weight, cfg.node_weight), (0.1, 10.0, 1.0));
        assert!(FluxUsageConfig::from_rows(p, [("core_weight", "x")]).is_err());
        let e = FluxUsageConfig::from_rows(p, [("decay_factor", "nan")]).unwrap_err().to_string();
        assert!(e.ends_with("test.db: config_table: decay_factor = \"nan\" is not a finite number"), "{e}");
    }

    /// t1023_weighted_usage.py: 1 node, 100 s.
    #[test]
    fn t1023_weighted_usage() {
        let p = Path::new("test.db");
        let cases: [(&[(&str, &str)], &str, Option<&str>, f64); 4] = [
            (&[], "0-3", Some("0"), 100.0),
            (&[("core_weight", "1")], "0-3", None, 500.0),
            (&[("gpu_weight", "10")], "0-3", Some("0-1"), 2100.0),
            (&[("core_weight", "0.5"), ("gpu_weight", "5")], "0-7", Some("0-1"), 1500.0),
        ];
        for (rows, core, gpu, expect) in cases {
            let mut all = vec![("node_weight", "1.0"), ("core_weight", "0.0"), ("gpu_weight", "0.0")];
            all.extend_from_slice(rows);
            let cfg = FluxUsageConfig::from_rows(p, all).unwrap();
            let res = parse_r(r_json("0", core, gpu).as_bytes()).unwrap();
            assert_eq!(job_usage(res.nnodes, res.ncores, res.ngpus, 100.0, &cfg), expect, "{rows:?}");
        }
        // node_weight row deleted: falls back to 1.0.
        let cfg = FluxUsageConfig::from_rows(p, [("core_weight", "0.0"), ("gpu_weight", "0.0")]).unwrap();
        let res = parse_r(r_json("0", "0-3", Some("0")).as_bytes()).unwrap();
        assert_eq!(job_usage(res.nnodes, res.ncores, res.ngpus, 100.0, &cfg), 100.0);
    }

    /// t1006_job_archive.py test_11/12/14: branch 3 with P = 1 week.
    #[test]
    fn t1006_current_period() {
        // 1002: 3 jobs × 2 nodes (2000, 2100, 2200 s), then 2 jobs × 1 node (2000, 2100 s).
        let mut jobs: Vec<(f64, f64)> = [(2, 2000.0), (2, 2100.0), (2, 2200.0), (1, 2000.0), (1, 2100.0)]
            .iter()
            .enumerate()
            .map(|(i, &(n, e))| job(9_000_000.0 + 10_000.0 * (i as f64 + 1.0), n, e))
            .collect();
        let mut a = assoc(&[256.0, 64.0, 16.0, 8.0]);
        let out = update_association(&mut a, &mut jobs, 9_900_000.0, 9_900_000.0, WEEK, 0.5);
        assert_eq!(out.branch, UsageBranch::CurrentPeriod);
        assert_eq!(out.current, 16700.0);
        assert_eq!(a.job_usage, 17044.0); // test_11
        assert_eq!(a.bins[0], 16956.0); // test_14
        assert_eq!(a.last_job_timestamp, 9_050_000.0);

        // 1001: 2 jobs × 1 node (2000, 2100 s).
        let mut jobs = vec![job(9_010_000.0, 1, 2000.0), job(9_020_000.0, 1, 2100.0)];
        let mut a = assoc(&[4096.0, 256.0, 32.0, 16.0]);
        update_association(&mut a, &mut jobs, 9_900_000.0, 9_900_000.0, WEEK, 0.5);
        assert_eq!(a.bins[0], 8196.0);
        assert_eq!(a.job_usage, 8500.0); // test_12
    }

    /// t1006 test_15/16/20: branches 4 and 2.
    #[test]
    fn t1006_rotations() {
        // test_15: a new 200 s job, end_hl = 0 → new period.
        let now = 100_000_000.0 + WEEK * 2.1;
        let mut a = assoc(&[8196.0, 256.0, 32.0, 16.0]);
        let out = update_association(&mut a, &mut [job(now - 10.0, 1, 200.0)], 0.0, now, WEEK, 0.5);
        assert_eq!(out.branch, UsageBranch::NewPeriod);
        assert_eq!(a.bins, [4442.0, 4098.0, 128.0, 16.0]); // Q3: bin 0 holds 200 + 4242
        assert_eq!(a.job_usage, 4442.0);

        // test_16: no jobs, end_hl = 0 → decay.
        let now = 10_000_000.0 + WEEK * 2.1;
        let out = update_association(&mut a, &mut [], 0.0, now, WEEK, 0.5);
        assert_eq!(out.branch, UsageBranch::Decayed);
        assert_eq!(a.bins, [0.0, 2221.0, 2049.0, 64.0]);
        assert_eq!(a.job_usage, 4334.0);

        // test_20: full run, DB end_hl = 10000001, 1002 has no new jobs.
        let mut b = assoc(&[16956.0, 64.0, 16.0, 8.0]);
        let out = update_association(&mut b, &mut [], 10_000_001.0, now, WEEK, 0.5);
        assert_eq!(out.branch, UsageBranch::Decayed);
        assert_eq!(b.bins, [0.0, 8478.0, 32.0, 8.0]);
        assert_eq!(b.job_usage, 8518.0);
        assert_eq!(check_end_hl(10_000_001.0, now, WEEK), 10_000_001.0 + WEEK);
    }

    /// t1019_recalculate_usage.py, the whole timeline.
    #[test]
    fn t1019_timeline() {
        // create-db at 0: half-life 15 min, reset 1 h → 4 bins, end_hl = 0 + 900.
        let (mut p, mut d) = (900.0, 0.5);
        let mut end_hl = 900.0;
        let mut reconfigure_time = 0.0;
        let mut a = assoc(&[0.0; 4]);
        let jobs = [(499.0, 599.0), (2300.0, 2400.0), (2100.0, 3100.0)];
        let cfg = FluxUsageConfig::default();
        let run = |a: &mut AssocUsage, end_hl: &mut f64, now: f64, p: f64, d: f64, reconf: f64| {
            let mut new: Vec<(f64, f64)> = jobs
                .iter()
                .filter(|j| j.1 <= now && j.1 > a.last_job_timestamp && j.1 > reconf)
                .map(|&(run, inactive)| (inactive, job_usage(1, 0, 0, inactive - run, &cfg)))
                .collect();
            let out = update_association(a, &mut new, *end_hl, now, p, d);
            *end_hl = check_end_hl(*end_hl, now, p);
            out.branch
        };

        assert_eq!(run(&mut a, &mut end_hl, 600.0, p, d, reconfigure_time), UsageBranch::CurrentPeriod);
        assert_eq!((a.job_usage, a.bins.as_slice()), (100.0, &[100.0, 0.0, 0.0, 0.0][..]));

        // t=1600: reset 1200 s, half-life 400 s.
        p = 400.0;
        let rebin = reconfigure_usage_bins(1600.0, p, 1200.0);
        assert_eq!(rebin, Rebin { bins: 3, end_half_life_period: 2000.0, reconfigure_time: 1600.0 });
        a.reset_bins(rebin.bins);
        (end_hl, reconfigure_time) = (rebin.end_half_life_period, rebin.reconfigure_time);
        assert_eq!((a.job_usage, a.bins.as_slice()), (100.0, &[0.0; 3][..])); // job_usage kept

        // t=2500: job 2 ends 2400; 2400 − 2000 = 400, not < 400 → branch 4.
        assert_eq!(run(&mut a, &mut end_hl, 2500.0, p, d, reconfigure_time), UsageBranch::NewPeriod);
        assert_eq!((a.job_usage, a.bins.as_slice()), (100.0, &[100.0, 0.0, 0.0][..]));
        assert_eq!(end_hl, 2400.0);

        // t=2600: decay factor 0.1 → re-bin.
        d = 0.1;
        let rebin = reconfigure_usage_bins(2600.0, p, 1200.0);
        a.reset_bins(rebin.bins);
        (end_hl, reconfigure_time) = (rebin.end_half_life_period, rebin.reconfigure_time);
        assert_eq!(end_hl, 3000.0);

        // t=3200: job 3 (2100–3100) → branch 3.
        assert_eq!(run(&mut a, &mut end_hl, 3200.0, p, d, reconfigure_time), UsageBranch::CurrentPeriod);
        assert_eq!((a.job_usage, a.bins.as_slice()), (1000.0, &[1000.0, 0.0, 0.0][..]));

        // t=3600: no jobs, 3000 < 3200 → decay by 0.1.
        assert_eq!(run(&mut a, &mut end_hl, 3600.0, p, d, reconfigure_time), UsageBranch::Decayed);
        assert_eq!((a.job_usage, a.bins.as_slice()), (100.0, &[0.0, 100.0, 0.0][..]));
        assert_eq!(end_hl, 3400.0);
    }

    #[test]
    fn quirks() {
        // Q2: a job from the previous period rides with the last job into the new-period branch.
        let mut a = assoc(&[10.0, 4.0]);
        let mut jobs = [(1900.0, 5.0), (950.0, 3.0)];
        let out = update_association(&mut a, &mut jobs, 800.0, 2100.0, 1000.0, 0.5);
        assert_eq!(out.branch, UsageBranch::NewPeriod);
        assert_eq!(a.bins, [13.0, 5.0]); // 8 + 10·0.5; the old bin 1 (4) is dropped
        assert_eq!(a.last_job_timestamp, 1900.0);
        // Branch 1 writes nothing, not even a stale job_usage.
        let mut a = AssocUsage { bins: vec![1.0, 2.0], last_job_timestamp: 5.0, job_usage: 99.0 };
        let out = update_association(&mut a, &mut [], 1000.0, 1500.0, 1000.0, 0.5);
        assert_eq!((out.branch, out.historical, a.job_usage), (UsageBranch::Unchanged, 3.0, 99.0));
        // end_hl exactly a period behind with no jobs: neither 1 nor 2; the job test runs with last = 0.
        let out = update_association(&mut a, &mut [], 500.0, 1500.0, 1000.0, 0.5);
        assert_eq!((out.branch, a.job_usage), (UsageBranch::CurrentPeriod, 3.0));
        // Q5: end_hl moves one period per run however far behind.
        assert_eq!(check_end_hl(0.0, 10_000.0, 1000.0), 1000.0);
        // Missing bins: nothing stored, job_usage still written.
        let mut a = assoc(&[]);
        update_association(&mut a, &mut [(10.0, 7.0)], 0.0, 20.0, 1000.0, 0.5);
        assert_eq!((a.bins.len(), a.job_usage), (0, 7.0));
    }

    #[test]
    fn bank_sums() {
        let banks = [
            ("root", Some("")),
            ("A", Some("root")),
            ("B", Some("root")),
            ("A1", Some("A")),
            ("lost", Some("nowhere")),
            ("C", Some("root")),
            ("Cx", Some("C")),
        ];
        let assocs = [("A1", 1.5), ("A", 100.0), ("B", 2.0), ("A1", 0.25), ("lost", 7.0), ("C", 9.0)];
        let w = bank_usages(&banks, &assocs);
        // Post-order; A's own association and "lost" are ignored; C with an empty sub-bank is 0.
        assert_eq!(w, [("A1", 1.75), ("A", 1.75), ("B", 2.0), ("Cx", 0.0), ("C", 0.0), ("root", 3.75)]);
        assert!(bank_usages(&[("x", Some("y"))], &[]).is_empty());
        let (_, cycle) = walk_banks(&[("r", Some("")), ("a", Some("r")), ("r", Some("a"))], &[]);
        assert!(cycle);
    }

    #[test]
    fn clean_usage_weights() {
        let cfg = FluxUsageConfig { half_life: 100.0, decay_factor: 0.5, bins: 3, ..Default::default() };
        let jobs = [
            (1000.0, 1.0),  // age 0: period 0
            (901.0, 2.0),   // age 99: period 0
            (900.0, 4.0),   // age 100: period 1
            (750.0, 8.0),   // period 2
            (700.0, 16.0),  // age 300: period 3, dropped
            (1001.0, 32.0), // not finished yet
        ];
        assert_eq!(clean_usage(jobs.into_iter(), 1000.0, &cfg), 3.0 + 4.0 * 0.5 + 8.0 * 0.25);
        assert_eq!(clean_usage(jobs.into_iter(), 1000.0, &FluxUsageConfig { half_life: 0.0, ..cfg }), 0.0);
    }
}
