//! `fairshare report` and `fairshare run --report`: the static web report of a run
//! ([`fairshare_pictures::report`]), from a run directory or alongside the run itself.

use std::path::Path;

use fairshare_analyses::compare::{RunAssociations, read_rows};
use fairshare_analyses::forecast::{Assume, ForecastOptions, trajectories};
use fairshare_base::write::atomic::{DirKind, check_replaceable};
use fairshare_base::{Error, Result};
use fairshare_engine::output::parquet::jobs_batch;
use fairshare_engine::pipeline::{Observer, Run, Site, shown};
use fairshare_pictures::plot::history::{History, Metric};
use fairshare_pictures::report::{
    Forecasts, Jobs, Movers, Part, Report, ReportOptions, RunFacts, read_run_dir, write_report,
};

use super::args::{ReportArgs, ReportPartsArgs};

/// `fairshare report --run RUN_DIR --out DIR`.
pub(crate) fn run(a: &ReportArgs) -> Result<()> {
    check_replaceable(&a.out, DirKind::Report)?;
    let d = read_run_dir(&a.run)?;
    let (history, movers) = parts(&a.parts, &d.tree, &d.fs)?;
    let report = Report {
        tree: &d.tree,
        fs: &d.fs,
        run: d.run,
        jobs: d.jobs,
        history,
        forecast: Part::LeftOut(format!(
            "no forecast: {} holds no job records to forecast from; `fairshare run --report DIR` on the site \
             includes every user's",
            a.run.display()
        )),
        movers,
    };
    write(&a.out, &report, &a.parts)
}

/// Refuses `--history`, `--previous` and `--max-pages` without `--report`, and an unreplaceable
/// report directory, before the run's work.
pub(crate) fn check_run_flags(report: Option<&Path>, p: &ReportPartsArgs) -> Result<()> {
    match report {
        Some(dir) => check_replaceable(dir, DirKind::Report).map(|_| ()),
        None if p.history.is_some() || p.previous.is_some() => {
            Err(Error::Usage("--history and --previous are parts of the web report: give --report DIR".into()))
        }
        None => Ok(()),
    }
}

/// The report of `run`, written to `dir`: with every user's forecast (assuming everyone goes on
/// as over the last window) when `site` has job records; a queue the run wrote into its run
/// directory `run_dir` as it scored it is read back from there.
pub(crate) fn write_for_run(
    dir: &Path,
    run: &Run,
    site: Option<&Site>,
    run_dir: Option<&Path>,
    p: &ReportPartsArgs,
    observer: &dyn Observer,
) -> Result<()> {
    let jobs = match (&run.queue, &run.written_queue, run_dir) {
        (Some(q), _, _) => {
            let batch = jobs_batch(q.scores.clone(), &q.jobs, &q.weights)?;
            Part::Shown(Jobs::from_batch(&batch, Path::new("<pending jobs>"), &run.tree, Some(&q.weights))?)
        }
        (None, Some(q), Some(run_dir)) => {
            let path = run_dir.join("jobs.parquet");
            Part::Shown(Jobs::from_batch(&read_rows(&path)?, &path, &run.tree, Some(&q.weights))?)
        }
        _ => Part::LeftOut("the run has no pending queue (--pending)".into()),
    };
    let options = ForecastOptions { assume: Assume::Steady, ..ForecastOptions::default() };
    let forecast = match site {
        Some(site) => match trajectories(site, &options, observer) {
            Ok(t) => Part::Shown(Forecasts { trajectories: t, assume: options.assume, target: options.target }),
            Err(e) => Part::LeftOut(format!("no forecast: {e}")),
        },
        None => Part::LeftOut("no forecast: a flux-accounting database's runs are not forecast".into()),
    };
    let (history, movers) = parts(p, &run.tree, &run.fair_share)?;
    let report = Report {
        tree: &run.tree,
        fs: &run.fair_share,
        run: RunFacts {
            source: run.source.clone(),
            now: Some(run.now),
            parameters: RunFacts::parameters_of(&run.parameters()),
        },
        jobs,
        history,
        forecast,
        movers,
    };
    write(dir, &report, p)
}

/// The history and the movers, when asked for.
fn parts(
    p: &ReportPartsArgs,
    tree: &fairshare_engine::tree::AssocTree,
    fs: &fairshare_engine::pass::FairShare,
) -> Result<(Part<History>, Part<Movers>)> {
    let history = match &p.history {
        Some(dir) => Part::Shown(History::read(dir, Metric::FsFactor)?),
        None => Part::LeftOut("no history: give --history DIR (a `fairshare usage --every` directory)".into()),
    };
    let movers = match &p.previous {
        Some(dir) => Part::Shown(Movers {
            previous: shown(dir),
            before: RunAssociations::read(dir)?,
            after: RunAssociations::of(tree, fs),
        }),
        None => Part::LeftOut("no previous run: give --previous RUN_DIR".into()),
    };
    Ok((history, movers))
}

fn write(out: &Path, report: &Report<'_>, p: &ReportPartsArgs) -> Result<()> {
    let written = write_report(out, report, &ReportOptions { max_pages: p.max_pages })?;
    if written.over_limit > 0 {
        eprintln!(
            "fairshare: {} associations got no page past --max-pages {}; raise it to write them",
            written.over_limit, p.max_pages
        );
    }
    eprintln!("fairshare: wrote the report {} ({} association pages)", out.display(), written.pages);
    Ok(())
}
