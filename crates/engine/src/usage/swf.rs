//! Standard Workload Format (SWF 2.2) traces, as the Parallel Workloads Archive publishes them.
//!
//! One job per line, 18 whitespace-separated fields (more are ignored), `-1` for unknown; lines
//! starting with `;` are header comments (`; Key: value`). Times are seconds from the log's start,
//! anchored by the `; UnixStartTime:` header (0 without it). Only the fields the engine needs are
//! read and checked: job number (1), submit (2), wait (3) and run (4) times, allocated (5) and
//! requested (8) processors, status (11), user (12), group (13) and partition (16).
//!
//! The numeric ids become names: user `u<uid>`, account `g<gid>` (group → user layout) or
//! `p<partition>` (partition → user layout), partition `p<partition>`; an unknown id gives
//! `u_unknown`, `g_unknown` or `p_unknown`. A job starts at `UnixStartTime + submit + wait` and
//! ends `run` seconds later, and is billed `cpu=<allocated processors>` (the requested count when
//! the allocated one is unknown).
//!
//! Lines with status 2, 3 or 4 record the partial executions of a checkpointed or swapped job,
//! which the job's summary line (status 0, 1 or 5, same job number) already covers: they are
//! not records of their own, so the job is not charged twice.
//!
//! A job whose log leaves out what charging needs is passed with the reason it charges nothing
//! ([`Skip`]), the first that applies: cancelled (status 5) with a run time of 0 or unknown, an
//! unknown submit or run time, no processors (unknown or 0). An unknown wait is what
//! [`UnknownWait`] says: the job started at its submit time, or it is skipped too. Logs without
//! wait times are common (every job of LLNL-Atlas has `-1`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::Path;

use super::{JobRef, JobSink, Skip};
use crate::tree::{AssocRecord, Shares, TreeInput};
use fairshare_base::error::{Error, Result};
use fairshare_base::named::{Choice, Named};

/// How an SWF trace's ids become an association tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwfTree {
    /// root → group (`g<gid>`) → user (`u<uid>`).
    GroupUser,
    /// root → partition (`p<n>`) → user (`u<uid>`).
    PartitionUser,
}

/// What a job whose wait time is unknown (`-1`) charges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownWait {
    /// The job started when it was submitted (its wait taken as zero): it is charged its run
    /// time from its submit time.
    Zero,
    /// The job is skipped and counted ([`Skip::UnknownWait`]).
    Skip,
}

/// The layouts' names, as `--swf-tree` and site files spell them.
impl Named for SwfTree {
    const CHOICES: &'static [Choice<Self>] = &[
        Choice::new(SwfTree::GroupUser, "group-user", "root → group → user"),
        Choice::new(SwfTree::PartitionUser, "partition-user", "root → partition → user"),
    ];
}

/// The choices' names, as `--swf-unknown-wait` and the output metadata spell them.
impl Named for UnknownWait {
    const CHOICES: &'static [Choice<Self>] = &[
        Choice::new(
            UnknownWait::Zero,
            "zero",
            "The job started at its submit time: its run time is charged from there",
        ),
        Choice::new(UnknownWait::Skip, "skip", "The job is skipped (and counted)"),
    ];
}

/// How an SWF trace is read: the tree its ids make, and what an unknown wait charges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwfOptions {
    /// The association tree the ids make.
    pub tree: SwfTree,
    /// What a job whose wait is unknown charges.
    pub unknown_wait: UnknownWait,
}

impl SwfOptions {
    /// Group → user, an unknown wait taken as zero (for tables of formats, which need a constant).
    pub const DEFAULT: SwfOptions = SwfOptions { tree: SwfTree::GroupUser, unknown_wait: UnknownWait::Zero };
}

impl Default for SwfOptions {
    fn default() -> Self {
        SwfOptions::DEFAULT
    }
}

/// The 18 SWF fields, for error messages (field `i + 1`).
const FIELDS: [&str; 18] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job",
    "think time",
];

/// Status codes of partial-execution lines (continued, last and completed, last and failed).
const PARTIAL: [i64; 3] = [2, 3, 4];

/// The status of a cancelled job.
const CANCELLED: i64 = 5;

/// Streams the jobs of the SWF trace at `path` into `sink`, in file order, named per
/// `options.tree`; a job that cannot be charged is passed with its reason ([`JobRef::skip`]).
///
/// # Errors
/// An unreadable file, a line that is not UTF-8, a job line with fewer than 18 fields, a read field
/// that is not a number or is negative other than `-1`, a bad or late `UnixStartTime` header, or a
/// time that overflows, each naming its line (and field); an empty file; or the sink's own error.
///
/// # Example
/// ```
/// use fairshare_engine::usage::swf::{SwfOptions, read};
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("trace.swf");
/// std::fs::write(&path, "; UnixStartTime: 1000\n1 0 10 100 4 -1 -1 4 -1 -1 1 7 3 -1 -1 2 -1 -1\n")?;
/// let mut jobs = Vec::new();
/// read(&path, SwfOptions::default(), &mut |j| {
///     jobs.push((j.user.to_string(), j.account.to_string(), j.partition.to_string(), j.start, j.end));
///     Ok(())
/// })?;
/// assert_eq!(jobs, [("u7".into(), "g3".into(), "p2".into(), Some(1010), Some(1110))]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read(path: &Path, options: SwfOptions, sink: &mut JobSink<'_>) -> Result<()> {
    let mut reader = std::io::BufReader::with_capacity(1 << 20, fairshare_base::read::source::open(path)?);
    let mut buf = String::new();
    let mut line_no = 0u64;
    let mut anchor = 0i64;
    let mut seen_job = false;
    let mut seen_line = false;
    let (mut user, mut account, mut partition, mut tres) = (String::new(), String::new(), String::new(), String::new());
    while next_line(&mut reader, &mut buf, &mut line_no, path)? {
        seen_line = true;
        let err = |m: String| Error::input(path, line_no, m);
        let line = buf.trim_start();
        if let Some(comment) = line.strip_prefix(';') {
            if let Some((key, value)) = comment.split_once(':')
                && key.trim().eq_ignore_ascii_case("UnixStartTime")
            {
                if seen_job {
                    // Jobs already passed were anchored at the old value.
                    return Err(err("UnixStartTime after the first job: the header must come first".into()));
                }
                let v = value.trim();
                anchor =
                    v.parse().map_err(|_| err(format!("UnixStartTime {v:?} is not an integer (epoch seconds)")))?;
            }
            continue;
        }
        seen_job = true;
        let mut f = [""; 18];
        let mut n = 0;
        for word in line.split_ascii_whitespace().take(18) {
            f[n] = word;
            n += 1;
        }
        if n < 18 {
            return Err(err(format!("expected 18 fields, found {n}")));
        }
        let job_id = f[0].parse::<u64>().map_err(|_| err(bad_field(0, f[0], "a non-negative integer")))?;
        let (submit, wait, run) = (time(&f, 1).map_err(err)?, time(&f, 2).map_err(err)?, time(&f, 3).map_err(err)?);
        let (alloc, req) = (count(&f, 4).map_err(err)?, count(&f, 7).map_err(err)?);
        let status = count(&f, 10).map_err(err)?;
        let (uid, gid, part) = (count(&f, 11).map_err(err)?, count(&f, 12).map_err(err)?, count(&f, 15).map_err(err)?);
        if status.is_some_and(|s| PARTIAL.contains(&s)) {
            continue;
        }
        let procs = alloc.or(req).filter(|&p| p > 0);
        let skip = if status == Some(CANCELLED) && run.is_none_or(|r| r == 0) {
            Some(Skip::Cancelled)
        } else if submit.is_none() {
            Some(Skip::UnknownSubmit)
        } else if run.is_none() {
            Some(Skip::UnknownRunTime)
        } else if wait.is_none() && options.unknown_wait == UnknownWait::Skip {
            Some(Skip::UnknownWait)
        } else if procs.is_none() {
            Some(Skip::NoProcessors)
        } else {
            None
        };
        let (start, end) = match (skip, submit, run) {
            (None, Some(s), Some(r)) => {
                let w = wait.unwrap_or(0);
                let overflow = || err(format!("UnixStartTime {anchor} + submit {s} + wait {w} + run {r} overflows"));
                let start = anchor.checked_add(s).and_then(|t| t.checked_add(w)).ok_or_else(overflow)?;
                (Some(start), Some(start.checked_add(r).ok_or_else(overflow)?))
            }
            _ => (None, None),
        };
        name_into(&mut user, 'u', uid);
        name_into(&mut partition, 'p', part);
        match options.tree {
            SwfTree::GroupUser => name_into(&mut account, 'g', gid),
            SwfTree::PartitionUser => name_into(&mut account, 'p', part),
        }
        tres.clear();
        let _ = write!(tres, "cpu={}", procs.unwrap_or(0));
        sink(&JobRef {
            job_id,
            user: &user,
            account: &account,
            partition: &partition,
            qos: "",
            start,
            end,
            tres_alloc: &tres,
            time_limit: None,
            line: line_no,
            skip,
            started_at_submit: start.is_some() && wait.is_none(),
        })?;
    }
    if !seen_line {
        return Err(Error::input(path, None, "empty file: expected an SWF trace (`;` header lines, then jobs)"));
    }
    Ok(())
}

/// Builds the association tree of the SWF trace at `path`: `root` (id 1), one account per group
/// (or partition) under it, one user association per (account, user) seen, all with 1 share and
/// no usage. Names are those [`read`] gives the jobs. Ids follow the account names, then the
/// (account, user) pairs, in byte order; each record's line is where it was first seen. Jobs
/// that cannot be charged name their associations too.
///
/// # Errors
/// As [`read`].
pub fn tree(path: &Path, layout: SwfTree) -> Result<TreeInput> {
    // account -> (first line, user -> first line)
    let mut accounts: BTreeMap<String, (u64, BTreeMap<String, u64>)> = BTreeMap::new();
    read(path, SwfOptions { tree: layout, ..SwfOptions::default() }, &mut |j| {
        // Look up by &str first so only a new name allocates.
        if !accounts.contains_key(j.account) {
            accounts.insert(j.account.to_string(), (j.line, BTreeMap::new()));
        }
        if let Some((_, users)) = accounts.get_mut(j.account)
            && !users.contains_key(j.user)
        {
            users.insert(j.user.to_string(), j.line);
        }
        Ok(())
    })?;
    let record = |id, parent_id, account: &str, user: Option<&String>, line| AssocRecord {
        id,
        parent_id,
        account: account.to_string(),
        user: user.cloned(),
        partition: None,
        shares: Shares::Value(1),
        usage: 0.0,
        priority: None,
        grp_tres_mins: None,
        line,
    };
    let mut records = Vec::with_capacity(1 + accounts.len() + accounts.values().map(|a| a.1.len()).sum::<usize>());
    records.push(record(1, None, "root", None, 1));
    let mut next_id = 2u64;
    let mut account_ids = Vec::with_capacity(accounts.len());
    for (name, (line, _)) in &accounts {
        records.push(record(next_id, Some(1), name, None, *line));
        account_ids.push(next_id);
        next_id += 1;
    }
    for ((name, (_, users)), parent) in accounts.iter().zip(account_ids) {
        for (user, line) in users {
            records.push(record(next_id, Some(parent), name, Some(user), *line));
            next_id += 1;
        }
    }
    Ok(TreeInput::slurm(path, records))
}

/// Reads the next non-blank line into `buf` without its line break; `false` at the end.
fn next_line(reader: &mut impl BufRead, buf: &mut String, line_no: &mut u64, path: &Path) -> Result<bool> {
    loop {
        buf.clear();
        *line_no += 1;
        match fairshare_base::read::source::read_line(reader, buf, path, *line_no)? {
            0 => return Ok(false),
            _ if buf.trim().is_empty() => continue,
            _ => {
                let len = buf.trim_end_matches(['\r', '\n']).len();
                buf.truncate(len);
                return Ok(true);
            }
        }
    }
}

/// The message for field `i` (0-based) holding `text` where `want` was expected.
fn bad_field(i: usize, text: &str, want: &str) -> String {
    format!("field {} ({}) {text:?} is not {want}", i + 1, FIELDS[i])
}

/// The message for field `i` holding a negative value other than `-1`.
fn negative_field(i: usize, text: &str) -> String {
    format!("field {} ({}) is {text}: expected -1 (unknown) or a non-negative value", i + 1, FIELDS[i])
}

/// A count field: a non-negative integer, or `None` for `-1`.
fn count(f: &[&str; 18], i: usize) -> Result<Option<i64>, String> {
    let v: i64 = f[i].parse().map_err(|_| bad_field(i, f[i], "an integer"))?;
    match v {
        -1 => Ok(None),
        v if v < 0 => Err(negative_field(i, f[i])),
        v => Ok(Some(v)),
    }
}

/// A time field in seconds, or `None` for `-1`. SWF allows fractional seconds; they are rounded.
fn time(f: &[&str; 18], i: usize) -> Result<Option<i64>, String> {
    if let Ok(v) = f[i].parse::<i64>() {
        return match v {
            -1 => Ok(None),
            v if v < 0 => Err(negative_field(i, f[i])),
            v => Ok(Some(v)),
        };
    }
    let v: f64 = f[i].parse().map_err(|_| bad_field(i, f[i], "a number of seconds"))?;
    if v == -1.0 {
        Ok(None)
    } else if v < 0.0 {
        Err(negative_field(i, f[i]))
    } else if v < 1e15 {
        Ok(Some(v.round() as i64))
    } else {
        // Also NaN and infinity: no trace spans more than 30 million years.
        Err(bad_field(i, f[i], "a number of seconds below 10^15"))
    }
}

/// Writes `<prefix><id>`, or `<prefix>_unknown` for an unknown id, into a reused name buffer.
fn name_into(buf: &mut String, prefix: char, id: Option<i64>) {
    buf.clear();
    buf.push(prefix);
    match id {
        Some(id) => {
            let _ = write!(buf, "{id}");
        }
        None => buf.push_str("_unknown"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{AccountUsage, SiblingOrder};

    type Row = (u64, String, String, String, Option<i64>, Option<i64>, String, u64, Option<Skip>, bool);

    fn write(dir: &tempfile::TempDir, text: &[u8]) -> std::path::PathBuf {
        let path = dir.path().join("trace.swf");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn collect(path: &Path, options: SwfOptions) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        read(path, options, &mut |j| {
            assert_eq!(j.qos, "");
            out.push((
                j.job_id,
                j.user.to_string(),
                j.account.to_string(),
                j.partition.to_string(),
                j.start,
                j.end,
                j.tres_alloc.to_string(),
                j.line,
                j.skip,
                j.started_at_submit,
            ));
            Ok(())
        })?;
        Ok(out)
    }

    fn err(text: &[u8]) -> String {
        let dir = tempfile::tempdir().unwrap();
        collect(&write(&dir, text), SwfOptions::default()).unwrap_err().to_string()
    }

    /// Tree records as (id, parent, account, user, line).
    fn tree_rows(input: &TreeInput) -> Vec<(u64, Option<u64>, &str, Option<&str>, u64)> {
        input.records.iter().map(|r| (r.id, r.parent_id, r.account.as_str(), r.user.as_deref(), r.line)).collect()
    }

    const TRACE: &str = "; Version: 2.2\n\
        ; Computer: test\n\
        ;              http://example.org/continuation-line\n\
        ; UnixStartTime:\t1000000\n\
        ;\n\
        \n\
        1 0 10 100 4 -1 -1 4 200 -1 1 7 3 -1 -1 1 -1 -1\n\
        2\t5\t-1\t50\t-1\t-1\t-1\t8\t60\t-1\t0\t8\t3\t-1\t-1\t2\t-1\t-1\r\n\
        3  20   5 30 -1 1.5 -1 -1 100 -1 5 7 -1 2 1 -1 -1 -1 extra\n\
        4 30 2.4 10.6 2 -1 -1 2 -1 -1 1 -1 4 -1 -1 2 -1 -1\n\
        4 30 2 4 2 -1 -1 2 -1 -1 2 -1 4 -1 -1 2 -1 -1\n\
        4 36 1 6 2 -1 -1 2 -1 -1 3 -1 4 -1 -1 2 -1 -1\n\
        5 40 0 0 1 -1 -1 1 -1 -1 1 7 3 -1 -1 2 -1 -1\n\
        6 50 5 0 4 -1 -1 4 -1 -1 5 7 3 -1 -1 2 -1 -1\n\
        7 51 -1 -1 -1 -1 -1 4 -1 -1 5 7 3 -1 -1 2 -1 -1\n\
        8 -1 5 10 4 -1 -1 4 -1 -1 1 7 3 -1 -1 2 -1 -1\n\
        9 60 -1 -1 4 -1 -1 4 -1 -1 0 7 3 -1 -1 2 -1 -1\n\
        10 70 5 10 0 -1 -1 4 -1 -1 1 7 3 -1 -1 2 -1 -1\n";

    #[test]
    fn reads_records_in_both_layouts() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, TRACE.as_bytes());
        let row = |id, user: &str, account: &str, part: &str, start, end, tres: &str, line| {
            (id, user.into(), account.into(), part.into(), start, end, String::from(tres), line, None, false)
        };
        let skipped = |id, tres: &str, line, reason| {
            (id, "u7".into(), "g3".into(), "p2".into(), None, None, String::from(tres), line, Some(reason), false)
        };
        const T: i64 = 1_000_000;
        let mut rows = vec![
            row(1, "u7", "g3", "p1", Some(T + 10), Some(T + 110), "cpu=4", 7),
            // Unknown wait: started at its submit time; unknown allocation: the requested processors.
            (2, "u8".into(), "g3".into(), "p2".into(), Some(T + 5), Some(T + 55), "cpu=8".into(), 8, None, true),
            // Unknown group, partition and processors (a job that ran, then was cancelled); a 19th column.
            (
                3,
                "u7".into(),
                "g_unknown".into(),
                "p_unknown".into(),
                None,
                None,
                "cpu=0".into(),
                9,
                Some(Skip::NoProcessors),
                false,
            ),
            // Fractional times rounded; its partial-execution lines (status 2, 3) are not records.
            row(4, "u_unknown", "g4", "p2", Some(T + 32), Some(T + 43), "cpu=2", 10),
            row(5, "u7", "g3", "p2", Some(T + 40), Some(T + 40), "cpu=1", 13),
            // Cancelled with no run time (0, unknown): never ran, whatever else is unknown.
            skipped(6, "cpu=4", 14, Skip::Cancelled),
            skipped(7, "cpu=4", 15, Skip::Cancelled),
            skipped(8, "cpu=4", 16, Skip::UnknownSubmit),
            // An unknown run time comes before an unknown wait.
            skipped(9, "cpu=4", 17, Skip::UnknownRunTime),
            // 0 allocated processors: the requested ones do not stand in.
            skipped(10, "cpu=0", 18, Skip::NoProcessors),
        ];
        assert_eq!(collect(&path, SwfOptions::default()).unwrap(), rows);
        let accounts: Vec<_> = collect(&path, SwfOptions { tree: SwfTree::PartitionUser, ..SwfOptions::default() })
            .unwrap()
            .into_iter()
            .map(|r| (r.2, r.3))
            .collect();
        let p = |a: &str| (a.to_string(), a.to_string());
        assert_eq!(accounts[..5], [p("p1"), p("p2"), p("p_unknown"), p("p2"), p("p2")]);
        // Skipping unknown waits changes job 2 only.
        rows[1] = skipped(2, "cpu=8", 8, Skip::UnknownWait);
        (rows[1].1, rows[1].2) = ("u8".into(), "g3".into());
        let skip = SwfOptions { unknown_wait: UnknownWait::Skip, ..SwfOptions::default() };
        assert_eq!(collect(&path, skip).unwrap(), rows);
    }

    #[test]
    fn builds_the_tree_in_both_layouts() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, TRACE.as_bytes());
        let t = tree(&path, SwfTree::GroupUser).unwrap();
        assert_eq!((t.sibling_order, t.account_usage), (SiblingOrder::Lineage, AccountUsage::SumOfUsers));
        assert!(t.records.iter().all(|r| r.shares == Shares::Value(1) && r.usage == 0.0 && r.partition.is_none()));
        assert_eq!(
            tree_rows(&t),
            [
                (1, None, "root", None, 1),
                (2, Some(1), "g3", None, 7),
                (3, Some(1), "g4", None, 10),
                (4, Some(1), "g_unknown", None, 9),
                (5, Some(2), "g3", Some("u7"), 7),
                (6, Some(2), "g3", Some("u8"), 8),
                (7, Some(3), "g4", Some("u_unknown"), 10),
                (8, Some(4), "g_unknown", Some("u7"), 9),
            ]
        );
        let t = tree(&path, SwfTree::PartitionUser).unwrap();
        assert_eq!(
            tree_rows(&t),
            [
                (1, None, "root", None, 1),
                (2, Some(1), "p1", None, 7),
                (3, Some(1), "p2", None, 8),
                (4, Some(1), "p_unknown", None, 9),
                (5, Some(2), "p1", Some("u7"), 7),
                (6, Some(3), "p2", Some("u7"), 13),
                (7, Some(3), "p2", Some("u8"), 8),
                (8, Some(3), "p2", Some("u_unknown"), 10),
                (9, Some(4), "p_unknown", Some("u7"), 9),
            ]
        );
        // The tree the charger resolves these records against builds.
        crate::tree::AssocTree::build(t).unwrap();
    }

    #[test]
    fn errors_name_the_line_and_field() {
        let e = err(b"; UnixStartTime: 0\n1 0 0 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1\n");
        assert!(e.ends_with("trace.swf:2: expected 18 fields, found 17"), "{e}");
        let e = err(b"\n1 0 0 1O 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n");
        assert!(e.ends_with(":2: field 4 (run time) \"1O\" is not a number of seconds"), "{e}");
        let e = err(b"1 0 0 10 x -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n");
        assert!(e.ends_with(":1: field 5 (allocated processors) \"x\" is not an integer"), "{e}");
        let e = err(b"1 0 -5 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n");
        assert!(e.ends_with(":1: field 3 (wait time) is -5: expected -1 (unknown) or a non-negative value"), "{e}");
        let e = err(b"1 0 0 10 1 -1 -1 1 -1 -1 1 -2 1 -1 -1 -1 -1 -1\n");
        assert!(e.ends_with(":1: field 12 (user id) is -2: expected -1 (unknown) or a non-negative value"), "{e}");
        let e = err(b"1 0 0 -0.5 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n");
        assert!(e.ends_with(":1: field 4 (run time) is -0.5: expected -1 (unknown) or a non-negative value"), "{e}");
        let e = err(b"1 0 0 inf 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n");
        assert!(e.ends_with(":1: field 4 (run time) \"inf\" is not a number of seconds below 10^15"), "{e}");
        let e = err(b"-1 0 0 1 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n");
        assert!(e.ends_with(":1: field 1 (job number) \"-1\" is not a non-negative integer"), "{e}");
        let e = err(b"; UnixStartTime: yesterday\n");
        assert!(e.ends_with(":1: UnixStartTime \"yesterday\" is not an integer (epoch seconds)"), "{e}");
        let e = err(b"1 0 0 1 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n; UnixStartTime: 5\n");
        assert!(e.ends_with(":2: UnixStartTime after the first job: the header must come first"), "{e}");
        let e = err(b"; UnixStartTime: 9223372036854775807\n1 1 0 1 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n");
        assert!(e.contains(":2: UnixStartTime 9223372036854775807 + submit 1 + wait 0 + run 1 overflows"), "{e}");
        let e = err(b"; Note: caf\xe9\n");
        assert!(e.ends_with(":1: not valid UTF-8 text"), "{e}");
    }

    #[test]
    fn an_empty_trace_is_a_lone_root() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, b"; Version: 2.2\n");
        assert!(collect(&path, SwfOptions::default()).unwrap().is_empty());
        assert_eq!(tree_rows(&tree(&path, SwfTree::GroupUser).unwrap()), [(1, None, "root", None, 1)]);
    }

    #[test]
    fn reads_the_kth_sp2_fixture() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/swf/kth-sp2-slice.swf"));
        let mut count = 0;
        let mut first = None;
        read(path, SwfOptions::default(), &mut |j| {
            count += 1;
            first.get_or_insert((j.job_id, j.start, j.end, j.tres_alloc.to_string(), j.line));
            Ok(())
        })
        .unwrap();
        let start = 843_480_031 + 964_980;
        assert_eq!(count, 200);
        assert_eq!(first, Some((1, Some(start), Some(start + 97_225), "cpu=56".to_string(), 20)));
        let t = tree(path, SwfTree::GroupUser).unwrap();
        let groups = t.records.iter().filter(|r| r.user.is_none() && r.parent_id.is_some()).count();
        assert_eq!(groups, 32);
        crate::tree::AssocTree::build(t).unwrap();
    }
}
