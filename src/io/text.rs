//! Line-oriented helpers shared by the text readers.

use std::path::Path;

use crate::error::{Error, Result};

/// Reads a whole text file, naming it in the error.
pub(crate) fn read_to_string(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count() as u64;
        Error::input(path, line, "not valid UTF-8 text")
    })
}

/// Splits one CSV line on commas, honouring double-quoted fields (`""` is a quote inside them).
pub(crate) fn split_csv(line: &str) -> Result<Vec<String>, &'static str> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => out.push(std::mem::take(&mut field)),
            (false, c) => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated quoted field");
    }
    out.push(field);
    Ok(out)
}

/// Parses a non-negative share count, or `parent`.
pub(crate) fn parse_shares(text: &str) -> Result<crate::tree::Shares, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("parent") {
        return Ok(crate::tree::Shares::Parent);
    }
    t.parse::<u64>()
        .map(crate::tree::Shares::Value)
        .map_err(|_| format!("shares {t:?} is not a non-negative integer or `parent`"))
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
    fn csv_fields_with_quotes() {
        assert_eq!(split_csv(r#"1,"a,b",,"x""y""#).unwrap(), vec!["1", "a,b", "", "x\"y"]);
        assert!(split_csv(r#"1,"open"#).is_err());
    }

    #[test]
    fn shares_and_usage() {
        assert_eq!(parse_shares(" parent "), Ok(crate::tree::Shares::Parent));
        assert_eq!(parse_shares("42"), Ok(crate::tree::Shares::Value(42)));
        assert!(parse_shares("-1").is_err());
        assert!(parse_usage("NaN").is_err());
        assert!(parse_usage("-3").is_err());
        assert_eq!(parse_usage("2.5"), Ok(2.5));
    }
}
