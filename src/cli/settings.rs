//! Settings: the command line's options resolved into the library's [`SiteOptions`], merged in
//! one place and one order: a flag, then the site file (`--site`, or the embedded default site
//! when no input is given at all), then the defaults, which [`SiteOptions::resolve`] applies and
//! each flag's help states.

use std::path::Path;

use fairshare_base::{Error, Result};
use fairshare_engine::config::SlurmConfFormat;
use fairshare_engine::io::TreeFormat;
use fairshare_engine::jobs::PendingFormat;
use fairshare_engine::pass::Algorithm;
use fairshare_engine::pipeline::{Decay, EmbeddedSite, SiteOptions};
use fairshare_engine::tree::Shares;
use fairshare_engine::usage::JobFormat;
use fairshare_engine::usage::swf::{SwfOptions, SwfTree, UnknownWait};

use super::args::{
    AlgoArg, DecayArg, JobsFormatArg, PendingFormatArg, SlurmConfFormatArg, SwfTreeArg, SwfUnknownWaitArg, TreeArgs,
    TreeFormatArg, UsageArgs,
};

/// A command's site options, merged; the embedded site's files stay on disk while it lives.
pub(crate) struct Settings {
    pub options: SiteOptions,
    _embedded: Option<EmbeddedSite>,
}

impl Settings {
    /// The options of the tree and usage flags (and a pending queue's), over `--site` or, when
    /// nothing at all is given, the embedded default site.
    ///
    /// # Errors
    /// A bad flag value, or an unreadable or bad site file.
    pub(crate) fn new(
        tree: &TreeArgs,
        usage: &UsageArgs,
        pending: Option<(Option<&Path>, Option<PendingFormatArg>)>,
    ) -> Result<Self> {
        let mut options = flags(tree, usage)?;
        if let Some((path, format)) = pending {
            options.pending = path.map(Path::to_path_buf);
            options.pending_format = format.map(pending_format);
        }
        let embedded = options.under_site(tree.site.as_deref())?;
        Ok(Settings { options, _embedded: embedded })
    }

    /// Which of Slurm's defaults stand in for a site file not given, so that a missing
    /// `--slurm-conf` or `--qos` is never silent (said once the usage is charged).
    pub(crate) fn default_notes(&self) -> Vec<String> {
        let o = &self.options;
        if o.decay.is_some_and(Decay::is_flux) {
            return Vec::new();
        }
        let mut notes = Vec::new();
        if o.slurm_conf.is_none() {
            let mut defaulted = Vec::new();
            if o.half_life.is_none() {
                defaulted.push("PriorityDecayHalfLife 7-00:00:00");
            }
            if o.calc_period.is_none() {
                defaulted.push("PriorityCalcPeriod 00:05:00");
            }
            defaulted.push("no TRESBillingWeights (a job is billed its CPUs)");
            notes.push(format!("no --slurm-conf: Slurm's defaults apply: {}", defaulted.join(", ")));
        }
        if o.qos.is_none() {
            notes.push("no --qos: every QOS charges its usage whole (UsageFactor 1)".to_string());
        }
        notes
    }
}

/// The options the flags set (no site file).
pub(crate) fn flags(t: &TreeArgs, u: &UsageArgs) -> Result<SiteOptions> {
    let set_shares =
        t.set_shares
            .iter()
            .map(|(name, v)| {
                let shares = match v.to_ascii_lowercase().as_str() {
                    "parent" => Shares::Parent,
                    _ => v.parse().map(Shares::Value).map_err(|_| {
                        Error::Usage(format!("--set-shares {name}={v}: shares are a count or `parent`"))
                    })?,
                };
                Ok((name.clone(), shares))
            })
            .collect::<Result<_>>()?;
    Ok(SiteOptions {
        tree: t.tree.clone(),
        tree_format: t.tree_format.map(tree_format),
        algorithm: t.algo.map(algorithm),
        dampening: t.dampening,
        depth_oblivious: t.depth_oblivious,
        flux_exact_sums: t.flux_exact_sums,
        set_shares,
        slurm_conf: u.slurm_conf.clone(),
        slurm_conf_format: u.slurm_conf_format.map(|f| match f {
            SlurmConfFormatArg::SlurmConf => SlurmConfFormat::SlurmConf,
            SlurmConfFormatArg::Scontrol => SlurmConfFormat::Scontrol,
        }),
        qos: u.qos.clone(),
        jobs: u.jobs.clone(),
        jobs_format: u.jobs_format.map(jobs_format),
        swf_tree: u.swf_tree.map(|l| match l {
            SwfTreeArg::GroupUser => SwfTree::GroupUser,
            SwfTreeArg::PartitionUser => SwfTree::PartitionUser,
        }),
        swf_unknown_wait: u.swf_unknown_wait.map(|w| match w {
            SwfUnknownWaitArg::Zero => UnknownWait::Zero,
            SwfUnknownWaitArg::Skip => UnknownWait::Skip,
        }),
        decay: u.decay.map(|d| match d {
            DecayArg::Slurm => Decay::Slurm,
            DecayArg::Exact => Decay::Exact,
            DecayArg::Flux => Decay::Flux,
            DecayArg::FluxClean => Decay::FluxClean,
        }),
        now: u.now.clone(),
        first_pass: u.first_pass.clone(),
        half_life: u.half_life.clone(),
        calc_period: u.calc_period.clone(),
        reset_period: u.reset_period.clone(),
        timezone: u.timezone.clone(),
        billing: u.billing.clone(),
        flux_interval: u.flux_interval.clone(),
        ..SiteOptions::default()
    })
}

pub(crate) fn pending_format(f: PendingFormatArg) -> PendingFormat {
    match f {
        PendingFormatArg::Csv => PendingFormat::Csv,
        PendingFormatArg::Parquet => PendingFormat::Parquet,
        PendingFormatArg::SqueueJson => PendingFormat::SqueueJson,
    }
}

fn tree_format(f: TreeFormatArg) -> TreeFormat {
    match f {
        TreeFormatArg::AssocCsv => TreeFormat::AssocCsv,
        TreeFormatArg::Sshare => TreeFormat::Sshare,
        TreeFormatArg::FluxCsv => TreeFormat::FluxCsv,
        TreeFormatArg::FluxDb => TreeFormat::FluxDb,
        TreeFormatArg::Parquet => TreeFormat::Parquet,
        TreeFormatArg::SacctmgrDump => TreeFormat::SacctmgrDump,
        TreeFormatArg::SshareJson => TreeFormat::SshareJson,
    }
}

fn algorithm(a: AlgoArg) -> Algorithm {
    match a {
        AlgoArg::FairTree => Algorithm::FairTree,
        AlgoArg::Classic => Algorithm::Classic,
        AlgoArg::Flux => Algorithm::Flux,
    }
}

/// How an SWF trace is read is the `--swf-tree` and `--swf-unknown-wait` options', applied when the
/// options resolve.
fn jobs_format(f: JobsFormatArg) -> JobFormat {
    match f {
        JobsFormatArg::Csv => JobFormat::Csv,
        JobsFormatArg::Parquet => JobFormat::Parquet,
        JobsFormatArg::Sacct => JobFormat::Sacct,
        JobsFormatArg::SacctJson => JobFormat::SacctJson,
        JobsFormatArg::Swf => JobFormat::Swf(SwfOptions::DEFAULT),
        JobsFormatArg::FluxDb => JobFormat::FluxDb,
    }
}
