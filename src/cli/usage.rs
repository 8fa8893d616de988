//! Resolving the usage options (`--jobs`, `--decay`, ...) into a decay model and charging the
//! job records into a tree input.

use std::path::PathBuf;

use chrono_tz::Tz;
use fairshare::config::slurm_conf::parse_reset_period;
use fairshare::config::time::parse_time;
use fairshare::config::{QosTable, ResetPeriod, SlurmConf};
use fairshare::fairshare::Algorithm;
use fairshare::jobs::parse_timestamp;
use fairshare::tree::TreeInput;
use fairshare::usage::reset::{last_boundary, parse_timezone};
use fairshare::usage::swf::SwfTree;
use fairshare::usage::{ChargeReport, DecayModel, ExactDecay, JobFormat, SlurmDecay, charge_jobs};
use fairshare::{Error, Result};

use super::args::{DecayArg, JobsFormatArg, SwfTreeArg, UsageArgs};

/// The usage stage, resolved: where the records are and how to decay them.
pub(crate) struct UsageSettings {
    pub jobs: PathBuf,
    pub format: JobFormat,
    pub conf: Option<SlurmConf>,
    pub qos: Option<QosTable>,
    pub decay: DecayArg,
    pub now: i64,
    pub first_pass: Option<i64>,
    pub half_life: u32,
    pub calc_period: u32,
    pub reset_period: ResetPeriod,
    pub timezone: Tz,
    pub charge_job_end: bool,
}

fn time(text: &str, flag: &str) -> Result<i64> {
    parse_timestamp(text).map_err(|m| Error::Usage(format!("{flag}: {m}")))
}

fn seconds(text: &str, flag: &str) -> Result<u32> {
    parse_time(text).map(|t| t.slurm_knob_seconds()).map_err(|m| Error::Usage(format!("{flag}: {m}")))
}

impl UsageSettings {
    /// `None` without `--jobs`. Flags override slurm.conf, which overrides Slurm's defaults.
    ///
    /// # Errors
    /// Unreadable configuration, a missing `--now`, or a bad option value.
    pub fn resolve(u: &UsageArgs) -> Result<Option<Self>> {
        let Some(jobs) = &u.jobs else {
            return Ok(None);
        };
        let conf = u.slurm_conf.as_deref().map(fairshare::config::slurm_conf::read).transpose()?;
        let qos = u.qos.as_deref().map(fairshare::config::qos::read).transpose()?;
        let now = time(u.now.as_deref().ok_or_else(|| Error::Usage("--jobs needs --now".into()))?, "--now")?;
        let first_pass = u.first_pass.as_deref().map(|t| time(t, "--first-pass")).transpose()?;
        let layout = match u.swf_tree {
            SwfTreeArg::GroupUser => SwfTree::GroupUser,
            SwfTreeArg::PartitionUser => SwfTree::PartitionUser,
        };
        let format = match u.jobs_format {
            Some(JobsFormatArg::Csv) => JobFormat::Csv,
            Some(JobsFormatArg::Parquet) => JobFormat::Parquet,
            Some(JobsFormatArg::Sacct) => JobFormat::Sacct,
            Some(JobsFormatArg::Swf) => JobFormat::Swf(layout),
            None => match JobFormat::detect(jobs)? {
                JobFormat::Swf(_) => JobFormat::Swf(layout),
                f => f,
            },
        };
        let half_life = match &u.half_life {
            Some(t) => seconds(t, "--half-life")?,
            None => conf.as_ref().map_or(7 * 86_400, |c| c.priority_decay_half_life),
        };
        let calc_period = match &u.calc_period {
            Some(t) => seconds(t, "--calc-period")?.max(1),
            None => conf.as_ref().map_or(300, |c| c.priority_calc_period.max(1)),
        };
        let reset_period = match &u.reset_period {
            Some(p) => parse_reset_period(p).map_err(|m| Error::Usage(format!("--reset-period: {m}")))?,
            None => conf.as_ref().map_or(ResetPeriod::None, |c| c.priority_usage_reset_period),
        };
        let timezone = parse_timezone(&u.timezone).map_err(|m| Error::Usage(format!("--timezone: {m}")))?;
        let charge_job_end = conf.as_ref().is_some_and(|c| c.accounting_storage_enforce.charges_job_end());
        Ok(Some(UsageSettings {
            jobs: jobs.clone(),
            format,
            conf,
            qos,
            decay: u.decay,
            now,
            first_pass,
            half_life,
            calc_period,
            reset_period,
            timezone,
            charge_job_end,
        }))
    }

    /// The decay model for a fair-share pass with `algorithm` (Fair Tree charges running jobs on
    /// Slurm's first pass, classic does not).
    pub fn model(&self, algorithm: Algorithm) -> DecayModel {
        match self.decay {
            DecayArg::Slurm => {
                let c = i64::from(self.calc_period);
                // Passes aligned on the calc period: any aligned first pass at or before every job
                // start gives the same usage as the first job start rounded down to the period.
                let first_pass = self.first_pass.unwrap_or(0);
                let last_pass = first_pass + (self.now - first_pass).div_euclid(c) * c;
                DecayModel::Slurm(SlurmDecay {
                    half_life: self.half_life,
                    calc_period: self.calc_period,
                    first_pass,
                    now: self.now,
                    charge_job_end: self.charge_job_end,
                    fair_tree: algorithm == Algorithm::FairTree,
                    reset: last_boundary(self.reset_period, self.timezone, last_pass),
                })
            }
            DecayArg::Exact => DecayModel::Exact(ExactDecay {
                half_life: self.half_life,
                now: self.now,
                reset: last_boundary(self.reset_period, self.timezone, self.now),
            }),
        }
    }

    /// The tree the records are charged into: `tree` when given, else the tree an SWF trace
    /// implies.
    pub fn tree_input(&self, tree: Option<TreeInput>) -> Result<Option<TreeInput>> {
        match (tree, self.format) {
            (Some(t), _) => Ok(Some(t)),
            (None, JobFormat::Swf(layout)) => fairshare::usage::swf::tree(&self.jobs, layout).map(Some),
            (None, _) => Ok(None),
        }
    }

    /// Charges the records into the user associations of `input`, warning once on stderr about
    /// records that match no association.
    ///
    /// # Errors
    /// As [`charge_jobs`].
    pub fn apply(&self, input: &mut TreeInput, algorithm: Algorithm) -> Result<ChargeReport> {
        let report =
            charge_jobs(input, &self.jobs, self.format, self.conf.as_ref(), self.qos.as_ref(), self.model(algorithm))?;
        if let Some(first) = report.first_unmatched {
            eprintln!(
                "fairshare: warning: {} job record(s) match no association and charge nothing, e.g. job {first} in {}",
                report.unmatched,
                self.jobs.display()
            );
        }
        Ok(report)
    }

    /// The usage parameters, for the output metadata.
    pub fn metadata(&self, algorithm: Algorithm) -> Vec<(String, String)> {
        let model = self.model(algorithm);
        let mut m = vec![
            ("fairshare.decay", model.name().to_string()),
            ("fairshare.jobs", self.jobs.display().to_string()),
            ("fairshare.jobs_format", self.format.name().to_string()),
            ("fairshare.now", self.now.to_string()),
            ("fairshare.half_life", self.half_life.to_string()),
            ("fairshare.reset_period", format!("{:?}", self.reset_period).to_uppercase()),
            ("fairshare.timezone", self.timezone.name().to_string()),
        ];
        if let DecayModel::Slurm(d) = model {
            m.push(("fairshare.calc_period", d.calc_period.to_string()));
            m.push(("fairshare.first_pass", d.first_pass.to_string()));
            m.push(("fairshare.charge_job_end", d.charge_job_end.to_string()));
        }
        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}
