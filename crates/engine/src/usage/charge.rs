//! Charging job records to associations: resolve each record to its association, bill it, decay
//! it, and add it to the association's raw usage.
//!
//! The charger holds only per-association and per-distinct-TRES state, so a history of any length
//! streams through it in constant memory.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// String-keyed maps.
type StrMap<V> = fairshare_base::hash::FastMap<Box<str>, V>;

use crate::config::tres::parse_tres_counts;
use crate::config::{PriorityFlags, QosTable, SlurmConf, Tres, billable};
use crate::tree::{AssocTres, SiblingOrder, TreeInput};
use fairshare_base::error::{Error, Result};
use fairshare_base::memory::{huge_vec, prefetch};
use fairshare_base::parallel::pull_parts;
use fairshare_base::read::time::{TIME_RANGE, check_time};

use super::exact_sum::{self, ExactSum};
use super::slurm_decay::DecayTables;
use super::tres::TresSums;
use super::{ExactDecay, JobRef, SlurmDecay};
use crate::tree::pair_index::{self, PairIndex};

/// How a job's billed seconds turn into usage at the evaluation instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DecayModel {
    /// Slurm's decay thread, pass by pass (closed form).
    Slurm(SlurmDecay),
    /// A continuous `2^(-age/half_life)`.
    Exact(ExactDecay),
}

impl DecayModel {
    /// The model's name, as the `--decay` flag and the output metadata spell it.
    pub fn name(&self) -> &'static str {
        match self {
            DecayModel::Slurm(_) => "slurm",
            DecayModel::Exact(_) => "exact",
        }
    }

    /// The usage at the evaluation instant of one job billed `billable` per second.
    pub fn job_usage(&self, start: i64, end: Option<i64>, billable: f64) -> f64 {
        match self {
            DecayModel::Slurm(d) => d.job_usage(start, end, billable),
            DecayModel::Exact(d) => d.job_usage(start, end, billable),
        }
    }

    /// The seconds left in a running job's time limit at the evaluation instant, per unit of a
    /// TRES (`grp_used_tres_run_secs`).
    pub fn job_run_secs(&self, start: i64, end: Option<i64>, time_limit: u32, usage_factor: f64) -> u64 {
        match self {
            DecayModel::Slurm(d) => d.job_run_secs(start, end, time_limit, usage_factor),
            DecayModel::Exact(d) => d.job_run_secs(start, end, time_limit, usage_factor),
        }
    }
}

/// Why a job record charges nothing. Each skipped record is counted under one reason: the first
/// its reader or the charger finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// The job never started (sacct's `Start` unset): it cost nothing.
    NotStarted,
    /// SWF: a job cancelled (status 5) with no run time (0 or unknown): it never ran.
    Cancelled,
    /// SWF: the submit time is unknown (`-1`): the job cannot be placed in time.
    UnknownSubmit,
    /// SWF: the run time is unknown (`-1`).
    UnknownRunTime,
    /// SWF: the wait time is unknown (`-1`), and `--swf-unknown-wait skip` skips such jobs.
    UnknownWait,
    /// SWF: neither allocated nor requested processors are known, or they are 0.
    NoProcessors,
    /// The record matches no association (it charges nothing, as in Slurm).
    Unmatched,
}

impl Skip {
    /// Every reason, in the order reports list them.
    pub const ALL: [Skip; 7] = [
        Skip::NotStarted,
        Skip::Cancelled,
        Skip::UnknownSubmit,
        Skip::UnknownRunTime,
        Skip::UnknownWait,
        Skip::NoProcessors,
        Skip::Unmatched,
    ];

    /// The reason's name in counts' keys (run.json's `job_records_<name>`, the Parquet
    /// metadata, Prometheus' `state` label).
    pub fn name(self) -> &'static str {
        match self {
            Skip::NotStarted => "not_started",
            Skip::Cancelled => "cancelled",
            Skip::UnknownSubmit => "unknown_submit",
            Skip::UnknownRunTime => "unknown_run_time",
            Skip::UnknownWait => "unknown_wait",
            Skip::NoProcessors => "no_processors",
            Skip::Unmatched => "unmatched",
        }
    }

    /// The reason in words, as messages say it.
    pub fn describe(self) -> &'static str {
        match self {
            Skip::NotStarted => "never started",
            Skip::Cancelled => "cancelled before running",
            Skip::UnknownSubmit => "unknown submit time",
            Skip::UnknownRunTime => "unknown run time",
            Skip::UnknownWait => "unknown wait",
            Skip::NoProcessors => "no processors",
            Skip::Unmatched => "no association",
        }
    }
}

/// Records skipped, per reason ([`Skip`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skipped([u64; Skip::ALL.len()]);

impl Skipped {
    /// Records skipped for any reason.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// (reason, count) of every reason, in [`Skip::ALL`]'s order, zeros included.
    pub fn iter(&self) -> impl Iterator<Item = (Skip, u64)> + '_ {
        Skip::ALL.into_iter().map(|r| (r, self[r]))
    }
}

impl std::ops::Index<Skip> for Skipped {
    type Output = u64;

    fn index(&self, reason: Skip) -> &u64 {
        &self.0[reason as usize]
    }
}

impl std::ops::IndexMut<Skip> for Skipped {
    fn index_mut(&mut self, reason: Skip) -> &mut u64 {
        &mut self.0[reason as usize]
    }
}

/// What a charging run saw: every record read is charged or skipped for one reason.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChargeReport {
    /// Records read.
    pub records: u64,
    /// Records charged to an association.
    pub charged: u64,
    /// Records skipped (they charge nothing), per reason.
    pub skipped: Skipped,
    /// Records charged whose wait was unknown and taken as zero: started at their submit time
    /// (SWF, `--swf-unknown-wait zero`).
    pub started_at_submit: u64,
    /// The first unmatched record's job id and line (or row), for the warning.
    pub first_unmatched: Option<(u64, u64)>,
    /// Under Slurm's decay for the classic algorithm, each record's usage at the start of the last
    /// pass (after its reset, before its decay and charges; accounts summed as in the records'
    /// usage): classic's account values come from there (spec §4 step 2, §9 "Classic timing").
    pub pass_start: Option<Vec<f64>>,
}

impl ChargeReport {
    /// Adds the counts of another part of the same records. The first unmatched record is the
    /// one on the earliest line (ties: the lower job id), whatever order the parts come in: for
    /// parts of one file, the first in the file.
    pub fn add_counts(&mut self, other: &ChargeReport) {
        self.records += other.records;
        self.charged += other.charged;
        for reason in Skip::ALL {
            self.skipped[reason] += other.skipped[reason];
        }
        self.started_at_submit += other.started_at_submit;
        self.first_unmatched =
            [self.first_unmatched, other.first_unmatched].into_iter().flatten().min_by_key(|&(job, line)| (line, job));
    }

    /// The counts by name, as run.json's `rows` and (prefixed `fairshare.`) the Parquet
    /// metadata hold them: `job_records`, `job_records_charged`, `job_records_skipped`, one
    /// `job_records_<reason>` per [`Skip`] (zeros included, so the keys do not depend on the
    /// records), and `job_records_started_at_submit`.
    pub fn counts(&self) -> Vec<(String, u64)> {
        let mut counts = vec![
            ("job_records".to_string(), self.records),
            ("job_records_charged".to_string(), self.charged),
            ("job_records_skipped".to_string(), self.skipped.total()),
        ];
        counts.extend(self.skipped.iter().map(|(r, n)| (format!("job_records_{}", r.name()), n)));
        counts.push(("job_records_started_at_submit".to_string(), self.started_at_submit));
        counts
    }

    /// The report whose [`ChargeReport::counts`] `count` looks up by name (the skipped total is
    /// their sum; `first_unmatched` and `pass_start` unset).
    ///
    /// # Errors
    /// The name of the first count `count` does not have.
    pub fn from_counts(count: impl Fn(&str) -> Option<u64>) -> Result<ChargeReport, String> {
        let get = |name: &str| count(name).ok_or_else(|| name.to_string());
        let (records, charged) = (get("job_records")?, get("job_records_charged")?);
        let mut skipped = Skipped::default();
        for reason in Skip::ALL {
            skipped[reason] = get(&format!("job_records_{}", reason.name()))?;
        }
        Ok(ChargeReport {
            records,
            charged,
            skipped,
            started_at_submit: get("job_records_started_at_submit")?,
            first_unmatched: None,
            pass_start: None,
        })
    }
}

/// What every charging worker shares: the association lookup, the site and the decay model.
pub struct ChargeContext<'a> {
    pairs: PairIndex,
    rows: usize,
    conf: Option<&'a SlurmConf>,
    qos: Option<&'a QosTable>,
    model: DecayModel,
    progress: Option<Progress<'a>>,
    /// The cluster's TRES (with a slurm.conf), and whether their usage is kept per association
    /// (`AccountingStorageEnforce=limits`).
    tres: Option<(Vec<Tres>, bool)>,
    /// The model with what every job's charge takes again computed once.
    job_decay: JobDecay,
}

/// A [`DecayModel`] with what every job's charge takes again computed once.
enum JobDecay {
    /// Slurm's decay, tabled.
    Slurm(DecayTables),
    /// The exact decay and its rate per second.
    Exact(ExactDecay, f64),
}

/// Told `(done, total)` as a long read advances (bytes of a text file, row groups of Parquet);
/// an error stops the read there and is returned (how a caller interrupts a long charge).
pub type Progress<'a> = Box<dyn Fn(u64, u64) -> fairshare_base::Result<()> + Sync + 'a>;

impl<'a> ChargeContext<'a> {
    /// A context for the user associations of `input`. Without a slurm.conf, every job is billed
    /// its allocated CPUs; without a QOS table, usage factors are 1.
    pub fn new(input: &TreeInput, conf: Option<&'a SlurmConf>, qos: Option<&'a QosTable>, model: DecayModel) -> Self {
        let users: Vec<_> = input
            .records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.user.as_deref().map(|u| (i as u32, u, r.account.as_str(), r.partition.as_deref())))
            .collect();
        let pairs = PairIndex::new(&users);
        // slurmctld keeps per-TRES usage and run times only when it enforces limits.
        let tres = conf.map(|c| (c.tracked_tres(), c.accounting_storage_enforce.limits));
        let job_decay = match model {
            DecayModel::Slurm(d) => JobDecay::Slurm(d.tables()),
            DecayModel::Exact(d) => JobDecay::Exact(d, d.rate()),
        };
        ChargeContext { pairs, rows: input.records.len(), conf, qos, model, progress: None, tres, job_decay }
    }

    /// Reports progress of the parallel reads to `progress`.
    pub fn with_progress(mut self, progress: Progress<'a>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Calls the progress callback, if any.
    ///
    /// # Errors
    /// The callback's: the read stops.
    pub(crate) fn report_progress(&self, done: u64, total: u64) -> fairshare_base::Result<()> {
        match &self.progress {
            Some(p) => p(done, total),
            None => Ok(()),
        }
    }

    /// Looks up the association of each of `n` records (`key(i)`: record `i`'s user, account and
    /// partition), appending its row or [`pair_index::NONE`] to `out`, for
    /// [`UsageCharger::charge_at`]: a batch at a time, the lookups' misses overlap.
    pub(crate) fn find_batch<'k>(
        &self,
        n: usize,
        key: impl Fn(usize) -> (&'k str, &'k str, &'k str),
        out: &mut Vec<u32>,
    ) {
        self.pairs.find_batch(n, key, out);
    }

    /// [`DecayModel::job_usage`], with what every job takes again computed once.
    fn job_usage(&self, start: i64, end: Option<i64>, billable: f64) -> f64 {
        match &self.job_decay {
            JobDecay::Slurm(t) => t.job_usage(start, end, billable),
            JobDecay::Exact(d, rate) => d.job_usage_at_rate(start, end, billable, *rate),
        }
    }

    /// The number of records of the tree input.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// A charger with zero usage, summing per association as it goes.
    pub fn charger(&self) -> UsageCharger<'_, 'a> {
        let keeps_pass_start = self.keeps_pass_start();
        // The sums are added to at random by every record, as the lookup's table is read: on
        // huge pages, like it.
        UsageCharger {
            ctx: self,
            paired: keeps_pass_start.then(|| huge_vec(self.rows, PairedSums::default())),
            part: PartialUsage {
                sums: if keeps_pass_start { Vec::new() } else { huge_vec(self.rows, ExactSum::default()) },
                pass_start: keeps_pass_start.then(Vec::new),
                tres: self.tres.as_ref().map(|(names, kept)| {
                    if *kept {
                        let mut sums = TresSums::new(names.clone());
                        sums.expect_rows(self.rows);
                        sums
                    } else {
                        TresSums::untracked(names.clone())
                    }
                }),
                report: ChargeReport::default(),
            },
            partitions: StrMap::default(),
            qos_factors: StrMap::default(),
            tres_counts: StrMap::default(),
            pending: Vec::with_capacity(PENDING_BLOCK),
            shape_bills: Vec::new(),
            shape_factors: Vec::new(),
            shape_counts: Vec::new(),
        }
    }

    /// Whether a charger also keeps the usage at the last pass's start: under Slurm's decay
    /// thread, for classic.
    fn keeps_pass_start(&self) -> bool {
        matches!(self.model, DecayModel::Slurm(d) if !d.fair_tree)
    }

    /// Charges the parts of an input (row groups, blocks of lines) that `next` hands out, in
    /// input order, with their weights (rows, bytes) for progress, on every thread at once
    /// ([`pull_parts`]): each thread charges the parts it takes into a charger of its own (made at
    /// its first part: a charger costs per-association sums, 32 MB each at 10^6 associations),
    /// and the chargers are [`ChargeContext::gather`]ed at the end. Progress is reported on the
    /// calling thread, after each part it charged and at the end: the weight charged so far, and
    /// `total(done)`, the input's weight once `done` of it is charged.
    ///
    /// # Errors
    /// The first failing part's error, in input order, or the progress callback's.
    pub(crate) fn charge_parts<'c, T>(
        &'c self,
        next: impl FnMut() -> Result<Option<(T, u64)>> + Send,
        total: impl Fn(u64) -> u64 + Sync,
        charge: impl Fn(T, &mut UsageCharger<'c, 'a>) -> Result<()> + Sync,
    ) -> Result<UsageCharger<'c, 'a>> {
        let done = AtomicU64::new(0);
        let workers = pull_parts(
            next,
            || self.charger(),
            |charger, (part, weight)| {
                charge(part, charger)?;
                done.fetch_add(weight, Ordering::Relaxed);
                Ok(())
            },
            || {
                let done = done.load(Ordering::Relaxed);
                self.report_progress(done, total(done))
            },
        )?;
        Ok(self.gather(workers))
    }

    /// The workers of [`ChargeContext::charge_parts`] added into one charger (in any order: the
    /// sums are exact, and the report keeps the first unmatched record in file order).
    pub(crate) fn gather<'c>(&'c self, workers: Vec<UsageCharger<'c, 'a>>) -> UsageCharger<'c, 'a> {
        let mut workers = workers.into_iter();
        let mut total = workers.next().unwrap_or_else(|| self.charger());
        for worker in workers {
            total.absorb(worker);
        }
        total
    }
}

/// Resolves, bills and decays job records into per-association raw usage; one per worker.
pub struct UsageCharger<'c, 'a> {
    ctx: &'c ChargeContext<'a>,
    /// What it charged: exact sums per association and the counts.
    part: PartialUsage,
    /// Per partition: its billing weights' index and the billing of each TRES string seen, before
    /// the QOS factor (jobs repeat shapes).
    partitions: StrMap<PartitionBills>,
    /// Usage factor per QOS name seen.
    qos_factors: StrMap<f64>,
    /// Per TRES string seen, the id its counts have in the part's TRES sums
    /// ([`TresSums::add_counts`]; billing aside: it is per partition).
    tres_counts: StrMap<u32>,
    /// With the usage at the last pass's start kept (classic under Slurm's decay), a record's
    /// two sums side by side: a charge adds to one cache line instead of two. They move into
    /// `part.sums` and `part.pass_start` when the charger is done ([`UsageCharger::into_partial`]).
    paired: Option<Vec<PairedSums>>,
    /// Charges not yet added to the sums, (row, usage, usage at the last pass's start or 0):
    /// added a block at a time, so that the misses of a block's random rows overlap ([`add_all`]).
    pending: Vec<(u32, f64, f64)>,
    /// The billing and usage factor of each [`Shape`] of the batch being charged (NaN: not yet),
    /// and the id of the counts of each of its TRES strings ([`pair_index::NONE`]: not yet).
    shape_bills: Vec<f64>,
    shape_factors: Vec<f64>,
    shape_counts: Vec<u32>,
}

/// A record's association, when its reader looked it up already (a batch at a time,
/// [`ChargeContext::find_batch`]).
#[derive(Clone, Copy)]
enum Found {
    /// Not looked up yet.
    Unknown,
    /// The row, or [`pair_index::NONE`], and the record's [`Shape`] in its batch, if known.
    Row(u32, Option<Shape>),
}

/// Where a record's billing and QOS factor are kept for its batch ([`UsageCharger::new_shapes`]):
/// a batch whose partition, TRES and QOS columns are dictionaries bills each combination of
/// their values once, not each record.
#[derive(Clone, Copy)]
pub(crate) struct Shape {
    /// The index of (partition, TRES string) in the batch's billings.
    pub(crate) bill: usize,
    /// The index of the QOS in the batch's usage factors.
    pub(crate) qos: usize,
    /// The index of the TRES string in the batch's TRES strings.
    pub(crate) tres: usize,
}

/// A charge of a resolved job that the exact sums cannot take; nothing of the job is kept.
#[derive(Clone, Copy)]
enum OutOfRange {
    /// Its usage, or its usage at the start of the last pass.
    Usage(f64),
    /// One of its per-TRES charges.
    Tres(f64),
}

/// A record resolved to its association, with its start, billing per second and QOS factor.
#[derive(Clone, Copy)]
struct Resolved {
    row: u32,
    start: i64,
    billable: f64,
    factor: f64,
}

struct PartitionBills {
    bills: StrMap<f64>,
}

/// Past this many distinct TRES strings in a partition the billing cache starts over, to bound
/// memory.
const BILL_CACHE_LIMIT: usize = 1 << 16;

impl<'c, 'a> UsageCharger<'c, 'a> {
    /// What the charger charges against.
    pub(crate) fn context(&self) -> &'c ChargeContext<'a> {
        self.ctx
    }
}

impl UsageCharger<'_, '_> {
    /// Charges one record read from `path`.
    ///
    /// # Errors
    /// As [`UsageCharger::resolve`], or a usage that is not a finite number.
    pub fn charge(&mut self, job: &JobRef<'_>, path: &Path) -> Result<()> {
        self.charge_found(job, path, Found::Unknown)
    }

    /// Charges one record whose association `row` ([`pair_index::NONE`]: none) was looked up
    /// by [`ChargeContext::find_batch`], billed as its `shape` in the batch when it has one.
    ///
    /// # Errors
    /// As [`UsageCharger::charge`].
    pub(crate) fn charge_at(&mut self, job: &JobRef<'_>, path: &Path, row: u32, shape: Option<Shape>) -> Result<()> {
        self.charge_found(job, path, Found::Row(row, shape))
    }

    /// The counts so far, for a reader to complete.
    pub(crate) fn report_mut(&mut self) -> &mut ChargeReport {
        &mut self.part.report
    }

    /// Starts a batch of records with `bills` (partition, TRES string) and `factors` QOS
    /// [`Shape`]s, and `tres` TRES strings, none billed or counted yet.
    pub(crate) fn new_shapes(&mut self, bills: usize, factors: usize, tres: usize) {
        self.shape_bills.clear();
        self.shape_bills.resize(bills, f64::NAN);
        self.shape_factors.clear();
        self.shape_factors.resize(factors, f64::NAN);
        self.shape_counts.clear();
        self.shape_counts.resize(tres, pair_index::NONE);
    }

    /// Charges a record of a batch from its numbers alone (association `row` as looked up, its
    /// `shape`, times and time limit) when all it needs is known already: an association, a
    /// shape billed (and counted, when TRES are kept) by an earlier record of the batch, times in
    /// range and charges the exact sums can take. Otherwise returns `false` having changed
    /// nothing, and [`UsageCharger::charge_at`] charges the record, or names what is wrong with
    /// it. Records repeat shapes, so most of a batch never has its names read.
    pub(crate) fn charge_known(
        &mut self,
        row: u32,
        shape: Shape,
        start: Option<i64>,
        end: Option<i64>,
        time_limit: Option<u32>,
    ) -> bool {
        let (billable, factor) = (self.shape_bills[shape.bill], self.shape_factors[shape.qos]);
        let counts = self.shape_counts[shape.tres];
        let known = |t: i64| TIME_RANGE.contains(&t);
        let Some(start) = start.filter(|&s| known(s) && end.is_none_or(known)) else {
            return false;
        };
        let tres_kept = self.part.tres.as_ref().is_some_and(TresSums::is_kept);
        if row == pair_index::NONE
            || billable.is_nan()
            || factor.is_nan()
            || !(billable * factor).is_finite()
            || (tres_kept && counts == pair_index::NONE)
        {
            return false;
        }
        let counts = tres_kept.then_some(counts);
        if self.add_charges(Resolved { row, start, billable, factor }, end, time_limit, counts).is_err() {
            return false;
        }
        self.part.report.records += 1;
        self.part.report.charged += 1;
        true
    }

    fn charge_found(&mut self, job: &JobRef<'_>, path: &Path, found: Found) -> Result<()> {
        let Some(r) = self.resolve_billing(job, path, found)? else {
            return Ok(());
        };
        let counts = match self.part.tres.as_ref().is_some_and(TresSums::is_kept) {
            true => Some(self.tres_counts_of(job, path, found)?),
            false => None,
        };
        self.add_charges(r, job.end, job.time_limit, counts).map_err(|out| {
            let bill = r.billable * r.factor;
            match out {
                OutOfRange::Usage(usage) => usage_error(usage, job, bill, path),
                OutOfRange::Tres(charge) => Error::input(
                    path,
                    job.line,
                    format!(
                        "job {}: a TRES usage of {} seconds is beyond the {USAGE_LIMIT:e} fairshare sums exactly",
                        job.job_id,
                        shown(charge)
                    ),
                ),
            }
        })
    }

    /// Adds a resolved job's charges: its decayed usage, the same at the start of the last pass
    /// when kept, and its TRES when kept (`counts`, the id of its counts in the TRES sums):
    /// their decayed seconds (the usage over the billing, or decayed afresh when the job bills
    /// nothing) and the seconds left in its time limit, times each count. All or nothing: a
    /// charge out of the exact sums' range keeps none of the job's.
    fn add_charges(
        &mut self,
        r: Resolved,
        end: Option<i64>,
        time_limit: Option<u32>,
        counts: Option<u32>,
    ) -> std::result::Result<(), OutOfRange> {
        let bill = r.billable * r.factor;
        let summable = |u: f64| if (0.0..USAGE_LIMIT).contains(&u) { Ok(u) } else { Err(OutOfRange::Usage(u)) };
        // Classic under Slurm's decay also keeps the usage at the last pass's start.
        let (usage, before) = match &self.ctx.job_decay {
            JobDecay::Slurm(t) if self.part.pass_start.is_some() => {
                let (usage, before) = t.job_usages(r.start, end, bill);
                (summable(usage)?, Some(summable(before)?))
            }
            _ => (summable(self.ctx.job_usage(r.start, end, bill))?, None),
        };
        if let (Some(c), Some(sums)) = (counts, &mut self.part.tres) {
            let seconds =
                if r.billable > 0.0 { usage / r.billable } else { self.ctx.job_usage(r.start, end, r.factor) };
            let run_secs = time_limit.map_or(0, |l| self.ctx.model.job_run_secs(r.start, end, l, r.factor));
            // slurmctld sets a job's billing count to its billable TRES, truncated.
            sums.defer(r.row, seconds, run_secs, c, r.billable as u64).map_err(OutOfRange::Tres)?;
        }
        self.pending.push((r.row, usage, before.unwrap_or(0.0)));
        if self.pending.len() == PENDING_BLOCK {
            self.add_pending();
        }
        Ok(())
    }

    /// The id in the TRES sums of the counts of `job`'s TRES string, parsed once per string
    /// (and looked up once per batch when the record has a [`Shape`]).
    fn tres_counts_of(&mut self, job: &JobRef<'_>, path: &Path, found: Found) -> Result<u32> {
        let shape = match found {
            Found::Row(_, Some(shape)) => Some(shape.tres),
            _ => None,
        };
        if let Some(&c) = shape.map(|s| &self.shape_counts[s]).filter(|&&c| c != pair_index::NONE) {
            return Ok(c);
        }
        let c = match self.tres_counts.get(job.tres_alloc) {
            Some(&c) => c,
            None => {
                let parsed = parse_tres_counts(job.tres_alloc)
                    .map_err(|m| Error::input(path, job.line, format!("tres_alloc: {m}")))?;
                let sums = self.part.tres.as_mut().expect("called with TRES sums kept");
                if sums.counts_kept() >= BILL_CACHE_LIMIT {
                    self.tres_counts.clear();
                    sums.forget_counts();
                    self.shape_counts.fill(pair_index::NONE);
                }
                let counts: Vec<u64> = sums.names().iter().map(|t| parsed.get(t)).collect();
                let c = sums.add_counts(&counts);
                self.tres_counts.insert(job.tres_alloc.into(), c);
                c
            }
        };
        if let Some(s) = shape {
            self.shape_counts[s] = c;
        }
        Ok(c)
    }

    /// Counts a record and resolves it to (association row, start, billing per second with the
    /// QOS factor); `None` for a record skipped: its reader says why ([`JobRef::skip`]), it
    /// never started, or it matches no association.
    ///
    /// # Errors
    /// A start or end outside [`TIME_RANGE`], a partition slurm.conf does
    /// not define, a QOS missing from the QOS dump, a bad TRES string, or a billing that is not a
    /// finite number, naming the record's line.
    pub fn resolve(&mut self, job: &JobRef<'_>, path: &Path) -> Result<Option<(u32, i64, f64)>> {
        Ok(self.resolve_billing(job, path, Found::Unknown)?.map(|r| (r.row, r.start, r.billable * r.factor)))
    }

    /// [`UsageCharger::resolve`], keeping the billing and the QOS factor apart.
    fn resolve_billing(&mut self, job: &JobRef<'_>, path: &Path, found: Found) -> Result<Option<Resolved>> {
        self.part.report.records += 1;
        // Readers of binary times (Parquet, SWF offsets, a flux DB) check no range: every record
        // passes here.
        for (what, t) in [("start", job.start), ("end", job.end)] {
            if let Some(t) = t {
                check_time(t).map_err(|m| Error::input(path, job.line, format!("{what}: {m}")))?;
            }
        }
        let start = match (job.skip, job.start) {
            (None, Some(start)) => start,
            (reason, _) => {
                self.part.report.skipped[reason.unwrap_or(Skip::NotStarted)] += 1;
                return Ok(None);
            }
        };
        let (row, shape) = match found {
            Found::Unknown => (self.ctx.pairs.find(job.user, job.account, job.partition), None),
            Found::Row(row, shape) => (row, shape),
        };
        if row == pair_index::NONE {
            self.part.report.skipped[Skip::Unmatched] += 1;
            self.part.report.first_unmatched.get_or_insert((job.job_id, job.line));
            return Ok(None);
        }
        let billable = self.per_shape(shape.map(|s| s.bill), |c| &mut c.shape_bills, Self::bill, job, path)?;
        let factor = self.per_shape(shape.map(|s| s.qos), |c| &mut c.shape_factors, Self::usage_factor, job, path)?;
        let bill = billable * factor;
        if !bill.is_finite() {
            return Err(Error::input(
                path,
                job.line,
                format!(
                    "job {}: billing {} per second × UsageFactor {} of QOS {:?} is {bill}, not a finite number",
                    job.job_id,
                    shown(billable),
                    shown(factor),
                    job.qos
                ),
            ));
        }
        self.part.report.charged += 1;
        self.part.report.started_at_submit += u64::from(job.started_at_submit);
        Ok(Some(Resolved { row, start, billable, factor }))
    }

    /// Replaces the accumulated usage (one value per record), for models that derive it from
    /// their own per-association state.
    ///
    /// # Errors
    /// A value the exact sums cannot hold (negative, not finite, [`USAGE_LIMIT`] or more),
    /// naming its record of the tree input; the usage is then unchanged.
    ///
    /// # Panics
    /// If `usage` does not have one value per record.
    pub fn set_usage(&mut self, usage: Vec<f64>) -> Result<()> {
        assert_eq!(usage.len(), self.ctx.rows, "one usage value per record");
        let sums = usage
            .iter()
            .enumerate()
            .map(|(row, &u)| {
                ExactSum::of(u).map_err(|_| {
                    Error::Usage(format!(
                        "the usage of record {} of the tree is {u}, not a number from 0 to the {USAGE_LIMIT:e} \
                         billing-seconds fairshare sums exactly",
                        row + 1
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.part.sums = sums;
        self.pending.clear();
        self.paired = None;
        self.part.pass_start = None;
        self.part.tres = None;
        Ok(())
    }

    /// The counts alone, for callers that keep their own usage.
    pub fn finish_report(self) -> ChargeReport {
        self.part.report
    }

    /// `compute`'s value for `job`, kept in `cache` at `slot` (a [`Shape`]'s place) for the rest of
    /// the batch when the record has one.
    fn per_shape(
        &mut self,
        slot: Option<usize>,
        cache: fn(&mut Self) -> &mut Vec<f64>,
        compute: fn(&mut Self, &JobRef<'_>, &Path) -> Result<f64>,
        job: &JobRef<'_>,
        path: &Path,
    ) -> Result<f64> {
        if let Some(v) = slot.map(|s| cache(self)[s]).filter(|v| !v.is_nan()) {
            return Ok(v);
        }
        let v = compute(self, job, path)?;
        if let Some(s) = slot {
            cache(self)[s] = v;
        }
        Ok(v)
    }

    fn bill(&mut self, job: &JobRef<'_>, path: &Path) -> Result<f64> {
        if let Some(&b) = self.partitions.get(job.partition).and_then(|p| p.bills.get(job.tres_alloc)) {
            return Ok(b);
        }
        let (weights, flags) = match self.ctx.conf {
            Some(conf) => match conf.partition(job.partition) {
                Some(p) => (p.billing_weights.as_ref(), conf.priority_flags),
                None => {
                    return Err(Error::input(
                        path,
                        job.line,
                        format!("partition {:?} is not defined in slurm.conf", job.partition),
                    ));
                }
            },
            None => (None, PriorityFlags::default()),
        };
        let counts =
            parse_tres_counts(job.tres_alloc).map_err(|m| Error::input(path, job.line, format!("tres_alloc: {m}")))?;
        let b = billable(&counts, weights, flags);
        if !b.is_finite() {
            return Err(Error::input(
                path,
                job.line,
                format!(
                    "job {}: tres_alloc {:?} bills {b} per second with the TRESBillingWeights of partition {:?}, \
                     not a finite number",
                    job.job_id, job.tres_alloc, job.partition
                ),
            ));
        }
        let part =
            self.partitions.entry(job.partition.into()).or_insert_with(|| PartitionBills { bills: StrMap::default() });
        if part.bills.len() >= BILL_CACHE_LIMIT {
            part.bills.clear();
        }
        part.bills.insert(job.tres_alloc.into(), b);
        Ok(b)
    }

    fn usage_factor(&mut self, job: &JobRef<'_>, path: &Path) -> Result<f64> {
        let (Some(table), false) = (self.ctx.qos, job.qos.is_empty()) else {
            return Ok(1.0);
        };
        if let Some(&f) = self.qos_factors.get(job.qos) {
            return Ok(f);
        }
        let f = match table.get(job.qos) {
            // Slurm ignores a negative factor (the "unset" value).
            Some(q) => {
                if q.usage_factor >= 0.0 {
                    q.usage_factor
                } else {
                    1.0
                }
            }
            None => return Err(Error::input(path, job.line, format!("QOS {:?} is not in the QOS dump", job.qos))),
        };
        self.qos_factors.insert(job.qos.into(), f);
        Ok(f)
    }

    /// Adds another worker's usage and counts into this one, in any order: the sums are exact.
    pub fn absorb(&mut self, other: UsageCharger<'_, '_>) {
        self.flush();
        self.unpair();
        self.part.add(&other.into_partial());
    }

    /// Adds the pending charges.
    fn flush(&mut self) {
        self.add_pending();
        if let Some(tres) = &mut self.part.tres {
            tres.flush();
        }
    }

    /// Adds the pending usage charges to the sums.
    fn add_pending(&mut self) {
        let pending = &self.pending;
        match (&mut self.paired, &mut self.part.pass_start) {
            (Some(paired), _) => {
                add_all(pending, paired, |s, &(_, usage, before)| s.usage.add(usage).and(s.pass_start.add(before)));
            }
            (None, pass_start) => {
                add_all(pending, &mut self.part.sums, |s, &(_, usage, _)| s.add(usage));
                if let Some(sums) = pass_start {
                    add_all(pending, sums, |s, &(_, _, before)| s.add(before));
                }
            }
        }
        self.pending.clear();
    }

    /// Moves paired sums into `part.sums` and `part.pass_start`, charges added first.
    fn unpair(&mut self) {
        if let Some(paired) = self.paired.take() {
            self.part.sums = paired.iter().map(|s| s.usage).collect();
            self.part.pass_start = Some(paired.iter().map(|s| s.pass_start).collect());
        }
    }

    /// Writes the charged usage into the user associations of `input` (the one the context was
    /// made from), and into every account the sum of the users below it, as Slurm's accounts hold
    /// it; returns the report.
    ///
    /// # Errors
    /// A sum that is not a finite number, naming the job records (`path`) and the association.
    pub fn finish(self, input: &mut TreeInput, path: &Path) -> Result<ChargeReport> {
        self.into_partial().finish(input, path)
    }

    /// What this charger summed, apart from its context: a part of a record set's usage, to
    /// merge with the other parts' ([`PartialUsage::merge`]).
    pub fn into_partial(mut self) -> PartialUsage {
        self.flush();
        self.unpair();
        self.part
    }
}

/// The usage charged from one part of a record set (a file, a row group, a batch), per user
/// association row of the tree input, with its counts: merged with the other parts' in any
/// grouping and any order, it gives the same bits as the whole set charged at once (the sums
/// are exact, [`ExactSum`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PartialUsage {
    /// Per record of the tree input, the exact sum of its charges.
    pub sums: Vec<ExactSum>,
    /// The same at the start of the last pass, when the model keeps it (classic under Slurm's
    /// decay).
    pub pass_start: Option<Vec<ExactSum>>,
    /// Per-TRES usage and run times, when kept (`AccountingStorageEnforce=limits`).
    pub tres: Option<TresSums>,
    /// What the part's charging saw (its `pass_start` unset: that is `self.pass_start`).
    pub report: ChargeReport,
}

impl PartialUsage {
    /// Adds another part's usage and counts.
    ///
    /// # Errors
    /// The parts were charged into different trees, or one keeps the sums at the last pass's
    /// start and the other does not (different decay models); `self` is then unchanged.
    pub fn merge(&mut self, other: &PartialUsage) -> Result<()> {
        fn tres_names(p: &PartialUsage) -> Option<(&[Tres], bool)> {
            p.tres.as_ref().map(|t| (t.names(), t.is_kept()))
        }
        if tres_names(self) != tres_names(other) {
            return Err(Error::Usage(
                "parts of different charges cannot be merged: they keep different TRES (is \
                 AccountingStorageEnforce=limits set for one and not the other?)"
                    .into(),
            ));
        }
        if self.sums.len() != other.sums.len() || self.pass_start.is_some() != other.pass_start.is_some() {
            return Err(Error::Usage(format!(
                "parts of different charges cannot be merged: {} and {} associations, {} and {} pass-start sums",
                self.sums.len(),
                other.sums.len(),
                if self.pass_start.is_some() { "with" } else { "without" },
                if other.pass_start.is_some() { "with" } else { "without" },
            )));
        }
        self.add(other);
        Ok(())
    }

    /// Adds a part of the same shape (a worker of the same charge).
    fn add(&mut self, other: &PartialUsage) {
        let sum =
            |mine: &mut [ExactSum], theirs: &[ExactSum]| mine.iter_mut().zip(theirs).for_each(|(m, t)| m.merge(t));
        sum(&mut self.sums, &other.sums);
        if let (Some(mine), Some(theirs)) = (&mut self.pass_start, &other.pass_start) {
            sum(mine, theirs);
        }
        if let (Some(mine), Some(theirs)) = (&mut self.tres, &other.tres) {
            mine.add(theirs);
        }
        self.report.add_counts(&other.report);
    }

    /// Writes the usage into the user associations of `input` (the tree input the parts were
    /// charged into), and into every account the sum of the users below it, as Slurm's accounts
    /// hold it; returns the report. Every value is its exact sum, rounded once.
    ///
    /// # Errors
    /// A sum reaching [`USAGE_LIMIT`], naming the job records (`path`) and the association.
    pub fn finish(self, input: &mut TreeInput, path: &Path) -> Result<ChargeReport> {
        let up = Upward::new(input);
        let copies = user_copies(input);
        let sum_up = |mut usage: Vec<ExactSum>| -> Result<Vec<f64>> {
            share_among_copies(&copies, &mut usage, |a, b| a.merge(b));
            up.add_users_up(input, &mut usage, |a, b| a.merge(b));
            // A saturated sum can only grow up the tree: name the deepest, a user first.
            if let Some(row) = saturated(input, &usage, &up) {
                return Err(too_large(input, row, path));
            }
            Ok(fairshare_base::parallel::column(usage.len(), |i| usage[i].to_f64()))
        };
        // Three sweeps of one tree, each on its own core.
        let ((usage, pass_start), tres) = rayon::join(
            || rayon::join(|| sum_up(self.sums), || self.pass_start.map(sum_up).transpose()),
            || {
                // Without limits slurmctld keeps no per-TRES usage, but still prints its TRES.
                self.tres.map(|t| {
                    if t.is_kept() { tres_of_records(input, &up, &t) } else { AssocTres::untracked(t.names().to_vec()) }
                })
            },
        );
        let (usage, pass_start) = (usage?, pass_start?);
        for (r, u) in input.records.iter_mut().zip(usage) {
            r.usage = u;
        }
        input.tres = tres;
        Ok(ChargeReport { pass_start, ..self.report })
    }
}

/// How sums flow up the tree of a [`TreeInput`]: each record's parent row, and the records in an
/// order where every record comes after all the records below it. One sweep in that order adds
/// each user's value into every account above it, where a walk up from each user would cost one
/// lookup per level per user.
struct Upward {
    parent: Vec<Option<usize>>,
    /// Leaves first, each parent once all its children are done. The records of a cycle (which
    /// the tree build reports later) never are, so no sweep can go round one.
    order: Vec<usize>,
    /// Per record with children, its index among them (`NONE` for the rest): a sweep keeps the
    /// sums below a record for those only (a tenth of the records, in a large tree).
    parent_slot: Vec<u32>,
    parents: usize,
}

impl Upward {
    fn new(input: &TreeInput) -> Self {
        let row_of: fairshare_base::hash::FastMap<u64, usize> =
            input.records.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        let parent: Vec<Option<usize>> =
            input.records.iter().map(|r| r.parent_id.and_then(|id| row_of.get(&id).copied())).collect();
        let mut children = vec![0u32; parent.len()];
        for &p in parent.iter().flatten() {
            children[p] += 1;
        }
        let mut parents = 0;
        let parent_slot = children
            .iter()
            .map(|&c| match c {
                0 => pair_index::NONE,
                _ => {
                    parents += 1;
                    parents as u32 - 1
                }
            })
            .collect();
        let mut order: Vec<usize> = (0..parent.len()).filter(|&r| children[r] == 0).collect();
        let mut next = 0;
        while let Some(&r) = order.get(next) {
            next += 1;
            if let Some(p) = parent[r] {
                children[p] -= 1;
                if children[p] == 0 {
                    order.push(p);
                }
            }
        }
        Upward { parent, order, parent_slot, parents }
    }

    /// Adds every user's value in `values` (one per record) into each account above it, as
    /// Slurm's accounts hold the usage of the users below them.
    fn add_users_up<T: Clone + Default>(&self, input: &TreeInput, values: &mut [T], add: impl Fn(&mut T, &T)) {
        self.add_users_up_by(input, 1, values, add);
    }

    /// [`Self::add_users_up`] for `width` values per record (record `r`'s at `r * width..`), in
    /// one sweep: the per-TRES sums of a record share its cache lines.
    fn add_users_up_by<T: Clone + Default>(
        &self,
        input: &TreeInput,
        width: usize,
        values: &mut [T],
        add: impl Fn(&mut T, &T),
    ) {
        let row = |r: usize| r * width..(r + 1) * width;
        // Per record with children, the sum of the users below it.
        let mut below = vec![T::default(); self.parents * width];
        let below_of = |r: usize| match self.parent_slot[r] {
            pair_index::NONE => None,
            slot => Some(row(slot as usize)),
        };
        let mut carried = vec![T::default(); width];
        for &r in &self.order {
            let Some(p) = self.parent[r] else { continue };
            match below_of(r) {
                Some(b) => carried.clone_from_slice(&below[b]),
                None => carried.fill(T::default()),
            }
            if input.records[r].is_user() {
                carried.iter_mut().zip(&values[row(r)]).for_each(|(c, v)| add(c, v));
            }
            let into = below_of(p).expect("a parent has children");
            below[into].iter_mut().zip(&carried).for_each(|(b, c)| add(b, c));
        }
        for r in 0..self.parent.len() {
            if let Some(b) = below_of(r) {
                values[row(r)].iter_mut().zip(&below[b]).for_each(|(v, b)| add(v, b));
            }
        }
    }

    /// The number of records above record `i`. At most as many as there are records, so a cycle
    /// cannot hang the count.
    fn depth(&self, i: usize) -> usize {
        std::iter::successors(self.parent[i], |&p| self.parent[p]).take(self.parent.len()).count()
    }
}

/// The per-TRES columns of every record of `input`: each user's sums, and each account the sums of
/// the users below it (a TRES-second sum cannot reach 2^96 before the usage it comes with does).
fn tres_of_records(input: &TreeInput, up: &Upward, sums: &TresSums) -> AssocTres {
    let n = input.records.len();
    let k = sums.names().len();
    let (mut usage, mut run_secs) = sums.dense(n);
    rayon::join(
        || up.add_users_up_by(input, k, &mut usage, |a, b| a.merge(b)),
        || up.add_users_up_by(input, k, &mut run_secs, |a, b| *a = a.saturating_add(*b)),
    );
    let usage_raw = fairshare_base::parallel::column(usage.len(), |i| usage[i].to_f64());
    AssocTres { names: sums.names().to_vec(), usage_raw, run_secs }
}

/// The user rows of a flux tree that repeat an association of an earlier row (a bank that a
/// flux-accounting database lists under two parents is read under each, its users with it), each
/// with that row: `(copy, first)`. A Slurm tree has one row per association.
pub fn user_copies(input: &TreeInput) -> Vec<(usize, usize)> {
    if input.sibling_order != SiblingOrder::Input {
        return Vec::new();
    }
    let mut first: fairshare_base::hash::FastMap<(&str, &str, Option<&str>), usize> = Default::default();
    let mut copies = Vec::new();
    for (i, r) in input.records.iter().enumerate() {
        let Some(user) = &r.user else { continue };
        match first.entry((user, &r.account, r.partition.as_deref())) {
            std::collections::hash_map::Entry::Occupied(f) => copies.push((i, *f.get())),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
            }
        }
    }
    copies
}

/// Gives every copy of an association ([`user_copies`]) the usage charged to any of them (the
/// lookup charges one): `add` sums them into the first, which is then copied to the others.
pub fn share_among_copies<T: Copy>(copies: &[(usize, usize)], usage: &mut [T], add: impl Fn(&mut T, &T)) {
    for &(copy, first) in copies {
        let u = usage[copy];
        add(&mut usage[first], &u);
    }
    for &(copy, first) in copies {
        usage[copy] = usage[first];
    }
}

/// `usage`, the charge of `job` billed `bill` per second, when it is a finite number.
///
/// # Errors
/// Otherwise, naming the record.
pub(crate) fn finite_usage(usage: f64, job: &JobRef<'_>, bill: f64, path: &Path) -> Result<f64> {
    if usage.is_finite() {
        Ok(usage)
    } else {
        Err(Error::input(
            path,
            job.line,
            format!(
                "job {}: usage {usage} (billing {} per second in partition {:?}, QOS {:?}) is not a finite number",
                job.job_id,
                shown(bill),
                job.partition,
                job.qos
            ),
        ))
    }
}

/// `x` for a message: as is, or in exponent form from 10^15 on (a 1e308 has 309 digits).
fn shown(x: f64) -> String {
    if x.abs() < 1e15 { x.to_string() } else { format!("{x:e}") }
}

/// Charges a charger gathers before adding them ([`add_all`]).
const PENDING_BLOCK: usize = 1024;

/// How far ahead [`add_all`] prefetches: enough misses in flight to cover memory's latency.
const PREFETCH_AHEAD: usize = 16;

/// A record's usage and its usage at the last pass's start, in one cache line.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct PairedSums {
    usage: ExactSum,
    pass_start: ExactSum,
}

/// Adds pending charges `(row, ..)` to `sums[row]` with `add`, charges already checked to be
/// in [`ExactSum`]'s range by [`UsageCharger::add_charges`]. At 10^6 associations the sums
/// outgrow the caches and every add misses; prefetching the rows a few adds ahead overlaps the
/// misses.
fn add_all<S>(
    adds: &[(u32, f64, f64)],
    sums: &mut [S],
    add: impl Fn(&mut S, &(u32, f64, f64)) -> std::result::Result<(), exact_sum::OutOfRange>,
) {
    for (i, charge) in adds.iter().enumerate() {
        if let Some(&(ahead, ..)) = adds.get(i + PREFETCH_AHEAD) {
            prefetch(&sums[ahead as usize]);
        }
        let added = add(&mut sums[charge.0 as usize], charge);
        debug_assert!(added.is_ok(), "checked by add_charges");
    }
}

/// The largest usage, in billing-seconds, fairshare sums exactly ([`ExactSum`]'s 2^96).
pub const USAGE_LIMIT: f64 = 79_228_162_514_264_337_593_543_950_336.0;

/// The error of `usage`, the charge of `job` billed `bill` per second, which the exact sums cannot
/// take: not finite, negative, or [`USAGE_LIMIT`] or more.
fn usage_error(usage: f64, job: &JobRef<'_>, bill: f64, path: &Path) -> Error {
    if let Err(e) = finite_usage(usage, job, bill, path) {
        return e;
    }
    Error::input(
        path,
        job.line,
        format!(
            "job {}: usage {} (billing {} per second in partition {:?}, QOS {:?}) is beyond the {USAGE_LIMIT:e} \
             billing-seconds fairshare sums exactly",
            job.job_id,
            shown(usage),
            shown(bill),
            job.partition,
            job.qos
        ),
    )
}

/// The association whose usage reached [`USAGE_LIMIT`], if any: a user when one did, else the
/// deepest account.
fn saturated(input: &TreeInput, usage: &[ExactSum], up: &Upward) -> Option<usize> {
    let bad = |i: &usize| usage[*i].is_saturated();
    let user = (0..usage.len()).filter(bad).find(|&i| input.records[i].is_user());
    user.or_else(|| (0..usage.len()).filter(bad).max_by_key(|&i| up.depth(i)))
}

/// The error for the association at `row` of `input` whose usage (its own, or its users' for an
/// account) reaches [`USAGE_LIMIT`], naming the job records (`path`) and the association.
fn too_large(input: &TreeInput, row: usize, path: &Path) -> Error {
    let r = &input.records[row];
    let who = match &r.user {
        Some(u) => format!("user {u:?} in account {:?}", r.account),
        None => format!("account {:?}", r.account),
    };
    Error::input(
        path,
        None,
        format!(
            "the usage charged to {who} ({}:{}) reaches {USAGE_LIMIT:e} billing-seconds, beyond what fairshare \
             sums exactly",
            input.source.display(),
            r.line
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_own_count_and_name() {
        let mut report = ChargeReport { records: 30, charged: 2, started_at_submit: 1, ..ChargeReport::default() };
        for (k, reason) in Skip::ALL.into_iter().enumerate() {
            report.skipped[reason] = k as u64 + 1;
        }
        assert_eq!(report.skipped.total(), 28);
        let counts = report.counts();
        let names: Vec<&str> = counts.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "job_records",
                "job_records_charged",
                "job_records_skipped",
                "job_records_not_started",
                "job_records_cancelled",
                "job_records_unknown_submit",
                "job_records_unknown_run_time",
                "job_records_unknown_wait",
                "job_records_no_processors",
                "job_records_unmatched",
                "job_records_started_at_submit",
            ]
        );
        let values: Vec<u64> = counts.iter().map(|&(_, n)| n).collect();
        assert_eq!(values, [30, 2, 28, 1, 2, 3, 4, 5, 6, 7, 1]);
        let map: std::collections::HashMap<String, u64> = counts.into_iter().collect();
        assert_eq!(ChargeReport::from_counts(|k| map.get(k).copied()), Ok(report.clone()));
        assert_eq!(ChargeReport::from_counts(|_| None), Err("job_records".to_string()));
        // Two parts add up, reason by reason.
        let mut twice = report.clone();
        twice.add_counts(&report);
        assert_eq!((twice.records, twice.skipped[Skip::UnknownWait], twice.started_at_submit), (60, 10, 2));
    }
}
