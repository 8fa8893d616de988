//! Job priority: the real plugin's factors on a published queue, hand-computed cases for every
//! flag, multi-partition rows, clamps, unknown associations, and flux's formula end to end.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::{Float64Type, UInt32Type, UInt64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::{csv_fields, fairshare, stdout_of, write_file, write_row_groups};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/slurm_jobs").join(name)
}

fn read_batch(path: &Path) -> RecordBatch {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
}

/// `score` into a temp dir, returning (job_id, column) -> value for every f64 column and priority.
fn score(args: &[&str]) -> (Vec<u64>, HashMap<String, Vec<f64>>, Vec<u32>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("jobs.parquet");
    let mut all = vec!["score"];
    all.extend_from_slice(args);
    all.extend(["--out", out.to_str().unwrap()]);
    stdout_of(&fairshare(&all));
    let b = read_batch(&out);
    let ids = b.column_by_name("job_id").unwrap().as_primitive::<UInt64Type>().values().to_vec();
    let prio = b.column_by_name("priority").unwrap().as_primitive::<UInt32Type>().values().to_vec();
    let cols = b
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            b.column(i).as_primitive_opt::<Float64Type>().map(|a| (f.name().clone(), a.values().to_vec()))
        })
        .collect();
    (ids, cols, prio)
}

#[test]
fn multifactor_matches_the_real_plugin() {
    let expected = std::fs::read_to_string(fixture("expected.csv")).unwrap();
    let mut lines = expected.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let now = std::fs::read_to_string(fixture("now")).unwrap();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let mut checked = 0;
    for setting in ["default", "no_normal_all"] {
        let conf = fixture(setting).join("slurm.conf");
        let owned = [
            "--tree".to_string(),
            fixture("tree.csv").display().to_string(),
            "--pending".into(),
            fixture("pending.csv").display().to_string(),
            "--slurm-conf".into(),
            conf.display().to_string(),
            "--qos".into(),
            fixture("qos.txt").display().to_string(),
            "--now".into(),
            now.trim().to_string(),
        ];
        let common: Vec<&str> = owned.iter().map(String::as_str).collect();
        let (ids, cols, prio) = score(&common);
        let mut sprio_args = vec!["sprio"];
        sprio_args.extend_from_slice(&common);
        sprio_args.extend(["-h", "-o", "%.15i %.12Y"]);
        let sprio = stdout_of(&fairshare(&sprio_args));
        let sprio: HashMap<&str, &str> = sprio
            .lines()
            .map(|l| {
                let mut f = l.split_whitespace();
                (f.next().unwrap(), f.next().unwrap())
            })
            .collect();
        for r in rows.iter().filter(|r| r[col("setting")] == setting) {
            let job: u64 = r[col("job_id")].parse().unwrap();
            let i = ids.iter().position(|&j| j == job).unwrap_or_else(|| panic!("job {job} not scored"));
            assert_eq!(prio[i].to_string(), r[col("priority")], "{setting} job {job} priority");
            assert_eq!(sprio[job.to_string().as_str()], r[col("priority")], "{setting} job {job} sprio %Y");
            for (ours, theirs) in [
                ("prio_age", "age"),
                ("prio_assoc", "assoc"),
                ("prio_fairshare", "fairshare"),
                ("prio_jobsize", "jobsize"),
                ("prio_partition", "partition"),
                ("prio_qos", "qos"),
                ("prio_tres_cpu", "tres_cpu"),
                ("prio_tres_mem", "tres_mem"),
            ] {
                assert_eq!(format!("{:.6}", cols[ours][i]), r[col(theirs)], "{setting} job {job} {theirs}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 50);
}

/// A small site for hand-computed cases, in a temp dir: 4 nodes of 4 CPUs (C = 16, N = 4),
/// partitions `a` (PriorityJobFactor 10, nodes 1-2, MaxTime 60) and `b` (20, nodes 3-4, MaxTime
/// UNLIMITED), the `TREE` below and the `QOS` dump.
struct HandSite {
    dir: tempfile::TempDir,
}

impl HandSite {
    fn new(flags: &str, extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        write_file(
            dir.path(),
            "slurm.conf",
            &format!(
                "PriorityFlags={flags}\nPriorityWeightAge=1000\nPriorityWeightJobSize=1000\nPriorityWeightPartition=1000\n\
                 PriorityWeightQOS=1000\nPriorityWeightAssoc=1000\nPriorityWeightFairshare=1000\nPriorityWeightTRES=CPU=1000\n\
                 PriorityMaxAge=1-0\n{extra}\nNodeName=n[1-4] CPUs=4 RealMemory=1000\n\
                 PartitionName=a Nodes=n[1-2] PriorityJobFactor=10 MaxTime=60\nPartitionName=b Nodes=n[3-4] PriorityJobFactor=20\n"
            ),
        );
        write_file(dir.path(), "tree.csv", TREE);
        write_file(dir.path(), "qos.txt", QOS);
        HandSite { dir }
    }

    /// The options scoring `pending` (written to the site's directory as `name`) at now = 86400.
    fn args(&self, name: &str, pending: &str) -> Vec<String> {
        let path = |f: &str| self.dir.path().join(f).display().to_string();
        write_file(self.dir.path(), name, pending);
        ["--tree", &path("tree.csv"), "--pending", &path(name), "--slurm-conf", &path("slurm.conf")]
            .into_iter()
            .chain(["--qos", &path("qos.txt"), "--now", "86400"])
            .map(str::to_string)
            .collect()
    }

    /// Runs `command` with [`Self::args`] and `extra`.
    fn run(&self, command: &str, name: &str, pending: &str, extra: &[&str]) -> std::process::Output {
        let mut all = vec![command.to_string()];
        all.extend(self.args(name, pending));
        all.extend(extra.iter().map(|e| e.to_string()));
        fairshare(&all)
    }
}

const TREE: &str = "id,parent_id,account,user,shares,usage,priority\n1,,root,,1,0,\n2,1,acct,,1,0,40\n3,2,acct,alice,1,0,\n4,2,acct,bob,1,0,10\n";
const QOS: &str = "Name|Priority|UsageFactor\nnormal|0|1.0\nhigh|100|1.0\nlow|25|1.0\n";
const HEAD: &str =
    "job_id,user,account,partition,qos,submit_time,accrue_time,min_nodes,cpus,time_limit,nice,site_factor,tres_req\n";

/// Scores `jobs` (CSV rows) at now = 86400 and returns rows as (job_id, factors, priority).
fn hand(flags: &str, extra: &str, jobs: &str) -> Vec<(u64, HashMap<String, f64>, u32)> {
    let site = HandSite::new(flags, extra);
    let args = site.args("pending.csv", &format!("{HEAD}{jobs}"));
    let (ids, cols, prio) = score(&args.iter().map(String::as_str).collect::<Vec<_>>());
    (0..ids.len()).map(|i| (ids[i], cols.iter().map(|(k, v)| (k.clone(), v[i])).collect(), prio[i])).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn each_factor_and_flag_by_hand() {
    // alice: accrued 43200 s ago (age 0.5), 1 node, 4 CPUs, partition a, QOS high.
    let job = "1,alice,acct,a,high,0,43200,1,4,30,0,0,cpu=4\n";
    let r = &hand("NO_FAIR_TREE", "", job)[0];
    let f = &r.1;
    assert!(close(f["prio_age"], 500.0));
    assert!(close(f["prio_jobsize"], 250.0), "favor large: (1/4 + 4/16)/2 = 0.25");
    assert!(close(f["prio_partition"], 500.0), "10 / max(10, 20)");
    assert!(close(f["prio_qos"], 1000.0), "100 / max 100");
    assert!(close(f["prio_assoc"], 1000.0), "alice inherits acct's 40, the max");
    assert!(close(f["prio_tres_cpu"], 500.0), "4 CPUs of partition a's 8");
    // Fair-share: classic, two users with zero usage and equal shares: F = 2^0 = 1.
    assert!(close(f["prio_fairshare"], 1000.0));
    assert_eq!(r.2, 4750);

    // ACCRUE_ALWAYS ages from submit; without it an unset accrue time gives no age.
    let unaccrued = "2,alice,acct,a,,0,,1,4,30,0,0,cpu=4\n";
    assert_eq!(hand("NO_FAIR_TREE", "", unaccrued)[0].1["prio_age"], 0.0);
    assert!(close(hand("NO_FAIR_TREE,ACCRUE_ALWAYS", "", unaccrued)[0].1["prio_age"], 1000.0));

    // PriorityFavorSmall: ((4-1)/4 + (16-4)/16)/2 = 0.75.
    assert!(close(hand("NO_FAIR_TREE", "PriorityFavorSmall=YES", job)[0].1["prio_jobsize"], 750.0));
    // SMALL_RELATIVE_TO_TIME: max(1·16/4, 4) / 30 min / 16 CPUs; favor small: 1 − that.
    let rel = 4.0 / 30.0 / 16.0;
    assert!(close(hand("NO_FAIR_TREE,SMALL_RELATIVE_TO_TIME", "", job)[0].1["prio_jobsize"], rel * 1000.0));
    assert!(close(
        hand("NO_FAIR_TREE,SMALL_RELATIVE_TO_TIME", "PriorityFavorSmall=YES", job)[0].1["prio_jobsize"],
        (1.0 - rel) * 1000.0
    ));
    // An empty time limit takes the partition's MaxTime (60).
    let no_limit = "3,alice,acct,a,high,0,43200,1,4,,0,0,cpu=4\n";
    assert!(close(
        hand("NO_FAIR_TREE,SMALL_RELATIVE_TO_TIME", "", no_limit)[0].1["prio_jobsize"],
        4.0 / 60.0 / 16.0 * 1000.0
    ));

    // NO_NORMAL_*: raw values times the weights.
    let raw = &hand("NO_FAIR_TREE,NO_NORMAL_ALL", "", job)[0].1;
    assert!(close(raw["prio_partition"], 10_000.0));
    assert!(close(raw["prio_qos"], 100_000.0));
    assert!(close(raw["prio_assoc"], 40_000.0));
    assert!(close(raw["prio_tres_cpu"], 4000.0));
}

#[test]
fn multi_partition_rows_clamps_and_unknown_associations() {
    let jobs = "10,bob,acct,\"a,b\",\"high,low\",0,86400,1,4,30,0,0,cpu=4\n\
                11,alice,acct,b,,0,0,1,4,30,0,2147483645,cpu=4\n\
                12,alice,acct,a,,0,0,1,4,30,2147483645,0,cpu=4\n\
                13,carol,acct,a,,0,0,1,4,30,0,0,cpu=4\n";
    let rows = hand("NO_FAIR_TREE", "", jobs);
    let of = |job: u64| rows.iter().filter(|r| r.0 == job).collect::<Vec<_>>();
    // Job 10: two partitions × two QOS = four rows, each with its own partition and QOS factor.
    let ten = of(10);
    assert_eq!(ten.len(), 4);
    let mut pairs: Vec<(i64, i64)> =
        ten.iter().map(|r| (r.1["prio_partition"] as i64, r.1["prio_qos"] as i64)).collect();
    pairs.sort();
    assert_eq!(pairs, [(500, 250), (500, 1000), (1000, 250), (1000, 1000)]);
    // bob's own association priority (10) over the max (40).
    assert!(close(ten[0].1["prio_assoc"], 250.0));
    // Clamps: a huge nice floors at 1; past 2^32-1 (raw TRES counts) the priority saturates.
    // Job 11 (accrue time 0 = not yet eligible, so no age): assoc 1000 + fair-share 1000 + size 250
    // + partition b 1000 + TRES 4/8 CPUs 500, plus the site factor.
    assert_eq!(of(11)[0].2, 2_147_483_645 + 3750);
    assert_eq!(of(12)[0].2, 1);
    let huge = hand("NO_FAIR_TREE,NO_NORMAL_TRES", "", "14,alice,acct,a,,0,0,1,4,30,0,0,cpu=5000000\n");
    assert_eq!(huge[0].2, u32::MAX);
    // carol has no association: scored, with fair-share 0.
    assert_eq!(of(13)[0].1["prio_fairshare"], 0.0);
}

#[test]
fn a_partition_or_qos_named_twice_is_scored_once() {
    // slurmctld keeps `a,a` as `a`: one row per (job, partition, QOS), as for the plain list.
    let twice = hand("NO_FAIR_TREE", "", "20,bob,acct,\"a,b,a\",\"high,high\",0,86400,1,4,30,0,0,cpu=4\n");
    let once = hand("NO_FAIR_TREE", "", "20,bob,acct,\"a,b\",high,0,86400,1,4,30,0,0,cpu=4\n");
    assert_eq!(twice.len(), 2);
    let key = |rows: &[(u64, HashMap<String, f64>, u32)]| -> Vec<(i64, u32)> {
        rows.iter().map(|r| (r.1["prio_partition"] as i64, r.2)).collect()
    };
    assert_eq!(key(&twice), key(&once));
}

/// A queue saved from pandas (integer columns with a missing value become floats: `4.0`) scores as
/// the integer one; a real fraction is an error naming the line.
#[test]
fn integers_written_as_floats_read_as_integers() {
    let job = "1,alice,acct,a,high,0,43200,1,4,30,0,0,cpu=4\n";
    let floats = "1,alice,acct,a,high,0.0,43200.0,1.0,4.0,30.0,0.0,0.0,cpu=4\n";
    // SMALL_RELATIVE_TO_TIME, so the time limit counts too.
    let flags = "NO_FAIR_TREE,SMALL_RELATIVE_TO_TIME";
    let (a, b) = (hand(flags, "", job), hand(flags, "", floats));
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].0, a[0].2), (b[0].0, b[0].2));
    assert_eq!(a[0].1, b[0].1);
    let site = HandSite::new("NO_FAIR_TREE", "");
    let out = site.run("sprio", "p.csv", &format!("{HEAD}1,alice,acct,a,high,0,43200,1,4.5,30,0,0,cpu=4\n"), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("p.csv:2") && err.contains("4.5"), "{err}");
}

#[test]
fn unknown_partition_is_an_error_naming_the_line() {
    let site = HandSite::new("NO_FAIR_TREE", "");
    let out = site.run("sprio", "p.csv", &format!("{HEAD}1,alice,acct,nope,,0,0,1,4,30,0,0,cpu=4\n"), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("p.csv:2") && err.contains("partition \"nope\""), "{err}");
}

#[test]
fn sprio_default_and_long_layouts() {
    let site = HandSite::new("NO_FAIR_TREE", "");
    let pending = format!("{HEAD}7,alice,acct,a,high,0,43200,1,4,30,0,0,cpu=4\n");
    let default = stdout_of(&site.run("sprio", "p.csv", &pending, &[]));
    assert_eq!(
        default,
        "          JOBID PARTITION   PRIORITY       SITE        AGE      ASSOC  FAIRSHARE    JOBSIZE  PARTITION        QOS                 TRES\n\
         \x20             7 a               4750          0        500       1000       1000        250        500       1000              cpu=500\n"
    );
    let l = stdout_of(&site.run("sprio", "p.csv", &pending, &["-l"]));
    assert!(l.starts_with("          JOBID PARTITION     USER  ACCOUNT   PRIORITY       SITE        AGE      ASSOC  FAIRSHARE    JOBSIZE  PARTITION    QOSNAME        QOS        NICE                 TRES\n"), "{l}");
    let weights = stdout_of(&site.run("sprio", "p.csv", &pending, &["-w"]));
    assert!(weights.lines().nth(1).unwrap().starts_with("        Weights"));
}

#[test]
fn flux_priority_orders_the_queue_like_t1002() {
    // small_no_tie; uid 50xy = leaf.x.y; fs from flux's walk; priority = round(100000 · fs).
    let tree = "0,root,%^+_nouser,1000,133\n1,account1,%^+_nouser,1000,121\n2,account1,leaf.1.1,10000,100\n\
                2,account1,leaf.1.2,1000,11\n2,account1,leaf.1.3,100000,10\n1,account2,%^+_nouser,100,11\n\
                2,account2,leaf.2.1,100000,8\n2,account2,leaf.2.2,10000,3\n1,account3,%^+_nouser,10,1\n\
                2,account3,leaf.3.1,100,0\n2,account3,leaf.3.2,10,1\n";
    let dir = tempfile::tempdir().unwrap();
    let t = write_file(dir.path(), "t.csv", tree);
    let mut jobs = String::from(HEAD);
    for (x, y) in [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1), (3, 2)] {
        jobs.push_str(&format!("50{x}{y},leaf.{x}.{y},account{x},default,,0,0,1,1,,0,0,\n"));
    }
    let p = write_file(dir.path(), "p.csv", &jobs);
    let out = stdout_of(&fairshare([
        "sprio",
        "--priority",
        "flux",
        "--tree",
        t.to_str().unwrap(),
        "--pending",
        p.to_str().unwrap(),
        "-h",
        "-o",
        "%i %Y",
        "--sort=-Y",
    ]));
    let order: Vec<&str> = out.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(order, ["5031", "5032", "5021", "5022", "5013", "5011", "5012"]);
    assert!(out.lines().next().unwrap().ends_with(" 100000"));
    assert!(out.contains("5032 85714"), "{out}");
}

#[test]
fn squeue_json_is_a_pending_queue() {
    // Newer squeue --json wraps numbers as {"set", "infinite", "number"}; older ones are plain.
    let json = r#"{"jobs": [
        {"job_id": 7, "user_name": "alice", "account": "acct", "partition": "a", "qos": "high",
         "job_state": ["PENDING"], "submit_time": {"set": true, "infinite": false, "number": 0},
         "accrue_time": {"set": true, "infinite": false, "number": 43200}, "node_count": {"set": true, "number": 1},
         "cpus": {"set": true, "number": 4}, "time_limit": {"set": true, "infinite": false, "number": 30},
         "nice": 0, "tres_req_str": "cpu=4,mem=1000M,node=1"},
        {"job_id": 8, "user_name": "bob", "account": "acct", "partition": "a", "qos": "",
         "job_state": "RUNNING", "submit_time": 0, "tres_req_str": "cpu=1"}
    ]}"#;
    let site = HandSite::new("NO_FAIR_TREE", "");
    let out = stdout_of(&site.run("sprio", "squeue.json", json, &["-h", "-o", "%i %Y"]));
    assert_eq!(out, "7 4750\n", "the running job is not listed; job 7 scores as its CSV twin");
}

#[test]
fn partition_specific_associations_win_over_the_partitionless_one() {
    // alice has a partition-less association (inheriting acct's priority 40) and one for partition
    // b with priority 20: a job in a and b gets each partition's own association.
    let site = HandSite::new("NO_FAIR_TREE", "");
    write_file(
        site.dir.path(),
        "tree.csv",
        "id,parent_id,account,user,partition,shares,usage,priority\n1,,root,,,1,0,\n2,1,acct,,,1,0,40\n\
         3,2,acct,alice,,1,0,\n4,2,acct,alice,b,1,0,20\n",
    );
    let out = site.run(
        "sprio",
        "p.csv",
        &format!("{HEAD}20,alice,acct,\"a,b\",,0,0,1,4,30,0,0,cpu=4\n"),
        &["-h", "-o", "%r %B"],
    );
    let mut rows: Vec<String> = stdout_of(&out).lines().map(str::to_string).collect();
    rows.sort();
    assert_eq!(rows, ["a 1000", "b 500"]);
}

/// A Parquet queue of several row groups (read on several cores, names interned per row group and
/// merged) reads as the same queue as its CSV, and a bad value in a later row group names its row.
#[test]
fn parquet_queues_of_many_row_groups_read_as_their_csv() {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, StringArray};
    use fairshare_engine::config::tres::Tres;
    use fairshare_engine::jobs::{PendingFormat, PendingJobs};

    let dir = tempfile::tempdir().unwrap();
    let users = ["zoe", "amy", "bob", "amy", "kim", "zoe", "bob", "lee", "amy", "kim", "ned"];
    let tres = |i: usize| format!("cpu={},mem={}G,gres/gpu={}", i + 1, 2 * i, i % 3);
    // A partition listed twice is one partition (one row), whichever way the list is read.
    let parts = |i: usize| match i % 4 {
        0 => "batch,gpu",
        3 => "gpu,batch,gpu",
        _ => "batch",
    };
    let mut csv = String::from(
        "job_id,user,account,partition,qos,submit_time,accrue_time,min_nodes,cpus,time_limit,nice,site_factor,tres_req\n",
    );
    // Some values are absent (an empty QOS, no accrue time, the partition's time limit).
    let qos = |i: usize| if i % 5 == 2 { "" } else { "normal" };
    let accrue = |i: usize| (i % 4 != 1).then_some(900 + i as i64);
    let limit = |i: usize| (!i.is_multiple_of(3)).then_some(60 * i as i64);
    let nice = |i: usize| i as i64 * 100 - 500;
    let text_of = |v: Option<i64>| v.map_or(String::new(), |v| v.to_string());
    for (i, u) in users.iter().enumerate() {
        csv += &format!(
            "{},{u},acct{},\"{}\",{},{},{},{},{},{},{},{},\"{}\"\n",
            100 + i,
            i % 3,
            parts(i),
            qos(i),
            1000 + i,
            text_of(accrue(i)),
            i % 2 + 1,
            i + 1,
            text_of(limit(i)),
            nice(i),
            i % 2,
            tres(i)
        );
    }
    let csv_path = write_file(dir.path(), "q.csv", &csv);
    let write_parquet_with = |name: &str, tres_of: &dyn Fn(usize) -> String, nice_of: &dyn Fn(usize) -> i64| {
        let n = users.len();
        let text = |f: &dyn Fn(usize) -> String| -> ArrayRef { Arc::new(StringArray::from_iter_values((0..n).map(f))) };
        let ints = |f: &dyn Fn(usize) -> i64| -> ArrayRef { Arc::new(Int64Array::from_iter_values((0..n).map(f))) };
        let nullable =
            |f: &dyn Fn(usize) -> Option<i64>| -> ArrayRef { Arc::new(Int64Array::from_iter((0..n).map(f))) };
        let batch = RecordBatch::try_from_iter([
            ("job_id", ints(&|i| 100 + i as i64)),
            ("user", text(&|i| users[i].to_string())),
            ("account", text(&|i| format!("acct{}", i % 3))),
            ("partition", text(&|i| parts(i).to_string())),
            ("qos", text(&|i| qos(i).to_string())),
            ("submit_time", ints(&|i| 1000 + i as i64)),
            ("accrue_time", nullable(&accrue)),
            ("min_nodes", ints(&|i| i as i64 % 2 + 1)),
            ("cpus", ints(&|i| i as i64 + 1)),
            ("time_limit", nullable(&limit)),
            ("nice", ints(nice_of)),
            ("site_factor", ints(&|i| i as i64 % 2)),
            ("tres_req", text(tres_of)),
        ])
        .unwrap();
        let path = dir.path().join(name);
        write_row_groups(&path, &batch, 3);
        path
    };
    let write_parquet = |name: &str, tres_of: &dyn Fn(usize) -> String| write_parquet_with(name, tres_of, &nice);
    let keep: Vec<Tres> = ["cpu", "mem", "gres/gpu"].iter().map(|t| Tres::parse(t).unwrap()).collect();
    let from_csv = PendingJobs::read(&csv_path, Some(PendingFormat::Csv), &keep).unwrap();
    let pq_path = write_parquet("q.parquet", &tres);
    let from_pq = PendingJobs::read(&pq_path, Some(PendingFormat::Parquet), &keep).unwrap();

    let named = |q: &PendingJobs, ids: &[u32]| ids.iter().map(|&i| q.names.name(i).to_string()).collect::<Vec<_>>();
    assert_eq!(from_pq.len(), users.len());
    assert_eq!(from_pq.job_id, from_csv.job_id);
    assert_eq!(named(&from_pq, &from_pq.user), named(&from_csv, &from_csv.user));
    assert_eq!(named(&from_pq, &from_pq.account), named(&from_csv, &from_csv.account));
    assert_eq!(named(&from_pq, &from_pq.part_ids), named(&from_csv, &from_csv.part_ids));
    assert_eq!(from_pq.part_offsets, from_csv.part_offsets);
    assert_eq!(named(&from_pq, &from_pq.part_ids[from_pq.part_offsets[3] as usize..][..2]), ["gpu", "batch"]);
    assert_eq!(named(&from_pq, &from_pq.qos_ids), named(&from_csv, &from_csv.qos_ids));
    assert_eq!(from_pq.qos_offsets, from_csv.qos_offsets);
    assert_eq!(from_pq.tres_req, from_csv.tres_req);
    assert_eq!(from_pq.cpus, from_csv.cpus);
    assert_eq!(from_pq.submit_time, from_csv.submit_time);
    assert_eq!(from_pq.accrue_time, from_csv.accrue_time);
    assert_eq!(from_pq.min_nodes, from_csv.min_nodes);
    assert_eq!(from_pq.time_limit, from_csv.time_limit);
    assert!(from_pq.time_limit.contains(&fairshare_engine::jobs::pending::NO_VAL));
    assert_eq!(from_pq.nice, from_csv.nice);
    assert_eq!(from_pq.site_factor, from_csv.site_factor);
    assert_eq!(from_pq.urgency, from_csv.urgency);
    // Parquet rows count from 1; the CSV's first job is on line 2.
    assert_eq!(from_pq.line, (1..=users.len() as u64).collect::<Vec<_>>());
    // Each name is interned once across row groups.
    let mut names: Vec<&str> = (0..from_pq.names.len() as u32).map(|i| from_pq.names.name(i)).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before);

    // Read against a tree's names (a job's user and account found as a pair, known names keeping
    // the tree's ids, unknown ones added after them): the same queue.
    let tree = write_file(
        dir.path(),
        "tree.csv",
        "id,parent_id,account,user,partition,shares,usage,priority\n1,,root,,,1,0,\n2,1,acct0,,,1,0,\n\
         3,2,acct0,amy,,1,0,\n4,2,acct0,zoe,,1,0,\n5,1,acct1,,,1,0,\n6,5,acct1,amy,,1,0,\n7,5,acct1,bob,gpu,1,0,\n",
    );
    let tree = fairshare_engine::io::read_tree(&tree, None).unwrap();
    let tree_names = Arc::new(fairshare_engine::jobs::TreeNames::new(&tree));
    let against = PendingJobs::read_with(&pq_path, Some(PendingFormat::Parquet), &keep, &tree_names).unwrap();
    assert_eq!(named(&against, &against.user), named(&from_csv, &from_csv.user));
    assert_eq!(named(&against, &against.account), named(&from_csv, &from_csv.account));
    assert_eq!(named(&against, &against.part_ids), named(&from_csv, &from_csv.part_ids));
    assert_eq!(named(&against, &against.qos_ids), named(&from_csv, &from_csv.qos_ids));
    assert_eq!(
        (against.part_offsets.clone(), against.tres_req.clone()),
        (from_pq.part_offsets.clone(), from_pq.tres_req.clone())
    );
    let known = tree_names.interner();
    assert_eq!(against.names.get("amy"), known.get("amy"));
    assert!(known.get("kim").is_none() && against.names.get("kim").unwrap() as usize >= known.len());
    // A name the row path must read (an empty user, in a later row group) is named at its row.
    let batch = read_batch(&pq_path);
    let empty_user: ArrayRef =
        Arc::new(StringArray::from_iter_values((0..users.len()).map(|i| if i == 6 { "" } else { users[i] })));
    let schema = batch.schema();
    let columns = schema.fields().iter().map(|f| {
        let column =
            if f.name() == "user" { empty_user.clone() } else { batch.column_by_name(f.name()).unwrap().clone() };
        (f.name().clone(), column)
    });
    let bad = dir.path().join("empty_user.parquet");
    write_row_groups(&bad, &RecordBatch::try_from_iter(columns).unwrap(), 3);
    let e = PendingJobs::read_with(&bad, Some(PendingFormat::Parquet), &keep, &tree_names).unwrap_err().to_string();
    assert!(e.contains("empty_user.parquet:7:") && e.contains("must not be empty"), "{e}");

    // Rows 2 and 8 (row groups 1 and 3) are bad: the first in the file is reported.
    let bad = write_parquet("bad.parquet", &|i| if i == 1 || i == 7 { "cpu=lots".into() } else { tres(i) });
    let e = PendingJobs::read(&bad, Some(PendingFormat::Parquet), &keep).unwrap_err().to_string();
    assert!(e.contains("bad.parquet:2:") && e.contains("tres_req"), "{e}");
    let bad = write_parquet("late.parquet", &|i| if i == 7 { "cpu=lots".into() } else { tres(i) });
    let e = PendingJobs::read(&bad, Some(PendingFormat::Parquet), &keep).unwrap_err().to_string();
    assert!(e.contains("late.parquet:8:") && e.contains("tres_req"), "{e}");
    // An integer out of range in the middle of a row group: its row, not the group's first.
    let bad = write_parquet_with("nice.parquet", &tres, &|i| if i == 4 { 1 << 40 } else { nice(i) });
    let e = PendingJobs::read(&bad, Some(PendingFormat::Parquet), &keep).unwrap_err().to_string();
    assert!(e.contains("nice.parquet:5:") && e.contains("nice"), "{e}");

    // Integer columns stored as floats (pandas' integers with gaps) read as integers while every
    // value is whole; a fraction is named at its row.
    let as_floats = |name: &str, edit: &dyn Fn(&mut Vec<Option<f64>>)| {
        let batch = read_batch(&pq_path);
        let float =
            |c: &str| arrow::compute::cast(batch.column_by_name(c).unwrap(), &arrow::datatypes::DataType::Float64);
        let mut cpus: Vec<Option<f64>> = float("cpus").unwrap().as_primitive::<Float64Type>().iter().collect();
        edit(&mut cpus);
        let schema = batch.schema();
        let columns = schema.fields().iter().map(|f| {
            let column: ArrayRef = match f.name().as_str() {
                "accrue_time" => float("accrue_time").unwrap(),
                "cpus" => Arc::new(arrow::array::Float64Array::from(cpus.clone())),
                _ => batch.column_by_name(f.name()).unwrap().clone(),
            };
            (f.name().clone(), column)
        });
        let floats = RecordBatch::try_from_iter(columns).unwrap();
        let path = dir.path().join(name);
        write_row_groups(&path, &floats, 3);
        path
    };
    let from_floats =
        PendingJobs::read(&as_floats("floats.parquet", &|_| {}), Some(PendingFormat::Parquet), &keep).unwrap();
    assert_eq!(from_floats.accrue_time, from_csv.accrue_time);
    assert_eq!(from_floats.cpus, from_csv.cpus);
    let fraction = as_floats("fraction.parquet", &|cpus| cpus[5] = Some(2.5));
    let e = PendingJobs::read(&fraction, Some(PendingFormat::Parquet), &keep).unwrap_err().to_string();
    assert!(e.contains("fraction.parquet:6:") && e.contains("cpus"), "{e}");
}

/// Scoring a queue a slice of jobs at a time, and writing the slices one by one to a
/// `ParquetSink`, gives the rows and the file contents of scoring and writing it whole (`score`
/// streams large queues this way).
#[test]
fn sliced_scoring_and_streamed_parquet_match_the_whole_queue() {
    use fairshare_base::write::parquet::{ParquetSink, write_parquet};
    use fairshare_engine::jobs::PendingJobs;
    use fairshare_engine::output::parquet::jobs_batch;
    use fairshare_engine::pass::{Algorithm, Params, compute};
    use fairshare_engine::priority::{Scores, SlurmPriority};

    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-site");
    let conf = fairshare_engine::config::read_slurm_conf(&site.join("slurm.conf"), None).unwrap();
    let qos = fairshare_engine::config::qos::read(&site.join("qos.txt")).unwrap();
    let tree = fairshare_engine::io::read_tree(&site.join("tree.csv"), None).unwrap();
    let fs = compute(&tree, &Params::new(Algorithm::FairTree)).unwrap();
    let prio = SlurmPriority::new(&conf, Some(&qos), 1_767_830_400);
    let jobs = PendingJobs::read(&site.join("pending.csv"), None, &prio.weights.tres_keys()).unwrap();
    assert!(
        jobs.len() > 20 && jobs.part_offsets.windows(2).any(|w| w[1] - w[0] > 1),
        "a queue with multi-partition jobs"
    );

    let (whole, unknown_whole) = prio.score(&jobs, &tree, &fs).unwrap();
    let queue = prio.prepare(&jobs, &tree, &fs).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (whole_path, sliced_path) = (dir.path().join("whole.parquet"), dir.path().join("sliced.parquet"));
    let mut sink: Option<ParquetSink> = None;
    let (mut priority, mut fairshare, mut job) = (Vec::new(), Vec::new(), Vec::new());
    let mut unknown = Vec::new();
    for start in (0..jobs.len()).step_by(7) {
        let mut s = Scores::default();
        unknown.extend(queue.score_jobs(start..(start + 7).min(jobs.len()), &mut s));
        priority.extend_from_slice(&s.priority);
        fairshare.extend_from_slice(&s.fairshare);
        job.extend_from_slice(&s.job);
        let batch = jobs_batch(s, &jobs, &prio.weights).unwrap();
        let sink = match &mut sink {
            Some(s) => s,
            None => sink.insert(ParquetSink::create(&sliced_path, &batch, Vec::new()).unwrap()),
        };
        sink.write(&batch).unwrap();
    }
    assert!(!sliced_path.exists(), "nothing is in place before finish");
    sink.unwrap().finish().unwrap();
    assert_eq!((job.as_slice(), priority.as_slice()), (whole.job.as_slice(), whole.priority.as_slice()));
    assert_eq!(fairshare, whole.fairshare);
    assert_eq!(unknown, unknown_whole);

    write_parquet(&whole_path, &jobs_batch(whole, &jobs, &prio.weights).unwrap(), Vec::new()).unwrap();
    let (a, b) = (read_batch(&whole_path), read_batch(&sliced_path));
    assert_eq!(a.schema(), b.schema());
    assert_eq!(a.columns(), b.columns());
}

/// `score` writes a queue longer than its slice (2^19 jobs) slice by slice, scoring each while the
/// previous one is written: the file holds what scoring the whole queue at once gives.
#[test]
fn score_streams_a_queue_longer_than_a_slice() {
    use data_gen::TreeSpec;
    use data_gen::site::{QueueSpec, SLURM_CONF, write_pending_parquet};
    use fairshare_engine::jobs::PendingJobs;
    use fairshare_engine::output::parquet::jobs_batch;
    use fairshare_engine::pass::{Algorithm, Params, compute};
    use fairshare_engine::priority::SlurmPriority;

    const NOW: i64 = 1_767_830_400;
    let dir = tempfile::tempdir().unwrap();
    let input = data_gen::generate_tree(&TreeSpec::new(2_000, 7));
    let mut csv = Vec::new();
    data_gen::write_assoc_csv(&mut csv, &input).unwrap();
    let tree_path = dir.path().join("tree.csv");
    std::fs::write(&tree_path, csv).unwrap();
    let conf_path = write_file(dir.path(), "slurm.conf", SLURM_CONF);
    let pending = dir.path().join("pending.parquet");
    write_pending_parquet(&pending, &input, &QueueSpec { jobs: (1 << 19) + 40_000, seed: 7, now: NOW }).unwrap();
    let out = dir.path().join("jobs.parquet");
    let now = NOW.to_string();
    let args = ["score", "--tree", tree_path.to_str().unwrap(), "--pending", pending.to_str().unwrap()];
    let conf = ["--slurm-conf", conf_path.to_str().unwrap(), "--now", &now, "--out", out.to_str().unwrap()];
    stdout_of(&fairshare(args.iter().chain(&conf)));

    let conf = fairshare_engine::config::read_slurm_conf(&conf_path, None).unwrap();
    let tree = fairshare_engine::io::read_tree(&tree_path, None).unwrap();
    let prio = SlurmPriority::new(&conf, None, NOW);
    let fs = compute(&tree, &Params::new(Algorithm::Classic)).unwrap(); // SLURM_CONF: NO_FAIR_TREE
    let jobs = PendingJobs::read(&pending, None, &prio.weights.tres_keys()).unwrap();
    let (whole, _) = prio.score(&jobs, &tree, &fs).unwrap();
    let expected = jobs_batch(whole, &jobs, &prio.weights).unwrap();
    // The file declares the dictionary-encoded names as the plain strings they read back as.
    let plain: Vec<arrow::array::ArrayRef> = expected
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            arrow::datatypes::DataType::Dictionary(_, v) => arrow::compute::cast(c, v).unwrap(),
            _ => c.clone(),
        })
        .collect();
    let fields: Vec<arrow::datatypes::Field> = expected
        .schema()
        .fields()
        .iter()
        .zip(&plain)
        .map(|(f, c)| f.as_ref().clone().with_data_type(c.data_type().clone()))
        .collect();
    let schema = arrow::datatypes::Schema::new_with_metadata(fields, expected.schema().metadata().clone());
    let expected = arrow::array::RecordBatch::try_new(std::sync::Arc::new(schema), plain).unwrap();
    let written = read_batch(&out);
    assert!(written.num_rows() > 1 << 19);
    assert_eq!(written.schema(), expected.schema());
    assert_eq!(written.columns(), expected.columns());
}

/// `score` reads a Parquet queue a row group at a time: with row groups of 8 jobs, the seed site's
/// 120 jobs take fifteen. The file holds the rows of scoring the same queue as CSV (read whole),
/// byte for byte the same file on any number of threads; jobs without an association are counted
/// over all row groups, and a bad partition in a late row group names its row and leaves no output.
#[test]
fn score_reads_a_parquet_queue_a_row_group_at_a_time() {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, StringArray};

    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-site");
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(site.join("pending.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    // The seed queue quotes only whole fields and has no quotes inside them.
    let jobs: Vec<Vec<String>> = lines.map(csv_fields).collect();
    let user = header.iter().position(|&h| h == "user").unwrap();
    let partition = header.iter().position(|&h| h == "partition").unwrap();
    let write_queue = |name: &str, edit: &dyn Fn(usize, &mut Vec<String>)| {
        let mut rows = jobs.clone();
        for (i, row) in rows.iter_mut().enumerate() {
            edit(i, row);
        }
        let mut csv = header.join(",") + "\n";
        for row in &rows {
            csv += &(row.iter().map(|f| format!("\"{f}\"")).collect::<Vec<_>>().join(",") + "\n");
        }
        write_file(dir.path(), &format!("{name}.csv"), &csv);
        let columns = header.iter().enumerate().map(|(k, h)| {
            (*h, Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r[k].as_str()))) as ArrayRef)
        });
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let path = dir.path().join(format!("{name}.parquet"));
        write_row_groups(&path, &batch, 8);
        path
    };
    let score_on = |threads: &str, pending: &Path, out: &Path| {
        let s = |p: &Path| p.to_str().unwrap().to_owned();
        fairshare([
            "score".into(),
            "--threads".into(),
            threads.into(),
            "--tree".into(),
            s(&site.join("tree.csv")),
            "--slurm-conf".into(),
            s(&site.join("slurm.conf")),
            "--qos".into(),
            s(&site.join("qos.txt")),
            "--pending".into(),
            s(pending),
            "--now".into(),
            "1767225600".into(),
            "--out".into(),
            s(out),
        ])
    };
    let score = |pending: &Path, out: &Path| score_on("1", pending, out);

    // Two jobs in different row groups belong to no association.
    let strangers = |i: usize, row: &mut Vec<String>| {
        if i == 40 || i == 100 {
            row[user] = format!("stranger{i}");
        }
    };
    let queue = write_queue("queue", &strangers);
    assert_eq!(jobs.len(), 120, "the queue spans fifteen row groups");
    let (from_pq, from_csv) = (dir.path().join("pq.parquet"), dir.path().join("csv.parquet"));
    let run = score(&queue, &from_pq);
    stdout_of(&run);
    let warning = String::from_utf8_lossy(&run.stderr);
    assert!(warning.contains("2 job(s) have no association") && warning.contains("stranger40"), "{warning}");
    assert!(warning.contains("queue.parquet:41"), "{warning}");
    stdout_of(&score(&dir.path().join("queue.csv"), &from_csv));
    let (pq, csv) = (read_batch(&from_pq), read_batch(&from_csv));
    assert!(pq.num_rows() >= jobs.len());
    assert_eq!(pq.columns(), csv.columns());
    for threads in ["2", "3"] {
        let other = dir.path().join(format!("pq-{threads}.parquet"));
        stdout_of(&score_on(threads, &queue, &other));
        let same = std::fs::read(&other).unwrap() == std::fs::read(&from_pq).unwrap();
        assert!(same, "--threads {threads} wrote other bytes than --threads 1");
    }

    let bad = write_queue("bad", &|i, row| {
        if i == 119 {
            row[partition] = "nowhere".into();
        }
    });
    let out = dir.path().join("bad_out.parquet");
    let run = score(&bad, &out);
    let e = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success() && e.contains("bad.parquet:120: row 120: partition \"nowhere\""), "{e}");
    assert!(!out.exists(), "no output after an error in a later row group");
}
