//! Settings: the command line's options resolved into the library's [`SiteOptions`], merged in
//! one place and one order: a flag, then the site file (`--site`, or the embedded default site
//! when no input is given at all), then the defaults, which [`SiteOptions::resolve`] applies and
//! each flag's help states.

use std::path::Path;

use fairshare_base::{Error, Result};
use fairshare_engine::jobs::PendingFormat;
use fairshare_engine::pipeline::{Decay, EmbeddedSite, SiteOptions};
use fairshare_engine::tree::Shares;

use super::args::{TreeArgs, UsageArgs};

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
        pending: Option<(Option<&Path>, Option<PendingFormat>)>,
    ) -> Result<Self> {
        let mut options = flags(tree, usage)?;
        if let Some((path, format)) = pending {
            options.pending = path.map(Path::to_path_buf);
            options.pending_format = format;
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
        tree_format: t.tree_format,
        algorithm: t.algo,
        dampening: t.dampening,
        depth_oblivious: t.depth_oblivious,
        flux_exact_sums: t.flux_exact_sums,
        set_shares,
        slurm_conf: u.slurm_conf.clone(),
        slurm_conf_format: u.slurm_conf_format,
        qos: u.qos.clone(),
        jobs: u.jobs.clone(),
        jobs_format: u.jobs_format,
        swf_tree: u.swf_tree,
        swf_unknown_wait: u.swf_unknown_wait,
        decay: u.decay,
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
