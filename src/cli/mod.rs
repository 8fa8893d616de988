//! The command-line front end: parses arguments, resolves them into the library's site options
//! ([`settings`]), calls the pipeline ([`fairshare::pipeline`]) and prints or writes its results.

mod args;
mod compare;
mod entitlement;
mod explain;
mod fairness;
mod forecast;
mod plot;
mod progress;
mod report;
mod run;
mod settings;
mod shares;
mod usage;

use std::io::Write;
use std::path::Path;

pub use args::Cli;
use args::{Command, PriorityArg, QueueArgs, SshareArgs, TreeArgs};
use clap::Parser;
use fairshare::jobs::PendingFormat;
use fairshare::output::parquet::{into_association_batch, jobs_batch, jobs_metadata, metadata, write_parquet};
use fairshare::output::sprio::{Format, SprioOptions, write_sprio};
use fairshare::output::sshare::{Parsable, SshareOptions, write_sshare};
use fairshare::output::sshare_json::{SshareJsonOptions, write_sshare_json, write_sshare_yaml};
use fairshare::pipeline::{PendingSource, Queue, Site, SiteOptions, charge_metadata, score_to_parquet};
use fairshare::priority::SlurmPriority;
use fairshare::{Error, Result};
use progress::Terminal;
use settings::Settings;

fn sshare_options(a: &SshareArgs) -> SshareOptions {
    SshareOptions {
        long: a.long,
        parsable: if a.parsable {
            Parsable::Ending
        } else if a.parsable2 {
            Parsable::NoEnding
        } else {
            Parsable::No
        },
        no_header: a.no_header,
        partitions: a.partitions,
        users_only: a.users_only,
        accounts: a.accounts.clone(),
        users: a.users.clone(),
        format: a.format.clone(),
        dest: None,
    }
}

/// What `sshare --json` writes: the text's filters, and the command line for `meta.command`.
fn sshare_json_options(a: &SshareArgs, cluster: String) -> SshareJsonOptions {
    SshareJsonOptions {
        cluster,
        users_only: a.users_only,
        accounts: a.accounts.clone(),
        users: a.users.clone(),
        command: std::env::args().skip(1).collect(),
        dest: None,
    }
}

/// Writes `text` to stdout.
fn print(text: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text).and_then(|()| out.flush()).map_err(|e| Error::io("<stdout>", e))
}

/// Runs the parsed command line.
///
/// # Errors
/// Whatever the command fails with; the caller prints it and exits non-zero.
pub fn run(cli: Cli) -> Result<()> {
    if let Some(n) = cli.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global()
            .map_err(|e| Error::Usage(format!("--threads {n}: {e}")))?;
    }
    let command = match cli.command {
        Some(c) => c,
        // No subcommand: the main job on the embedded default site.
        None => Cli::try_parse_from(["fairshare", "run"]).ok().and_then(|c| c.command).expect("`run` parses"),
    };
    // Standard input can be read as one input only.
    let stdin: Vec<&str> = command
        .inputs()
        .into_iter()
        .filter(|(_, p)| p.as_os_str() == fairshare::io::read::source::STDIN)
        .map(|(flag, _)| flag)
        .collect();
    if stdin.len() > 1 {
        return Err(Error::Usage(format!(
            "standard input (`-`) is given to {}: only one input can read it; give the others as files",
            stdin.join(" and ")
        )));
    }
    match command {
        Command::Sshare(a) => {
            if a.helpformat {
                return print(fairshare::output::sshare::help_format().as_bytes());
            }
            let settings = Settings::new(&a.tree, &a.usage, None)?;
            let site = settings.options.resolve()?;
            let (tree, result, _) = site.fair_share(&Terminal::new(settings.default_notes()))?;
            if a.verbose {
                let o = &settings.options;
                eprintln!(
                    "fairshare: {}: {} associations, {}{}",
                    site.tree.source(),
                    tree.len(),
                    result.params.algorithm.name(),
                    o.jobs.as_deref().map_or_else(
                        || " with the tree's usage".to_string(),
                        |j| format!(
                            " with usage from {} at --now {}",
                            fairshare::pipeline::shown(j),
                            o.now.as_deref().unwrap_or("?")
                        )
                    )
                );
            }
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            if a.json || a.yaml {
                let cluster = site.slurm_conf.as_ref().and_then(|c| c.cluster_name.clone()).unwrap_or_default();
                let opts = sshare_json_options(&a, cluster);
                if a.json {
                    write_sshare_json(&mut out, &tree, &result, &opts)?;
                } else {
                    write_sshare_yaml(&mut out, &tree, &result, &opts)?;
                }
            } else {
                write_sshare(&mut out, &tree, &result, &sshare_options(&a))?;
            }
            out.flush().map_err(|e| Error::io("<stdout>", e))
        }
        Command::Compute(a) => {
            let settings = Settings::new(&a.tree, &a.usage, None)?;
            let site = settings.options.resolve()?;
            let (tree, result, charge) = site.fair_share(&Terminal::new(settings.default_notes()))?;
            let mut meta = metadata(&result, &site.tree.source());
            meta.extend(site.metadata());
            meta.extend(charge_metadata(charge.as_ref()));
            write_parquet(&a.out, &into_association_batch(&tree, result), meta)
        }
        Command::Usage(a) => usage::run(&a),
        Command::Run(a) => run::run(&a),
        Command::Shares(a) => shares::run(&a),
        Command::Explain(a) => explain::run(&a),
        Command::Compare(a) => compare::compare(&a),
        Command::Diff(a) => compare::diff(&a),
        Command::Plot(a) => plot::run(&a),
        Command::Entitlement(a) => entitlement::run(&a),
        Command::Fairness(a) => fairness::run(&a),
        Command::Forecast(a) => forecast::run(&a),
        Command::Report(a) => report::run(&a),
        Command::Sprio(a) => {
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
        Command::Score(a) => match a.queue.priority {
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
        },
    }
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
    std::io::Read::read_to_string(&mut fairshare::io::read::source::open(&jobs.source)?, &mut text)
        .map_err(|e| Error::io(&jobs.source, e))?;
    let controller = fairshare::priority::check::controller_priorities(&jobs.source, &text)?;
    let differ = fairshare::priority::check::differences(jobs, &queue.scores, &controller);
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

/// Says, once the queue is scored, that no QOS table stood behind Slurm's QOS factors.
fn say_no_qos(missing: bool) {
    if missing {
        eprintln!("fairshare: no --qos: every QOS priority factor is 0");
    }
}

/// The site of a command scoring a queue with Slurm's formula, and its queue.
fn slurm_queue_site(tree: &TreeArgs, q: &QueueArgs) -> Result<(Settings, Site, PendingSource)> {
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
struct LoadedQueue {
    queue: Queue,
    qos_missing: bool,
}

/// The queue of `sprio` and `score --priority flux`, scored whole.
fn load_queue(tree: &TreeArgs, q: &QueueArgs) -> Result<LoadedQueue> {
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

/// True when `e` is a failed write to a closed pipe (`fairshare ... | head`).
pub fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { path, source } if path == Path::new("<stdout>") && source.kind() == std::io::ErrorKind::BrokenPipe)
}
