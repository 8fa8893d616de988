//! A forecast's trajectory ([`crate::forecast`]) as a chart: the association's fair-share factor
//! from now to the horizon, with the target as a level line.

use super::Scene;
use super::history::{LineChart, Series, line_chart};
use crate::forecast::{Assume, Forecast};

/// The chart of `f`'s trajectory, `width` pixels wide.
pub fn forecast_chart(f: &Forecast, width: u32) -> Scene {
    let times: Vec<i64> = f.trajectory.iter().map(|p| p.at).collect();
    let series = [
        Series {
            name: f.association.clone(),
            times: times.clone(),
            values: f.trajectory.iter().map(|p| p.fs_factor).collect(),
            band: None,
        },
        Series { name: format!("target {}", f.target), values: vec![f.target; times.len()], times, band: None },
    ];
    let reached = match f.reached_at {
        Some(t) => format!("target reached {}", crate::output::iso_utc(t)),
        None => "target not reached".to_string(),
    };
    let assumption = match f.assume {
        Assume::Idle => "no new usage anywhere".to_string(),
        Assume::Steady => "everyone goes on at their rate of the last window".to_string(),
    };
    let opts = LineChart {
        width,
        title: format!("Fair-share forecast of {}, {reached}", f.association),
        subtitle: format!("{}. Assuming {assumption}; one point per instant of the forecast.", f.algorithm.title()),
        y_label: "fair-share factor".into(),
        unit_range: true,
        notes: Vec::new(),
        legend_note: None,
        styles: None,
    };
    line_chart(&series, &opts)
}
