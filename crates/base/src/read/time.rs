//! Timestamps: the range of times this crate accepts, and the text that names a time (epoch
//! seconds or a UTC date and time, on the command line, in a site file or in a record's field).

use super::fields::{strip_zero_fraction, trim_field};

/// The times this crate accepts, in epoch seconds: 1970-01-01T00:00:00 to 9999-12-31T23:59:59 UTC.
/// Every time parsed from text (options, CSV and sacct fields) and every job record's start and end
/// is checked against it, so time arithmetic cannot overflow and no span between two times is absurd.
pub const TIME_RANGE: std::ops::RangeInclusive<i64> = 0..=253_402_300_799;

/// `t` when it lies in [`TIME_RANGE`].
///
/// # Errors
/// A time outside the range, with the range.
#[inline]
pub fn check_time(t: i64) -> Result<i64, String> {
    if TIME_RANGE.contains(&t) {
        Ok(t)
    } else {
        Err(format!(
            "time {t} is out of range: times lie between 1970-01-01T00:00:00 and 9999-12-31T23:59:59 UTC \
             (epoch seconds {} to {})",
            TIME_RANGE.start(),
            TIME_RANGE.end()
        ))
    }
}

/// Parses a timestamp: epoch seconds, or `YYYY-MM-DDTHH:MM:SS` (also with a space) read as UTC,
/// where a date alone is its midnight, seconds may be left out, and a trailing `Z` or offset
/// (`+01:00`, `-0500`) says which zone the time is in.
///
/// # Errors
/// Anything else, a date that does not exist, or a time outside [`TIME_RANGE`].
///
/// # Example
/// ```
/// use fairshare_base::read::time::parse_timestamp;
/// assert_eq!(parse_timestamp("1767830400"), Ok(1767830400));
/// assert_eq!(parse_timestamp("2026-01-08T00:00:00"), Ok(1767830400));
/// assert_eq!(parse_timestamp("2026-01-08"), Ok(1767830400));
/// assert_eq!(parse_timestamp("2026-01-08T00:00Z"), Ok(1767830400));
/// assert_eq!(parse_timestamp("2026-01-08T01:00:00+01:00"), Ok(1767830400));
/// assert!(parse_timestamp("9223372036854775807").is_err());
/// ```
#[inline]
pub fn parse_timestamp(text: &str) -> Result<i64, String> {
    parse_any_timestamp(text).and_then(check_time)
}

/// A time given on the command line or in a site file: `now`, or anything [`parse_timestamp`]
/// reads (epoch seconds, `2026-01-08`, `2026-01-08T00:00`, `2026-01-08T00:00:00`, with `Z` or an
/// offset such as `+01:00`).
///
/// # Errors
/// As [`parse_timestamp`].
pub fn parse_time_arg(text: &str) -> Result<i64, String> {
    if text.trim().eq_ignore_ascii_case("now") {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        return check_time(now as i64);
    }
    parse_timestamp(text)
}

/// Reads a time field of a record: empty, `Unknown` and `None` mean unset.
///
/// # Errors
/// As [`parse_timestamp`].
#[inline]
pub fn parse_time_field(text: &str) -> Result<Option<i64>, String> {
    match trim_field(text) {
        "" | "Unknown" | "None" => Ok(None),
        t => parse_timestamp(t).map(Some),
    }
}

/// Splits a trailing `Z`, `±HH:MM` or `±HHMM` off a date-time, as seconds east of UTC.
fn utc_offset(t: &str) -> Option<(&str, i64)> {
    if let Some(rest) = t.strip_suffix(['Z', 'z']) {
        return Some((rest, 0));
    }
    // An offset only follows a time of day (`T..`), so a date's own dashes are never taken for one.
    let time_at = t.find(['T', ' '])?;
    let sign_at = t[time_at..].rfind(['+', '-'])? + time_at;
    let (rest, offset) = t.split_at(sign_at);
    let digits: String = offset[1..].chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m): (i64, i64) = (digits[..2].parse().ok()?, digits[2..].parse().ok()?);
    if h > 23 || m > 59 {
        return None;
    }
    let east = h * 3600 + m * 60;
    Some((rest, if offset.starts_with('-') { -east } else { east }))
}

/// [`parse_timestamp`] without the range check.
fn parse_any_timestamp(text: &str) -> Result<i64, String> {
    let t = trim_field(text);
    match plain_date_time(t.as_bytes()) {
        Some(v) => Ok(v),
        None => parse_general(t),
    }
}

/// The time of a valid `YYYY-MM-DDTHH:MM:SS` (or with a space), as [`parse_general`] reads it;
/// `None` for anything else. Every time field of `sacct -P` has this form: read here without
/// allocating or parsing each number as a string, which was a tenth of charging such a file.
fn plain_date_time(b: &[u8]) -> Option<i64> {
    let form = b.len() == 19
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T' || c == b' ',
            13 | 16 => c == b':',
            _ => c.is_ascii_digit(),
        });
    if !form {
        return None;
    }
    let num = |at: usize, len: usize| b[at..at + len].iter().fold(0, |n, &c| n * 10 + i64::from(c - b'0'));
    let (y, mo, d, h, mi, s) = (num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2));
    valid_date_time(y, mo, d, h, mi, s).then(|| days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s)
}

/// Whether a date and time exist (a leap second allowed).
fn valid_date_time(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64) -> bool {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in_month = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    (1..=12).contains(&mo) && d >= 1 && d <= days_in_month[(mo - 1) as usize] && h <= 23 && mi <= 59 && s <= 60
}

/// [`parse_any_timestamp`] of any form, `t` trimmed.
fn parse_general(t: &str) -> Result<i64, String> {
    if let Ok(v) = strip_zero_fraction(t).parse::<i64>() {
        return Ok(v);
    }
    let bad = || {
        format!(
            "time {t:?} is neither epoch seconds nor a date and time (YYYY-MM-DD[THH:MM[:SS]], optionally \
             with Z or an offset such as +01:00)"
        )
    };
    let (t, east) = utc_offset(t).unwrap_or((t, 0));
    // A date alone is its midnight, a time without seconds is on the minute.
    let full = match t.len() {
        10 => format!("{t}T00:00:00"),
        16 => format!("{t}:00"),
        _ => t.to_string(),
    };
    let t = full.as_str();
    let b = t.as_bytes();
    // Byte positions below are only character positions in ASCII text.
    if !t.is_ascii()
        || b.len() != 19
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| t[r].parse::<i64>().map_err(|_| bad());
    let (y, mo, d, h, mi, s) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    if !valid_date_time(y, mo, d, h, mi, s) {
        return Err(bad());
    }
    Ok(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - east)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00"), Ok(0));
        assert_eq!(parse_timestamp("2000-02-29 12:00:00"), Ok(951_825_600));
        assert!(parse_timestamp("2001-02-29T00:00:00").is_err());
        assert!(parse_timestamp("Unknown").is_err());
    }

    #[test]
    fn plain_date_times_read_as_the_general_parser_reads_them() {
        let mut checked = 0;
        for y in ["1970", "1999", "2000", "2024", "2100", "9999", "0000"] {
            for mo in ["00", "01", "02", "04", "12", "13"] {
                for d in ["00", "01", "28", "29", "30", "31", "32"] {
                    for (h, mi, s) in [("00", "00", "00"), ("23", "59", "60"), ("24", "00", "00"), ("12", "60", "61")] {
                        for sep in ['T', ' '] {
                            let t = format!("{y}-{mo}-{d}{sep}{h}:{mi}:{s}");
                            let general = parse_general(&t).ok();
                            assert_eq!(plain_date_time(t.as_bytes()), general, "{t}");
                            checked += usize::from(general.is_some());
                        }
                    }
                }
            }
        }
        assert!(checked > 400, "much of the grid exists: {checked}");
        // Every byte of the form replaced by bytes near its kind (digits, separators, their
        // neighbours in the byte table, bytes with the high bit set).
        let near = b"0123456789/:;-.T tS+\x00\x7f\x80\xb0\xba\xff";
        let mut state = 3u64;
        for _ in 0..200_000 {
            let mut t = *b"2026-01-08T12:34:56";
            for _ in 0..1 + state % 3 {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let at = (state >> 33) as usize % t.len();
                t[at] = near[(state >> 45) as usize % near.len()];
            }
            // The general parser also reads `+1` as a number: the plain one only digits.
            let digits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18].iter().all(|&i| t[i].is_ascii_digit());
            let general = std::str::from_utf8(&t).ok().and_then(|t| parse_general(t).ok());
            assert_eq!(plain_date_time(&t), general.filter(|_| digits), "{t:?}");
        }
        for other in [
            "2026-01-08T00:00",
            "2026-01-08T00:00:0Z",
            "2026-01-08T00+01:00",
            "2026-01-08x00:00:00",
            "١٢٣٤-01-08T00:00:00",
        ] {
            assert_eq!(plain_date_time(other.as_bytes()), None, "{other}");
        }
    }

    #[test]
    fn a_time_field_may_be_unset() {
        for unset in ["", " ", "Unknown", "None"] {
            assert_eq!(parse_time_field(unset), Ok(None), "{unset:?}");
        }
        assert_eq!(parse_time_field(" 2026-01-08 "), Ok(Some(1_767_830_400)));
        assert!(parse_time_field("unknown").unwrap_err().contains("is neither epoch seconds nor"));
    }

    #[test]
    fn times_outside_the_range_are_refused() {
        assert_eq!(parse_timestamp("9999-12-31T23:59:59"), Ok(*TIME_RANGE.end()));
        assert_eq!(parse_timestamp("253402300799"), Ok(253_402_300_799));
        for bad in ["253402300800", "-1", "1969-12-31T23:59:59", "9223372036854775807", "100000000000000"] {
            let e = parse_timestamp(bad).unwrap_err();
            assert!(e.contains("is out of range") && e.contains("(epoch seconds 0 to 253402300799)"), "{bad}: {e}");
        }
    }
}
