//! `fairshare fairness`: a usage history written by `fairshare usage --every` from job records
//! made here, read back as delivered against entitled usage, checked against the jobs themselves
//! (without decay a window's delivered usage is the billing-seconds its jobs ran in it).

use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray};
use arrow::datatypes::{Float64Type, TimestampMicrosecondType};

use super::usage::read_parquet;
use super::{fairshare, stdout_of, write_file};

/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600;
const HOUR: i64 = 3600;
/// Instants T0, T0 + 1h, ..., T0 + 6h.
const INSTANTS: i64 = 7;

/// root → a (3 shares: users a1, a2; sub-account a_sub with user a3), b (1: b1), c (0: c1).
const TREE: &str = "id,parent_id,account,user,shares,usage\n\
    1,,root,,1,0\n\
    2,1,a,,3,0\n21,2,a,a1,1,0\n22,2,a,a2,1,0\n23,2,a_sub,,1,0\n231,23,a_sub,a3,1,0\n\
    3,1,b,,1,0\n31,3,b,b1,1,0\n\
    4,1,c,,0,0\n41,4,c,c1,1,0\n";

/// (user, account, cpus, start, end): before the first instant, across windows, inside one,
/// still running at the end, and after the last instant.
fn jobs() -> Vec<(&'static str, &'static str, i64, i64, Option<i64>)> {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: i64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as i64
    };
    let who = [("a1", "a"), ("a2", "a"), ("a3", "a_sub"), ("b1", "b"), ("c1", "c")];
    let mut out = Vec::new();
    for _ in 0..40 {
        let (user, account) = who[next(who.len() as i64) as usize];
        let start = T0 - HOUR + next(7 * HOUR);
        let end = (next(6) > 0).then(|| start + 1 + next(3 * HOUR));
        out.push((user, account, 1 + next(16), start, end));
    }
    out
}

/// The depth-1 account charged for a job's account.
fn top(account: &str) -> &str {
    if account == "a_sub" { "a" } else { account }
}

/// Writes the tree and jobs, runs `usage --every 1h` without decay into `dir/history`.
fn history(dir: &Path) -> PathBuf {
    let tree = write_file(dir, "tree.csv", TREE);
    let mut text = String::from("job_id,user,account,partition,qos,start,end,tres_alloc\n");
    for (i, (user, account, cpus, start, end)) in jobs().into_iter().enumerate() {
        let end = end.map(|e| e.to_string()).unwrap_or_default();
        text.push_str(&format!("{i},{user},{account},p,,{start},{end},\"cpu={cpus},node=1\"\n"));
    }
    let jobs = write_file(dir, "jobs.csv", &text);
    let out = dir.join("history");
    let (from, to) = (T0.to_string(), (T0 + (INSTANTS - 1) * HOUR).to_string());
    stdout_of(&fairshare([
        "usage",
        "--tree",
        tree.to_str().unwrap(),
        "--jobs",
        jobs.to_str().unwrap(),
        "--decay",
        "exact",
        "--half-life",
        "0",
        "--every",
        "1h",
        "--from",
        &from,
        "--to",
        &to,
        "--out",
        out.to_str().unwrap(),
    ]));
    out
}

/// The billing-seconds each depth-1 account's jobs ran in each window, from the jobs alone.
fn expected_delivered(accounts: &[&str]) -> Vec<Vec<f64>> {
    (1..INSTANTS)
        .map(|w| {
            let (lo, hi) = (T0 + (w - 1) * HOUR, T0 + w * HOUR);
            accounts
                .iter()
                .map(|&a| {
                    jobs()
                        .iter()
                        .filter(|j| top(j.1) == a)
                        .map(|&(_, _, cpus, start, end)| {
                            let stop = end.unwrap_or(i64::MAX).min(hi);
                            (cpus * (stop - start.max(lo)).max(0)) as f64
                        })
                        .sum()
                })
                .collect()
        })
        .collect()
}

/// Jain's index as its definition reads.
fn jain(x: &[f64]) -> Option<f64> {
    let squares: f64 = x.iter().map(|v| v * v).sum();
    (squares > 0.0).then(|| x.iter().sum::<f64>().powi(2) / (x.len() as f64 * squares))
}

#[test]
fn delivered_usage_is_what_the_jobs_ran_in_each_window() {
    let dir = tempfile::tempdir().unwrap();
    let hist = history(dir.path());
    let parquet = dir.path().join("fairness.parquet");
    let plot = dir.path().join("fairness.svg");
    let out = fairshare([
        "fairness",
        "--history",
        hist.to_str().unwrap(),
        "--capacity",
        "100",
        "--out",
        parquet.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ]);
    let text = stdout_of(&out);
    assert!(text.starts_with("3 accounts at depth 1"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("2026-01-01 0")).count(), (INSTANTS - 1) as usize, "{text}");
    assert!(std::fs::read_to_string(&plot).unwrap().starts_with("<svg"));

    let accounts = ["a", "b", "c"];
    // Shares 3:1:0 at the root's level.
    let entitled = [0.75, 0.25, 0.0];
    let want = expected_delivered(&accounts);
    let (batch, meta) = read_parquet(&parquet);
    assert_eq!(batch.num_rows(), want.len() * accounts.len());
    assert_eq!(meta.get("fairshare.depth").map(String::as_str), Some("1"));
    let f64s = |name: &str| batch.column_by_name(name).unwrap().as_primitive::<Float64Type>().clone();
    let (delivered, share, ent, cap) =
        (f64s("delivered_usage"), f64s("delivered_share"), f64s("entitled_share"), f64s("capacity_share"));
    let (jain_col, cap_jain) = (f64s("jain"), f64s("capacity_jain"));
    let names = batch.column_by_name("account").unwrap().as_string::<i32>().clone();
    let as_of = batch.column_by_name("as_of").unwrap().as_primitive::<TimestampMicrosecondType>().clone();
    let mut charged = 0.0;
    for (w, row) in want.iter().enumerate() {
        let total: f64 = row.iter().sum();
        charged += total;
        for (k, &d) in row.iter().enumerate() {
            let r = w * accounts.len() + k;
            assert_eq!(names.value(r), accounts[k]);
            assert_eq!(as_of.value(r), (T0 + (w as i64 + 1) * HOUR) * 1_000_000);
            assert_eq!(delivered.value(r), d, "window {w} account {}", accounts[k]);
            assert_eq!(ent.value(r), entitled[k]);
            assert!((share.value(r) - d / total).abs() < 1e-12);
            assert!((cap.value(r) - d / (100.0 * HOUR as f64)).abs() < 1e-12);
        }
        // Jain's index over delivered ÷ entitled share, the account entitled to nothing left out.
        let x: Vec<f64> = (0..2).map(|k| row[k] / total / entitled[k]).collect();
        let r = w * accounts.len();
        assert!((jain_col.value(r) - jain(&x).unwrap()).abs() < 1e-12, "window {w}");
        let capped: Vec<f64> = (0..2).map(|k| (row[k] / (100.0 * HOUR as f64) / entitled[k]).min(1.0)).collect();
        assert!((cap_jain.value(r) - jain(&capped).unwrap()).abs() < 1e-12, "window {w}");
    }
    assert!(charged > 0.0, "the jobs ran in the windows");
    let period: f64 = meta["fairshare.period_usage"].parse().unwrap();
    assert_eq!(period, charged);
}

#[test]
fn capacity_from_slurm_conf_or_said_missing() {
    let dir = tempfile::tempdir().unwrap();
    let hist = history(dir.path());
    let conf = write_file(
        dir.path(),
        "slurm.conf",
        "NodeName=n[1-2] CPUs=4 RealMemory=2048\nNodeName=m1 CPUs=8\n\
         PartitionName=p Nodes=n[1-2] TRESBillingWeights=CPU=2.0,Mem=1G\nPartitionName=q Nodes=ALL\n",
    );
    // n1, n2: 2 × 4 CPUs + 2 GB each; m1: its 8 CPUs (q has no weights).
    let text = stdout_of(&fairshare([
        "fairness",
        "--history",
        hist.to_str().unwrap(),
        "--slurm-conf",
        conf.to_str().unwrap(),
    ]));
    assert!(text.contains("capacity: 28 billing units per second"), "{text}");

    let parquet = dir.path().join("f.parquet");
    let out = fairshare([
        "fairness",
        "--history",
        hist.to_str().unwrap(),
        "--depth",
        "2",
        "--out",
        parquet.to_str().unwrap(),
    ]);
    let text = stdout_of(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("no --capacity").count(), 1, "{stderr}");
    assert!(text.starts_with("1 accounts at depth 2"), "{text}");
    let (batch, _) = read_parquet(&parquet);
    let cap = batch.column_by_name("capacity_share").unwrap();
    assert_eq!(cap.null_count(), batch.num_rows());
    // The one account at depth 2 is entitled to everything compared.
    let ent = batch.column_by_name("entitled_share").unwrap().as_primitive::<Float64Type>();
    assert!(ent.values().iter().all(|&e| e == 1.0));
}

/// The error of `fairshare fairness` with `args`, which must fail.
fn error(args: &[&str]) -> String {
    let out = fairshare([&["fairness"], args].concat());
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_histories_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    assert!(error(&["--history", missing.to_str().unwrap()]).contains("nowhere"));
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = error(&["--history", empty.to_str().unwrap()]);
    assert!(e.contains("empty") && e.contains("no history files"), "{e}");

    // A Parquet file that is not a history file.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let tree = write_file(dir.path(), "tree.csv", TREE);
    let not_history = other.join("tree.parquet");
    stdout_of(&fairshare(["compute", "--tree", tree.to_str().unwrap(), "--out", not_history.to_str().unwrap()]));
    let e = error(&["--history", other.to_str().unwrap()]);
    assert!(e.contains("tree.parquet") && e.contains("not a `fairshare usage --every` file"), "{e}");

    let hist = history(dir.path());
    let e = error(&["--history", hist.to_str().unwrap(), "--depth", "3"]);
    assert!(e.contains(".parquet") && e.contains("no accounts at depth 3"), "{e}");

    // One instant: no window.
    let files: Vec<PathBuf> =
        std::fs::read_dir(hist.join("date=2026-01-01")).unwrap().map(|e| e.unwrap().path()).collect();
    let single = dir.path().join("single/date=2026-01-01");
    std::fs::create_dir_all(&single).unwrap();
    std::fs::copy(&files[0], single.join("000000.parquet")).unwrap();
    let e = error(&["--history", dir.path().join("single").to_str().unwrap()]);
    assert!(e.contains("one instant"), "{e}");

    // An instant of another tree.
    let mixed = dir.path().join("mixed");
    let other_tree = write_file(dir.path(), "tree2.csv", &TREE.replace("3,1,b,,1,0", "3,1,b,,2,0"));
    let jobs = dir.path().join("jobs.csv");
    let later = (T0 + 7 * HOUR).to_string();
    stdout_of(&fairshare([
        "usage",
        "--tree",
        other_tree.to_str().unwrap(),
        "--jobs",
        jobs.to_str().unwrap(),
        "--decay",
        "exact",
        "--half-life",
        "0",
        "--at",
        &later,
        "--out",
        mixed.to_str().unwrap(),
    ]));
    let day = hist.join("date=2026-01-01");
    for f in std::fs::read_dir(&day).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, mixed.join("date=2026-01-01").join(f.file_name().unwrap())).unwrap();
    }
    let e = error(&["--history", mixed.to_str().unwrap()]);
    assert!(e.contains("different association tree") && e.contains("raw_shares"), "{e}");
}
