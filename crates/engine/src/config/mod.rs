//! Site configuration as Slurm reads it.
//!
//! - [`slurm_conf`]: a `slurm.conf` (with `Include` files) resolved into a typed [`SlurmConf`]: the
//!   priority knobs, nodes, partitions and the totals slurmctld derives from them (cluster CPUs, node
//!   count, each partition's TRES and normalized `PriorityJobFactor`).
//! - [`scontrol`]: `scontrol show config` and `scontrol show partition` output, read into the same
//!   [`SlurmConf`] for those who cannot read the slurm.conf ([`read_slurm_conf`] tells them apart).
//! - [`qos`]: a `sacctmgr show qos -P` dump.
//! - [`tres`]: TRES count strings (`cpu=16,mem=64G,gres/gpu=2`), weight strings (`TRESBillingWeights`,
//!   `PriorityWeightTRES`) and the billing formula.
//! - [`hostlist`]: Slurm host lists (`node[001-128,200]`).
//! - [`flags`] and [`time`]: `PriorityFlags` and Slurm time strings (`7-0`, `1:30:00`, `UNLIMITED`).
//!
//! Every value is parsed with the rules of the Slurm function that reads it (named in each item's
//! docs), so a site's file means here what it means to slurmctld.

mod conf_syntax;
pub mod flags;
pub mod hostlist;
pub mod qos;
pub mod scontrol;
pub mod slurm_conf;
pub mod time;
pub mod tres;

pub use flags::PriorityFlags;
pub use hostlist::HostList;
pub use qos::{Qos, QosTable};
pub use slurm_conf::{AccountingEnforce, NodeGroup, Partition, PartitionState, ResetPeriod, SlurmConf};
pub use time::TimeLimit;
pub use tres::{Tres, TresCounts, TresKind, TresMap, TresWeights, billable};

use std::path::Path;

use fairshare_base::error::Result;
use fairshare_base::named::{Choice, Named};

/// What a file given as the site's slurm.conf holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlurmConfFormat {
    /// A `slurm.conf` ([`slurm_conf::parse`]).
    SlurmConf,
    /// `scontrol show config` and/or `scontrol show partition` output ([`scontrol::parse`]).
    Scontrol,
}

/// The formats' names on the command line and in site files.
impl Named for SlurmConfFormat {
    const CHOICES: &'static [Choice<Self>] = &[
        Choice::new(SlurmConfFormat::SlurmConf, "slurm-conf", "A slurm.conf (with its `Include` files)"),
        Choice::new(
            SlurmConfFormat::Scontrol,
            "scontrol",
            "`scontrol show config` and/or `scontrol show partition` output",
        ),
    ];
}

impl SlurmConfFormat {
    /// The format of `text`: [`Scontrol`](Self::Scontrol) when it begins as scontrol's output does
    /// ([`scontrol::looks_like`]), else a slurm.conf.
    pub fn detect(text: &str) -> Self {
        if scontrol::looks_like(text) { SlurmConfFormat::Scontrol } else { SlurmConfFormat::SlurmConf }
    }
}

/// Reads the site's slurm.conf: a `slurm.conf` and the files it includes, or scontrol's output, in
/// `format` when given (else detected), printing its [`warnings`](SlurmConf::warnings) on stderr.
///
/// # Errors
/// A file that cannot be read, or any problem the format's parser reports.
pub fn read_slurm_conf(path: &Path, format: Option<SlurmConfFormat>) -> Result<SlurmConf> {
    let text = read_text(path)?;
    let conf = match format.unwrap_or_else(|| SlurmConfFormat::detect(&text)) {
        SlurmConfFormat::SlurmConf => slurm_conf::parse(path, &text)?,
        SlurmConfFormat::Scontrol => scontrol::parse(path, &text)?,
    };
    for w in &conf.warnings {
        eprintln!("fairshare: warning: {w}");
    }
    Ok(conf)
}

/// Reads a whole configuration file (`-` and pipes too, up to
/// [`MAX_CONFIG_BYTES`](fairshare_base::read::source::MAX_CONFIG_BYTES)), naming it (and the line of the
/// first bad byte) in the error.
fn read_text(path: &Path) -> Result<String> {
    fairshare_base::read::source::read_config(path)
}
