//! A forecast's trajectory ([`fairshare_analyses::forecast`]) as a chart: the association's fair-share factor
//! from now to the horizon, with the target as a level line. One [`Forecast`] or one row of
//! [`fairshare_analyses::forecast::Trajectories`] (a report's user pages) draw alike ([`trajectory_chart`]).

use super::Scene;
use super::history::line_chart;
use fairshare_analyses::chart::{LineChart, Series};
use fairshare_analyses::forecast::{Assume, Forecast};
use fairshare_engine::pass::Algorithm;

/// One association's trajectory, as a chart draws it.
#[derive(Clone, Debug)]
pub struct Trajectory<'a> {
    /// `USER@ACCOUNT`.
    pub association: &'a str,
    /// What the forecast assumes.
    pub assume: Assume,
    /// Epoch seconds.
    pub times: Vec<i64>,
    /// The factor at each instant.
    pub values: Vec<f64>,
    /// The factor sought, drawn as a level line.
    pub target: f64,
    /// When the target is first reached (`None`: not within the horizon).
    pub reached_at: Option<i64>,
    /// The pass.
    pub algorithm: Algorithm,
}

/// The chart of `f`'s trajectory, `width` pixels wide.
pub fn forecast_chart(f: &Forecast, width: u32) -> Scene {
    let t = Trajectory {
        association: &f.association,
        assume: f.assume,
        times: f.trajectory.iter().map(|p| p.at).collect(),
        values: f.trajectory.iter().map(|p| p.fs_factor).collect(),
        target: f.target,
        reached_at: f.reached_at,
        algorithm: f.algorithm,
    };
    trajectory_chart(&t, width)
}

/// The chart of one trajectory, `width` pixels wide.
pub fn trajectory_chart(t: &Trajectory<'_>, width: u32) -> Scene {
    let series = [
        Series { name: t.association.to_string(), times: t.times.clone(), values: t.values.clone(), band: None },
        Series {
            name: format!("target {}", t.target),
            values: vec![t.target; t.times.len()],
            times: t.times.clone(),
            band: None,
        },
    ];
    let reached = match t.reached_at {
        Some(at) => format!("target reached {}", fairshare_base::time_format::iso_utc(at)),
        None => "target not reached".to_string(),
    };
    let assumption = match t.assume {
        Assume::Idle => "no new usage anywhere",
        Assume::Steady => "everyone goes on at their rate of the last window",
    };
    let opts = LineChart {
        width,
        title: format!("Fair-share forecast of {}, {reached}", t.association),
        subtitle: format!("{}. Assuming {assumption}; one point per instant of the forecast.", t.algorithm.title()),
        y_label: "fair-share factor".into(),
        unit_range: true,
        notes: Vec::new(),
        legend_note: None,
        styles: None,
    };
    line_chart(&series, &opts)
}
