//! The formats instants are printed in, each by name, so that one format has one spelling.
//!
//! Instants are epoch seconds, printed in UTC. One chrono cannot represent (hundreds of thousands
//! of years away; readers refuse such times) prints as the epoch.

/// A way of printing an instant.
///
/// # Example
/// ```
/// use fairshare_base::time_format::TimeFormat;
///
/// let t = 1_767_830_400 + 3723;
/// assert_eq!(TimeFormat::Iso.format(t), "2026-01-08T01:02:03Z");
/// assert_eq!(TimeFormat::Text.format(t), "2026-01-08 01:02:03 UTC");
/// assert_eq!(TimeFormat::Minutes.format(t), "2026-01-08 01:02");
/// assert_eq!(TimeFormat::Day.format(t), "2026-01-08");
/// assert_eq!(TimeFormat::MonthDayMinutes.format(t), "01-08 01:02");
/// assert_eq!(TimeFormat::Clock.format(t), "010203");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeFormat {
    /// ISO 8601, `2026-01-08T00:00:00Z`: files, JSON and labels.
    Iso,
    /// `2026-01-08 00:00:00 UTC`: text a person reads.
    Text,
    /// `2026-01-08 00:00`: table rows.
    Minutes,
    /// `2026-01-08`: a day, for axes and the history's `date=` directories.
    Day,
    /// `01-08 00:00`: axes that span a few days.
    MonthDayMinutes,
    /// `000000`: hours, minutes and seconds run together, for the history's file names.
    Clock,
}

impl TimeFormat {
    /// The `strftime` pattern.
    fn pattern(self) -> &'static str {
        match self {
            TimeFormat::Iso => "%Y-%m-%dT%H:%M:%SZ",
            TimeFormat::Text => "%Y-%m-%d %H:%M:%S UTC",
            TimeFormat::Minutes => "%Y-%m-%d %H:%M",
            TimeFormat::Day => "%Y-%m-%d",
            TimeFormat::MonthDayMinutes => "%m-%d %H:%M",
            TimeFormat::Clock => "%H%M%S",
        }
    }

    /// The epoch time `t` in this format.
    pub fn format(self, t: i64) -> String {
        chrono::DateTime::from_timestamp(t, 0).unwrap_or_default().format(self.pattern()).to_string()
    }
}

/// An epoch time as ISO 8601 in UTC: `YYYY-MM-DDTHH:MM:SSZ` ([`TimeFormat::Iso`]).
pub fn iso_utc(t: i64) -> String {
    TimeFormat::Iso.format(t)
}
