//! A forecast's trajectory ([`crate::forecast`]) as a chart: the association's fair-share factor
//! from now to the horizon, with the target as a level line.

use super::Scene;
use super::history::{ChartOptions, Metric, Series, chart};
use crate::forecast::Forecast;

/// The chart of `f`'s trajectory, `width` pixels wide.
pub fn forecast_chart(f: &Forecast, width: u32) -> Scene {
    let times: Vec<i64> = f.trajectory.iter().map(|p| p.at).collect();
    let series = [
        Series {
            name: format!("{} (assuming {})", f.association, f.assume.name()),
            times: times.clone(),
            values: f.trajectory.iter().map(|p| p.fs_factor).collect(),
            band: None,
        },
        Series { name: format!("target {}", f.target), values: vec![f.target; times.len()], times, band: None },
    ];
    let reached = match f.reached_at {
        Some(t) => format!(", target reached {}", crate::output::iso_utc(t)),
        None => ", target not reached".to_string(),
    };
    let opts = ChartOptions {
        width,
        title: format!("forecast{reached}"),
        algorithm: Some(f.algorithm.title().to_string()),
        metric: Metric::FsFactor,
    };
    chart(&series, &opts)
}
