//! `fairshare usage` (and `sshare --jobs`): job records → billed, decayed raw usage, checked
//! against values derived here from the spec's formulas (`slurm.md` §4, §11.7) rather than against
//! the binary's own output.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::Float64Type;
use data_gen::history::{HistorySpec, write_records_csv, write_records_parquet, write_records_sacct};
use data_gen::{TreeSpec, generate_tree, write_assoc_csv};
use fairshare_engine::tree::AssocRecord;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::properties::WriterProperties;

use super::{fairshare, stdout_of, write_file};

/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600;

const HEADER: &str = "job_id,user,account,partition,qos,start,end,tres_alloc\n";

/// A Parquet file as one record batch, with its key-value metadata.
pub(super) fn read_parquet(path: &Path) -> (RecordBatch, HashMap<String, String>) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let meta = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .map(|kv| kv.iter().map(|k| (k.key.clone(), k.value.clone().unwrap_or_default())).collect())
        .unwrap_or_default();
    let schema = builder.schema().clone();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(|b| b.unwrap()).collect();
    (arrow::compute::concat_batches(&schema, &batches).unwrap(), meta)
}

/// The records of a `usage --out` file, read back as a tree input.
fn records(path: &Path) -> Vec<AssocRecord> {
    fairshare_engine::io::parquet_tree::read(path).expect("usage.parquet reads back as a tree").records
}

/// Usage by user name (user rows only; the names are unique in these small trees).
fn user_usage(path: &Path) -> HashMap<String, f64> {
    records(path).into_iter().filter_map(|r| r.user.map(|u| (u, r.usage))).collect()
}

/// Runs `fairshare usage` with `args` plus `--out dir/name`, and returns the output path.
fn usage(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let mut all = vec!["usage"];
    all.extend_from_slice(args);
    all.extend(["--out", out.to_str().unwrap()]);
    stdout_of(&fairshare(&all));
    out
}

/// A tree `root → acct → users`, one share each, no usage.
fn flat_tree(dir: &Path, users: &[&str]) -> PathBuf {
    let mut text = String::from("id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,acct,,1,0\n");
    for (i, u) in users.iter().enumerate() {
        text.push_str(&format!("{},2,acct,{u},1,0\n", 10 + i));
    }
    write_file(dir, "tree.csv", &text)
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

/// Spec §11.7: billing with `TRESBillingWeights=CPU=1.0,Mem=0.25G,GRES/gpu=2.0,License/lic=5`
/// under SUM, MAX_TRES and MAX_TRES_GRES. Without decay (`--decay exact --half-life 0`) a job that
/// ran 100 s costs exactly 100 × its billing.
#[test]
fn billing_of_spec_11_7_end_to_end() {
    // [cpu, mem MB, node, gpu, lic] -> [SUM, MAX_TRES, MAX_TRES_GRES], as printed by Slurm's code.
    let rows: [([u64; 5], [f64; 3]); 7] = [
        ([1, 61440, 1, 0, 0], [16.0, 15.0, 15.0]),
        ([16, 1024, 1, 0, 0], [16.25, 16.0, 16.0]),
        ([16, 61440, 1, 0, 0], [31.0, 16.0, 16.0]),
        ([16, 65536, 1, 0, 0], [32.0, 16.0, 16.0]),
        ([4, 8192, 1, 4, 0], [14.0, 8.0, 12.0]),
        ([4, 8192, 1, 4, 2], [24.0, 18.0, 22.0]),
        ([32, 8192, 2, 1, 1], [41.0, 37.0, 39.0]),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut users: Vec<String> = (0..rows.len()).map(|i| format!("r{i}")).collect();
    users.push("noweights".into());
    let tree = flat_tree(dir.path(), &users.iter().map(String::as_str).collect::<Vec<_>>());
    let mut jobs = String::from(HEADER);
    for (i, ([cpu, mem, node, gpu, lic], _)) in rows.iter().enumerate() {
        jobs.push_str(&format!(
            "{i},r{i},acct,weighted,,{T0},{},\"cpu={cpu},mem={mem}M,node={node},gres/gpu={gpu},license/lic={lic}\"\n",
            T0 + 100
        ));
    }
    // billing_noweights: a partition without TRESBillingWeights bills the allocated CPUs.
    jobs.push_str(&format!("99,noweights,acct,plain,,{T0},{},\"cpu=16,mem=1024M,node=1\"\n", T0 + 100));
    let jobs = write_file(dir.path(), "jobs.csv", &jobs);
    let now = (T0 + 1000).to_string();
    for (column, flags) in [(0, ""), (1, "MAX_TRES"), (2, "MAX_TRES_GRES"), (2, "MAX_TRES,MAX_TRES_GRES")] {
        let conf = write_file(
            dir.path(),
            "slurm.conf",
            &format!(
                "PriorityFlags={flags}\n\
                 PartitionName=weighted TRESBillingWeights=CPU=1.0,Mem=0.25G,GRES/gpu=2.0,License/lic=5\n\
                 PartitionName=plain\n"
            ),
        );
        let out = usage(
            dir.path(),
            "usage.parquet",
            &[
                "--tree",
                tree.to_str().unwrap(),
                "--jobs",
                jobs.to_str().unwrap(),
                "--slurm-conf",
                conf.to_str().unwrap(),
                "--decay",
                "exact",
                "--half-life",
                "0",
                "--now",
                &now,
            ],
        );
        let got = user_usage(&out);
        for (i, (_, billing)) in rows.iter().enumerate() {
            let expected = 100.0 * billing[column];
            assert!(
                close(got[&format!("r{i}")], expected, 1e-12),
                "{flags:?} row {i}: {} vs {expected}",
                got[&format!("r{i}")]
            );
        }
        assert!(close(got["noweights"], 1600.0, 1e-12), "{flags:?}: {}", got["noweights"]);
        let acct = records(&out).into_iter().find(|r| r.user.is_none() && r.account == "acct").unwrap();
        let sum: f64 = rows.iter().map(|(_, b)| 100.0 * b[column]).sum::<f64>() + 1600.0;
        assert!(close(acct.usage, sum, 1e-12), "{flags:?}: account {} vs {sum}", acct.usage);
    }
}

/// Spec §4.3: usage is multiplied by the job QOS's UsageFactor; a negative factor is Slurm's
/// "unset" and means 1.
#[test]
fn qos_usage_factor_scales_usage() {
    let dir = tempfile::tempdir().unwrap();
    let tree = flat_tree(dir.path(), &["double", "half", "negative", "normal", "none"]);
    let qos = write_file(
        dir.path(),
        "qos.txt",
        "Name|Priority|UsageFactor|Flags|\nnormal|0|1.000000||\ndbl|0|2.000000||\nhalf|0|0.500000||\nneg|0|-1.000000||\n",
    );
    let conf = write_file(dir.path(), "slurm.conf", "PartitionName=p\n");
    let mut jobs = String::from(HEADER);
    for (i, (user, q)) in [("double", "dbl"), ("half", "half"), ("negative", "neg"), ("normal", "normal"), ("none", "")]
        .into_iter()
        .enumerate()
    {
        jobs.push_str(&format!("{i},{user},acct,p,{q},{T0},{},cpu=4\n", T0 + 100));
    }
    let jobs = write_file(dir.path(), "jobs.csv", &jobs);
    let now = (T0 + 500).to_string();
    let args = |qos: Option<&Path>| {
        let mut a = vec![
            "--tree".to_string(),
            tree.display().to_string(),
            "--jobs".into(),
            jobs.display().to_string(),
            "--slurm-conf".into(),
            conf.display().to_string(),
            "--decay".into(),
            "exact".into(),
            "--half-life".into(),
            "0".into(),
            "--now".into(),
            now.clone(),
        ];
        if let Some(q) = qos {
            a.extend(["--qos".to_string(), q.display().to_string()]);
        }
        a
    };
    let with = args(Some(&qos));
    let got = user_usage(&usage(dir.path(), "q.parquet", &with.iter().map(String::as_str).collect::<Vec<_>>()));
    // 4 CPUs × 100 s = 400 billing-seconds, times the factor.
    for (user, expected) in
        [("double", 800.0), ("half", 200.0), ("negative", 400.0), ("normal", 400.0), ("none", 400.0)]
    {
        assert_eq!(got[user], expected, "{user}");
    }
    // A job naming a QOS with no QOS dump given: factor 1.
    let without = args(None);
    let got = user_usage(&usage(dir.path(), "n.parquet", &without.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(got["double"], 400.0);
}

/// A data-gen site: tree, slurm.conf, QOS and a history in the given formats.
struct GenSite {
    dir: tempfile::TempDir,
    input: fairshare_engine::tree::TreeInput,
    spec: HistorySpec,
}

impl GenSite {
    fn new(associations: usize, records: u64, seed: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let input = generate_tree(&TreeSpec::new(associations, seed));
        let mut tree = Vec::new();
        write_assoc_csv(&mut tree, &input).unwrap();
        std::fs::write(dir.path().join("tree.csv"), tree).unwrap();
        std::fs::write(dir.path().join("slurm.conf"), data_gen::site::SLURM_CONF).unwrap();
        std::fs::write(dir.path().join("qos.txt"), data_gen::site::QOS).unwrap();
        // 20 days of jobs; some still run at `to`.
        let spec = HistorySpec { records, seed, from: T0, to: T0 + 20 * 86_400 };
        let mut csv = Vec::new();
        write_records_csv(&mut csv, &input, &spec).unwrap();
        std::fs::write(dir.path().join("jobs.csv"), csv).unwrap();
        GenSite { dir, input, spec }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `--tree ... --slurm-conf ... --qos ... --now <to>` and the given jobs file.
    fn args(&self, jobs: &str) -> Vec<String> {
        [
            "--tree",
            self.path("tree.csv").to_str().unwrap(),
            "--jobs",
            self.path(jobs).to_str().unwrap(),
            "--slurm-conf",
            self.path("slurm.conf").to_str().unwrap(),
            "--qos",
            self.path("qos.txt").to_str().unwrap(),
            "--now",
            &self.spec.to.to_string(),
        ]
        .map(String::from)
        .to_vec()
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Every account holds exactly the sum of its children; the root the sum of all users; users
/// without job records have no usage.
#[test]
fn usage_is_conserved_up_the_tree() {
    let site = GenSite::new(400, 3000, 7);
    let out = usage(site.dir.path(), "usage.parquet", &strs(&site.args("jobs.csv")));
    let recs = records(&out);
    assert_eq!(recs.len(), site.input.records.len());
    let mut children: HashMap<u64, f64> = HashMap::new();
    for r in &recs {
        if let Some(p) = r.parent_id {
            *children.entry(p).or_default() += r.usage;
        }
    }
    let users_total: f64 = recs.iter().filter(|r| r.is_user()).map(|r| r.usage).sum();
    assert!(users_total > 0.0);
    let mut accounts_with_children = 0;
    for r in recs.iter().filter(|r| !r.is_user()) {
        let sum = children.get(&r.id).copied().unwrap_or(0.0);
        assert!(
            close(r.usage, sum, 1e-12) && (sum == 0.0) == (r.usage == 0.0),
            "{}: {} vs Σ children {sum}",
            r.account,
            r.usage
        );
        accounts_with_children += usize::from(sum > 0.0);
        if r.parent_id.is_none() {
            assert!(close(r.usage, users_total, 1e-12), "root {} vs Σ users {users_total}", r.usage);
        }
    }
    assert!(accounts_with_children > 1);
    // Users no record names carry no usage, whatever the input tree said.
    let csv = std::fs::read_to_string(site.path("jobs.csv")).unwrap();
    let with_jobs: std::collections::HashSet<(String, String)> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .map(|f| (f[1].to_string(), f[2].to_string()))
        .collect();
    let mut idle = 0;
    for r in recs.iter().filter(|r| r.is_user()) {
        let key = (r.user.clone().unwrap(), r.account.clone());
        if with_jobs.contains(&key) {
            assert!(r.usage > 0.0, "{key:?} ran jobs");
        } else {
            assert_eq!(r.usage, 0.0, "{key:?} ran no job");
            idle += 1;
        }
    }
    assert!(idle > 0, "the history leaves some users idle");
}

/// Rewrites a Parquet file with row groups of at most `rows` rows.
pub(super) fn regroup(from: &Path, to: &Path, rows: usize) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(from).unwrap()).unwrap();
    let schema = builder.schema().clone();
    let props = WriterProperties::builder().set_max_row_group_row_count(Some(rows)).build();
    let mut writer = ArrowWriter::try_new(File::create(to).unwrap(), schema, Some(props)).unwrap();
    for batch in builder.build().unwrap() {
        writer.write(&batch.unwrap()).unwrap();
    }
    writer.close().unwrap();
}

fn row_groups(path: &Path) -> usize {
    ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().metadata().num_row_groups()
}

/// The usage column's bit patterns.
fn usage_bits(batch: &RecordBatch) -> Vec<u64> {
    batch.column_by_name("usage").unwrap().as_primitive::<Float64Type>().values().iter().map(|v| v.to_bits()).collect()
}

/// The same history as CSV, Parquet and sacct text gives the same usage.parquet data; only the
/// metadata naming the jobs file and its format differs. The thread count changes nothing, not even
/// a byte.
#[test]
fn job_formats_and_thread_counts_agree() {
    let site = GenSite::new(300, 4000, 11);
    write_records_parquet(&site.path("jobs.parquet"), &site.input, &site.spec).unwrap();
    let mut sacct = Vec::new();
    write_records_sacct(&mut sacct, &site.input, &site.spec).unwrap();
    std::fs::write(site.path("jobs.sacct"), sacct).unwrap();

    let dir = site.dir.path();
    let csv = usage(dir, "csv.parquet", &strs(&site.args("jobs.csv")));
    let pq = usage(dir, "pq.parquet", &strs(&site.args("jobs.parquet")));
    let sacct = usage(dir, "sacct.parquet", &strs(&site.args("jobs.sacct")));
    let (csv_batch, csv_meta) = read_parquet(&csv);
    assert!(usage_bits(&csv_batch).iter().any(|&b| f64::from_bits(b) > 0.0));
    assert_eq!(csv_meta["fairshare.jobs_format"], "csv");
    for (path, format) in [(&pq, "parquet"), (&sacct, "sacct")] {
        let (batch, meta) = read_parquet(path);
        assert_eq!(usage_bits(&batch), usage_bits(&csv_batch), "{format}");
        assert_eq!(batch.schema().fields(), csv_batch.schema().fields(), "{format}");
        for (a, b) in batch.columns().iter().zip(csv_batch.columns()) {
            assert_eq!(a.to_data(), b.to_data(), "{format}");
        }
        assert_eq!(meta["fairshare.jobs_format"], format);
        let strip = |m: &HashMap<String, String>| {
            let mut m = m.clone();
            m.remove("fairshare.jobs");
            m.remove("fairshare.jobs_format");
            m
        };
        assert_eq!(strip(&meta), strip(&csv_meta), "{format}");
    }

    // Many row groups, charged a row group per thread: byte-identical output for 1 and 2 threads.
    regroup(&site.path("jobs.parquet"), &site.path("groups.parquet"), 300);
    assert!(row_groups(&site.path("groups.parquet")) > 10);
    let mut outs = Vec::new();
    for threads in ["1", "2"] {
        let out = dir.join(format!("t{threads}.parquet"));
        let mut args = vec!["--threads".to_string(), threads.into(), "usage".into()];
        args.extend(site.args("groups.parquet"));
        args.extend(["--out".to_string(), out.display().to_string()]);
        stdout_of(&fairshare(&args));
        outs.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(outs[0], outs[1], "--threads 1 and --threads 2 differ");
    // The row groups' charges are added in file order, so the sums are the one-group file's (and
    // the CSV's) bit for bit.
    let (grouped, _) = read_parquet(&dir.join("t1.parquet"));
    assert_eq!(usage_bits(&grouped), usage_bits(&csv_batch));
}

/// `--decay exact`: usage is `∫ b·2^(-(now-t)/hl) dt` over the run, so one half-life later it has
/// halved exactly.
#[test]
fn exact_decay_halves_per_half_life() {
    let dir = tempfile::tempdir().unwrap();
    let tree = flat_tree(dir.path(), &["u1"]);
    let (start, end, cpus) = (T0, T0 + 3600, 8.0);
    let jobs = write_file(dir.path(), "jobs.csv", &format!("{HEADER}1,u1,acct,p,,{start},{end},cpu=8\n"));
    let hl = 86_400i64;
    let at = |now: i64, name: &str| {
        let out = usage(
            dir.path(),
            name,
            &[
                "--tree",
                tree.to_str().unwrap(),
                "--jobs",
                jobs.to_str().unwrap(),
                "--decay",
                "exact",
                "--half-life",
                "1-0",
                "--now",
                &now.to_string(),
            ],
        );
        let (_, meta) = read_parquet(&out);
        assert_eq!((meta["fairshare.decay"].as_str(), meta["fairshare.half_life"].as_str()), ("exact", "86400"));
        user_usage(&out)["u1"]
    };
    let now = end + 7200;
    let (fresh, later) = (at(now, "a.parquet"), at(now + hl, "b.parquet"));
    assert!((later / fresh - 0.5).abs() < 1e-12, "{later} / {fresh}");
    // The closed form of the integral: b·hl/ln2 · (2^(-(now-end)/hl) - 2^(-(now-start)/hl)).
    let h = hl as f64;
    let age = |t: i64| (now - t) as f64 / h;
    let expected = cpus * h / std::f64::consts::LN_2 * (2f64.powf(-age(end)) - 2f64.powf(-age(start)));
    assert!(close(fresh, expected, 1e-12), "{fresh} vs {expected}");
}

/// Slurm's decay thread (§4.2/4.3): one job billed 16 from the first pass, half-life 7 days, passes
/// every 300 s; after pass 1 the usage is 300·df^300·16 = 4798.350283 (§11.7), and later passes
/// follow the step `u ← u·df^300 (+ 300·df^300·16 while running)`.
#[test]
fn slurm_decay_accrual() {
    let dir = tempfile::tempdir().unwrap();
    let tree = flat_tree(dir.path(), &["u1"]);
    let jobs = write_file(dir.path(), "jobs.csv", &format!("{HEADER}1,u1,acct,p,,{T0},{},cpu=16\n", T0 + 3600));
    let conf = write_file(
        dir.path(),
        "slurm.conf",
        "PriorityDecayHalfLife=7-0\nPriorityCalcPeriod=5\nAccountingStorageEnforce=limits\nPartitionName=p\n",
    );
    let at = |now: i64| {
        let out = usage(
            dir.path(),
            "usage.parquet",
            &[
                "--tree",
                tree.to_str().unwrap(),
                "--jobs",
                jobs.to_str().unwrap(),
                "--slurm-conf",
                conf.to_str().unwrap(),
                "--first-pass",
                &T0.to_string(),
                "--now",
                &now.to_string(),
            ],
        );
        user_usage(&out)["u1"]
    };
    assert_eq!(format!("{:.6}", at(T0 + 300)), "4798.350283");
    // The state is the one after the last pass at or before --now.
    assert_eq!(at(T0 + 599), at(T0 + 300));
    let df: f64 = 1.0 - 0.693 / 604_800.0;
    let step = df.powf(300.0);
    let mut u = 0.0;
    for k in 1..=24 {
        u = u * step + if k <= 12 { 300.0 * step * 16.0 } else { 0.0 };
        if [2, 12, 13, 24].contains(&k) {
            let got = at(T0 + 300 * k);
            assert!(close(got, u, 1e-9), "pass {k}: {got} vs {u}");
        }
    }
    assert_eq!(format!("{u:.6}"), "57234.902343", "the stepping itself (spec's 24-pass accrual)");
}

/// `PriorityUsageResetPeriod=DAILY`: usage before the last local midnight is gone. In August,
/// Stockholm is UTC+2, so its midnight is 22:00 UTC the day before.
#[test]
fn reset_period_daily_follows_the_timezone() {
    let dir = tempfile::tempdir().unwrap();
    // (user, start, end) in UTC; now is 2026-08-19T10:00:00Z.
    let jobs: [(&str, &str, &str); 6] = [
        ("ua", "2026-08-18T20:00:00", "2026-08-18T21:00:00"), // before both midnights
        ("ub", "2026-08-18T22:30:00", "2026-08-18T23:30:00"), // after Stockholm's, before UTC's
        ("uc", "2026-08-18T21:30:00", "2026-08-18T22:30:00"), // spans Stockholm's midnight
        ("ud", "2026-08-18T23:30:00", "2026-08-19T00:30:00"), // spans UTC's midnight
        ("ue", "2026-08-19T01:00:00", "2026-08-19T02:00:00"), // after both
        ("uf", "2026-08-19T09:00:00", ""),                    // running at now
    ];
    let tree = flat_tree(dir.path(), &jobs.map(|j| j.0));
    let mut text = String::from(HEADER);
    for (i, (user, start, end)) in jobs.iter().enumerate() {
        text.push_str(&format!("{i},{user},acct,p,,{start},{end},cpu=1\n"));
    }
    let jobs_path = write_file(dir.path(), "jobs.csv", &text);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--tree",
            tree.to_str().unwrap(),
            "--jobs",
            jobs_path.to_str().unwrap(),
            "--now",
            "2026-08-19T10:00:00",
        ];
        args.extend_from_slice(extra);
        user_usage(&usage(dir.path(), "usage.parquet", &args))
    };
    let exact = ["--decay", "exact", "--half-life", "0"];
    // Seconds charged after the boundary, by hand: [none, UTC midnight, Stockholm midnight].
    let expected: [(&str, [f64; 3]); 6] = [
        ("ua", [3600.0, 0.0, 0.0]),
        ("ub", [3600.0, 0.0, 3600.0]),
        ("uc", [3600.0, 0.0, 1800.0]),
        ("ud", [3600.0, 1800.0, 3600.0]),
        ("ue", [3600.0, 3600.0, 3600.0]),
        ("uf", [3600.0, 3600.0, 3600.0]),
    ];
    let got = [
        run(&exact),
        run(&[&exact[..], &["--reset-period", "DAILY"]].concat()),
        run(&[&exact[..], &["--reset-period", "DAILY", "--timezone", "Europe/Stockholm"]].concat()),
    ];
    for (user, values) in expected {
        for (k, v) in values.into_iter().enumerate() {
            assert_eq!(got[k][user], v, "{user} case {k}");
        }
    }
    // Slurm's decay thread: the same sides of the boundary.
    let slurm = ["--decay", "slurm", "--half-life", "7-0", "--calc-period", "5", "--reset-period", "DAILY"];
    let utc = run(&slurm);
    let sthlm = run(&[&slurm[..], &["--timezone", "Europe/Stockholm"]].concat());
    for user in ["ua", "ub", "uc"] {
        assert_eq!(utc[user], 0.0, "{user} ended before UTC midnight");
    }
    assert_eq!(sthlm["ua"], 0.0, "ua ended before Stockholm's midnight");
    for user in ["ub", "uc"] {
        assert!(sthlm[user] > 0.0, "{user} ran after Stockholm's midnight");
    }
    for user in ["ud", "ue", "uf"] {
        assert!(utc[user] > 0.0 && sthlm[user] > 0.0, "{user} ran after both midnights");
    }
}

/// An SWF trace without `--tree`: the tree comes from the trace (root → g<gid> → u<uid>), and
/// without decay the usage is Σ allocated processors × run time, parsed here from the fixture.
#[test]
fn swf_trace_builds_its_own_tree() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/swf/kth-sp2-slice.swf");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let mut by_group: HashMap<String, f64> = HashMap::new();
    let mut by_user: HashMap<(String, String), f64> = HashMap::new();
    let mut jobs = 0;
    for line in text.lines().filter(|l| !l.trim_start().starts_with(';') && !l.trim().is_empty()) {
        let f: Vec<i64> = line.split_whitespace().map(|w| w.parse().unwrap()).collect();
        let (run, alloc, req, status, uid, gid) = (f[3], f[4], f[7], f[10], f[11], f[12]);
        // Partial-execution lines (status 2–4) are covered by the job's summary line; an unknown
        // wait starts a job at its submit time, which without decay changes nothing.
        let procs = if alloc >= 0 { alloc } else { req };
        if [2, 3, 4].contains(&status) || run < 0 || procs <= 0 || (status == 5 && run == 0) {
            continue;
        }
        let name = |p: char, id: i64| if id < 0 { format!("{p}_unknown") } else { format!("{p}{id}") };
        let usage = (procs * run) as f64;
        *by_group.entry(name('g', gid)).or_default() += usage;
        *by_user.entry((name('g', gid), name('u', uid))).or_default() += usage;
        jobs += 1;
    }
    assert_eq!(jobs, 200);
    let dir = tempfile::tempdir().unwrap();
    let out = usage(
        dir.path(),
        "usage.parquet",
        &["--jobs", fixture.to_str().unwrap(), "--decay", "exact", "--half-life", "0", "--now", "2000000000"],
    );
    let recs = records(&out);
    let roots: Vec<&AssocRecord> = recs.iter().filter(|r| r.parent_id.is_none()).collect();
    assert_eq!(roots.len(), 1);
    let root = roots[0];
    assert_eq!(root.account, "root");
    let total: f64 = by_group.values().sum();
    assert_eq!(root.usage, total);
    let accounts: HashMap<&str, &AssocRecord> =
        recs.iter().filter(|r| !r.is_user() && r.parent_id == Some(root.id)).map(|r| (r.account.as_str(), r)).collect();
    assert_eq!(accounts.len(), by_group.len());
    for (group, usage) in &by_group {
        assert_eq!(accounts[group.as_str()].usage, *usage, "{group}");
    }
    let users: Vec<&AssocRecord> = recs.iter().filter(|r| r.is_user()).collect();
    assert_eq!(users.len(), by_user.len());
    for u in users {
        let key = (u.account.clone(), u.user.clone().unwrap());
        assert_eq!(u.parent_id, Some(accounts[u.account.as_str()].id), "{key:?}");
        assert_eq!(u.usage, by_user[&key], "{key:?}");
    }
    assert_eq!(recs.len(), 1 + by_group.len() + by_user.len());
}

/// A trace that records no wait times (as LLNL-Atlas does: every job's is `-1`): by default each
/// job started at its submit time, so a job submitted at 100 s and running 1000 s has run 500 s
/// at 600 s; stderr and the metadata count them. `--swf-unknown-wait skip` skips them, and with
/// every job skipped the command fails, saying why and what would charge them.
#[test]
fn swf_unknown_waits_start_at_submit_or_fail_when_skipped() {
    let dir = tempfile::tempdir().unwrap();
    // Job 3 was cancelled before it ran (status 5, run time 0).
    let trace = write_file(
        dir.path(),
        "atlas.swf",
        "; UnixStartTime: 1000000\n\
         1 100 -1 1000 8 -1 -1 8 -1 -1 1 1 1 -1 -1 1 -1 -1\n\
         2 150 -1 100 4 -1 -1 4 -1 -1 0 2 1 -1 -1 1 -1 -1\n\
         3 160 -1 0 -1 -1 -1 16 -1 -1 5 2 1 -1 -1 1 -1 -1\n",
    );
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> =
            ["--jobs", trace.to_str().unwrap(), "--decay", "exact", "--half-life", "0", "--now", "1000600"]
                .map(String::from)
                .to_vec();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let out = dir.path().join("usage.parquet");
    let mut all = vec!["usage".to_string(), "--out".to_string(), out.to_str().unwrap().to_string()];
    all.extend(args(&[]));
    let run = fairshare(&all);
    stdout_of(&run);
    let got = user_usage(&out);
    assert_eq!((got["u1"], got["u2"]), (8.0 * 500.0, 4.0 * 100.0));
    let err = String::from_utf8_lossy(&run.stderr);
    let said = format!(
        "fairshare: charged 2 of 3 job records ({}); skipped 1 (cancelled before running: 1); 2 with an unknown \
         wait started at their submit time (--swf-unknown-wait zero)\n",
        trace.display()
    );
    assert!(err.contains(&said), "{err}");
    let (_, meta) = read_parquet(&out);
    for (key, value) in [
        ("job_records", "3"),
        ("job_records_charged", "2"),
        ("job_records_skipped", "1"),
        ("job_records_cancelled", "1"),
        ("job_records_unknown_wait", "0"),
        ("job_records_started_at_submit", "2"),
        ("swf_unknown_wait", "zero"),
    ] {
        assert_eq!(meta[&format!("fairshare.{key}")], value, "{key}");
    }

    std::fs::remove_file(&out).unwrap();
    all.extend(["--swf-unknown-wait".to_string(), "skip".to_string()]);
    let run = fairshare(&all);
    assert_eq!(run.status.code(), Some(1));
    assert!(!out.exists());
    let err = String::from_utf8_lossy(&run.stderr);
    let said = format!(
        "fairshare: error: {}: none of the 3 job records can be charged: cancelled before running: 1, unknown \
         wait: 2; --swf-unknown-wait zero charges a job whose wait is unknown from its submit time, as if it \
         started at once\n",
        trace.display()
    );
    assert!(err.ends_with(&said), "{err}");

    // The run directory's run.json counts them too.
    let run_dir = dir.path().join("run");
    let mut all = vec!["run".to_string(), "--out-dir".to_string(), run_dir.to_str().unwrap().to_string()];
    all.extend(args(&[]));
    stdout_of(&fairshare(&all));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let rows = &json["rows"];
    for (key, n) in [("job_records", 3), ("job_records_charged", 2), ("job_records_started_at_submit", 2)] {
        assert_eq!(rows[key].as_u64(), Some(n), "{key}: {rows}");
    }
    assert_eq!(json["parameters"]["swf_unknown_wait"], "zero");
}

/// Bad job records fail with the file and line, and write nothing.
#[test]
fn bad_records_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let tree = flat_tree(dir.path(), &["u1", "u2"]);
    let conf = write_file(dir.path(), "slurm.conf", "PartitionName=p\n");
    let qos = write_file(dir.path(), "qos.txt", "Name|Priority|UsageFactor\nnormal|0|1.0\n");
    let good = format!("1,u1,acct,p,normal,{T0},{},cpu=1\n", T0 + 10);
    let cases = [
        (format!("2,u2,acct,gpu_big,,{T0},{},cpu=1\n", T0 + 10), ["jobs.csv:3", "gpu_big", "slurm.conf"]),
        ("2,u2,acct,p,,yesterday,,cpu=1\n".to_string(), ["jobs.csv:3", "start", "yesterday"]),
        (format!("2,u2,acct,p,premium,{T0},{},cpu=1\n", T0 + 10), ["jobs.csv:3", "premium", "QOS"]),
    ];
    for (bad, needles) in cases {
        let jobs = write_file(dir.path(), "jobs.csv", &format!("{HEADER}{good}{bad}"));
        let out = dir.path().join("usage.parquet");
        let res = fairshare([
            "usage",
            "--tree",
            tree.to_str().unwrap(),
            "--jobs",
            jobs.to_str().unwrap(),
            "--slurm-conf",
            conf.to_str().unwrap(),
            "--qos",
            qos.to_str().unwrap(),
            "--now",
            &(T0 + 100).to_string(),
            "--out",
            out.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&res.stderr);
        assert!(!res.status.success(), "{bad}");
        for n in needles {
            assert!(stderr.contains(n), "{bad}: {n:?} not in {stderr}");
        }
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!out.exists(), "no output on error");
    }
    // A bad --now is a usage error naming the flag.
    let jobs = write_file(dir.path(), "jobs.csv", &format!("{HEADER}{good}"));
    let res = fairshare([
        "usage",
        "--tree",
        tree.to_str().unwrap(),
        "--jobs",
        jobs.to_str().unwrap(),
        "--now",
        "someday",
        "--out",
        dir.path().join("x.parquet").to_str().unwrap(),
    ]);
    assert!(!res.status.success() && String::from_utf8_lossy(&res.stderr).contains("--now"));
}

/// `sshare --jobs` recomputes usage first: its RawUsage column is `(uint64)usage_raw` (§10.1) of
/// what `usage` writes for the same inputs.
#[test]
fn sshare_prints_the_recomputed_raw_usage() {
    let site = GenSite::new(80, 600, 3);
    let args = site.args("jobs.csv");
    let out = usage(site.dir.path(), "usage.parquet", &strs(&args));
    let expected: HashMap<(String, String), u64> =
        records(&out).into_iter().map(|r| ((r.account, r.user.unwrap_or_default()), r.usage as u64)).collect();
    assert!(expected.values().any(|&v| v > 0));
    let mut sshare = vec!["sshare".to_string()];
    sshare.extend(args);
    sshare.extend(["-a".to_string(), "-P".into()]);
    let text = stdout_of(&fairshare(&sshare));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('|').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (c_acct, c_user, c_raw) = (col("Account"), col("User"), col("RawUsage"));
    let mut seen = 0;
    for line in lines {
        let f: Vec<&str> = line.split('|').collect();
        let key = (f[c_acct].trim().to_string(), f[c_user].to_string());
        assert_eq!(f[c_raw].parse::<u64>().unwrap(), expected[&key], "{key:?}");
        seen += 1;
    }
    assert_eq!(seen, expected.len());
}

/// An observer that asks to stop once it has heard `after` progress reports.
struct StopAfter {
    after: usize,
    heard: std::sync::atomic::AtomicUsize,
}

impl fairshare_engine::pipeline::Observer for StopAfter {
    fn progress(&self, _what: &str, _done: u64, _total: u64, _unit: &str) {
        self.heard.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn interrupted(&self) -> bool {
        self.heard.load(std::sync::atomic::Ordering::Relaxed) >= self.after
    }
}

/// A charge asked to stop stops with `Error::Interrupted` and does not ask again, for Parquet
/// row groups and text blocks alike; one that is not asked finishes.
#[test]
fn an_interrupted_charge_stops_and_is_not_asked_again() {
    let site = GenSite::new(200, 3000, 5);
    write_records_parquet(&site.path("jobs.parquet"), &site.input, &site.spec).unwrap();
    regroup(&site.path("jobs.parquet"), &site.path("groups.parquet"), 100);
    for (jobs, format) in [
        ("groups.parquet", fairshare_engine::usage::JobFormat::Parquet),
        ("jobs.csv", fairshare_engine::usage::JobFormat::Csv),
    ] {
        let options = fairshare_engine::pipeline::SiteOptions {
            tree: Some(site.path("tree.csv")),
            jobs: Some(site.path(jobs)),
            jobs_format: Some(format),
            now: Some(site.spec.to.to_string()),
            ..Default::default()
        };
        let resolved = options.resolve().unwrap();
        let stop = StopAfter { after: 1, heard: 0.into() };
        let mut input = resolved.tree_input().unwrap();
        let e = resolved.charge(&mut input, &stop).unwrap_err();
        assert!(matches!(e, fairshare_base::Error::Interrupted(_)), "{jobs}: {e}");
        assert_eq!(stop.heard.into_inner(), 1, "{jobs}: asked once, after the first part");
        let never = StopAfter { after: usize::MAX, heard: 0.into() };
        let mut input = resolved.tree_input().unwrap();
        let report = resolved.charge(&mut input, &never).unwrap().unwrap();
        assert_eq!(report.records, 3000, "{jobs}");
    }
}

/// Usage sums are exact: the records in any order, cut into any row groups, give the same bits
/// (a sum in floating point would differ in the last bits from one order to another).
#[test]
fn usage_is_the_same_bits_for_any_record_order() {
    let site = GenSite::new(300, 6000, 23);
    let csv = std::fs::read_to_string(site.path("jobs.csv")).unwrap();
    let (header, rows) = csv.split_once('\n').unwrap();
    let mut rows: Vec<&str> = rows.lines().collect();
    let mut outs = Vec::new();
    for (k, name) in ["given.csv", "reversed.csv", "shuffled.csv"].iter().enumerate() {
        match k {
            1 => rows.reverse(),
            // A fixed interleaving: every seventh row first, and so on.
            2 => rows = (0..7).flat_map(|r| rows.iter().skip(r).step_by(7).copied()).collect(),
            _ => {}
        }
        std::fs::write(site.path(name), format!("{header}\n{}\n", rows.join("\n"))).unwrap();
        let (batch, _) = read_parquet(&usage(site.dir.path(), &format!("{name}.parquet"), &strs(&site.args(name))));
        outs.push(usage_bits(&batch));
    }
    assert!(outs[0].iter().any(|&b| f64::from_bits(b) > 0.0));
    assert_eq!(outs[0], outs[1], "reversed");
    assert_eq!(outs[0], outs[2], "shuffled");
}

/// Writes the rows of the Parquet file `from` into `parts` files of about equal rows, the rows
/// of part k being those at positions ≡ k (mod parts): every part spans the whole history.
fn split_records(from: &Path, dir: &Path, parts: usize) -> Vec<PathBuf> {
    let (batch, _) = read_parquet(from);
    (0..parts)
        .map(|k| {
            let take =
                arrow::array::UInt32Array::from_iter_values((k..batch.num_rows()).step_by(parts).map(|i| i as u32));
            let part = arrow::compute::take_record_batch(&batch, &take).unwrap();
            let path = dir.join(format!("part-{parts}-{k}.parquet"));
            let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), part.schema(), None).unwrap();
            w.write(&part).unwrap();
            w.close().unwrap();
            path
        })
        .collect()
}

/// A record set split into parts, each charged on its own (as a cluster's tasks would) and
/// merged in any order, gives the usage of the whole set charged at once, bit for bit: for
/// Slurm's decay (classic and Fair Tree) and the exact decay.
#[test]
fn parts_charged_apart_and_merged_in_any_order_equal_the_whole() {
    use fairshare_engine::pipeline::SiteOptions;
    let site = GenSite::new(300, 5000, 31);
    write_records_parquet(&site.path("jobs.parquet"), &site.input, &site.spec).unwrap();
    for (decay, algorithm) in [
        (fairshare_engine::pipeline::Decay::Slurm, fairshare_engine::pass::Algorithm::Classic),
        (fairshare_engine::pipeline::Decay::Slurm, fairshare_engine::pass::Algorithm::FairTree),
        (fairshare_engine::pipeline::Decay::Exact, fairshare_engine::pass::Algorithm::FairTree),
    ] {
        let options = SiteOptions {
            tree: Some(site.path("tree.csv")),
            jobs: Some(site.path("jobs.parquet")),
            slurm_conf: Some(site.path("slurm.conf")),
            qos: Some(site.path("qos.txt")),
            now: Some(site.spec.to.to_string()),
            decay: Some(decay),
            algorithm: Some(algorithm),
            ..Default::default()
        };
        let resolved = options.resolve().unwrap();
        let mut whole = resolved.tree_input().unwrap();
        let whole_report = resolved.charge(&mut whole, &fairshare_engine::pipeline::Silent).unwrap().unwrap();
        let bits = |input: &fairshare_engine::tree::TreeInput| {
            input.records.iter().map(|r| r.usage.to_bits()).collect::<Vec<_>>()
        };
        assert!(whole.records.iter().any(|r| r.usage > 0.0));
        for parts in [1, 3, 7] {
            let files = split_records(&site.path("jobs.parquet"), site.dir.path(), parts);
            let mut input = resolved.tree_input().unwrap();
            // Charged last part first, then merged pairwise from the middle out.
            let mut partials: Vec<_> = files.iter().rev().map(|f| resolved.charge_part(&input, f).unwrap()).collect();
            let mut total = partials.remove(partials.len() / 2);
            for p in &partials {
                total.merge(p).unwrap();
            }
            let report = total.finish(&mut input, &site.path("jobs.parquet")).unwrap();
            assert_eq!(bits(&input), bits(&whole), "{decay:?} {algorithm:?}, {parts} parts");
            assert_eq!(report.charged, whole_report.charged);
            assert_eq!(report.pass_start.is_some(), algorithm == fairshare_engine::pass::Algorithm::Classic);
            assert_eq!(
                report.pass_start.map(|p| p.iter().map(|u| u.to_bits()).collect::<Vec<_>>()),
                whole_report.pass_start.as_ref().map(|p| p.iter().map(|u| u.to_bits()).collect())
            );
        }
    }
    // flux's decays replay the records in time order: no parts.
    let options = SiteOptions {
        tree: Some(site.path("tree.csv")),
        jobs: Some(site.path("jobs.parquet")),
        now: Some(site.spec.to.to_string()),
        decay: Some(fairshare_engine::pipeline::Decay::FluxClean),
        ..Default::default()
    };
    let resolved = options.resolve().unwrap();
    let input = resolved.tree_input().unwrap();
    let e = resolved.charge_part(&input, &site.path("jobs.parquet")).unwrap_err();
    assert!(e.to_string().starts_with("flux's decays replay the records in time order"), "{e}");
}
