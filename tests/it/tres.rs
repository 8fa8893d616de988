//! Per-TRES usage and the TRES columns: `GrpTRESMins` from the tree inputs, `GrpTRESRaw` from the
//! decayed TRES-seconds, `TRESRunMins` from running jobs' time limits, kept as slurmctld keeps them
//! (only with `AccountingStorageEnforce=limits`), and the same numbers in Parquet.

use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Float64Type, UInt64Type};

use super::usage::read_parquet;
use super::{fairshare, stdout_of, write_file};

/// The first pass; passes every 5 minutes, the last at `T0 + 1800`.
const T0: i64 = 1_767_225_600;

struct Site {
    _dir: tempfile::TempDir,
    tree: PathBuf,
    jobs: PathBuf,
    qos: PathBuf,
    dir: PathBuf,
}

/// A site of two users: u1 with a finished job and a running one under a QOS of factor 0.5 with
/// `NoDecay` (`qos_flags`), u2 with a running job without a time limit.
fn site(qos_flags: &str) -> Site {
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(
        dir.path(),
        "tree.csv",
        "id,parent_id,account,user,shares,usage,grp_tres_mins\n\
         1,,root,,1,0,\n\
         2,1,a,,1,0,\"GRES/gpu=600,cpu=60000\"\n\
         3,2,a,u1,1,0,\n\
         4,2,a,u2,1,0,cpu=100\n",
    );
    let jobs = write_file(
        dir.path(),
        "jobs.csv",
        &format!(
            "job_id,user,account,partition,qos,start,end,tres_alloc,time_limit\n\
             1,u1,a,p1,normal,{},{},\"cpu=4,gres/gpu=1\",120\n\
             2,u1,a,p1,half,{},,cpu=2,60\n\
             3,u2,a,p1,normal,{},,\"cpu=8,gres/gpu=2\",UNLIMITED\n",
            T0 - 3600,
            T0 + 1000,
            T0 + 100,
            T0 + 200
        ),
    );
    let qos = write_file(
        dir.path(),
        "qos.txt",
        &format!("Name|Priority|UsageFactor|Flags\nnormal|0|1.000000|\nhalf|0|0.500000|{qos_flags}\n"),
    );
    let path = dir.path().to_path_buf();
    Site { _dir: dir, tree, jobs, qos, dir: path }
}

fn conf(dir: &Path, enforce: &str) -> PathBuf {
    write_file(
        dir,
        &format!("slurm-{enforce}.conf"),
        &format!(
            "PriorityDecayHalfLife=7-0\nPriorityCalcPeriod=5\nAccountingStorageEnforce={enforce}\n\
             AccountingStorageTRES=gres/gpu,license/lic\nPartitionName=p1 TRESBillingWeights=cpu=1,gres/gpu=4\n"
        ),
    )
}

fn usage_args(s: &Site, conf: &Path) -> Vec<String> {
    let p = |p: &Path| p.to_str().unwrap().to_string();
    vec![
        "--tree".into(),
        p(&s.tree),
        "--jobs".into(),
        p(&s.jobs),
        "--slurm-conf".into(),
        p(conf),
        "--qos".into(),
        p(&s.qos),
        "--decay".into(),
        "slurm".into(),
        "--first-pass".into(),
        T0.to_string(),
        "--now".into(),
        (T0 + 1800).to_string(),
    ]
}

/// `Account|User|GrpTRESMins|GrpTRESRaw|TRESRunMins` rows of sshare.
fn tres_rows(s: &Site, conf: &Path) -> Vec<Vec<String>> {
    let mut args = vec!["sshare".to_string()];
    args.extend(usage_args(s, conf));
    args.extend(["-P", "-n", "-o", "Account,User,GrpTRESMins,GrpTRESRaw,TRESRunMins"].map(String::from));
    let out = fairshare(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stdout_of(&out).lines().map(|l| l.split('|').map(str::to_string).collect()).collect()
}

fn tres_value(list: &str, name: &str) -> u64 {
    let item = list.split(',').find_map(|i| i.strip_prefix(&format!("{name}="))).unwrap_or_else(|| panic!("{list}"));
    item.parse().unwrap()
}

#[test]
fn tres_run_mins_are_the_time_limits_left_after_the_last_pass() {
    let s = site("NoDecay");
    let rows = tres_rows(&s, &conf(&s.dir, "associations,limits"));
    let names: Vec<&str> = rows[0][4].split(',').map(|i| i.split('=').next().unwrap()).collect();
    // Tracking gres/gpu tracks its memory and utilisation too, as slurmctld completes the list.
    let builtin = ["cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages"];
    assert_eq!(names, [&builtin[..], &["gres/gpu", "gres/gpumem", "gres/gpuutil", "license/lic"]].concat());
    // Job 2 (u1): a 60-minute limit under a factor of 0.5 is 1800 s; the pass at T0+300 took
    // (300 - 100)·0.5 = 100 s, the five later passes 150 s each: 950 s per CPU are left.
    let u1 = 2 * 950;
    // Job 3 (u2): UNLIMITED is Slurm's 2^32-1 minutes; 1600 s have run by the last pass.
    let u2 = 4_294_967_295u64 * 60 - 1600;
    let (a, u1_row, u2_row) = (&rows[1], &rows[2], &rows[3]);
    assert_eq!((u1_row[1].as_str(), u2_row[1].as_str()), ("u1", "u2"));
    assert_eq!(tres_value(&u1_row[4], "cpu"), u1 / 60);
    assert_eq!(tres_value(&u1_row[4], "billing"), u1 / 60); // billed its 2 CPUs
    assert_eq!(tres_value(&u1_row[4], "gres/gpu"), 0); // the job with a GPU has ended
    assert_eq!(tres_value(&u2_row[4], "cpu"), 8 * u2 / 60);
    assert_eq!(tres_value(&u2_row[4], "gres/gpu"), 2 * u2 / 60);
    assert_eq!(tres_value(&u2_row[4], "billing"), 16 * u2 / 60);
    // An account holds its users' seconds, in minutes once summed.
    assert_eq!(tres_value(&a[4], "cpu"), (u1 + 8 * u2) / 60);
    assert_eq!(tres_value(&rows[0][4], "billing"), (u1 + 16 * u2) / 60);
    for row in &rows {
        assert_eq!(tres_value(&row[4], "energy"), 0);
        assert_eq!(tres_value(&row[4], "mem"), 0);
    }
    // GrpTRESMins as the tree gives it, in Slurm's TRES order; blank without limits.
    assert_eq!((a[2].as_str(), u1_row[2].as_str(), u2_row[2].as_str()), ("cpu=60000,gres/gpu=600", "", "cpu=100"));
}

/// The `usage_tres_raw` struct column's field `name`, and the `raw_usage` column, by association.
fn parquet_usage(batch: &RecordBatch, name: &str) -> Vec<(String, f64, f64)> {
    let users = batch.column_by_name("user").unwrap().as_string::<i32>().clone();
    let raw = batch.column_by_name("raw_usage").unwrap().as_primitive::<Float64Type>().clone();
    let tres = batch.column_by_name("usage_tres_raw").unwrap().as_struct().clone();
    let field = tres.column_by_name(name).unwrap().as_primitive::<Float64Type>().clone();
    (0..batch.num_rows())
        .map(|r| {
            (if users.is_valid(r) { users.value(r).to_string() } else { String::new() }, raw.value(r), field.value(r))
        })
        .collect()
}

#[test]
fn grp_tres_raw_is_the_decayed_usage_of_each_tres() {
    let s = site("NoDecay");
    let conf = conf(&s.dir, "associations,limits");
    let out_path = s.dir.join("usage.parquet");
    let mut args = vec!["compute".to_string()];
    args.extend(usage_args(&s, &conf));
    args.extend(["--out".to_string(), out_path.to_str().unwrap().to_string()]);
    let out = fairshare(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (batch, _) = read_parquet(&out_path);
    // u2's one job bills 8 CPUs + 2 GPUs × 4 = 16 per second: its CPU-seconds are half its usage,
    // its GPU-seconds an eighth, its billing the usage itself.
    let u2 = |name: &str| parquet_usage(&batch, name).into_iter().find(|(u, ..)| u == "u2").unwrap();
    let (_, raw, cpu) = u2("cpu");
    assert!(raw > 0.0);
    assert!((cpu - raw * 8.0 / 16.0).abs() <= 1e-9 * raw, "{cpu} {raw}");
    assert!((u2("gres/gpu").2 - raw * 2.0 / 16.0).abs() <= 1e-9 * raw);
    assert!((u2("billing").2 - raw).abs() <= 1e-9 * raw);
    assert_eq!(u2("energy").2, 0.0);
    // The root holds every user's TRES-seconds.
    let cpu_rows = parquet_usage(&batch, "cpu");
    let users: f64 = cpu_rows.iter().filter(|(u, ..)| !u.is_empty()).map(|r| r.2).sum();
    assert!((cpu_rows[0].2 - users).abs() <= 1e-9 * users);
    // The run seconds are there too, in seconds.
    let run = batch.column_by_name("tres_run_secs").unwrap().as_struct().clone();
    let run_cpu = run.column_by_name("cpu").unwrap().as_primitive::<UInt64Type>().clone();
    assert_eq!(run_cpu.value(0), 2 * 950 + 8 * (4_294_967_295u64 * 60 - 1600));

    // GrpTRESRaw prints those seconds in whole minutes.
    let rows = tres_rows(&s, &conf);
    let u2_row = rows.iter().find(|r| r[1] == "u2").unwrap();
    assert_eq!(tres_value(&u2_row[3], "cpu"), (cpu / 60.0) as u64);
}

#[test]
fn no_decay_qos_changes_no_association_usage() {
    // NoDecay leaves the QOS's own usage undecayed; associations decay whatever the job's QOS.
    let (with, without) = (site("NoDecay"), site(""));
    let rows = |s: &Site| tres_rows(s, &conf(&s.dir, "associations,limits"));
    assert_eq!(rows(&with), rows(&without));
}

#[test]
fn without_limits_nothing_per_tres_is_kept() {
    let s = site("NoDecay");
    let conf = conf(&s.dir, "associations");
    for row in tres_rows(&s, &conf) {
        for list in [&row[3], &row[4]] {
            assert_eq!(list.split(',').count(), 12, "{list}");
            assert!(list.split(',').all(|i| i.ends_with("=0")), "{list}");
        }
    }
    let out_path = s.dir.join("usage.parquet");
    let mut args = vec!["compute".to_string()];
    args.extend(usage_args(&s, &conf));
    args.extend(["--out".to_string(), out_path.to_str().unwrap().to_string()]);
    assert!(fairshare(&args).status.success());
    let (batch, _) = read_parquet(&out_path);
    assert!(batch.column_by_name("usage_tres_raw").is_none());
    assert!(batch.column_by_name("grp_tres_mins").is_some());
}

#[test]
fn grp_tres_mins_come_from_dumps() {
    let dir = tempfile::tempdir().unwrap();
    let dump = write_file(
        dir.path(),
        "dump.cfg",
        "Cluster - 'c':Fairshare=1:QOS='normal'\n\
         Parent - 'root'\n\
         User - 'root':DefaultAccount='root':AdminLevel='Administrator':Fairshare=1\n\
         Account - 'chem':Description='chem':Organization='chem':Fairshare=10:GrpTRESMins='cpu=6000,gres/gpu=60'\n\
         Parent - 'chem'\n\
         User - 'ann':DefaultAccount='chem':Fairshare=1:GrpTRESMins='gres/gpu=10'\n\
         User - 'bob':DefaultAccount='chem':Fairshare=1:GrpCPUMins=500\n",
    );
    let sshare_dump = write_file(
        dir.path(),
        "sshare.txt",
        "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|GrpCPUMins|CPURunMins\n\
         root|||1.000000|0||1.000000|||0\n \
         chem||10|1.000000|0|0.000000|0.000000||6000|0\n  \
         chem|ann|1|0.500000|0|0.000000|0.000000|1.000000||0\n",
    );
    let limits = |tree: &Path| -> Vec<String> {
        let out = fairshare(["sshare", "--tree", tree.to_str().unwrap(), "-P", "-n", "-o", "Account,User,GrpTRESMins"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        stdout_of(&out).lines().map(str::to_string).collect()
    };
    assert_eq!(
        limits(&dump),
        ["root||", " root|root|", " chem||cpu=6000,gres/gpu=60", "  chem|ann|gres/gpu=10", "  chem|bob|cpu=500"]
    );
    assert_eq!(limits(&sshare_dump), ["root||", " chem||cpu=6000", "  chem|ann|"]);
    // The limits travel through the Parquet tree `compute` writes, which reads back as a tree.
    let parquet = dir.path().join("tree.parquet");
    let out = fairshare(["compute", "--tree", dump.to_str().unwrap(), "--out", parquet.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(limits(&parquet), limits(&dump));
}

#[test]
fn a_bad_grp_tres_mins_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(
        dir.path(),
        "tree.csv",
        "id,parent_id,account,user,shares,usage,grp_tres_mins\n1,,root,,1,0,\n2,1,a,,1,0,gpus=3\n",
    );
    let out = fairshare(["sshare", "--tree", tree.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:3: GrpTRESMins: \"gpus\" is not a TRES Slurm tracks (cpu, mem, energy, node, billing, fs/disk, \
             vmem, pages, gres/NAME, license/NAME, bb/NAME)",
            tree.display()
        )),
        "{err}"
    );
}

#[test]
fn sacct_time_limits_feed_tres_run_mins() {
    let s = site("");
    let conf = conf(&s.dir, "limits");
    let sacct = write_file(
        &s.dir,
        "sacct.txt",
        &format!(
            "JobID|User|Account|Partition|QOS|Start|End|State|AllocTRES|Timelimit\n\
             7|u2|a|p1|normal|{}|Unknown|RUNNING|billing=4,cpu=4,node=1|01:00:00\n\
             7.batch||a||||Unknown|RUNNING|cpu=4,mem=0,node=1|\n",
            T0 + 200
        ),
    );
    let mut args = vec!["sshare".to_string()];
    args.extend(usage_args(&s, &conf));
    args[4] = sacct.to_str().unwrap().to_string();
    args.extend(["--jobs-format", "sacct", "-P", "-n", "-u", "u2", "-o", "User,TRESRunMins"].map(String::from));
    let out = fairshare(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let row = stdout_of(&out).lines().find_map(|l| l.strip_prefix("u2|")).unwrap().to_string();
    // A one-hour limit from T0+200, 1600 s run at the last pass: 2000 s × 4 CPUs.
    assert_eq!(tres_value(&row, "cpu"), 4 * 2000 / 60);
}
