//! Writers, one module per output format.

pub mod assoc_csv;
pub mod parquet;
pub mod prometheus;
pub mod sprio;
pub mod sshare;
pub mod sshare_json;
pub mod yaml;

use std::borrow::Cow;
use std::path::Path;

/// The name a text writer's I/O errors carry: its destination file, or `<stdout>`.
pub fn dest_name(dest: Option<&Path>) -> &Path {
    dest.unwrap_or(Path::new("<stdout>"))
}

/// Spaces to pad text tables with, pushed a slice at a time.
const SPACES: &str = "                                                                ";

/// `n` spaces appended to `out` as whole slices (a char at a time was a tenth of writing sprio
/// rows).
fn push_spaces(out: &mut String, mut n: usize) {
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// Characters in `s`, counted by bytes when it is ASCII.
fn char_count(s: &str) -> usize {
    if s.is_ascii() { s.len() } else { s.chars().count() }
}

/// A name as the line-oriented text outputs print it: control characters (a newline or NUL a
/// flux DB can hold) become `?`, so one association stays one line. Parquet keeps the exact name.
pub fn printable(name: &str) -> Cow<'_, str> {
    // Printable ASCII, the common case, is checked by bytes.
    if name.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Cow::Borrowed(name);
    }
    if name.chars().any(char::is_control) {
        Cow::Owned(name.chars().map(|c| if c.is_control() { '?' } else { c }).collect())
    } else {
        Cow::Borrowed(name)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn printable_names_keep_one_line() {
        assert_eq!(super::printable("chem"), "chem");
        assert_eq!(super::printable("a\nb\0c\td"), "a?b?c?d");
        assert_eq!(super::printable("é\u{7f}\u{85}ü"), "é??ü");
    }
}
