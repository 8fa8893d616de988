//! `fairshare sprio`: Slurm's `sprio` text of the scored queue, or `--check` against the
//! controller's priorities.

use std::io::Write;

use fairshare_base::{Error, Result};
use fairshare_engine::jobs::PendingFormat;
use fairshare_engine::output::sprio::{Format, SprioOptions, write_sprio};
use fairshare_engine::pipeline::Queue;

use super::args::SprioArgs;
use super::queue::{load_queue, say_no_qos};
use super::stdout::print;

/// Runs `fairshare sprio`.
pub(crate) fn run(a: &SprioArgs) -> Result<()> {
    let queue = load_queue(&a.tree, &a.queue)?;
    let (queue, qos_missing) = (queue.queue, queue.qos_missing);
    if a.check {
        return check_priorities(&queue);
    }
    let format = match (&a.format, a.long) {
        (Some(f), _) => Format::parse(f)?,
        (None, false) if std::env::var("SPRIO_FORMAT").is_ok_and(|f| !f.is_empty()) => {
            Format::parse(&std::env::var("SPRIO_FORMAT").unwrap_or_default())?
        }
        (None, long) => Format::default_for(&queue.weights, long, a.normalized, !a.users.is_empty()),
    };
    let opts = SprioOptions {
        no_header: a.no_header,
        weights_only: a.weights,
        jobs: a.jobs.clone(),
        users: a.users.clone(),
        partitions: a.partitions.clone(),
        sort: a.sort.clone(),
        tres_weight_text: queue.tres_weight_text.clone(),
        dest: None,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    write_sprio(&mut out, &queue.scores, &queue.jobs, &queue.weights, &format, &opts)?;
    out.flush().map_err(|e| Error::io("<stdout>", e))?;
    say_no_qos(qos_missing);
    Ok(())
}

/// `sprio --check`: the (job, partition) pairs whose priority differs from the controller's.
fn check_priorities(queue: &Queue) -> Result<()> {
    let jobs = &queue.jobs;
    if jobs.format != PendingFormat::SqueueJson {
        return Err(Error::Usage(
            "--check compares with the controller's priorities, which only `squeue --json` records: give \
             --pending as squeue's JSON"
                .into(),
        ));
    }
    // Read again (a stream from its spool): the queue keeps no controller values.
    let mut text = String::new();
    std::io::Read::read_to_string(&mut fairshare_base::read::source::open(&jobs.source)?, &mut text)
        .map_err(|e| Error::io(&jobs.source, e))?;
    let controller = fairshare_engine::priority::check::controller_priorities(&jobs.source, &text)?;
    let differ = fairshare_engine::priority::check::differences(jobs, &queue.scores, &controller);
    let mut text = format!("{:>15} {:<12} {:>10} {}\n", "JOBID", "PARTITION", "CONTROLLER", "COMPUTED");
    for d in &differ {
        let ours: Vec<String> = d.computed.iter().map(u32::to_string).collect();
        // One pair per line, whatever a name holds.
        let partition = d.partition.replace(|c: char| c.is_control(), "?");
        text.push_str(&format!("{:>15} {:<12} {:>10} {}\n", d.job_id, partition, d.controller, ours.join(",")));
    }
    print(text.as_bytes())?;
    eprintln!("fairshare: {} (job, partition) priorities differ from the controller's", differ.len());
    Ok(())
}
