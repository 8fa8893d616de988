//! Slurm host lists (`src/common/hostlist.c`): `node[001-128,200]`, `n[01-16],g[01-04]`,
//! `rack[1-2]n[1-3]`.
//!
//! A list is host expressions separated by commas or white space. An expression is text with any
//! number of bracket groups; a group is comma-separated numbers and `lo-hi` ranges, each printed
//! zero-padded to the width of its lower bound as written (`[08-10]` gives `08 09 10`, `[9-10]`
//! gives `9 10`). Several groups expand to every combination, the last group varying fastest.
//! A [`HostList`] is parsed once and counted without expanding; names are produced lazily.

/// One `lo-hi` range of a bracket group.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Range {
    lo: u64,
    hi: u64,
    width: usize,
}

/// A piece of a host expression: literal text or a bracket group.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    Group(Vec<Range>),
}

/// One host expression and the number of names it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Expr {
    parts: Vec<Part>,
    count: u64,
}

/// A parsed host list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostList {
    exprs: Vec<Expr>,
    count: u64,
}

impl HostList {
    /// Parses a host list.
    ///
    /// # Errors
    /// Unbalanced or nested brackets, an empty group, a bound that is not a number, a range whose
    /// upper bound is below its lower bound, or more names than a `u64` counts.
    ///
    /// # Example
    /// ```
    /// use fairshare_engine::config::HostList;
    /// let h = HostList::parse("node[001-128,200],login1").unwrap();
    /// assert_eq!(h.len(), 130);
    /// assert_eq!(h.iter().nth(127).as_deref(), Some("node128"));
    /// assert_eq!(h.iter().nth(128).as_deref(), Some("node200"));
    /// ```
    pub fn parse(text: &str) -> Result<HostList, String> {
        let exprs: Vec<Expr> = split_expressions(text)?.into_iter().map(parse_expr).collect::<Result<_, _>>()?;
        let count = exprs.iter().try_fold(0u64, |n, e| n.checked_add(e.count)).ok_or_else(|| too_many(text))?;
        Ok(HostList { exprs, count })
    }

    /// The number of names, counting repeats (`a,a` is 2).
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether the list names no host.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The names, in order.
    pub fn iter(&self) -> impl Iterator<Item = String> + '_ {
        self.exprs.iter().flat_map(|e| (0..e.count).map(move |k| e.nth(k)))
    }
}

/// Counts the names in a host list without expanding it.
///
/// # Errors
/// As [`HostList::parse`].
///
/// # Example
/// ```
/// use fairshare_engine::config::hostlist::hostlist_count;
/// assert_eq!(hostlist_count("n[0000001-9999999]"), Ok(9_999_999));
/// ```
pub fn hostlist_count(text: &str) -> Result<u64, String> {
    HostList::parse(text).map(|h| h.len())
}

/// Expands a host list into its names.
///
/// # Errors
/// As [`HostList::parse`].
///
/// # Example
/// ```
/// use fairshare_engine::config::hostlist::hostlist_expand;
/// assert_eq!(hostlist_expand("a[1-2]b[08-09]").unwrap(), ["a1b08", "a1b09", "a2b08", "a2b09"]);
/// ```
pub fn hostlist_expand(text: &str) -> Result<Vec<String>, String> {
    HostList::parse(text).map(|h| h.iter().collect())
}

fn too_many(text: &str) -> String {
    format!("host list {text:?} names too many hosts")
}

/// Splits at commas and white space outside brackets; empty expressions are skipped.
fn split_expressions(text: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let (mut start, mut open) = (0, false);
    for (i, c) in text.char_indices() {
        match c {
            '[' if open => return Err(format!("host list {text:?}: nested '['")),
            '[' => open = true,
            ']' if !open => return Err(format!("host list {text:?}: ']' without '['")),
            ']' => open = false,
            ',' if !open => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            c if c.is_whitespace() && !open => {
                out.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            c if c.is_whitespace() => return Err(format!("host list {text:?}: white space inside brackets")),
            _ => {}
        }
    }
    if open {
        return Err(format!("host list {text:?}: '[' without ']'"));
    }
    out.push(&text[start..]);
    out.retain(|e| !e.is_empty());
    Ok(out)
}

/// Parses one bracket-balanced expression.
fn parse_expr(text: &str) -> Result<Expr, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let close = open + rest[open..].find(']').unwrap_or(rest.len() - open);
        if open > 0 {
            parts.push(Part::Text(rest[..open].to_string()));
        }
        parts.push(Part::Group(parse_group(text, &rest[open + 1..close])?));
        rest = rest.get(close + 1..).unwrap_or("");
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest.to_string()));
    }
    let count = parts
        .iter()
        .try_fold(1u64, |n, p| match p {
            Part::Text(_) => Some(n),
            Part::Group(g) => n.checked_mul(group_len(g)?),
        })
        .ok_or_else(|| too_many(text))?;
    Ok(Expr { parts, count })
}

/// Parses the inside of a bracket group: `1,3,5-9`.
fn parse_group(expr: &str, inner: &str) -> Result<Vec<Range>, String> {
    let bad = |what: &str| format!("host list {expr:?}: {what}");
    if inner.is_empty() {
        return Err(bad("empty brackets"));
    }
    inner
        .split(',')
        .map(|item| {
            let (lo, hi) = item.split_once('-').unwrap_or((item, item));
            let number = |s: &str| {
                (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| s.parse::<u64>().ok())
                    .flatten()
                    .ok_or_else(|| bad(&format!("{item:?} is not a number or a lo-hi range")))
            };
            let (lo_n, hi_n) = (number(lo)?, number(hi)?);
            if hi_n < lo_n {
                return Err(bad(&format!("range {item:?} ends before it starts")));
            }
            Ok(Range { lo: lo_n, hi: hi_n, width: lo.len() })
        })
        .collect()
}

/// The number of values in a group, or `None` on overflow.
fn group_len(group: &[Range]) -> Option<u64> {
    group.iter().try_fold(0u64, |n, r| n.checked_add((r.hi - r.lo).checked_add(1)?))
}

impl Expr {
    /// The `k`-th name (`k < count`): `k` in mixed radix over the groups, the last group fastest.
    fn nth(&self, mut k: u64) -> String {
        let mut digits = Vec::with_capacity(self.parts.len());
        for part in self.parts.iter().rev() {
            if let Part::Group(g) = part {
                let len = group_len(g).unwrap_or(u64::MAX);
                digits.push(value_at(g, k % len));
                k /= len;
            }
        }
        let mut name = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => name.push_str(t),
                Part::Group(_) => {
                    let (value, width) = digits.pop().unwrap_or_default();
                    name.push_str(&format!("{value:0width$}"));
                }
            }
        }
        name
    }
}

/// The `i`-th value of a group and the width to print it with.
fn value_at(group: &[Range], mut i: u64) -> (u64, usize) {
    for r in group {
        let len = r.hi - r.lo + 1;
        if i < len {
            return (r.lo + i, r.width);
        }
        i -= len;
    }
    (0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_keep_the_width_of_their_lower_bound() {
        assert_eq!(hostlist_expand("node[001-003,010]").unwrap(), ["node001", "node002", "node003", "node010"]);
        assert_eq!(hostlist_expand("n[08-10]").unwrap(), ["n08", "n09", "n10"]);
        assert_eq!(hostlist_expand("n[9-11]").unwrap(), ["n9", "n10", "n11"]);
        assert_eq!(hostlist_expand("n[0]").unwrap(), ["n0"]);
    }

    #[test]
    fn several_expressions_and_groups() {
        assert_eq!(hostlist_expand("n[01-02],g[1-2] login").unwrap(), ["n01", "n02", "g1", "g2", "login"]);
        assert_eq!(
            hostlist_expand("rack[1-2]n[1-3]-ib").unwrap(),
            ["rack1n1-ib", "rack1n2-ib", "rack1n3-ib", "rack2n1-ib", "rack2n2-ib", "rack2n3-ib"]
        );
        assert_eq!(hostlist_count("a[1-3]b[1-2],c[1-4]"), Ok(10));
        assert_eq!(hostlist_count(" , ,"), Ok(0));
        assert!(HostList::parse("").unwrap().is_empty());
    }

    #[test]
    fn counting_does_not_expand() {
        let h = HostList::parse("x[0-999999999]y[0-999999999]").unwrap();
        assert_eq!(h.len(), 1_000_000_000_000_000_000);
        assert_eq!(h.iter().next().as_deref(), Some("x0y0"));
        assert_eq!(h.iter().take(2).collect::<Vec<_>>(), ["x0y0", "x0y1"]);
        assert_eq!(Expr::nth(&h.exprs[0], 1_000_000_000), "x1y0");
        assert!(hostlist_count("a[0-18446744073709551615]").is_err());
        assert!(hostlist_count("a[0-4294967296]b[0-4294967296]").is_err());
    }

    #[test]
    fn malformed_lists_are_errors() {
        for bad in ["n[1-3", "n1-3]", "n[[1]]", "n[]", "n[a-b]", "n[3-1]", "n[1-]", "n[-1]", "n[1 -3]", "n[1,,2]"] {
            assert!(HostList::parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
