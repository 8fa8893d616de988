//! `slurm.conf` syntax, as `src/common/parse_config.c` and `parse_value.c` read it: logical lines
//! (comments, continuations, escapes), `Include` directives, `Key=Value` pairs, and the typed values
//! (booleans, unsigned integers) of the keys.

/// `s_p_handle_boolean()`.
pub(super) fn parse_bool(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "yes" | "up" | "true" | "1" => Ok(true),
        "no" | "down" | "false" | "0" => Ok(false),
        _ => Err("expected YES or NO".into()),
    }
}

/// `s_p_handle_uint16/32/64()`: `strtoul(text, 0)` (so `0x1F` is hex and `010` octal), an optional
/// `k` suffix (×1024) where `k_suffix`, `UNLIMITED`/`INFINITE` as `max` where `unlimited`, at most `max`.
pub(super) fn parse_unsigned(text: &str, max: u64, k_suffix: bool, unlimited: bool) -> Result<u64, String> {
    let not_number = || {
        if unlimited && (text.eq_ignore_ascii_case("UNLIMITED") || text.eq_ignore_ascii_case("INFINITE")) {
            Ok(max)
        } else {
            Err("not a valid number".to_string())
        }
    };
    let s = text.trim_start_matches(is_c_space);
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    // Bytes, not `str` slices: the text may hold multi-byte characters anywhere.
    let hex = s.len() > 2 && s.as_bytes()[..2].eq_ignore_ascii_case(b"0x") && s.as_bytes()[2].is_ascii_hexdigit();
    let (radix, body) = match (hex, s.starts_with('0')) {
        (true, _) => (16, &s[2..]),
        (false, true) => (8, s),
        (false, false) => (10, s),
    };
    let digits = body.chars().take_while(|c| c.is_digit(radix)).count();
    if digits == 0 {
        return if text.is_empty() { Ok(0) } else { not_number() };
    }
    let mut value = u64::from_str_radix(&body[..digits], radix).map_err(|_| "out of range".to_string())?;
    let mut rest = &body[digits..];
    if k_suffix && rest.starts_with(['k', 'K']) {
        value = value.checked_mul(1024).ok_or("out of range")?;
        rest = &rest[1..];
    }
    if !rest.is_empty() {
        return not_number();
    }
    if text.starts_with('-') {
        return Err("is less than zero".into());
    }
    // strtoul negates a "-" that follows white space.
    let value = if negative { value.wrapping_neg() } else { value };
    if value > max { Err(format!("is greater than {max}")) } else { Ok(value) }
}

/// C's `isspace()`.
pub(super) fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// The logical lines of a text as `_get_next_line()` makes them, each with the number of its first
/// physical line: an unescaped `#` ends the line, an odd run of `\` at the end joins the next line
/// (white space after it is allowed), then `\x` becomes `x`.
pub(super) fn logical_lines(text: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let (mut current, mut start, mut open) = (String::new(), 0u64, false);
    for (i, physical) in text.split_inclusive('\n').enumerate() {
        if !open {
            start = i as u64 + 1;
        }
        let content = strip_comment(physical);
        match continued(content) {
            Some(kept) => {
                current.push_str(kept);
                open = true;
            }
            None => {
                current.push_str(content);
                out.push((start, strip_escapes(&current)));
                current.clear();
                open = false;
            }
        }
    }
    if open {
        out.push((start, strip_escapes(&current)));
    }
    out
}

/// `_strip_comments()`: cut at the first `#` preceded by an even number of backslashes.
fn strip_comment(line: &str) -> &str {
    let mut backslashes = 0;
    for (i, b) in line.bytes().enumerate() {
        match b {
            b'#' if backslashes % 2 == 0 => return &line[..i],
            b'\\' => backslashes += 1,
            _ => backslashes = 0,
        }
    }
    line
}

/// `_strip_continuation()`: the text before the last backslash when the line ends (ignoring white
/// space after the backslashes) in an odd number of them.
fn continued(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    let (mut end, mut backslashes) = (b.len(), 0);
    while end > 0 {
        match b[end - 1] {
            b'\\' => backslashes += 1,
            c if backslashes == 0 && is_c_space(c as char) => {}
            _ => break,
        }
        end -= 1;
    }
    (backslashes % 2 == 1).then(|| &line[..end + backslashes - 1])
}

/// `_strip_escapes()`: every backslash makes the next character literal.
fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

/// `Include FILE` at the very start of a line: `Some(Ok(FILE))`, or `Some(Err(..))` when malformed.
pub(super) fn include_directive(line: &str) -> Option<Result<&str, String>> {
    let rest = line.get(..7).filter(|w| w.eq_ignore_ascii_case("include")).map(|_| &line[7..])?;
    if !rest.starts_with(is_c_space) {
        return None;
    }
    let rest = rest.trim_start_matches(is_c_space);
    let end = rest.find(is_c_space).unwrap_or(rest.len());
    let (file, after) = rest.split_at(end);
    Some(match (file.is_empty(), after.trim_matches(is_c_space)) {
        (true, _) => Err("Include without a file name".into()),
        (false, "") => Ok(file),
        (false, extra) => Err(format!("unexpected {extra:?} after Include {file}")),
    })
}

/// The first `Key=Value` pair of `text`, as slurm.conf's key-value regular expression
/// `^\s*([[:alnum:]_.]+)\s*([-*+/]?)=\s*(("([^"]*)")|([^\s]+))(\s|$)` finds it: the key, the value
/// (without its quotes) and the text after the value. The optional operator before `=` is ignored.
pub(super) fn next_pair(text: &str) -> Option<(&str, &str, &str)> {
    let s = text.trim_start_matches(is_c_space);
    let key_len = s.bytes().take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.')).count();
    if key_len == 0 {
        return None;
    }
    let (key, after_key) = s.split_at(key_len);
    let t = after_key.trim_start_matches(is_c_space);
    let t = t.strip_prefix(['-', '*', '+', '/']).filter(|t| t.starts_with('=')).unwrap_or(t);
    let t = t.strip_prefix('=')?.trim_start_matches(is_c_space);
    if let Some(inner) = t.strip_prefix('"')
        && let Some(close) = inner.find('"')
        && inner[close + 1..].chars().next().is_none_or(is_c_space)
    {
        return Some((key, &inner[..close], &inner[close + 1..]));
    }
    // `Key=` with nothing after it is an empty value (an empty PriorityFlags keeps the defaults);
    // keys that need a value reject it when they parse it.
    let len = t.find(is_c_space).unwrap_or(t.len());
    Some((key, &t[..len], &t[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_values_read_like_strtoul() {
        assert_eq!(parse_unsigned("010", 0xffff, false, true), Ok(8));
        assert_eq!(parse_unsigned("0x1F", 0xffff, false, true), Ok(31));
        assert_eq!(parse_unsigned("+7", 0xffff, false, true), Ok(7));
        assert_eq!(parse_unsigned("2k", u32::MAX.into(), true, true), Ok(2048));
        assert_eq!(parse_unsigned("unlimited", u32::MAX.into(), true, true), Ok(u32::MAX.into()));
        assert_eq!(parse_unsigned("INFINITE", 0xffff, false, true), Ok(0xffff));
        for bad in ["08", "-1", "65536", "2k", "1.5", "0x", "abc", "unlimited"] {
            assert!(parse_unsigned(bad, 0xffff, false, bad != "unlimited").is_err(), "{bad:?} should be rejected");
        }
        assert!(parse_unsigned("99999999999999999999", u64::MAX, true, false).is_err());
        // Found by fuzzing (fuzz/run.sh, config_text): a multi-byte character where `0x` could be.
        assert!(parse_unsigned("4\u{77c}oresPerSocket=16", 0xffff, false, false).is_err());
        assert!(parse_unsigned("\u{77c}", 0xffff, false, false).is_err());
    }

    #[test]
    fn booleans() {
        for yes in ["YES", "up", "True", "1"] {
            assert_eq!(parse_bool(yes), Ok(true));
        }
        for no in ["no", "DOWN", "false", "0"] {
            assert_eq!(parse_bool(no), Ok(false));
        }
        assert!(parse_bool("y").is_err());
    }

    #[test]
    fn logical_lines_strip_comments_join_continuations_and_unescape() {
        let lines = logical_lines("a=1 \\# not a comment # comment\nb=\\\\\nc=2 \\\n  d=3\\  \n\ne=4\\");
        assert_eq!(
            lines,
            [(1, "a=1 # not a comment ".into()), (2, "b=\\\n".into()), (3, "c=2   d=3\n".into()), (6, "e=4".into())]
        );
        assert_eq!(logical_lines("x=1\r\n\n"), [(1, "x=1\r\n".to_string()), (2, "\n".to_string())]);
    }

    #[test]
    fn pairs_follow_the_key_value_regex() {
        assert_eq!(next_pair("  Key = \"a b\" rest"), Some(("Key", "a b", " rest")));
        assert_eq!(next_pair("Key=\"a\"b c"), Some(("Key", "\"a\"b", " c")));
        assert_eq!(next_pair("Key=\"\""), Some(("Key", "", "")));
        assert_eq!(next_pair("Key+=5"), Some(("Key", "5", "")));
        assert_eq!(next_pair("A.b_c=x=y\tz"), Some(("A.b_c", "x=y", "\tz")));
        // An empty value is a value (real files carry `PriorityFlags=`).
        assert_eq!(next_pair("Key= "), Some(("Key", "", "")));
        assert_eq!(next_pair("Key-x=1"), None);
        assert_eq!(next_pair("no pair"), None);
    }

    #[test]
    fn include_directives() {
        assert_eq!(include_directive("Include nodes.conf\n"), Some(Ok("nodes.conf")));
        assert_eq!(include_directive("include\t/etc/slurm/%c.conf"), Some(Ok("/etc/slurm/%c.conf")));
        assert_eq!(include_directive("IncludeNodes=x"), None);
        assert_eq!(include_directive(" Include x"), None);
        assert!(matches!(include_directive("include  "), Some(Err(_))));
        assert!(matches!(include_directive("include a b"), Some(Err(_))));
    }
}
