//! A Prometheus textfile (`run --prometheus FILE.prom`) for node_exporter's textfile collector:
//! the night's fair-share computed once, instead of an exporter querying slurmctld per scrape.
//!
//! Per association, gauges labelled `cluster`, `account`, `user` and `partition` (`user` and
//! `partition` empty where the association has none; an account's `account` is its own name;
//! `lineage` as well on the copies of an association a flux tree holds twice):
//!
//! | metric | what | samples |
//! |---|---|---|
//! | `fairshare_factor` | the fair-share factor (sshare's FairShare) | users |
//! | `fairshare_level` | Fair Tree's Level FS (flux: the sibling weight); `+Inf` for no usage | where set |
//! | `fairshare_usage_raw` | decayed billing-seconds (sshare's RawUsage, untruncated) | all |
//! | `fairshare_usage_effective` | sshare's EffectvUsage | all |
//! | `fairshare_shares_normalized` | sshare's NormShares | all |
//!
//! and the run's own: `fairshare_run_info` (algorithm), `fairshare_run_evaluation_timestamp_seconds`
//! (the run's `--now`), `fairshare_run_associations`, `fairshare_run_job_records{state}`,
//! `fairshare_run_pending_jobs` and `fairshare_run_stage_seconds{stage}`. Values the emulated system
//! leaves unset (an account's factor, a `parent` association's level, classic's levels) have no
//! sample. The file has no timestamps (the collector refuses files with them), and `+Inf` appears
//! only in `fairshare_level`, whose HELP says what it means; nothing is NaN.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use crate::pass::{FairShare, NO_VAL};
use crate::tree::AssocTree;
use crate::usage::Skipped;
use fairshare_base::error::{Error, Result};
use fairshare_base::named::Named;

/// What a run did, beside its tree and fair-share.
#[derive(Clone, Debug, Default)]
pub struct RunFacts {
    /// The cluster label of every association (`""` when unknown).
    pub cluster: String,
    /// The evaluation time, epoch seconds.
    pub now: i64,
    /// The job records (read, charged, skipped per reason), when usage was charged from them.
    pub records: Option<JobRecords>,
    /// Pending jobs scored (rows of sprio), when there was a queue.
    pub pending_jobs: Option<u64>,
    /// (stage, seconds), in order.
    pub stages: Vec<(String, f64)>,
}

/// The job records a run charged.
#[derive(Clone, Copy, Debug, Default)]
pub struct JobRecords {
    /// Records read.
    pub read: u64,
    /// Records charged to an association.
    pub charged: u64,
    /// Records skipped, per reason.
    pub skipped: Skipped,
}

/// Where the file goes, named in write errors.
#[derive(Clone, Debug, Default)]
pub struct PrometheusOptions {
    /// The destination (`None`: `<stdout>`).
    pub dest: Option<PathBuf>,
}

/// Writes the textfile for `tree`, its fair-share and what the run did.
///
/// # Errors
/// I/O errors from `out`, as [`Error::Io`] on `opts.dest`.
pub fn write_prometheus(
    out: &mut dyn Write,
    tree: &AssocTree,
    fs: &FairShare,
    facts: &RunFacts,
    opts: &PrometheusOptions,
) -> Result<()> {
    let text = textfile(tree, fs, facts);
    out.write_all(text.as_bytes()).map_err(|e| Error::io(super::dest_name(opts.dest.as_deref()), e))
}

/// One per-association metric: name, HELP text, and its value for a row (`None`: no sample).
type Column<'a> = (&'static str, &'static str, Box<dyn Fn(usize) -> Option<f64> + 'a>);

/// The whole file as text.
fn textfile(tree: &AssocTree, fs: &FairShare, facts: &RunFacts) -> String {
    let set = |v: f64| Some(v).filter(|v| !v.is_nan() && *v != NO_VAL);
    let columns: [Column<'_>; 5] = [
        (
            "fairshare_factor",
            "Fair-share factor of a user association in [0, 1] (sshare FairShare); accounts have none.",
            Box::new(|r| set(fs.fs_factor[r]).filter(|_| tree.is_user(r))),
        ),
        (
            "fairshare_level",
            "Fair Tree Level FS, shares over usage among siblings (flux: the sibling weight); +Inf means \
             the association has no usage; none for the root, parent-shares associations and classic.",
            Box::new(|r| set(fs.level_fs[r]).filter(|v| *v != f64::NEG_INFINITY)),
        ),
        (
            "fairshare_usage_raw",
            "Decayed usage in billing-seconds (sshare RawUsage, untruncated); accounts sum their users.",
            Box::new(|r| Some(tree.raw_usage()[r]).filter(|v| v.is_finite())),
        ),
        (
            "fairshare_usage_effective",
            "Effective usage (sshare EffectvUsage).",
            Box::new(|r| set(fs.effective_usage[r]).filter(|v| v.is_finite())),
        ),
        (
            "fairshare_shares_normalized",
            "Normalized shares (sshare NormShares).",
            Box::new(|r| set(fs.norm_shares[r]).filter(|v| v.is_finite())),
        ),
    ];
    let order = tree.preorder();
    let mut labels: Vec<String> = order.iter().map(|&r| association_labels(tree, r as usize, &facts.cluster)).collect();
    tell_copies_apart(tree, &order, &mut labels);
    let mut s = String::new();
    for (name, help, value) in &columns {
        header(&mut s, name, help);
        for (&r, l) in order.iter().zip(&labels) {
            if let Some(v) = value(r as usize) {
                let _ = writeln!(s, "{name}{{{l}}} {}", number(v));
            }
        }
    }
    run_metrics(&mut s, tree, fs, facts);
    s
}

/// The run's own metrics.
fn run_metrics(s: &mut String, tree: &AssocTree, fs: &FairShare, facts: &RunFacts) {
    header(s, "fairshare_run_info", "The fair-share algorithm of the run (always 1).");
    let _ = writeln!(
        s,
        "fairshare_run_info{{cluster=\"{}\",algorithm=\"{}\"}} 1",
        escape(&facts.cluster),
        fs.params.algorithm.name()
    );
    header(
        s,
        "fairshare_run_evaluation_timestamp_seconds",
        "The time the run computed usage and fair-share at, epoch seconds.",
    );
    let _ = writeln!(s, "fairshare_run_evaluation_timestamp_seconds {}", facts.now);
    header(s, "fairshare_run_associations", "Associations in the tree, the root included.");
    let _ = writeln!(s, "fairshare_run_associations {}", tree.len());
    if let Some(r) = facts.records {
        header(
            s,
            "fairshare_run_job_records",
            "Job records of the run by state: read, charged, or the reason they were skipped (not_started, \
             unmatched: no association, and an SWF trace's cancelled, unknown_submit, unknown_run_time, unknown_wait, \
             no_processors).",
        );
        let skipped = r.skipped.iter().map(|(reason, n)| (reason.name(), n));
        for (state, n) in [("read", r.read), ("charged", r.charged)].into_iter().chain(skipped) {
            let _ = writeln!(s, "fairshare_run_job_records{{state=\"{state}\"}} {n}");
        }
    }
    if let Some(n) = facts.pending_jobs {
        header(s, "fairshare_run_pending_jobs", "Pending (job, partition, QOS) rows scored.");
        let _ = writeln!(s, "fairshare_run_pending_jobs {n}");
    }
    if !facts.stages.is_empty() {
        header(s, "fairshare_run_stage_seconds", "Wall-clock seconds of each stage of the run.");
        for (stage, secs) in &facts.stages {
            let _ = writeln!(s, "fairshare_run_stage_seconds{{stage=\"{}\"}} {}", escape(stage), number(*secs));
        }
    }
}

fn header(s: &mut String, name: &str, help: &str) {
    let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge");
}

/// `cluster="..",account="..",user="..",partition=".."` of a row.
fn association_labels(tree: &AssocTree, row: usize, cluster: &str) -> String {
    format!(
        "cluster=\"{}\",account=\"{}\",user=\"{}\",partition=\"{}\"",
        escape(cluster),
        escape(tree.account(row)),
        escape(tree.user_name(row).unwrap_or("")),
        escape(tree.partition(row).unwrap_or(""))
    )
}

/// Adds `lineage="/root/.../account/"`, the accounts from the root down to the association's
/// (its own, for an account), to the labels of every association whose labels another has too:
/// a flux tree holds a bank its database lists under two parents twice, and two series with one
/// label set would make the collector refuse the file. Other series keep their four labels.
fn tell_copies_apart(tree: &AssocTree, order: &[u32], labels: &mut [String]) {
    let mut count: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    for l in labels.iter() {
        *count.entry(l.as_str()).or_default() += 1;
    }
    let repeated: Vec<usize> = (0..labels.len()).filter(|&i| count[labels[i].as_str()] > 1).collect();
    for i in repeated {
        let mut r = order[i] as usize;
        if tree.is_user(r) {
            r = tree.parents()[r] as usize;
        }
        let mut accounts = vec![tree.account(r)];
        while r != 0 {
            r = tree.parents()[r] as usize;
            accounts.push(tree.account(r));
        }
        let lineage: String = accounts.iter().rev().map(|a| format!("/{a}")).collect();
        let _ = write!(labels[i], ",lineage=\"{}/\"", escape(&lineage));
    }
}

/// A label value as the exposition format escapes it: backslash, double quote and newline.
fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A sample value: the shortest text that reads back to the same double; exponent notation for
/// the very large and very small (Rust's plain notation would spell them out in full); `+Inf`.
fn number(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let a = v.abs();
    if a != 0.0 && !(1e-5..1e15).contains(&a) { format!("{v:e}") } else { format!("{v}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::{Algorithm, Params, compute};
    use crate::usage::Skip;

    /// The exposition grammar for the lines this writer makes: `# HELP name text`, `# TYPE name
    /// gauge`, and `name{label="value",...} number` with no timestamp. Returns the samples.
    fn parse(text: &str) -> Vec<(String, Vec<(String, String)>, f64)> {
        let metric_name = |n: &str| {
            !n.is_empty()
                && !n.starts_with(|c: char| c.is_ascii_digit())
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        };
        let mut samples = Vec::new();
        let mut typed = std::collections::HashSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').expect("HELP has text");
                assert!(metric_name(name) && !help.is_empty(), "{line}");
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                assert!(metric_name(name) && kind == "gauge", "{line}");
                typed.insert(name.to_string());
                continue;
            }
            let (name, mut rest) = match line.find(['{', ' ']) {
                Some(i) => line.split_at(i),
                None => panic!("no value: {line}"),
            };
            assert!(metric_name(name) && typed.contains(name), "{line}");
            let mut labels = Vec::new();
            if let Some(body) = rest.strip_prefix('{') {
                (labels, rest) = parse_labels(body, line);
            }
            let value = rest.strip_prefix(' ').expect("one space before the value");
            assert!(!value.contains(' '), "a timestamp or junk: {line}");
            let v = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v.parse::<f64>().unwrap_or_else(|_| panic!("not a number: {line}")),
            };
            samples.push((name.to_string(), labels, v));
        }
        samples
    }

    /// `name="value"` pairs separated by `,`, up to `}`; the labels and the text after `}`.
    fn parse_labels<'a>(body: &'a str, line: &str) -> (Vec<(String, String)>, &'a str) {
        let mut labels = Vec::new();
        let mut pos = 0;
        loop {
            let eq = body[pos..].find('=').expect("label =") + pos;
            let label = &body[pos..eq];
            assert!(label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{line}");
            assert_eq!(&body[eq + 1..eq + 2], "\"", "{line}");
            let mut value = String::new();
            let mut it = body[eq + 2..].char_indices();
            let end = loop {
                match it.next().expect("closing quote") {
                    (i, '"') => break eq + 2 + i,
                    (_, '\\') => match it.next().unwrap().1 {
                        'n' => value.push('\n'),
                        c @ ('\\' | '"') => value.push(c),
                        c => panic!("bad escape \\{c}: {line}"),
                    },
                    (_, c) => value.push(c),
                }
            };
            labels.push((label.to_string(), value));
            match &body[end + 1..end + 2] {
                "," => pos = end + 2,
                "}" => return (labels, &body[end + 2..]),
                other => panic!("after a label value: {other:?} in {line}"),
            }
        }
    }

    /// One record never started, one matches no association.
    fn skipped() -> Skipped {
        let mut skipped = Skipped::default();
        skipped[Skip::NotStarted] = 1;
        skipped[Skip::Unmatched] = 1;
        skipped
    }

    fn facts() -> RunFacts {
        RunFacts {
            cluster: "odyssey".into(),
            now: 1_767_830_400,
            records: Some(JobRecords { read: 10, charged: 8, skipped: skipped() }),
            pending_jobs: Some(3),
            stages: vec![("usage".into(), 0.5), ("fairshare".into(), 1e-7)],
        }
    }

    #[test]
    fn every_line_follows_the_exposition_grammar() {
        let tree = crate::io::default_tree().unwrap();
        for algo in [Algorithm::FairTree, Algorithm::Classic] {
            let fs = compute(&tree, &Params::new(algo)).unwrap();
            let text = textfile(&tree, &fs, &facts());
            let samples = parse(&text);
            let factors = samples.iter().filter(|s| s.0 == "fairshare_factor").count();
            assert_eq!(factors, tree.user_count());
            assert_eq!(samples.iter().filter(|s| s.0 == "fairshare_usage_raw").count(), tree.len());
            for (name, labels, v) in &samples {
                assert!(!v.is_nan(), "{name}");
                assert!(v.is_finite() || name == "fairshare_level", "{name} {v}");
                if name.starts_with("fairshare_run") {
                    continue;
                }
                let keys: Vec<&str> = labels.iter().map(|(k, _)| k.as_str()).collect();
                assert_eq!(keys, ["cluster", "account", "user", "partition"]);
            }
            let levels = samples.iter().filter(|s| s.0 == "fairshare_level").count();
            assert_eq!(levels > 0, algo == Algorithm::FairTree);
            assert!(samples.iter().any(|s| s.0 == "fairshare_run_stage_seconds" && s.2 == 1e-7));
            assert!(text.contains("fairshare_run_job_records{state=\"unmatched\"} 1\n"));
            assert!(text.contains("fairshare_run_job_records{state=\"unknown_wait\"} 0\n"));
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        let line = format!("m{{a=\"{}\",b=\"x\"}} 1", escape("lab \"x\"\\\ny"));
        let text = format!("# HELP m h\n# TYPE m gauge\n{line}\n");
        let samples = parse(&text);
        assert_eq!(samples[0].1[0].1, "lab \"x\"\\\ny");
        assert_eq!(samples[0].1[1].1, "x");
    }

    #[test]
    fn numbers_read_back() {
        for v in [0.0, 1.0, 0.1, 1e-7, 2.5e20, 123456.789, f64::MIN_POSITIVE] {
            assert_eq!(number(v).parse::<f64>().unwrap(), v);
        }
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(1e-7), "1e-7");
    }
}
