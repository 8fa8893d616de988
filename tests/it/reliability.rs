//! Reliability: every reader rejects malformed input with the file, the line or row and the
//! problem (never a panic, never an output file); numeric extremes give the values the reference
//! systems' rules give, computed here independently; outputs are byte-identical for any thread
//! count; and a run killed with SIGKILL at any point leaves the previous run directory intact.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{ArrayRef, AsArray, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::UInt32Type;
use data_gen::{TreeSpec, generate_tree, write_assoc_csv};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::{fairshare, fairshare_within_a_minute, stdout_of, write_file};

// ---------------------------------------------------------------------------------------------
// 1. Bad inputs, reader by reader.
// ---------------------------------------------------------------------------------------------

/// One bad input: its bytes under `file`, where the message must point (`file:line: ` or
/// `file: `) and what it must say. `warning` cases succeed with a warning instead.
struct Case {
    file: &'static str,
    bytes: Vec<u8>,
    at: &'static str,
    want: &'static str,
    warning: bool,
}

fn err(file: &'static str, bytes: impl Into<Vec<u8>>, at: &'static str, want: &'static str) -> Case {
    Case { file, bytes: bytes.into(), at, want, warning: false }
}

fn warn(file: &'static str, bytes: impl Into<Vec<u8>>, at: &'static str, want: &'static str) -> Case {
    Case { file, bytes: bytes.into(), at, want, warning: true }
}

/// `head`, then two bytes that are not UTF-8, then `tail`.
fn non_utf8(head: &str, tail: &str) -> Vec<u8> {
    [head.as_bytes(), b"\xff\xfe", tail.as_bytes()].concat()
}

/// A reader and the command that exercises it. In `args`, `{in}` is the case's file, `{out}` the
/// output the command would write, and `{dir}` the directory holding `support` files.
struct Reader {
    name: &'static str,
    support: Vec<(&'static str, Vec<u8>)>,
    args: &'static [&'static str],
    /// The output's name (a file, or a run directory).
    out: &'static str,
    cases: Vec<Case>,
}

/// Runs every case of `reader` in a fresh directory and checks the contract.
fn check(reader: Reader) {
    for case in &reader.cases {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in &reader.support {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        let input = dir.path().join(case.file);
        std::fs::write(&input, &case.bytes).unwrap();
        let before = listing(dir.path());
        let out = dir.path().join(reader.out);
        let args: Vec<String> = reader
            .args
            .iter()
            .map(|a| {
                a.replace("{in}", input.to_str().unwrap())
                    .replace("{out}", out.to_str().unwrap())
                    .replace("{dir}", dir.path().to_str().unwrap())
            })
            .collect();
        let res = fairshare_within_a_minute(&args);
        let stderr = String::from_utf8_lossy(&res.stderr);
        let shown = String::from_utf8_lossy(&case.bytes);
        let what = format!("{} case {:?} ({shown:?})", reader.name, case.want);
        assert!(!stderr.contains("panicked"), "{what}: panic instead of an error:\n{stderr}");
        assert!(stderr.contains(case.at), "{what}: no location `{}` in:\n{stderr}", case.at);
        assert!(stderr.contains(case.want), "{what}: no `{}` in:\n{stderr}", case.want);
        if case.warning {
            assert!(res.status.success(), "{what}: should only warn:\n{stderr}");
            assert!(stderr.contains("fairshare: warning: "), "{what}: no warning:\n{stderr}");
            assert!(out.exists(), "{what}: no output after a warning");
        } else {
            // 1 is the error exit; a panic exits 101 and a stack overflow aborts.
            assert_eq!(res.status.code(), Some(1), "{what}: accepted or crashed:\n{stderr}");
            assert!(stderr.starts_with("fairshare: error: "), "{what}:\n{stderr}");
            assert!(!out.exists(), "{what}: an output was written for bad input");
            assert_eq!(listing(dir.path()), before, "{what}: files left behind");
            assert!(res.stdout.is_empty(), "{what}: partial output on stdout");
        }
    }
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

const ASSOC_HEADER: &str = "id,parent_id,account,user,shares,usage\n";
/// root → a → u.
const GOOD_TREE: &str = "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,a,,1,0\n3,2,a,u,1,5\n";
const NODES: &str = "NodeName=n[1-4] CPUs=4 RealMemory=1000\nPartitionName=p Nodes=ALL Default=YES\n";
const GOOD_CONF: &str = "PriorityWeightFairshare=1000\nPriorityWeightTRES=CPU=1\n\
                         NodeName=n[1-4] CPUs=4 RealMemory=1000\nPartitionName=p Nodes=ALL Default=YES\n";
const PENDING_HEADER: &str =
    "job_id,user,account,partition,qos,submit_time,accrue_time,min_nodes,cpus,time_limit,nice,site_factor,tres_req\n";
const PENDING_JOB: &str = "1,u,a,p,,0,0,1,1,10,0,0,cpu=1\n";

fn pending_csv(rows: &str) -> String {
    format!("{PENDING_HEADER}{PENDING_JOB}{rows}")
}

/// The support files of the scoring commands: tree, slurm.conf, pending queue.
fn scoring_support() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("tree.csv", GOOD_TREE.into()),
        ("slurm.conf", GOOD_CONF.into()),
        ("pending.csv", pending_csv("").into_bytes()),
    ]
}

#[test]
fn assoc_csv_rejects_bad_input() {
    let rows = |rest: &str| format!("{ASSOC_HEADER}1,,root,,1,0\n2,1,a,,1,0\n{rest}");
    check(Reader {
        name: "assoc-csv",
        support: vec![],
        args: &["compute", "--tree-format", "assoc-csv", "--tree", "{in}", "--out", "{out}"],
        out: "out.parquet",
        cases: vec![
            err("bad.csv", non_utf8(&format!("{ASSOC_HEADER}1,,root,,1,0\n2,1,a,"), ",1,0\n"), "bad.csv:3: ", "UTF-8"),
            err("bad.csv", rows("3,2,a,\"u"), "bad.csv:4: ", "unterminated quoted field"),
            err("bad.csv", rows("3,2,a"), "bad.csv:4: ", "expected 6 fields, found 3"),
            err("bad.csv", rows("3,2,a,u,1,inf\n"), "bad.csv:4: ", "usage \"inf\" is not a finite non-negative"),
            err("bad.csv", rows("3,2,a,u,1,-1e3\n"), "bad.csv:4: ", "usage \"-1e3\""),
            err("bad.csv", rows("3,2,a,u,1,1e400\n"), "bad.csv:4: ", "usage \"1e400\""),
            // Slurm keeps shares in 32 bits, u32::MAX reserved (sacctmgr-dump says the same).
            err(
                "bad.csv",
                rows("3,2,a,u,4294967295,0\n"),
                "bad.csv:4: ",
                "shares 4294967295 is too large: expected a whole number in 0..=4294967294",
            ),
            err("bad.csv", rows("3,2,a,u,18446744073709551616,0\n"), "bad.csv:4: ", "is too large"),
            err("bad.csv", ASSOC_HEADER, "bad.csv: ", "no associations"),
            err("bad.csv", format!("{ASSOC_HEADER}1,,root,u,1,0\n"), "bad.csv:2: ", "the root must be an account"),
            err("bad.csv", format!("{ASSOC_HEADER}1,,root,,1,0\n2,2,a,,1,0\n"), "bad.csv:3: ", "cycle"),
            err("bad.csv", format!("{ASSOC_HEADER}1,2,a,,1,0\n2,1,b,,1,0\n"), "bad.csv: ", "no root association"),
            err("bad.csv", rows("3,x,a,u,1,0\n"), "bad.csv:4: ", "parent_id \"x\""),
            err(
                "bad.csv",
                "id,parent_id,account,user,shares,usage,priority\n1,,root,,1,0,\n2,1,a,,1,0,4294967296\n",
                "bad.csv:3: ",
                "priority \"4294967296\" is not a 32-bit unsigned integer",
            ),
        ],
    });
}

#[test]
fn sshare_dump_rejects_bad_input() {
    const H: &str = "Account|User|RawShares|RawUsage\n";
    let rows = |rest: &str| format!("{H}root|||0\n a||1|0\n{rest}");
    check(Reader {
        name: "sshare",
        support: vec![],
        args: &["compute", "--tree-format", "sshare", "--tree", "{in}", "--out", "{out}"],
        out: "out.parquet",
        cases: vec![
            err("bad.txt", "", "bad.txt: ", "empty file"),
            err("bad.txt", non_utf8(&format!("{H}root|||0\n a||1|0\n  a|u"), "|1|0\n"), "bad.txt:4: ", "UTF-8"),
            err("bad.txt", rows("  a|u|1"), "bad.txt:4: ", "expected 4 fields, found 3"),
            err("bad.txt", rows("  a|u|1|nan\n"), "bad.txt:4: ", "usage \"nan\""),
            err("bad.txt", rows("  a|u|1|inf\n"), "bad.txt:4: ", "usage \"inf\""),
            err("bad.txt", rows("  a|u|-1|0\n"), "bad.txt:4: ", "shares \"-1\""),
            err("bad.txt", rows("  a|u|4294967295|0\n"), "bad.txt:4: ", "shares 4294967295 is too large"),
            err("bad.txt", rows("  a|u||0\n"), "bad.txt:4: ", "empty RawShares"),
            err(
                "bad.txt",
                rows("  a|u|1|0\n  a|u|1|0\n"),
                "bad.txt:5: ",
                "duplicate association: user u in account a (first on line 4)",
            ),
            err("bad.txt", rows(" a||1|0\n"), "bad.txt:4: ", "duplicate association: account a (first on line 3)"),
            err("bad.txt", format!("{H}root|||0\nother|||0\n"), "bad.txt:3: ", "a second row at depth 0"),
            err("bad.txt", format!("{H}root|u||0\n"), "bad.txt:2: ", "the first row must be the root account"),
            err("bad.txt", format!("{H} a||1|0\n"), "bad.txt:2: ", "the first row must be the root account"),
            err("bad.txt", "Account|User|RawShares\nroot||\n", "bad.txt:1: ", "missing column \"RawUsage\""),
        ],
    });
}

#[test]
fn flux_csv_rejects_bad_input() {
    const ROOT: &str = "0,root,%^+_nouser,1,0\n1,a,%^+_nouser,1,0\n";
    let rows = |rest: &str| format!("{ROOT}{rest}");
    check(Reader {
        name: "flux-csv",
        support: vec![],
        args: &["compute", "--algo", "flux", "--tree-format", "flux-csv", "--tree", "{in}", "--out", "{out}"],
        out: "out.parquet",
        cases: vec![
            err("bad.csv", "", "bad.csv: ", "empty file"),
            err("bad.csv", non_utf8(&format!("{ROOT}2,a,u"), ",1,0\n"), "bad.csv:3: ", "UTF-8"),
            err("bad.csv", rows("2,a,u,1"), "bad.csv:3: ", "expected 5 fields"),
            err("bad.csv", rows("2,a,u,1,inf\n"), "bad.csv:3: ", "usage \"inf\""),
            err("bad.csv", rows("2,a,u,1,NaN\n"), "bad.csv:3: ", "usage \"NaN\""),
            err("bad.csv", rows("2,a,u,-1,0\n"), "bad.csv:3: ", "shares \"-1\" is not a non-negative integer"),
            // flux-accounting's shares are uint64: 2^64 - 1 is the largest.
            err("bad.csv", rows("2,a,u,18446744073709551616,0\n"), "bad.csv:3: ", "shares \"18446744073709551616\""),
            err("bad.csv", rows("2,a,u,1,0\n2,a,u,1,0\n"), "bad.csv:4: ", "duplicate association: user u in account a"),
            err("bad.csv", "0,root,%^+_nouser,1,0\n0,r2,%^+_nouser,1,0\n", "bad.csv:2: ", "a single root bank"),
            err("bad.csv", rows("2,b,u,1,0\n"), "bad.csv:3: ", "names bank \"b\" but sits under bank \"a\""),
            err("bad.csv", "x,root,%^+_nouser,1,0\n", "bad.csv:1: ", "level \"x\""),
        ],
    });
}

/// A flux-accounting database with `sql` run after the bare tables, as bytes.
fn flux_db_bytes(sql: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE bank_table (bank_id INTEGER PRIMARY KEY AUTOINCREMENT, bank TEXT NOT NULL,
             active INTEGER DEFAULT 1, parent_bank TEXT DEFAULT '', shares INTEGER DEFAULT 1);
         CREATE TABLE association_table (username TEXT NOT NULL, bank TEXT NOT NULL,
             active INTEGER DEFAULT 1, shares INTEGER DEFAULT 1, job_usage REAL DEFAULT 0.0);",
    )
    .unwrap();
    conn.execute_batch(sql).unwrap();
    drop(conn);
    std::fs::read(&path).unwrap()
}

#[test]
fn flux_db_rejects_bad_input() {
    const BANKS: &str = "INSERT INTO bank_table (bank, parent_bank) VALUES ('root', ''), ('a', 'root');";
    let with_user = |shares: &str, usage: &str| {
        flux_db_bytes(&format!(
            "{BANKS} INSERT INTO association_table (username, bank, shares, job_usage) VALUES ('u', 'a', {shares}, {usage});"
        ))
    };
    let good = with_user("1", "5");
    check(Reader {
        name: "flux-db",
        support: vec![],
        args: &["compute", "--algo", "flux", "--tree-format", "flux-db", "--tree", "{in}", "--out", "{out}"],
        out: "out.parquet",
        cases: vec![
            err("bad.db", "", "bad.db: ", "no such table: bank_table"),
            err("bad.db", good[..good.len() / 2].to_vec(), "bad.db: ", "flux-accounting database: "),
            err(
                "bad.db",
                flux_db_bytes(
                    "INSERT INTO bank_table (bank, parent_bank, shares) VALUES ('root', '', 1), ('a', 'root', -2);",
                ),
                "bad.db: ",
                "bank_table: bank \"a\" has negative shares -2",
            ),
            err("bad.db", with_user("-1", "5"), "bad.db: ", "association_table: u in a has negative shares -1"),
            err("bad.db", with_user("1", "-5"), "bad.db: ", "association_table: u in a has job_usage -5"),
            err("bad.db", with_user("1", "9e999"), "bad.db: ", "association_table: u in a has job_usage inf"),
            err("bad.db", with_user("1", "'lots'"), "bad.db: ", "association_table: a user of bank \"a\""),
            // SQLite stores NaN as NULL.
            err("bad.db", with_user("1", "NULL"), "bad.db: ", "association_table: a user of bank \"a\""),
            err("bad.db", with_user("'many'", "1"), "bad.db: ", "association_table: a user of bank \"a\""),
            err(
                "bad.db",
                flux_db_bytes("INSERT INTO bank_table (bank, parent_bank) VALUES ('a', 'b'), ('b', 'a');"),
                "bad.db: ",
                "no root bank",
            ),
            // A cycle through the root: walking it never ended before. (A bank listed twice, or
            // under two parents, is read under each, as flux-accounting reads it.)
            err(
                "bad.db",
                flux_db_bytes(&format!("{BANKS} INSERT INTO bank_table (bank, parent_bank) VALUES ('root', 'a');")),
                "bad.db: ",
                "bank_table: parent_bank cycle \"root\" → \"a\" → \"root\" under the root bank",
            ),
        ],
    });
}

#[test]
fn sacctmgr_dump_rejects_bad_input() {
    const HEAD: &str = "Cluster - 'c'\nAccount - 'a'\nParent - 'a'\n";
    let rows = |rest: &str| format!("{HEAD}{rest}");
    check(Reader {
        name: "sacctmgr-dump",
        support: vec![],
        args: &["compute", "--tree-format", "sacctmgr-dump", "--tree", "{in}", "--out", "{out}"],
        out: "out.parquet",
        cases: vec![
            err("bad.cfg", "", "bad.cfg: ", "no Cluster, Parent, Account or User line"),
            err("bad.cfg", non_utf8(&format!("{HEAD}User - 'u"), "'\n"), "bad.cfg:4: ", "UTF-8"),
            err("bad.cfg", rows("User - 'u"), "bad.cfg:4: ", "unterminated quote"),
            err(
                "bad.cfg",
                rows("User - 'u':Fairshare=4294967295\n"),
                "bad.cfg:4: ",
                "Fairshare=4294967295 is too large: expected a whole number in 0..=4294967294",
            ),
            err("bad.cfg", rows("User - 'u':Fairshare=-1\n"), "bad.cfg:4: ", "Fairshare=-1 is negative"),
            err("bad.cfg", rows("User - 'u':Fairshare=nan\n"), "bad.cfg:4: ", "Fairshare=\"nan\" is not a number"),
            err("bad.cfg", "Cluster - 'c'\nParent - 'b'\nUser - 'u'\n", "bad.cfg:2: ", "not declared before"),
            err("bad.cfg", "Account - 'a'\nAccount - 'a'\n", "bad.cfg:2: ", "account 'a' declared twice"),
            err("bad.cfg", rows("User - 'u'\nUser - 'u'\n"), "bad.cfg:5: ", "user 'u' in account 'a' declared twice"),
            err("bad.cfg", "Cluster - 'c'\nCluster - 'd'\n", "bad.cfg:2: ", "a second Cluster line"),
            err("bad.cfg", rows("QOS - 'normal'\n"), "bad.cfg:4: ", "unknown line kind \"QOS\""),
        ],
    });
}

#[test]
fn slurm_conf_rejects_bad_input() {
    let conf = |head: &str| format!("{head}\n{NODES}");
    check(Reader {
        name: "slurm.conf",
        support: vec![("tree.csv", GOOD_TREE.into()), ("pending.csv", pending_csv("").into_bytes())],
        args: &[
            "score",
            "--tree",
            "{dir}/tree.csv",
            "--pending",
            "{dir}/pending.csv",
            "--slurm-conf",
            "{in}",
            "--now",
            "100",
            "--out",
            "{out}",
        ],
        out: "out.parquet",
        cases: vec![
            err("bad.conf", non_utf8(&format!("{NODES}ClusterName="), "\n"), "bad.conf:3: ", "UTF-8"),
            err(
                "bad.conf",
                conf("PriorityWeightTRES=CPU=1,Bogus=2"),
                "bad.conf:1: ",
                "\"Bogus\" is not a TRES Slurm tracks",
            ),
            err(
                "bad.conf",
                "NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1 TRESBillingWeights=CPU=1,Foo=2\n",
                "bad.conf:2: ",
                "\"Foo\" is not a TRES Slurm tracks",
            ),
            err("bad.conf", conf("PriorityWeightTRES=Mem=1X"), "bad.conf:1: ", "invalid unit 'X'"),
            err(
                "bad.conf",
                "NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1 TRESBillingWeights=CPU=1,Mem=0.25Z\n",
                "bad.conf:2: ",
                "invalid unit 'Z'",
            ),
            err(
                "bad.conf",
                conf("PriorityWeightTRES=CPU=nan"),
                "bad.conf:1: ",
                "TRES weight \"CPU=nan\": NaN is not a finite number",
            ),
            err(
                "bad.conf",
                "NodeName=n1 CPUs=4\nPartitionName=p Nodes=n1 TRESBillingWeights=CPU=inf\n",
                "bad.conf:2: ",
                "TRES weight \"CPU=inf\": inf is not a finite number",
            ),
            err("bad.conf", "NodeName=node[1- CPUs=4\n", "bad.conf:1: ", "host list \"node[1-\": '[' without ']'"),
            err("bad.conf", "NodeName=node[5-2] CPUs=4\n", "bad.conf:1: ", "range \"5-2\" ends before it starts"),
            err(
                "bad.conf",
                "NodeName=n[1-4]\nPartitionName=p Nodes=n[1-\n",
                "bad.conf:2: ",
                "PartitionName=p Nodes=n[1-",
            ),
            err("bad.conf", conf("PriorityWeightFairshare=4294967296"), "bad.conf:1: ", "is greater than 4294967295"),
            err("bad.conf", conf("PriorityWeightAge=-1"), "bad.conf:1: ", "is less than zero"),
            err("bad.conf", format!("{NODES}NodeName=n9 CPUs=4 RealMem"), "bad.conf:3: ", "cannot parse \"RealMem\""),
            err("bad.conf", "NodeName=n[1-2]\nNodeName=n2\n", "bad.conf:2: ", "node n2 is defined twice"),
            // An empty slurm.conf is Slurm's defaults: the queue's partition is then unknown.
            err("bad.conf", "", "pending.csv:2: ", "partition \"p\" is not defined in slurm.conf"),
        ],
    });
}

#[test]
fn sacct_text_rejects_bad_input() {
    const H: &str = "JobID|User|Account|Partition|Start|End|AllocTRES\n";
    const J: &str = "1|u|a|p|2026-01-01T00:00:00|2026-01-01T01:00:00|cpu=1\n";
    const BOGUS: &str = "2|u|a|p|2026-01-01T00:00:00|2026-01-01T01:00:00|cpu=1,bogus=4\n";
    const NOT_AN_ID: &str = "x|u|a|p|2026-01-01T00:00:00||cpu=1\n";
    let rows = |rest: &str| format!("{H}{J}{rest}");
    let job = |tres: &str| rows(&format!("2|u|a|p|2026-01-01T00:00:00|2026-01-01T01:00:00|{tres}\n"));
    check(Reader {
        name: "sacct",
        support: vec![("tree.csv", GOOD_TREE.into())],
        args: &[
            "usage",
            "--tree",
            "{dir}/tree.csv",
            "--jobs-format",
            "sacct",
            "--jobs",
            "{in}",
            "--now",
            "1767300000",
            "--out",
            "{out}",
        ],
        out: "out.parquet",
        cases: vec![
            err("bad.sacct", "", "bad.sacct: ", "empty file"),
            err(
                "bad.sacct",
                non_utf8(&format!("{H}{J}2|u"), "|a|p|2026-01-01T00:00:00||cpu=1\n"),
                "bad.sacct:3: ",
                "UTF-8",
            ),
            err(
                "bad.sacct",
                rows("2|u|a|p|2026-01-01T00:00:00|2026-01-01T01"),
                "bad.sacct:3: ",
                "expected 7 fields, found 6",
            ),
            err(
                "bad.sacct",
                rows("x|u|a|p|2026-01-01T00:00:00||cpu=1\n"),
                "bad.sacct:3: ",
                "JobID \"x\" is not an integer",
            ),
            err(
                "bad.sacct",
                rows("2|u|a|p|2026-13-01T00:00:00||cpu=1\n"),
                "bad.sacct:3: ",
                "Start: time \"2026-13-01T00:00:00\"",
            ),
            err("bad.sacct", job("cpu=nan"), "bad.sacct:3: ", "TRES count \"cpu=nan\""),
            err("bad.sacct", job("cpu=inf"), "bad.sacct:3: ", "TRES count \"cpu=inf\""),
            err("bad.sacct", job("cpu=-4"), "bad.sacct:3: ", "TRES count \"cpu=-4\""),
            err("bad.sacct", job("cpu=1,bogus=4"), "bad.sacct:3: ", "\"bogus\" is not a TRES Slurm tracks"),
            err("bad.sacct", job("mem=4Q"), "bad.sacct:3: ", "unknown unit 'Q'"),
            err("bad.sacct", job("cpu=99999999999999999999"), "bad.sacct:3: ", "count too large"),
            err("bad.sacct", "User|Account\n", "bad.sacct:1: ", "missing column \"JobID\""),
            // Records are charged a batch at a time: a record's error still comes before a later
            // line's, within the first batch or past it.
            err("bad.sacct", rows(&format!("{BOGUS}{NOT_AN_ID}")), "bad.sacct:3: ", "\"bogus\" is not a TRES"),
            err(
                "bad.sacct",
                rows(&format!("{}{BOGUS}{NOT_AN_ID}", J.repeat(300))),
                "bad.sacct:303: ",
                "\"bogus\" is not a TRES",
            ),
            // A job of an association the tree lacks charges nothing (as slurmdbd drops it).
            warn("bad.sacct", job("cpu=1").replace("2|u|a|", "2|u|zz|"), "bad.sacct", "match no association"),
        ],
    });
}

#[test]
fn swf_rejects_bad_input() {
    const L: &str = "1 0 100 200 4 -1 -1 4 2100 -1 1 1 1 -1 -1 -1 -1 -1\n";
    let job = |fields: &str| format!("{L}{fields}\n");
    check(Reader {
        name: "swf",
        support: vec![],
        args: &["usage", "--jobs-format", "swf", "--jobs", "{in}", "--now", "100000", "--out", "{out}"],
        out: "out.parquet",
        cases: vec![
            err("bad.swf", "", "bad.swf: ", "empty file"),
            err(
                "bad.swf",
                job("2 0 100 200 4 -1 -1 4 2100 -1 1 1 1 -1 -1"),
                "bad.swf:2: ",
                "expected 18 fields, found 15",
            ),
            err(
                "bad.swf",
                job("2 0 100 nan 4 -1 -1 4 2100 -1 1 1 1 -1 -1 -1 -1 -1"),
                "bad.swf:2: ",
                "field 4 (run time) \"nan\"",
            ),
            err(
                "bad.swf",
                job("2 0 100 inf 4 -1 -1 4 2100 -1 1 1 1 -1 -1 -1 -1 -1"),
                "bad.swf:2: ",
                "field 4 (run time) \"inf\"",
            ),
            err(
                "bad.swf",
                job("2 0 100 -5 4 -1 -1 4 2100 -1 1 1 1 -1 -1 -1 -1 -1"),
                "bad.swf:2: ",
                "field 4 (run time) is -5",
            ),
            err(
                "bad.swf",
                job("2 0 100 5 x -1 -1 4 2100 -1 1 1 1 -1 -1 -1 -1 -1"),
                "bad.swf:2: ",
                "field 5 (allocated processors) \"x\"",
            ),
            err(
                "bad.swf",
                job("2 0 100 5 4.5 -1 -1 4 2100 -1 1 1 1 -1 -1 -1 -1 -1"),
                "bad.swf:2: ",
                "is not an integer",
            ),
            err(
                "bad.swf",
                non_utf8(&format!("{L}2 0 100 5 4 -1 -1 4 2100 -1 1 "), " 1 -1 -1 -1 -1 -1\n"),
                "bad.swf:2: ",
                "UTF-8",
            ),
            err("bad.swf", format!("; UnixStartTime: abc\n{L}"), "bad.swf:1: ", "UnixStartTime \"abc\""),
            err("bad.swf", format!("; UnixStartTime: 9223372036854775807\n{L}"), "bad.swf:2: ", "overflows"),
            err("bad.swf", format!("{L}; UnixStartTime: 5\n"), "bad.swf:2: ", "UnixStartTime after the first job"),
        ],
    });
}

#[test]
fn squeue_json_rejects_bad_input() {
    const JOB: &str = r#"{"job_id":1,"user_name":"u","account":"a","partition":"p","job_state":["PENDING"],"submit_time":{"set":true,"number":0},"tres_req_str":"cpu=1"}"#;
    // Jobs one per line, so a syntax error can be placed.
    let doc = |second: &str| {
        format!(
            "{{\"jobs\":[\n{JOB},\n{{\"job_state\":\"PENDING\",\"user_name\":\"u\",\"account\":\"a\",\"partition\":\"p\",{second}}}]}}\n"
        )
    };
    // `extra` comes last, so its keys win over the ones before.
    let job = |extra: &str| doc(&format!("\"job_id\":2,\"submit_time\":1{extra}"));
    check(Reader {
        name: "squeue-json",
        support: scoring_support(),
        args: &[
            "score",
            "--tree",
            "{dir}/tree.csv",
            "--slurm-conf",
            "{dir}/slurm.conf",
            "--pending",
            "{in}",
            "--pending-format",
            "squeue-json",
            "--now",
            "100",
            "--out",
            "{out}",
        ],
        out: "out.parquet",
        cases: vec![
            err("bad.json", "", "bad.json:1: ", "not JSON"),
            err("bad.json", format!("{{\"jobs\":[\n{JOB},\n{JOB}"), "bad.json:3: ", "not JSON: EOF"),
            err(
                "bad.json",
                non_utf8(&format!("{{\"jobs\":[\n{JOB},\n{{\"user_name\":\""), "\"}]}\n"),
                "bad.json:3: ",
                "UTF-8",
            ),
            err("bad.json", "{\"jobs\":5}", "bad.json: ", "no `jobs` array"),
            err(
                "bad.json",
                doc("\"job_id\":2"),
                "bad.json: ",
                "jobs[1] (job 2): no submit_time: expected whole seconds",
            ),
            err("bad.json", job(",\"job_id\":-2"), "bad.json: ", "jobs[1]: job_id -2 is not in 0..="),
            err("bad.json", job(",\"cpus\":-5"), "bad.json: ", "jobs[1] (job 2): cpus -5 is not in 0..=4294967295"),
            err("bad.json", job(",\"nice\":99999999999"), "bad.json: ", "jobs[1] (job 2): nice 99999999999 is not in"),
            err("bad.json", job(",\"node_count\":1e400"), "bad.json:3: ", "number out of range"),
            err(
                "bad.json",
                job(",\"tres_req_str\":\"cpu=1,bogus=2\""),
                "bad.json: ",
                "jobs[1] (job 2): tres_req: \"bogus\"",
            ),
            err(
                "bad.json",
                job(",\"user_name\":\"\""),
                "bad.json: ",
                "jobs[1] (job 2): user, account and partition must not be empty",
            ),
            // Errors and warnings about a job name its index, not a line.
            err(
                "bad.json",
                job(",\"partition\":\"zz\""),
                "bad.json: ",
                "jobs[1] (job 2): partition \"zz\" is not defined in slurm.conf",
            ),
            // Slurm scores a job without an association with fair-share 0.
            warn(
                "bad.json",
                job(",\"user_name\":\"nobody\""),
                "bad.json jobs[1]",
                "have no association and score fair-share 0",
            ),
        ],
    });
}

#[test]
fn pending_csv_rejects_bad_input() {
    let job = |row: &str| pending_csv(&format!("{row}\n"));
    check(Reader {
        name: "pending-csv",
        support: scoring_support(),
        args: &[
            "score",
            "--tree",
            "{dir}/tree.csv",
            "--slurm-conf",
            "{dir}/slurm.conf",
            "--pending",
            "{in}",
            "--now",
            "100",
            "--out",
            "{out}",
        ],
        out: "out.parquet",
        cases: vec![
            err("bad.csv", "", "bad.csv: ", "empty file"),
            err(
                "bad.csv",
                non_utf8(&pending_csv("2,u"), ",a,p,,0,0,1,1,10,0,0,cpu=1\n"),
                "bad.csv:3: ",
                "not valid UTF-8",
            ),
            err("bad.csv", pending_csv("2,u,a,p,,0,0,1,1,10,0,0,\"cpu=1"), "bad.csv:3: ", "unterminated quoted field"),
            err("bad.csv", job("2,u,a,p,,0,0,1,1,10,0,0"), "bad.csv:3: ", "expected 13 fields, found 12"),
            err("bad.csv", job("x,u,a,p,,0,0,1,1,10,0,0,cpu=1"), "bad.csv:3: ", "job_id \"x\" is not an integer"),
            err("bad.csv", job("2,u,a,p,,0,0,1,nan,10,0,0,cpu=1"), "bad.csv:3: ", "cpus \"nan\" is not an integer"),
            err(
                "bad.csv",
                job("2,u,a,p,,0,0,1,4294967296,10,0,0,cpu=1"),
                "bad.csv:3: ",
                "cpus 4294967296 is not in 0..=4294967295",
            ),
            err(
                "bad.csv",
                job("2,u,a,p,,0,0,1,1,10,0,0,\"cpu=1,bogus=1\""),
                "bad.csv:3: ",
                "tres_req: \"bogus\" is not a TRES",
            ),
            err("bad.csv", job("2,u,a,p,,0,0,1,1,10,0,0,\"cpu=1,mem=1Q\""), "bad.csv:3: ", "unknown unit 'Q'"),
            err("bad.csv", job("2,u,a,p,,0,0,1,1,10,0,0,cpu=inf"), "bad.csv:3: ", "TRES count \"cpu=inf\""),
            err("bad.csv", job("2,u,a,p,,0,0,1,1,10,2147483646,0,cpu=1"), "bad.csv:3: ", "nice 2147483646 is not in"),
            err("bad.csv", job("2,u,a,p,,0,0,1,1,xx,0,0,cpu=1"), "bad.csv:3: ", "time_limit: \"xx\""),
            err(
                "bad.csv",
                job("2,u,a,p,,yesterday,0,1,1,10,0,0,cpu=1"),
                "bad.csv:3: ",
                "submit_time: time \"yesterday\"",
            ),
            err("bad.csv", "job_id,user\n1,u\n", "bad.csv:1: ", "missing column \"account\""),
            warn(
                "bad.csv",
                job("2,nobody,a,p,,0,0,1,1,10,0,0,cpu=1"),
                "bad.csv:3",
                "have no association and score fair-share 0",
            ),
        ],
    });
}

/// A pending queue as Parquet: the canonical columns, `cpus` and `tres_req` per job, `job_id`
/// null where `None`, without the `tres_req` column when `tres` is `None`.
fn pending_parquet(jobs: &[(Option<u64>, &str, &str, i64)], tres: Option<&[&str]>) -> Vec<u8> {
    let n = jobs.len();
    let text = |f: &dyn Fn(usize) -> String| -> ArrayRef { Arc::new(StringArray::from_iter_values((0..n).map(f))) };
    let int = |v: i64| -> ArrayRef { Arc::new(Int64Array::from(vec![v; n])) };
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        ("job_id", Arc::new(jobs.iter().map(|j| j.0).collect::<UInt64Array>())),
        ("user", text(&|i| jobs[i].1.to_string())),
        ("account", text(&|_| "a".into())),
        ("partition", text(&|_| "p".into())),
        ("qos", text(&|_| String::new())),
        ("submit_time", text(&|i| jobs[i].2.to_string())),
        ("accrue_time", int(0)),
        ("min_nodes", int(1)),
        ("cpus", Arc::new(Int64Array::from(jobs.iter().map(|j| j.3).collect::<Vec<_>>()))),
        ("time_limit", int(10)),
        ("nice", int(0)),
        ("site_factor", int(0)),
    ];
    if let Some(t) = tres {
        columns.push(("tres_req", text(&|i| t[i].to_string())));
    }
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    buf
}

#[test]
fn pending_parquet_rejects_bad_input() {
    let two = |second: (Option<u64>, &'static str, &'static str, i64), tres: &[&str]| {
        pending_parquet(&[(Some(1), "u", "0", 1), second], Some(tres))
    };
    let good = two((Some(2), "u", "0", 1), &["cpu=1", "cpu=1"]);
    check(Reader {
        name: "pending-parquet",
        support: scoring_support(),
        args: &[
            "score",
            "--tree",
            "{dir}/tree.csv",
            "--slurm-conf",
            "{dir}/slurm.conf",
            "--pending",
            "{in}",
            "--pending-format",
            "parquet",
            "--now",
            "100",
            "--out",
            "{out}",
        ],
        out: "out.parquet",
        cases: vec![
            err("bad.parquet", "", "bad.parquet: ", "Parquet"),
            err("bad.parquet", good[..good.len() - 10].to_vec(), "bad.parquet: ", "Parquet"),
            err(
                "bad.parquet",
                pending_parquet(&[(Some(1), "u", "0", 1)], None),
                "bad.parquet: ",
                "missing column \"tres_req\"",
            ),
            err(
                "bad.parquet",
                two((Some(2), "u", "0", -3), &["cpu=1", "cpu=1"]),
                "bad.parquet:2: ",
                "row 2: cpus -3 is not in",
            ),
            err(
                "bad.parquet",
                two((None, "u", "0", 1), &["cpu=1", "cpu=1"]),
                "bad.parquet:2: ",
                "row 2: job_id is empty",
            ),
            err(
                "bad.parquet",
                two((Some(2), "u", "yesterday", 1), &["cpu=1", "cpu=1"]),
                "bad.parquet:2: ",
                "submit_time: time \"yesterday\"",
            ),
            err(
                "bad.parquet",
                two((Some(2), "u", "0", 1), &["cpu=1", "cpu=1,bogus=2"]),
                "bad.parquet:2: ",
                "tres_req: \"bogus\"",
            ),
            warn(
                "bad.parquet",
                two((Some(2), "nobody", "0", 1), &["cpu=1", "cpu=1"]),
                "bad.parquet:2",
                "have no association",
            ),
        ],
    });
}

#[test]
fn qos_dump_rejects_bad_input() {
    const H: &str = "Name|Priority|UsageFactor\n";
    check(Reader {
        name: "qos",
        support: scoring_support(),
        args: &[
            "score",
            "--tree",
            "{dir}/tree.csv",
            "--slurm-conf",
            "{dir}/slurm.conf",
            "--pending",
            "{dir}/pending.csv",
            "--qos",
            "{in}",
            "--now",
            "100",
            "--out",
            "{out}",
        ],
        out: "out.parquet",
        cases: vec![
            err("bad.qos", "", "bad.qos: ", "empty file"),
            err("bad.qos", non_utf8(&format!("{H}norm"), "al|1|1\n"), "bad.qos:2: ", "UTF-8"),
            err("bad.qos", format!("{H}normal|1|nan\n"), "bad.qos:2: ", "UsageFactor \"nan\" is not a finite number"),
            err("bad.qos", format!("{H}normal|1|inf\n"), "bad.qos:2: ", "UsageFactor \"inf\" is not a finite number"),
            err("bad.qos", format!("{H}normal|-1|1\n"), "bad.qos:2: ", "Priority \"-1\""),
            err("bad.qos", format!("{H}normal|4294967296|1\n"), "bad.qos:2: ", "Priority \"4294967296\""),
            err("bad.qos", format!("{H}normal|1|1\nnormal|2|1\n"), "bad.qos:3: ", "QOS \"normal\" is listed twice"),
            err("bad.qos", format!("{H}normal|1"), "bad.qos:2: ", "expected at least 3 fields, found 2"),
        ],
    });
}

#[test]
fn job_records_csv_rejects_bad_input() {
    const H: &str = "job_id,user,account,partition,qos,start,end,tres_alloc\n";
    const J: &str = "1,u,a,p,,0,3600,cpu=1\n";
    let rows = |rest: &str| format!("{H}{J}{rest}");
    check(Reader {
        name: "jobs-csv",
        support: vec![("tree.csv", GOOD_TREE.into())],
        args: &["usage", "--tree", "{dir}/tree.csv", "--jobs", "{in}", "--now", "7200", "--out", "{out}"],
        out: "out.parquet",
        cases: vec![
            err("bad.jobs", "", "bad.jobs: ", "empty file"),
            err("bad.jobs", non_utf8(&format!("{H}{J}2,u"), ",a,p,,0,3600,cpu=1\n"), "bad.jobs:3: ", "UTF-8"),
            err("bad.jobs", rows("2,u,a,p,,0,3600,\"cpu=1"), "bad.jobs:3: ", "unterminated quoted field"),
            err("bad.jobs", rows("2,u,a,p,,0,3600\n"), "bad.jobs:3: ", "expected 8 fields, found 7"),
            err("bad.jobs", rows("2,u,a,p,,0,3600,cpu=1e400\n"), "bad.jobs:3: ", "TRES count \"cpu=1e400\""),
            err("bad.jobs", rows("2,u,a,p,,0,3600,gres/=1\n"), "bad.jobs:3: ", "\"gres/\" is not a TRES"),
            warn("bad.jobs", rows("2,u,zz,p,,0,3600,cpu=1\n"), "bad.jobs", "match no association"),
        ],
    });
}

#[test]
fn site_toml_rejects_bad_input() {
    let mut support = scoring_support();
    support.push(("badtree.csv", format!("{ASSOC_HEADER}1,,root,,1,0\n2,1,a,,x,0\n").into_bytes()));
    check(Reader {
        name: "site-toml",
        support,
        args: &["run", "--site", "{in}", "--out-dir", "{out}"],
        out: "D",
        cases: vec![
            err("bad.toml", non_utf8("tree = \"tree.csv\"\nnow = \"", "\"\n"), "bad.toml:2: ", "UTF-8"),
            err("bad.toml", "tree = \"tree.csv\"\nslurm_conf = \"slurm.conf", "bad.toml:2: ", "invalid"),
            err("bad.toml", "tree = \"tree.csv\"\nnow = true\n", "bad.toml:2: ", "now is a boolean: expected a time"),
            err(
                "bad.toml",
                "tree = \"tree.csv\"\nnow = \"soon\"\n",
                "bad.toml:2: ",
                "now = soon: time \"soon\" is neither",
            ),
            err("bad.toml", "tree = \"tree.csv\"\ntree = \"x.csv\"\n", "bad.toml:2: ", "duplicate key"),
            err(
                "bad.toml",
                "tree = \"tree.csv\"\nalgorithm = \"fast\"\n",
                "bad.toml:2: ",
                "algorithm = \"fast\": expected one of",
            ),
            // A bad file the site names is reported with its own line.
            err("bad.toml", "tree = \"badtree.csv\"\n", "badtree.csv:3: ", "shares \"x\""),
        ],
    });
}

// ---------------------------------------------------------------------------------------------
// 2. Numeric extremes.
// ---------------------------------------------------------------------------------------------

const ALGOS: [&str; 3] = ["fair-tree", "classic", "flux"];

/// `sshare -a -l -P` rows of `tree` under `algo`, as field maps keyed by the header, the header
/// checked to contain `User` and `FairShare`.
fn sshare_rows(tree: &Path, algo: &str) -> Vec<BTreeMap<String, String>> {
    let text = stdout_of(&fairshare(["sshare", "--algo", algo, "-a", "-l", "-P", "--tree", tree.to_str().unwrap()]));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('|').collect();
    lines.map(|l| header.iter().zip(l.split('|')).map(|(h, v)| (h.to_string(), v.to_string())).collect()).collect()
}

/// The row of `user` (or of the account when `user` is empty).
fn row<'a>(rows: &'a [BTreeMap<String, String>], account: &str, user: &str) -> &'a BTreeMap<String, String> {
    rows.iter()
        .find(|r| r["Account"].trim() == account && r["User"] == user)
        .unwrap_or_else(|| panic!("{account}/{user}"))
}

/// C's `%f`.
fn f6(v: f64) -> String {
    format!("{v:.6}")
}

#[test]
fn a_200_level_chain_runs_under_every_algorithm() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("id,parent_id,account,user,shares,usage\n1,,root,,1,0\n");
    for i in 2..=201 {
        csv.push_str(&format!("{i},{},a{i},,1,0\n", i - 1));
    }
    csv.push_str("300,201,a201,u,1,5\n");
    let tree = write_file(dir.path(), "chain.csv", &csv);
    for algo in ALGOS {
        // A stack overflow would abort the process, which `stdout_of` reports.
        let rows = sshare_rows(&tree, algo);
        assert_eq!(rows.len(), 202, "{algo}");
        let u = row(&rows, "a201", "u");
        // Its depth is the indentation: 201 spaces.
        assert!(u["Account"].starts_with(&" ".repeat(201)) && !u["Account"].starts_with(&" ".repeat(202)));
        assert_eq!(u["RawUsage"], "5");
        // One user: Fair Tree and flux rank it N/N = 1. Classic: every level has one member, so
        // UE = UEp = 1 all the way down and S = 1: F = 2^-(1/1) = 0.5.
        let want = if algo == "classic" { 0.5 } else { 1.0 };
        assert_eq!(u["FairShare"], f6(want), "{algo}");
    }
}

#[test]
fn a_million_equal_siblings_get_the_expected_factor() {
    const N: usize = 1_000_000;
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::with_capacity(N * 26);
    csv.push_str("id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,acct,,1,0\n");
    for i in 0..N {
        csv.push_str(&format!("{},2,acct,u{i},1,7\n", i + 3));
    }
    let tree = write_file(dir.path(), "wide.csv", &csv);
    drop(csv);
    // Classic (§5): acct is first-level, so its UE is its usage_norm, 1. A user's usage_norm is
    // 1/N, its level shares N: UE = 1/N + (1 - 1/N)/N, S = 1/N, F = 2^-(UE/S).
    let n = N as f64;
    let ue = 1.0 / n + (1.0 - 1.0 / n) / n;
    let classic = f6(2f64.powf(-(ue / (1.0 / n))));
    assert_eq!(classic, "0.250000");
    // One algorithm at a time: each process holds the million rows.
    for algo in ALGOS {
        let out = fairshare(["sshare", "--algo", algo, "-a", "-P", "-n", "--tree", tree.to_str().unwrap()]);
        let text = stdout_of(&out);
        // Fair Tree: equal S/U ties every user at rank N: N/N = 1 (§6). flux: equal weights tie
        // too: 1 (flux.md §3.3).
        let want = if algo == "classic" { classic.clone() } else { f6(1.0) };
        let mut users = 0;
        // No header (-n): the root and acct rows, then the users.
        for line in text.lines().skip(2) {
            let f: Vec<&str> = line.split('|').collect();
            // Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare
            assert_eq!((f[2], f[3], f[4]), ("1", "0.000001", "7"), "{algo}: {line}");
            assert_eq!(f[6], want, "{algo}: {line}");
            users += 1;
        }
        assert_eq!(users, N, "{algo}");
    }
}

#[test]
fn huge_usage_and_shares_print_without_wrapping() {
    const MAX: u64 = 4_294_967_294;
    let dir = tempfile::tempdir().unwrap();
    // root → acct (2^32-2) → ten users of 2^32-2 shares and 1e18 usage; root → idle (2^32-2) → w.
    let mut csv = format!("{ASSOC_HEADER}1,,root,,1,0\n2,1,acct,,{MAX},0\n3,1,idle,,{MAX},0\n4,3,idle,w,{MAX},0\n");
    for i in 0..10 {
        csv.push_str(&format!("{},2,acct,u{i},{MAX},1e18\n", 10 + i));
    }
    let tree = write_file(dir.path(), "huge.csv", &csv);
    let total = 10u64 * 1_000_000_000_000_000_000; // 1e19: past i64::MAX, below u64::MAX
    for algo in ALGOS {
        let rows = sshare_rows(&tree, algo);
        assert_eq!(row(&rows, "root", "")["RawUsage"], total.to_string(), "{algo}");
        let acct = row(&rows, "acct", "");
        assert_eq!(
            (acct["RawShares"].as_str(), acct["RawUsage"].as_str()),
            (MAX.to_string().as_str(), total.to_string().as_str())
        );
        let u = row(&rows, "acct", "u3");
        assert_eq!(
            (u["RawShares"].as_str(), u["RawUsage"].as_str()),
            (MAX.to_string().as_str(), "1000000000000000000")
        );
        // Level shares 10 · (2^32-2) and 2 · (2^32-2) do not fit 32 bits; summed without wrapping,
        // a user's share of its level is 1/10 and acct's 1/2.
        let (s_user, s_acct) = (MAX as f64 / (10.0 * MAX as f64), MAX as f64 / (2.0 * MAX as f64));
        let norm = if algo == "classic" { s_user * s_acct } else { s_user };
        assert_eq!(u["NormShares"], f6(norm), "{algo}");
        assert_eq!(acct["NormShares"], f6(s_acct), "{algo}");
        // idle has no usage, so its user ranks first (S/0 = inf, flux MAXW); the ten tie behind it:
        // 11/11 and 10/11. Classic: usage_norm 1/10, UE = 0.1 + (1 - 0.1)·(1/10), F = 2^-(UE/S).
        let (want_u, want_w) = if algo == "classic" {
            let ue = 0.1 + 0.9 * s_user;
            (2f64.powf(-(ue / norm)), 1.0)
        } else {
            (10.0 / 11.0, 1.0)
        };
        assert_eq!(u["FairShare"], f6(want_u), "{algo}");
        assert_eq!(row(&rows, "idle", "w")["FairShare"], f6(want_w), "{algo}");
    }
}

#[test]
fn all_zero_usage_and_all_zero_shares_follow_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    // root → A (1) → a1, a2 (1 each); root → B (2) → b1 (3).
    let zero_usage = write_file(
        dir.path(),
        "zero-usage.csv",
        &format!("{ASSOC_HEADER}1,,root,,1,0\n2,1,A,,1,0\n3,1,B,,2,0\n4,2,A,a1,1,0\n5,2,A,a2,1,0\n6,3,B,b1,3,0\n"),
    );
    let zero_shares = write_file(
        dir.path(),
        "zero-shares.csv",
        &format!("{ASSOC_HEADER}1,,root,,1,0\n2,1,A,,0,0\n3,1,B,,0,0\n4,2,A,a1,0,10\n5,2,A,a2,0,20\n6,3,B,b1,0,30\n"),
    );
    let users = [("A", "a1"), ("A", "a2"), ("B", "b1")];
    for algo in ALGOS {
        // Zero usage everywhere. Fair Tree (§9): U = 0, so LevelFS = inf for every S > 0 and all
        // users tie at 1.0. Classic: usage_norm = 0, UE = 0, F = 2^0 = 1. flux: every sibling
        // ties at MAXW, the tied banks merge, and all users tie at 1.0.
        let rows = sshare_rows(&zero_usage, algo);
        for (a, u) in users {
            let r = row(&rows, a, u);
            assert_eq!(r["FairShare"], "1.000000", "{algo} zero usage {u}");
            assert_eq!(r["EffectvUsage"], "0.000000", "{algo} zero usage {u}");
            if algo == "fair-tree" {
                assert_eq!(r["LevelFS"], "inf", "{u}");
            }
        }
        // Zero shares everywhere. Classic (§5.2): S = 0 gives F = 0. Fair Tree (§6): S = 0 gives
        // LevelFS 0 for every association; A and B tie, so B's user inherits the rank a1 and a2
        // share: all three rank N/N = 1. flux: every weight is 0, all tie: 1.
        let rows = sshare_rows(&zero_shares, algo);
        for (a, u) in users {
            let r = row(&rows, a, u);
            let want = if algo == "classic" { "0.000000" } else { "1.000000" };
            assert_eq!(r["FairShare"], want, "{algo} zero shares {u}");
            // flux's normalized shares are shares / Σ sibling shares: 0/0, unset (blank).
            let norm = if algo == "flux" { "" } else { "0.000000" };
            assert_eq!(r["NormShares"], norm, "{algo} zero shares {u}");
            if algo == "fair-tree" {
                assert_eq!(r["LevelFS"], "0.000000", "{u}");
            }
        }
    }
}

#[test]
fn priorities_clamp_at_both_ends() {
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(dir.path(), "tree.csv", GOOD_TREE);
    // Fair-share and age both saturate at 1 with the largest weights: 2 · (2^32-1) is past the
    // 32-bit priority, so it is capped at 4294967295 (§7.2). With no weights a positive nice
    // takes the sum below 1, so it is floored at 1.
    let conf = write_file(
        dir.path(),
        "slurm.conf",
        &format!(
            "PriorityWeightFairshare=4294967295\nPriorityWeightAge=4294967295\nPriorityMaxAge=1\n\
             PriorityFlags=ACCRUE_ALWAYS\n{NODES}"
        ),
    );
    let none = write_file(dir.path(), "none.conf", NODES);
    let pending = write_file(
        dir.path(),
        "pending.csv",
        &format!("{PENDING_HEADER}1,u,a,p,,0,0,1,1,10,0,0,cpu=1\n2,u,a,p,,0,0,1,1,10,2147483645,0,cpu=1\n"),
    );
    let priorities = |conf: &Path| -> Vec<u32> {
        let out = dir.path().join("jobs.parquet");
        let args = ["score", "--tree", tree.to_str().unwrap(), "--pending", pending.to_str().unwrap()];
        stdout_of(&fairshare(
            args.into_iter()
                .chain(["--slurm-conf", conf.to_str().unwrap(), "--now", "100000"])
                .chain(["--out", out.to_str().unwrap()]),
        ));
        let file = std::fs::File::open(&out).unwrap();
        let batches: Vec<RecordBatch> =
            ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap().map(|b| b.unwrap()).collect();
        batches
            .iter()
            .flat_map(|b| b.column_by_name("priority").unwrap().as_primitive::<UInt32Type>().values().to_vec())
            .collect()
    };
    // Job 1: 2·(2^32-1) → capped. Job 2: the same minus 2147483645, still above 2^32-1 → capped.
    assert_eq!(priorities(&conf), [u32::MAX, u32::MAX]);
    // No weights: job 1 sums to 0, job 2 to -2147483645; both floored at 1.
    assert_eq!(priorities(&none), [1, 1]);
}

// ---------------------------------------------------------------------------------------------
// 3. Determinism across thread counts and runs.
// ---------------------------------------------------------------------------------------------

#[test]
fn outputs_are_identical_for_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    // Many exact ties (copied shares and usage, zero usage), over more rows than one parallel
    // chunk; flux has no `parent` shares.
    let spec = TreeSpec { tie_fraction: 0.3, zero_usage_fraction: 0.2, ..TreeSpec::new(40_000, 11) };
    let write = |name: &str, spec: &TreeSpec| {
        let mut buf = Vec::new();
        write_assoc_csv(&mut buf, &generate_tree(spec)).unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, buf).unwrap();
        p
    };
    let slurm_tree = write("slurm.csv", &spec);
    let flux_tree = write("flux.csv", &TreeSpec { parent_share_fraction: 0.0, ..spec.clone() });
    std::thread::scope(|s| {
        for algo in ALGOS {
            let tree = if algo == "flux" { &flux_tree } else { &slurm_tree };
            let dir = dir.path();
            s.spawn(move || {
                let run = |threads: &str, k: usize| -> (Vec<u8>, Vec<u8>) {
                    let out = dir.join(format!("{algo}-{threads}-{k}.parquet"));
                    let t = tree.to_str().unwrap();
                    let base = ["--threads", threads];
                    stdout_of(&fairshare(base.into_iter().chain([
                        "compute",
                        "--algo",
                        algo,
                        "--tree",
                        t,
                        "--out",
                        out.to_str().unwrap(),
                    ])));
                    let text =
                        fairshare(base.into_iter().chain(["sshare", "--algo", algo, "-a", "-l", "-P", "--tree", t]));
                    stdout_of(&text);
                    // Every file is named after its own run; the Parquet bytes must still match.
                    (std::fs::read(&out).unwrap(), text.stdout)
                };
                let first = run("1", 0);
                assert!(first.1.len() > 1_000_000, "{algo}: sshare printed the tree");
                for (threads, k) in [("2", 0), ("8", 0), ("8", 1), ("1", 1)] {
                    let other = run(threads, k);
                    assert!(other.0 == first.0, "{algo}: Parquet differs with --threads {threads} (run {k})");
                    assert!(other.1 == first.1, "{algo}: sshare text differs with --threads {threads} (run {k})");
                }
            });
        }
    });
}

// ---------------------------------------------------------------------------------------------
// 4. SIGKILL at any point leaves the previous run directory intact.
// ---------------------------------------------------------------------------------------------

/// The run directory's files and their bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
        })
        .collect()
}

const RUN_FILES: [&str; 6] =
    [".fairshare-output", "associations.parquet", "jobs.parquet", "run.json", "sprio.txt", "sshare.txt"];

/// Checks `out` after a killed run: the previous run byte for byte, or a complete new run; and
/// beside it nothing but leftovers named `.<out>.tmp-*`.
fn check_after_kill(out: &Path, previous: &BTreeMap<String, Vec<u8>>, what: &str) {
    let now = snapshot(out);
    let names: Vec<&str> = now.keys().map(String::as_str).collect();
    assert_eq!(names, RUN_FILES, "{what}: the run directory holds exactly the run's files");
    if &now != previous {
        // The run finished before the kill: a whole new run, data files equal to the previous
        // run's (the inputs are the same), run.json complete.
        let json: serde_json::Value = serde_json::from_slice(&now["run.json"]).expect("run.json parses");
        assert!(json["rows"]["associations"].as_u64().unwrap() > 0, "{what}");
        for f in RUN_FILES.iter().filter(|f| **f != "run.json") {
            assert!(now[*f] == previous[*f], "{what}: {f} differs from the same inputs' previous run");
        }
    }
    let name = out.file_name().unwrap().to_string_lossy();
    let leftover = format!(".{name}.tmp-");
    for n in listing(out.parent().unwrap()) {
        assert!(n == name || n.starts_with(&leftover), "{what}: unexpected {n} beside the run directory");
    }
}

/// Starts `fairshare run --site site --out-dir out`, quiet.
fn spawn_run(site: &Path, out: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_fairshare"))
        .args(["run", "--site", site.to_str().unwrap(), "--out-dir", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn run_ok(site: &Path, out: &Path) -> Output {
    let o = fairshare(["run", "--site", site.to_str().unwrap(), "--out-dir", out.to_str().unwrap()]);
    stdout_of(&o);
    o
}

/// Kills `child` (SIGKILL) as soon as `ready` holds, then reaps it; false when the child had
/// already exited.
fn kill_when(mut child: std::process::Child, ready: impl Fn() -> bool) -> bool {
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        if ready() {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    // SIGKILL: what `Child::kill` sends on Unix. The pid stays ours until `wait` reaps it.
    child.kill().unwrap();
    !child.wait().unwrap().success()
}

#[test]
fn a_killed_run_leaves_the_previous_directory_intact() {
    let root = tempfile::tempdir().unwrap();
    // Each run directory in a directory of its own, so only it and its leftovers are beside it.
    let (inputs, outputs, big_outputs) = (root.path().join("in"), root.path().join("out"), root.path().join("big-out"));
    for d in [&inputs, &outputs, &big_outputs] {
        std::fs::create_dir_all(d).unwrap();
    }

    // The seed site: a fast run, killed after fixed delays.
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-site");
    for f in ["site.toml", "slurm.conf", "qos.txt", "tree.csv", "jobs.csv", "pending.csv"] {
        std::fs::copy(seed.join(f), inputs.join(f)).unwrap();
    }
    let site = inputs.join("site.toml");
    let out = outputs.join("D");
    run_ok(&site, &out);
    let previous = snapshot(&out);
    let mut seed_kills = 0;
    for delay_ms in [0, 1, 5, 20, 50] {
        let mut child = spawn_run(&site, &out);
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        seed_kills += usize::from(!child.wait().unwrap().success());
        check_after_kill(&out, &previous, &format!("seed site, killed after {delay_ms} ms"));
    }
    // A kill that lands on no run checks nothing: at 0 ms the run has not even read its site.
    assert!(seed_kills > 0, "every seed-site run finished before its kill");

    // A large site (200k associations, 2·10^6 job records), killed during usage and at several
    // points of writing the run directory (watched through its temporary directory).
    let big = root.path().join("big");
    std::fs::create_dir_all(&big).unwrap();
    let now = 1_767_830_400;
    let tree = generate_tree(&TreeSpec::new(200_000, 5));
    fairshare_engine::io::parquet_tree::write(&big.join("tree.parquet"), &tree.records, Vec::new()).unwrap();
    let history = data_gen::history::HistorySpec { records: 2_000_000, seed: 5, from: now - 30 * 86_400, to: now };
    data_gen::history::write_records_parquet(&big.join("jobs.parquet"), &tree, &history).unwrap();
    let queue = data_gen::site::QueueSpec { jobs: 20_000, seed: 5, now };
    data_gen::site::write_pending_parquet(&big.join("pending.parquet"), &tree, &queue).unwrap();
    std::fs::write(big.join("slurm.conf"), data_gen::site::SLURM_CONF).unwrap();
    std::fs::write(big.join("qos.txt"), data_gen::site::QOS).unwrap();
    let big_site = write_file(
        &big,
        "site.toml",
        &format!(
            "slurm_conf = \"slurm.conf\"\nqos = \"qos.txt\"\ntree = \"tree.parquet\"\njobs = \"jobs.parquet\"\n\
             pending = \"pending.parquet\"\nnow = \"{now}\"\n"
        ),
    );
    let big_out = big_outputs.join("B");
    run_ok(&big_site, &big_out);
    let previous = snapshot(&big_out);
    // The temporary directory of a child: `.B.tmp-<host>-<pid>-<random>` beside B.
    let host =
        std::fs::read_to_string("/proc/sys/kernel/hostname").map_or("localhost".into(), |h| h.trim().to_string());
    let temp_of = |pid: u32| {
        let prefix = format!(".B.tmp-{host}-{pid}-");
        listing(&big_outputs).into_iter().find(|n| n.starts_with(&prefix)).map(|n| big_outputs.join(n))
    };
    let entries = |d: &Path| std::fs::read_dir(d).map_or(0, |r| r.count());
    let mut landed = Vec::new();
    for (what, files) in [("writing starts", 0), ("the first file is written", 1), ("mid-write", 3)] {
        let child = spawn_run(&big_site, &big_out);
        let pid = child.id();
        let killed = kill_when(child, || temp_of(pid).is_some_and(|t| entries(&t) >= files));
        check_after_kill(&big_out, &previous, &format!("large site, killed when {what}"));
        if killed {
            // Killed while writing: its temporary directory is left beside B, and never under B.
            assert!(temp_of(pid).is_some(), "{what}: the kill landed after the run was complete");
            landed.push(what);
        }
    }
    // A run that always finished before its kill would pass the checks above without testing them.
    assert!(!landed.is_empty(), "no kill landed while the run directory was being written");
    eprintln!("reliability: kills landed while writing: {}", landed.join(", "));
    // Mid-usage: killed well before any output exists.
    let child = spawn_run(&big_site, &big_out);
    std::thread::sleep(Duration::from_millis(100));
    assert!(kill_when(child, || true), "the large run ended within 100 ms: the kill during usage never landed");
    check_after_kill(&big_out, &previous, "large site, killed during usage");

    // Leftovers of killed runs (`.B.tmp-<host>-<pid>`) are never read: the next run removes those
    // of processes that no longer run, and replaces the directory whole.
    run_ok(&big_site, &big_out);
    check_after_kill(&big_out, &previous, "large site, a complete run after the kills");
    let after = listing(&big_outputs).into_iter().filter(|n| n.starts_with(".B.tmp-")).count();
    assert_eq!(after, 0, "the killed runs' temporaries are cleaned by the next run");
}

/// An input larger than the memory the process may use is refused up front with a message naming
/// it, not killed part-way (FAIRSHARE_MEMORY_LIMIT stands in for a small machine).
#[test]
fn inputs_too_large_for_memory_are_refused_with_a_message() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");
    let tree = format!("{site}/tree.csv");
    let run = |limit: &str| {
        Command::new(env!("CARGO_BIN_EXE_fairshare"))
            .args(["sshare", "-a", "-P", "--tree", &tree])
            .env("FAIRSHARE_MEMORY_LIMIT", limit)
            .output()
            .unwrap()
    };
    let small = run("1000");
    let stderr = String::from_utf8_lossy(&small.stderr);
    assert!(!small.status.success() && small.stdout.is_empty(), "{stderr}");
    assert!(stderr.contains("tree.csv: this tree needs about") && stderr.contains("GB is available"), "{stderr}");
    assert!(run("100000000000").status.success());
}
