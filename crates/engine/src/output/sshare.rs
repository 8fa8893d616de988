//! sshare-compatible text: what Slurm's `sshare -a` prints for the same data.
//!
//! Columns, widths, header and dashes row, indentation (one space per depth), `parent`, `inf` and
//! blank rules follow `sshare/process.c` and `common/print_fields.c`: fixed-width fields are
//! followed by one space, doubles print `%f` (switching to `%e` when too wide), strings longer
//! than their field end in `+`; `-p` puts `|` after every field, `-P` between fields.

use std::io::{self, Write};

use crate::pass::{Algorithm, FairShare, NO_VAL};
use crate::tree::{AssocTree, AssocTres};
use fairshare_base::error::{Error, Result};

/// How fields are delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Parsable {
    /// Fixed-width columns.
    #[default]
    No,
    /// `-p`: `|` after every field, the last one included.
    Ending,
    /// `-P`: `|` between fields.
    NoEnding,
}

/// An sshare field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Account name, indented by depth.
    Account,
    /// Cluster name.
    Cluster,
    /// Effective usage.
    EffectvUsage,
    /// Fair-share factor (users only).
    FairShare,
    /// Fair Tree level FS.
    LevelFs,
    /// Association id.
    Id,
    /// Normalized shares.
    NormShares,
    /// Normalized usage.
    NormUsage,
    /// Partition.
    Partition,
    /// Raw shares, or `parent`.
    RawShares,
    /// Raw usage, truncated.
    RawUsage,
    /// User name.
    User,
    /// Group TRES-minutes limits.
    GrpTresMins,
    /// Decayed TRES usage in minutes.
    GrpTresRaw,
    /// TRES-minutes of running jobs.
    TresRunMins,
}

/// sshare's field table, in its lookup order (prefixes resolve to the first match).
const FIELDS: [(Field, &str, i32); 15] = [
    (Field::Account, "Account", -20),
    (Field::Cluster, "Cluster", 10),
    (Field::EffectvUsage, "EffectvUsage", 13),
    (Field::FairShare, "FairShare", 10),
    (Field::LevelFs, "LevelFS", 10),
    (Field::Id, "ID", 6),
    (Field::NormShares, "NormShares", 11),
    (Field::NormUsage, "NormUsage", 11),
    (Field::Partition, "Partition", 12),
    (Field::RawShares, "RawShares", 10),
    (Field::RawUsage, "RawUsage", 11),
    (Field::User, "User", 10),
    (Field::GrpTresMins, "GrpTRESMins", 30),
    (Field::GrpTresRaw, "GrpTRESRaw", 30),
    (Field::TresRunMins, "TRESRunMins", 30),
];

/// A field with its width (negative: left-justified).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Which field.
    pub field: Field,
    /// Print width; negative means left-justified.
    pub width: i32,
}

/// What to print and how.
#[derive(Clone, Debug, Default)]
pub struct SshareOptions {
    /// `-l`.
    pub long: bool,
    /// `-p` / `-P`.
    pub parsable: Parsable,
    /// `-n`: no header.
    pub no_header: bool,
    /// `-m`: add the Partition column.
    pub partitions: bool,
    /// `-U`: user rows only.
    pub users_only: bool,
    /// `-A`: only associations of these accounts.
    pub accounts: Vec<String>,
    /// `-u`: only these users' rows (account rows are always kept).
    pub users: Vec<String>,
    /// `-o`: explicit fields (`name[%width]`, case-insensitive prefixes).
    pub format: Option<String>,
    /// The file the text goes to, named in write errors (`None`: `<stdout>`).
    pub dest: Option<std::path::PathBuf>,
}

/// The field names `-o` accepts, four to a line, as `sshare --helpformat` lists them.
pub fn help_format() -> String {
    let mut text = String::new();
    for line in FIELDS.chunks(4) {
        let cells: Vec<String> = line.iter().map(|(_, name, _)| format!("{name:<17}")).collect();
        text.push_str(cells.join(" ").trim_end());
        text.push('\n');
    }
    text
}

/// Resolves the columns sshare would print for `opts` under `algorithm`.
///
/// # Errors
/// [`Error::Usage`] for an unknown field name in `-o`.
pub fn columns(opts: &SshareOptions, algorithm: Algorithm) -> Result<Vec<Column>> {
    let names: Vec<String> = match &opts.format {
        Some(f) => f.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect(),
        None => {
            let mut v = vec!["Account", "User"];
            if opts.partitions {
                v.push("Partition");
            }
            v.extend(["RawShares", "NormShares", "RawUsage"]);
            if opts.long {
                v.push("NormUsage");
            }
            v.extend(["EffectvUsage", "FairShare"]);
            if opts.long {
                if algorithm != Algorithm::Classic {
                    v.push("LevelFS");
                }
                v.extend(["GrpTRESMins", "TRESRunMins"]);
            }
            v.into_iter().map(str::to_string).collect()
        }
    };
    names
        .iter()
        .map(|spec| {
            let (name, width) = match spec.split_once('%') {
                Some((n, w)) => (n, w.trim().parse::<i32>().ok().filter(|&w| w != 0)),
                None => (spec.as_str(), None),
            };
            let name = name.trim();
            FIELDS
                .iter()
                .find(|(_, full, _)| {
                    !name.is_empty() && full.len() >= name.len() && full[..name.len()].eq_ignore_ascii_case(name)
                })
                .map(|&(field, _, w)| Column { field, width: width.unwrap_or(w) })
                .ok_or_else(|| Error::Usage(format!("Invalid field requested: \"{name}\"")))
        })
        .collect()
}

/// Writes the sshare table for `tree` and its fair-share result.
///
/// # Errors
/// [`Error::Usage`] for a bad `-o`; I/O errors from `out` are returned as [`Error::Io`] on
/// `opts.dest`.
pub fn write_sshare(out: &mut dyn Write, tree: &AssocTree, fs: &FairShare, opts: &SshareOptions) -> Result<()> {
    let cols = columns(opts, fs.params.algorithm)?;
    write_table(out, tree, fs, opts, &cols).map_err(|e| Error::io(super::dest_name(opts.dest.as_deref()), e))
}

fn write_table(
    out: &mut dyn Write,
    tree: &AssocTree,
    fs: &FairShare,
    opts: &SshareOptions,
    cols: &[Column],
) -> io::Result<()> {
    let mut line = String::with_capacity(256);
    if !opts.no_header {
        for (i, c) in cols.iter().enumerate() {
            let name = FIELDS.iter().find(|f| f.0 == c.field).map(|f| f.1).unwrap_or("");
            match opts.parsable {
                Parsable::No => {
                    let w = c.width.unsigned_abs() as usize;
                    let name = &name[..name.len().min(w)];
                    pad(&mut line, name, c.width);
                    line.push(' ');
                }
                _ => push_delimited(&mut line, name, opts.parsable, i + 1 == cols.len()),
            }
        }
        line.push('\n');
        if opts.parsable == Parsable::No {
            for c in cols {
                line.extend(std::iter::repeat_n('-', c.width.unsigned_abs() as usize));
                line.push(' ');
            }
            line.push('\n');
        }
        out.write_all(line.as_bytes())?;
    }
    let accounts: Vec<&str> = opts.accounts.iter().map(String::as_str).collect();
    let users: Vec<&str> = opts.users.iter().map(String::as_str).collect();
    let rows: Vec<usize> = (tree.preorder().into_iter().map(|row| row as usize))
        .filter(|&row| {
            let user = tree.user_name(row);
            (user.is_some() || !opts.users_only)
                && (accounts.is_empty() || accounts.contains(&tree.account(row)))
                && (users.is_empty() || user.is_none_or(|u| users.contains(&u)))
        })
        .collect();
    fairshare_base::parallel::write_text(&rows, |&row, line| write_row(line, tree, fs, row, cols, opts.parsable), out)
}

/// Appends the line of association `row`.
fn write_row(line: &mut String, tree: &AssocTree, fs: &FairShare, row: usize, cols: &[Column], parsable: Parsable) {
    for (i, c) in cols.iter().enumerate() {
        let last = i + 1 == cols.len();
        match value(tree, fs, row, c.field) {
            Value::Text(t) => push_text(line, t.as_deref(), c.width, parsable, last),
            Value::Uint(v) => {
                let mut digits = itoa::Buffer::new();
                push_text(line, v.map(|v| digits.format(v)), c.width, parsable, last);
            }
            Value::Double(v) => push_double(line, v, c.width, parsable, last),
        }
    }
    line.push('\n');
}

enum Value {
    Text(Option<String>),
    Uint(Option<u64>),
    Double(f64),
}

fn value(tree: &AssocTree, fs: &FairShare, row: usize, field: Field) -> Value {
    let user = tree.user_name(row);
    match field {
        Field::Account => {
            let mut s = " ".repeat(tree.depths()[row] as usize);
            s.push_str(&super::printable(tree.account(row)));
            Value::Text(Some(s))
        }
        Field::Cluster => Value::Text(None),
        Field::User => Value::Text(user.map(|u| super::printable(u).into_owned())),
        Field::Partition => Value::Text(tree.partition(row).map(|p| super::printable(p).into_owned())),
        Field::Id => Value::Uint(Some(tree.ids()[row])),
        Field::RawShares if row == 0 => Value::Uint(None),
        Field::RawShares if tree.is_parent_shares(row) => Value::Text(Some("parent".into())),
        Field::RawShares => Value::Uint(Some(tree.raw_shares()[row])),
        Field::NormShares => Value::Double(fs.norm_shares[row]),
        Field::RawUsage => Value::Uint(Some(tree.raw_usage()[row] as u64)),
        Field::NormUsage => Value::Double(fs.norm_usage[row]),
        Field::EffectvUsage => Value::Double(fs.effective_usage[row]),
        Field::FairShare if user.is_none() => Value::Text(None),
        Field::FairShare => Value::Double(fs.fs_factor[row]),
        Field::LevelFs if tree.is_parent_shares(row) => Value::Text(None),
        Field::LevelFs => Value::Double(fs.level_fs[row]),
        Field::GrpTresMins => Value::Text(tree.grp_tres_mins(row).map(str::to_string)),
        // Decayed TRES-seconds and running jobs' TRES-seconds, in whole minutes.
        Field::GrpTresRaw => Value::Text(Some(tres_list(tree, |t, i| (t.usage(row, i) / 60.0) as u64))),
        Field::TresRunMins => Value::Text(Some(tres_list(tree, |t, i| t.run_secs(row, i) / 60))),
    }
}

/// A TRES list as sshare prints it: every TRES of the cluster as `name=value`, in Slurm's order.
/// A tree whose usage was not charged under a slurm.conf knows no cluster: `cpu=0`, as Slurm's own
/// test harness of a bare tree prints it.
fn tres_list(tree: &AssocTree, value: impl Fn(&AssocTres, usize) -> u64) -> String {
    let Some(t) = tree.tres() else { return "cpu=0".into() };
    let items: Vec<String> = t.names.iter().enumerate().map(|(i, name)| format!("{name}={}", value(t, i))).collect();
    items.join(",")
}

fn push_delimited(line: &mut String, s: &str, parsable: Parsable, last: bool) {
    line.push_str(s);
    if !(parsable == Parsable::NoEnding && last) {
        line.push('|');
    }
}

/// Right-justifies (`width > 0`) or left-justifies (`width < 0`) `s` in `|width|` columns.
fn pad(line: &mut String, s: &str, width: i32) {
    let w = width.unsigned_abs() as usize;
    let fill = w.saturating_sub(super::char_count(s));
    if width > 0 {
        super::push_spaces(line, fill);
        line.push_str(s);
    } else {
        line.push_str(s);
        super::push_spaces(line, fill);
    }
}

/// `print_fields_str`: blank for none, truncated with a trailing `+` when too long.
fn push_text(line: &mut String, s: Option<&str>, width: i32, parsable: Parsable, last: bool) {
    if parsable != Parsable::No {
        push_delimited(line, s.unwrap_or(""), parsable, last);
        return;
    }
    let w = width.unsigned_abs() as usize;
    match s {
        Some(s) if super::char_count(s) > w => {
            let mut t: String = s.chars().take(w.saturating_sub(1)).collect();
            t.push('+');
            pad(line, &t, width);
        }
        Some(s) => pad(line, s, width),
        None => pad(line, " ", width),
    }
    line.push(' ');
}

/// `print_fields_double`: `NaN` and Slurm's sentinels print blank.
fn push_double(line: &mut String, v: f64, width: i32, parsable: Parsable, last: bool) {
    // NO_VAL, INFINITE, and NO_VAL64 / INFINITE64 (which are both 2^64 as doubles).
    let blank = v.is_nan() || [NO_VAL, 4_294_967_295.0, u64::MAX as f64].contains(&v);
    if blank {
        return push_text(line, None, width, parsable, last);
    }
    if parsable != Parsable::No {
        return push_delimited(line, &c_fixed(v), parsable, last);
    }
    let abs = width.unsigned_abs() as usize;
    let fixed = c_fixed(v);
    let text = if fixed.len() <= abs {
        fixed
    } else {
        // print_fields: try `%*.*e` with precision = width, then shrink the precision by the overflow.
        let trial = c_exp(v, abs);
        let prec = if trial.len() > abs { abs.saturating_sub(trial.len() - abs) } else { abs };
        c_exp(v, prec)
    };
    pad(line, &text, width);
    line.push(' ');
}

/// C's `%f`.
pub(crate) fn c_fixed(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    format!("{v:.6}")
}

/// C's `%.{prec}e` (exponent with a sign and at least two digits).
pub(crate) fn c_exp(v: f64, prec: usize) -> String {
    if !v.is_finite() {
        return c_fixed(v);
    }
    let s = format!("{v:.prec$e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk that is always full.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from_raw_os_error(28))
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn write_errors_name_the_destination() {
        let tree = crate::io::default_tree().unwrap();
        let fs = crate::pass::compute(&tree, &crate::pass::Params::new(Algorithm::FairTree)).unwrap();
        let mut opts = SshareOptions::default();
        let err = write_sshare(&mut Full, &tree, &fs, &opts).unwrap_err().to_string();
        assert!(err.starts_with("<stdout>: No space left on device"), "{err}");
        opts.dest = Some("run/sshare.txt".into());
        let err = write_sshare(&mut Full, &tree, &fs, &opts).unwrap_err().to_string();
        assert!(err.starts_with("run/sshare.txt: No space left on device"), "{err}");
    }

    #[test]
    fn c_formats() {
        assert_eq!(c_fixed(0.0078125), "0.007812"); // exact tie: round half to even, as glibc
        assert_eq!(c_fixed(1.0 / 3.0), "0.333333");
        assert_eq!(c_fixed(f64::INFINITY), "inf");
        assert_eq!(c_exp(1e12, 5), "1.00000e+12");
        assert_eq!(c_exp(2.5e-7, 2), "2.50e-07");
    }

    #[test]
    fn too_wide_doubles_switch_to_exponent() {
        let mut s = String::new();
        push_double(&mut s, 1e12, 11, Parsable::No, false);
        assert_eq!(s, "1.00000e+12 ");
        s.clear();
        push_double(&mut s, NO_VAL, 10, Parsable::Ending, false);
        assert_eq!(s, "|");
    }

    #[test]
    fn long_strings_end_in_plus() {
        let mut s = String::new();
        push_text(&mut s, Some("averyveryverylongaccountname"), -20, Parsable::No, false);
        assert_eq!(s, "averyveryverylongac+ ");
    }

    #[test]
    fn field_prefixes_resolve_in_table_order() {
        let opts = SshareOptions { format: Some("a,eff,fairshare%12,norms".into()), ..Default::default() };
        let cols = columns(&opts, Algorithm::FairTree).unwrap();
        assert_eq!(
            cols.iter().map(|c| c.field).collect::<Vec<_>>(),
            [Field::Account, Field::EffectvUsage, Field::FairShare, Field::NormShares]
        );
        assert_eq!(cols[2].width, 12);
        let bad = SshareOptions { format: Some("bogus".into()), ..Default::default() };
        assert!(columns(&bad, Algorithm::FairTree).is_err());
    }
}
