//! A static web report of a run: the cluster at a glance and one page per association, written
//! as one directory of plain HTML, inline SVG, one style sheet and one script, with no request
//! outside the directory, so it works opened from disk or served by any web server.
//!
//! - `index.html`: the icicle of the tree, the counts, the run's parameters and time, the top
//!   movers since a previous run, and a search over accounts and users (the index is inline
//!   JSON; the script inserts names as text, never as markup);
//! - `a<ID>.html`, one per association (by its id, never its name): its path from the root as
//!   [`fairshare_analyses::explain`] derives it, its history ([`crate::plot::history`]), for a user its
//!   forecast ([`fairshare_analyses::forecast::trajectories`]) and pending jobs with their priority terms,
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

use crate::plot::history::History;
use fairshare_analyses::compare::RunAssociations;
use fairshare_analyses::forecast::{Assume, Trajectories};
use fairshare_base::write::atomic::{AtomicDir, DirKind};
use fairshare_base::{Error, Result};
use fairshare_engine::pass::FairShare;
use fairshare_engine::tree::AssocTree;

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

    /// Why the part is left out.
    fn left_out(&self) -> Option<&str> {
        match self {
            Part::Shown(_) => None,
            Part::LeftOut(why) => Some(why),
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
        map.iter().map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string))).collect()
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
fn paged_rows(
    tree: &AssocTree,
    jobs: &Part<Jobs>,
    ranges: &[Option<(f64, f64)>],
    max_pages: usize,
) -> (Vec<usize>, usize) {
    let rows: Vec<usize> = if tree.len() <= ALL_PAGES_UP_TO {
        (1..tree.len()).collect()
    } else {
        let pending: HashSet<usize> =
            jobs.shown().map(|j| j.rows.iter().filter_map(|r| r.assoc).collect()).unwrap_or_default();
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
/// use fairshare_engine::pass::{compute, Algorithm, Params};
/// use fairshare_pictures::report::{Part, Report, ReportOptions, RunFacts, write_report};
///
/// let tree = fairshare_engine::io::default_tree()?;
/// let fs = compute(&tree, &Params::new(Algorithm::FairTree))?;
/// let report = Report {
///     tree: &tree,
///     fs: &fs,
///     run: RunFacts::default(),
///     jobs: Part::LeftOut("no queue".into()),
///     history: Part::LeftOut("no history".into()),
///     forecast: Part::LeftOut("no job records".into()),
///     movers: Part::LeftOut("no previous run".into()),
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
    let ranges = fairshare_analyses::explain::subtree_ranges(tree, report.fs);
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
    sync_files(dir.path())?;
    dir.commit()?;
    Ok(ReportWritten { pages: rows.len(), over_limit, notes })
}

/// Writes one file of the report (the directory is out of sight until its commit, so the file
/// needs no temporary name of its own; [`sync_files`] makes them durable before the commit).
fn write_file(dir: &Path, name: &str, body: &str) -> Result<()> {
    let path = dir.join(name);
    let mut f = std::fs::File::create_new(&path).map_err(|e| Error::io(&path, e))?;
    f.write_all(body.as_bytes()).map_err(|e| Error::io(&path, e))
}

/// Puts every file of `dir` on disk before the directory is swapped in: one `syncfs` on Linux
/// (ten thousand pages synced one by one take seconds), each file's `fsync` elsewhere.
fn sync_files(dir: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let d = std::fs::File::open(dir).map_err(|e| Error::io(dir, e))?;
        // SAFETY: the descriptor is open for the call's duration; syncfs only flushes its file system.
        if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
            return Err(Error::io(dir, std::io::Error::last_os_error()));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let path = entry.map_err(|e| Error::io(dir, e))?.path();
            std::fs::File::open(&path).and_then(|f| f.sync_all()).map_err(|e| Error::io(&path, e))?;
        }
        Ok(())
    }
}

/// Rows of `tree` by id.
fn rows_by_id(tree: &AssocTree) -> HashMap<u64, usize> {
    tree.ids().iter().enumerate().map(|(r, &id)| (id, r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairshare_engine::output::sshare::{Parsable, SshareOptions, write_sshare};
    use fairshare_engine::pass::{Algorithm, Params, compute};

    /// Every page of the report in `dir`, (file name, text).
    fn pages(dir: &Path) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".html"))
            .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).unwrap()))
            .collect();
        out.sort();
        out
    }

    /// The values of every `href="..."` and `src="..."` of a page.
    fn links(page: &str) -> Vec<String> {
        let mut out = Vec::new();
        for attr in [" href=\"", " src=\""] {
            let mut rest = page;
            while let Some(k) = rest.find(attr) {
                rest = &rest[k + attr.len()..];
                out.push(rest[..rest.find('"').unwrap()].to_string());
            }
        }
        out
    }

    /// The text of the element with `id` on a page.
    fn by_id<'p>(page: &'p str, id: &str) -> Option<&'p str> {
        let start = page.find(&format!("id=\"{id}\">"))? + id.len() + 6;
        Some(&page[start..start + page[start..].find('<')?])
    }

    fn report<'a>(tree: &'a AssocTree, fs: &'a FairShare) -> Report<'a> {
        Report {
            tree,
            fs,
            run: RunFacts { source: "<test>".into(), now: Some(0), parameters: vec![("x".into(), "<y>".into())] },
            jobs: Part::LeftOut("no queue".into()),
            history: Part::LeftOut("no history".into()),
            forecast: Part::LeftOut("no forecast".into()),
            movers: Part::LeftOut("no previous run".into()),
        }
    }

    /// A tree whose names try every trick: markup, quotes, paths, controls, a long name.
    fn hostile_tree(dir: &Path) -> AssocTree {
        let long = "x".repeat(5000);
        let csv = format!(
            "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n\
             2,1,\"<script>alert(1)</script>\",,2,10\n3,2,\"<script>alert(1)</script>\",\"\"\"onmouseover=alert(2) x=\"\"\",1,5\n\
             4,1,../../etc,,1,3\n5,4,../../etc,'</a><img src=//evil.example/x>',1,3\n6,4,../../etc,{long},1,1\n\
             7,1,\"a\u{1}b\u{7f}c\",,1,0\n8,7,\"a\u{1}b\u{7f}c\",u&amp;,1,0\n"
        );
        let path = dir.join("tree.csv");
        std::fs::write(&path, csv).unwrap();
        AssocTree::build(fairshare_engine::io::read_tree_input(&path, None).unwrap()).unwrap()
    }

    #[test]
    fn hostile_names_make_no_markup_and_no_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let tree = hostile_tree(tmp.path());
        let fs = compute(&tree, &Params::new(Algorithm::FairTree)).unwrap();
        let out = tmp.path().join("site");
        let written = write_report(&out, &report(&tree, &fs), &ReportOptions::default()).unwrap();
        assert_eq!(written.pages, tree.len() - 1);
        let mut files: Vec<String> =
            std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        files.sort();
        let mut expected: Vec<String> = tree.ids()[1..].iter().map(|&id| html::page_name(id)).collect();
        expected.extend(
            ["index.html", "report.js", "style.css", fairshare_base::write::atomic::MANIFEST].map(String::from),
        );
        expected.sort();
        assert_eq!(files, expected);
        for (name, page) in pages(&out) {
            // Our only elements that run or load anything: the index's inline JSON and script.
            let scripts = if name == "index.html" { 2 } else { 0 };
            // The names in the search index are JSON strings (checked below), the rest is markup.
            let page = match page.find("<script type=\"application/json\"") {
                Some(k) => format!("{}{}", &page[..k], &page[k + page[k..].find("</script>").unwrap()..]),
                None => page,
            };
            let scripts = scripts - usize::from(name == "index.html");
            assert_eq!(page.matches("<script").count(), scripts, "{name}");
            assert_eq!(page.matches("<img").count(), 0, "{name}");
            assert!(!page.contains("\"onmouseover") && !page.contains("'</a>"), "{name}");
            assert!(!page.contains('\u{1}') && !page.contains('\u{7f}') && !page.contains('\0'), "{name}");
            // Pages show a long name cut (the index's icicle has it whole in its tooltips).
            assert!(name == "index.html" || !page.contains(&"x".repeat(NAME_LIMIT_TEST)), "{name}: a long name is cut");
            assert!(page.len() < 60_000, "{name}: {} bytes", page.len());
        }
        let index = std::fs::read_to_string(out.join("index.html")).unwrap();
        assert!(index.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        // The search index parses back to the names (cut), and its pages exist.
        let json = &index[index.find("id=\"search-index\">").unwrap() + 18..];
        let entries: Vec<(String, String, String)> =
            serde_json::from_str(&json[..json.find("</script>").unwrap()]).unwrap();
        assert!(entries.iter().any(|e| e.0 == "<script>alert(1)</script>/\"onmouseover=alert(2) x=\""), "{entries:?}");
        assert!(entries.iter().all(|e| out.join(&e.2).is_file()));
    }

    /// More than a page shows of a long name.
    const NAME_LIMIT_TEST: usize = 200;

    #[test]
    fn links_resolve_and_numbers_are_sshares_and_explains() {
        for algorithm in [Algorithm::FairTree, Algorithm::Classic, Algorithm::Flux] {
            let tree = fairshare_engine::io::default_tree().unwrap();
            let fs = compute(&tree, &Params::new(algorithm)).unwrap();
            let tmp = tempfile::tempdir().unwrap();
            let out = tmp.path().join("site");
            write_report(&out, &report(&tree, &fs), &ReportOptions::default()).unwrap();
            for (name, page) in pages(&out) {
                for link in links(&page) {
                    let file = link.split('#').next().unwrap();
                    assert!(!link.contains(':') && !link.starts_with('/'), "{name}: {link}");
                    assert!(file.is_empty() || out.join(file).is_file(), "{name}: {link}");
                }
            }
            // sshare's FairShare column, row by row.
            let mut text = Vec::new();
            let opts = SshareOptions { parsable: Parsable::NoEnding, ..SshareOptions::default() };
            write_sshare(&mut text, &tree, &fs, &opts).unwrap();
            let text = String::from_utf8(text).unwrap();
            let mut lines = text.lines();
            let header: Vec<&str> = lines.next().unwrap().split('|').collect();
            let col = header.iter().position(|h| *h == "FairShare").unwrap();
            // sshare prints the tree depth-first.
            let mut printed = vec![""; tree.len()];
            for (row, line) in tree.preorder().into_iter().zip(lines) {
                printed[row as usize] = line.split('|').nth(col).unwrap();
            }
            for row in (1..tree.len()).filter(|&r| tree.is_user(r)) {
                let page = std::fs::read_to_string(out.join(html::page_name(tree.ids()[row]))).unwrap();
                assert_eq!(by_id(&page, "fairshare"), Some(printed[row]), "{algorithm:?} row {row}");
                assert!(page.contains(&html::escape(&fairshare_analyses::explain::explain(&tree, &fs, row))));
                for p in fairshare_analyses::explain::path_rows(&tree, &fs, row) {
                    assert!(page.contains(&format!("<td>{}</td>", fairshare_analyses::explain::num(p.norm_shares))));
                }
            }
        }
    }

    #[test]
    fn a_page_limit_leaves_the_rest_unlinked_and_says_so() {
        let tree = fairshare_engine::io::default_tree().unwrap();
        let fs = compute(&tree, &Params::new(Algorithm::FairTree)).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("site");
        let written = write_report(&out, &report(&tree, &fs), &ReportOptions { max_pages: 5 }).unwrap();
        assert_eq!((written.pages, written.over_limit), (5, tree.len() - 1 - 5));
        assert!(written.notes.iter().any(|n| n.contains("--max-pages")));
        let index = std::fs::read_to_string(out.join("index.html")).unwrap();
        assert!(index.contains("--max-pages"));
        for (_, page) in pages(&out) {
            for link in links(&page) {
                assert!(out.join(link.split('#').next().unwrap()).is_file() || link.starts_with('#'), "{link}");
            }
        }
    }
}
