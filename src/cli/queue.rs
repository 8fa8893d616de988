//! The pending queue of `sprio` and `score`: its site, read and scored.

use fairshare_base::{Error, Result};
use fairshare_engine::pipeline::{PendingSource, Queue, Site, SiteOptions};

use super::args::{PriorityArg, QueueArgs, TreeArgs};
use super::progress::Terminal;
use super::settings::Settings;

/// Says, once the queue is scored, that no QOS table stood behind Slurm's QOS factors.
pub(crate) fn say_no_qos(missing: bool) {
    if missing {
        eprintln!("fairshare: no --qos: every QOS priority factor is 0");
    }
}

/// The site of a command scoring a queue with Slurm's formula, and its queue.
pub(crate) fn slurm_queue_site(tree: &TreeArgs, q: &QueueArgs) -> Result<(Settings, Site, PendingSource)> {
    let settings = Settings::new(tree, &q.usage, Some((q.pending.as_deref(), q.pending_format)))?;
    let o = &settings.options;
    let pending = o.pending.clone().ok_or_else(|| Error::Usage("no pending queue: give --pending".into()))?;
    if o.slurm_conf.is_none() {
        return Err(Error::Usage("Slurm priorities need --slurm-conf".into()));
    }
    let (site, format) = (o.resolve()?, o.pending_format);
    Ok((settings, site, PendingSource { path: pending, format }))
}

/// A scored queue, and whether Slurm's QOS factors had no QOS table.
pub(crate) struct LoadedQueue {
    pub(crate) queue: Queue,
    pub(crate) qos_missing: bool,
}

/// The queue of `sprio` and `score --priority flux`, scored whole.
pub(crate) fn load_queue(tree: &TreeArgs, q: &QueueArgs) -> Result<LoadedQueue> {
    match q.priority {
        PriorityArg::Slurm => {
            let (settings, site, pending) = slurm_queue_site(tree, q)?;
            let observer = Terminal::new(settings.default_notes());
            let (tree, fs, _) = site.fair_share(&observer)?;
            let conf = site.slurm_conf.as_ref().expect("checked by slurm_queue_site");
            let queue = Queue::slurm(conf, site.qos.as_ref(), site.now, &tree, &fs, &pending, &observer)?;
            Ok(LoadedQueue { queue, qos_missing: site.qos.is_none() })
        }
        PriorityArg::Flux => {
            let settings = Settings::new(tree, &q.usage, Some((q.pending.as_deref(), q.pending_format)))?;
            if settings.options.pending.is_none() {
                return Err(Error::Usage("no pending queue: give --pending".into()));
            }
            // flux's priorities read the tree (and a database's priority tables) only: the inputs
            // of Slurm's formula and of charging are dropped before resolving, so that they are
            // neither read nor checked.
            let options = SiteOptions {
                slurm_conf: None,
                qos: None,
                jobs: None,
                billing: Vec::new(),
                ..settings.options.clone()
            };
            let queue =
                options.resolve()?.score_flux(&Terminal::new(Vec::new()))?.expect("a pending queue, checked above");
            Ok(LoadedQueue { queue, qos_missing: false })
        }
    }
}
