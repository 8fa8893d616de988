//! sprio-compatible text: what Slurm's `sprio` prints for the same jobs.
//!
//! Format strings follow sprio's grammar (`%[.][width]letter`, text between fields kept as is);
//! `.` right-justifies, a width pads and cuts; weighted factors print `%.0f`, normalized ones
//! `%.7f`, `%y` `%16.14f`. The default formats depend on which weights are nonzero, as in
//! `sprio.c`.

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::io::Write;

use super::{SPACES, push_spaces};
use crate::jobs::PendingJobs;
use crate::priority::{NONE, Scores, Weights};
use fairshare_base::error::{Error, Result};

/// One field of a format.
#[derive(Clone, Debug, PartialEq)]
struct FormatField {
    letter: char,
    width: usize,
    right: bool,
    suffix: String,
}

/// A parsed `-o` format: a prefix and fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Format {
    prefix: String,
    fields: Vec<FormatField>,
}

const LETTERS: &str = "iruoncYySAaBbFfJjPpQqNTt";

impl Format {
    /// Parses a sprio format string.
    ///
    /// # Errors
    /// An unknown field letter.
    ///
    /// # Example
    /// ```
    /// let f = fairshare_engine::output::sprio::Format::parse("%.15i %.12Y").unwrap();
    /// assert!(fairshare_engine::output::sprio::Format::parse("%.15i %Z").is_err());
    /// ```
    pub fn parse(format: &str) -> Result<Self> {
        let (prefix, rest) = match format.find('%') {
            Some(i) => (&format[..i], &format[i..]),
            None => (format, ""),
        };
        let mut fields = Vec::new();
        for token in rest.split('%').filter(|t| !t.is_empty()) {
            let right = token.starts_with('.');
            let body = token.strip_prefix('.').unwrap_or(token);
            let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let width = body[..digits].parse().unwrap_or(0);
            let mut chars = body[digits..].chars();
            let letter = chars.next().unwrap_or(' ');
            if !LETTERS.contains(letter) {
                return Err(Error::Usage(format!("Invalid job format specification: {letter}")));
            }
            fields.push(FormatField { letter, width, right, suffix: chars.as_str().to_string() });
        }
        Ok(Format { prefix: prefix.to_string(), fields })
    }

    /// The format sprio uses when no `-o` is given.
    pub fn default_for(weights: &Weights, long: bool, normalized: bool, show_user: bool) -> Self {
        let text = match (long, normalized) {
            (true, true) => "%.15i %9r %.8u %.8o %10y %10a %10b %10f %10j %10p %10n %10q %20t".to_string(),
            (true, false) => {
                "%.15i %9r %.8u %.8o %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10n %.10Q %.11N %.20T".to_string()
            }
            (false, _) => {
                let mut f = String::from("%.15i %9r");
                if show_user {
                    f.push_str(" %.8u");
                }
                let terms = [
                    (weights.age, 'a'),
                    (weights.assoc, 'b'),
                    (weights.fairshare, 'f'),
                    (weights.job_size, 'j'),
                    (weights.partition, 'p'),
                    (weights.qos, 'q'),
                ];
                if normalized {
                    f.push_str(" %10y");
                    for (w, c) in terms {
                        if w != 0.0 {
                            f.push_str(&format!(" %10{c}"));
                        }
                    }
                    if !weights.tres.is_empty() {
                        f.push_str(" %20t");
                    }
                } else {
                    f.push_str(" %.10Y %.10S");
                    for (w, c) in terms {
                        if w != 0.0 {
                            f.push_str(&format!(" %.10{}", c.to_ascii_uppercase()));
                        }
                    }
                    if !weights.tres.is_empty() {
                        f.push_str(" %.20T");
                    }
                }
                f
            }
        };
        Format::parse(&text).expect("built-in formats parse")
    }
}

/// What to print and how.
#[derive(Clone, Debug, Default)]
pub struct SprioOptions {
    /// `-h`: no header.
    pub no_header: bool,
    /// `-w`: print the weights row only.
    pub weights_only: bool,
    /// `-j`: only these job ids.
    pub jobs: Vec<u64>,
    /// `-u`: only these users.
    pub users: Vec<String>,
    /// `-p`: only these partitions.
    pub partitions: Vec<String>,
    /// `-S`: sort keys (letters, `-` for descending); default by job id.
    pub sort: Option<String>,
    /// The original PriorityWeightTRES text, printed on the weights row.
    pub tres_weight_text: String,
    /// The file the text goes to, named in write errors (`None`: `<stdout>`).
    pub dest: Option<std::path::PathBuf>,
}

/// `_print_str`: right-justified fields are padded then cut to the width, left-justified ones cut
/// then padded; width 0 prints as is.
#[inline]
fn push_str(out: &mut String, s: &str, width: usize, right: bool) {
    if width == 0 {
        out.push_str(s);
        return;
    }
    // ASCII, the common case: a char is a byte.
    if s.is_ascii() {
        push_ascii(out, s, width, right);
        return;
    }
    let len = s.chars().count();
    if right {
        let padded: String = std::iter::repeat_n(' ', width.saturating_sub(len)).chain(s.chars()).take(width).collect();
        out.push_str(&padded);
    } else {
        let cut: String = s.chars().take(width).collect();
        let n = cut.chars().count();
        out.push_str(&cut);
        out.extend(std::iter::repeat_n(' ', width - n));
    }
}

/// [`push_str`] of `s`, ASCII (digits: no scan for wider characters), `width` not 0.
#[inline]
fn push_ascii(out: &mut String, s: &str, width: usize, right: bool) {
    let shown = &s[..s.len().min(width)];
    if right {
        push_spaces(out, width - shown.len());
        out.push_str(shown);
    } else {
        out.push_str(shown);
        push_spaces(out, width - shown.len());
    }
}

/// The cell that `text` holds from byte `at` on, justified as [`push_str`] would print it: in
/// place when it is ASCII (the common case), which spares a copy of every cell.
fn justify(text: &mut String, at: usize, width: usize, right: bool) {
    if width == 0 {
        return;
    }
    if !text[at..].is_ascii() {
        let cell = text.split_off(at);
        push_str(text, &cell, width, right);
        return;
    }
    text.truncate(at + width.min(text.len() - at));
    let pad = width - (text.len() - at);
    if !right || pad == 0 {
        push_spaces(text, pad);
        return;
    }
    match SPACES.get(..pad) {
        Some(spaces) => text.insert_str(at, spaces),
        // Wider than the slice (rare): the cell moves out and back.
        None => {
            let cell = text.split_off(at);
            push_spaces(text, pad);
            text.push_str(&cell);
        }
    }
}

/// An integer appended to `out` as `{}` prints it, without `core::fmt`.
fn push_decimal(out: &mut String, v: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(v));
}

fn header(letter: char) -> &'static str {
    match letter {
        'i' => "JOBID",
        'r' | 'P' | 'p' => "PARTITION",
        'u' => "USER",
        'o' => "ACCOUNT",
        'n' => "QOSNAME",
        'c' => "CLUSTER",
        'Y' | 'y' => "PRIORITY",
        'S' => "SITE",
        'A' | 'a' => "AGE",
        'B' | 'b' => "ASSOC",
        'F' | 'f' => "FAIRSHARE",
        'J' | 'j' => "JOBSIZE",
        'Q' | 'q' => "QOS",
        'N' => "NICE",
        _ => "TRES",
    }
}

/// What field `letter` of a score row shows, before it is text.
enum Value {
    /// A job id.
    Id(u64),
    /// The priority sum, truncated.
    Int(i64),
    /// A name id of the queue.
    Name(u32),
    /// A weighted factor, printed `%.0f`.
    Whole(f64),
    /// A factor divided by its weight (0 for no weight), printed `%.7f`.
    Normalized(f64, f64),
    /// The priority sum's share of 2^32-1, printed `%16.14f`.
    Fraction(f64),
    /// The weighted TRES terms, as sprio's `%T` (weighted) or `%t` (normalized) lists them.
    Tres { weighted: bool },
    /// Nothing (no QOS, an unknown letter).
    Empty,
}

/// What field `letter` of score row `r` shows.
fn value(letter: char, r: usize, s: &Scores, jobs: &PendingJobs, w: &Weights) -> Value {
    let j = s.job[r] as usize;
    match letter {
        'i' => Value::Id(jobs.job_id[j]),
        'Y' => Value::Int(s.sprio_sum[r] as i64),
        'r' => Value::Name(s.partition[r]),
        'u' => Value::Name(jobs.user[j]),
        'o' => Value::Name(jobs.account[j]),
        'n' if s.qos[r] != NONE => Value::Name(s.qos[r]),
        'y' => Value::Fraction(s.sprio_sum[r] / f64::from(u32::MAX)),
        'S' => Value::Whole(f64::from(jobs.site_factor[j])),
        'N' => Value::Whole(f64::from(jobs.nice[j])),
        'A' => Value::Whole(s.age[r]),
        'B' => Value::Whole(s.assoc_factor[r]),
        'F' => Value::Whole(s.fairshare[r]),
        'J' => Value::Whole(s.job_size[r]),
        'P' => Value::Whole(s.partition_factor[r]),
        'Q' => Value::Whole(s.qos_factor[r]),
        'a' => Value::Normalized(s.age[r], w.age),
        'b' => Value::Normalized(s.assoc_factor[r], w.assoc),
        'f' => Value::Normalized(s.fairshare[r], w.fairshare),
        'j' => Value::Normalized(s.job_size[r], w.job_size),
        'p' => Value::Normalized(s.partition_factor[r], w.partition),
        'q' => Value::Normalized(s.qos_factor[r], w.qos),
        'T' | 't' => Value::Tres { weighted: letter == 'T' },
        _ => Value::Empty,
    }
}

/// The text of `v` when it is one piece made without a buffer (an integer, formatted into
/// `digits`, or a printable name), to be padded straight into the line; `None` for the others,
/// which [`push_value`] appends.
fn short_text<'a>(v: &Value, jobs: &'a PendingJobs, digits: &'a mut itoa::Buffer) -> Option<&'a str> {
    match *v {
        Value::Id(i) => Some(digits.format(i)),
        Value::Int(i) => Some(digits.format(i)),
        Value::Name(id) => match super::printable(jobs.names.name(id)) {
            std::borrow::Cow::Borrowed(name) => Some(name),
            std::borrow::Cow::Owned(_) => None,
        },
        Value::Whole(x) => rounded_int(x).map(|i| digits.format(i)),
        Value::Empty => Some(""),
        _ => None,
    }
}

/// Appends the text of `v`, of score row `r`, to `out`; `tres_labels` are the weighted TRES as
/// `name=`, in the order of `w.tres`.
fn push_value(
    v: &Value,
    r: usize,
    s: &Scores,
    jobs: &PendingJobs,
    w: &Weights,
    tres_labels: &[String],
    out: &mut String,
) {
    match *v {
        Value::Id(i) => push_decimal(out, i),
        Value::Int(i) => push_decimal(out, i),
        Value::Name(id) => out.push_str(&super::printable(jobs.names.name(id))),
        Value::Whole(x) => push_int(out, x),
        Value::Normalized(x, weight) => {
            let _ = write!(out, "{:.7}", if weight != 0.0 { x / weight } else { 0.0 });
        }
        Value::Fraction(x) => {
            let _ = write!(out, "{x:16.14}");
        }
        Value::Tres { weighted } => {
            let start = out.len();
            let terms = w.tres.iter().zip(&s.tres).zip(tres_labels);
            for (((_, weight), col), label) in terms.filter(|((_, col), _)| col[r] != 0.0) {
                if out.len() > start {
                    out.push(',');
                }
                out.push_str(label);
                if weighted {
                    push_int(out, col[r]);
                } else {
                    let _ = write!(out, "{:.2}", col[r] / weight);
                }
            }
        }
        Value::Empty => {}
    }
}

/// `v` as `{v:.0}` prints it when that is an integer's text: rounded half to even, below 2^53,
/// and not a negative value rounding to `-0`.
fn rounded_int(v: f64) -> Option<i64> {
    let rounded = round_ties_even(v);
    (rounded.abs() < 9e15 && !(rounded == 0.0 && v.is_sign_negative())).then_some(rounded as i64)
}

/// `v.round_ties_even()` without its call into libm (`rint`: x86-64's baseline has no rounding
/// instruction, and a sprio table rounds every weighted factor): below 2^52, adding and taking
/// back 2^52 with `v`'s sign leaves `v` rounded half to even by the addition itself; from 2^52 on,
/// every `f64` is an integer. The sign of a zero result may differ, which `rounded_int` reads
/// from `v`.
fn round_ties_even(v: f64) -> f64 {
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    if v.abs() < TWO_52 {
        let shift = TWO_52.copysign(v);
        (v + shift) - shift
    } else {
        v
    }
}

/// `format!("{v:.0}")` appended to `out`. Most values are integers below 2^53 once rounded
/// (half to even, as that formatting rounds), which print as integers without its exact-decimal
/// arithmetic (a third of the time of writing 10^7 sprio rows); the rest, and a negative value
/// that rounds to `-0`, take the formatting itself.
fn push_int(out: &mut String, v: f64) {
    match rounded_int(v) {
        Some(i) => push_decimal(out, i),
        None => {
            let _ = write!(out, "{v:.0}");
        }
    }
}

/// The weights row (`-w`).
fn weight_cell(letter: char, w: &Weights, tres_text: &str) -> String {
    let int = |v: f64| format!("{v:.0}");
    match letter {
        'i' => "Weights".into(),
        'S' => "1".into(),
        'A' | 'a' => int(w.age),
        'B' | 'b' => int(w.assoc),
        'F' | 'f' => int(w.fairshare),
        'J' | 'j' => int(w.job_size),
        'P' | 'p' => int(w.partition),
        'Q' | 'q' => int(w.qos),
        'T' => tres_text.to_string(),
        _ => String::new(),
    }
}

fn compare(letter: char, a: usize, b: usize, s: &Scores, jobs: &PendingJobs) -> Ordering {
    let (ja, jb) = (s.job[a] as usize, s.job[b] as usize);
    let name = |id: u32| if id == NONE { "" } else { jobs.names.name(id) };
    match letter {
        'i' => jobs.job_id[ja].cmp(&jobs.job_id[jb]),
        'r' => name(s.partition[a]).cmp(name(s.partition[b])),
        'u' => name(jobs.user[ja]).cmp(name(jobs.user[jb])),
        'o' => name(jobs.account[ja]).cmp(name(jobs.account[jb])),
        'n' => name(s.qos[a]).cmp(name(s.qos[b])),
        'Y' | 'y' => s.sprio_sum[a].total_cmp(&s.sprio_sum[b]),
        'A' | 'a' => s.age[a].total_cmp(&s.age[b]),
        'B' | 'b' => s.assoc_factor[a].total_cmp(&s.assoc_factor[b]),
        'F' | 'f' => s.fairshare[a].total_cmp(&s.fairshare[b]),
        'J' | 'j' => s.job_size[a].total_cmp(&s.job_size[b]),
        'P' | 'p' => s.partition_factor[a].total_cmp(&s.partition_factor[b]),
        'Q' | 'q' => s.qos_factor[a].total_cmp(&s.qos_factor[b]),
        'N' => jobs.nice[ja].cmp(&jobs.nice[jb]),
        'S' => jobs.site_factor[ja].cmp(&jobs.site_factor[jb]),
        _ => Ordering::Equal,
    }
}

/// sprio's lines in one format: the header and one line per score row, for a table written
/// whole ([`write_sprio`]) or a slice of a queue at a time (a run directory's `sprio.txt`).
pub struct SprioLines<'a> {
    format: &'a Format,
    weights: &'a Weights,
    /// The weighted TRES as `name=`, in the order of the weights.
    tres_labels: Vec<String>,
    /// A line's length when no cell is wider than its field.
    line_len: usize,
}

impl<'a> SprioLines<'a> {
    /// The lines of `format` for rows scored with `weights`.
    pub fn new(format: &'a Format, weights: &'a Weights) -> Self {
        let tres_labels = weights.tres.iter().map(|(t, _)| format!("{t}=")).collect();
        let fields = format.fields.iter().map(|f| f.width + f.suffix.len());
        let line_len = format.prefix.len() + fields.sum::<usize>() + 1;
        SprioLines { format, weights, tres_labels, line_len }
    }

    /// Appends a line: `cell(letter, text, width, right)` appends a field's cell, justified.
    fn line(&self, text: &mut String, cell: &dyn Fn(char, &mut String, usize, bool)) {
        text.push_str(&self.format.prefix);
        for f in &self.format.fields {
            cell(f.letter, text, f.width, f.right);
            text.push_str(&f.suffix);
        }
        text.push('\n');
    }

    /// Appends the header line.
    pub fn header(&self, text: &mut String) {
        self.line(text, &|c, t, width, right| push_str(t, header(c), width, right));
    }

    /// Appends the weights line (`-w`); `tres_weight_text` is `PriorityWeightTRES` as given.
    fn weights_line(&self, text: &mut String, tres_weight_text: &str) {
        self.line(text, &|c, t, width, right| {
            push_str(t, &weight_cell(c, self.weights, tres_weight_text), width, right);
        });
    }

    /// Appends the line of score row `r` of `scores`, whose jobs are `jobs`.
    pub fn row(&self, r: usize, scores: &Scores, jobs: &PendingJobs, text: &mut String) {
        // The line's usual length at once: its cells' pushes then never grow the text.
        text.reserve(self.line_len);
        // The fields in a plain loop, not through `line`'s callback: this is every row of a
        // 10^7-job table, and the call per cell showed.
        text.push_str(&self.format.prefix);
        let mut digits = itoa::Buffer::new();
        for f in &self.format.fields {
            let v = value(f.letter, r, scores, jobs, self.weights);
            match short_text(&v, jobs, &mut digits) {
                Some(number) if f.width != 0 && matches!(v, Value::Id(_) | Value::Int(_) | Value::Whole(_)) => {
                    push_ascii(text, number, f.width, f.right);
                }
                Some(short) => push_str(text, short, f.width, f.right),
                None => {
                    let at = text.len();
                    push_value(&v, r, scores, jobs, self.weights, &self.tres_labels, text);
                    justify(text, at, f.width, f.right);
                }
            }
            text.push_str(&f.suffix);
        }
        text.push('\n');
    }
}

/// Writes the sprio table.
///
/// # Errors
/// A bad `-S` key; write errors as [`Error::Io`] on `opts.dest`.
pub fn write_sprio(
    out: &mut dyn Write,
    scores: &Scores,
    jobs: &PendingJobs,
    weights: &Weights,
    format: &Format,
    opts: &SprioOptions,
) -> Result<()> {
    let write_error = |e| Error::io(super::dest_name(opts.dest.as_deref()), e);
    let lines = SprioLines::new(format, weights);
    let mut text = String::new();
    if !opts.no_header {
        lines.header(&mut text);
    }
    if opts.weights_only {
        lines.weights_line(&mut text, &opts.tres_weight_text);
        return out.write_all(text.as_bytes()).map_err(write_error);
    }
    let mut rows: Vec<usize> = (0..scores.len())
        .filter(|&r| {
            let j = scores.job[r] as usize;
            (opts.jobs.is_empty() || opts.jobs.contains(&jobs.job_id[j]))
                && (opts.users.is_empty() || opts.users.iter().any(|u| u == jobs.names.name(jobs.user[j])))
                && (opts.partitions.is_empty()
                    || opts.partitions.iter().any(|p| p == jobs.names.name(scores.partition[r])))
        })
        .collect();
    let keys = parse_sort(opts.sort.as_deref().unwrap_or("i"))?;
    let order = |&a: &usize, &b: &usize| {
        keys.iter()
            .map(|&(c, desc)| {
                let o = compare(c, a, b, scores, jobs);
                if desc { o.reverse() } else { o }
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    // A queue is mostly in job-id order already (ids grow with submission): one pass to see it.
    if !rows.is_sorted_by(|a, b| order(a, b).is_le()) {
        rows.sort_by(order);
    }
    out.write_all(text.as_bytes()).map_err(write_error)?;
    fairshare_base::parallel::write_text(&rows, |&r, text| lines.row(r, scores, jobs, text), out).map_err(write_error)
}

/// `-S` keys: field letters, each optionally preceded by `-` (descending); commas allowed.
fn parse_sort(spec: &str) -> Result<Vec<(char, bool)>> {
    let mut keys = Vec::new();
    let mut desc = false;
    for c in spec.chars() {
        match c {
            '-' => desc = true,
            '+' | ',' | '%' | '.' => {}
            c if c.is_ascii_digit() => {}
            c if LETTERS.contains(c) => {
                keys.push((c, desc));
                desc = false;
            }
            c => return Err(Error::Usage(format!("Invalid sort specification: {c}"))),
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The integer fast path prints what `{:.0}` prints: ties to even, `-0`, huge values,
    /// infinities and NaN included.
    #[test]
    fn push_int_prints_as_the_formatting_does() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            -0.5,
            -0.4,
            -1.5,
            0.49999999999999994,
            4503599627370495.5,
            9e15,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            123_456_789.5,
        ];
        let mut x = 0.37f64;
        for _ in 0..20_000 {
            x = (x * 3.999 * (1.0 - x)).abs();
            values.extend([x * 1e7, -x * 1e3, (x * 1e4).round() + 0.5, x * 1e16]);
        }
        for v in values {
            let mut out = String::new();
            push_int(&mut out, v);
            assert_eq!(out, format!("{v:.0}"), "{v:e}");
        }
    }

    #[test]
    fn rounding_without_libm_rounds_as_the_standard_library() {
        let mut seed = 5u64;
        let mut values = vec![0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, 4503599627370495.5, -0.0];
        values.extend([2f64.powi(52), 2f64.powi(53) + 2.0, f64::MAX, f64::MIN_POSITIVE, 1e-320]);
        for _ in 0..100_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let scale = 2f64.powi((seed >> 58) as i32 - 8);
            values.push(((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * scale * 1e6);
            values.push(f64::from((seed >> 40) as u32 % 1000) + 0.5);
        }
        for v in values {
            let (ours, std) = (round_ties_even(v), v.round_ties_even());
            assert!(ours == std, "{v:e}: {ours:e} against {std:e}");
            assert_eq!(
                rounded_int(v),
                (std.abs() < 9e15 && !(std == 0.0 && v.is_sign_negative())).then_some(std as i64)
            );
        }
        assert!(round_ties_even(f64::NAN).is_nan() && round_ties_even(f64::INFINITY) == f64::INFINITY);
    }

    #[test]
    fn justify_pads_and_cuts() {
        let mut s = String::new();
        push_str(&mut s, "12345", 3, true);
        push_str(&mut s, "|", 0, false);
        push_str(&mut s, "ab", 4, true);
        push_str(&mut s, "|", 0, false);
        push_str(&mut s, "abcdef", 4, false);
        push_str(&mut s, "|", 0, false);
        push_str(&mut s, "ab", 4, false);
        assert_eq!(s, "123|  ab|abcd|ab  ");
        // In place, as push_str prints each cell after the text before it.
        for (cell, width, right) in [
            ("12345", 3, true),
            ("ab", 4, true),
            ("abcdef", 4, false),
            ("ab", 4, false),
            ("ab", 0, true),
            ("é€x", 2, true),
            ("é", 3, true),
            ("é", 3, false),
            ("x", 200, true),
        ] {
            let (mut in_place, mut pushed) = (String::from("x|"), String::from("x|"));
            in_place.push_str(cell);
            justify(&mut in_place, 2, width, right);
            push_str(&mut pushed, cell, width, right);
            assert_eq!(in_place, pushed, "{cell} {width} {right}");
        }
        // Wider than the spaces pushed at once.
        for width in [64, 65, 200] {
            let mut wide = String::new();
            push_str(&mut wide, "x", width, true);
            assert_eq!(wide, format!("{:>width$}", "x"));
        }
    }

    #[test]
    fn formats_parse_like_sprio() {
        let f = Format::parse("x%.15i %9r|%Y").unwrap();
        assert_eq!(f.prefix, "x");
        assert_eq!(f.fields.len(), 3);
        assert_eq!(
            (f.fields[0].letter, f.fields[0].width, f.fields[0].right, f.fields[0].suffix.as_str()),
            ('i', 15, true, " ")
        );
        assert_eq!(
            (f.fields[1].letter, f.fields[1].width, f.fields[1].right, f.fields[1].suffix.as_str()),
            ('r', 9, false, "|")
        );
        assert_eq!(f.fields[2].width, 0);
    }

    #[test]
    fn default_format_follows_nonzero_weights() {
        let w = Weights { age: 1.0, assoc: 0.0, fairshare: 5.0, job_size: 0.0, partition: 0.0, qos: 0.0, tres: vec![] };
        assert_eq!(
            Format::default_for(&w, false, false, false),
            Format::parse("%.15i %9r %.10Y %.10S %.10A %.10F").unwrap()
        );
        assert_eq!(Format::default_for(&w, false, true, true), Format::parse("%.15i %9r %.8u %10y %10a %10f").unwrap());
    }

    #[test]
    fn sort_keys() {
        assert_eq!(parse_sort("-Y,i").unwrap(), vec![('Y', true), ('i', false)]);
        assert!(parse_sort("Z").is_err());
    }
}
