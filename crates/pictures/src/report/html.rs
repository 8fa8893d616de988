//! HTML text from untrusted values: association and user names come from a site's database and
//! may hold anything (`<script>`, quotes, `../`, NUL, megabytes). Everything a page shows passes
//! through [`escape`]; JSON inside a page through [`script_json`]; page file names never derive
//! from a name ([`page_name`]).

use std::fmt::Write;

/// Escapes text for HTML content and quoted attribute values: SVG's escaping
/// ([`crate::plot::svg::escape`]), which pages and their inline charts share, so that `& < > " '`
/// become entities and the controls HTML does not allow become U+FFFD.
pub use crate::plot::svg::escape;

/// The file name of an association's page: from its id, never its name, so no name can reach
/// outside the report or collide with another page.
pub fn page_name(id: u64) -> String {
    format!("a{id}.html")
}

/// `value` as JSON to place inside a `<script>` element: `<`, `>` and `&` are written as
/// `\u003c`-style escapes, so no `</script>` or `<!--` in a name can end the element early, and
/// so are control characters (which HTML does not allow raw).
pub fn script_json(value: &serde_json::Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            // Controls (DEL and C1 included) are errors in HTML text, even inside a script.
            c if matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') || c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A word as a POSIX shell reads it back unchanged: as is when it holds only safe characters,
/// else single-quoted (a `'` inside as `'\''`). For the commands a page suggests.
pub fn shell_word(s: &str) -> String {
    let safe = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c));
    if safe { s.to_string() } else { format!("'{}'", s.replace('\'', r"'\''")) }
}

/// An SVG document (from [`crate::plot::svg::to_svg`]) for inlining in a page: an image to
/// assistive technology (`role="img"`) named by `label`, with `label` as its `<title>` too, and
/// scaled down to the page's width by the style sheet.
pub fn inline_svg(svg: &str, label: &str) -> String {
    let label = escape(label);
    let body = svg.strip_prefix("<svg").unwrap_or(svg);
    let Some(end) = body.find('>') else { return String::new() };
    format!(r#"<svg role="img" aria-label="{label}"{}><title>{label}</title>{}"#, &body[..end], &body[end + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_cannot_make_markup() {
        let hostile = "<script>alert('x')</script>\"onload=\"x\0\u{1}\u{85}&amp;";
        let e = escape(hostile);
        for bad in ['<', '>', '"', '\'', '\0', '\u{1}', '\u{85}'] {
            assert!(!e.contains(bad), "{e}");
        }
        assert_eq!(escape("a&b"), "a&amp;b");
        assert_eq!(escape("tab\tok"), "tab\tok");
        assert!(e.starts_with("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;onload=&quot;x\u{fffd}\u{fffd}"));
    }

    #[test]
    fn json_in_a_script_cannot_close_it() {
        let v = serde_json::json!(["</script><script>alert(1)</script>", "<!--", "a&b", "\u{2028}", "a\u{7f}\u{85}\0"]);
        let s = script_json(&v);
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'), "{s}");
        assert!(!s.chars().any(char::is_control), "{s}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&s).unwrap(), v);
    }

    #[test]
    fn page_names_stay_in_the_report() {
        for id in [0, 7, u64::MAX] {
            let n = page_name(id);
            assert!(n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.'), "{n}");
            assert!(!n.contains("..") && !n.contains('/'));
        }
    }

    #[test]
    fn shell_words_quote_what_a_shell_would_read() {
        assert_eq!(shell_word("dana@lab_1"), "dana@lab_1");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's;rm -rf"), r"'it'\''s;rm -rf'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("$(x)"), "'$(x)'");
    }

    #[test]
    fn an_inline_svg_is_a_labelled_image() {
        let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="5"><rect/></svg>"#;
        let s = inline_svg(svg, "tree <of> \"x\"");
        assert!(s.starts_with(r#"<svg role="img" aria-label="tree &lt;of&gt; &quot;x&quot;" xmlns="#), "{s}");
        assert!(s.contains(r#"height="5"><title>tree &lt;of&gt; &quot;x&quot;</title><rect/></svg>"#), "{s}");
    }
}
