//! `fairshare forecast`: a user association's fair-share over the coming days, when it reaches a
//! target, and what it can still run.

use fairshare_analyses::forecast::render::{json, metadata, text, trajectory_batch};
use fairshare_analyses::forecast::{ForecastOptions, forecast};
use fairshare_base::write::parquet::write_parquet;
use fairshare_base::{Error, Result};
use fairshare_engine::config::time::parse_duration;
use fairshare_pictures::plot::{Format, save};

use super::args::ForecastArgs;
use super::progress::Terminal;
use super::settings::Settings;

fn duration(text: &str, flag: &str) -> Result<i64> {
    parse_duration(text).map_err(|m| Error::Usage(format!("{flag}: {m}")))
}

pub(crate) fn run(a: &ForecastArgs) -> Result<()> {
    if let Some(p) = &a.plot {
        Format::of(p)?;
    }
    let options = ForecastOptions {
        assume: a.assume,
        window: a.window.as_deref().map(|w| duration(w, "--window")).transpose()?,
        horizon: a.horizon.as_deref().map(|h| duration(h, "--horizon")).transpose()?,
        steps: a.steps,
        target: a.target,
        floor: a.floor,
        budget_over: Some(duration(&a.budget_over, "--budget-over")?),
        partition: a.partition.clone(),
    };
    let settings = Settings::new(&a.tree, &a.usage, None)?;
    let site = settings.options.resolve()?;
    let observer = Terminal::new(settings.default_notes());
    let f = forecast(&site, &a.who, &options, &observer)?;
    if let Some(out) = &a.out {
        let mut meta = metadata(&f);
        meta.extend(site.metadata());
        write_parquet(out, &trajectory_batch(&f), meta)?;
    }
    if let Some(p) = &a.plot {
        save(&fairshare_pictures::plot::forecast::forecast_chart(&f, 1000), p)?;
    }
    let printed = if a.json {
        let mut s = serde_json::to_string_pretty(&json(&f)).map_err(|e| Error::Usage(e.to_string()))?;
        s.push('\n');
        s
    } else {
        text(&f)
    };
    super::stdout::print(printed.as_bytes())
}
