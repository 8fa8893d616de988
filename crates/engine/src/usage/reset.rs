//! `PriorityUsageResetPeriod` boundaries in a site's local time.
//!
//! slurmctld computes the next reset in the controller's local time: midnight, Sunday 00:00, the
//! first of the month, of the quarter or of the year. The decay models need the opposite question:
//! the last boundary at or before an instant.

use chrono::{Datelike, NaiveDate, TimeZone};
use chrono_tz::Tz;

use crate::config::ResetPeriod;

/// The last boundary of `period` at or before `t` (epoch seconds), in the timezone `tz`; `None` for
/// `NONE` and `NOW`, which have no recurring boundary.
///
/// # Example
/// ```
/// use fairshare_engine::config::ResetPeriod;
/// use fairshare_engine::usage::reset::last_boundary;
/// // 2026-03-04 (a Wednesday) 12:00 UTC; the week started on Sunday 2026-03-01.
/// let t = 1_772_625_600;
/// assert_eq!(last_boundary(ResetPeriod::Weekly, chrono_tz::UTC, t), Some(1_772_323_200));
/// ```
pub fn last_boundary(period: ResetPeriod, tz: Tz, t: i64) -> Option<i64> {
    let local = tz.timestamp_opt(t, 0).single()?.date_naive();
    let (y, m) = (local.year(), local.month());
    let date = match period {
        ResetPeriod::None | ResetPeriod::Now => return None,
        ResetPeriod::Daily => local,
        ResetPeriod::Weekly => local - chrono::Days::new(u64::from(local.weekday().num_days_from_sunday())),
        ResetPeriod::Monthly => NaiveDate::from_ymd_opt(y, m, 1)?,
        ResetPeriod::Quarterly => NaiveDate::from_ymd_opt(y, (m - 1) / 3 * 3 + 1, 1)?,
        ResetPeriod::Yearly => NaiveDate::from_ymd_opt(y, 1, 1)?,
    };
    Some(local_midnight(tz, date))
}

/// The instant a local date starts; in the rare zone where midnight is skipped by a DST change,
/// the first instant of the day that exists.
fn local_midnight(tz: Tz, date: NaiveDate) -> i64 {
    let mut at = date.and_hms_opt(0, 0, 0).expect("midnight exists");
    loop {
        if let Some(dt) = tz.from_local_datetime(&at).earliest() {
            return dt.timestamp();
        }
        at += chrono::Duration::minutes(15);
    }
}

/// Parses a timezone: `UTC` or an IANA name such as `Europe/Stockholm`.
///
/// # Errors
/// An unknown name.
pub fn parse_timezone(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>()
        .map_err(|_| format!("unknown timezone {name:?}: expected UTC or an IANA name such as Europe/Stockholm"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairshare_base::read::time::parse_timestamp;

    fn at(s: &str) -> i64 {
        parse_timestamp(s).unwrap()
    }

    #[test]
    fn boundaries_in_utc() {
        let utc = chrono_tz::UTC;
        let t = at("2026-08-19T13:45:00"); // a Wednesday
        assert_eq!(last_boundary(ResetPeriod::Daily, utc, t), Some(at("2026-08-19T00:00:00")));
        assert_eq!(last_boundary(ResetPeriod::Weekly, utc, t), Some(at("2026-08-16T00:00:00")));
        assert_eq!(last_boundary(ResetPeriod::Monthly, utc, t), Some(at("2026-08-01T00:00:00")));
        assert_eq!(last_boundary(ResetPeriod::Quarterly, utc, t), Some(at("2026-07-01T00:00:00")));
        assert_eq!(last_boundary(ResetPeriod::Yearly, utc, t), Some(at("2026-01-01T00:00:00")));
        assert_eq!(last_boundary(ResetPeriod::None, utc, t), None);
        // A boundary is its own last boundary; Sunday is the first day of Slurm's week.
        let sunday = at("2026-08-16T00:00:00");
        assert_eq!(last_boundary(ResetPeriod::Weekly, utc, sunday), Some(sunday));
        assert_eq!(last_boundary(ResetPeriod::Daily, utc, sunday - 1), Some(at("2026-08-15T00:00:00")));
    }

    #[test]
    fn boundaries_follow_local_time_and_dst() {
        let tz = parse_timezone("Europe/Stockholm").unwrap();
        // Summer (CEST, UTC+2): local midnight is 22:00 UTC the day before.
        assert_eq!(last_boundary(ResetPeriod::Daily, tz, at("2026-08-19T10:00:00")), Some(at("2026-08-18T22:00:00")));
        // Winter (CET, UTC+1).
        assert_eq!(last_boundary(ResetPeriod::Monthly, tz, at("2026-12-05T10:00:00")), Some(at("2026-11-30T23:00:00")));
        // 23:30 UTC on Dec 31 is already Jan 1 in Stockholm.
        assert_eq!(last_boundary(ResetPeriod::Yearly, tz, at("2026-12-31T23:30:00")), Some(at("2026-12-31T23:00:00")));
        assert!(parse_timezone("Mars/Olympus").is_err());
    }
}
