//! The fields of a text record: a CSV line split into borrowed fields, and integers written as
//! floats.

use std::borrow::Cow;

use crate::error::Result;

/// `t` without a zero fraction (`64.0`, `64.`): pandas writes an integer column that has a missing
/// value as floats, so a CSV edited in a dataframe holds integers that way. Anything else is
/// returned as is, for the caller's integer parse to accept or reject.
#[inline]
pub fn strip_zero_fraction(t: &str) -> &str {
    match t.split_once('.') {
        Some((whole, fraction)) if !whole.is_empty() && fraction.bytes().all(|b| b == b'0') => whole,
        _ => t,
    }
}

/// `field` without leading and trailing whitespace, as `str::trim` gives it. A field that starts
/// and ends with visible ASCII, as nearly every one does, is returned at once: `trim` decodes a
/// character at each end to ask Unicode, which was 5% of charging a `sacct -P` file.
#[inline]
pub fn trim_field(field: &str) -> &str {
    let visible = |b: Option<&u8>| b.is_some_and(|&b| b.is_ascii() && !char::from(b).is_whitespace());
    let b = field.as_bytes();
    if visible(b.first()) && visible(b.last()) { field } else { field.trim() }
}

/// Splits one CSV line into `out`, borrowing unless a field has escaped quotes (`""`).
///
/// # Errors
/// An unterminated quoted field.
#[inline]
pub fn split_fields<'a>(line: &'a str, out: &mut Vec<Cow<'a, str>>) -> Result<(), &'static str> {
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
#[inline]
pub fn recycle<'b>(mut v: Vec<Cow<'_, str>>) -> Vec<Cow<'b, str>> {
    v.clear();
    v.into_iter().map(|_| Cow::Borrowed("")).collect()
}

/// [`split_fields`] into a new vector, for readers of small files.
///
/// # Errors
/// As [`split_fields`].
#[inline]
pub fn split_csv(line: &str) -> Result<Vec<Cow<'_, str>>, &'static str> {
    let mut out = Vec::new();
    split_fields(line, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_trim_as_str_trim() {
        let ends = ["", " ", "\t", "\u{b}", "\u{a0}", "\u{3000}", "\r\n", "x", "é", "\u{a0}x"];
        for a in ends {
            for b in ends {
                for middle in ["", "a", " a b ", "\u{85}"] {
                    let f = format!("{a}{middle}{b}");
                    assert_eq!(trim_field(&f), f.trim(), "{f:?}");
                }
            }
        }
    }

    #[test]
    fn integers_written_as_floats_read_as_integers() {
        for (text, stripped) in [("64.0", "64"), ("64.", "64"), ("64.000", "64"), ("64", "64"), ("64.5", "64.5")] {
            assert_eq!(strip_zero_fraction(text), stripped);
        }
        for text in [".0", "1.0.0", "1e3", ""] {
            assert_eq!(strip_zero_fraction(text), text, "{text:?} is left for the parse to reject");
        }
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
}
