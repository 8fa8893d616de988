//! The fair-share history of chosen associations, from the directory `fairshare usage --every`
//! (or `--at`) writes: `DIR/date=YYYY-MM-DD/HHMMSS.parquet`, one file per instant, each with an
//! `at` column (epoch seconds) and the association columns of `fairshare compute`.
//!
//! A series is a user association (`USER`, `USER@ACCOUNT`) or an account. Accounts have no
//! fair-share factor of their own (the column is null on account rows), so for `fs_factor` an
//! account is drawn as the mean of the factors of all the users below it, with the band from the
//! lowest to the highest of them shaded: under Fair Tree that band is the account's block of
//! ranks. For the other metrics (`raw_usage`, `norm_usage`, `effective_usage`, `level_fs`) the
//! account row's own value is drawn.
//!
//! Nothing asked for vanishes without a word: a metric none of the series has (classic computes
//! no Level FS) is an error; series are told apart by colour and dash together; series lying on
//! each other are drawn nested, widest first, and the legend says which equal which; infinite
//! values (Level FS without usage) sit on a marked line past the axis and are named in a note.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow::array::AsArray;
use arrow::datatypes::{DataType, Float64Type, UInt64Type};

use super::font::{fit_among, text_width, wrap};
use super::{Anchor, Color, Item, Line, Scene, Text, nice_ticks};
use fairshare_analyses::chart::{LineChart, Series, short_number};
use fairshare_base::error::{Error, Result};
use fairshare_base::named::{Choice, Named};
use fairshare_base::time_format::TimeFormat;
use fairshare_engine::pipeline::history::{history_column, history_files, read_history_file};

/// The value plotted over time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// The fair-share factor (accounts: mean and range of their users').
    FsFactor,
    /// Decayed usage in billing-seconds.
    RawUsage,
    /// Usage over the root's usage.
    NormUsage,
    /// Effective usage (Fair Tree: over the parent's usage).
    EffectiveUsage,
    /// Level FS (Fair Tree S/U; flux: the sibling weight).
    LevelFs,
}

/// The metrics' names, as `--metric` spells them: their Parquet columns, or with dashes.
impl Named for Metric {
    const CHOICES: &'static [Choice<Self>] = &[
        Choice::new(
            Metric::FsFactor,
            "fs_factor",
            "The fair-share factor (accounts: the mean of their users', with their range shaded)",
        )
        .aliases(&["fs-factor"]),
        Choice::new(Metric::RawUsage, "raw_usage", "").aliases(&["raw-usage"]),
        Choice::new(Metric::NormUsage, "norm_usage", "").aliases(&["norm-usage"]),
        Choice::new(Metric::EffectiveUsage, "effective_usage", "").aliases(&["effective-usage"]),
        Choice::new(Metric::LevelFs, "level_fs", "").aliases(&["level-fs"]),
    ];
}

impl Metric {
    /// The Parquet column.
    pub fn column(self) -> &'static str {
        // A metric's name is its column (the table above).
        self.name()
    }

    /// The chart title's name for it.
    pub fn title(self) -> &'static str {
        match self {
            Metric::FsFactor => "Fair-share factor",
            Metric::RawUsage => "Raw usage",
            Metric::NormUsage => "Normalized usage",
            Metric::EffectiveUsage => "Effective usage",
            Metric::LevelFs => "Level FS",
        }
    }

    /// The axis title.
    pub fn label(self) -> &'static str {
        match self {
            Metric::FsFactor => "fair-share factor",
            Metric::RawUsage => "raw usage (billing-seconds, decayed)",
            Metric::NormUsage => "normalized usage",
            Metric::EffectiveUsage => "effective usage",
            Metric::LevelFs => "Level FS",
        }
    }
}

/// One instant of the history.
#[derive(Clone, Debug)]
struct Snapshot {
    at: i64,
    /// The `fairshare.algorithm` the file was computed with.
    algorithm: Option<String>,
    id: Vec<u64>,
    parent: Vec<Option<u64>>,
    account: Vec<String>,
    user: Vec<Option<String>>,
    partition: Vec<Option<String>>,
    /// The metric; NaN where null.
    value: Vec<f64>,
    /// The first row of each association (what [`Snapshot::find`] looks up, once per chart).
    rows: HashMap<Target, usize>,
    /// Min, max and mean of the metric over the users below each row (`fs_factor` only).
    below: Vec<Option<(f64, f64, f64)>>,
}

/// The history read from a directory, for one metric.
#[derive(Clone, Debug)]
pub struct History {
    dir: PathBuf,
    metric: Metric,
    snapshots: Vec<Snapshot>,
    /// The associations by the names [`History::series`] takes, each with the place it is first
    /// seen (snapshot by snapshot, row by row), so a report's thousands of charts each find their
    /// association without reading every snapshot.
    names: Names,
}

/// The associations of a history by name.
#[derive(Clone, Debug, Default)]
struct Names {
    accounts: HashMap<String, usize>,
    users: HashMap<String, Vec<(usize, Target)>>,
    user_accounts: HashMap<(String, String), Vec<(usize, Target)>>,
}

impl Names {
    fn of(snapshots: &[Snapshot]) -> Self {
        let mut names = Names::default();
        let mut seen: HashMap<Target, usize> = HashMap::new();
        for s in snapshots {
            for r in 0..s.id.len() {
                let t = s.target(r);
                if seen.contains_key(&t) {
                    continue;
                }
                let k = seen.len();
                seen.insert(t.clone(), k);
                match &t {
                    Target::Account(a) => {
                        names.accounts.insert(a.clone(), k);
                    }
                    Target::User { user, account, .. } => {
                        names.users.entry(user.clone()).or_default().push((k, t.clone()));
                        names.user_accounts.entry((user.clone(), account.clone())).or_default().push((k, t.clone()));
                    }
                }
            }
        }
        names
    }
}

fn read_snapshot(path: &Path, metric: Metric) -> Result<Snapshot> {
    let file = read_history_file(path, &["id", "parent_id", "account", "user", "partition", metric.column()])?;
    let batch = &file.batch;
    let column = |name: &str, to: &DataType| history_column(path, batch, name, to);
    let id = column("id", &DataType::UInt64)?;
    let parent = column("parent_id", &DataType::UInt64)?;
    let text = |name: &str| -> Result<Vec<Option<String>>> {
        let a = column(name, &DataType::Utf8)?;
        Ok(a.as_string::<i32>().iter().map(|v| v.filter(|s| !s.is_empty()).map(str::to_string)).collect())
    };
    let value = column(metric.column(), &DataType::Float64)?;
    Ok(Snapshot {
        at: file.at,
        algorithm: file.metadata.get("fairshare.algorithm").cloned(),
        id: id.as_primitive::<UInt64Type>().values().to_vec(),
        parent: parent.as_primitive::<UInt64Type>().iter().collect(),
        account: text("account")?.into_iter().map(Option::unwrap_or_default).collect(),
        user: text("user")?,
        partition: match batch.column_by_name("partition") {
            Some(_) => text("partition")?,
            None => vec![None; batch.num_rows()],
        },
        value: value.as_primitive::<Float64Type>().iter().map(|x| x.unwrap_or(f64::NAN)).collect(),
        rows: HashMap::new(),
        below: Vec::new(),
    }
    .indexed(metric))
}

/// What a name asks for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Target {
    Account(String),
    User { user: String, account: String, partition: Option<String> },
}

impl Snapshot {
    /// The association of `row`.
    fn target(&self, r: usize) -> Target {
        match &self.user[r] {
            None => Target::Account(self.account[r].clone()),
            Some(u) => {
                Target::User { user: u.clone(), account: self.account[r].clone(), partition: self.partition[r].clone() }
            }
        }
    }

    /// The snapshot with its lookups: the first row of each association and, for `fs_factor`,
    /// every row's users' min, max and mean, folded up the tree once.
    fn indexed(mut self, metric: Metric) -> Self {
        let n = self.id.len();
        let mut rows = HashMap::with_capacity(n);
        for r in 0..n {
            rows.entry(self.target(r)).or_insert(r);
        }
        self.rows = rows;
        if metric == Metric::FsFactor {
            let row_of: HashMap<u64, usize> = self.id.iter().enumerate().map(|(r, &id)| (id, r)).collect();
            let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
            for (r, p) in self.parent.iter().enumerate() {
                if let Some(&pr) = p.as_ref().and_then(|p| row_of.get(p)) {
                    children[pr].push(r);
                }
            }
            // (lo, hi, sum, count) below each row, children before parents (an explicit
            // post-order: a deep tree must not overflow the stack).
            let mut acc: Vec<(f64, f64, f64, usize)> = vec![(f64::MAX, f64::MIN, 0.0, 0); n];
            let mut done = vec![false; n];
            for root in 0..n {
                let mut stack = vec![(root, false)];
                while let Some((r, expanded)) = stack.pop() {
                    if done[r] {
                        continue;
                    }
                    if !expanded {
                        stack.push((r, true));
                        stack.extend(children[r].iter().filter(|&&c| !done[c]).map(|&c| (c, false)));
                        continue;
                    }
                    done[r] = true;
                    let mut a = (f64::MAX, f64::MIN, 0.0, 0);
                    if self.user[r].is_some() && !self.value[r].is_nan() {
                        let v = self.value[r];
                        a = (v, v, v, 1);
                    }
                    for &c in &children[r] {
                        let b = acc[c];
                        a = (a.0.min(b.0), a.1.max(b.1), a.2 + b.2, a.3 + b.3);
                    }
                    acc[r] = a;
                }
            }
            self.below = acc.into_iter().map(|(lo, hi, sum, k)| (k > 0).then(|| (lo, hi, sum / k as f64))).collect();
        }
        self
    }

    fn find(&self, t: &Target) -> Option<usize> {
        self.rows.get(t).copied()
    }

    /// Min, max and mean of the metric over the users below `row`.
    fn users_below(&self, row: usize) -> Option<(f64, f64, f64)> {
        self.below.get(row).copied().flatten()
    }
}

impl History {
    /// Reads every instant of `dir` (in time order), keeping `metric`.
    ///
    /// # Errors
    /// No Parquet files, a file that is not a history file, or an I/O error.
    pub fn read(dir: &Path, metric: Metric) -> Result<Self> {
        let paths = history_files(dir)?;
        let mut snapshots = paths.iter().map(|p| read_snapshot(p, metric)).collect::<Result<Vec<_>>>()?;
        snapshots.sort_by_key(|s| s.at);
        let names = Names::of(&snapshots);
        Ok(History { dir: dir.to_path_buf(), metric, snapshots, names })
    }

    /// The instants, in order.
    pub fn times(&self) -> Vec<i64> {
        self.snapshots.iter().map(|s| s.at).collect()
    }

    /// What `name` asks for: `USER@ACCOUNT` (with `:PARTITION` when the user has several), an
    /// account, or a user (one target per account the user is in).
    fn targets(&self, name: &str) -> Result<Vec<Target>> {
        let n = &self.names;
        // An account name wins over a user of the same name.
        let mut found: Vec<(usize, Target)> = match name.split_once('@') {
            None => match n.accounts.get(name) {
                Some(&k) => vec![(k, Target::Account(name.to_string()))],
                None => n.users.get(name).cloned().unwrap_or_default(),
            },
            Some((u, a)) => n.user_accounts.get(&(u.to_string(), a.to_string())).cloned().unwrap_or_default(),
        };
        found.sort_by_key(|(k, _)| *k);
        let found: Vec<Target> = found.into_iter().map(|(_, t)| t).collect();
        if found.is_empty() {
            return Err(Error::Usage(format!(
                "no association {name:?} in {}: give an account, USER or USER@ACCOUNT",
                self.dir.display()
            )));
        }
        Ok(found)
    }

    /// The series for `names`, in the order given.
    ///
    /// # Errors
    /// A name that matches no association at any instant; more series than the chart can tell
    /// apart ([`MAX_SERIES`]); a metric none of them has at any instant (classic computes no
    /// Level FS), named with the algorithm the files record and the metrics they do have.
    pub fn series(&self, names: &[String]) -> Result<Vec<Series>> {
        let out = self.collect(names)?;
        if out.len() > MAX_SERIES {
            return Err(Error::Usage(format!(
                "{} series asked (a user in several accounts counts once per account): a chart tells at \
                 most {MAX_SERIES} apart by colour and dash; give fewer names, or USER@ACCOUNT",
                out.len()
            )));
        }
        if out.iter().all(|s| s.values.iter().all(|v| v.is_nan())) {
            return Err(self.no_values(names));
        }
        Ok(out)
    }

    /// The error for a metric that `names` have no value of at any instant.
    fn no_values(&self, names: &[String]) -> Error {
        let metric = self.metric.column();
        // Reread for each other metric: only on this error path, and the same reading rules.
        let have: Vec<&str> = (Metric::CHOICES.iter().map(|c| c.value))
            .filter(|&m| m != self.metric)
            .filter(|&m| {
                History::read(&self.dir, m)
                    .and_then(|h| h.collect(names))
                    .is_ok_and(|series| series.iter().any(|s| s.values.iter().any(|v| !v.is_nan())))
            })
            .map(Metric::column)
            .collect();
        let algorithm = match self.algorithm() {
            Some(a) => format!("was computed with {a} (Parquet metadata fairshare.algorithm)"),
            None => "records no single algorithm (Parquet metadata fairshare.algorithm)".to_string(),
        };
        let has = if have.is_empty() { "no metric at all".to_string() } else { have.join(", ") };
        Error::Usage(format!(
            "--metric {metric}: {} have no {metric} value at any instant; the history in {} {algorithm}; they have {has}",
            names.join(", "),
            self.dir.display()
        ))
    }

    /// The series for `names`, in the order given, whatever values they hold.
    fn collect(&self, names: &[String]) -> Result<Vec<Series>> {
        let times = self.times();
        let mut out = Vec::new();
        for name in names {
            let targets = self.targets(name)?;
            let several = targets.len() > 1;
            for t in targets {
                let label = match &t {
                    Target::Account(a) => a.clone(),
                    Target::User { user, account, partition } => {
                        let mut l =
                            if several || name.contains('@') { format!("{user}@{account}") } else { user.clone() };
                        if let Some(p) = partition {
                            l.push(':');
                            l.push_str(p);
                        }
                        l
                    }
                };
                let aggregate = matches!(t, Target::Account(_)) && self.metric == Metric::FsFactor;
                let mut values = Vec::with_capacity(times.len());
                let mut band = Vec::with_capacity(times.len());
                for s in &self.snapshots {
                    match s.find(&t) {
                        Some(r) if aggregate => {
                            let (lo, hi, mean) = s.users_below(r).unwrap_or((f64::NAN, f64::NAN, f64::NAN));
                            values.push(mean);
                            band.push((lo, hi));
                        }
                        Some(r) => values.push(s.value[r]),
                        None => {
                            values.push(f64::NAN);
                            band.push((f64::NAN, f64::NAN));
                        }
                    }
                }
                out.push(Series { name: label, times: times.clone(), values, band: aggregate.then_some(band) });
            }
        }
        Ok(out)
    }

    /// The metric read.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// The fair-share algorithm the history was computed with (from the files' metadata), if
    /// every file names the same one.
    pub fn algorithm(&self) -> Option<&str> {
        let first = self.snapshots.first()?.algorithm.as_deref()?;
        self.snapshots.iter().all(|s| s.algorithm.as_deref() == Some(first)).then_some(first)
    }
}

/// Colour-blind-safe line colours (Okabe and Ito, without the yellow that vanishes on white).
const PALETTE: &[u32] = &[0x0072b2, 0xd55e00, 0x009e73, 0xcc79a7, 0xe69f00, 0x56b4e9, 0x000000, 0x999999];
/// Dash patterns: solid, dashed, dotted, dash-dot, long dash-dot-dot. Series `k` takes colour
/// `k mod 8` and dash `k div 8`, so no two series share both.
const DASHES: &[&[f64]] = &[&[], &[6.0, 3.0], &[1.5, 3.0], &[8.0, 3.0, 1.5, 3.0], &[14.0, 3.0, 1.5, 3.0, 1.5, 3.0]];
/// The most series a chart tells apart (by colour and dash together).
pub const MAX_SERIES: usize = PALETTE.len() * DASHES.len();
const INK: Color = Color::rgb(0x22, 0x22, 0x22);
const MUTED: Color = Color::rgb(0x66, 0x66, 0x66);
const GRID: Color = Color::rgb(0xe6, 0xe6, 0xe6);
/// Lines closer than this (pixels) at two instants in a row lie over each other.
const OVERLAP_PX: f64 = 1.5;
/// Width of the thinnest series line, and what each series lying over it adds.
const LINE_W: f64 = 2.0;
const NEST_W: f64 = 2.5;
/// Gap between the plot's finite range and the line infinite values are drawn on.
const CLAMP_GAP: f64 = 18.0;
/// The least height of the plot area, however many legend rows and notes there are.
const MIN_PLOT_H: f64 = 160.0;

/// Chart options.
#[derive(Clone, Debug)]
pub struct ChartOptions {
    /// Picture width in pixels (the height is half of it, or more for a long legend).
    pub width: u32,
    /// Appended to the title (which names the metric and the time span); may be empty.
    pub title: String,
    /// The fair-share algorithm, named in the subtitle when known.
    pub algorithm: Option<String>,
    /// The metric drawn.
    pub metric: Metric,
}

/// The colour and dash of series `k` (distinct for every `k < MAX_SERIES`).
fn style(k: usize) -> (Color, &'static [f64]) {
    (Color::hex(PALETTE[k % PALETTE.len()]), DASHES[(k / PALETTE.len()) % DASHES.len()])
}

/// What the chart cannot show as points on its axis, one sentence each: infinite values (drawn
/// on a marked line past the axis) and series with no value at all. The chart prints them under
/// its legend; the command repeats them on stderr.
pub fn notes(series: &[Series], metric: Metric) -> Vec<String> {
    let mut out = Vec::new();
    for s in series {
        let count = |x: f64| s.values.iter().filter(|&&v| v == x).count();
        let (pos, neg, n) = (count(f64::INFINITY), count(f64::NEG_INFINITY), s.values.len());
        let at = match (pos, neg) {
            (0, 0) => None,
            (p, 0) => Some(format!("+∞ at {p} of {n} instant(s), drawn with an arrow (↑) on the +∞ line at the top")),
            (0, m) => {
                Some(format!("−∞ at {m} of {n} instant(s), drawn with an arrow (↓) on the −∞ line at the bottom"))
            }
            (p, m) => Some(format!("+∞ at {p} and −∞ at {m} of {n} instant(s), drawn with arrows on the ±∞ lines")),
        };
        if let Some(at) = at {
            // Fair Tree's S/U is infinite exactly when U, the usage, is zero.
            let why = if metric == Metric::LevelFs && neg == 0 { " (zero usage)" } else { "" };
            out.push(format!("{}: {} {at}{why}", s.name, metric.column()));
        } else if s.values.iter().all(|v| v.is_nan()) {
            out.push(format!("{}: no {} value at any instant, nothing drawn", s.name, metric.column()));
        }
    }
    out
}

/// How many series painted after each one lie over it somewhere, nested: a series is drawn
/// wider than every later one it shares a stretch with, so each shows as a border around the
/// next instead of vanishing under it. `ys` are the series' pixel rows per instant (NaN: none).
fn nesting(ys: &[Vec<f64>]) -> Vec<usize> {
    let near = |a: f64, b: f64| (a - b).abs() < OVERLAP_PX;
    let share = |a: &[f64], b: &[f64]| {
        (0..a.len()).any(|i| near(a[i], b[i]) && (a.len() == 1 || (i + 1 < a.len() && near(a[i + 1], b[i + 1]))))
    };
    let mut level = vec![0; ys.len()];
    for i in (0..ys.len()).rev() {
        level[i] = (i + 1..ys.len()).filter(|&j| share(&ys[i], &ys[j])).map(|j| level[j] + 1).max().unwrap_or(0);
    }
    level
}

/// For each series, the first earlier one with the same value at every instant (gaps included;
/// a series with no value at all has none): its legend entry says `= X`, as its line lies
/// exactly on X's.
fn twins(series: &[Series]) -> Vec<Option<usize>> {
    let same =
        |a: &Series, b: &Series| a.values.iter().zip(&b.values).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()));
    (0..series.len())
        .map(|j| {
            let s = &series[j];
            if s.values.iter().all(|v| v.is_nan()) {
                return None;
            }
            (0..j).find(|&i| same(&series[i], s))
        })
        .collect()
}

/// One entry of the legend.
enum Entry {
    /// Series `k`, under the text given.
    Series(usize, String),
    /// A muted explanation.
    Text(&'static str),
}

impl Entry {
    fn width(&self) -> f64 {
        match self {
            Entry::Series(_, t) => 40.0 + text_width(t, 12.0),
            Entry::Text(t) => text_width(t, 11.0),
        }
    }
}

/// Tick instants for a time axis from `t0` to `t1` (round hours or days, as many as fit, none
/// closer than `min_step`, the history's own spacing), and the format of their labels.
fn time_ticks(t0: i64, t1: i64, min_step: i64, plot_w: f64) -> (Vec<i64>, TimeFormat) {
    const H: i64 = 3600;
    const D: i64 = 86_400;
    let steps = [H, 2 * H, 3 * H, 6 * H, 12 * H, D, 2 * D, 3 * D, 7 * D, 14 * D, 28 * D, 91 * D, 182 * D, 364 * D];
    let span = (t1 - t0).max(1);
    for step in steps.into_iter().filter(|&s| s >= min_step.min(364 * D)) {
        let fmt = if step < D { TimeFormat::MonthDayMinutes } else { TimeFormat::Day };
        let label_w = text_width(if step < D { "00-00 00:00" } else { "0000-00-00" }, 11.0) + 28.0;
        let count = span / step + 1;
        if count as f64 * label_w <= plot_w {
            // From the first midnight (or whole hour) at or after the start, so daily data
            // starting at midnight gets a tick on its first instant.
            let unit = if step < D { H } else { D };
            let mut t = t0.div_euclid(unit) * unit;
            if t < t0 {
                t += unit;
            }
            let mut ticks = Vec::new();
            while t <= t1 {
                ticks.push(t);
                t += step;
            }
            return (ticks, fmt);
        }
    }
    (vec![t0, t1], TimeFormat::Day)
}

/// Two line charts laid out one above the other, each as [`line_chart`] lays it out.
pub fn line_charts([(top, top_opts), (bottom, bottom_opts)]: &[(Vec<Series>, LineChart); 2]) -> Scene {
    line_chart(top, top_opts).stack(line_chart(bottom, bottom_opts))
}

/// Lays out the line chart of `series`: the plot, then the legend in rows as wide as the chart,
/// then the [`notes`], so nothing is cut at any width.
pub fn chart(series: &[Series], opts: &ChartOptions) -> Scene {
    let mut title = format!("{} over time", opts.metric.title());
    if !opts.title.is_empty() {
        title.push_str(": ");
        title.push_str(&opts.title);
    }
    let mut subtitle = match &opts.algorithm {
        Some(a) => format!("{a}. "),
        None => String::new(),
    };
    subtitle.push_str(if series.iter().any(|s| s.band.is_some()) {
        "Accounts: the mean of the factors of the users below them, shaded from their lowest to their highest."
    } else {
        "One line per association, one point per instant of the history."
    });
    let legend_note =
        series.iter().any(|s| s.band.is_some()).then_some("accounts: line, mean of users; shade, their range");
    let line = LineChart {
        width: opts.width,
        title,
        subtitle,
        y_label: opts.metric.label().to_string(),
        unit_range: opts.metric == Metric::FsFactor,
        notes: notes(series, opts.metric),
        legend_note,
        styles: None,
    };
    line_chart(series, &line)
}

/// Lays out the line chart of `series` as `opts` says: the plot, then the legend in rows as wide
/// as the chart, then the notes, so nothing is cut at any width.
pub fn line_chart(series: &[Series], opts: &LineChart) -> Scene {
    let style_of = |k: usize| style(opts.styles.as_ref().and_then(|s| s.get(k).copied()).unwrap_or(k));
    let width = opts.width.max(400);
    let w = f64::from(width);
    let room = w - 32.0;
    let mut scene = Scene::new(width, 0);

    // Value range: factors on 0..1; otherwise from 0 (or the lowest value) to a round top.
    let finite = || {
        series
            .iter()
            .flat_map(|s| s.values.iter().chain(s.band.iter().flatten().flat_map(|(a, b)| [a, b])))
            .copied()
            .filter(|v| v.is_finite())
    };
    let (lo, hi) = if opts.unit_range {
        (0.0, 1.0)
    } else {
        let lo = finite().fold(0.0, f64::min);
        let hi = finite().fold(f64::MIN, f64::max);
        if hi > lo { (lo, hi) } else { (lo, lo + 1.0) }
    };
    let mut yticks = nice_ticks(lo, hi, 5);
    let step = if yticks.len() > 1 { yticks[1] - yticks[0] } else { 1.0 };
    let (y_lo, mut y_hi) = (yticks.first().copied().unwrap_or(lo).min(lo), yticks.last().copied().unwrap_or(hi));
    if y_hi < hi - 1e-12 {
        y_hi += step;
        yticks.push(y_hi);
    }
    let has = |x: f64| series.iter().any(|s| s.values.contains(&x));
    let (inf_hi, inf_lo) = (has(f64::INFINITY), has(f64::NEG_INFINITY));
    let ylabels: Vec<String> = yticks.iter().map(|&v| short_number(v)).collect();
    let clamps = [(inf_hi, "+∞"), (inf_lo, "−∞")];
    let ylabel_w = (ylabels.iter().map(String::as_str))
        .chain(clamps.iter().filter(|c| c.0).map(|c| c.1))
        .map(|l| text_width(l, 11.0))
        .fold(0.0, f64::max);

    let times: Vec<i64> = series.first().map(|s| s.times.clone()).unwrap_or_default();
    let (t0, t1) = (times.first().copied().unwrap_or(0), times.last().copied().unwrap_or(0));
    let (t0, t1) = if t1 > t0 { (t0, t1) } else { (t0 - 43_200, t0 + 43_200) };

    let mut title = opts.title.clone();
    if times.len() > 1 {
        let fmt = if t1 - t0 < 3 * 86_400 { TimeFormat::Minutes } else { TimeFormat::Day };
        title.push_str(&format!(", {} to {}", fmt.format(t0), fmt.format(t1)));
    }
    let title_y = scene.paragraph(Text::new(16.0, 26.0, 17.0, Anchor::Start, INK, title), room, 21.0);
    let sub = opts.subtitle.clone();
    let top = scene.paragraph(Text::new(16.0, title_y + 21.0, 12.0, Anchor::Start, MUTED, sub), room, 15.0) + 25.0;

    // The legend's rows and the notes' lines, below the axis, decide how far down the plot reaches.
    let twins = twins(series);
    let mut entries: Vec<Entry> = series
        .iter()
        .enumerate()
        .map(|(k, s)| match twins[k] {
            Some(i) => Entry::Series(k, format!("{} (= {})", s.name, series[i].name)),
            None => Entry::Series(k, s.name.clone()),
        })
        .collect();
    // A name too long for a row is shortened, distinct from the others.
    let labels: Vec<String> =
        entries.iter().filter_map(|e| if let Entry::Series(_, t) = e { Some(t.clone()) } else { None }).collect();
    let others: Vec<&str> = labels.iter().map(String::as_str).collect();
    for e in &mut entries {
        if let Entry::Series(_, t) = e {
            *t = fit_among(t, &others, 12.0, room - 40.0).unwrap_or_default();
        }
    }
    if let Some(note) = opts.legend_note {
        entries.push(Entry::Text(note));
    }
    let mut rows: Vec<Vec<(f64, &Entry)>> = vec![Vec::new()];
    let mut x = 0.0;
    for e in &entries {
        let ew = e.width();
        if x > 0.0 && x + ew > room {
            rows.push(Vec::new());
            x = 0.0;
        }
        rows.last_mut().expect("a row is open").push((x, e));
        x += ew + 20.0;
    }
    let note_lines: Vec<String> = opts.notes.iter().flat_map(|n| wrap(n, 11.0, room)).collect();
    let below = 52.0 + 12.0 + rows.len() as f64 * 20.0 + note_lines.len() as f64 * 15.0 + 8.0;
    let height = ((w * 0.5).round().max(320.0)).max((top + MIN_PLOT_H + below).ceil());
    scene.height = height as u32;
    let bottom = height - below;

    let left = 16.0 + 18.0 + ylabel_w + 10.0;
    // Room on the right for half of a date label centred on the plot's edge.
    let right = w - 16.0 - text_width("00-00 00:00", 11.0) / 2.0;
    let (plot_w, plot_h) = (right - left, bottom - top);
    scene.data.push(("data-plot-x0", left.to_string()));
    scene.data.push(("data-plot-x1", right.to_string()));
    // Infinite values go on a line of their own past the finite range.
    let f_top = if inf_hi { top + CLAMP_GAP } else { top };
    let f_bottom = if inf_lo { bottom - CLAMP_GAP } else { bottom };
    if inf_hi {
        scene.data.push(("data-inf-y", top.to_string()));
    }
    if inf_lo {
        scene.data.push(("data-neg-inf-y", bottom.to_string()));
    }
    let x_of = |t: i64| left + (t - t0) as f64 / (t1 - t0) as f64 * plot_w;
    let y_of = |v: f64| {
        if v == f64::INFINITY {
            top
        } else if v == f64::NEG_INFINITY {
            bottom
        } else {
            f_bottom - (v - y_lo) / (y_hi - y_lo) * (f_bottom - f_top)
        }
    };

    // Grid and axes.
    for (v, l) in yticks.iter().zip(&ylabels) {
        let y = y_of(*v).round();
        scene.segment((left, y), (right, y), GRID, 1.0);
        scene.text(Text::new(left - 8.0, y + 4.0, 11.0, Anchor::End, INK, l.clone()));
    }
    for ((on, l), y) in clamps.into_iter().zip([top, bottom]) {
        if on {
            let mut clamp = Line::new(vec![(left, y), (right, y)], MUTED, 1.0);
            clamp.dash = DASHES[1];
            scene.items.push(Item::Line(clamp));
            scene.text(Text::new(left - 8.0, y + 4.0, 11.0, Anchor::End, INK, l));
        }
    }
    let spacing = times.windows(2).map(|w| w[1] - w[0]).filter(|&d| d > 0).min().unwrap_or(0);
    let (xticks, fmt) = time_ticks(t0, t1, spacing, plot_w);
    for t in xticks {
        let x = x_of(t).round();
        scene.segment((x, top), (x, bottom), GRID, 1.0);
        scene.segment((x, bottom), (x, bottom + 5.0), INK, 1.0);
        scene.text(Text::new(x, bottom + 18.0, 11.0, Anchor::Middle, INK, fmt.format(t)));
    }
    scene.segment((left, bottom), (right, bottom), INK, 1.0);
    scene.segment((left, top), (left, bottom), INK, 1.0);
    scene.text(Text::new(left + plot_w / 2.0, bottom + 38.0, 12.0, Anchor::Middle, INK, "date (UTC)"));
    let mut ytitle = Text::new(16.0 + 12.0, top + plot_h / 2.0, 12.0, Anchor::Middle, INK, opts.y_label.clone());
    ytitle.vertical = true;
    scene.text(ytitle);

    // Bands first, so every line stays on top of every band.
    for (k, s) in series.iter().enumerate() {
        if let Some(band) = &s.band {
            for run in runs(&s.times, band.iter().map(|b| b.0.is_finite() && b.1.is_finite())) {
                let mut pts: Vec<(f64, f64)> = run.iter().map(|&i| (x_of(s.times[i]), y_of(band[i].1))).collect();
                pts.extend(run.iter().rev().map(|&i| (x_of(s.times[i]), y_of(band[i].0))));
                scene.items.push(Item::Polygon { points: pts, fill: style_of(k).0.alpha(0.16), class: "band" });
            }
        }
    }
    let ys: Vec<Vec<f64>> = series
        .iter()
        .map(|s| s.values.iter().map(|&v| if v.is_nan() { f64::NAN } else { y_of(v) }).collect())
        .collect();
    let nest = nesting(&ys);
    for (k, s) in series.iter().enumerate() {
        let (color, dash) = style_of(k);
        let width = LINE_W + NEST_W * nest[k] as f64;
        let line = |points: Vec<(f64, f64)>, width: f64| {
            let mut l = Line::new(points, color, width);
            (l.dash, l.class) = (dash, "series");
            l.data.push(("data-series", s.name.clone()));
            Item::Line(l)
        };
        for run in runs(&s.times, ys[k].iter().map(|y| !y.is_nan())) {
            let pts: Vec<(f64, f64)> = run.iter().map(|&i| (x_of(s.times[i]), ys[k][i])).collect();
            // A lone instant: a short tick so it shows.
            let item = match pts[..] {
                [(x, y)] => line(vec![(x - 4.0, y), (x + 4.0, y)], width + 0.5),
                _ => line(pts, width),
            };
            scene.items.push(item);
        }
        // An arrow on each infinite value, pointing off the axis; nested like the lines.
        let half = 4.0 + NEST_W / 2.0 * nest[k] as f64;
        for (i, &v) in s.values.iter().enumerate().filter(|(_, v)| v.is_infinite()) {
            let (x, y, dir) = (x_of(s.times[i]), ys[k][i], if v > 0.0 { -1.0 } else { 1.0 });
            let points =
                vec![(x - half, y - dir * half * 0.6), (x + half, y - dir * half * 0.6), (x, y + dir * half * 1.2)];
            scene.items.push(Item::Polygon { points, fill: color, class: "clamp" });
        }
    }

    // The legend, in rows under the axis title, then the notes.
    let mut ly = bottom + 52.0 + 12.0;
    for row in &rows {
        for &(dx, e) in row {
            let lx = 16.0 + dx;
            match e {
                Entry::Series(k, text) => {
                    let (color, dash) = style_of(*k);
                    if series[*k].band.is_some() {
                        scene.rect(super::Rect::new(lx, ly - 7.0, 32.0, 14.0, color.alpha(0.16)));
                    }
                    let mut sample = Line::new(vec![(lx, ly), (lx + 32.0, ly)], color, 2.5);
                    (sample.dash, sample.class) = (dash, "legend");
                    sample.data.push(("data-series", series[*k].name.clone()));
                    scene.items.push(Item::Line(sample));
                    scene.text(Text::new(lx + 40.0, ly + 4.0, 12.0, Anchor::Start, INK, text.clone()));
                }
                Entry::Text(text) => scene.text(Text::new(lx, ly + 4.0, 11.0, Anchor::Start, MUTED, *text)),
            }
        }
        ly += 20.0;
    }
    for line in note_lines {
        scene.text(Text::new(16.0, ly + 4.0, 11.0, Anchor::Start, MUTED, line));
        ly += 15.0;
    }
    scene
}

/// Index runs of consecutive instants where `ok` holds (a gap breaks the line).
fn runs(times: &[i64], ok: impl Iterator<Item = bool>) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut open = false;
    for (i, good) in ok.enumerate().take(times.len()) {
        if good {
            if !open {
                out.push(Vec::new());
            }
            out.last_mut().expect("a run is open").push(i);
        }
        open = good;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daily_ticks_start_at_the_first_midnight() {
        let d = 86_400;
        let t0 = 20_431 * d; // a midnight
        let (ticks, fmt) = time_ticks(t0, t0 + 30 * d, d, 700.0);
        assert_eq!(ticks[0], t0);
        assert_eq!(fmt, TimeFormat::Day);
        assert!(ticks.len() >= 3 && ticks.len() <= 10, "{ticks:?}");
        let step = ticks[1] - ticks[0];
        assert!(ticks.windows(2).all(|w| w[1] - w[0] == step));
        let (hours, fmt) = time_ticks(t0 + 600, t0 + 6 * 3600, 600, 700.0);
        assert_eq!(fmt, TimeFormat::MonthDayMinutes);
        assert_eq!(hours[0], t0 + 3600);
        // Daily data over a few days: ticks on days, not between the instants.
        let (days, fmt) = time_ticks(t0, t0 + 3 * d, d, 700.0);
        assert_eq!((days, fmt), (vec![t0, t0 + d, t0 + 2 * d, t0 + 3 * d], TimeFormat::Day));
    }

    fn series(name: &str, values: &[f64]) -> Series {
        let times = (0..values.len() as i64).map(|k| 1_767_571_200 + k * 86_400).collect();
        Series { name: name.into(), times, values: values.to_vec(), band: None }
    }

    fn opts(width: u32, metric: Metric) -> ChartOptions {
        ChartOptions { width, title: String::new(), algorithm: Some("Fair Tree".into()), metric }
    }

    /// The series lines drawn: (data-series, colour, dash, width).
    fn lines(scene: &Scene) -> Vec<(String, Color, &'static [f64], f64)> {
        scene
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Line(l) if l.class == "series" => Some((l.data[0].1.clone(), l.color, l.dash, l.width)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn no_two_series_share_colour_and_dash() {
        let many: Vec<Series> =
            (0..MAX_SERIES).map(|k| series(&format!("u{k}"), &[k as f64, 1.0 + k as f64])).collect();
        let drawn = lines(&chart(&many, &opts(1000, Metric::RawUsage)));
        assert_eq!(drawn.len(), MAX_SERIES);
        for (i, a) in drawn.iter().enumerate() {
            for b in &drawn[i + 1..] {
                assert!(a.1 != b.1 || a.2 != b.2, "{} and {} are both {:?} {:?}", a.0, b.0, a.1, a.2);
            }
        }
    }

    #[test]
    fn coinciding_series_nest_and_say_so() {
        let s = [
            series("dana", &[0.5, 0.5, 0.6]),
            series("eli", &[0.5, 0.5, 0.6]),
            series("gus", &[0.1, 0.9, 0.2]),
            series("fay", &[0.5, 0.5, 0.6]),
        ];
        let scene = chart(&s, &opts(800, Metric::FsFactor));
        let width = |name: &str| lines(&scene).into_iter().find(|l| l.0 == name).unwrap().3;
        // Painted in order, each wider than the ones on top of it.
        assert!(width("dana") > width("eli") && width("eli") > width("fay"), "{:?}", lines(&scene));
        assert_eq!(width("gus"), LINE_W);
        let texts: Vec<&str> = scene
            .items
            .iter()
            .filter_map(|i| if let Item::Text(t) = i { Some(t.text.as_str()) } else { None })
            .collect();
        assert!(
            texts.contains(&"eli (= dana)") && texts.contains(&"fay (= dana)") && texts.contains(&"gus"),
            "{texts:?}"
        );
        // Lying on each other for a stretch is enough to nest; crossing is not.
        let part =
            [series("a", &[10.0, 50.0, 50.0]), series("b", &[90.0, 50.0, 50.0]), series("c", &[20.0, 50.0, 90.0])];
        // As pixel rows.
        let ys: Vec<Vec<f64>> = part.iter().map(|s| s.values.clone()).collect();
        assert_eq!(nesting(&ys), vec![1, 0, 0]);
        assert_eq!(twins(&part), vec![None, None, None]);
    }

    #[test]
    fn infinite_values_sit_on_a_marked_line_and_are_noted() {
        let s = [series("lee", &[f64::INFINITY, 2.0, f64::INFINITY]), series("kim", &[f64::NAN; 3])];
        let scene = chart(&s, &opts(800, Metric::LevelFs));
        let inf_y: f64 = scene.data.iter().find(|d| d.0 == "data-inf-y").unwrap().1.parse().unwrap();
        let arrows: Vec<&Vec<(f64, f64)>> = scene
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Polygon { points, class: "clamp", .. } => Some(points),
                _ => None,
            })
            .collect();
        assert_eq!(arrows.len(), 2);
        // Each arrow's tip is above the +∞ line, pointing up off the axis.
        assert!(arrows.iter().all(|p| p[2].1 < inf_y && p[0].1 > inf_y), "{arrows:?}");
        let Some(Item::Line(lee)) = scene.items.iter().find(|i| matches!(i, Item::Line(l) if l.class == "series"))
        else {
            panic!("no line")
        };
        assert_eq!(lee.points.len(), 3);
        assert!(lee.points[0].1 == inf_y && lee.points[2].1 == inf_y && lee.points[1].1 > inf_y + CLAMP_GAP - 0.01);
        let notes = notes(&s, Metric::LevelFs);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("lee: level_fs +∞ at 2 of 3 instant(s)") && notes[0].contains("zero usage"));
        assert!(notes[1].starts_with("kim: no level_fs value"));
        let texts: Vec<&str> = scene
            .items
            .iter()
            .filter_map(|i| if let Item::Text(t) = i { Some(t.text.as_str()) } else { None })
            .collect();
        assert!(texts.contains(&"+∞") && texts.iter().any(|t| t.starts_with("lee: level_fs +∞")), "{texts:?}");
    }

    #[test]
    fn everything_fits_at_the_narrowest_width() {
        let long = "a_user_with_a_rather_long_name@an_account_with_an_even_longer_name_than_that";
        let mut many: Vec<Series> =
            (0..20).map(|k| series(&format!("user{k}@chem_lab"), &[0.04 * k as f64, 0.5])).collect();
        many.push(series(long, &[f64::INFINITY, 0.5]));
        many.push(series(&long.replace("that", "this"), &[0.3, 0.5]));
        many[3].band = Some(vec![(0.1, 0.5), (0.2, 0.6)]);
        for width in [400, 600, 1000] {
            for metric in [Metric::FsFactor, Metric::LevelFs] {
                let scene = chart(&many, &opts(width, metric));
                let out = super::super::outside(&scene);
                assert!(out.is_empty(), "{metric:?} at {width}: {out:#?}");
                // The two long names, cut to fit in the legend, still differ.
                let cut: Vec<&str> = scene
                    .items
                    .iter()
                    .filter_map(|i| match i {
                        Item::Text(t) if t.size == 12.0 && t.text.starts_with("a_user") => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect();
                assert_eq!(cut.len(), 2, "{cut:?}");
                assert_ne!(cut[0], cut[1]);
            }
        }
    }

    #[test]
    fn gaps_split_lines() {
        let t = [1, 2, 3, 4, 5];
        assert_eq!(runs(&t, [true, true, false, true, true].into_iter()), vec![vec![0, 1], vec![3, 4]]);
        assert!(runs(&t, [false; 5].into_iter()).is_empty());
    }
}
