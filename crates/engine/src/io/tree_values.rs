//! The values of a tree record as text holds them, read alike by every tree reader (the text
//! formats and the Parquet reader's text columns): share counts, which may say `parent`, and usage.

use fairshare_base::error::Result;
use fairshare_base::read::fields::strip_zero_fraction;

pub(crate) use crate::tree::MAX_SHARES;

/// Parses a share count in 0..=[`MAX_SHARES`], or `parent`.
pub(crate) fn parse_shares(text: &str) -> Result<crate::tree::Shares, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("parent") {
        return Ok(crate::tree::Shares::Parent);
    }
    let whole = strip_zero_fraction(t);
    if !whole.is_empty() && whole.bytes().all(|b| b.is_ascii_digit()) {
        return match whole.parse::<u64>() {
            Ok(v) if v <= MAX_SHARES => Ok(crate::tree::Shares::Value(v)),
            _ => Err(crate::tree::shares_too_large(t)),
        };
    }
    Err(format!("shares {t:?} is not a non-negative integer or `parent`"))
}

/// Parses a usage value: a finite, non-negative number.
pub(crate) fn parse_usage(text: &str) -> Result<f64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(0.0);
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("usage {t:?} is not a finite non-negative number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_written_as_floats_read_as_integers() {
        assert_eq!(parse_shares("10.0"), Ok(crate::tree::Shares::Value(10)));
        assert!(parse_shares("10.5").is_err());
    }

    #[test]
    fn shares_and_usage() {
        assert_eq!(parse_shares(" parent "), Ok(crate::tree::Shares::Parent));
        assert_eq!(parse_shares("42"), Ok(crate::tree::Shares::Value(42)));
        assert_eq!(parse_shares("4294967294"), Ok(crate::tree::Shares::Value(4_294_967_294)));
        assert!(parse_shares("4294967295").unwrap_err().contains("too large"));
        assert!(parse_shares("99999999999999999999").unwrap_err().contains("too large"));
        assert!(parse_shares("-1").is_err());
        assert!(parse_usage("NaN").is_err());
        assert!(parse_usage("-3").is_err());
        assert_eq!(parse_usage("2.5"), Ok(2.5));
    }
}
