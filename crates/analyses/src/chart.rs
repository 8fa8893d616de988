//! The data of a line chart over time, as an analysis hands it to be drawn (by
//! `fairshare_pictures`): the series, and the texts, axis and styles that go with them.

/// A line to draw: its name and a value (NaN for a gap) at every instant, with an optional
/// shaded band.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Epoch seconds.
    pub times: Vec<i64>,
    /// The value at each instant.
    pub values: Vec<f64>,
    /// Low and high of the band at each instant (accounts under `fs_factor`).
    pub band: Option<Vec<(f64, f64)>>,
}

/// A line chart over time of any values: its texts, axis and series styles.
#[derive(Clone, Debug)]
pub struct LineChart {
    /// Picture width in pixels (the height is half of it, or more for a long legend).
    pub width: u32,
    /// The title; the time span is appended.
    pub title: String,
    /// The muted line under the title.
    pub subtitle: String,
    /// The y axis title.
    pub y_label: String,
    /// The y axis spans 0 to 1 (factors, indices); otherwise 0 (or the lowest value) to a round top.
    pub unit_range: bool,
    /// Sentences printed under the legend.
    pub notes: Vec<String>,
    /// A muted explanation appended to the legend.
    pub legend_note: Option<&'static str>,
    /// The style of each series (colour `k mod 8`, dash `k div 8`, as many as `fairshare_pictures::plot::history::MAX_SERIES`), so that
    /// related series can share a colour; `None`: series `k` takes style `k`.
    pub styles: Option<Vec<usize>>,
}

/// A number short enough for a tick label: `0.25`, `12`, `3.4k`, `1.2M`, `5G`.
pub fn short_number(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e12 {
        (v / 1e12, "T")
    } else if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    // Up to three significant decimals, trailing zeros dropped.
    let mut s = format!("{x:.3}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if s == "-0" {
        s = "0".into();
    }
    s + suffix
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers_keep_three_significant_decimals() {
        assert_eq!(short_number(2e6), "2M");
        assert_eq!(short_number(0.25), "0.25");
        assert_eq!(short_number(12_500.0), "12.5k");
    }
}
