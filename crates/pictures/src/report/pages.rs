//! The pages of a report: the index and one page per association. Every name goes through
//! [`escape`]; every number is formatted as the command that prints it formats it
//! ([`fairshare_analyses::explain`]'s 6 decimals, sshare's FairShare).

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use super::html::{escape, inline_svg, page_name, script_json, shell_word};
use super::{Part, Report, rows_by_id};
use crate::plot::forecast::{Trajectory, trajectory_chart};
use crate::plot::history::{ChartOptions, Metric, chart};
use crate::plot::icicle::{IcicleOptions, icicle};
use crate::plot::svg::to_svg;
use fairshare_analyses::explain::{PathRow, assoc_name, explain, num, path_rows};
use fairshare_base::named::Named;
use fairshare_base::time_format::iso_utc;
use fairshare_engine::pass::Algorithm;

/// Names longer than this are cut on pages (with an ellipsis): a name may be megabytes long.
const NAME_CHARS: usize = 120;
/// The most siblings, members and job rows a page lists.
const TABLE_ROWS: usize = 100;
/// Trees larger than this get an icicle of their upper levels only.
const FULL_ICICLE_UP_TO: usize = 3000;
/// How many movers the index lists.
const TOP_MOVERS: usize = 10;
/// Chart width, pixels (the style sheet scales it down on narrow screens).
const CHART_W: u32 = 720;

/// What every page needs, computed once.
pub(super) struct Context<'a> {
    r: &'a Report<'a>,
    paged: HashSet<usize>,
    ranges: Vec<Option<(f64, f64)>>,
    /// Indices into the queue's rows, per user association.
    jobs_of: HashMap<usize, Vec<usize>>,
    /// Rows of the forecast's tree, by id.
    forecast_rows: HashMap<u64, usize>,
    /// The priority terms the job tables show: those with a weight (sprio's columns), or, the
    /// weights unknown, those nonzero for some job.
    terms: Vec<usize>,
}

/// `s` cut to [`NAME_CHARS`] characters.
fn cut(s: &str) -> String {
    if s.chars().count() <= NAME_CHARS {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(NAME_CHARS - 1).collect();
        c.push('…');
        c
    }
}

/// `s` cut and escaped, for a page.
fn text(s: &str) -> String {
    escape(&cut(s))
}

/// The page around `body`: title, style sheet, skip link, and the search script when asked.
fn frame(title: &str, body: &str, script: bool) -> String {
    let script = if script { r#"<script src="report.js"></script>"# } else { "" };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n\
         <link rel=\"stylesheet\" href=\"style.css\">\n</head>\n<body>\n\
         <a class=\"skip\" href=\"#main\">Skip to content</a>\n<main id=\"main\">\n{body}</main>\n\
         <footer><p>Made by fairshare {} from the nightly run. Numbers are the engine's own: the same as \
         <code>sshare</code>, <code>sprio</code> and <code>fairshare explain</code> print.</p></footer>\n{script}\n\
         </body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// A chart as an inline, labelled image with a caption.
fn figure(svg: &str, label: &str) -> String {
    format!("<figure class=\"chart\">{}<figcaption>{}</figcaption></figure>\n", inline_svg(svg, label), escape(label))
}

/// A line saying why a part is not there.
fn left_out(why: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", escape(why))
}

/// A `<th scope="col">` row.
fn head(cols: &[&str]) -> String {
    let cells: String = cols.iter().map(|c| format!("<th scope=\"col\">{}</th>", escape(c))).collect();
    format!("<thead><tr>{cells}</tr></thead>\n")
}

/// `(lo, hi)` as explain prints it.
fn range_text(range: Option<(f64, f64)>) -> String {
    match range {
        Some((lo, hi)) => format!("[{lo:.6}, {hi:.6}]"),
        None => "no users".into(),
    }
}

impl<'a> Context<'a> {
    pub(super) fn new(r: &'a Report<'a>, rows: &[usize], ranges: Vec<Option<(f64, f64)>>) -> Self {
        let mut jobs_of: HashMap<usize, Vec<usize>> = HashMap::new();
        if let Some(jobs) = r.jobs.shown() {
            for (i, j) in jobs.rows.iter().enumerate() {
                if let Some(a) = j.assoc {
                    jobs_of.entry(a).or_default().push(i);
                }
            }
        }
        let forecast_rows = r.forecast.shown().map(|f| rows_by_id(&f.trajectories.tree)).unwrap_or_default();
        let terms = r
            .jobs
            .shown()
            .map(|j| {
                let shown = |k: usize| match &j.weights {
                    Some(w) => w[k] != 0.0,
                    None => j.rows.iter().any(|row| row.terms[k] != 0.0),
                };
                (0..j.terms.len()).filter(|&k| shown(k)).collect()
            })
            .unwrap_or_default();
        Context { r, paged: rows.iter().copied().collect(), ranges, jobs_of, forecast_rows, terms }
    }

    /// The association's name, linked to its page when it has one (the root: the index).
    fn link(&self, row: usize) -> String {
        let name = text(&assoc_name(self.r.tree, row));
        if row == 0 {
            format!("<a href=\"index.html\">{name}</a>")
        } else if self.paged.contains(&row) {
            format!("<a href=\"{}\">{name}</a>", page_name(self.r.tree.ids()[row]))
        } else {
            name
        }
    }

    /// The rows from below the root down to `row`: the levels of explain's path.
    fn levels(&self, row: usize) -> Vec<usize> {
        let mut levels = vec![row];
        let mut r = row;
        while r != 0 {
            r = self.r.tree.parents()[r] as usize;
            levels.push(r);
        }
        levels.pop();
        levels.reverse();
        levels
    }

    /// `fairshare explain`'s and `forecast`'s name for a row: `USER@ACCOUNT` or the account.
    fn who(&self, row: usize) -> String {
        let t = self.r.tree;
        match t.user_name(row) {
            Some(u) => format!("{u}@{}", t.account(row)),
            None => t.account(row).to_string(),
        }
    }

    /// The factor or, for an account, the range of its users' factors.
    fn factor_cell(&self, row: usize) -> String {
        if self.r.tree.is_user(row) { num(self.r.fs.fs_factor[row]) } else { range_text(self.ranges[row]) }
    }

    /// The table of `rows` (siblings or members) side by side; `this` marked.
    fn assoc_table(&self, caption: &str, rows: std::ops::Range<usize>, this: Option<usize>) -> String {
        let (t, fs) = (self.r.tree, self.r.fs);
        let classic = fs.params.algorithm == Algorithm::Classic;
        let lfs = if fs.params.algorithm == Algorithm::Flux { "weight" } else { "Level FS" };
        let mut cols = vec!["Association", "RawShares", "S", "RawUsage", "U"];
        if !classic {
            cols.push(lfs);
        }
        cols.push("FairShare (users) or range");
        let mut out =
            format!("<div class=\"scroll\"><table>\n<caption>{}</caption>\n{}<tbody>\n", escape(caption), head(&cols));
        let total = rows.len();
        for r in rows.take(TABLE_ROWS) {
            let shares = if t.is_parent_shares(r) { "parent".to_string() } else { t.raw_shares()[r].to_string() };
            let mark = if Some(r) == this { " class=\"self\" aria-current=\"page\"" } else { "" };
            let _ = write!(
                out,
                "<tr{mark}><th scope=\"row\">{}</th><td>{shares}</td><td>{}</td><td>{:.0}</td><td>{}</td>",
                self.link(r),
                num(fs.norm_shares[r]),
                t.raw_usage()[r],
                num(fs.effective_usage[r])
            );
            if !classic {
                let _ = write!(out, "<td>{}</td>", num(fs.level_fs[r]));
            }
            let _ = writeln!(out, "<td>{}</td></tr>", self.factor_cell(r));
        }
        out.push_str("</tbody></table></div>\n");
        if total > TABLE_ROWS {
            let _ = writeln!(out, "<p class=\"note\">and {} more, not listed.</p>", total - TABLE_ROWS);
        }
        out
    }

    /// The path from the root: explain's rows as a table, and explain's text.
    fn path_table(&self, row: usize) -> String {
        let (t, fs) = (self.r.tree, self.r.fs);
        let algorithm = fs.params.algorithm;
        let rows: Vec<PathRow> = path_rows(t, fs, row);
        let levels = self.levels(row);
        let cols: Vec<&str> = match algorithm {
            Algorithm::Classic => vec!["Level", "RawShares", "NormShares", "RawUsage", "NormUsage", "EffectvUsage"],
            Algorithm::FairTree => {
                vec![
                    "Level",
                    "RawShares",
                    "S (level)",
                    "RawUsage",
                    "U (of parent)",
                    "Level FS",
                    "Place",
                    "Factors of the subtree",
                ]
            }
            Algorithm::Flux => {
                vec![
                    "Level",
                    "RawShares",
                    "S (level)",
                    "RawUsage",
                    "U (of siblings)",
                    "weight",
                    "Place",
                    "Factors of the subtree",
                ]
            }
        };
        let mut out = format!(
            "<div class=\"scroll\"><table class=\"path\">\n<caption>The path from the root ({})</caption>\n{}<tbody>\n",
            algorithm.title(),
            head(&cols)
        );
        for (p, &level) in rows.iter().zip(&levels) {
            let shares = if p.parent_shares { "parent".to_string() } else { p.raw_shares.to_string() };
            let level = self.link(level);
            let _ = write!(
                out,
                "<tr><th scope=\"row\" style=\"padding-left:{}em\">{level}</th><td>{shares}</td><td>{}</td><td>{:.0}</td>",
                0.3 + f64::from(p.depth.saturating_sub(1)),
                num(p.norm_shares),
                p.raw_usage
            );
            if algorithm == Algorithm::Classic {
                let _ = writeln!(out, "<td>{}</td><td>{}</td></tr>", num(p.norm_usage), num(p.effective_usage));
                continue;
            }
            let place = match (p.place, p.siblings) {
                (Some(k), Some(n)) => format!("{k} of {n}"),
                _ => "-".into(),
            };
            let range = match (p.range_lo, p.range_hi) {
                (Some(lo), Some(hi)) => Some((lo, hi)),
                _ => None,
            };
            let _ = writeln!(
                out,
                "<td>{}</td><td>{}</td><td>{place}</td><td>{}</td></tr>",
                num(p.effective_usage),
                num(p.level_fs),
                range_text(range)
            );
        }
        out.push_str("</tbody></table></div>\n");
        let command = escape(&cut(&shell_word(&self.who(row))));
        if levels.iter().any(|&r| assoc_name(t, r).chars().count() > NAME_CHARS) {
            // Its text holds every name whole: a name of megabytes would make a page of them.
            let _ = writeln!(
                out,
                "<p class=\"note\">A name on this path is too long to print whole: <code>fairshare explain {command}</code> prints the text.</p>"
            );
        } else {
            let _ = writeln!(
                out,
                "<details><summary>As <code>fairshare explain {command}</code> prints it</summary><pre>{}</pre></details>",
                escape(&explain(t, fs, row))
            );
        }
        out
    }

    /// The history chart of `row`, or why there is none.
    fn history(&self, row: usize) -> String {
        let h = match &self.r.history {
            Part::Shown(h) => h,
            Part::LeftOut(why) => return left_out(why),
        };
        match h.series(&[self.who(row)]) {
            Ok(series) => {
                let opts = ChartOptions {
                    width: CHART_W,
                    title: String::new(),
                    algorithm: Some(self.r.fs.params.algorithm.title().to_string()),
                    metric: Metric::FsFactor,
                };
                let label = format!("Fair-share history of {}", cut(&assoc_name(self.r.tree, row)));
                figure(&to_svg(&chart(&series, &opts)), &label)
            }
            Err(e) => left_out(&format!("no history of this association: {e}")),
        }
    }

    /// The forecast of a user association, or why there is none.
    fn forecast(&self, row: usize) -> String {
        let f = match &self.r.forecast {
            Part::Shown(f) => f,
            Part::LeftOut(why) => return left_out(why),
        };
        let Some(&k) = self.forecast_rows.get(&self.r.tree.ids()[row]) else {
            return left_out("this association is not in the forecast's tree");
        };
        let traj = &f.trajectories;
        let values: Vec<f64> = traj.fs_factor.iter().map(|fs| fs[k]).collect();
        let reached_at = traj.reached_at(k, f.target);
        let who = self.who(row);
        let t = Trajectory {
            association: &cut(&who),
            assume: f.assume,
            times: traj.times.clone(),
            values: values.clone(),
            target: f.target,
            reached_at,
            algorithm: self.r.fs.params.algorithm,
        };
        let horizon = traj.times.last().copied().map(iso_utc).unwrap_or_default();
        let sentence = match reached_at {
            Some(at) if at == traj.times[0] => format!("At or above {} now.", f.target),
            Some(at) => format!("Recovers to {} by {} (to the chart's step).", f.target, iso_utc(at)),
            None => format!("Does not recover to {} within the horizon ({horizon}).", f.target),
        };
        let label = format!("Forecast of {}'s fair-share factor, assuming {}", cut(&who), f.assume.name());
        format!(
            "<p id=\"recovery\">{} Assuming everyone goes on as over the last window (<code>--assume {}</code>).</p>\n{}\
             <p>For the exact instant and how much it can still run: \
             <code>fairshare forecast {} --assume {}</code> with the run's inputs.</p>\n",
            escape(&sentence),
            f.assume.name(),
            figure(&to_svg(&trajectory_chart(&t, CHART_W)), &label),
            escape(&cut(&shell_word(&who))),
            f.assume.name()
        )
    }

    /// The pending jobs of a user association with their priority terms.
    fn jobs(&self, row: usize) -> String {
        let jobs = match &self.r.jobs {
            Part::Shown(j) => j,
            Part::LeftOut(why) => return left_out(why),
        };
        let Some(mine) = self.jobs_of.get(&row) else { return "<p>No pending jobs.</p>\n".into() };
        let mut cols: Vec<&str> = vec!["Job", "Partition", "QOS", "Priority"];
        cols.extend(self.terms.iter().map(|&k| jobs.terms[k].as_str()));
        cols.extend(["site factor", "nice"]);
        let how = if jobs.weights.is_some() {
            "each term is weight × factor = value, as <code>fairshare explain --job ID</code> prints it"
        } else {
            "each term is the weighted value, as <code>sprio</code> prints it (a run directory does not record the weights)"
        };
        let mut out = format!(
            "<div class=\"scroll\"><table>\n<caption>Pending jobs: {how}; the priority is their sum (Slurm's order, floored at 1, capped at 2^32-1, truncated)</caption>\n{}<tbody>\n",
            head(&cols)
        );
        for &i in mine.iter().take(TABLE_ROWS) {
            let j = &jobs.rows[i];
            let _ = write!(
                out,
                "<tr><th scope=\"row\" class=\"id\">{}</th><td>{}</td><td>{}</td><td>{}</td>",
                j.job_id,
                text(&j.partition),
                j.qos.as_deref().map_or_else(|| "(none)".into(), text),
                j.priority
            );
            for &k in &self.terms {
                let v = j.terms[k];
                match jobs.weights.as_ref().and_then(|w| w.get(k)) {
                    Some(&w) => {
                        let factor = if w != 0.0 { v / w } else { 0.0 };
                        let _ = write!(out, "<td>{v:.2}<span class=\"f\">{w} × {factor:.6}</span></td>");
                    }
                    None => {
                        let _ = write!(out, "<td>{v:.2}</td>");
                    }
                }
            }
            let _ = writeln!(out, "<td>{}</td><td>{}</td></tr>", j.site_factor, -j.nice);
        }
        out.push_str("</tbody></table></div>\n");
        if mine.len() > TABLE_ROWS {
            let _ = writeln!(out, "<p class=\"note\">and {} more rows, not listed.</p>", mine.len() - TABLE_ROWS);
        }
        out
    }

    /// One association's page.
    pub(super) fn page(&self, row: usize) -> String {
        let (t, fs) = (self.r.tree, self.r.fs);
        let name = assoc_name(t, row);
        let user = t.is_user(row);
        let mut crumbs = String::from("<a href=\"index.html\">Report</a>");
        let levels = self.levels(row);
        for &a in &levels[..levels.len() - 1] {
            let _ = write!(crumbs, " › {}", self.link(a));
        }
        let mut body = format!(
            "<nav aria-label=\"Breadcrumb\"><p>{crumbs}</p></nav>\n<h1>{}</h1>\n<p class=\"kind\">{}</p>\n",
            text(&name),
            if user { "user association" } else { "account" }
        );
        body.push_str("<dl class=\"facts\">\n");
        if user {
            let _ = writeln!(body, "<dt>FairShare</dt><dd id=\"fairshare\">{}</dd>", num(fs.fs_factor[row]));
            if fs.rank[row] > 0 {
                let _ =
                    writeln!(body, "<dt>Rank</dt><dd>{} of {} user associations</dd>", fs.rank[row], t.user_count());
            }
        } else {
            let _ = writeln!(body, "<dt>Factors of its users</dt><dd>{}</dd>", range_text(self.ranges[row]));
        }
        let _ = writeln!(body, "<dt>RawUsage</dt><dd>{:.0}</dd>", t.raw_usage()[row]);
        if let Some(now) = self.r.run.now {
            let _ = writeln!(body, "<dt>As of</dt><dd>{}</dd>", iso_utc(now));
        }
        body.push_str("</dl>\n");
        body.push_str("<section aria-labelledby=\"why\"><h2 id=\"why\">Why: the path from the root</h2>\n");
        body.push_str(&self.path_table(row));
        body.push_str("</section>\n<section aria-labelledby=\"hist\"><h2 id=\"hist\">History</h2>\n");
        body.push_str(&self.history(row));
        body.push_str("</section>\n");
        if user {
            body.push_str("<section aria-labelledby=\"fc\"><h2 id=\"fc\">Forecast</h2>\n");
            body.push_str(&self.forecast(row));
            body.push_str("</section>\n<section aria-labelledby=\"jobs\"><h2 id=\"jobs\">Pending jobs</h2>\n");
            body.push_str(&self.jobs(row));
            body.push_str("</section>\n");
        } else if !t.children(row).is_empty() {
            body.push_str("<section aria-labelledby=\"members\"><h2 id=\"members\">Members</h2>\n");
            body.push_str(&self.assoc_table("Its users and sub-accounts", t.children(row), None));
            body.push_str("</section>\n");
        }
        let parent = t.parents()[row] as usize;
        body.push_str("<section aria-labelledby=\"sib\"><h2 id=\"sib\">Siblings</h2>\n");
        body.push_str(&self.assoc_table(
            &format!("{} and its siblings under {}", cut(&name), cut(&assoc_name(t, parent))),
            t.children(parent),
            Some(row),
        ));
        body.push_str("</section>\n");
        frame(&text(&name), &body, false)
    }

    /// The index: the cluster at a glance.
    pub(super) fn index(&self, notes: &[String]) -> String {
        let (t, fs, run) = (self.r.tree, self.r.fs, &self.r.run);
        let title = format!("Fair-share report: {}", cut(&run.source));
        let mut body = format!("<h1>{}</h1>\n", escape(&title));
        if let Some(now) = run.now {
            let _ = writeln!(body, "<p>As of {} ({}).</p>", iso_utc(now), fs.params.algorithm.title());
        }
        body.push_str(
            "<form role=\"search\" class=\"search\" onsubmit=\"return false\">\
             <label for=\"q\">Find an account or user</label> \
             <input type=\"search\" id=\"q\" autocomplete=\"off\" aria-controls=\"results\">\
             <ul id=\"results\" aria-live=\"polite\"></ul></form>\n",
        );
        let users = t.user_count();
        let pending = match &self.r.jobs {
            Part::Shown(j) => {
                let ids: HashSet<u64> = j.rows.iter().map(|r| r.job_id).collect();
                ids.len().to_string()
            }
            Part::LeftOut(_) => "not in this run".into(),
        };
        let _ = writeln!(
            body,
            "<dl class=\"facts\"><dt>Associations</dt><dd id=\"n-assocs\">{}</dd><dt>Accounts</dt><dd>{}</dd>\
             <dt>User associations</dt><dd id=\"n-users\">{users}</dd><dt>Pending jobs</dt><dd id=\"n-jobs\">{pending}</dd></dl>",
            t.len(),
            t.len() - users
        );
        for n in notes {
            body.push_str(&left_out(n));
        }
        let depth = (t.len() > FULL_ICICLE_UP_TO).then_some(3);
        let opts = IcicleOptions { width: 1100, depth, color: None, title: cut(&run.source) };
        body.push_str("<section aria-labelledby=\"tree\"><h2 id=\"tree\">The tree</h2>\n");
        body.push_str(&figure(
            &to_svg(&icicle(t, fs, &opts)),
            "Icicle of the association tree: each account spans the places of its users; colour shows its standing",
        ));
        body.push_str(&self.assoc_table("Top-level accounts", t.children(0), None));
        body.push_str(
            "</section>\n<section aria-labelledby=\"moves\"><h2 id=\"moves\">Top movers since the previous run</h2>\n",
        );
        body.push_str(&self.movers());
        body.push_str("</section>\n<section aria-labelledby=\"params\"><h2 id=\"params\">The run</h2>\n");
        let mut params = format!(
            "<div class=\"scroll\"><table>\n<caption>Parameters of {}</caption>\n{}<tbody>\n",
            text(&run.source),
            head(&["Parameter", "Value"])
        );
        for (k, v) in &run.parameters {
            let _ = writeln!(params, "<tr><th scope=\"row\">{}</th><td>{}</td></tr>", text(k), text(v));
        }
        params.push_str("</tbody></table></div>\n");
        body.push_str(&params);
        body.push_str("</section>\n");
        // The search index: [name, kind, page] of every association with a page.
        let entries: Vec<serde_json::Value> = (1..t.len())
            .filter(|r| self.paged.contains(r))
            .map(|r| {
                let kind = if t.is_user(r) { "user" } else { "account" };
                serde_json::json!([cut(&assoc_name(t, r)), kind, page_name(t.ids()[r])])
            })
            .collect();
        let _ = writeln!(
            body,
            "<script type=\"application/json\" id=\"search-index\">{}</script>",
            script_json(&serde_json::Value::Array(entries))
        );
        frame(&escape(&title), &body, true)
    }

    /// The largest factor changes since the previous run, or why there are none.
    fn movers(&self) -> String {
        let m = match &self.r.movers {
            Part::Shown(m) => m,
            Part::LeftOut(why) => return left_out(why),
        };
        let changes = fairshare_analyses::compare::factor_changes(&m.before, &m.after);
        if changes.is_empty() {
            return format!("<p>No factor changed since {}.</p>\n", text(&m.previous));
        }
        let mut out = format!(
            "<div class=\"scroll\"><table>\n<caption>{} factors changed since {}, largest first</caption>\n{}<tbody>\n",
            changes.len(),
            text(&m.previous),
            head(&["Association", "Before", "Now", "Change"])
        );
        for &(i, j) in changes.iter().take(TOP_MOVERS) {
            let (a, b) = (m.before.factor[i], m.after.factor[j]);
            let _ = writeln!(
                out,
                "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{:+.6}</td></tr>",
                self.link(j),
                num(a),
                num(b),
                b - a
            );
        }
        out.push_str("</tbody></table></div>\n");
        out
    }
}
