//! A static web report of a run: the cluster at a glance and one page per association, written
//! as one directory of plain HTML, inline SVG, one style sheet and one script, with no request
//! outside the directory, so it works opened from disk or served by any web server.
//!
//! - `index.html`: the icicle of the tree, the counts, the run's parameters and time, the top
//!   movers since a previous run, and a search over accounts and users (the index is inline
//!   JSON; the script inserts names as text, never as markup);
//! - `a<ID>.html`, one per association (by its id, never its name): its path from the root as
//!   [`crate::explain`] derives it, its history ([`crate::plot::history`]), for a user its
//!   forecast ([`crate::forecast::trajectories`]) and pending jobs with their priority terms,
//!   and its siblings side by side.
//!
//! A part the inputs cannot give (no pending queue, no history, no job records to forecast
//! from) is left out with a line saying why ([`Part::LeftOut`]). Names are untrusted: every one
//! passes through [`html::escape`]. Large trees get pages only for the associations a user would
//! look up (accounts with users, users with pending jobs), at most [`ReportOptions::max_pages`].

pub mod html;
mod jobs;
mod pages;
mod run_dir;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use rayon::prelude::*;

pub use jobs::{JobRow, Jobs};
pub use run_dir::{RunDirReport, read_run_dir};

use crate::compare::RunAssociations;
use crate::forecast::{Assume, Trajectories};
use crate::output::atomic::{AtomicDir, DirKind};
use crate::pass::FairShare;
use crate::plot::history::History;
use crate::tree::AssocTree;
use crate::{Error, Result};

/// A part of the report, or why it is left out (said where it would have been).
#[derive(Debug)]
pub enum Part<T> {
    /// The part's data.
    Shown(T),
    /// Why the part is not there.
    LeftOut(String),
}

impl<T> Part<T> {
    /// The data, when shown.
    pub fn shown(&self) -> Option<&T> {
        match self {
            Part::Shown(t) => Some(t),
            Part::LeftOut(_) => None,
        }
    }
}

/// What the report says about the run itself.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// What the run calls its site.
    pub source: String,
    /// The evaluation time, epoch seconds.
    pub now: Option<i64>,
    /// The run's parameters (`run.json`'s), as (name, value) text.
    pub parameters: Vec<(String, String)>,
}

impl RunFacts {
    /// The parameters of a `run.json` `parameters` object, in its order.
    pub fn parameters_of(json: &serde_json::Value) -> Vec<(String, String)> {
        let Some(map) = json.as_object() else { return Vec::new() };
        map.iter()
            .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string)))
            .collect()
    }
}

/// Every user's forecast, for the user pages.
#[derive(Debug)]
pub struct Forecasts {
    /// Everyone's trajectory.
    pub trajectories: Trajectories,
    /// What they assume.
    pub assume: Assume,
    /// The factor whose reaching each page states.
    pub target: f64,
}

/// The factors that moved since a previous run.
#[derive(Debug)]
pub struct Movers {
    /// The previous run directory, as the page names it.
    pub previous: String,
    /// Its associations.
    pub before: RunAssociations,
    /// This run's (row-aligned with its tree).
    pub after: RunAssociations,
}

/// Everything a report shows.
#[derive(Debug)]
pub struct Report<'a> {
    /// The tree.
    pub tree: &'a AssocTree,
    /// Its fair-share.
    pub fs: &'a FairShare,
    /// The run's source, time and parameters.
    pub run: RunFacts,
    /// The pending queue with its priority terms.
    pub jobs: Part<Jobs>,
    /// The fair-share history (`fs_factor` of a `usage --every` directory).
    pub history: Part<History>,
    /// The users' forecasts.
    pub forecast: Part<Forecasts>,
    /// The top movers since a previous run.
    pub movers: Part<Movers>,
}

/// Trees up to this many associations get a page for every association.
pub const ALL_PAGES_UP_TO: usize = 20_000;

/// How much to write.
#[derive(Debug, Clone, Copy)]
pub struct ReportOptions {
    /// The most association pages; the rest are named without a link, and the index says so.
    pub max_pages: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { max_pages: 50_000 }
    }
}

/// What [`write_report`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportWritten {
    /// Association pages written.
    pub pages: usize,
    /// Associations that would have had a page beyond [`ReportOptions::max_pages`].
    pub over_limit: usize,
    /// What the report left out, one sentence each (also said on its pages).
    pub notes: Vec<String>,
}

/// The style sheet and the search script, our own (no framework, nothing fetched).
const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("report.js");

/// The associations that get a page, in tree order, and how many more would have had one past
/// `max_pages`: every association but the root (the index) up to [`ALL_PAGES_UP_TO`]; beyond,
/// the accounts with users below and the users with pending jobs.
fn paged_rows(tree: &AssocTree, jobs: &Part<Jobs>, ranges: &[Option<(f64, f64)>], max_pages: usize) -> (Vec<usize>, usize) {
    let rows: Vec<usize> = if tree.len() <= ALL_PAGES_UP_TO {
        (1..tree.len()).collect()
    } else {
        let pending: HashSet<usize> = jobs.shown().map(|j| j.rows.iter().filter_map(|r| r.assoc).collect()).unwrap_or_default();
        (1..tree.len()).filter(|&r| if tree.is_user(r) { pending.contains(&r) } else { ranges[r].is_some() }).collect()
    };
    let over = rows.len().saturating_sub(max_pages);
    (rows.into_iter().take(max_pages).collect(), over)
}

/// Writes the report into the directory `out`, atomically: it appears whole or not at all and
/// replaces only an earlier report (never a user's file or directory).
///
/// # Errors
/// `out` is not replaceable, or writing fails.
///
/// # Example
/// ```
/// use fairshare::pass::{compute, Algorithm, Params};
/// use fairshare::report::{Part, Report, ReportOptions, RunFacts, write_report};
///
/// let tree = fairshare::io::default_tree()?;
/// let fs = compute(&tree, &Params::new(Algorithm::FairTree))?;
/// let left_out = |why: &str| Part::LeftOut(why.to_string());
/// let report = Report {
///     tree: &tree,
///     fs: &fs,
///     run: RunFacts::default(),
///     jobs: left_out("no queue"),
///     history: left_out("no history"),
///     forecast: left_out("no job records"),
///     movers: left_out("no previous run"),
/// };
/// let dir = tempfile::tempdir()?;
/// let written = write_report(&dir.path().join("site"), &report, &ReportOptions::default())?;
/// assert_eq!(written.pages, tree.len() - 1);
/// assert!(dir.path().join("site/index.html").is_file());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_report(out: &Path, report: &Report<'_>, opts: &ReportOptions) -> Result<ReportWritten> {
    let dir = AtomicDir::create(out, DirKind::Report)?;
    let tree = report.tree;
    let ranges = crate::explain::subtree_ranges(tree, report.fs);
    let (rows, over_limit) = paged_rows(tree, &report.jobs, &ranges, opts.max_pages);
    let mut notes: Vec<String> = [
        ("pending jobs", report.jobs.left_out()),
        ("history", report.history.left_out()),
        ("forecast", report.forecast.left_out()),
        ("top movers", report.movers.left_out()),
    ]
    .into_iter()
    .filter_map(|(part, why)| why.map(|w| format!("{part} left out: {w}")))
    .collect();
    if over_limit > 0 {
        notes.push(format!(
            "{over_limit} associations have no page: the report writes at most {} pages (--max-pages); they are \
             named without a link",
            opts.max_pages
        ));
    }
    let ctx = pages::Context::new(report, &rows, ranges);
    write_file(dir.path(), "style.css", STYLE)?;
    write_file(dir.path(), "report.js", SCRIPT)?;
    write_file(dir.path(), "index.html", &ctx.index(&notes))?;
    rows.par_iter().try_for_each(|&row| write_file(dir.path(), &html::page_name(tree.ids()[row]), &ctx.page(row)))?;
    dir.commit()?;
    Ok(ReportWritten { pages: rows.len(), over_limit, notes })
}

impl<T> Part<T> {
    /// Why the part is left out.
    fn left_out(&self) -> Option<&str> {
        match self {
            Part::Shown(_) => None,
            Part::LeftOut(why) => Some(why),
        }
    }
}

/// Writes and syncs one file of the report (the directory is out of sight until its commit, so
/// the file needs no temporary name of its own).
fn write_file(dir: &Path, name: &str, body: &str) -> Result<()> {
    let path = dir.join(name);
    let mut f = std::fs::File::create_new(&path).map_err(|e| Error::io(&path, e))?;
    f.write_all(body.as_bytes()).and_then(|()| f.sync_all()).map_err(|e| Error::io(&path, e))
}

/// Rows of `tree` by id.
fn rows_by_id(tree: &AssocTree) -> HashMap<u64, usize> {
    tree.ids().iter().enumerate().map(|(r, &id)| (id, r)).collect()
}
