//! `fairshare run`: the nightly job. Usage → fair-share → priorities for a whole site, printed as
//! sshare's long table or written as one run directory ([`fairshare_engine::pipeline::Run::write_dir`]).

use std::io::Write;
use std::path::Path;

use fairshare_base::write::atomic::{AtomicFile, DirKind, check_replaceable};
use fairshare_base::{Error, Result};
use fairshare_engine::output::prometheus::{JobRecords, PrometheusOptions, RunFacts, write_prometheus};
use fairshare_engine::output::sshare::{SshareOptions, write_sshare};
use fairshare_engine::pipeline::{Run, run_flux_db};

use super::args::RunArgs;
use super::progress::Terminal;
use super::settings::Settings;

/// `fairshare run`.
pub(crate) fn run(a: &RunArgs) -> Result<()> {
    // Refused before any work (and before a flux write-back): the check is repeated at commit.
    if let Some(dir) = &a.out_dir {
        check_replaceable(dir, DirKind::Run)?;
    }
    super::report::check_run_flags(a.report.as_deref(), &a.report_parts)?;
    let (mut run, observer, cluster, site) = match &a.flux_db {
        Some(db) => {
            // The database is the whole site: no site file, embedded or given.
            let o = super::settings::flags(&a.tree, &a.usage)?;
            let observer = Terminal::new(Vec::new());
            let run = run_flux_db(db, o.now()?, o.params(None), a.out_dir.is_some(), a.write_back, &observer)?;
            (run, observer, String::new(), None)
        }
        None => {
            let settings = Settings::new(&a.tree, &a.usage, Some((a.pending.as_deref(), a.pending_format)))?;
            let site = settings.options.resolve()?;
            let observer = Terminal::new(settings.default_notes());
            let cluster = site.slurm_conf.as_ref().and_then(|c| c.cluster_name.clone()).unwrap_or_default();
            // A run directory takes the queue as it is scored, never all of it in memory.
            let run = match &a.out_dir {
                Some(dir) => site.run_into_dir(dir, &observer)?,
                None => site.run(false, &observer)?,
            };
            // The settings keep the embedded site's files, which the report's forecast reads again.
            (run, observer, cluster, Some((site, settings)))
        }
    };
    if let (Some(dir), None) = (&a.out_dir, &site) {
        run.write_dir(dir, &observer)?;
    }
    // After the run directory, whose jobs.parquet holds the queue a run directory was written with.
    if let Some(dir) = &a.report {
        let site = site.as_ref().map(|(s, _)| s);
        super::report::write_for_run(dir, &run, site, a.out_dir.as_deref(), &a.report_parts, &observer)?;
    }
    if let Some(path) = &a.prometheus {
        write_textfile(path, &run, cluster)?;
    }
    match &a.out_dir {
        Some(dir) => {
            if observer.interactive() {
                eprintln!("fairshare: wrote {}", dir.display());
            }
            Ok(())
        }
        None => print_sshare(&run, &observer),
    }
}

/// The run as a Prometheus textfile at `path`, replaced atomically (the collector never reads half a file).
fn write_textfile(path: &Path, run: &Run, cluster: String) -> Result<()> {
    let facts = RunFacts {
        cluster,
        now: run.now,
        records: run.charge.as_ref().map(|c| JobRecords { read: c.records, charged: c.charged, skipped: c.skipped }),
        pending_jobs: run
            .queue
            .as_ref()
            .map(|q| q.scores.len() as u64)
            .or(run.written_queue.as_ref().map(|q| q.priority_rows)),
        stages: run.stages.done().iter().map(|(name, secs, _)| ((*name).to_string(), *secs)).collect(),
    };
    let mut file = AtomicFile::create(path)?;
    let opts = PrometheusOptions { dest: Some(path.to_path_buf()) };
    write_prometheus(&mut file, &run.tree, &run.fair_share, &facts, &opts)?;
    file.commit()
}

/// sshare's long table of the run on stdout.
fn print_sshare(run: &Run, observer: &Terminal) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let opts = SshareOptions { long: true, ..SshareOptions::default() };
    write_sshare(&mut out, &run.tree, &run.fair_share, &opts)?;
    out.flush().map_err(|e| Error::io("<stdout>", e))?;
    if observer.interactive() {
        eprintln!("fairshare: {}; add --out-dir DIR for the run directory (Parquet, sprio, run.json)", run.source);
    }
    Ok(())
}
