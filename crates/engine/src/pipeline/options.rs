//! A site's options before resolution: what a front end was told (flags, keyword arguments), a
//! site file under it, and the defaults under both. [`SiteOptions::resolve`] reads the
//! configuration files and gives the [`Site`].

use std::path::PathBuf;

use chrono_tz::Tz;

use super::embedded::{EMBEDDED, EmbeddedSite};
use super::queue::PendingSource;
use super::site_file::SiteFile;
use super::tree_source::TreeSource;
use super::usage::{Decay, UsageConfig};
use super::{Site, shown};
use crate::config::slurm_conf::{parse_calc_period, parse_half_life, parse_reset_period};
use crate::config::time::{as_slurm_time, parse_duration};
use crate::config::{QosTable, SlurmConf, SlurmConfFormat};
use crate::io::TreeFormat;
use crate::jobs::PendingFormat;
use crate::pass::{Algorithm, Params};
use crate::tree::{Shares, TreeColumns};
use crate::usage::JobFormat;
use crate::usage::reset::parse_timezone;
use crate::usage::swf::{SwfOptions, SwfTree, UnknownWait};
use fairshare_base::read::time::parse_time_arg;
use fairshare_base::{Error, Result};

/// Every option of a site, each unset until a front end or a site file sets it. Times and
/// durations are kept as spelled (`2026-01-08`, `14d`, `7-0`) and read by [`SiteOptions::resolve`],
/// which names an option by its command-line flag when its value is wrong.
#[derive(Debug, Clone, Default)]
pub struct SiteOptions {
    /// The site file these options were filled from, if any (what the outputs call the site).
    pub site_file: Option<PathBuf>,
    /// Whether the site is the embedded default site.
    pub embedded: bool,
    /// The association tree.
    pub tree: Option<PathBuf>,
    /// Its format (default: detected).
    pub tree_format: Option<TreeFormat>,
    /// A tree already in memory (a front end's table), in place of a tree file.
    pub tree_table: Option<TreeColumns>,
    /// The algorithm (default: slurm.conf's PriorityFlags, else Fair Tree).
    pub algorithm: Option<Algorithm>,
    /// Classic's FairShareDampeningFactor (default: slurm.conf's, else 1).
    pub dampening: Option<u16>,
    /// Classic's DEPTH_OBLIVIOUS (also on when slurm.conf's PriorityFlags have it).
    pub depth_oblivious: bool,
    /// flux: exact sibling sums instead of flux-accounting's truncated ones.
    pub flux_exact_sums: bool,
    /// What-if shares (account or `USER@ACCOUNT`, shares).
    pub set_shares: Vec<(String, Shares)>,
    /// slurm.conf (or scontrol's output).
    pub slurm_conf: Option<PathBuf>,
    /// What `slurm_conf` holds (default: detected).
    pub slurm_conf_format: Option<SlurmConfFormat>,
    /// The `sacctmgr show qos -P` dump.
    pub qos: Option<PathBuf>,
    /// Job records (no usage stage without them).
    pub jobs: Option<PathBuf>,
    /// Their format (default: detected).
    pub jobs_format: Option<JobFormat>,
    /// The tree an SWF trace implies (default: group → user).
    pub swf_tree: Option<SwfTree>,
    /// What an SWF job whose wait is unknown charges (default: it started at its submit time).
    pub swf_unknown_wait: Option<UnknownWait>,
    /// The decay model (default: Slurm's).
    pub decay: Option<Decay>,
    /// The evaluation time (default: now; required with job records).
    pub now: Option<String>,
    /// The first decay pass (default: passes aligned on the calc period).
    pub first_pass: Option<String>,
    /// PriorityDecayHalfLife (default: slurm.conf's, else 7 days; flux's decays: 7 days).
    pub half_life: Option<String>,
    /// PriorityCalcPeriod (default: slurm.conf's, else 5 minutes).
    pub calc_period: Option<String>,
    /// PriorityUsageResetPeriod (default: slurm.conf's, else none).
    pub reset_period: Option<String>,
    /// The timezone of reset boundaries (default: UTC).
    pub timezone: Option<String>,
    /// What-if billing weights (partition, `TRESBillingWeights`).
    pub billing: Vec<(String, String)>,
    /// flux's update-usage interval (default: one hour).
    pub flux_interval: Option<String>,
    /// The pending queue.
    pub pending: Option<PathBuf>,
    /// Its format (default: detected).
    pub pending_format: Option<PendingFormat>,
}

/// A time option, as [`parse_time_arg`] reads it.
fn time(text: &str, flag: &str) -> Result<i64> {
    parse_time_arg(text).map_err(|m| Error::Usage(format!("{flag}: {m}")))
}

/// A slurm.conf knob given as `flag`, read by the function the slurm.conf reader uses for it, so
/// that both accept the same values and refuse the same ones in the same words. The option may
/// also use the short duration syntax (`14d`), as every duration option does.
fn knob<T>(text: &str, flag: &str, parse: fn(&str) -> std::result::Result<T, String>) -> Result<T> {
    parse(&as_slurm_time(text)).map_err(|m| Error::Usage(format!("{flag} {text}: {m}")))
}

impl SiteOptions {
    /// Whether no input at all is set (then front ends run the embedded default site).
    pub fn nothing_given(&self) -> bool {
        self.tree.is_none()
            && self.tree_table.is_none()
            && self.jobs.is_none()
            && self.slurm_conf.is_none()
            && self.qos.is_none()
            && self.pending.is_none()
    }

    /// Fills the options still unset from the site file at `path`, which names the site.
    ///
    /// # Errors
    /// As [`SiteFile::read`].
    pub fn under_site_file(&mut self, path: &std::path::Path) -> Result<()> {
        self.fill_from(&SiteFile::read(path)?);
        self.site_file = Some(path.to_path_buf());
        Ok(())
    }

    /// Fills the options still unset from the site file `site`, or, without one and when
    /// nothing at all is given, from the embedded default site, whose files stay on disk while
    /// the returned value lives (every front end runs that site when given no input).
    ///
    /// # Errors
    /// As [`SiteFile::read`], or the embedded site cannot be written.
    pub fn under_site(&mut self, site: Option<&std::path::Path>) -> Result<Option<EmbeddedSite>> {
        match site {
            Some(file) => self.under_site_file(file).map(|()| None),
            None if self.nothing_given() => {
                let files = EmbeddedSite::write()?;
                self.under_site_file(&files.site_file())?;
                self.embedded = true;
                Ok(Some(files))
            }
            None => Ok(None),
        }
    }

    /// Fills the options still unset from a site file: what is already set wins.
    pub fn fill_from(&mut self, file: &SiteFile) {
        fn fill<T: Clone>(slot: &mut Option<T>, value: &Option<T>) {
            if slot.is_none() {
                slot.clone_from(value);
            }
        }
        // A format belongs to its file: the site's only describes the site's slurm.conf.
        if self.slurm_conf.is_none() {
            fill(&mut self.slurm_conf, &file.slurm_conf);
            fill(&mut self.slurm_conf_format, &file.slurm_conf_format);
        }
        fill(&mut self.qos, &file.qos);
        // A tree in memory takes the place of the site's tree file.
        if self.tree_table.is_none() {
            fill(&mut self.tree, &file.tree);
            fill(&mut self.tree_format, &file.tree_format);
        }
        fill(&mut self.jobs, &file.jobs);
        fill(&mut self.jobs_format, &file.jobs_format);
        fill(&mut self.pending, &file.pending);
        fill(&mut self.pending_format, &file.pending_format);
        fill(&mut self.algorithm, &file.algorithm);
        fill(&mut self.decay, &file.decay);
        fill(&mut self.now, &file.now);
        fill(&mut self.first_pass, &file.first_pass);
        fill(&mut self.half_life, &file.half_life);
        fill(&mut self.timezone, &file.timezone);
    }

    /// The evaluation time: `now` as given, else the current time.
    ///
    /// # Errors
    /// `now` is not a time.
    pub fn now(&self) -> Result<i64> {
        time(self.now.as_deref().unwrap_or("now"), "--now")
    }

    /// Reads slurm.conf and the QOS table and resolves every option: what is set wins, then
    /// slurm.conf, then Slurm's defaults.
    ///
    /// # Errors
    /// A file cannot be read, an option's value is wrong, or job records come without `now`.
    pub fn resolve(&self) -> Result<Site> {
        let mut conf = (self.slurm_conf.as_deref())
            .map(|path| crate::config::read_slurm_conf(path, self.slurm_conf_format))
            .transpose()?;
        let mut qos = None;
        let usage = match &self.jobs {
            Some(jobs) => {
                for (partition, weights) in &self.billing {
                    let conf = conf.as_mut().ok_or_else(|| Error::Usage("--billing needs --slurm-conf".into()))?;
                    let p = conf.partitions.iter_mut().find(|p| p.name == *partition).ok_or_else(|| {
                        Error::Usage(format!("--billing: partition {partition:?} is not defined in slurm.conf"))
                    })?;
                    p.billing_weights = Some(
                        crate::config::tres::parse_tres_weights(weights)
                            .map_err(|m| Error::Usage(format!("--billing {partition}={weights}: {m}")))?,
                    );
                }
                qos = self.read_qos()?;
                Some(self.usage_config(jobs, conf.as_ref())?)
            }
            None => None,
        };
        if usage.is_none() {
            qos = self.read_qos()?;
        }
        let params = self.params(conf.as_ref());
        let now = match &usage {
            Some(u) => u.now,
            None => self.now()?,
        };
        let name = match (&self.site_file, self.embedded) {
            (_, true) => EMBEDDED.to_string(),
            (Some(s), false) => shown(s),
            (None, false) => "<command line>".to_string(),
        };
        let roles = [
            ("site", &self.site_file),
            ("slurm_conf", &self.slurm_conf),
            ("qos", &self.qos),
            ("tree", &self.tree),
            ("jobs", &self.jobs),
            ("pending", &self.pending),
        ];
        let files = roles.into_iter().filter_map(|(role, p)| Some((role, p.clone()?))).collect();
        Ok(Site {
            name,
            tree: TreeSource {
                path: self.tree.clone(),
                table: self.tree_table.clone(),
                format: self.tree_format,
                set_shares: self.set_shares.clone(),
            },
            params,
            slurm_conf: conf,
            qos,
            usage,
            pending: self.pending.clone().map(|path| PendingSource { path, format: self.pending_format }),
            now,
            files,
        })
    }

    fn read_qos(&self) -> Result<Option<QosTable>> {
        self.qos.as_deref().map(crate::config::qos::read).transpose()
    }

    /// The fair-share pass: options, then slurm.conf (PriorityFlags, FairShareDampeningFactor),
    /// then Slurm's defaults.
    pub fn params(&self, conf: Option<&SlurmConf>) -> Params {
        let algorithm = match self.algorithm {
            Some(a) => a,
            None if conf.is_some_and(|c| !c.priority_flags.fair_tree) => Algorithm::Classic,
            None => Algorithm::FairTree,
        };
        Params {
            algorithm,
            dampening: self.dampening.or(conf.map(|c| c.fair_share_dampening_factor)).unwrap_or(1),
            depth_oblivious: self.depth_oblivious || conf.is_some_and(|c| c.priority_flags.depth_oblivious),
            flux_exact_sums: self.flux_exact_sums,
        }
    }

    /// The usage stage of `jobs`: options, then slurm.conf, then Slurm's defaults.
    fn usage_config(&self, jobs: &std::path::Path, conf: Option<&SlurmConf>) -> Result<UsageConfig> {
        let now = time(self.now.as_deref().ok_or_else(|| Error::Usage("--jobs needs --now".into()))?, "--now")?;
        let first_pass = self.first_pass.as_deref().map(|t| time(t, "--first-pass")).transpose()?;
        let swf = JobFormat::Swf(SwfOptions {
            tree: self.swf_tree.unwrap_or(SwfTree::GroupUser),
            unknown_wait: self.swf_unknown_wait.unwrap_or(UnknownWait::Zero),
        });
        let format = match self.jobs_format {
            Some(JobFormat::Swf(_)) => swf,
            Some(f) => f,
            None => match JobFormat::detect(jobs)? {
                JobFormat::Swf(_) => swf,
                f => f,
            },
        };
        let mut u = UsageConfig::new(jobs.to_path_buf(), format, now, conf);
        u.first_pass = first_pass;
        if let Some(t) = &self.half_life {
            u.half_life = knob(t, "--half-life", parse_half_life)?;
        }
        if let Some(t) = &self.calc_period {
            u.calc_period = knob(t, "--calc-period", parse_calc_period)?;
        }
        if let Some(p) = &self.reset_period {
            u.reset_period = knob(p, "--reset-period", parse_reset_period)?;
        }
        let timezone: Tz = parse_timezone(self.timezone.as_deref().unwrap_or("UTC"))
            .map_err(|m| Error::Usage(format!("--timezone: {m}")))?;
        u.timezone = timezone;
        u.decay = self.decay.unwrap_or(Decay::Slurm);
        if let Some(i) = &self.flux_interval {
            u.flux_interval = parse_duration(i).map_err(|m| Error::Usage(format!("--flux-interval: {m}")))?;
        }
        if u.decay.is_flux() && self.half_life.is_none() {
            u.half_life = UsageConfig::flux_default_half_life();
        }
        u.billing = self.billing.clone();
        Ok(u)
    }
}
