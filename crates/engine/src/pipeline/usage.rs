//! The usage stage: job records charged into a tree's user associations under a decay model
//! (Slurm's decay passes, an exact decay, flux-accounting's bins), with its parameters resolved
//! from slurm.conf or Slurm's defaults.

use std::path::PathBuf;

use chrono_tz::Tz;

use super::Observer;
use super::embedded::shown;
use crate::config::{QosTable, ResetPeriod, SlurmConf};
use crate::pass::Algorithm;
use crate::tree::TreeInput;
use crate::usage::flux::FluxUsageConfig;
use crate::usage::flux_records::{FluxRecords, charge_flux_records};
use crate::usage::reset::last_boundary;
use crate::usage::{ChargeReport, ChargeRequest, DecayModel, ExactDecay, JobFormat, Skip, SlurmDecay, charge_jobs};
use fairshare_base::named::{Choice, Named};
use fairshare_base::{Error, Result};

/// How usage decays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decay {
    /// Slurm's decay thread: passes every PriorityCalcPeriod, `1 - 0.693/half_life` per second.
    Slurm,
    /// A continuous `2^(-age/half_life)` over each job's run.
    Exact,
    /// flux-accounting's bins as its cron-driven update-usage leaves them, quirks included.
    Flux,
    /// flux-accounting's bins without the quirks.
    FluxClean,
}

/// The decays' names on the command line, in site files and in output metadata.
impl Named for Decay {
    const CHOICES: &'static [Choice<Self>] = &[
        Choice::new(
            Decay::Slurm,
            "slurm",
            "Slurm's decay thread: passes every PriorityCalcPeriod, `1 - 0.693/half_life` per second",
        ),
        Choice::new(Decay::Exact, "exact", "A continuous `2^(-age/half_life)` over each job's run"),
        Choice::new(
            Decay::Flux,
            "flux",
            "flux-accounting's bins as its cron-driven update-usage leaves them, quirks included (completed jobs \
             only; runs every --flux-interval since --first-pass)",
        ),
        Choice::new(
            Decay::FluxClean,
            "flux-clean",
            "flux-accounting's bins without the quirks: a job inactive k half-lives ago weighs 0.5^k, for k below 4",
        ),
    ];
}

impl Decay {
    /// Whether usage is charged through flux-accounting's bins.
    pub fn is_flux(self) -> bool {
        matches!(self, Decay::Flux | Decay::FluxClean)
    }
}

/// The usage stage: where the records are and how to decay them.
#[derive(Debug, Clone)]
pub struct UsageConfig {
    /// The job records.
    pub jobs: PathBuf,
    /// Their format.
    pub format: JobFormat,
    /// The decay model.
    pub decay: Decay,
    /// The evaluation time: the usage is the state after the last pass at or before it.
    pub now: i64,
    /// The first decay pass (`None`: passes aligned on the calc period).
    pub first_pass: Option<i64>,
    /// PriorityDecayHalfLife, seconds (0: no decay).
    pub half_life: u32,
    /// PriorityCalcPeriod, seconds.
    pub calc_period: u32,
    /// PriorityUsageResetPeriod.
    pub reset_period: ResetPeriod,
    /// The timezone reset boundaries are in (slurmctld's local time).
    pub timezone: Tz,
    /// AccountingStorageEnforce charges a job's usage at its end only.
    pub charge_job_end: bool,
    /// `Decay::Flux`: seconds between two runs of flux-accounting's update-usage.
    pub flux_interval: i64,
    /// What-if billing weights (partition, weights) already applied to slurm.conf, recorded
    /// with the outputs.
    pub billing: Vec<(String, String)>,
}

impl UsageConfig {
    /// Slurm's decay of `jobs` at `now` with the knobs of `conf` (Slurm's defaults without one),
    /// in UTC, flux's update-usage hourly.
    pub fn new(jobs: PathBuf, format: JobFormat, now: i64, conf: Option<&SlurmConf>) -> Self {
        let slurm_defaults = SlurmConf::default();
        let base = conf.unwrap_or(&slurm_defaults);
        UsageConfig {
            jobs,
            format,
            decay: Decay::Slurm,
            now,
            first_pass: None,
            half_life: base.priority_decay_half_life,
            calc_period: base.priority_calc_period,
            reset_period: base.priority_usage_reset_period,
            timezone: chrono_tz::UTC,
            charge_job_end: conf.is_some_and(|c| c.accounting_storage_enforce.charges_job_end()),
            flux_interval: 3600,
            billing: Vec::new(),
        }
    }

    /// flux-accounting's own default half-life, which its decay models take when none is given
    /// (not slurm.conf's).
    pub fn flux_default_half_life() -> u32 {
        FluxUsageConfig::default().half_life as u32
    }

    /// The decay model for a fair-share pass with `algorithm` (Fair Tree charges running jobs on
    /// Slurm's first pass, classic does not).
    pub fn model(&self, algorithm: Algorithm) -> DecayModel {
        self.model_at(algorithm, self.now)
    }

    /// The decay model evaluating usage at `now`.
    pub fn model_at(&self, algorithm: Algorithm, now: i64) -> DecayModel {
        match self.decay {
            Decay::Slurm => {
                let c = i64::from(self.calc_period);
                // Passes aligned on the calc period: any aligned first pass at or before every job
                // start gives the same usage as the first job start rounded down to the period.
                let first_pass = self.first_pass.unwrap_or(0);
                let last_pass = first_pass + (now - first_pass).div_euclid(c) * c;
                DecayModel::Slurm(SlurmDecay {
                    half_life: self.half_life,
                    calc_period: self.calc_period,
                    first_pass,
                    now,
                    charge_job_end: self.charge_job_end,
                    fair_tree: algorithm == Algorithm::FairTree,
                    reset: last_boundary(self.reset_period, self.timezone, last_pass),
                })
            }
            // The flux models charge through `charge_flux_records`; as a per-job model (history),
            // their nearest continuous counterpart is the exact decay with flux's half-life.
            Decay::Exact | Decay::Flux | Decay::FluxClean => DecayModel::Exact(ExactDecay {
                half_life: self.half_life,
                now,
                reset: last_boundary(self.reset_period, self.timezone, now),
            }),
        }
    }

    /// The tree the records are charged into: `tree` when given, else the tree an SWF trace
    /// implies.
    ///
    /// # Errors
    /// The SWF trace cannot be read.
    pub fn tree_input(&self, tree: Option<TreeInput>) -> Result<Option<TreeInput>> {
        match (tree, self.format) {
            (Some(t), _) => Ok(Some(t)),
            (None, JobFormat::Swf(swf)) => crate::usage::swf::tree(&self.jobs, swf.tree).map(Some),
            (None, _) => Ok(None),
        }
    }

    /// Charges the records into the user associations of `input`; `observer` hears the progress,
    /// and then what [`UsageConfig::tell`] says.
    ///
    /// # Errors
    /// As [`charge_jobs`], or every record skipped ([`UsageConfig::check_charged`]).
    pub fn charge(
        &self,
        input: &mut TreeInput,
        conf: Option<&SlurmConf>,
        qos: Option<&QosTable>,
        algorithm: Algorithm,
        observer: &dyn Observer,
    ) -> Result<ChargeReport> {
        let report = if self.decay.is_flux() {
            let cfg = FluxUsageConfig { half_life: f64::from(self.half_life), ..FluxUsageConfig::default() };
            let emulate = (self.decay == Decay::Flux).then_some((self.first_pass, self.flux_interval));
            charge_flux_records(input, &self.jobs, self.format, &FluxRecords { cfg, now: self.now, emulate })?
        } else {
            let progress: crate::usage::Progress<'_> = Box::new(move |done, total| {
                observer.progress("charging job records", done, total, "");
                if observer.interrupted() { Err(Error::Interrupted("charging job records")) } else { Ok(()) }
            });
            let request =
                ChargeRequest { path: &self.jobs, format: self.format, conf, qos, model: self.model(algorithm) };
            charge_jobs(input, &request, Some(progress))?
        };
        self.check_charged(&report)?;
        self.tell(&report, observer);
        Ok(report)
    }

    /// Tells `observer` what the charging saw: that it is done, with a one-line summary of the
    /// records read, charged and skipped per reason ([`Observer::charged`]), and a warning about
    /// the records that match no association.
    pub fn tell(&self, report: &ChargeReport, observer: &dyn Observer) {
        observer.charged(&self.summary(report));
        if let Some((job, line)) = report.first_unmatched {
            observer.warning(&format!(
                "{} job record(s) match no association and charge nothing, e.g. job {job} at {}:{line}",
                report.skipped[Skip::Unmatched],
                self.jobs.display()
            ));
        }
    }

    /// `charged 120 of 132 job records (jobs.csv); skipped 12 (no association: 10, never
    /// started: 2)`, and for an SWF trace whose unknown waits were taken as zero, how many.
    pub fn summary(&self, report: &ChargeReport) -> String {
        let mut s = format!("charged {} of {} job records ({})", report.charged, report.records, shown(&self.jobs));
        if report.skipped.total() > 0 {
            s.push_str(&format!("; skipped {} ({})", report.skipped.total(), reasons(report)));
        }
        if report.started_at_submit > 0 {
            s.push_str(&format!(
                "; {} with an unknown wait started at their submit time (--swf-unknown-wait zero)",
                report.started_at_submit
            ));
        }
        s
    }

    /// Refuses a charge that skipped every record it read: its usage would be all zero, which
    /// says nothing about the site. The message says why they were skipped, and what would
    /// charge them where an option can.
    ///
    /// # Errors
    /// Records were read and none was charged.
    pub fn check_charged(&self, report: &ChargeReport) -> Result<()> {
        if report.records == 0 || report.charged > 0 {
            return Ok(());
        }
        let mut message = match report.records {
            1 => format!("its one job record cannot be charged: {}", reasons(report)),
            n => format!("none of the {n} job records can be charged: {}", reasons(report)),
        };
        if report.skipped[Skip::UnknownWait] > 0 {
            message.push_str(
                "; --swf-unknown-wait zero charges a job whose wait is unknown from its submit time, as if it \
                 started at once",
            );
        }
        if let Some((job, line)) = report.first_unmatched {
            message.push_str(&format!(
                "; no association of the tree has the user and account of job {job} (line {line}): is it this \
                 cluster's tree?"
            ));
        }
        Err(Error::input(&self.jobs, None, message))
    }

    /// The usage parameters, for the output metadata.
    pub fn metadata(&self, algorithm: Algorithm) -> Vec<(String, String)> {
        self.metadata_at(algorithm, self.now)
    }

    /// The usage parameters of the state at `now`.
    pub fn metadata_at(&self, algorithm: Algorithm, now: i64) -> Vec<(String, String)> {
        let model = self.model_at(algorithm, now);
        let decay = if self.decay.is_flux() { self.decay.name() } else { model.name() };
        let mut m = vec![
            ("fairshare.decay", decay.to_string()),
            ("fairshare.jobs", shown(&self.jobs)),
            ("fairshare.jobs_format", self.format.name().to_string()),
            ("fairshare.now", now.to_string()),
            ("fairshare.half_life", self.half_life.to_string()),
            ("fairshare.reset_period", format!("{:?}", self.reset_period).to_uppercase()),
            ("fairshare.timezone", self.timezone.name().to_string()),
        ];
        if let JobFormat::Swf(swf) = self.format {
            m.push(("fairshare.swf_unknown_wait", swf.unknown_wait.name().to_string()));
        }
        if let DecayModel::Slurm(d) = model {
            m.push(("fairshare.calc_period", d.calc_period.to_string()));
            m.push(("fairshare.first_pass", d.first_pass.to_string()));
            m.push(("fairshare.charge_job_end", d.charge_job_end.to_string()));
        }
        if !self.billing.is_empty() {
            // Weights hold commas: partitions are separated by `;`.
            let billing: Vec<String> = self.billing.iter().map(|(p, w)| format!("{p}={w}")).collect();
            m.push(("fairshare.billing", billing.join(";")));
        }
        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

/// The decay model a file's usage was evaluated with, from the parameters
/// [`UsageConfig::metadata_at`] recorded in its metadata (`fairshare.decay`, `fairshare.now`,
/// `fairshare.half_life`, ...), as [`UsageConfig::model_at`] built it.
///
/// # Errors
/// A parameter missing or unreadable, named with its key.
pub fn model_from_metadata(meta: &std::collections::HashMap<String, String>) -> Result<DecayModel, String> {
    let get = |key: &str| meta.get(key).map(String::as_str).ok_or_else(|| format!("no `{key}` in the metadata"));
    fn number<T: std::str::FromStr>(key: &str, text: &str) -> Result<T, String> {
        text.parse().map_err(|_| format!("`{key}` is {text:?}, not a number"))
    }
    let decay = get("fairshare.decay")?;
    let decay = Decay::of_name(decay).ok_or_else(|| format!("`fairshare.decay` is {decay:?}, not a decay model"))?;
    let algorithm = if meta.get("fairshare.algorithm").is_some_and(|a| a == Algorithm::FairTree.name()) {
        Algorithm::FairTree
    } else {
        Algorithm::Classic
    };
    let slurm = decay == Decay::Slurm;
    let config = UsageConfig {
        jobs: PathBuf::from(meta.get("fairshare.jobs").cloned().unwrap_or_default()),
        // The records' format plays no part in the model.
        format: JobFormat::Csv,
        decay,
        now: number("fairshare.now", get("fairshare.now")?)?,
        first_pass: if slurm { Some(number("fairshare.first_pass", get("fairshare.first_pass")?)?) } else { None },
        half_life: number("fairshare.half_life", get("fairshare.half_life")?)?,
        calc_period: if slurm { number("fairshare.calc_period", get("fairshare.calc_period")?)? } else { 300 },
        reset_period: crate::config::slurm_conf::parse_reset_period(get("fairshare.reset_period")?)
            .map_err(|m| format!("`fairshare.reset_period`: {m}"))?,
        timezone: crate::usage::reset::parse_timezone(get("fairshare.timezone")?)
            .map_err(|m| format!("`fairshare.timezone`: {m}"))?,
        charge_job_end: meta.get("fairshare.charge_job_end").is_some_and(|v| v == "true"),
        flux_interval: 3600,
        billing: Vec::new(),
    };
    if slurm && config.calc_period == 0 {
        return Err("`fairshare.calc_period` is 0".into());
    }
    Ok(config.model_at(algorithm, config.now))
}

/// The reasons records were skipped, with their counts: `no association: 10, never started: 2`.
fn reasons(report: &ChargeReport) -> String {
    let reasons: Vec<String> =
        report.skipped.iter().filter(|&(_, n)| n > 0).map(|(r, n)| format!("{}: {n}", r.describe())).collect();
    reasons.join(", ")
}
