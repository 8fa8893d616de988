//! Numeric limits: absurd times, overflowing weights and usages are errors naming the input,
//! never a huge allocation or an inverted ranking.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, Int64Array, RecordBatch, StringArray};
use parquet::arrow::ArrowWriter;

use super::{fairshare, fairshare_within_a_minute, stdout_of, write_file};

/// What every out-of-range time is told, after `time T is out of range`.
const RANGE: &str = "is out of range: times lie between 1970-01-01T00:00:00 and 9999-12-31T23:59:59 UTC (epoch seconds 0 to 253402300799)";

/// The error message of a failed run (its last line, without `fairshare: error: `), failing the
/// test on success.
fn error_of(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "expected a failure, got success; stderr: {stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    last.strip_prefix("fairshare: error: ").unwrap_or_else(|| panic!("no error line: {stderr}")).to_string()
}

/// Root, account `a`, and its users `u1` and `u2` without usage.
const TREE: &str = "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,a,,1,0\n3,2,a,u1,1,0\n4,2,a,u2,1,0\n";

/// Four nodes of 32 CPUs in partition `batch`, billed with `weights`.
fn slurm_conf(weights: &str) -> String {
    format!(
        "NodeName=n[01-04] CPUs=32 RealMemory=128000\nPartitionName=batch Nodes=ALL Default=YES TRESBillingWeights={weights}\n"
    )
}

/// A job-records CSV of `rows` (`job_id,user,account,partition,qos,start,end,tres_alloc`).
fn jobs_csv(rows: &[&str]) -> String {
    let mut s = String::from("job_id,user,account,partition,qos,start,end,tres_alloc\n");
    for r in rows {
        s.push_str(r);
        s.push('\n');
    }
    s
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `usage --tree TREE --jobs JOBS` in `dir` with `extra` options, and `--out usage.parquet`
/// unless they name an output.
fn usage_run(dir: &Path, jobs: &str, extra: &[&str]) -> Output {
    let tree = write_file(dir, "tree.csv", TREE);
    let jobs = write_file(dir, "jobs.csv", jobs);
    let out: PathBuf = dir.join("usage.parquet");
    let mut args = vec!["usage", "--tree", path_str(&tree), "--jobs", path_str(&jobs)];
    if !extra.contains(&"--out") {
        args.extend(["--out", path_str(&out)]);
    }
    args.extend_from_slice(extra);
    let res = fairshare_within_a_minute(&args);
    if !res.status.success() {
        assert!(!out.exists(), "a failed run wrote {}", out.display());
    }
    res
}

#[test]
fn a_far_future_now_is_refused_with_the_range_not_allocated_for() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = jobs_csv(&["1,u1,a,batch,,1767000000,1767003600,\"cpu=16,node=1\""]);
    for now in ["9223372036854775807", "100000000000000", "253402300800", "-1"] {
        for decay in ["flux", "flux-clean", "slurm", "exact"] {
            let e = error_of(&usage_run(dir.path(), &jobs, &["--decay", decay, &format!("--now={now}")]));
            assert_eq!(e, format!("--now: time {now} {RANGE}"), "--decay {decay}");
        }
    }
    // Every option that takes a time says which one it was.
    let tree = write_file(dir.path(), "tree.csv", TREE);
    let jobs_path = write_file(dir.path(), "jobs.csv", &jobs);
    let (tree, jobs_path) = (path_str(&tree), path_str(&jobs_path));
    let hist = dir.path().join("hist");
    let hist = path_str(&hist);
    let base = ["usage", "--tree", tree, "--jobs", jobs_path];
    for (extra, want) in [
        (vec!["--now", "1767830400", "--first-pass=-5", "--out", hist], format!("--first-pass: time -5 {RANGE}")),
        (
            vec!["--now", "1767830400", "--every", "1d", "--from", "1767830400", "--to", "1e14", "--out", hist],
            "--to: time \"1e14\" is neither epoch seconds nor a date and time (YYYY-MM-DD[THH:MM[:SS]], \
             optionally with Z or an offset such as +01:00)"
                .to_string(),
        ),
        (
            vec![
                "--now",
                "1767830400",
                "--every",
                "1d",
                "--from",
                "1767830400",
                "--to",
                "99999999999999",
                "--out",
                hist,
            ],
            format!("--to: time 99999999999999 {RANGE}"),
        ),
        (
            vec!["--now", "1767830400", "--at", "1767830400,1969-12-31T23:59:59", "--out", hist],
            format!("--at: time -1 {RANGE}"),
        ),
    ] {
        let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        assert_eq!(error_of(&fairshare_within_a_minute(&args)), want, "{extra:?}");
    }
}

#[test]
fn flux_usage_at_the_end_of_time_is_computed_from_the_jobs_alone() {
    // A run every second since 1970 and a one-minute period: 2.5·10^11 runs, 4·10^9 roll-overs,
    // replayed only where the jobs are; the job has long decayed away.
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(dir.path(), "tree.csv", TREE);
    let jobs =
        write_file(dir.path(), "jobs.csv", &jobs_csv(&["1,u1,a,batch,,1767000000,1767003600,\"cpu=16,node=1\""]));
    for now in ["253402300799", "1767003600"] {
        let out = fairshare_within_a_minute([
            "sshare",
            "--tree",
            path_str(&tree),
            "--jobs",
            path_str(&jobs),
            "--decay",
            "flux",
            "--flux-interval",
            "1",
            "--first-pass",
            "0",
            "--half-life",
            "1",
            "--now",
            now,
            "-P",
            "-o",
            "Account,User,RawUsage",
        ]);
        let want = if now == "1767003600" { "a|u1|3600" } else { "a|u1|0" };
        assert!(stdout_of(&out).lines().any(|l| l.trim_start() == want), "--now {now}: {}", stdout_of(&out));
    }
}

#[test]
fn job_times_out_of_range_name_the_record_under_every_decay() {
    let dir = tempfile::tempdir().unwrap();
    // Slurm's decay charged this start 872,576 and the exact decay 0, both with exit 0.
    let jobs = jobs_csv(&["1,u1,a,batch,,1767000000,1767003600,cpu=1", "2,u1,a,batch,,9223372036854775807,,cpu=16"]);
    for decay in ["slurm", "exact", "flux", "flux-clean"] {
        let e = error_of(&usage_run(dir.path(), &jobs, &["--decay", decay, "--now", "1767830400"]));
        assert!(e.ends_with(&format!("jobs.csv:3: start: time 9223372036854775807 {RANGE}")), "--decay {decay}: {e}");
    }

    // Parquet times are integers no text parser sees: the charger checks them, naming the row.
    let path = dir.path().join("jobs.parquet");
    let text = |v: &[&str]| Arc::new(StringArray::from(v.to_vec())) as ArrayRef;
    let batch = RecordBatch::try_from_iter([
        ("job_id", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
        ("user", text(&["u1", "u2"])),
        ("account", text(&["a", "a"])),
        ("partition", text(&["batch", "batch"])),
        ("qos", text(&["", ""])),
        ("start", Arc::new(Int64Array::from(vec![1_767_000_000, 1_767_000_000])) as ArrayRef),
        ("end", Arc::new(Int64Array::from(vec![Some(1_767_003_600), Some(-86_400)])) as ArrayRef),
        ("tres_alloc", text(&["cpu=1", "cpu=1"])),
    ])
    .unwrap();
    let mut w = ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let tree = write_file(dir.path(), "tree.csv", TREE);
    let out = dir.path().join("usage.parquet");
    for decay in ["slurm", "exact"] {
        let e = error_of(&fairshare_within_a_minute([
            "usage",
            "--tree",
            path_str(&tree),
            "--jobs",
            path_str(&path),
            "--decay",
            decay,
            "--now",
            "1767830400",
            "--out",
            path_str(&out),
        ]));
        assert!(e.ends_with(&format!("jobs.parquet:2: end: time -86400 {RANGE}")), "--decay {decay}: {e}");
    }
}

#[test]
fn tree_usage_that_overflows_is_an_error_not_an_inverted_ranking() {
    // Two users at 1e308 got FairShare 1.0 and the light user 0.33.
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(
        dir.path(),
        "tree.csv",
        "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,a,,1,0\n3,2,a,heavy1,1,1e308\n4,2,a,heavy2,1,1e308\n\
         5,2,a,light,1,5\n6,1,b,,1,0\n7,6,b,u,1,1\n",
    );
    for algo in ["fair-tree", "classic", "flux"] {
        let e = error_of(&fairshare(["sshare", "--tree", path_str(&tree), "--algo", algo]));
        assert!(
            e.ends_with("tree.csv:3: account \"a\": the usage of the users below it sums to inf, not a finite number"),
            "--algo {algo}: {e}"
        );
    }
    // Sums below the root overflow only there: the root is named.
    let tree = write_file(
        dir.path(),
        "tree.csv",
        "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,a,,1,0\n3,2,a,u1,1,1e308\n4,1,b,,1,0\n5,4,b,u2,1,1e308\n",
    );
    let e = error_of(&fairshare(["sshare", "--tree", path_str(&tree)]));
    assert!(
        e.ends_with("tree.csv:2: account \"root\": the usage of the users below it sums to inf, not a finite number"),
        "{e}"
    );

    // flux-accounting's CSV gives bank usage; the weights sum siblings' usage.
    let flux = write_file(
        dir.path(),
        "flux.txt",
        "0,root,%^+_nouser,1,1e308\n1,a,%^+_nouser,1,1e308\n2,a,u1,1,1e308\n2,a,u2,1,1e308\n",
    );
    for exact in [false, true] {
        let mut args = vec!["sshare", "--tree", path_str(&flux), "--tree-format", "flux-csv", "--algo", "flux"];
        if exact {
            args.push("--flux-exact-sums");
        }
        let e = error_of(&fairshare(&args));
        assert!(
            e.ends_with("flux.txt:2: account \"a\": the usage of its children sums to inf, not a finite number"),
            "{e}"
        );
    }
}

#[test]
fn a_billing_weight_that_overflows_names_its_slurm_conf_line() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = jobs_csv(&["1,u1,a,batch,,1767000000,1767003600,\"cpu=16,node=1\""]);
    let conf = write_file(dir.path(), "slurm.conf", &slurm_conf("CPU=1e308"));
    let e = error_of(&usage_run(dir.path(), &jobs, &["--slurm-conf", path_str(&conf), "--now", "1767830400"]));
    assert!(
        e.ends_with(
            "slurm.conf:2: PartitionName=batch: TRESBillingWeights bill the partition's own TRES inf per second, not a finite number"
        ),
        "{e}"
    );

    // Weights the partition's TRES bear can still overflow with a job larger than the partition...
    let conf = write_file(dir.path(), "slurm.conf", &slurm_conf("CPU=1e300"));
    let huge = jobs_csv(&["7,u1,a,batch,,1767000000,1767003600,cpu=10000000000"]);
    let e = error_of(&usage_run(dir.path(), &huge, &["--slurm-conf", path_str(&conf), "--now", "1767830400"]));
    assert!(
        e.ends_with(
            "jobs.csv:2: job 7: tres_alloc \"cpu=10000000000\" bills inf per second with the TRESBillingWeights of \
             partition \"batch\", not a finite number"
        ),
        "{e}"
    );
    // ... or over a job's run time.
    let conf = write_file(dir.path(), "slurm.conf", &slurm_conf("CPU=1e306"));
    for decay in ["slurm", "exact"] {
        let e = error_of(&usage_run(
            dir.path(),
            &jobs,
            &["--slurm-conf", path_str(&conf), "--decay", decay, "--now", "1767830400"],
        ));
        assert!(
            e.ends_with(
                "jobs.csv:2: job 1: usage inf (billing 1.6e307 per second in partition \"batch\", QOS \"\") is not a finite number"
            ),
            "--decay {decay}: {e}"
        );
    }
    // A history charges each instant on its own.
    let hist = dir.path().join("hist");
    let e = error_of(&usage_run(
        dir.path(),
        &jobs,
        &[
            "--slurm-conf",
            path_str(&conf),
            "--now",
            "1767830400",
            "--at",
            "1767100000,1767830400",
            "--out",
            path_str(&hist),
        ],
    ));
    assert!(
        e.ends_with(
            "jobs.csv:2: job 1: usage inf (billing 1.6e307 per second in partition \"batch\", QOS \"\") is not a finite number"
        ),
        "{e}"
    );
}

#[test]
fn a_qos_usage_factor_that_overflows_names_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let qos = write_file(dir.path(), "qos.txt", "Name|Priority|UsageFactor\nnormal|0|1.0\nbig|10|1e308\n");
    let jobs = jobs_csv(&[
        "1,u1,a,batch,normal,1767000000,1767003600,cpu=16",
        "2,u2,a,batch,big,1767000000,1767003600,cpu=16",
    ]);
    let e = error_of(&usage_run(dir.path(), &jobs, &["--qos", path_str(&qos), "--now", "1767830400"]));
    assert!(
        e.ends_with(
            "jobs.csv:3: job 2: billing 16 per second × UsageFactor 1e308 of QOS \"big\" is inf, not a finite number"
        ),
        "{e}"
    );
}

#[test]
fn charges_whose_sum_overflows_name_the_association() {
    // Each job is charged 5·10^24 × 1000 s = 5·10^27 (no decay), within the exact sums' 2^96
    // (7.9·10^28), until sixteen of them add up.
    let dir = tempfile::tempdir().unwrap();
    let conf = write_file(dir.path(), "slurm.conf", &slurm_conf("CPU=5e24"));
    let job = |id: usize, user: &str| format!("{id},{user},a,batch,,1767000000,1767001000,cpu=1");
    let one_user: Vec<String> = (0..20).map(|i| job(i, "u1")).collect();
    let both: Vec<String> = (0..20).map(|i| job(i, if i % 2 == 0 { "u1" } else { "u2" })).collect();
    let tree = dir.path().join("tree.csv");
    let extra = ["--slurm-conf", path_str(&conf), "--decay", "exact", "--half-life", "0", "--now", "1767830400"];
    for (rows, who, line) in [(&one_user, "user \"u1\" in account \"a\"", 4), (&both, "account \"a\"", 3)] {
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        for threads in ["1", "2"] {
            let jobs = jobs_csv(&rows);
            let args = [&["--threads", threads][..], &extra[..]].concat();
            let e = error_of(&usage_run(dir.path(), &jobs, &args));
            let want = format!(
                "jobs.csv: the usage charged to {who} ({}:{line}) reaches 7.922816251426434e28 billing-seconds, \
                 beyond what fairshare sums exactly",
                tree.display()
            );
            assert!(e.ends_with(&want), "--threads {threads}: {e}");
        }
    }
    // One charge beyond the exact sums' range names its job.
    let conf = write_file(dir.path(), "slurm.conf", &slurm_conf("CPU=1e304"));
    let extra = ["--slurm-conf", path_str(&conf), "--decay", "exact", "--half-life", "0", "--now", "1767830400"];
    let rows: Vec<&str> = one_user.iter().map(String::as_str).collect();
    let e = error_of(&usage_run(dir.path(), &jobs_csv(&rows), &extra));
    assert!(
        e.ends_with(
            "jobs.csv:2: job 0: usage 1e307 (billing 1e304 per second in partition \"batch\", QOS \"\") is beyond \
             the 7.922816251426434e28 billing-seconds fairshare sums exactly"
        ),
        "{e}"
    );
    // A history sums each instant's charges in floating point, and says when a sum overflows.
    let hist = dir.path().join("hist");
    let at = ["--at", "1767100000,1767830400", "--out", path_str(&hist)];
    let e = error_of(&usage_run(dir.path(), &jobs_csv(&rows), &[&extra[..], &at[..]].concat()));
    assert!(
        e.ends_with("jobs.csv: the usage charged at 1767100000 sums to inf over the associations, not a finite number"),
        "{e}"
    );
}

/// `rows` (as [`jobs_csv`] takes them; an empty time is null) as a Parquet file `name` in `dir`.
fn jobs_parquet(dir: &Path, name: &str, rows: &[&str]) -> PathBuf {
    let fields: Vec<Vec<&str>> = rows.iter().map(|r| r.splitn(8, ',').collect()).collect();
    let text = |k: usize| Arc::new(StringArray::from_iter_values(fields.iter().map(|f| f[k]))) as ArrayRef;
    let time = |k: usize| Arc::new(Int64Array::from_iter(fields.iter().map(|f| f[k].parse::<i64>().ok()))) as ArrayRef;
    let batch = RecordBatch::try_from_iter([
        ("job_id", Arc::new(Int64Array::from_iter_values(fields.iter().map(|f| f[0].parse().unwrap()))) as ArrayRef),
        ("user", text(1)),
        ("account", text(2)),
        ("partition", text(3)),
        ("qos", text(4)),
        ("start", time(5)),
        ("end", time(6)),
        ("tres_alloc", text(7)),
    ])
    .unwrap();
    let path = dir.join(name);
    let mut w = ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path
}

/// A Parquet batch charges a record from its numbers once an earlier record has billed its
/// shape; a record that is anything but plain (unmatched, not started, running, charged beyond
/// the exact sums) is still seen as the CSV reader sees it: the same usage, per-TRES sums and
/// counts, and the same error at the same record.
#[test]
fn parquet_records_of_a_billed_shape_are_charged_and_checked_as_csv_records_are() {
    let dir = tempfile::tempdir().unwrap();
    let conf = format!("{}AccountingStorageEnforce=limits\n", slurm_conf("CPU=1e20"));
    let conf = write_file(dir.path(), "slurm.conf", &conf);
    let rows = [
        "1,u1,a,batch,,1767000000,1767001000,cpu=1",
        "2,u9,a,batch,,1767000000,1767001000,cpu=1",
        "3,u2,a,batch,,,,cpu=1",
        "4,u2,a,batch,,1767000000,,cpu=1",
        "5,u1,a,batch,,1767000000,1767002000,cpu=1",
        "6,u1,a,batch,,0,1767001000,cpu=1",
    ];
    let args = |jobs: &Path, out: &Path| {
        let extra = ["--slurm-conf", path_str(&conf), "--decay", "exact", "--half-life", "0", "--now", "1767830400"];
        let mut args = vec!["compute", "--tree", "tree.csv", "--jobs", path_str(jobs), "--out", path_str(out)];
        args.extend(extra);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    write_file(dir.path(), "tree.csv", TREE);
    let run = |args: Vec<String>| {
        std::process::Command::new(env!("CARGO_BIN_EXE_fairshare")).args(args).current_dir(dir.path()).output().unwrap()
    };
    let plain = &rows[..5];
    let csv = write_file(dir.path(), "jobs.csv", &jobs_csv(plain));
    let parquet = jobs_parquet(dir.path(), "jobs.parquet", plain);
    let (csv_out, parquet_out) = (dir.path().join("csv.parquet"), dir.path().join("pq.parquet"));
    let (by_csv, by_parquet) = (run(args(&csv, &csv_out)), run(args(&parquet, &parquet_out)));
    assert!(by_csv.status.success() && by_parquet.status.success(), "{by_parquet:?}");
    let charged = |o: &Output| {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .find(|l| l.contains("charged"))
            .map(|l| l.split(" (").next().unwrap().to_string())
    };
    assert_eq!(charged(&by_parquet), Some("fairshare: charged 3 of 5 job records".into()));
    assert_eq!(charged(&by_parquet), charged(&by_csv));
    let (a, _) = super::usage::read_parquet(&csv_out);
    let (b, _) = super::usage::read_parquet(&parquet_out);
    assert_eq!(a.schema().fields(), b.schema().fields());
    assert!(a.schema().fields().iter().any(|f| f.name() == "usage_tres_raw"), "{:?}", a.schema());
    for (x, y) in a.columns().iter().zip(b.columns()) {
        assert_eq!(x.to_data(), y.to_data());
    }
    let tres = b.column_by_name("usage_tres_raw").unwrap().as_struct();
    let cpu = tres.column_by_name("cpu").unwrap().as_primitive::<arrow::datatypes::Float64Type>();
    assert!(cpu.values().iter().any(|&v| v > 0.0), "{cpu:?}");

    // The last record's usage (1.767e9 s × 10^20) is beyond the sums: named at its row.
    let csv = write_file(dir.path(), "jobs.csv", &jobs_csv(&rows));
    let parquet = jobs_parquet(dir.path(), "jobs.parquet", &rows);
    let message = "job 6: usage 1.767001e29 (billing 1e20 per second in partition \"batch\", QOS \"\") \
                   is beyond the 7.922816251426434e28 billing-seconds fairshare sums exactly";
    let e = error_of(&run(args(&csv, &csv_out)));
    assert!(e.ends_with(&format!("jobs.csv:7: {message}")), "{e}");
    let e = error_of(&run(args(&parquet, &parquet_out)));
    assert!(e.ends_with(&format!("jobs.parquet:6: {message}")), "{e}");
}

/// Job ids that the footer shows need no check (never null, never negative) are left out of
/// charging and read again only to name a record: the first unmatched record and a record that
/// fails, in a later row group, are named by their own ids; a negative id is still refused.
#[test]
fn parquet_job_ids_read_only_to_name_a_record_name_the_right_one() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "tree.csv", TREE);
    let rows: Vec<String> = (0..40)
        .map(|i| {
            let user = if i == 27 { "u9" } else { "u1" };
            let start = if i == 33 { 0 } else { 1_767_000_000 };
            format!("{},{user},a,batch,,{start},1767001000,cpu=1", 1000 + 7 * i)
        })
        .collect();
    let write = |name: &str, rows: &[String]| {
        let path = jobs_parquet(dir.path(), "one.parquet", &rows.iter().map(String::as_str).collect::<Vec<_>>());
        let to = dir.path().join(name);
        super::usage::regroup(&path, &to, 8);
        to
    };
    let conf = write_file(dir.path(), "slurm.conf", &slurm_conf("CPU=1e20"));
    let run = |jobs: &Path| {
        fairshare_within_a_minute([
            "usage",
            "--tree",
            path_str(&dir.path().join("tree.csv")),
            "--jobs",
            path_str(jobs),
            "--slurm-conf",
            path_str(&conf),
            "--decay",
            "exact",
            "--half-life",
            "0",
            "--now",
            "1767830400",
            "--out",
            path_str(&dir.path().join("usage.parquet")),
        ])
    };
    let fine = write("fine.parquet", &rows[..30]);
    let out = run(&fine);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let unmatched =
        format!("1 job record(s) match no association and charge nothing, e.g. job 1189 at {}:28", fine.display());
    assert!(stderr.contains(&unmatched), "{stderr}");

    let bad = write("bad.parquet", &rows);
    let e = error_of(&run(&bad));
    let message = "job 1231: usage 1.767001e29 (billing 1e20 per second in partition \"batch\", QOS \"\") is beyond \
                   the 7.922816251426434e28 billing-seconds fairshare sums exactly";
    assert!(e.ends_with(&format!("bad.parquet:34: {message}")), "{e}");
    let mut negative = rows[..30].to_vec();
    negative[20] = negative[20].replacen("1140", "-1", 1);
    let e = error_of(&run(&write("negative.parquet", &negative)));
    assert!(e.ends_with("negative.parquet:21: row 21: job_id -1: expected a non-negative integer"), "{e}");
}
