//! Resolving the usage options (`--jobs`, `--decay`, ...) into a decay model and charging the
//! job records into a tree input.

use std::path::PathBuf;

use chrono_tz::Tz;
use fairshare::config::slurm_conf::{parse_calc_period, parse_half_life, parse_reset_period};
use fairshare::config::time::parse_duration;
use fairshare::config::{QosTable, ResetPeriod, SlurmConf};
use fairshare::fairshare::Algorithm;
use fairshare::jobs::parse_time_arg;
use fairshare::tree::TreeInput;
use fairshare::usage::flux::FluxUsageConfig;
use fairshare::usage::flux_records::{FluxRecords, charge_flux_records};
use fairshare::usage::reset::{last_boundary, parse_timezone};
use fairshare::usage::swf::SwfTree;
use fairshare::usage::{ChargeReport, DecayModel, ExactDecay, JobFormat, SlurmDecay, charge_jobs};
use fairshare::{Error, Result};

use super::args::{DecayArg, JobsFormatArg, SwfTreeArg, UsageArgs, UsageCmdArgs};
use fairshare::tree::AssocTree;

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
    pub flux_interval: i64,
    /// What-if `--billing` (partition, weights), recorded with the outputs.
    pub billing: Vec<(String, String)>,
    /// Which defaults stand in for site files not given, said once the usage is charged (an
    /// error alone is clearer without them).
    notes: Vec<String>,
}

fn time(text: &str, flag: &str) -> Result<i64> {
    parse_time_arg(text).map_err(|m| Error::Usage(format!("{flag}: {m}")))
}

/// A slurm.conf knob given as `flag`, read by the function the slurm.conf reader uses for it, so
/// that both accept the same values and refuse the same ones in the same words.
/// The flag may also use the short duration syntax (`14d`), as every duration flag does.
fn knob<T>(text: &str, flag: &str, parse: fn(&str) -> std::result::Result<T, String>) -> Result<T> {
    parse(&fairshare::config::time::as_slurm_time(text)).map_err(|m| Error::Usage(format!("{flag} {text}: {m}")))
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
        let mut conf = u.slurm_conf.as_deref().map(fairshare::config::slurm_conf::read).transpose()?;
        for (partition, weights) in &u.billing {
            let conf = conf.as_mut().ok_or_else(|| Error::Usage("--billing needs --slurm-conf".into()))?;
            let p = conf.partitions.iter_mut().find(|p| p.name == *partition).ok_or_else(|| {
                Error::Usage(format!("--billing: partition {partition:?} is not defined in slurm.conf"))
            })?;
            p.billing_weights = Some(
                fairshare::config::tres::parse_tres_weights(weights)
                    .map_err(|m| Error::Usage(format!("--billing {partition}={weights}: {m}")))?,
            );
        }
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
            Some(JobsFormatArg::FluxDb) => JobFormat::FluxDb,
            None => match JobFormat::detect(jobs)? {
                JobFormat::Swf(_) => JobFormat::Swf(layout),
                f => f,
            },
        };
        let slurm_defaults = SlurmConf::default();
        let base = conf.as_ref().unwrap_or(&slurm_defaults);
        let mut half_life = match &u.half_life {
            Some(t) => knob(t, "--half-life", parse_half_life)?,
            None => base.priority_decay_half_life,
        };
        let calc_period = match &u.calc_period {
            Some(t) => knob(t, "--calc-period", parse_calc_period)?,
            None => base.priority_calc_period,
        };
        let reset_period = match &u.reset_period {
            Some(p) => knob(p, "--reset-period", parse_reset_period)?,
            None => base.priority_usage_reset_period,
        };
        let timezone = parse_timezone(u.timezone.as_deref().unwrap_or("UTC"))
            .map_err(|m| Error::Usage(format!("--timezone: {m}")))?;
        let decay = u.decay.unwrap_or(DecayArg::Slurm);
        let charge_job_end = conf.as_ref().is_some_and(|c| c.accounting_storage_enforce.charges_job_end());
        let flux_interval =
            parse_duration(&u.flux_interval).map_err(|m| Error::Usage(format!("--flux-interval: {m}")))?;
        if matches!(decay, DecayArg::Flux | DecayArg::FluxClean) && u.half_life.is_none() {
            // flux-accounting's own default, not slurm.conf's.
            half_life = 604_800;
        }
        let notes = if matches!(decay, DecayArg::Slurm | DecayArg::Exact) { defaults_notes(u) } else { Vec::new() };
        Ok(Some(UsageSettings {
            notes,
            billing: u.billing.clone(),
            jobs: jobs.clone(),
            format,
            conf,
            qos,
            decay,
            now,
            first_pass,
            half_life,
            calc_period,
            reset_period,
            timezone,
            charge_job_end,
            flux_interval,
        }))
    }

    /// The decay model for a fair-share pass with `algorithm` (Fair Tree charges running jobs on
    /// Slurm's first pass, classic does not).
    pub fn model(&self, algorithm: Algorithm) -> DecayModel {
        self.model_at(algorithm, self.now)
    }

    /// The decay model evaluating usage at `now`.
    pub fn model_at(&self, algorithm: Algorithm, now: i64) -> DecayModel {
        match self.decay {
            DecayArg::Slurm => {
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
            DecayArg::Exact | DecayArg::Flux | DecayArg::FluxClean => DecayModel::Exact(ExactDecay {
                half_life: self.half_life,
                now,
                reset: last_boundary(self.reset_period, self.timezone, now),
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
        let report = if matches!(self.decay, DecayArg::Flux | DecayArg::FluxClean) {
            let cfg = FluxUsageConfig { half_life: f64::from(self.half_life), ..FluxUsageConfig::default() };
            let emulate = (self.decay == DecayArg::Flux).then_some((self.first_pass, self.flux_interval));
            charge_flux_records(input, &self.jobs, self.format, &FluxRecords { cfg, now: self.now, emulate })?
        } else {
            let line = super::progress::Progress::new("charging job records");
            let progress: fairshare::usage::Progress<'_> = Box::new(move |done, total| line.report(done, total, ""));
            let (conf, qos) = (self.conf.as_ref(), self.qos.as_ref());
            charge_jobs(input, &self.jobs, self.format, conf, qos, self.model(algorithm), Some(progress))?
        };
        self.say_notes();
        if let Some((job, line)) = report.first_unmatched {
            eprintln!(
                "fairshare: warning: {} job record(s) match no association and charge nothing, e.g. job {job} at {}:{line}",
                report.unmatched,
                self.jobs.display()
            );
        }
        Ok(report)
    }

    /// The usage parameters, for the output metadata.
    pub fn metadata(&self, algorithm: Algorithm) -> Vec<(String, String)> {
        self.metadata_at(algorithm, self.now)
    }

    /// Says on stderr which defaults stood in for site files not given.
    pub fn say_notes(&self) {
        for note in &self.notes {
            eprintln!("fairshare: {note}");
        }
    }

    /// The usage parameters of the state at `now`.
    pub fn metadata_at(&self, algorithm: Algorithm, now: i64) -> Vec<(String, String)> {
        let model = self.model_at(algorithm, now);
        let decay = match self.decay {
            DecayArg::Flux => "flux",
            DecayArg::FluxClean => "flux-clean",
            _ => model.name(),
        };
        let mut m = vec![
            ("fairshare.decay", decay.to_string()),
            ("fairshare.jobs", super::site::shown(&self.jobs)),
            ("fairshare.jobs_format", self.format.name().to_string()),
            ("fairshare.now", now.to_string()),
            ("fairshare.half_life", self.half_life.to_string()),
            ("fairshare.reset_period", format!("{:?}", self.reset_period).to_uppercase()),
            ("fairshare.timezone", self.timezone.name().to_string()),
        ];
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

/// Which of Slurm's defaults stand in for a site file not given, so a missing `--slurm-conf` or
/// `--qos` is never silent.
fn defaults_notes(u: &UsageArgs) -> Vec<String> {
    let mut notes = Vec::new();
    if u.slurm_conf.is_none() {
        let mut defaulted = Vec::new();
        if u.half_life.is_none() {
            defaulted.push("PriorityDecayHalfLife 7-00:00:00");
        }
        if u.calc_period.is_none() {
            defaulted.push("PriorityCalcPeriod 00:05:00");
        }
        defaulted.push("no TRESBillingWeights (a job is billed its CPUs)");
        notes.push(format!("no --slurm-conf: Slurm's defaults apply: {}", defaulted.join(", ")));
    }
    if u.qos.is_none() {
        notes.push("no --qos: every QOS charges its usage whole (UsageFactor 1)".to_string());
    }
    notes
}

/// The instants `--at` or `--every/--from/--to` ask for (empty for a single `--now`).
///
/// # Errors
/// A bad time or interval, or more instants than `--max-instants`.
pub(crate) fn history_instants(a: &UsageCmdArgs) -> Result<Vec<i64>> {
    if let Some(every) = &a.every {
        let step = parse_duration(every).map_err(|m| Error::Usage(format!("--every: {m}")))?;
        let from = time(a.from.as_deref().unwrap_or_default(), "--from")?;
        let to = time(a.to.as_deref().unwrap_or_default(), "--to")?;
        if to < from {
            return Err(Error::Usage(format!("--to {to} is before --from {from}")));
        }
        let count = (to - from) / step + 1;
        check_instant_count(count as u64, a.max_instants, &format!("--every {every} from --from to --to"))?;
        let instants: Vec<i64> = (0..count).map(|k| from + k * step).collect();
        eprintln!("fairshare: {count} instant(s), {} to {}", iso(from), iso(instants[instants.len() - 1]));
        return Ok(instants);
    }
    check_instant_count(a.at.len() as u64, a.max_instants, "--at")?;
    a.at.iter().map(|t| time(t, "--at")).collect()
}

/// Refuses a history of more instants than `max` (each is a Parquet file).
fn check_instant_count(count: u64, max: u64, what: &str) -> Result<()> {
    if count > max {
        return Err(Error::Usage(format!(
            "{what} is {count} instants (one Parquet file each), more than --max-instants {max}: \
             give a coarser interval or raise --max-instants"
        )));
    }
    Ok(())
}

/// An epoch time as `YYYY-MM-DDTHH:MM:SSZ`.
fn iso(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0).unwrap_or_default().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `YYYY-MM-DD` and `HHMMSS` of an epoch time (UTC), for the history's partition paths.
fn date_and_time(t: i64) -> (String, String) {
    let dt = chrono::DateTime::from_timestamp(t, 0).unwrap_or_default();
    (dt.format("%Y-%m-%d").to_string(), dt.format("%H%M%S").to_string())
}

/// Charges the records once for every instant and writes one Parquet file per instant (usage and
/// fair-share of every association, with an `as_of` UTC timestamp column), partitioned by date, as one directory
/// that appears atomically.
///
/// # Errors
/// Reading or charging the records, the tree, or writing.
pub(crate) fn write_history(
    settings: &super::TreeSettings,
    usage: &UsageSettings,
    instants: Vec<i64>,
    out: &std::path::Path,
) -> Result<()> {
    use std::sync::Arc;

    use arrow::array::{RecordBatch, TimestampMicrosecondArray};
    use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
    use fairshare::output::atomic::{AtomicDir, DirKind};
    use fairshare::output::parquet::{association_batch, metadata, write_parquet};
    use fairshare::usage::history::{Instants, charge_history};
    use parquet::file::metadata::KeyValue;

    let input = match usage.tree_input(settings.given_input()?)? {
        Some(t) => t,
        None => settings.default_input()?,
    };
    let algorithm = settings.params.algorithm;
    let ctx =
        fairshare::usage::ChargeContext::new(&input, usage.conf.as_ref(), usage.qos.as_ref(), usage.model(algorithm));
    let instants = Instants::new(instants, |t| usage.model_at(algorithm, t));
    let history = charge_history(&usage.jobs, usage.format, &ctx, instants)?;
    let tree = AssocTree::build(input.clone())?;
    // Tree row of each input record.
    let row_of_id: std::collections::HashMap<u64, usize> =
        tree.ids().iter().enumerate().map(|(row, &id)| (id, row)).collect();
    let tree_rows: Vec<usize> = input.records.iter().map(|r| row_of_id[&r.id]).collect();
    let dir = AtomicDir::create(out, DirKind::History)?;
    let carried = dir.keep_previous()?;
    let mut written = std::collections::HashSet::new();
    let source = settings.source();
    let mut by_row = vec![0.0; tree.len()];
    let progress = super::progress::Progress::new("writing the history");
    let total = history.instants().times().len() as u64;
    history.for_each_instant(|i, record_usage| {
        progress.report(i as u64, total, "instants");
        let t = history.instants().times()[i];
        for (&row, &u) in tree_rows.iter().zip(record_usage) {
            by_row[row] = u;
        }
        let at_tree = tree.with_user_usage(&by_row);
        let result = fairshare::fairshare::compute(&at_tree, &settings.params)?;
        let batch = association_batch(&at_tree, &result);
        // A UTC timestamp, named so that SQL needs no quoting (`at` is a DuckDB keyword).
        let as_of = TimestampMicrosecondArray::from(vec![t * 1_000_000; at_tree.len()]).with_timezone("UTC");
        let at: arrow::array::ArrayRef = Arc::new(as_of);
        let mut fields: Vec<Field> =
            vec![Field::new("as_of", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), false)];
        fields.extend(batch.schema().fields().iter().map(|f| f.as_ref().clone()));
        let mut columns = vec![at];
        columns.extend(batch.columns().iter().cloned());
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(|e| Error::format(out, e))?;
        let mut meta = metadata(&result, &source);
        meta.extend(settings.what_if_metadata());
        meta.extend(usage.metadata_at(algorithm, t).into_iter().map(|(k, v)| KeyValue::new(k, v)));
        let (date, hms) = date_and_time(t);
        let part = dir.path().join(format!("date={date}"));
        std::fs::create_dir_all(&part).map_err(|e| Error::io(&part, e))?;
        written.insert(format!("date={date}/{hms}.parquet"));
        write_parquet(&part.join(format!("{hms}.parquet")), &batch, meta)
    })?;
    progress.report(total, total, "instants");
    dir.commit()?;
    usage.say_notes();
    if !carried.is_empty() {
        let replaced = carried.iter().filter(|f| written.contains(f.as_str())).count();
        eprintln!(
            "fairshare: added {} instant(s) to the history in {} ({} earlier instant(s) kept, {replaced} replaced)",
            written.len(),
            out.display(),
            carried.len() - replaced
        );
    }
    if let Some((job, line)) = history.report.first_unmatched {
        eprintln!(
            "fairshare: warning: {} job record(s) match no association and charge nothing, e.g. job {job} at {}:{line}",
            history.report.unmatched,
            usage.jobs.display()
        );
    }
    Ok(())
}
