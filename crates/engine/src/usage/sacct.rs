//! `sacct` job records: `sacct --parsable2` (`-P`, `|`-separated) and `--parsable` (`-p`, each line
//! ending in `|`), with sacct's header line.
//!
//! Columns come in any order and header names are case-insensitive; the XDMoD export
//! (`JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|GID|User|UID|Submit|Eligible|Start|End|
//! Elapsed|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|JobName`)
//! is the usual one. Required: `User`, `Account`, `Partition`, `Start`, `JobIDRaw` or `JobID`,
//! `End` or `Elapsed`, `AllocTRES`, `NCPUS` or `AllocCPUS` (with `NNodes` and `AllocGRES` if
//! present: Slurm 16 and 17 dumps often have these and no `AllocTRES`). `QOS` and `State` are
//! optional.
//!
//! - Job steps (a `.` in the job id: `123.batch`, `123.0`, `123.extern`) are skipped: usage is
//!   charged per allocation.
//! - The job id is `JobIDRaw` when that column exists (array and heterogeneous jobs print
//!   `123_4` and `123+1` under `JobID`), else the leading integer of `JobID`.
//! - Times are `YYYY-MM-DDTHH:MM:SS` (or epoch seconds); `Unknown`, `None` and empty are unset. A
//!   job whose `Start` is unset never ran and is passed with no start.
//! - An unset `End` means still running, unless `State` says the job is over (`COMPLETED`,
//!   `CANCELLED`, `FAILED`, ...): then, as when there is no `End` column, the end is
//!   `Start + Elapsed` (`[D-]HH:MM:SS` or `MM:SS`).
//! - `tres_alloc` is `AllocTRES`, or when that is empty or absent `cpu=<NCPUS>,node=<NNodes>`
//!   (`AllocCPUS`, which sacct documents as the same count, where `NCPUS` is absent; `NNodes` as
//!   sacct prints it, `1K` for 1024) and one `gres/<name>=<count>` per GRES of `AllocGRES`
//!   (`gpu:2`, or `gpu:tesla:2` with a type, the types of one name summed).
//! - When the last column is free text (`JobName`, `Comment`, ...), a `|` inside it does not count
//!   as a separator: sacct does not escape it there.

use std::path::Path;

use super::lines::{LineParser, read_header, read_lines};
use super::{JobRef, JobSink};
use crate::config::time::job_time_limit;
use fairshare_base::error::{Error, Result};
use fairshare_base::read::bars::field_ends;
use fairshare_base::read::fields::trim_field;
use fairshare_base::read::time::parse_time_field;

/// What the required-column messages list, in sacct's spelling.
const REQUIRED: &str =
    "User, Account, Partition, Start, JobIDRaw or JobID, End or Elapsed, AllocTRES, NCPUS or AllocCPUS";

/// Free-text columns a job's owner fills in: a `|` in them is printed as is.
const FREE_TEXT: [&str; 6] = ["jobname", "comment", "admincomment", "systemcomment", "submitline", "workdir"];

/// Column positions found in the header.
struct Columns {
    job_id_raw: Option<usize>,
    job_id: Option<usize>,
    user: usize,
    account: usize,
    partition: usize,
    qos: Option<usize>,
    start: usize,
    end: Option<usize>,
    elapsed: Option<usize>,
    state: Option<usize>,
    alloc_tres: Option<usize>,
    /// `NCPUS`, else `AllocCPUS` (the same count).
    ncpus: Option<usize>,
    nnodes: Option<usize>,
    timelimit: Option<usize>,
    alloc_gres: Option<usize>,
    /// Number of columns.
    count: usize,
    /// The last column may hold unescaped `|`.
    free_tail: bool,
}

impl Columns {
    fn from_header(names: &[String]) -> Result<Columns, String> {
        let find = |n: &str| names.iter().position(|h| h == n);
        let need = |n: &str, shown: &str| {
            find(n).ok_or_else(|| {
                format!(
                    "missing column {shown:?}: expected the header of `sacct -P` with {REQUIRED} (was --noheader used?)"
                )
            })
        };
        let (job_id_raw, job_id) = (find("jobidraw"), find("jobid"));
        if job_id_raw.is_none() && job_id.is_none() {
            need("jobid", "JobID")?;
        }
        let (end, elapsed) = (find("end"), find("elapsed"));
        if end.is_none() && elapsed.is_none() {
            need("end", "End")?;
        }
        let (alloc_tres, ncpus) = (find("alloctres"), find("ncpus").or(find("alloccpus")));
        if alloc_tres.is_none() && ncpus.is_none() {
            need("alloctres", "AllocTRES")?;
        }
        Ok(Columns {
            job_id_raw,
            job_id,
            user: need("user", "User")?,
            account: need("account", "Account")?,
            partition: need("partition", "Partition")?,
            qos: find("qos"),
            start: need("start", "Start")?,
            end,
            elapsed,
            state: find("state"),
            alloc_tres,
            ncpus,
            nnodes: find("nnodes"),
            timelimit: find("timelimit"),
            alloc_gres: find("allocgres"),
            count: names.len(),
            free_tail: names.last().is_some_and(|n| FREE_TEXT.contains(&n.as_str())),
        })
    }
}

/// Streams the job allocations of a `sacct -P` or `sacct -p` dump into `sink`, in file order.
///
/// # Errors
/// An unreadable file, an empty file, a header without a required column, a row with the wrong
/// number of fields, a job id that is not an integer, a bad time or elapsed time, a finished job
/// with neither `End` nor `Elapsed`, or a line that is not UTF-8, each naming its line (and
/// column); or the sink's own error.
///
/// # Example
/// ```
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("sacct.txt");
/// std::fs::write(&path, "JobID|User|Account|Partition|Start|End|AllocTRES\n\
///                        7_1|ann|phys|batch|2026-01-01T00:00:00|Unknown|cpu=4,node=1\n\
///                        7_1.batch||||2026-01-01T00:00:00|Unknown|cpu=4,node=1\n")?;
/// let mut jobs = Vec::new();
/// fairshare_engine::usage::sacct::read(&path, &mut |j| {
///     jobs.push((j.job_id, j.start, j.end));
///     Ok(())
/// })?;
/// assert_eq!(jobs, [(7, Some(1_767_225_600), None)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read(path: &Path, sink: &mut JobSink<'_>) -> Result<()> {
    let (lines, offset, first) = SacctLines::open(path)?;
    read_lines(path, &lines, offset, first, sink)
}

/// The column layout of one sacct file, parsing its data lines.
pub(crate) struct SacctLines {
    cols: Columns,
    /// `-p`: every line ends with a `|`.
    trailing: bool,
}

impl SacctLines {
    /// Reads the header of `path`: the layout, the byte offset after the header and the number of
    /// the first data line.
    ///
    /// # Errors
    /// An empty file or a header without the required columns.
    pub(crate) fn open(path: &Path) -> Result<(Self, u64, u64)> {
        let Some((header, offset, line_no)) = read_header(path)? else {
            return Err(Error::input(
                path,
                None,
                format!("empty file: expected the header of `sacct -P` with {REQUIRED}"),
            ));
        };
        let header = header.trim_start_matches('\u{feff}');
        // `-p` ends every line, the header included, with a `|`; `-P` never ends the header with one.
        let trailing = header.ends_with('|');
        let header = if trailing { &header[..header.len() - 1] } else { header };
        let names: Vec<String> = header.split('|').map(|h| h.trim().to_ascii_lowercase()).collect();
        let cols = Columns::from_header(&names).map_err(|m| Error::input(path, line_no, m))?;
        Ok((SacctLines { cols, trailing }, offset, line_no + 1))
    }
}

impl LineParser for SacctLines {
    /// The TRES string built from NCPUS/NNodes/AllocGRES, and the fields' ends.
    type Scratch = (String, Vec<usize>);

    fn parse(
        &self,
        path: &Path,
        line: &str,
        line_no: u64,
        (tres, ends): &mut Self::Scratch,
        sink: &mut JobSink<'_>,
    ) -> Result<()> {
        let cols = &self.cols;
        let err = |m: String| Error::input(path, line_no, m);
        let line = if self.trailing { line.strip_suffix('|').unwrap_or(line) } else { line };
        field_ends(line.as_bytes(), cols.free_tail.then_some(cols.count), ends);
        if ends.len() != cols.count {
            return Err(err(format!("expected {} fields, found {}", cols.count, ends.len())));
        }
        let row = Row { line, ends };
        if row.opt(cols.job_id).contains('.') || row.opt(cols.job_id_raw).contains('.') {
            return Ok(());
        }
        let job_id = parse_job_id(cols, &row).map_err(err)?;
        let start = time(row.get(cols.start), "Start").map_err(err)?;
        let end = match cols.end {
            Some(c) => time(row.get(c), "End").map_err(err)?,
            None => None,
        };
        let end = match (start, end) {
            (Some(s), None) => end_of_unended(cols, &row, s).map_err(err)?,
            _ => end,
        };
        let tres_alloc = match cols.alloc_tres.map(|c| row.get(c)) {
            Some(t) if !t.is_empty() => t,
            _ => {
                tres.clear();
                count_into(tres, "cpu", row.opt(cols.ncpus), "NCPUS").map_err(err)?;
                count_into(tres, "node", row.opt(cols.nnodes), "NNodes").map_err(err)?;
                gres_into(tres, row.opt(cols.alloc_gres)).map_err(err)?;
                tres.as_str()
            }
        };
        let time_limit = match cols.timelimit {
            Some(c) => job_time_limit(row.get(c)).map_err(|m| err(format!("Timelimit: {m}")))?,
            None => None,
        };
        sink(&JobRef {
            job_id,
            user: row.get(cols.user),
            account: row.get(cols.account),
            partition: row.get(cols.partition),
            qos: row.opt(cols.qos),
            start,
            end,
            tres_alloc,
            time_limit,
            line: line_no,
            skip: None,
            started_at_submit: false,
        })
    }
}

/// One data line and where its fields end ([`field_ends`]).
struct Row<'a> {
    line: &'a str,
    ends: &'a [usize],
}

impl<'a> Row<'a> {
    /// The trimmed field in column `c`.
    fn get(&self, c: usize) -> &'a str {
        let start = if c == 0 { 0 } else { self.ends[c - 1] + 1 };
        trim_field(&self.line[start..self.ends[c]])
    }

    /// The field of an optional column; empty when the column is absent.
    fn opt(&self, c: Option<usize>) -> &'a str {
        c.map_or("", |c| self.get(c))
    }
}

/// The allocation's id: `JobIDRaw` if that column exists, else the leading integer of `JobID`.
fn parse_job_id(cols: &Columns, row: &Row<'_>) -> Result<u64, String> {
    if let Some(c) = cols.job_id_raw {
        let raw = row.get(c);
        return raw.parse().map_err(|_| format!("JobIDRaw {raw:?} is not an integer"));
    }
    let Some(c) = cols.job_id else {
        return Err("no JobID column".into());
    };
    let id = row.get(c);
    // `123`, `123_4` (array task), `123_[1-5]` (pending array), `123+1` (het component).
    let digits = id.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &id[digits..];
    if digits == 0 || !(rest.is_empty() || rest.starts_with(['_', '+'])) {
        return Err(format!("JobID {id:?} is not an integer, an array task (123_4) or a het component (123+1)"));
    }
    id[..digits].parse().map_err(|_| format!("JobID {id:?} does not fit a 64-bit job id"))
}

/// Reads a time column; non-ASCII text is rejected here so no byte slicing can split a character.
fn time(text: &str, column: &str) -> Result<Option<i64>, String> {
    if !text.is_ascii() {
        return Err(format!("{column}: time {text:?} is neither epoch seconds nor YYYY-MM-DDTHH:MM:SS"));
    }
    parse_time_field(text).map_err(|m| format!("{column}: {m}"))
}

/// States after which a job holds no allocation (sacct prints e.g. `CANCELLED by 1000`).
pub(super) const FINISHED: [&str; 10] = [
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "REVOKED",
    "TIMEOUT",
];

/// The end of a started job whose `End` is unset or absent.
fn end_of_unended(cols: &Columns, row: &Row<'_>, start: i64) -> Result<Option<i64>, String> {
    let state = row.opt(cols.state).split_whitespace().next().unwrap_or("");
    let finished = FINISHED.iter().any(|s| s.eq_ignore_ascii_case(state));
    // An unknown state counts as finished only when there is no End column to have said otherwise.
    let finished = finished || (state.is_empty() && cols.end.is_none());
    if !finished {
        // RUNNING, SUSPENDED, COMPLETING, ...: Elapsed is only the time so far.
        return Ok(None);
    }
    let elapsed = match cols.elapsed.map(|c| row.get(c)) {
        Some("" | "Unknown" | "INVALID") | None => None,
        Some(e) => Some(parse_elapsed(e).map_err(|m| format!("Elapsed: {m}"))?),
    };
    match elapsed {
        Some(e) => start.checked_add(e).map(Some).ok_or_else(|| format!("Start + Elapsed overflows ({start} + {e})")),
        None => Err(format!(
            "State {state} but End is unset and Elapsed is {}: the job's end is unknown",
            if cols.elapsed.is_some() { "unset" } else { "absent" }
        )),
    }
}

/// Parses sacct's elapsed time, `[D-]HH:MM:SS` or `MM:SS`, into seconds.
///
/// # Errors
/// Any other text, or minutes or seconds past 59 (hours past 23 with days).
pub fn parse_elapsed(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let bad = || format!("elapsed time {t:?} is not [D-]HH:MM:SS or MM:SS");
    let num = |s: &str| -> Result<i64, String> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse::<i64>().map_err(|_| bad())
    };
    let (days, clock) = match t.split_once('-') {
        Some((d, c)) => (Some(num(d)?), c),
        None => (None, t),
    };
    let mut parts = clock.split(':');
    let (a, b, c) = (parts.next(), parts.next(), parts.next());
    if parts.next().is_some() {
        return Err(bad());
    }
    let (h, m, s) = match (a, b, c) {
        (Some(h), Some(m), Some(s)) => (num(h)?, num(m)?, num(s)?),
        // sacct drops the hours below one hour, but never alongside days.
        (Some(m), Some(s), None) if days.is_none() => (0, num(m)?, num(s)?),
        _ => return Err(bad()),
    };
    if m > 59 || s > 59 || (days.is_some() && h > 23) {
        return Err(bad());
    }
    days.unwrap_or(0)
        .checked_mul(86_400)
        .and_then(|d| h.checked_mul(3600)?.checked_add(d))
        .and_then(|v| v.checked_add(m * 60 + s))
        .ok_or_else(bad)
}

/// Appends `key=<count>` to a TRES string being built; an empty count is left out. A node count
/// may carry sacct's unit (`1K`, `1.50K`: sacct prints 1024 nodes and more so), which the TRES
/// string keeps.
fn count_into(tres: &mut String, key: &str, count: &str, column: &str) -> Result<(), String> {
    if count.is_empty() {
        return Ok(());
    }
    let number = match key {
        "node" => count.strip_suffix(['K', 'M']).unwrap_or(count),
        _ => count,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || (number.contains('.') && number == count) {
        return Err(format!("{column} {count:?} is not a non-negative integer"));
    }
    push_count(tres, key, count);
    Ok(())
}

/// Appends one `gres/<name>=<count>` per GRES name of sacct's `AllocGRES` (`gpu:2`,
/// `gpu:tesla:2,mic:1`; the types of one name summed) to a TRES string being built.
fn gres_into(tres: &mut String, alloc_gres: &str) -> Result<(), String> {
    let mut counts: Vec<(&str, u64)> = Vec::new();
    for item in alloc_gres.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        // Later Slurm appends the device indexes: `gpu:2(IDX:0-1)`.
        let item = item.split_once('(').map_or(item, |(head, _)| head);
        let bad = || format!("AllocGRES {alloc_gres:?}: {item:?} is not NAME:COUNT or NAME:TYPE:COUNT");
        let (name, count) = item.split_once(':').ok_or_else(bad)?;
        let count = count.rsplit(':').next().unwrap_or(count);
        if name.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let count: u64 = count.parse().map_err(|_| bad())?;
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, total)) => *total = total.checked_add(count).ok_or_else(bad)?,
            None => counts.push((name, count)),
        }
    }
    for (name, count) in counts {
        push_count(tres, &format!("gres/{name}"), &count.to_string());
    }
    Ok(())
}

/// Appends `key=count` to a TRES string being built.
fn push_count(tres: &mut String, key: &str, count: &str) {
    if !tres.is_empty() {
        tres.push(',');
    }
    tres.push_str(key);
    tres.push('=');
    tres.push_str(count);
}

#[cfg(test)]
mod tests {
    use super::*;

    type Row = (u64, String, String, String, String, Option<i64>, Option<i64>, String, u64);

    fn collect(text: &[u8]) -> Result<Vec<Row>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sacct.txt");
        std::fs::write(&path, text).unwrap();
        let mut out = Vec::new();
        read(&path, &mut |j| {
            out.push((
                j.job_id,
                j.user.to_string(),
                j.account.to_string(),
                j.partition.to_string(),
                j.qos.to_string(),
                j.start,
                j.end,
                j.tres_alloc.to_string(),
                j.line,
            ));
            Ok(())
        })?;
        Ok(out)
    }

    fn err(text: &str) -> String {
        collect(text.as_bytes()).unwrap_err().to_string()
    }

    const T0: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z

    const XDMOD_HEADER: &str = "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|GID|User|UID|Submit|Eligible|Start|\
                                End|Elapsed|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|\
                                NodeList|JobName";

    #[test]
    fn reads_an_xdmod_dump() {
        let text = format!(
            "{XDMOD_HEADER}\r\n\
             1001|1001|tiger|batch|normal|physics|phys|5001|alice|6001|2025-12-31T23:50:00|2025-12-31T23:50:00|\
             2026-01-01T00:00:00|2026-01-01T02:00:00|02:00:00|0:0|COMPLETED|2|64|64|256G|\
             billing=64,cpu=64,mem=256G,node=2|billing=64,cpu=64,mem=256G,node=2|1-00:00:00|tiger-[001-002]|sim\r\n\
             1001.batch|1001.batch|tiger|||||||||2026-01-01T00:00:00|2026-01-01T02:00:00|02:00:00|0:0|COMPLETED|\
             1|32|32|||cpu=32,mem=128G,node=1|||tiger-001|batch\r\n\
             1001.extern|1001.extern|tiger|||||||||2026-01-01T00:00:00|2026-01-01T02:00:00|02:00:00|0:0|COMPLETED|\
             2|64|64|||billing=64,cpu=64,mem=256G,node=2|||tiger-[001-002]|extern\r\n\
             \r\n\
             1002_3|1005|tiger|gpu|high|chem|chem|5002|bob|6002|2026-01-01T00:00:00|2026-01-01T00:00:00|\
             2026-01-01T01:00:00|2026-01-01T01:30:00|00:30:00|0:0|COMPLETED|1|8|8|32G|cpu=8,gres/gpu=2,mem=32G,node=1|\
             billing=8,cpu=8,gres/gpu=2,mem=32G,node=1|02:00:00|tiger-g01|array run\r\n\
             1003|1003|tiger|batch|normal|physics|phys|5001|alice|6001|2026-01-01T00:00:00|2026-01-01T00:00:00|\
             2026-01-01T03:00:00|Unknown|05:00:00|0:0|RUNNING|1|16|16|64G|cpu=16,mem=64G,node=1|\
             cpu=16,mem=64G,node=1|1-00:00:00|tiger-003|long\r\n\
             1004|1004|tiger|batch|normal|chem|chem|5002|bob|6002|2026-01-01T00:00:00|2026-01-01T00:00:00|\
             Unknown|Unknown|00:00:00|0:0|PENDING|1|4|4|16G|cpu=4,mem=16G,node=1||01:00:00|None assigned|waiting\r\n\
             1006+1|1007|tiger|batch||chem|chem|5002|bob|6002|2026-01-01T00:00:00|2026-01-01T00:00:00|\
             2026-01-01T00:00:05|2026-01-01T00:01:05|00:01:00|0:0|CANCELLED by 6002|1|2|2|8G|cpu=2,mem=8G,node=1|\
             cpu=2,mem=8G,node=1|00:10:00|tiger-004|a|b|c\r\n"
        );
        let got = collect(text.as_bytes()).unwrap();
        let row = |id, user: &str, account: &str, part: &str, qos: &str, start, end, tres: &str, line| {
            (id, user.into(), account.into(), part.into(), qos.into(), start, end, String::from(tres), line)
        };
        assert_eq!(
            got,
            [
                row(
                    1001,
                    "alice",
                    "physics",
                    "batch",
                    "normal",
                    Some(T0),
                    Some(T0 + 7200),
                    "billing=64,cpu=64,mem=256G,node=2",
                    2
                ),
                row(
                    1005,
                    "bob",
                    "chem",
                    "gpu",
                    "high",
                    Some(T0 + 3600),
                    Some(T0 + 5400),
                    "billing=8,cpu=8,gres/gpu=2,mem=32G,node=1",
                    6
                ),
                row(1003, "alice", "physics", "batch", "normal", Some(T0 + 10_800), None, "cpu=16,mem=64G,node=1", 7),
                // Never started: passed with no start, and its empty AllocTRES rebuilt from NCPUS/NNodes.
                row(1004, "bob", "chem", "batch", "normal", None, None, "cpu=4,node=1", 8),
                // A `|` inside the trailing JobName is not a separator.
                row(1007, "bob", "chem", "batch", "", Some(T0 + 5), Some(T0 + 65), "cpu=2,mem=8G,node=1", 9),
            ]
        );
    }

    #[test]
    fn reads_the_parsable_variant_with_trailing_bars() {
        // `sacct -p`, no JobIDRaw, no End, no AllocTRES: lower-case names in another order.
        let got = collect(
            b"jobid|user|account|partition|start|elapsed|state|ncpus|nnodes|\n\
              77_2|ann|bio|short|2026-01-01T00:00:00|1-02:03:04|COMPLETED|4|1|\n\
              77_2.0|ann|bio|short|2026-01-01T00:00:00|1-02:03:04|COMPLETED|4|1|\n\
              78|ann|bio|short|2026-01-01T00:00:00|10:00|RUNNING|2||\n\
              79|ann|bio|short|2026-01-01T00:00:00|00:10:00|TIMEOUT|||\n",
        )
        .unwrap();
        let brief: Vec<_> = got.iter().map(|r| (r.0, r.5, r.6, r.7.as_str(), r.8)).collect();
        assert_eq!(
            brief,
            [
                (77, Some(T0), Some(T0 + 93_784), "cpu=4,node=1", 2),
                (78, Some(T0), None, "cpu=2", 4),
                (79, Some(T0), Some(T0 + 600), "", 5),
            ]
        );
    }

    #[test]
    fn reads_a_slurm_17_dump_without_alloc_tres() {
        let path =
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/sacct/slurm-17.02-allocations.txt"));
        let mut got = Vec::new();
        read(path, &mut |j| {
            got.push((j.job_id, j.user.to_string(), j.partition.to_string(), j.start, j.end, j.tres_alloc.to_string()));
            Ok(())
        })
        .unwrap();
        const T: i64 = 1_488_326_400; // 2017-03-01T00:00:00Z
        let h = |hh: i64, mm: i64, ss: i64| Some(T + hh * 3600 + mm * 60 + ss);
        let row = |id, user: &str, part: &str, start, end, tres: &str| {
            (id, user.to_string(), part.to_string(), start, end, tres.to_string())
        };
        assert_eq!(
            got,
            [
                row(2001, "alice", "batch", h(8, 0, 5), h(10, 0, 5), "cpu=32,node=2"),
                row(2002, "bob", "gpu", h(9, 0, 0), h(10, 30, 0), "cpu=8,node=1,gres/gpu=2"),
                row(2003, "carol", "gpu", h(11, 0, 0), h(11, 30, 0), "cpu=16,node=2,gres/gpu=4"),
                row(2004, "alice", "batch", None, h(11, 40, 13), "cpu=0,node=1"),
                row(2005, "carol", "batch", h(12, 0, 1), h(12, 10, 1), "cpu=1,node=1"),
                row(2005, "carol", "batch", h(12, 0, 1), h(12, 15, 1), "cpu=1,node=1"),
                row(2007, "carol", "batch", h(13, 0, 0), h(13, 0, 20), "cpu=4,node=1"),
            ]
        );
    }

    #[test]
    fn builds_the_allocation_from_alloc_cpus_nnodes_and_alloc_gres() {
        const H: &str = "JobID|User|Account|Partition|Start|End|AllocCPUS|NNodes|AllocGRES\n";
        let tres = |fields: &str| collect(format!("{H}1|u|a|p|1|2|{fields}\n").as_bytes()).map(|r| r[0].7.clone());
        assert_eq!(tres("4|1|").unwrap(), "cpu=4,node=1");
        // sacct prints 1024 nodes and more with a unit; the TRES string keeps it.
        assert_eq!(tres("65536|1K|").unwrap(), "cpu=65536,node=1K");
        assert_eq!(tres("98304|1.50K|").unwrap(), "cpu=98304,node=1.50K");
        assert_eq!(tres("8|2|gpu:tesla:2,mic:1,gpu:k80:1").unwrap(), "cpu=8,node=2,gres/gpu=3,gres/mic=1");
        assert_eq!(tres("8|1|gpu:2(IDX:0-1)").unwrap(), "cpu=8,node=1,gres/gpu=2");
        // NCPUS wins over AllocCPUS when both are there (they are the same count).
        let both = "JobID|User|Account|Partition|Start|End|NCPUS|AllocCPUS\n1|u|a|p|1|2|4|4\n";
        assert_eq!(collect(both.as_bytes()).unwrap()[0].7, "cpu=4");
        for (bad, message) in [
            ("x|1|", ":2: NCPUS \"x\" is not a non-negative integer"),
            ("1K|1|", ":2: NCPUS \"1K\" is not a non-negative integer"),
            ("4|1.5|", ":2: NNodes \"1.5\" is not a non-negative integer"),
            ("4|1|gpu", ":2: AllocGRES \"gpu\": \"gpu\" is not NAME:COUNT or NAME:TYPE:COUNT"),
            ("4|1|gpu:two", ":2: AllocGRES \"gpu:two\": \"gpu:two\" is not NAME:COUNT or NAME:TYPE:COUNT"),
            ("4|1|:2", ":2: AllocGRES \":2\": \":2\" is not NAME:COUNT or NAME:TYPE:COUNT"),
        ] {
            let e = tres(bad).unwrap_err().to_string();
            assert!(e.ends_with(message), "{bad}: {e}");
        }
    }

    #[test]
    fn no_state_column_and_no_end_column_means_start_plus_elapsed() {
        let got =
            collect(b"JobID|User|Account|Partition|Start|Elapsed|AllocTRES\n5|u|a|p|2026-01-01T00:00:00|01:00|cpu=1\n")
                .unwrap();
        assert_eq!((got[0].5, got[0].6), (Some(T0), Some(T0 + 60)));
        // With an End column, Unknown and no State means still running.
        let got =
            collect(b"JobID|User|Account|Partition|Start|End|AllocTRES\n5|u|a|p|2026-01-01T00:00:00|Unknown|cpu=1\n")
                .unwrap();
        assert_eq!((got[0].5, got[0].6), (Some(T0), None));
    }

    #[test]
    fn parses_elapsed_times() {
        assert_eq!(parse_elapsed("00:00:00"), Ok(0));
        assert_eq!(parse_elapsed("02:00:00"), Ok(7200));
        assert_eq!(parse_elapsed("1-02:03:04"), Ok(93_784));
        assert_eq!(parse_elapsed("12-00:00:00"), Ok(12 * 86_400));
        assert_eq!(parse_elapsed("59:59"), Ok(3599));
        assert_eq!(parse_elapsed("100:00:00"), Ok(360_000));
        for bad in [
            "",
            "5",
            "1-05:00",
            "1-24:00:00",
            "00:60:00",
            "00:00:60",
            "a:00:00",
            "-01:00:00",
            "1:2:3:4",
            "+1:00",
            "١:00",
        ] {
            assert_eq!(parse_elapsed(bad), Err(format!("elapsed time {bad:?} is not [D-]HH:MM:SS or MM:SS")), "{bad}");
        }
        assert!(parse_elapsed("99999999999999999-00:00:00").is_err());
    }

    #[test]
    fn errors_name_the_line_and_column() {
        const H: &str = "JobID|JobIDRaw|User|Account|Partition|Start|End|State|AllocTRES\n";
        let e = err(&format!("{H}1|1|u|a|p|2026-01-01T25:00:00|Unknown|RUNNING|cpu=1\n"));
        assert!(
            e.ends_with(
                "sacct.txt:2: Start: time \"2026-01-01T25:00:00\" is neither epoch seconds nor a date and time \
                 (YYYY-MM-DD[THH:MM[:SS]], optionally with Z or an offset such as +01:00)"
            ),
            "{e}"
        );
        let e = err(&format!("{H}\n1|1|u|a|p|2026-01-01T00:00:00|2026-01-0é:00:00|COMPLETED|cpu=1\n"));
        assert!(
            e.ends_with(":3: End: time \"2026-01-0é:00:00\" is neither epoch seconds nor YYYY-MM-DDTHH:MM:SS"),
            "{e}"
        );
        let e = err(&format!("{H}1_2|x1|u|a|p|Unknown|Unknown|PENDING|\n"));
        assert!(e.ends_with(":2: JobIDRaw \"x1\" is not an integer"), "{e}");
        let e = err("JobID|User|Account|Partition|Start|End|AllocTRES\nabc|u|a|p|Unknown|Unknown|\n");
        assert!(
            e.ends_with(":2: JobID \"abc\" is not an integer, an array task (123_4) or a het component (123+1)"),
            "{e}"
        );
        let e = err("JobID|User|Account|Partition|Start|End|AllocTRES\n99999999999999999999|u|a|p|Unknown|Unknown|\n");
        assert!(e.contains(":2: JobID \"99999999999999999999\" does not fit"), "{e}");
        let e = err(&format!("{H}1|1|u|a|p|2026-01-01T00:00:00|Unknown|RUNNING\n"));
        assert!(e.ends_with(":2: expected 9 fields, found 8"), "{e}");
        let e = err(&format!("{H}1|1|u|a|p|2026-01-01T00:00:00|Unknown|RUNNING|cpu=1|x\n"));
        assert!(e.ends_with(":2: expected 9 fields, found 10"), "{e}");
        let e = err("\n\nJobID|User|Partition|Start|End|AllocTRES\n");
        assert!(e.contains("sacct.txt:3: missing column \"Account\""), "{e}");
        let e = err("User|Account|Partition|Start|End|AllocTRES\n");
        assert!(e.contains(":1: missing column \"JobID\""), "{e}");
        let e = err("JobID|User|Account|Partition|Start|AllocTRES\n");
        assert!(e.contains(":1: missing column \"End\""), "{e}");
        let e = err("JobID|User|Account|Partition|Start|End\n");
        assert!(e.contains(":1: missing column \"AllocTRES\"") && e.contains("AllocTRES, NCPUS or AllocCPUS"), "{e}");
        let e = err("JobID|User|Account|Partition|Start|End|NCPUS\n1|u|a|p|Unknown|Unknown|four\n");
        assert!(e.ends_with(":2: NCPUS \"four\" is not a non-negative integer"), "{e}");
        let e = err(&format!("{H}1|1|u|a|p|2026-01-01T00:00:00|Unknown|COMPLETED|cpu=1\n"));
        assert!(
            e.ends_with(":2: State COMPLETED but End is unset and Elapsed is absent: the job's end is unknown"),
            "{e}"
        );
        let e = err("JobID|User|Account|Partition|Start|Elapsed|AllocTRES\n1|u|a|p|2026-01-01T00:00:00|2h|cpu=1\n");
        assert!(e.ends_with(":2: Elapsed: elapsed time \"2h\" is not [D-]HH:MM:SS or MM:SS"), "{e}");
        let e = err("");
        assert!(e.contains("sacct.txt: empty file"), "{e}");
        let e = err("\n \r\n");
        assert!(e.contains("empty file"), "{e}");
        let e = collect(b"JobID|User|Account|Partition|Start|End|AllocTRES\n1|u\xff|a|p|Unknown|Unknown|\n")
            .unwrap_err()
            .to_string();
        assert!(e.ends_with(":2: not valid UTF-8 text"), "{e}");
    }

    #[test]
    fn the_sinks_error_stops_the_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sacct.txt");
        std::fs::write(&path, "JobID|User|Account|Partition|Start|End|AllocTRES\n1|u|a|p|1|2|\n2|u|a|p|1|2|\n")
            .unwrap();
        let mut seen = 0;
        let e = read(&path, &mut |j| {
            seen += 1;
            Err(Error::input("sink", j.line, "stop"))
        })
        .unwrap_err();
        assert_eq!((seen, e.to_string()), (1, "sink:2: stop".to_string()));
    }
}
