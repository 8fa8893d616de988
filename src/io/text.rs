//! Line-oriented helpers shared by the text readers.

use std::borrow::Cow;
use std::path::Path;

use crate::error::Result;

/// Reads a whole line-oriented text input (a file, `-` or a pipe), naming it in the error.
pub(crate) fn read_to_string(path: &Path) -> Result<String> {
    super::source::read_text(path, Some(super::source::MAX_LINE_BYTES))
}

/// `t` without a zero fraction (`64.0`, `64.`): pandas writes an integer column that has a missing
/// value as floats, so a CSV edited in a dataframe holds integers that way. Anything else is
/// returned as is, for the caller's integer parse to accept or reject.
pub(crate) fn strip_zero_fraction(t: &str) -> &str {
    match t.split_once('.') {
        Some((whole, fraction)) if !whole.is_empty() && fraction.bytes().all(|b| b == b'0') => whole,
        _ => t,
    }
}

/// Splits one CSV line into `out`, borrowing unless a field has escaped quotes (`""`).
///
/// # Errors
/// An unterminated quoted field.
pub(crate) fn split_fields<'a>(line: &'a str, out: &mut Vec<Cow<'a, str>>) -> Result<(), &'static str> {
    out.clear();
    let bytes = line.as_bytes();
    let mut i = 0;
    loop {
        if bytes.get(i) == Some(&b'"') {
            let start = i + 1;
            let mut j = start;
            let mut escaped = false;
            loop {
                match bytes.get(j) {
                    None => return Err("unterminated quoted field"),
                    Some(b'"') if bytes.get(j + 1) == Some(&b'"') => {
                        escaped = true;
                        j += 2;
                    }
                    Some(b'"') => break,
                    Some(_) => j += 1,
                }
            }
            let raw = &line[start..j];
            out.push(if escaped { Cow::Owned(raw.replace("\"\"", "\"")) } else { Cow::Borrowed(raw) });
            i = j + 1;
            match bytes.get(i) {
                None => return Ok(()),
                Some(b',') => i += 1,
                Some(_) => return Err("text after a closing quote"),
            }
        } else {
            let end = line[i..].find(',').map_or(line.len(), |k| i + k);
            out.push(Cow::Borrowed(&line[i..end]));
            if end == line.len() {
                return Ok(());
            }
            i = end + 1;
        }
    }
}

/// Reuses an emptied vector's allocation under another lifetime (the in-place `collect` of an
/// empty iterator keeps the buffer), so splitting a line allocates nothing.
pub(crate) fn recycle<'b>(mut v: Vec<Cow<'_, str>>) -> Vec<Cow<'b, str>> {
    v.clear();
    v.into_iter().map(|_| Cow::Borrowed("")).collect()
}

/// [`split_fields`] into a new vector, for readers of small files.
///
/// # Errors
/// As [`split_fields`].
pub(crate) fn split_csv(line: &str) -> Result<Vec<Cow<'_, str>>, &'static str> {
    let mut out = Vec::new();
    split_fields(line, &mut out)?;
    Ok(out)
}

/// Largest share count of a Slurm association: `shares_raw` is a uint32 and `u32::MAX` is
/// reserved (`INFINITE`), as in the sacctmgr dump reader.
pub(crate) const MAX_SHARES: u64 = u32::MAX as u64 - 1;

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
            _ => Err(format!("shares {t} is too large: expected a whole number in 0..={MAX_SHARES} or `parent`")),
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
    fn integers_written_as_floats_read_as_integers() {
        for (text, stripped) in [("64.0", "64"), ("64.", "64"), ("64.000", "64"), ("64", "64"), ("64.5", "64.5")] {
            assert_eq!(strip_zero_fraction(text), stripped);
        }
        for text in [".0", "1.0.0", "1e3", ""] {
            assert_eq!(strip_zero_fraction(text), text, "{text:?} is left for the parse to reject");
        }
        assert_eq!(parse_shares("10.0"), Ok(crate::tree::Shares::Value(10)));
        assert!(parse_shares("10.5").is_err());
    }

    #[test]
    fn fields_borrow_and_unquote() {
        let mut out = Vec::new();
        split_fields(r#"1,"a,b",,"x""y",z"#, &mut out).unwrap();
        assert_eq!(out, ["1", "a,b", "", "x\"y", "z"]);
        assert!(matches!(out[1], Cow::Borrowed(_)));
        assert!(split_fields(r#"1,"open"#, &mut out).is_err());
        assert!(split_fields(r#""a"b,1"#, &mut out).is_err());
        assert_eq!(split_csv(r#"1,"a,b",,"x""y""#).unwrap(), vec!["1", "a,b", "", "x\"y"]);
        assert!(split_csv(r#"1,"open"#).is_err());
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
