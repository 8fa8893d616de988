//! The nightly pipeline as a library: a site's inputs and settings ([`Site`], resolved from
//! [`SiteOptions`]), the stages (load the tree, charge usage, the fair-share pass, score the
//! queue) and the whole run into a run directory ([`Site::run`], [`Run::write_dir`]).
//!
//! Every front end (the command line, the Python package) resolves its options into a [`Site`]
//! and calls these; none wires the stages by hand. What a long stage has to say (progress,
//! warnings, timings) goes to an [`Observer`]; the library prints nothing itself.
//!
//! ```
//! use fairshare_engine::pipeline::{EmbeddedSite, SiteOptions, Silent};
//!
//! // The embedded seed site, as `fairshare run` with no arguments runs it, with one what-if.
//! let files = EmbeddedSite::write()?;
//! let mut options = SiteOptions { half_life: Some("3d".into()), ..SiteOptions::default() };
//! options.under_site_file(&files.site_file())?;
//! let run = options.resolve()?.run(false, &Silent)?;
//! assert_eq!(run.charge.expect("the seed site has job records").skipped[fairshare_engine::usage::Skip::Unmatched], 0);
//! assert_eq!(run.queue.expect("the seed site has a pending queue").formula, "slurm");
//! # Ok::<(), fairshare_base::Error>(())
//! ```

mod embedded;
mod flux_site;
pub mod history;
mod options;
mod queue;
mod run_dir;
mod site_file;
mod tree_source;
mod usage;

use std::path::PathBuf;

use parquet::file::metadata::KeyValue;

pub use embedded::{EMBEDDED, EmbeddedSite, shown};
pub use flux_site::run_flux_db;
pub use history::{HistoryInstant, HistoryWritten, for_each_history_instant, history_instants_of, write_history};
pub use options::SiteOptions;
pub use queue::{PendingSource, Queue, score_streamed, score_to_parquet};
pub use run_dir::{Stages, WrittenQueue, describe_inputs};
pub use site_file::SiteFile;
pub use tree_source::TreeSource;
pub use usage::{Decay, UsageConfig, model_from_metadata};

use crate::config::{QosTable, SlurmConf};
use crate::pass::{self as fs, Algorithm, FairShare, Params};
use crate::tree::{AssocTree, TreeInput};
use crate::usage::ChargeReport;
use fairshare_base::named::Named;
use fairshare_base::{Error, Result};

/// What the pipeline tells its front end as it goes. Every method does nothing by default.
pub trait Observer: Sync {
    /// A stage of a run ended after `secs` seconds (`peak`: the most resident memory during it,
    /// where the system says); `what` says what it did.
    fn stage(&self, _name: &'static str, _secs: f64, _peak: Option<u64>, _what: &str) {}
    /// `done` of `total` (`unit`s, or bytes when `unit` is empty) of a long `task`; called from
    /// worker threads, and always once at the end.
    fn progress(&self, _task: &'static str, _done: u64, _total: u64, _unit: &'static str) {}
    /// An undivided step starts (`scoring 10000000 pending jobs`).
    fn step(&self, _what: &str) {}
    /// The step [`Observer::step`] started is done.
    fn step_done(&self) {}
    /// The job records have been charged; `summary` says how many were read, charged and
    /// skipped, per reason (`charged 120 of 132 job records (jobs.csv); skipped 12 (...)`).
    fn charged(&self, _summary: &str) {}
    /// Something the user should know that does not stop the work (records that match no
    /// association, jobs without one).
    fn warning(&self, _message: &str) {}
    /// Whether the work should stop, asked between pieces of a long stage (the parts of a charge);
    /// when it says so, the stage returns [`fairshare_base::Error::Interrupted`].
    fn interrupted(&self) -> bool {
        false
    }
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Observer for Silent {}

/// A site, resolved: its inputs and every setting of every stage.
#[derive(Debug)]
pub struct Site {
    /// What a run's outputs call the site (its file, [`EMBEDDED`], `<command line>`).
    pub name: String,
    /// The association tree and the what-if share edits.
    pub tree: TreeSource,
    /// The fair-share pass.
    pub params: Params,
    /// slurm.conf (with what-if billing weights applied), if given.
    pub slurm_conf: Option<SlurmConf>,
    /// The QOS table, if given.
    pub qos: Option<QosTable>,
    /// The usage stage (`None`: the tree's own usage).
    pub usage: Option<UsageConfig>,
    /// The pending queue.
    pub pending: Option<PendingSource>,
    /// The evaluation time (the usage stage's when there is one).
    pub now: i64,
    /// The input files, (role, path), whose identities a run directory records.
    pub files: Vec<(&'static str, PathBuf)>,
}

/// What [`Site::run`] computed: the tree and its fair-share, what the usage stage saw, the
/// scored queue and the stage timings.
#[derive(Debug)]
pub struct Run {
    /// What the outputs call the site.
    pub source: String,
    /// The tree, with its usage.
    pub tree: AssocTree,
    /// Its fair-share.
    pub fair_share: FairShare,
    /// The evaluation time.
    pub now: i64,
    /// Parameters beyond the pass's (usage stage, what-if edits), as outputs record them.
    pub metadata: Vec<KeyValue>,
    /// What the charging of job records saw, when there was one.
    pub charge: Option<ChargeReport>,
    /// flux-accounting jobs whose resources could not be read, for a flux site.
    pub flux_jobs_skipped: Option<u64>,
    /// The input files' identities (empty unless asked for).
    pub inputs: Vec<serde_json::Value>,
    /// The scored pending queue.
    pub queue: Option<Queue>,
    /// The pending queue scored as the run directory was written ([`Site::run_into_dir`]), in
    /// place of `queue`.
    pub written_queue: Option<WrittenQueue>,
    /// Timings and memory per stage.
    pub stages: Stages,
}

impl Site {
    /// The tree input the usage is charged into: the given tree (edited), else the tree an SWF
    /// trace implies, else the embedded default tree (edited).
    ///
    /// # Errors
    /// The tree or the trace cannot be read, or an edit names no association.
    pub fn tree_input(&self) -> Result<TreeInput> {
        let given = self.tree.given_input()?;
        let input = match &self.usage {
            Some(u) => u.tree_input(given)?,
            None => given,
        };
        match input {
            Some(t) => Ok(t),
            None => self.tree.default_input(),
        }
    }

    /// Charges the job records into `input` (nothing without a usage stage), as the site's
    /// algorithm sees them.
    ///
    /// # Errors
    /// As [`UsageConfig::charge`].
    pub fn charge(&self, input: &mut TreeInput, observer: &dyn Observer) -> Result<Option<ChargeReport>> {
        self.charge_for(self.params.algorithm, input, observer)
    }

    /// Charges the job records into `input` as a pass of `algorithm` sees them: under Slurm's
    /// decay, Fair Tree charges running jobs on the first pass and classic does not.
    ///
    /// # Errors
    /// As [`UsageConfig::charge`].
    pub fn charge_for(
        &self,
        algorithm: Algorithm,
        input: &mut TreeInput,
        observer: &dyn Observer,
    ) -> Result<Option<ChargeReport>> {
        let Some(u) = &self.usage else { return Ok(None) };
        u.charge(input, self.slurm_conf.as_ref(), self.qos.as_ref(), algorithm, observer).map(Some)
    }

    /// The usage of one part of the site's job records (`part`, a file in the records' format)
    /// for the user associations of `input`, to merge with the other parts' and
    /// [`finish`](crate::usage::PartialUsage::finish) into `input`: the same bits as charging the
    /// whole set with [`Site::charge`], however it is split.
    ///
    /// # Errors
    /// No job records, flux's decays (they replay the records in time order, so they cannot be
    /// split), or as [`crate::usage::charge_part`].
    pub fn charge_part(&self, input: &TreeInput, part: &std::path::Path) -> Result<crate::usage::PartialUsage> {
        let u = self.usage.as_ref().ok_or_else(|| Error::Usage("charging needs job records".into()))?;
        if u.decay.is_flux() {
            return Err(Error::Usage(
                "flux's decays replay the records in time order and cannot be charged in parts; use --decay slurm \
                 or exact"
                    .into(),
            ));
        }
        let model = u.model(self.params.algorithm);
        let request = crate::usage::ChargeRequest {
            path: part,
            format: u.format,
            conf: self.slurm_conf.as_ref(),
            qos: self.qos.as_ref(),
            model,
        };
        crate::usage::charge_part(input, &request, None)
    }

    /// The usage stage's parameters and the what-if edits, as outputs record them.
    pub fn metadata(&self) -> Vec<KeyValue> {
        let usage = self.usage.iter().flat_map(|u| u.metadata(self.params.algorithm));
        usage.map(|(k, v)| KeyValue::new(k, v)).chain(self.tree.what_if_metadata()).collect()
    }

    /// The tree with its usage (charged from the job records when there are some) and its
    /// fair-share, and what the charging saw.
    ///
    /// # Errors
    /// Reading the inputs, charging, or the pass.
    pub fn fair_share(&self, observer: &dyn Observer) -> Result<(AssocTree, FairShare, Option<ChargeReport>)> {
        if self.usage.is_none() {
            let tree = self.tree.load()?;
            let result = fs::compute(&tree, &self.params)?;
            return Ok((tree, result, None));
        }
        let mut input = self.tree_input()?;
        let report = self.charge(&mut input, observer)?;
        let (tree, result) = fair_share_after_charge(input, report.as_ref(), &self.params)?;
        Ok((tree, result, report))
    }

    /// The pending queue scored with Slurm's formula against `fs`, if the site has a queue.
    ///
    /// # Errors
    /// No slurm.conf (the weights), or the queue cannot be read.
    pub fn score(&self, tree: &AssocTree, fs: &FairShare, observer: &dyn Observer) -> Result<Option<Queue>> {
        let Some(pending) = &self.pending else { return Ok(None) };
        Queue::slurm(self.priority_conf()?, self.qos.as_ref(), self.now, tree, fs, pending, observer).map(Some)
    }

    /// The whole run: usage, fair-share, priorities, timed per stage; `describe_inputs`
    /// records the input files' identities (for a run directory).
    ///
    /// # Errors
    /// As the stages.
    pub fn run(&self, describe_inputs: bool, observer: &dyn Observer) -> Result<Run> {
        let mut run = self.run_fair_share(describe_inputs, observer)?;
        run.queue = self.score(&run.tree, &run.fair_share, observer)?;
        if let Some(q) = &run.queue {
            let what = || format!("{} pending jobs, {} priority rows", q.jobs.len(), q.scores.job.len());
            run.stages.finish("priority", what, observer);
        }
        Ok(run)
    }

    /// The run up to its fair-share (usage, fair-share, timed per stage), with no queue scored.
    fn run_fair_share(&self, describe_inputs: bool, observer: &dyn Observer) -> Result<Run> {
        let mut stages = Stages::default();
        let mut input = self.tree_input()?;
        let charge = self.charge(&mut input, observer)?;
        stages.finish(
            "usage",
            || match &charge {
                Some(r) => format!("{} job records, {} charged, {} skipped", r.records, r.charged, r.skipped.total()),
                None => "no job records: usage as given".into(),
            },
            observer,
        );
        // The inputs' identities (a read of every byte, mostly on the kernel's side) are taken
        // beside the fair-share.
        let (fair_share, inputs) = rayon::join(
            || fair_share_after_charge(input, charge.as_ref(), &self.params),
            || match describe_inputs {
                true => {
                    let files: Vec<(&str, &std::path::Path)> =
                        self.files.iter().map(|(r, p)| (*r, p.as_path())).collect();
                    self::describe_inputs(&files)
                }
                false => Ok(Vec::new()),
            },
        );
        let (tree, fair_share) = fair_share?;
        let what = || format!("{} associations, {} ({})", tree.len(), self.params.algorithm.name(), self.tree.source());
        stages.finish("fairshare", what, observer);
        let inputs = inputs?;
        Ok(Run {
            source: self.name.clone(),
            tree,
            fair_share,
            now: self.now,
            metadata: self.metadata(),
            charge,
            flux_jobs_skipped: None,
            inputs,
            queue: None,
            written_queue: None,
            stages,
        })
    }
}

/// What the charging of job records saw (`report`; none: no metadata), as Parquet outputs record
/// it: [`ChargeReport::counts`] under `fairshare.`.
pub fn charge_metadata(report: Option<&ChargeReport>) -> Vec<KeyValue> {
    let counts = report.map(ChargeReport::counts).unwrap_or_default();
    counts.into_iter().map(|(k, n)| KeyValue::new(format!("fairshare.{k}"), n.to_string())).collect()
}

/// The tree of `input` and its fair-share; when its usage was charged from job records
/// (`report`), as Slurm holds it after the last decay pass: classic then reads the accounts at
/// that pass's start (`report.pass_start`), the rest is [`fs::compute`].
///
/// # Errors
/// The tree cannot be built, or the pass refuses it.
pub fn fair_share_after_charge(
    input: TreeInput,
    report: Option<&ChargeReport>,
    params: &Params,
) -> Result<(AssocTree, FairShare)> {
    let Some(start) = report.and_then(|r| r.pass_start.as_ref()) else {
        let tree = AssocTree::build(input)?;
        let result = fs::compute(&tree, params)?;
        return Ok((tree, result));
    };
    let by_id: fairshare_base::hash::FastMap<u64, f64> =
        input.records.iter().zip(start).filter(|(r, _)| r.user.is_some()).map(|(r, &u)| (r.id, u)).collect();
    let tree = AssocTree::build(input)?;
    let by_row: Vec<f64> = tree.ids().iter().map(|id| by_id.get(id).copied().unwrap_or(0.0)).collect();
    let result = fs::compute_after_pass(&tree, &tree.with_user_usage(&by_row), params)?;
    Ok((tree, result))
}
