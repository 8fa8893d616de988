//! Usage: from job records to the raw decayed usage of every association.
//!
//! Readers stream job records as borrowed [`JobRef`]s into a sink, so memory does not grow with
//! the length of the history: the canonical CSV/Parquet records ([`records`]), `sacct -P` text
//! ([`sacct`]) and `sacct --json` ([`sacct_json`]), Standard Workload Format traces ([`swf`]) and a flux-accounting database's `jobs`
//! table ([`crate::usage::flux_db::jobs`]). The [`charge`] stage resolves each record to its
//! association, bills it with the partition's TRES weights and the QOS usage factor, and adds its
//! decayed usage under Slurm's decay thread in closed form ([`SlurmDecay`], with [`reset`] periods)
//! or a continuous exponential ([`ExactDecay`]); flux-accounting's bins are [`flux`] (its
//! update-usage over a database) and [`flux_records`] (the same from plain records). [`history`]
//! evaluates usage at many instants in one pass.

pub mod charge;
pub mod exact;
pub mod exact_sum;
pub mod flux;
pub mod flux_db;
pub mod flux_records;
pub mod history;
mod lines;
mod partial;
pub mod records;
pub mod reset;
pub mod sacct;
pub mod sacct_json;
pub mod slurm_decay;
pub mod swf;
pub mod tres;

pub use charge::{ChargeContext, ChargeReport, DecayModel, PartialUsage, Progress, Skip, Skipped, UsageCharger};
pub use exact::ExactDecay;
pub use records::{JobFormat, for_each_job};
pub use slurm_decay::SlurmDecay;

/// One job record as a reader sees it, borrowing from the reader's buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobRef<'a> {
    /// Job id.
    pub job_id: u64,
    /// User name.
    pub user: &'a str,
    /// Account name.
    pub account: &'a str,
    /// Partition name.
    pub partition: &'a str,
    /// QOS name; empty for none.
    pub qos: &'a str,
    /// Start time (epoch seconds); `None` if the job never started.
    pub start: Option<i64>,
    /// End time; `None` while running.
    pub end: Option<i64>,
    /// Allocated TRES as a TRES string (`cpu=16,mem=64G,node=1,gres/gpu=2`).
    pub tres_alloc: &'a str,
    /// The time limit in minutes as Slurm keeps it ([`INFINITE`](crate::config::time::INFINITE)
    /// when unlimited); `None` when the records do not say. Only `TRESRunMins` reads it.
    pub time_limit: Option<u32>,
    /// 1-based line or row in the input, for error messages.
    pub line: u64,
    /// Why the record cannot be charged, when its reader knows more than a missing `start`
    /// says (an SWF trace's unknown run time); `None` for the rest. A record with a reason is
    /// counted under it and charges nothing.
    pub skip: Option<Skip>,
    /// The job's wait was unknown and is taken as zero: `start` is its submit time (SWF,
    /// `--swf-unknown-wait zero`); counted, so that reports say how many.
    pub started_at_submit: bool,
}

/// What a reader calls for every record; an error stops the read and is returned as is.
pub type JobSink<'s> = dyn FnMut(&JobRef<'_>) -> fairshare_base::Result<()> + 's;

/// Streams the job records of `path` into [`UsageCharger`]s for the user associations of `input`,
/// and writes the charged raw usage into them. Parquet row groups and blocks of CSV or sacct lines
/// are charged in parallel, each by its own worker; the sums are exact ([`exact_sum`]), so they are
/// the same bits whatever the thread count, the row groups, the record order or the format.
/// `progress`, if given, hears `(done, total)` on the calling thread, after each part that thread
/// charged and at the end.
///
/// # Errors
/// A malformed record or one the charger rejects (unknown partition or QOS, a time out of range,
/// a billing or usage that is not a finite number), naming the line; a sum that is not finite.
pub fn charge_jobs(
    input: &mut crate::tree::TreeInput,
    request: &ChargeRequest<'_>,
    progress: Option<Progress<'_>>,
) -> fairshare_base::Result<ChargeReport> {
    charge_part(input, request, progress)?.finish(input, request.path)
}

/// What a charge reads and how it bills and decays: the job records of `path` in `format`,
/// billed by `conf`'s TRES weights (every job its allocated CPUs without one), scaled by `qos`'s
/// usage factors (1 without a table), decayed by `model`.
#[derive(Clone, Copy, Debug)]
pub struct ChargeRequest<'a> {
    /// The job records.
    pub path: &'a std::path::Path,
    /// Their format.
    pub format: JobFormat,
    /// The site's slurm.conf: billing weights, the calc period, `AccountingStorageEnforce`.
    pub conf: Option<&'a crate::config::SlurmConf>,
    /// The site's QOS table: usage factors.
    pub qos: Option<&'a crate::config::QosTable>,
    /// The decay to charge with.
    pub model: DecayModel,
}

/// The usage of the job records of `path` for the user associations of `input`, as a part to
/// merge with other parts' ([`PartialUsage::merge`]) before [`PartialUsage::finish`] writes it
/// into the tree: a record set split into files (or row groups, or batches) charged anywhere,
/// in any order, gives the bits [`charge_jobs`] gives for the whole set.
///
/// # Errors
/// As [`charge_jobs`].
///
/// # Example
/// ```no_run
/// use std::path::Path;
/// use fairshare_engine::usage::{ChargeRequest, DecayModel, ExactDecay, JobFormat, charge_part};
///
/// let mut input = fairshare_engine::io::read_tree_input(Path::new("tree.csv"), None)?;
/// let model = DecayModel::Exact(ExactDecay { half_life: 7 * 86_400, now: 1_767_830_400, reset: None });
/// let part = |p: &str| {
///     let request = ChargeRequest { path: Path::new(p), format: JobFormat::Parquet, conf: None, qos: None, model };
///     charge_part(&input, &request, None)
/// };
/// let mut total = part("day=2/jobs.parquet")?;
/// total.merge(&part("day=1/jobs.parquet")?)?;
/// total.finish(&mut input, Path::new("jobs"))?;
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn charge_part(
    input: &crate::tree::TreeInput,
    request: &ChargeRequest<'_>,
    progress: Option<Progress<'_>>,
) -> fairshare_base::Result<PartialUsage> {
    let ChargeRequest { path, format, conf, qos, model } = *request;
    let mut ctx = ChargeContext::new(input, conf, qos, model);
    if let Some(p) = progress {
        ctx = ctx.with_progress(p);
    }
    let charger = match format {
        JobFormat::Parquet => records::charge_parquet(path, &ctx)?,
        JobFormat::Csv => {
            let (lines, offset, first) = records::CsvLines::open(path)?;
            lines::charge_lines(path, &lines, offset, first, &ctx)?
        }
        JobFormat::Sacct => {
            let (lines, offset, first) = sacct::SacctLines::open(path)?;
            lines::charge_lines(path, &lines, offset, first, &ctx)?
        }
        _ => {
            let mut charger = ctx.charger();
            for_each_job(path, format, &mut |job| charger.charge(job, path))?;
            charger
        }
    };
    Ok(charger.into_partial())
}
