//! Slurm time strings (`time_str2mins()` in `src/common/parse_time.c`).
//!
//! Accepted forms: `minutes`, `minutes:seconds`, `hours:minutes:seconds`, `days-hours`,
//! `days-hours:minutes`, `days-hours:minutes:seconds`, and `UNLIMITED` / `INFINITE` / `-1`. Seconds
//! are rounded up to whole minutes, as Slurm does.

use std::fmt;

use fairshare_base::read::fields::trim_field;

/// Slurm's `INFINITE` (`0xffffffff`), the value its `uint32_t` time fields hold for "unlimited".
pub const INFINITE: u32 = u32::MAX;

/// A duration read from a Slurm time string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeLimit {
    /// A finite duration, in whole minutes (seconds rounded up).
    Minutes(u32),
    /// `UNLIMITED`, `INFINITE` or `-1`.
    Unlimited,
}

impl TimeLimit {
    /// The value Slurm keeps in its `uint32_t` minute fields (a partition's `max_time`, a job's
    /// `time_limit`): the minutes, or [`INFINITE`] when unlimited.
    pub fn slurm_minutes(self) -> u32 {
        match self {
            TimeLimit::Minutes(m) => m,
            TimeLimit::Unlimited => INFINITE,
        }
    }

    /// The seconds slurmctld stores for a `Priority*` time knob: `time_str2mins() * 60` computed in a
    /// C `int` and kept in a `uint32_t`, so `UNLIMITED` (-1 minutes) becomes 4294967236.
    pub fn slurm_knob_seconds(self) -> u32 {
        // The C code multiplies the int result of time_str2mins(); reproduce its two's-complement wrap.
        (self.slurm_minutes() as i32).wrapping_mul(60) as u32
    }
}

impl fmt::Display for TimeLimit {
    /// Formats as Slurm prints minutes (`mins2time_str`): `[days-]hh:mm:ss` or `UNLIMITED`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TimeLimit::Unlimited => f.write_str("UNLIMITED"),
            TimeLimit::Minutes(m) => {
                let (days, hours, mins) = (m / 1440, m / 60 % 24, m % 60);
                if days > 0 {
                    write!(f, "{days}-{hours:02}:{mins:02}:00")
                } else {
                    write!(f, "{hours:02}:{mins:02}:00")
                }
            }
        }
    }
}

/// Parses a Slurm time string as `time_str2mins()` does.
///
/// # Errors
/// Text that is not one of the accepted forms (Slurm's `NO_VAL`), a negative duration (`-5`, which
/// every configuration key rejects) or one that overflows Slurm's `int` seconds.
///
/// # Example
/// ```
/// use fairshare_engine::config::time::{parse_time, TimeLimit};
/// assert_eq!(parse_time("7-0"), Ok(TimeLimit::Minutes(7 * 1440)));
/// assert_eq!(parse_time("1:30"), Ok(TimeLimit::Minutes(2))); // 1 min 30 s, rounded up
/// assert_eq!(parse_time("1:30:00"), Ok(TimeLimit::Minutes(90)));
/// assert_eq!(parse_time("unlimited"), Ok(TimeLimit::Unlimited));
/// ```
pub fn parse_time(text: &str) -> Result<TimeLimit, String> {
    match plain_hms(text.as_bytes()) {
        Some(seconds) if seconds <= i64::from(i32::MAX) => Ok(TimeLimit::Minutes(((seconds + 59) / 60) as u32)),
        _ => parse_general(text),
    }
}

/// The seconds of `[days-]hours:minutes:seconds` in digits, as [`parse_general`] reads them;
/// `None` for any other form. sacct prints every `Timelimit` so: read here without splitting,
/// collecting or checking the text first, which was a twentieth of charging a `sacct -P` file.
fn plain_hms(text: &[u8]) -> Option<i64> {
    // days, hours, minutes, seconds, or the last three; nine digits at most each, so no number
    // leaves Slurm's `int` range (the general parser's check).
    let (mut runs, mut seps) = ([0i64; 4], [0u8; 3]);
    let (mut n, mut len) = (0, 0);
    for &b in text {
        match b {
            b'0'..=b'9' if len < 9 => {
                runs[n] = runs[n] * 10 + i64::from(b - b'0');
                len += 1;
            }
            b'-' | b':' if len > 0 && n < 3 => {
                seps[n] = b;
                n += 1;
                len = 0;
            }
            _ => return None,
        }
    }
    match (len > 0, n, seps) {
        (true, 2, [b':', b':', _]) => Some(3600 * runs[0] + 60 * runs[1] + runs[2]),
        (true, 3, [b'-', b':', b':']) => Some(86400 * runs[0] + 3600 * runs[1] + 60 * runs[2] + runs[3]),
        _ => None,
    }
}

/// [`parse_time`] for every form.
fn parse_general(text: &str) -> Result<TimeLimit, String> {
    if ["-1", "INFINITE", "UNLIMITED"].iter().any(|u| text.eq_ignore_ascii_case(u)) {
        return Ok(TimeLimit::Unlimited);
    }
    let bad = || format!("{text:?} is not a Slurm time (minutes, min:sec, h:m:s, days-h[:m[:s]] or UNLIMITED)");
    if !is_valid_timespec(text) {
        return Err(bad());
    }
    let seconds = match text.split_once('-') {
        // `-N` (only digits after the dash): sscanf reads a negative day count.
        Some(("", days)) => -86400 * number(days)?,
        Some((days, rest)) => {
            let mut hms = rest.split(':').filter(|s| !s.is_empty()).map(number);
            let h = hms.next().transpose()?.unwrap_or(0);
            let m = hms.next().transpose()?.unwrap_or(0);
            let s = hms.next().transpose()?.unwrap_or(0);
            86400 * number(days)? + 3600 * h + 60 * m + s
        }
        None => {
            let parts: Vec<i64> = text.split(':').map(number).collect::<Result<_, _>>()?;
            match parts[..] {
                [h, m, s] => 3600 * h + 60 * m + s,
                [m, s] => 60 * m + s,
                [m] => 60 * m,
                _ => return Err(bad()),
            }
        }
    };
    if seconds < 0 {
        return Err(format!("{text:?} is a negative time"));
    }
    if seconds > i64::from(i32::MAX) {
        return Err(format!("{text:?} is too long for Slurm (more than {} seconds)", i32::MAX));
    }
    // ROUNDUP(secs, 60): whole minutes, rounding up.
    Ok(TimeLimit::Minutes(((seconds + 59) / 60) as u32))
}

/// A job record's time limit (sacct's `Timelimit`, a canonical record's `time_limit`) as Slurm
/// keeps it: minutes, [`INFINITE`] when unlimited; `None` when the record does not say (empty,
/// `Partition_Limit`, `Unknown`).
///
/// # Errors
/// Text that is none of these and not a Slurm time.
///
/// # Example
/// ```
/// use fairshare_engine::config::time::{INFINITE, job_time_limit};
/// assert_eq!(job_time_limit("1-00:00:00"), Ok(Some(1440)));
/// assert_eq!(job_time_limit("UNLIMITED"), Ok(Some(INFINITE)));
/// assert_eq!(job_time_limit("Partition_Limit"), Ok(None));
/// ```
pub fn job_time_limit(text: &str) -> Result<Option<u32>, String> {
    let t = trim_field(text);
    if t.is_empty() || ["Partition_Limit", "Unknown", "None"].iter().any(|u| t.eq_ignore_ascii_case(u)) {
        return Ok(None);
    }
    parse_time(t).map(|l| Some(l.slurm_minutes()))
}

/// Parses a duration as `secs2time_str()` prints one (`scontrol show config`'s `Priority*` times):
/// `[days-]HH:MM:SS` exactly, in seconds, or `UNLIMITED` ([`INFINITE`]).
///
/// Unlike [`parse_time`], nothing is rounded and the whole `uint32_t` range is read: slurmctld
/// keeps an `UNLIMITED` `PriorityMaxAge` as 4294967236 seconds, which scontrol prints as
/// `49710-06:27:16`.
///
/// # Errors
/// Any other shape, hours from 24, minutes or seconds from 60, or more seconds than a `uint32_t`.
///
/// # Example
/// ```
/// use fairshare_engine::config::time::parse_secs2time_str;
/// assert_eq!(parse_secs2time_str("7-00:00:00"), Ok(604_800));
/// assert_eq!(parse_secs2time_str("00:05:00"), Ok(300));
/// assert!(parse_secs2time_str("7-0").is_err());
/// ```
pub fn parse_secs2time_str(text: &str) -> Result<u32, String> {
    if text == "UNLIMITED" {
        return Ok(INFINITE);
    }
    let bad = || format!("{text:?} is not a duration as scontrol prints one ([days-]HH:MM:SS or UNLIMITED)");
    let (days, hms) = match text.split_once('-') {
        Some((days, hms)) => (Some(days), hms),
        None => (None, text),
    };
    let field = |digits: &str, below: u64| {
        let n = (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse::<u64>().ok())
            .flatten()
            .ok_or_else(bad)?;
        if n < below { Ok(n) } else { Err(bad()) }
    };
    let [h, m, s] = hms.split(':').collect::<Vec<_>>()[..] else { return Err(bad()) };
    let days = days.map_or(Ok(0), |d| field(d, u64::from(u32::MAX)))?;
    let seconds = days * 86_400 + field(h, 24)? * 3_600 + field(m, 60)? * 60 + field(s, 60)?;
    u32::try_from(seconds).map_err(|_| format!("{text:?} is more seconds than Slurm keeps ({})", u32::MAX))
}

/// The seconds of a count with a unit (`30s`, `15m`, `6h`, `14d`, `2w`); `None` for anything else.
fn short_duration(text: &str) -> Option<Result<i64, String>> {
    let t = text.trim();
    let unit = t.chars().last().filter(|c| "smhdw".contains(*c))?;
    let digits = &t[..t.len() - 1];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3_600,
        'd' => 86_400,
        _ => 604_800,
    };
    Some(digits.parse::<i64>().ok().and_then(|n| n.checked_mul(scale)).ok_or_else(|| format!("{t:?} is too long")))
}

/// A duration as every command-line flag takes it, in seconds: a count with a unit (`30s`, `15m`,
/// `6h`, `14d`, `2w`) or Slurm's time syntax as [`parse_time`] reads it (`90` is minutes,
/// `1:30:00`, `14-0`, `7-00:00:00`; seconds rounded up to minutes, as Slurm does).
///
/// # Errors
/// Neither form, `UNLIMITED`, or zero.
///
/// # Example
/// ```
/// use fairshare_engine::config::time::parse_duration;
/// assert_eq!(parse_duration("1h"), Ok(3600));
/// assert_eq!(parse_duration("90"), Ok(5400));
/// assert_eq!(parse_duration("14-0"), Ok(14 * 86400));
/// assert!(parse_duration("0").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let seconds = match short_duration(text) {
        Some(s) => s?,
        None => match parse_time(text.trim()) {
            Ok(TimeLimit::Minutes(m)) => i64::from(m) * 60,
            Ok(TimeLimit::Unlimited) => return Err(format!("{text:?} is not a finite duration")),
            Err(_) => {
                return Err(format!(
                    "{text:?} is not a duration: a count with a unit (30s, 15m, 6h, 14d, 2w) or a Slurm time \
                     (90 minutes, 1:30:00, 14-0, 7-00:00:00)"
                ));
            }
        },
    };
    if seconds == 0 { Err(format!("{text:?} is not a positive duration")) } else { Ok(seconds) }
}

/// `text` in Slurm's time syntax, for the flags that stand for a slurm.conf time knob and are read
/// by the knob's own parser: a count with a unit (`14d`) becomes `0:0:SECONDS`; anything else is
/// passed on as given.
pub fn as_slurm_time(text: &str) -> std::borrow::Cow<'_, str> {
    match short_duration(text) {
        Some(Ok(seconds)) => format!("0:0:{seconds}").into(),
        _ => text.into(),
    }
}

/// `_is_valid_timespec()`: digits, at most one `-` (before any `:`), at most two `:`, and enough digit
/// runs for the separators.
fn is_valid_timespec(text: &str) -> bool {
    let (mut runs, mut dashes, mut colons, mut in_digits) = (0, 0, 0, false);
    for c in text.chars() {
        match c {
            '0'..='9' => {
                runs += usize::from(!in_digits);
                in_digits = true;
            }
            '-' if colons == 0 => {
                dashes += 1;
                in_digits = false;
            }
            ':' => {
                colons += 1;
                in_digits = false;
            }
            _ => return false,
        }
    }
    let min_runs = match (dashes, colons) {
        (0, 1) => 2,
        (0, 2) | (1, 1) => 3,
        (1, 2) => 4,
        (0 | 1, 0) => 1,
        _ => return false,
    };
    runs >= min_runs
}

/// One run of digits, as `%d` reads it, bounded so the sums above cannot overflow.
fn number(digits: &str) -> Result<i64, String> {
    match digits.parse::<i64>() {
        Ok(n) if n <= i64::from(i32::MAX) => Ok(n),
        _ => Err(format!("{digits:?} is out of range for a Slurm time field")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_both_spellings() {
        for (text, seconds) in [("30s", 30), ("15m", 900), ("6h", 21_600), ("14d", 1_209_600), ("2w", 1_209_600)] {
            assert_eq!(parse_duration(text), Ok(seconds), "{text}");
        }
        for (text, seconds) in [("90", 5_400), ("1:30:00", 5_400), ("14-0", 1_209_600), ("7-00:00:00", 604_800)] {
            assert_eq!(parse_duration(text), Ok(seconds), "{text}");
        }
        assert!(parse_duration("0").unwrap_err().contains("not a positive duration"));
        assert!(parse_duration("UNLIMITED").unwrap_err().contains("not a finite duration"));
        assert!(parse_duration("3x").unwrap_err().contains("is not a duration: a count with a unit"));
        assert_eq!(as_slurm_time("14d"), "0:0:1209600");
        assert_eq!(parse_time(&as_slurm_time("14d")), parse_time("14-0"));
        assert_eq!(as_slurm_time("7-0"), "7-0");
    }

    fn mins(text: &str) -> u32 {
        parse_time(text).unwrap().slurm_minutes()
    }

    #[test]
    fn every_form_of_time_str2mins() {
        assert_eq!(mins("90"), 90);
        assert_eq!(mins("007"), 7);
        assert_eq!(mins("1:30"), 2); // min:sec, 90 s rounded up
        assert_eq!(mins("2:00"), 2);
        assert_eq!(mins("1:30:00"), 90);
        assert_eq!(mins("1:30:01"), 91);
        assert_eq!(mins("7-0"), 7 * 1440);
        assert_eq!(mins("14-0"), 14 * 1440);
        assert_eq!(mins("2-"), 2 * 1440);
        assert_eq!(mins("1-12"), 1440 + 720);
        assert_eq!(mins("1-2:30"), 1440 + 150);
        assert_eq!(mins("1-2:30:30"), 1440 + 151);
        assert_eq!(mins("-0"), 0);
        for unlimited in ["UNLIMITED", "infinite", "Unlimited", "-1"] {
            assert_eq!(parse_time(unlimited), Ok(TimeLimit::Unlimited));
        }
    }

    #[test]
    fn plain_hms_reads_as_the_general_parser_reads_it() {
        let parts = ["", "0", "7", "00", "59", "60", "99", "123456789", "1234567890", "x"];
        let mut fast = 0;
        for d in parts {
            for h in parts {
                for m in parts {
                    for s in parts {
                        for text in [format!("{d}-{h}:{m}:{s}"), format!("{h}:{m}:{s}"), format!("{d}-{h}-{m}:{s}")] {
                            fast += usize::from(plain_hms(text.as_bytes()).is_some());
                            assert_eq!(parse_time(&text), parse_general(&text), "{text}");
                        }
                    }
                }
            }
        }
        // The fast path read most of the well-formed ones.
        assert!(fast > 4000, "{fast}");
    }

    #[test]
    fn malformed_times_are_errors() {
        for bad in ["", "abc", "1:", ":30", "1::2", "1-2:", "1-2-3", "1:2:3:4", "1:2-3", "5 min", "+5", "1.5", "-5"] {
            assert!(parse_time(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(parse_time("99999999-0").is_err());
    }

    #[test]
    fn knob_seconds_wrap_like_slurmctld() {
        assert_eq!(TimeLimit::Minutes(7 * 1440).slurm_knob_seconds(), 604_800);
        assert_eq!(TimeLimit::Unlimited.slurm_knob_seconds(), 4_294_967_236);
        assert_eq!(TimeLimit::Unlimited.slurm_minutes(), INFINITE);
    }

    #[test]
    fn secs2time_str_output_reads_back_exactly() {
        for (text, seconds) in [
            ("14-00:00:00", 14 * 86_400),
            ("00:05:00", 300),
            ("00:00:59", 59),
            ("3-12:00:00", 302_400),
            ("0-00:00:00", 0),
            ("49710-06:27:16", 4_294_967_236),
            ("UNLIMITED", INFINITE),
        ] {
            assert_eq!(parse_secs2time_str(text), Ok(seconds), "{text}");
        }
        for bad in ["", "7-0", "5", "1:30", "24:00:00", "00:60:00", "1-2:3:4:5", "-1", "unlimited", "1-aa:00:00"] {
            assert!(parse_secs2time_str(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(parse_secs2time_str("49710-06:28:16").unwrap_err().contains("more seconds than Slurm keeps"));
        assert!(parse_secs2time_str("INVALID").unwrap_err().contains("is not a duration as scontrol prints one"));
    }

    #[test]
    fn display_matches_mins2time_str() {
        assert_eq!(TimeLimit::Minutes(90).to_string(), "01:30:00");
        assert_eq!(TimeLimit::Minutes(3 * 1440 + 61).to_string(), "3-01:01:00");
        assert_eq!(TimeLimit::Unlimited.to_string(), "UNLIMITED");
    }
}
