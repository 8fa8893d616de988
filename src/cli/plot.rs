//! `fairshare plot`: the icicle of a tree's fair-share ranks, or associations' history over time,
//! written as SVG or PNG by the output's extension.

use fairshare_base::Result;
use fairshare_pictures::plot::history::{ChartOptions, History, chart, notes};
use fairshare_pictures::plot::icicle::{IcicleOptions, icicle};
use fairshare_pictures::plot::{Format, save};

use super::args::{HistoryArgs, IcicleArgs, PlotArgs, PlotCommand};
use super::progress::Terminal;
use super::settings::Settings;
use fairshare_base::named::Named;

pub(crate) fn run(a: &PlotArgs) -> Result<()> {
    match &a.what {
        PlotCommand::Icicle(a) => run_icicle(a),
        PlotCommand::History(a) => run_history(a),
    }
}

/// The last component of a path, for a title.
fn short_name(path: &str) -> String {
    std::path::Path::new(path).file_name().map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

fn run_icicle(a: &IcicleArgs) -> Result<()> {
    // Checked before the (possibly long) computation.
    Format::of(&a.out)?;
    let settings = Settings::new(&a.tree, &a.usage, None)?;
    let site = settings.options.resolve()?;
    let (tree, fs, _) = site.fair_share(&Terminal::new(settings.default_notes()))?;
    let mut title = short_name(&site.tree.source());
    if let (Some(now), Some(_)) = (&settings.options.now, &settings.options.jobs) {
        title.push_str(&format!(" at {now}"));
    }
    let opts = IcicleOptions { width: a.width, depth: a.depth, color: a.color, title };
    save(&icicle(&tree, &fs, &opts), &a.out)
}

fn run_history(a: &HistoryArgs) -> Result<()> {
    Format::of(&a.out)?;
    let metric = a.metric;
    let history = History::read(&a.history, metric)?;
    let series = history.series(&a.accounts)?;
    // The metadata's name for the algorithm, as the user would say it.
    let algorithm = history.algorithm().map(|a| {
        fairshare_engine::pass::Algorithm::of_name(a).map_or_else(|| a.to_string(), |a| a.title().to_string())
    });
    let opts = ChartOptions { width: a.width, title: String::new(), algorithm, metric };
    save(&chart(&series, &opts), &a.out)?;
    // What the chart could not place on its axis is said where a script sees it, too.
    for note in notes(&series, metric) {
        eprintln!("fairshare: note: {note}");
    }
    Ok(())
}
