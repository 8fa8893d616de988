//! Charging job records to associations: resolve each record to its association, bill it, decay
//! it, and add it to the association's raw usage.
//!
//! The charger holds only per-association and per-distinct-TRES state, so a history of any length
//! streams through it in constant memory.

use std::path::Path;

use rustc_hash::FxHashMap;

use crate::config::tres::parse_tres_counts;
use crate::config::{PriorityFlags, QosTable, SlurmConf, billable};
use crate::error::{Error, Result};
use crate::tree::TreeInput;

use super::{ExactDecay, JobRef, SlurmDecay};

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
}

/// What a charging run saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChargeReport {
    /// Records read.
    pub records: u64,
    /// Records charged to an association.
    pub charged: u64,
    /// Records of jobs that never started (they cost nothing).
    pub not_started: u64,
    /// Records that match no association (they charge nothing, as in Slurm).
    pub unmatched: u64,
    /// The first unmatched record's job id, for the warning.
    pub first_unmatched: Option<u64>,
}

/// Resolves, bills and decays job records into per-association raw usage.
pub struct UsageCharger<'a> {
    /// `user \x1f account \x1f partition` (partition empty for the partition-less association).
    rows: FxHashMap<Box<str>, u32>,
    usage: Vec<f64>,
    conf: Option<&'a SlurmConf>,
    qos: Option<&'a QosTable>,
    model: DecayModel,
    /// Billing per `partition \x1f tres_alloc`, before the QOS factor; jobs repeat shapes.
    bills: FxHashMap<Box<str>, f64>,
    key: String,
    report: ChargeReport,
}

/// Past this many distinct (partition, TRES) shapes the billing cache starts over, to bound memory.
const BILL_CACHE_LIMIT: usize = 1 << 20;

impl<'a> UsageCharger<'a> {
    /// A charger for the user associations of `input`. Without a slurm.conf, every job is billed
    /// its allocated CPUs; without a QOS table, usage factors are 1.
    pub fn new(input: &TreeInput, conf: Option<&'a SlurmConf>, qos: Option<&'a QosTable>, model: DecayModel) -> Self {
        let mut rows = FxHashMap::default();
        let mut key = String::new();
        for (i, r) in input.records.iter().enumerate() {
            if let Some(user) = &r.user {
                assoc_key(&mut key, user, &r.account, r.partition.as_deref().unwrap_or(""));
                rows.insert(key.as_str().into(), i as u32);
            }
        }
        UsageCharger {
            rows,
            usage: vec![0.0; input.records.len()],
            conf,
            qos,
            model,
            bills: FxHashMap::default(),
            key,
            report: ChargeReport::default(),
        }
    }

    /// Charges one record read from `path`.
    ///
    /// # Errors
    /// A partition slurm.conf does not define, a QOS missing from the QOS dump, or a bad TRES
    /// string, naming the record's line.
    pub fn charge(&mut self, job: &JobRef<'_>, path: &Path) -> Result<()> {
        self.report.records += 1;
        let Some(start) = job.start else {
            self.report.not_started += 1;
            return Ok(());
        };
        let row = {
            assoc_key(&mut self.key, job.user, job.account, job.partition);
            match self.rows.get(self.key.as_str()) {
                Some(&r) => Some(r),
                None => {
                    assoc_key(&mut self.key, job.user, job.account, "");
                    self.rows.get(self.key.as_str()).copied()
                }
            }
        };
        let Some(row) = row else {
            self.report.unmatched += 1;
            self.report.first_unmatched.get_or_insert(job.job_id);
            return Ok(());
        };
        let bill = self.bill(job, path)? * self.usage_factor(job, path)?;
        self.usage[row as usize] += self.model.job_usage(start, job.end, bill);
        self.report.charged += 1;
        Ok(())
    }

    fn bill(&mut self, job: &JobRef<'_>, path: &Path) -> Result<f64> {
        self.key.clear();
        self.key.push_str(job.partition);
        self.key.push('\x1f');
        self.key.push_str(job.tres_alloc);
        if let Some(&b) = self.bills.get(self.key.as_str()) {
            return Ok(b);
        }
        let (weights, flags) = match self.conf {
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
        if self.bills.len() >= BILL_CACHE_LIMIT {
            self.bills.clear();
        }
        self.bills.insert(self.key.as_str().into(), b);
        Ok(b)
    }

    fn usage_factor(&self, job: &JobRef<'_>, path: &Path) -> Result<f64> {
        let (Some(table), false) = (self.qos, job.qos.is_empty()) else {
            return Ok(1.0);
        };
        match table.get(job.qos) {
            // Slurm ignores a negative factor (the "unset" value).
            Some(q) => Ok(if q.usage_factor >= 0.0 { q.usage_factor } else { 1.0 }),
            None => Err(Error::input(path, job.line, format!("QOS {:?} is not in the QOS dump", job.qos))),
        }
    }

    /// Writes the charged usage into the user associations of `input` (the one the charger was
    /// made from), and into every account the sum of the users below it, as Slurm's accounts hold
    /// it; returns the report.
    pub fn finish(self, input: &mut TreeInput) -> ChargeReport {
        let mut usage = self.usage;
        let row_of: FxHashMap<u64, usize> = input.records.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        for i in 0..input.records.len() {
            if input.records[i].user.is_none() {
                continue;
            }
            let u = usage[i];
            let mut parent = input.records[i].parent_id;
            // Bounded by the record count, so a cycle (reported later by the tree build) cannot hang.
            for _ in 0..input.records.len() {
                let Some(p) = parent.and_then(|id| row_of.get(&id).copied()) else { break };
                usage[p] += u;
                parent = input.records[p].parent_id;
            }
        }
        for (r, u) in input.records.iter_mut().zip(usage) {
            r.usage = u;
        }
        self.report
    }
}

fn assoc_key(key: &mut String, user: &str, account: &str, partition: &str) {
    key.clear();
    key.push_str(user);
    key.push('\x1f');
    key.push_str(account);
    key.push('\x1f');
    key.push_str(partition);
}
