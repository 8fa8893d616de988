//! The command-line front end: resolves clap's arguments into settings and runs the commands.

mod args;
mod compare;
mod explain;
mod flux_site;
mod plot;
mod progress;
mod run;
mod shares;
mod site;
mod usage;

use std::io::Write;
use std::path::{Path, PathBuf};

pub use args::Cli;
use args::{
    AlgoArg, Command, PendingFormatArg, PriorityArg, QueueArgs, SshareArgs, TreeArgs, TreeFormatArg, UsageArgs,
};
use clap::Parser;
use fairshare::config::SlurmConf;
use fairshare::fairshare::{self as fs, Algorithm, FairShare, Params};
use fairshare::io::TreeFormat;
use fairshare::jobs::{ParquetWaves, PendingFormat, PendingJobs, parse_time_arg};
use fairshare::output::parquet::{ParquetSink, into_association_batch, metadata, write_parquet};
use fairshare::output::parquet::{jobs_batch, jobs_metadata};
use fairshare::output::sprio::{Format, SprioOptions, write_sprio};
use fairshare::output::sshare::{Parsable, SshareOptions, write_sshare};
use fairshare::priority::flux::score_flux;
use fairshare::priority::{Scores, SlurmPriority, Weights};
use fairshare::tree::AssocTree;
use fairshare::{Error, Result};
use parquet::file::metadata::KeyValue;
use usage::UsageSettings;

/// Resolved tree input and algorithm parameters.
struct TreeSettings {
    path: Option<PathBuf>,
    format: Option<TreeFormat>,
    params: Params,
    /// What-if share changes: (account or USER@ACCOUNT, shares).
    set_shares: Vec<(String, fairshare::tree::Shares)>,
}

impl TreeSettings {
    /// Flags win; then slurm.conf (PriorityFlags, FairShareDampeningFactor); then Slurm's defaults.
    fn resolve(a: &TreeArgs, conf: Option<&SlurmConf>) -> Result<Self> {
        let algorithm = match a.algo {
            Some(AlgoArg::FairTree) => Algorithm::FairTree,
            Some(AlgoArg::Classic) => Algorithm::Classic,
            Some(AlgoArg::Flux) => Algorithm::Flux,
            None if conf.is_some_and(|c| !c.priority_flags.fair_tree) => Algorithm::Classic,
            None => Algorithm::FairTree,
        };
        let format = a.tree_format.map(|f| match f {
            TreeFormatArg::AssocCsv => TreeFormat::AssocCsv,
            TreeFormatArg::Sshare => TreeFormat::Sshare,
            TreeFormatArg::FluxCsv => TreeFormat::FluxCsv,
            TreeFormatArg::FluxDb => TreeFormat::FluxDb,
            TreeFormatArg::Parquet => TreeFormat::Parquet,
            TreeFormatArg::SacctmgrDump => TreeFormat::SacctmgrDump,
        });
        let dampening = a.dampening.or(conf.map(|c| c.fair_share_dampening_factor)).unwrap_or(1);
        let depth_oblivious = a.depth_oblivious || conf.is_some_and(|c| c.priority_flags.depth_oblivious);
        let set_shares = a
            .set_shares
            .iter()
            .map(|(name, v)| {
                let shares = match v.to_ascii_lowercase().as_str() {
                    "parent" => fairshare::tree::Shares::Parent,
                    _ => v.parse().map(fairshare::tree::Shares::Value).map_err(|_| {
                        Error::Usage(format!("--set-shares {name}={v}: shares are a count or `parent`"))
                    })?,
                };
                Ok((name.clone(), shares))
            })
            .collect::<Result<_>>()?;
        Ok(TreeSettings {
            path: a.tree.clone(),
            format,
            params: Params { algorithm, dampening, depth_oblivious, flux_exact_sums: a.flux_exact_sums },
            set_shares,
        })
    }

    /// The tree input as given (`None` for the embedded default), with the what-if edits.
    fn given_input(&self) -> Result<Option<fairshare::tree::TreeInput>> {
        let Some(p) = &self.path else { return Ok(None) };
        let mut input = fairshare::io::read_tree_input(p, self.format)?;
        self.edit(&mut input)?;
        Ok(Some(input))
    }

    /// The embedded default tree, with the what-if edits.
    fn default_input(&self) -> Result<fairshare::tree::TreeInput> {
        let mut input = fairshare::io::default_tree_input()?;
        self.edit(&mut input)?;
        Ok(input)
    }

    /// Applies `--set-shares`: an account row by name, or a user row by USER@ACCOUNT.
    fn edit(&self, input: &mut fairshare::tree::TreeInput) -> Result<()> {
        for (name, shares) in &self.set_shares {
            let (user, account) = match name.split_once('@') {
                Some((u, a)) => (Some(u), a),
                None => (None, name.as_str()),
            };
            let mut found = false;
            for r in &mut input.records {
                if r.account == account && r.user.as_deref() == user {
                    r.shares = *shares;
                    found = true;
                }
            }
            if !found {
                return Err(Error::Usage(format!("--set-shares: no association {name:?} in the tree")));
            }
        }
        Ok(())
    }

    /// What-if `--set-shares`, recorded with the outputs so a what-if run differs from the real
    /// one in its parameters, not only in its numbers.
    fn what_if_metadata(&self) -> Vec<KeyValue> {
        if self.set_shares.is_empty() {
            return Vec::new();
        }
        let edits: Vec<String> = self
            .set_shares
            .iter()
            .map(|(name, shares)| match shares {
                fairshare::tree::Shares::Parent => format!("{name}=parent"),
                fairshare::tree::Shares::Value(n) => format!("{name}={n}"),
            })
            .collect();
        vec![KeyValue::new("fairshare.set_shares".to_string(), edits.join(","))]
    }

    fn source(&self) -> String {
        self.path.as_ref().map_or_else(|| site::EMBEDDED.to_string(), |p| site::shown(p))
    }

    fn load(&self) -> Result<(AssocTree, FairShare)> {
        let tree = match (&self.path, self.set_shares.is_empty()) {
            (Some(p), true) => fairshare::io::read_tree(p, self.format)?,
            (Some(_), false) => AssocTree::build(self.given_input()?.expect("a path was given"))?,
            (None, _) => AssocTree::build(self.default_input()?)?,
        };
        let result = fs::compute(&tree, &self.params)?;
        Ok((tree, result))
    }
}

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

/// The embedded default site for a command given no input at all (see [`site`]); kept on disk
/// while the returned value lives.
fn embedded_if_empty(tree: &mut TreeArgs, usage: &mut UsageArgs) -> Result<Option<site::EmbeddedSite>> {
    site::SiteSlots { tree, usage, pending: None }.embedded_if_empty()
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
        .filter(|(_, p)| p.as_os_str() == fairshare::io::source::STDIN)
        .map(|(flag, _)| flag)
        .collect();
    if stdin.len() > 1 {
        return Err(Error::Usage(format!(
            "standard input (`-`) is given to {}: only one input can read it; give the others as files",
            stdin.join(" and ")
        )));
    }
    match command {
        Command::Sshare(mut a) => {
            if a.helpformat {
                let text = fairshare::output::sshare::help_format();
                let mut out = std::io::stdout().lock();
                return out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| Error::io("<stdout>", e));
            }
            let _site = embedded_if_empty(&mut a.tree, &mut a.usage)?;
            let (settings, tree, result, _) = load_with_usage(&a.tree, &a.usage)?;
            if a.verbose {
                eprintln!(
                    "fairshare: {}: {} associations, {}{}",
                    settings.source(),
                    tree.len(),
                    result.params.algorithm.name(),
                    a.usage.jobs.as_deref().map_or_else(
                        || " with the tree's usage".to_string(),
                        |j| format!(
                            " with usage from {} at --now {}",
                            site::shown(j),
                            a.usage.now.as_deref().unwrap_or("?")
                        )
                    )
                );
            }
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            write_sshare(&mut out, &tree, &result, &sshare_options(&a))?;
            out.flush().map_err(|e| Error::io("<stdout>", e))
        }
        Command::Compute(mut a) => {
            let _site = embedded_if_empty(&mut a.tree, &mut a.usage)?;
            let (settings, tree, result, usage_meta) = load_with_usage(&a.tree, &a.usage)?;
            let mut meta = metadata(&result, &settings.source());
            meta.extend(usage_meta);
            meta.extend(settings.what_if_metadata());
            write_parquet(&a.out, &into_association_batch(&tree, result), meta)
        }
        Command::Usage(mut a) => {
            let _site = embedded_if_empty(&mut a.tree, &mut a.usage)?;
            let instants = usage::history_instants(&a)?;
            if !instants.is_empty() {
                // Refused before the charging; checked again when the history is committed.
                fairshare::output::atomic::check_replaceable(&a.out, fairshare::output::atomic::DirKind::History)?;
            }
            if let (Some(last), None) = (instants.last(), &a.usage.now) {
                a.usage.now = Some(last.to_string());
            }
            let usage = UsageSettings::resolve(&a.usage)?.ok_or_else(|| Error::Usage("usage needs --jobs".into()))?;
            if !instants.is_empty() {
                let settings = TreeSettings::resolve(&a.tree, usage.conf.as_ref())?;
                return usage::write_history(&settings, &usage, instants, &a.out);
            }
            let settings = TreeSettings::resolve(&a.tree, usage.conf.as_ref())?;
            let (input, usage_meta, _) = charged_input(&settings, &usage)?;
            let mut meta = fairshare::output::parquet::version_metadata();
            meta.extend(usage_meta);
            meta.extend(settings.what_if_metadata());
            fairshare::io::parquet_tree::write(&a.out, &input.records, meta)
        }
        Command::Run(a) => run::run(a),
        Command::Shares(a) => shares::run(&a),
        Command::Explain(mut a) => {
            let _site = site::SiteSlots {
                tree: &mut a.tree,
                usage: &mut a.usage,
                pending: Some((&mut a.pending, &mut a.pending_format)),
            }
            .embedded_if_empty()?;
            explain::run(&a)
        }
        Command::Compare(mut a) => {
            let _site = embedded_if_empty(&mut a.tree, &mut a.usage)?;
            compare::compare(&a)
        }
        Command::Diff(a) => compare::diff(&a),
        Command::Plot(mut a) => {
            let _site = match &mut a.what {
                args::PlotCommand::Icicle(i) => embedded_if_empty(&mut i.tree, &mut i.usage)?,
                args::PlotCommand::History(_) => None,
            };
            plot::run(&a)
        }
        Command::Sprio(a) => {
            let queue = Queue::load(&a.tree, &a.queue)?;
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
            say_no_qos(&a.queue);
            Ok(())
        }
        Command::Score(a) => match a.queue.priority {
            PriorityArg::Slurm => {
                score_slurm(&a.tree, &a.queue, &a.out)?;
                say_no_qos(&a.queue);
                Ok(())
            }
            PriorityArg::Flux => {
                let queue = Queue::load(&a.tree, &a.queue)?;
                let batch = jobs_batch(queue.scores, &queue.jobs, &queue.weights)?;
                let meta = jobs_metadata(queue.formula, queue.algorithm, queue.now);
                write_parquet(&a.out, &batch, meta)
            }
        },
    }
}

/// Says, once the queue is scored, that no QOS table stood behind Slurm's QOS factors.
fn say_no_qos(a: &QueueArgs) {
    if a.priority == PriorityArg::Slurm && a.usage.qos.is_none() {
        eprintln!("fairshare: no --qos: every QOS priority factor is 0");
    }
}

/// slurm.conf and the QOS dump the usage flags name, each read once: taken from the usage
/// settings when job records are charged, else read from their files.
fn site_files(
    u: &UsageArgs,
    usage: Option<&UsageSettings>,
) -> Result<(Option<SlurmConf>, Option<fairshare::config::QosTable>)> {
    Ok(match usage {
        Some(us) => (us.conf.clone(), us.qos.clone()),
        None => (
            u.slurm_conf.as_deref().map(fairshare::config::slurm_conf::read).transpose()?,
            u.qos.as_deref().map(fairshare::config::qos::read).transpose()?,
        ),
    })
}

/// The tree and its fair-share with the algorithm following slurm.conf's PriorityFlags whether or
/// not job records are charged (`explain`, `plot`), and the site files read on the way.
fn load_following_conf(
    tree_args: &TreeArgs,
    u: &UsageArgs,
) -> Result<(TreeSettings, AssocTree, FairShare, Option<SlurmConf>, Option<fairshare::config::QosTable>)> {
    let usage = UsageSettings::resolve(u)?;
    let (conf, qos) = site_files(u, usage.as_ref())?;
    let settings = TreeSettings::resolve(tree_args, conf.as_ref())?;
    let (tree, result) = match &usage {
        Some(us) => {
            let (input, _, report) = charged_input(&settings, us)?;
            charged_pass(input, Some(&report), &settings.params)?
        }
        None => settings.load()?,
    };
    Ok((settings, tree, result, conf, qos))
}

/// The tree and its fair-share, with user usage first recomputed from job records when `--jobs`
/// is given, and the algorithm following slurm.conf's PriorityFlags either way; also the usage
/// parameters for the output metadata.
fn load_with_usage(tree_args: &TreeArgs, u: &UsageArgs) -> Result<(TreeSettings, AssocTree, FairShare, Vec<KeyValue>)> {
    let Some(usage) = UsageSettings::resolve(u)? else {
        let (conf, _) = site_files(u, None)?;
        let settings = TreeSettings::resolve(tree_args, conf.as_ref())?;
        let (tree, result) = settings.load()?;
        return Ok((settings, tree, result, Vec::new()));
    };
    let settings = TreeSettings::resolve(tree_args, usage.conf.as_ref())?;
    let (input, meta, report) = charged_input(&settings, &usage)?;
    let (tree, result) = charged_pass(input, Some(&report), &settings.params)?;
    Ok((settings, tree, result, meta))
}

/// The tree of an input and its fair-share; when its usage was charged from job records (`report`),
/// as Slurm holds it after the last decay pass: classic then reads the accounts at that pass's
/// start (`report.pass_start`), the rest is [`fs::compute`].
fn charged_pass(
    input: fairshare::tree::TreeInput,
    report: Option<&fairshare::usage::ChargeReport>,
    params: &Params,
) -> Result<(AssocTree, FairShare)> {
    let Some(start) = report.and_then(|r| r.pass_start.as_ref()) else {
        let tree = AssocTree::build(input)?;
        let result = fs::compute(&tree, params)?;
        return Ok((tree, result));
    };
    let by_id: std::collections::HashMap<u64, f64> =
        input.records.iter().zip(start).filter(|(r, _)| r.user.is_some()).map(|(r, &u)| (r.id, u)).collect();
    let tree = AssocTree::build(input)?;
    let by_row: Vec<f64> = tree.ids().iter().map(|id| by_id.get(id).copied().unwrap_or(0.0)).collect();
    let result = fs::compute_after_pass(&tree, &tree.with_user_usage(&by_row), params)?;
    Ok((tree, result))
}

/// The tree input with its user usage recomputed from the job records, the usage metadata, and
/// what the charging saw.
fn charged_input(
    settings: &TreeSettings,
    usage: &UsageSettings,
) -> Result<(fairshare::tree::TreeInput, Vec<KeyValue>, fairshare::usage::ChargeReport)> {
    let mut input = match usage.tree_input(settings.given_input()?)? {
        Some(t) => t,
        None => settings.default_input()?,
    };
    let algorithm = settings.params.algorithm;
    let report = usage.apply(&mut input, algorithm)?;
    let meta = usage.metadata(algorithm).into_iter().map(|(k, v)| KeyValue::new(k, v)).collect();
    Ok((input, meta, report))
}

fn pending_format(f: PendingFormatArg) -> PendingFormat {
    match f {
        PendingFormatArg::Csv => PendingFormat::Csv,
        PendingFormatArg::Parquet => PendingFormat::Parquet,
        PendingFormatArg::SqueueJson => PendingFormat::SqueueJson,
    }
}

/// A scored pending queue.
struct Queue {
    jobs: PendingJobs,
    weights: Weights,
    scores: Scores,
    tres_weight_text: String,
    formula: &'static str,
    algorithm: Algorithm,
    now: i64,
}

impl Queue {
    /// Scores `pending` with Slurm's multifactor plugin.
    fn slurm(
        conf: &SlurmConf,
        qos: Option<&fairshare::config::QosTable>,
        now: i64,
        tree: &AssocTree,
        fs: &FairShare,
        pending: &Path,
        format: Option<PendingFormat>,
    ) -> Result<Self> {
        let prio = SlurmPriority::new(conf, qos, now);
        let jobs = PendingJobs::read(pending, format, &prio.weights.tres_keys())?;
        let line = progress::Progress::new("scoring");
        line.start(&format!("scoring {} pending jobs", jobs.len()));
        let (scores, unknown) = prio.score(&jobs, tree, fs)?;
        line.done();
        report_unknown(&jobs, &unknown);
        let tres_weight_text = prio.weights.tres.iter().map(|(t, w)| format!("{t}={w}")).collect::<Vec<_>>().join(",");
        Ok(Queue {
            weights: prio.weights.clone(),
            jobs,
            scores,
            tres_weight_text,
            formula: "slurm",
            algorithm: fs.params.algorithm,
            now,
        })
    }

    fn load(tree_args: &TreeArgs, a: &QueueArgs) -> Result<Self> {
        let now = queue_now(a)?;
        let pending_format = a.pending_format.map(pending_format);
        match a.priority {
            PriorityArg::Slurm => {
                let (conf, qos, tree, fs) = slurm_site(tree_args, a)?;
                Queue::slurm(&conf, qos.as_ref(), now, &tree, &fs, &a.pending, pending_format)
            }
            PriorityArg::Flux => {
                let mut settings = TreeSettings::resolve(tree_args, None)?;
                settings.params.algorithm = Algorithm::Flux;
                // Detect the format once: the priority tables come from the same DB as the tree.
                if let (Some(p), None) = (&settings.path, settings.format) {
                    settings.format = Some(TreeFormat::detect(p)?);
                }
                let (tree, fs) = settings.load()?;
                let tables = match (&settings.path, settings.format) {
                    (Some(p), Some(TreeFormat::FluxDb)) => fairshare::io::flux_db::read_priority_tables(p)?,
                    _ => Default::default(),
                };
                let jobs = PendingJobs::read(&a.pending, pending_format, &[])?;
                let (scores, unknown) = score_flux(&jobs, &tree, &fs, &tables);
                report_unknown(&jobs, &unknown);
                let weights = Weights {
                    age: 0.0,
                    assoc: tables.weights.bank.into(),
                    fairshare: tables.weights.fairshare.into(),
                    job_size: 0.0,
                    partition: 0.0,
                    qos: tables.weights.queue.into(),
                    tres: Vec::new(),
                };
                Ok(Queue {
                    jobs,
                    weights,
                    scores,
                    tres_weight_text: String::new(),
                    formula: "flux",
                    algorithm: Algorithm::Flux,
                    now,
                })
            }
        }
    }
}

/// `--now` (any time [`parse_time_arg`] reads, `now` included), or the current time.
fn now_arg(now: Option<&str>) -> Result<i64> {
    parse_time_arg(now.unwrap_or("now")).map_err(|m| Error::Usage(format!("--now: {m}")))
}

fn queue_now(a: &QueueArgs) -> Result<i64> {
    now_arg(a.usage.now.as_deref())
}

/// slurm.conf, the QOS dump, and the tree with its fair-share as slurm.conf's flags ask (usage
/// recomputed from job records when `--jobs` is given).
fn slurm_site(
    tree_args: &TreeArgs,
    a: &QueueArgs,
) -> Result<(SlurmConf, Option<fairshare::config::QosTable>, AssocTree, FairShare)> {
    if a.usage.slurm_conf.is_none() {
        return Err(Error::Usage("Slurm priorities need --slurm-conf".into()));
    }
    let (_, tree, fs, conf, qos) = load_following_conf(tree_args, &a.usage)?;
    Ok((conf.expect("--slurm-conf was given"), qos, tree, fs))
}

/// Jobs per slice of a streamed `score`: about one Parquet row group of rows.
const JOBS_PER_SLICE: usize = 1 << 19;

/// `score` with Slurm's formula, streamed: a Parquet queue is read a wave of row groups at a time
/// (other formats whole), and each wave scored and written a slice of jobs at a time while the
/// previous slice is written, so neither the queue nor its scores are ever all in memory. Jobs are
/// scored independently of each other, so the waves give the same rows as the whole queue would.
fn score_slurm(tree_args: &TreeArgs, a: &QueueArgs, out: &Path) -> Result<()> {
    let now = queue_now(a)?;
    let (conf, qos, tree, fs) = slurm_site(tree_args, a)?;
    let prio = SlurmPriority::new(&conf, qos.as_ref(), now);
    let keep = prio.weights.tres_keys();
    let format = match a.pending_format {
        Some(f) => pending_format(f),
        None => PendingFormat::detect(&a.pending)?,
    };
    let mut waves = match format {
        PendingFormat::Parquet => Some(ParquetWaves::open(&a.pending, &keep)?),
        PendingFormat::Csv | PendingFormat::SqueueJson => None,
    };
    // The queue as one chunk: a text queue, or a Parquet file without row groups (its schema
    // still gets a file).
    let whole = || PendingJobs::read(&a.pending, Some(format), &keep);
    let meta = jobs_metadata("slurm", fs.params.algorithm, now);
    let mut sink: Option<ParquetSink> = None;
    // Writes a scored slice; the first also opens the file with its schema and encodings.
    let write = |sink: &mut Option<ParquetSink>, batch: Option<arrow::array::RecordBatch>| -> Result<()> {
        let Some(batch) = batch else { return Ok(()) };
        match sink {
            Some(s) => s.write(&batch),
            None => sink.insert(ParquetSink::create(out, &batch, meta.clone())?).write(&batch),
        }
    };
    let mut held = None;
    let mut unknown = Unknown::default();
    let line = progress::Progress::new("scoring the queue");
    let total = waves.as_ref().map(ParquetWaves::rows);
    let mut scored_jobs = 0u64;
    let mut chunk = Some(match waves.as_mut().and_then(ParquetWaves::next_wave) {
        Some(wave) => wave?,
        None => whole()?,
    });
    while let Some(jobs) = chunk.take() {
        let queue = prio.prepare(&jobs, &tree, &fs)?;
        let mut start = 0;
        loop {
            let end = (start + JOBS_PER_SLICE).min(jobs.len());
            let (written, scored) = rayon::join(
                || write(&mut sink, held.take()),
                || {
                    let mut scores = Scores::default();
                    let rows = queue.score_jobs(start..end, &mut scores);
                    jobs_batch(scores, &jobs, &prio.weights).map(|b| (b, rows))
                },
            );
            written?;
            let (batch, rows) = scored?;
            unknown.note(&jobs, &rows);
            held = Some(batch);
            scored_jobs += (end - start) as u64;
            line.report(scored_jobs, total.unwrap_or(jobs.len() as u64).max(scored_jobs), "jobs");
            start = end;
            if start >= jobs.len() {
                break;
            }
        }
        // The next wave is read while this one's last slice is written.
        let (written, next) =
            rayon::join(|| write(&mut sink, held.take()), || waves.as_mut().and_then(ParquetWaves::next_wave));
        written?;
        chunk = next.transpose()?;
    }
    unknown.report();
    match sink {
        Some(s) => s.finish(),
        None => Err(Error::Usage("the queue gave no batch to write".into())),
    }
}

/// Jobs without an association, which are scored with fair-share 0 as Slurm does: counted over
/// the queue, and the first described, to be said once.
#[derive(Default)]
struct Unknown {
    count: usize,
    first: Option<String>,
}

impl Unknown {
    /// Notes the jobs at `rows` of `jobs`.
    fn note(&mut self, jobs: &PendingJobs, rows: &[usize]) {
        if let (None, Some(&j)) = (&self.first, rows.first()) {
            self.first = Some(format!(
                "job {} (user {}, account {}, {})",
                jobs.job_id[j],
                jobs.names.name(jobs.user[j]),
                jobs.names.name(jobs.account[j]),
                jobs.location(j)
            ));
        }
        self.count += rows.len();
    }

    fn report(&self) {
        if let Some(first) = &self.first {
            eprintln!(
                "fairshare: warning: {} job(s) have no association and score fair-share 0, e.g. {first}",
                self.count
            );
        }
    }
}

/// Says once that jobs at `unknown` have no association.
fn report_unknown(jobs: &PendingJobs, unknown: &[usize]) {
    let mut u = Unknown::default();
    u.note(jobs, unknown);
    u.report();
}

/// True when `e` is a failed write to a closed pipe (`fairshare ... | head`).
pub fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { path, source } if path == Path::new("<stdout>") && source.kind() == std::io::ErrorKind::BrokenPipe)
}
