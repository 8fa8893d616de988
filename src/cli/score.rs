//! `fairshare score`: the scored queue as Parquet, by Slurm's formula or flux-accounting's.

use fairshare_base::Result;
use fairshare_base::write::parquet::write_parquet;
use fairshare_engine::output::parquet::{jobs_batch, jobs_metadata};
use fairshare_engine::pipeline::score_to_parquet;
use fairshare_engine::priority::SlurmPriority;

use super::args::{PriorityArg, ScoreArgs};
use super::progress::Terminal;
use super::queue::{load_queue, say_no_qos, slurm_queue_site};

/// Runs `fairshare score`.
pub(crate) fn run(a: &ScoreArgs) -> Result<()> {
    match a.queue.priority {
        PriorityArg::Slurm => {
            let (settings, site, pending) = slurm_queue_site(&a.tree, &a.queue)?;
            let observer = Terminal::new(settings.default_notes());
            let (tree, fs, _) = site.fair_share(&observer)?;
            let conf = site.slurm_conf.as_ref().expect("checked by slurm_queue_site");
            let prio = SlurmPriority::new(conf, site.qos.as_ref(), site.now);
            score_to_parquet(&prio, site.now, &tree, &fs, &pending, &a.out, &observer)?;
            say_no_qos(site.qos.is_none());
            Ok(())
        }
        PriorityArg::Flux => {
            let queue = load_queue(&a.tree, &a.queue)?.queue;
            let batch = jobs_batch(queue.scores, &queue.jobs, &queue.weights)?;
            let meta = jobs_metadata(queue.formula, queue.algorithm, queue.now);
            write_parquet(&a.out, &batch, meta)
        }
    }
}
