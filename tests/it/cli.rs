//! The command-line contract: the default run, options, format detection, Parquet output.

use std::fs::File;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Float64Type, UInt32Type};

use super::usage::{read_parquet, regroup};
use super::{fairshare, stdout_of, write_file};

const TREE: &str = "id,parent_id,account,user,shares,usage\n\
1,,root,,1,0\n\
2,1,physics,,60,0\n\
21,2,physics,zoe,1,300\n\
22,2,physics,amy,1,100\n\
3,1,bio,,40,0\n\
31,3,bio,bob,parent,50\n";

#[test]
fn no_arguments_runs_the_embedded_site() {
    let out = stdout_of(&fairshare(Vec::<&str>::new()));
    let mut lines = out.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("Account                    User  RawShares  NormShares    RawUsage   NormUsage")
    );
    assert!(lines.next().unwrap().starts_with("-------------------- ----------"));
    assert!(lines.next().unwrap().starts_with("root "));
    assert!(out.contains(" test_lab ") && out.contains("parent"), "{out}");
}

#[test]
fn sshare_options_shape_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(dir.path(), "t.csv", TREE);
    let t = tree.to_str().unwrap();
    // Lineage order: users by name within an account.
    let p = stdout_of(&fairshare(["sshare", "--tree", t, "-P", "-o", "Account,User,FairShare"]));
    assert_eq!(
        p,
        "Account|User|FairShare\nroot||\n bio||\n  bio|bob|1.000000\n physics||\n  physics|amy|0.666667\n  physics|zoe|0.333333\n"
    );
    let ending = stdout_of(&fairshare(["sshare", "--tree", t, "-p", "-n", "-o", "acc,user"]));
    assert_eq!(ending.lines().next(), Some("root||"));
    let users = stdout_of(&fairshare(["sshare", "--tree", t, "-P", "-n", "-u", "amy", "-o", "Account,User"]));
    assert_eq!(users, "root|\n bio|\n physics|\n  physics|amy\n");
    let accounts = stdout_of(&fairshare(["sshare", "--tree", t, "-P", "-n", "-A", "bio", "-o", "Account,User"]));
    assert_eq!(accounts, " bio|\n  bio|bob\n");
    let classic = stdout_of(&fairshare(["sshare", "--tree", t, "--algo", "classic", "-l", "-P", "-n"]));
    assert_eq!(classic.lines().next().unwrap().split('|').count(), 10, "classic -l has no LevelFS: {classic}");
    let zoe = |extra: &[&str]| {
        let mut args =
            vec!["sshare", "--tree", t, "--algo", "classic", "-P", "-n", "-u", "zoe", "-o", "User,FairShare"];
        args.extend_from_slice(extra);
        stdout_of(&fairshare(&args))
    };
    let (damp, undamped) = (zoe(&["--dampening", "2"]), zoe(&[]));
    let f =
        |s: &str| s.lines().find(|l| l.starts_with("zoe")).unwrap().split('|').nth(1).unwrap().parse::<f64>().unwrap();
    assert!((f(&damp) - f(&undamped).sqrt()).abs() < 1e-6, "dampening 2 takes the square root: {damp} {undamped}");

    // Without job records too, slurm.conf's PriorityFlags and dampening choose the algorithm.
    let conf = write_file(dir.path(), "slurm.conf", "PriorityFlags=NO_FAIR_TREE\nFairShareDampeningFactor=2\n");
    let by_conf = stdout_of(&fairshare(["sshare", "--tree", t, "--slurm-conf", conf.to_str().unwrap(), "-l", "-P"]));
    let by_flags = stdout_of(&fairshare(["sshare", "--tree", t, "--algo", "classic", "--dampening", "2", "-l", "-P"]));
    assert_eq!(by_conf, by_flags);
}

#[test]
fn formats_are_detected() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write_file(dir.path(), "a.txt", TREE);
    let flux = write_file(dir.path(), "b.txt", "0,root,%^+_nouser,1,10\n1,a,%^+_nouser,1,10\n2,a,u1,1,4\n2,a,u2,1,6\n");
    let dump = stdout_of(&fairshare(["sshare", "--tree", csv.to_str().unwrap(), "-l", "-P"]));
    let dump_path = write_file(dir.path(), "c.txt", &dump);
    for p in [&csv, &dump_path] {
        let out = stdout_of(&fairshare(["sshare", "--tree", p.to_str().unwrap(), "-l", "-P"]));
        assert_eq!(out, dump, "{}", p.display());
    }
    let out = stdout_of(&fairshare([
        "sshare",
        "--tree",
        flux.to_str().unwrap(),
        "--algo",
        "flux",
        "-P",
        "-n",
        "-o",
        "User,FairShare",
    ]));
    assert_eq!(out, "|\n|\nu1|1.000000\nu2|0.500000\n");
}

#[test]
fn compute_writes_parquet_that_reads_back_as_a_tree() {
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(dir.path(), "t.csv", TREE);
    let out = dir.path().join("fs.parquet");
    stdout_of(&fairshare([
        "compute",
        "--tree",
        tree.to_str().unwrap(),
        "--algo",
        "classic",
        "--dampening",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]));
    let (batch, meta) = read_parquet(&out);
    assert_eq!(batch.num_rows(), 6);
    assert_eq!(meta["fairshare.algorithm"], "classic");
    assert_eq!(meta["fairshare.dampening"], "3");
    assert_eq!(meta["fairshare.schema_version"], "1");
    let names: Vec<String> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
    for c in [
        "id",
        "parent_id",
        "depth",
        "account",
        "user",
        "raw_shares",
        "norm_shares",
        "raw_usage",
        "norm_usage",
        "effective_usage",
        "level_fs",
        "rank",
        "fs_factor",
    ] {
        assert!(names.iter().any(|n| n == c), "missing column {c}: {names:?}");
    }
    let fs = batch.column_by_name("fs_factor").unwrap().as_primitive::<Float64Type>();
    let users = batch.column_by_name("is_user").unwrap().as_boolean();
    for i in 0..batch.num_rows() {
        assert_eq!(fs.is_valid(i), users.value(i), "fs_factor is set for users only");
    }
    let rank = batch.column_by_name("rank").unwrap().as_primitive::<UInt32Type>();
    assert_eq!(rank.null_count(), 6, "classic has no ranks");

    // The output is a valid tree input: same numbers again.
    let a = stdout_of(&fairshare(["sshare", "--tree", tree.to_str().unwrap(), "-l", "-P"]));
    let b = stdout_of(&fairshare(["sshare", "--tree", out.to_str().unwrap(), "-l", "-P"]));
    assert_eq!(a, b);
}

/// Parquet written by other tools reads whatever its codec: pyarrow, pandas and DuckDB write Snappy
/// by default, others gzip, LZ4 or Brotli. (The codecs belong to the Parquet reader every input
/// shares; the tree is the one checked here.)
#[test]
fn parquet_inputs_read_whatever_codec_wrote_them() {
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{BrotliLevel, Compression, GzipLevel};
    use parquet::file::properties::WriterProperties;

    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(dir.path(), "t.csv", TREE);
    let zstd = dir.path().join("zstd.parquet");
    stdout_of(&fairshare(["compute", "--tree", tree.to_str().unwrap(), "--out", zstd.to_str().unwrap()]));
    let (batch, _) = read_parquet(&zstd);
    let expected = stdout_of(&fairshare(["sshare", "--tree", tree.to_str().unwrap(), "-l", "-P"]));
    for codec in [
        Compression::SNAPPY,
        Compression::GZIP(GzipLevel::default()),
        Compression::LZ4_RAW,
        Compression::LZ4,
        Compression::BROTLI(BrotliLevel::default()),
        Compression::UNCOMPRESSED,
    ] {
        let path = dir.path().join(format!("{codec}.parquet"));
        let props = WriterProperties::builder().set_compression(codec).build();
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let got = fairshare(["sshare", "--tree", path.to_str().unwrap(), "-l", "-P"]);
        assert_eq!(stdout_of(&got), expected, "{codec}");
    }
}

/// A tree in many row groups reads as the same tree in one, whatever the thread count (the groups
/// are decoded a wave of one per thread at a time and appended), and a bad row in a later group is
/// reported with its row in the file.
#[test]
fn tree_parquet_of_many_row_groups_reads_as_one_group() {
    use arrow::array::Float64Array;
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let mut csv = Vec::new();
    data_gen::write_assoc_csv(&mut csv, &data_gen::generate_tree(&data_gen::TreeSpec::new(300, 11))).unwrap();
    let tree = write_file(dir.path(), "t.csv", std::str::from_utf8(&csv).unwrap());
    let one = dir.path().join("one.parquet");
    stdout_of(&fairshare(["compute", "--tree", tree.to_str().unwrap(), "--out", one.to_str().unwrap()]));
    let many = dir.path().join("many.parquet");
    regroup(&one, &many, 7);
    let sshare = |path: &std::path::Path, threads: &str| {
        fairshare(["sshare", "--tree", path.to_str().unwrap(), "-l", "-P", "--threads", threads])
    };
    let expected = stdout_of(&sshare(&one, "1"));
    assert_eq!(expected.lines().count(), 301, "a header and every association");
    for threads in ["1", "2", "3"] {
        assert_eq!(stdout_of(&sshare(&many, threads)), expected, "{threads} threads");
    }

    // A null usage is caught as its group is decoded, a NaN once the columns are joined: both
    // name row 250 of the file.
    let (batch, _) = read_parquet(&one);
    let usage = batch.column_by_name("raw_usage").unwrap().as_primitive::<Float64Type>();
    for (name, bad_value) in [("null", None), ("nan", Some(f64::NAN))] {
        let broken: Float64Array =
            usage.iter().enumerate().map(|(i, u)| if i == 249 { bad_value } else { u }).collect();
        let i = batch.schema().index_of("raw_usage").unwrap();
        let mut columns = batch.columns().to_vec();
        columns[i] = Arc::new(broken);
        let mut fields: Vec<_> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
        fields[i] = fields[i].clone().with_nullable(true);
        let schema = Arc::new(arrow::datatypes::Schema::new(fields));
        let bad = dir.path().join("bad_one.parquet");
        let mut w = parquet::arrow::ArrowWriter::try_new(File::create(&bad).unwrap(), schema.clone(), None).unwrap();
        w.write(&RecordBatch::try_new(schema, columns).unwrap()).unwrap();
        w.close().unwrap();
        let bad_many = dir.path().join(format!("{name}.parquet"));
        regroup(&bad, &bad_many, 7);
        for threads in ["1", "2", "3"] {
            let out = sshare(&bad_many, threads);
            assert!(!out.status.success());
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(&format!("{name}.parquet")) && err.contains("250"),
                "{name}, {threads} threads: {err}"
            );
        }
    }
}

/// A tree saved from pandas, whose integer columns with a missing value become floats (`60.0`),
/// reads as the integer one; a real fraction is an error naming the line.
#[test]
fn tree_integers_written_as_floats_read_as_integers() {
    let dir = tempfile::tempdir().unwrap();
    // Every number of TREE written as a float, as pandas writes it.
    let floats: String = TREE
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let fields: Vec<String> = line
                .split(',')
                .map(|f| {
                    if i > 0 && !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) {
                        format!("{f}.0")
                    } else {
                        f.into()
                    }
                })
                .collect();
            fields.join(",") + "\n"
        })
        .collect();
    assert!(floats.contains("2.0,1.0,physics,,60.0,0.0"), "{floats}");
    let sshare = |name: &str, text: &str| {
        let path = write_file(dir.path(), name, text);
        fairshare(["sshare", "--tree", path.to_str().unwrap(), "-l", "-P"])
    };
    assert_eq!(stdout_of(&sshare("floats.csv", &floats)), stdout_of(&sshare("t.csv", TREE)));
    let out = sshare("half.csv", &floats.replace("60.0", "60.5"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("half.csv:3") && err.contains("60.5"), "{err}");
}

#[test]
fn run_writes_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    stdout_of(&fairshare(["run", "--out-dir", run.to_str().unwrap()]));
    let text = std::fs::read_to_string(run.join("sshare.txt")).unwrap();
    assert!(text.starts_with("Account "));
    let (batch, _) = read_parquet(&run.join("associations.parquet"));
    assert_eq!(batch.num_rows(), text.lines().count() - 2);
}

/// Slurm 26.11's decay thread run pass by pass on one job (billable 16, half-life 7 days, 24
/// passes of 300 s, AccountingStorageEnforce=limits): the sshare rows after the last pass.
#[test]
fn usage_from_job_records_matches_slurms_decay_thread() {
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(
        dir.path(),
        "tree.csv",
        "id,parent_id,account,user,shares,usage\n1,,root,,0,0\n2,1,acctA,,1,0\n3,2,acctA,u1,1,0\n",
    );
    let jobs = write_file(
        dir.path(),
        "jobs.csv",
        "job_id,user,account,partition,qos,start,end,tres_alloc\n1,u1,acctA,p1,,1767225600,1767229200,cpu=16,mem=16384M,node=1\n",
    );
    let conf = write_file(
        dir.path(),
        "slurm.conf",
        "PriorityDecayHalfLife=7-0\nPriorityCalcPeriod=5\nPriorityUsageResetPeriod=NONE\nPriorityFlags=\nAccountingStorageEnforce=limits\nPartitionName=p1\n",
    );
    let qos = write_file(dir.path(), "qos.txt", "Name|Priority|UsageFactor\nnormal|0|1.000000\n");
    let expected = [
        (
            "fair-tree",
            9,
            [
                "root|||0.000000|57234||1.000000||",
                " acctA||1|1.000000|57234|1.000000|1.000000||1.000000",
                "  acctA|u1|1|1.000000|57234|1.000000|1.000000|1.000000|1.000000",
            ],
        ),
        (
            "classic",
            8,
            [
                "root|||1.000000|57234||1.000000|",
                " acctA||1|1.000000|57234|1.000000|1.000000|",
                "  acctA|u1|1|1.000000|57234|1.000000|1.000000|0.500000",
            ],
        ),
    ];
    let base = [
        "sshare",
        "--tree",
        tree.to_str().unwrap(),
        "--jobs",
        jobs.to_str().unwrap(),
        "--slurm-conf",
        conf.to_str().unwrap(),
    ];
    for (algo, fields, rows) in expected {
        let mut args = base.to_vec();
        args.extend([
            "--qos",
            qos.to_str().unwrap(),
            "--decay",
            "slurm",
            "--first-pass",
            "1767225600",
            "--now",
            "1767232800",
        ]);
        args.extend(["--algo", algo, "-l", "-p", "-n"]);
        let out = stdout_of(&fairshare(&args));
        let got: Vec<String> = out.lines().map(|l| l.split('|').take(fields).collect::<Vec<_>>().join("|")).collect();
        assert_eq!(got, rows, "{algo}");
    }
    // Without --now the state is undefined: an error, not a guess.
    let out = fairshare(base);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--now"));
}

/// `explain` states the factor sshare prints, the job's factors sum to sprio's priority, and an
/// unknown name is an error.
#[test]
fn explain_agrees_with_sshare_and_sprio() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");
    let file = |n: &str| format!("{site}/{n}");
    let usage = [
        "--tree".to_string(),
        file("tree.csv"),
        "--jobs".into(),
        file("jobs.csv"),
        "--slurm-conf".into(),
        file("slurm.conf"),
        "--qos".into(),
        file("qos.txt"),
        "--now".into(),
        "2026-01-08T00:00:00".into(),
        "--algo".into(),
        "fair-tree".into(),
    ];
    let sshare = stdout_of(&fairshare(["sshare", "-a", "-P"].iter().map(|s| s.to_string()).chain(usage.clone())));
    let gus_fs = sshare.lines().find(|l| l.contains("|gus|")).unwrap().rsplit('|').next().unwrap().to_string();
    let text = stdout_of(&fairshare(["explain".to_string(), "gus".into()].into_iter().chain(usage.clone())));
    assert!(text.contains(&format!(" = {gus_fs}\n")), "{text}\nsshare says {gus_fs}");
    let vs =
        stdout_of(&fairshare(["explain", "gus", "--vs", "nia"].iter().map(|s| s.to_string()).chain(usage.clone())));
    assert!(vs.contains("Their paths part under root: chemistry") && vs.contains("astro_lab"), "{vs}");

    // sprio's own `--jobs` filters job ids: score the tree with the recomputed usage instead.
    let dir = tempfile::tempdir().unwrap();
    let charged = dir.path().join("usage.parquet");
    let mut args = vec!["usage".to_string()];
    args.extend(usage.clone());
    args.extend(["--out".to_string(), charged.display().to_string()]);
    stdout_of(&fairshare(args));
    let queue = [
        "--tree".to_string(),
        charged.display().to_string(),
        "--pending".into(),
        file("pending.csv"),
        "--slurm-conf".into(),
        file("slurm.conf"),
        "--qos".into(),
        file("qos.txt"),
        "--now".into(),
        "2026-01-08T00:00:00".into(),
        "--algo".into(),
        "fair-tree".into(),
    ];
    let sprio = stdout_of(&fairshare(
        ["sprio", "-j", "200001", "-o", "%i %Y"].iter().map(|s| s.to_string()).chain(queue.clone()),
    ));
    let priority = sprio.lines().nth(1).unwrap().split_whitespace().nth(1).unwrap().to_string();
    let job = stdout_of(&fairshare(["explain", "--job", "200001"].iter().map(|s| s.to_string()).chain(queue)));
    assert!(job.contains(&format!("truncated) = {priority}\n")), "{job}\nsprio says {priority}");

    let out = fairshare(["explain".to_string(), "nobody".into()].into_iter().chain(usage));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no association \"nobody\""));
}

/// What-if flags: `--set-shares` changes the shares the pass sees (an account, a user, `parent`),
/// `--billing` the weights usage is billed with; unknown names are errors.
#[test]
fn what_if_shares_and_billing() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");
    let file = |n: &str| format!("{site}/{n}");
    let sshare = |extra: &[&str]| {
        let mut args: Vec<String> = ["sshare", "-a", "-P", "--algo", "classic", "--tree"].map(String::from).to_vec();
        args.push(file("tree.csv"));
        args.extend(extra.iter().map(|s| s.to_string()));
        fairshare(args)
    };
    let field = |text: &str, account: &str, user: &str, col: usize| -> String {
        let line = text.lines().find(|l| {
            let f: Vec<&str> = l.split('|').collect();
            f[0].trim() == account && f[1] == user
        });
        line.unwrap().split('|').nth(col).unwrap().to_string()
    };
    let base = stdout_of(&sshare(&[]));
    // econ_lab 244 of 244+1412+3000+600+244+0 = 5500 shares at the root.
    assert_eq!(field(&base, "econ_lab", "", 3), format!("{:.6}", 244.0 / 5500.0));
    let more = stdout_of(&sshare(&["--set-shares", "econ_lab=1244", "--set-shares", "pat@econ_lab=parent"]));
    assert_eq!(field(&more, "econ_lab", "", 2), "1244");
    assert_eq!(field(&more, "econ_lab", "", 3), format!("{:.6}", 1244.0 / 6500.0));
    assert_eq!(field(&more, "econ_lab", "pat", 2), "parent");
    let bad = sshare(&["--set-shares", "nolab=5"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("no association \"nolab\""));

    let usage = |extra: &[&str]| {
        let mut args: Vec<String> = ["sshare", "-a", "-P", "--now", "2026-01-08T00:00:00"].map(String::from).to_vec();
        for (flag, name) in [("--tree", "tree.csv"), ("--jobs", "jobs.csv"), ("--slurm-conf", "slurm.conf")] {
            args.push(flag.into());
            args.push(file(name));
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        fairshare(args)
    };
    let billed = stdout_of(&usage(&[]));
    let free = stdout_of(&usage(&["--billing", "shared=CPU=0", "--billing", "skylake=CPU=0"]));
    let raw = |t: &str| field(t, "root", "", 4).parse::<u64>().unwrap();
    assert!(raw(&free) < raw(&billed), "free partitions bill less: {} vs {}", raw(&free), raw(&billed));
    let bad = usage(&["--billing", "nowhere=CPU=1"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("\"nowhere\" is not defined"));
}

/// `compare` correlates a variant with itself perfectly and lists movers; `diff` reports exactly
/// the share change made between two runs.
#[test]
fn compare_and_diff() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");
    let tree = format!("{site}/tree.csv");
    let out = stdout_of(&fairshare(["compare", "--tree", &tree, "--variants", "fair-tree,classic,fair-tree", "--all"]));
    let corr: Vec<&str> =
        out.lines().skip_while(|l| !l.starts_with("Spearman")).nth(2).unwrap().split_whitespace().collect();
    assert_eq!((corr[1], corr[3]), ("1.0000", "1.0000"), "{out}");
    assert!(out.contains("Biggest movers, fair-tree → classic:"), "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("econ_lab/")).count(), 3, "{out}");
    let bad = fairshare(["compare", "--tree", &tree, "--variants", "fair-tree:dampening=2x"]);
    assert!(!bad.status.success());
    let zero = fairshare(["compare", "--tree", &tree, "--variants", "classic:dampening=0"]);
    let err = String::from_utf8_lossy(&zero.stderr);
    assert!(
        err.contains("--variants classic:dampening=0: dampening=0: must be at least 1 (1 is no dampening)"),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    stdout_of(&fairshare(["run", "--site", &format!("{site}/site.toml"), "--out-dir", a.to_str().unwrap()]));
    stdout_of(&fairshare([
        "run",
        "--site",
        &format!("{site}/site.toml"),
        "--set-shares",
        "econ_lab=1000",
        "--out-dir",
        b.to_str().unwrap(),
    ]));
    let diff = stdout_of(&fairshare(["diff", a.to_str().unwrap(), b.to_str().unwrap()]));
    assert!(diff.contains("29 associations in both, 0 only in"), "{diff}");
    assert!(diff.contains("1 share change\n  econ_lab") && diff.contains("244 → 1000"), "{diff}");
    assert!(diff.contains("0 usage changes"), "{diff}");
    // The what-if is recorded in run.json, so the diff names the parameter that changed.
    assert!(
        diff.contains("1 parameter change\n  set_shares                               (none) → econ_lab=1000\n"),
        "{diff}"
    );
    let c = dir.path().join("c");
    stdout_of(&fairshare([
        "run",
        "--site",
        &format!("{site}/site.toml"),
        "--billing",
        "abudhabi=CPU=1.0,Mem=0.25G",
        "--out-dir",
        c.to_str().unwrap(),
    ]));
    let diff = stdout_of(&fairshare(["diff", a.to_str().unwrap(), c.to_str().unwrap()]));
    assert!(
        diff.contains("  billing                                  (none) → abudhabi=CPU=1.0,Mem=0.25G\n"),
        "{diff}"
    );
    let same = stdout_of(&fairshare(["diff", a.to_str().unwrap(), a.to_str().unwrap()]));
    assert!(same.contains("0 parameter changes") && same.contains("0 share changes"), "{same}");
    assert!(same.contains("0 fair-share factor changes"), "{same}");
}

/// Every command given no input runs the same embedded site with the same settings, so
/// `explain` explains the number `run` printed.
#[test]
fn the_embedded_site_is_one_site() {
    let factor = |text: &str| -> String {
        let line = text.lines().find(|l| l.split_whitespace().nth(1) == Some("dana")).expect("dana's row");
        line.split_whitespace().nth(7).unwrap().to_string()
    };
    let run = stdout_of(&fairshare(["run"]));
    let sshare = stdout_of(&fairshare(["sshare", "-l"]));
    assert_eq!(factor(&run), factor(&sshare));
    let explain = stdout_of(&fairshare(["explain", "dana"]));
    assert!(explain.contains(&format!("= {}\n", factor(&run))), "{explain}\n{run}");
    // Outputs name the embedded files, not the per-process directory they were unpacked to.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fs.parquet");
    stdout_of(&fairshare(["compute", "--out", out.to_str().unwrap()]));
    let reader = parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&out).unwrap()).unwrap();
    let meta =
        parquet::file::reader::FileReader::metadata(&reader).file_metadata().key_value_metadata().unwrap().clone();
    let get = |k: &str| meta.iter().find(|kv| kv.key == k).and_then(|kv| kv.value.clone()).unwrap();
    assert_eq!(get("fairshare.source"), "<embedded default site>/tree.csv");
    assert_eq!(get("fairshare.jobs"), "<embedded default site>/jobs.csv");
}

/// `compare --all` lists by place (1 = highest) with aligned columns; its Parquet names each row
/// by id and records what was compared.
#[test]
fn compare_lists_by_place_and_records_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmp.parquet");
    let text =
        stdout_of(&fairshare(["compare", "--variants", "fair-tree,classic", "--all", "--out", out.to_str().unwrap()]));
    let rows: Vec<&str> =
        text.lines().skip_while(|l| !l.starts_with("association")).skip(1).take_while(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 19, "{text}");
    let place = |l: &str| -> u32 { l.split('(').nth(1).unwrap().split(')').next().unwrap().trim().parse().unwrap() };
    assert!(rows.windows(2).all(|w| place(w[0]) <= place(w[1])), "{text}");
    // The columns stay aligned whatever the place's width.
    let opens = |l: &str| -> Vec<usize> { l.match_indices('(').map(|(i, _)| i).collect() };
    assert!(rows.iter().all(|l| opens(l) == opens(rows[0])), "{text}");
    let batch = fairshare_engine::io::read_parquet_whole(&out).unwrap();
    let names: Vec<String> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names[0], "id");
    assert!(names.contains(&"place_fair_tree".to_string()) && names.contains(&"fs_classic".to_string()), "{names:?}");
    let reader = parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&out).unwrap()).unwrap();
    let meta =
        parquet::file::reader::FileReader::metadata(&reader).file_metadata().key_value_metadata().unwrap().clone();
    assert!(meta.iter().any(|kv| kv.key == "fairshare.variants" && kv.value.as_deref() == Some("fair-tree,classic")));
}

/// Slurm's spellings: `sprio -S -y`, `sshare -e` and `-v`; run.json's parameters keep their types.
#[test]
fn slurm_spellings_and_typed_run_parameters() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");
    let (tree, pending, conf) =
        (format!("{site}/tree.csv"), format!("{site}/pending.csv"), format!("{site}/slurm.conf"));
    let sprio = |sort: &str| {
        stdout_of(&fairshare([
            "sprio",
            "--tree",
            &tree,
            "--pending",
            &pending,
            "--slurm-conf",
            &conf,
            "--now",
            "1767830400",
            "-S",
            sort,
            "-h",
        ]))
    };
    let by_priority = sprio("-y");
    let prio: Vec<u64> = by_priority.lines().map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap()).collect();
    assert!(prio.len() > 1 && prio.windows(2).all(|w| w[0] >= w[1]), "{by_priority}");
    assert_ne!(by_priority, sprio("y"));

    let fields = stdout_of(&fairshare(["sshare", "-e"]));
    assert!(fields.starts_with("Account           Cluster"), "{fields}");
    assert!(fields.contains("FairShare") && fields.contains("TRESRunMins") && fields.lines().count() == 4, "{fields}");
    let verbose = fairshare(["sshare", "-v"]);
    assert!(String::from_utf8_lossy(&verbose.stderr).contains(
        "<embedded default site>/tree.csv: 29 associations, classic with usage from <embedded default site>/jobs.csv"
    ));

    let dir = tempfile::tempdir().unwrap();
    stdout_of(&fairshare(["run", "--out-dir", dir.path().join("r").to_str().unwrap()]));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r/run.json")).unwrap()).unwrap();
    let p = &json["parameters"];
    assert!(p["half_life"].is_u64() && p["calc_period"].is_u64() && p["dampening"].is_u64(), "{p}");
    assert!(p["charge_job_end"].is_boolean() && p["decay"].is_string(), "{p}");
}

/// The what-if flags work on the commands that score: `sprio` (`--job-records`) and `score`
/// (`--jobs`) take the job records, `--half-life` and `--billing` like every other command that
/// computes. The id filter `sprio -j/--jobs` keeps Slurm's meaning.
#[test]
fn sprio_and_score_take_the_usage_and_what_if_flags() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");
    let base: Vec<String> =
        [("--tree", "tree.csv"), ("--pending", "pending.csv"), ("--slurm-conf", "slurm.conf"), ("--qos", "qos.txt")]
            .iter()
            .flat_map(|(flag, file)| [flag.to_string(), format!("{site}/{file}")])
            .chain(["--now".to_string(), "2026-01-08T00:00:00".to_string()])
            .collect();
    let records = format!("{site}/jobs.csv");
    let sprio = |extra: &[&str]| {
        let mut args = vec!["sprio".to_string()];
        args.extend(base.iter().cloned());
        // sprio's `--jobs` lists job ids, as Slurm's does.
        args.extend(["--job-records".to_string(), records.clone()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        stdout_of(&fairshare(&args))
    };
    // Two inputs on standard input are named by sprio's own flags.
    let two = fairshare(["sprio", "--tree", "-", "--pending", "p.csv", "--job-records", "-"]);
    let err = String::from_utf8_lossy(&two.stderr);
    assert!(err.contains("standard input (`-`) is given to --tree and --job-records"), "{err}");
    let plain = sprio(&[]);
    assert_ne!(plain, sprio(&["--half-life", "1-0"]));
    assert_ne!(plain, sprio(&["--billing", "abudhabi=CPU=4"]));
    let without_jobs = stdout_of(&fairshare(
        ["sprio", "--tree", &format!("{site}/tree.csv"), "--pending", &format!("{site}/pending.csv")]
            .into_iter()
            .chain(["--slurm-conf", &format!("{site}/slurm.conf"), "--now", "2026-01-08T00:00:00"]),
    ));
    assert_ne!(plain, without_jobs);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("jobs.parquet");
    let mut args = vec!["score".to_string()];
    args.extend(base.iter().cloned());
    args.extend(["--jobs".into(), records.clone(), "--half-life".into(), "14-0".into()]);
    args.extend(["--out".into(), out.display().to_string()]);
    stdout_of(&fairshare(&args));
    assert!(out.is_file());
}

/// Times and durations take every spelling a newcomer tries, on the command line and in a site
/// file; a bad one in a site file names the file and line.
#[test]
fn times_and_durations_take_every_spelling() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");
    let sshare = |extra: &[&str]| {
        let mut args: Vec<String> = ["sshare", "-P"].iter().map(|s| s.to_string()).collect();
        for (flag, file) in [("--tree", "tree.csv"), ("--jobs", "jobs.csv"), ("--slurm-conf", "slurm.conf")] {
            args.extend([flag.to_string(), format!("{site}/{file}")]);
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        stdout_of(&fairshare(&args))
    };
    let reference = sshare(&["--now", "1767830400"]);
    for now in [
        "2026-01-08",
        "2026-01-08T00:00",
        "2026-01-08T00:00:00Z",
        "2026-01-08T01:00:00+01:00",
        "2026-01-07T19:00:00-0500",
    ] {
        assert_eq!(sshare(&["--now", now]), reference, "--now {now}");
    }
    let fortnight = sshare(&["--now", "1767830400", "--half-life", "14-0"]);
    assert_ne!(fortnight, reference);
    assert_eq!(sshare(&["--now", "1767830400", "--half-life", "14d"]), fortnight);
    assert_eq!(
        sshare(&["--now", "1767830400", "--calc-period", "5m"]),
        sshare(&["--now", "1767830400", "--calc-period", "5"])
    );
    // `now` is a time too (sprio's help promises it as the default).
    let live = fairshare([
        "sprio",
        "--tree",
        &format!("{site}/tree.csv"),
        "--pending",
        &format!("{site}/pending.csv"),
        "--slurm-conf",
        &format!("{site}/slurm.conf"),
        "--now",
        "now",
    ]);
    stdout_of(&live);

    let dir = tempfile::tempdir().unwrap();
    let copy = |name: &str| std::fs::copy(format!("{site}/{name}"), dir.path().join(name)).unwrap();
    for f in ["slurm.conf", "qos.txt", "tree.csv", "jobs.csv", "pending.csv"] {
        copy(f);
    }
    let body = |now: &str| {
        format!(
            "slurm_conf = \"slurm.conf\"\nqos = \"qos.txt\"\ntree = \"tree.csv\"\njobs = \"jobs.csv\"\n\
             decay = \"slurm\"\nnow = {now}\n"
        )
    };
    let run = |now: &str| {
        let file = dir.path().join("site.toml");
        std::fs::write(&file, body(now)).unwrap();
        fairshare(["run", "--site", file.to_str().unwrap()])
    };
    let by_text = stdout_of(&run("\"2026-01-08T00:00:00\""));
    assert_eq!(stdout_of(&run("1767830400")), by_text);
    assert_eq!(stdout_of(&run("2026-01-08T00:00:00Z")), by_text);
    assert_eq!(stdout_of(&run("2026-01-08")), by_text);
    let bad = run("\"yesterday\"");
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("site.toml:6: now = yesterday: time \"yesterday\" is neither epoch seconds"), "{err}");
}

/// A site file not given is never silent: stderr says which defaults stand in for it.
#[test]
fn missing_site_files_are_named_on_stderr() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");
    let (tree, jobs) = (format!("{site}/tree.csv"), format!("{site}/jobs.csv"));
    let out = fairshare(["sshare", "--tree", &tree, "--jobs", &jobs, "--now", "2026-01-08"]);
    stdout_of(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fairshare: no --slurm-conf: Slurm's defaults apply: PriorityDecayHalfLife 7-00:00:00, PriorityCalcPeriod 00:05:00, no TRESBillingWeights (a job is billed its CPUs)"), "{err}");
    assert!(err.contains("fairshare: no --qos: every QOS charges its usage whole (UsageFactor 1)"), "{err}");
    let out = fairshare(["sshare", "--tree", &tree, "--jobs", &jobs, "--now", "2026-01-08", "--half-life", "14d"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Slurm's defaults apply: PriorityCalcPeriod 00:05:00, no TRESBillingWeights"), "{err}");
    // Given, nothing is said.
    let out = fairshare([
        "sshare",
        "--tree",
        &tree,
        "--jobs",
        &jobs,
        "--now",
        "2026-01-08",
        "--slurm-conf",
        &format!("{site}/slurm.conf"),
        "--qos",
        &format!("{site}/qos.txt"),
    ]);
    stdout_of(&out);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("no --"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// What a dataframe user reads: every Parquet output names its versions, and the `prio_*`
/// columns say they hold weighted terms, not factors.
#[test]
fn parquet_outputs_describe_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let kv = |path: &std::path::Path| -> Vec<(String, String)> {
        let reader = parquet::file::reader::SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
        let meta = parquet::file::reader::FileReader::metadata(&reader).file_metadata().key_value_metadata().cloned();
        meta.unwrap_or_default().into_iter().map(|kv| (kv.key, kv.value.unwrap_or_default())).collect()
    };
    let usage = dir.path().join("usage.parquet");
    stdout_of(&fairshare(["usage", "--out", usage.to_str().unwrap()]));
    assert!(kv(&usage).iter().any(|(k, v)| k == "fairshare.version" && v == env!("CARGO_PKG_VERSION")));
    assert!(kv(&usage).iter().any(|(k, _)| k == "fairshare.schema_version"));
    let run = dir.path().join("run");
    stdout_of(&fairshare(["run", "--out-dir", run.to_str().unwrap()]));
    let jobs = run.join("jobs.parquet");
    assert!(kv(&jobs).iter().any(|(k, v)| k == "fairshare.prio_columns" && v.starts_with("weighted: ")));
    let file = std::fs::File::open(&jobs).unwrap();
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let schema = builder.schema();
    let prio = schema.field_with_name("prio_fairshare").unwrap();
    assert!(prio.metadata()["description"].starts_with("weighted: PriorityWeight"), "{prio:?}");
    assert!(schema.field_with_name("priority").unwrap().metadata().is_empty());
}

/// Long commands draw a progress line on a terminal, and nothing of it into a log or a pipe.
#[cfg(target_os = "linux")]
#[test]
fn progress_only_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let hist = dir.path().join("hist");
    let args =
        ["usage", "--every", "1d", "--from", "2026-01-01", "--to", "2026-01-08", "--out", hist.to_str().unwrap()];
    let piped = fairshare(args);
    stdout_of(&piped);
    assert!(!String::from_utf8_lossy(&piped.stderr).contains('\r'));
    // `script` (util-linux) gives the command a terminal.
    std::fs::remove_dir_all(&hist).unwrap();
    let line = format!("{} {} 2>&1", env!("CARGO_BIN_EXE_fairshare"), args.join(" "));
    let tty = std::process::Command::new("script").args(["-qec", &line, "/dev/null"]).output().expect("script runs");
    let seen = String::from_utf8_lossy(&tty.stdout);
    assert!(tty.status.success(), "{seen}");
    assert!(seen.contains("fairshare: writing the history 100.0% (8/8 instants)"), "{seen}");
}

/// `compare` with its default variants on the seed site, `parent` shares and all: Fair Tree,
/// classic and flux side by side, nothing left out.
#[test]
fn compare_by_default_puts_the_three_algorithms_side_by_side() {
    let out = fairshare(["compare", "--all"]);
    let text = stdout_of(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("left out"), "{err}");
    // The correlation table's header, then one row per variant.
    let mut lines = text.lines().skip_while(|l| !l.starts_with("Spearman")).skip(1);
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["fair-tree", "classic", "flux"], "{text}");
    for variant in header {
        let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!((row[0], row.len()), (variant, 4), "{text}");
    }
    // Every user association has a factor under each (no `-`).
    let table = text.lines().skip_while(|l| !l.starts_with("association")).skip(1).take_while(|l| !l.is_empty());
    let rows: Vec<&str> = table.collect();
    assert!(!rows.is_empty(), "{text}");
    for row in rows {
        assert_eq!(row.matches('(').count(), 3, "{row}");
        assert!(!row.contains(" - "), "{row}");
    }
}

/// Flags win over the site file, `--decay` and `--timezone` included (clap defaults used to make
/// them look given, so the file's values won).
#[test]
fn flags_win_over_the_site_file() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site/site.toml");
    let dir = tempfile::tempdir().unwrap();
    let params = |name: &str, extra: &[&str]| -> serde_json::Value {
        let out = dir.path().join(name);
        let mut args = vec!["run", "--site", site, "--out-dir", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        stdout_of(&fairshare(&args));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
        json["parameters"].clone()
    };
    assert_eq!(params("a", &[])["decay"], "slurm");
    let p = params("b", &["--decay", "exact", "--timezone", "Europe/Berlin"]);
    assert_eq!((p["decay"].as_str(), p["timezone"].as_str()), (Some("exact"), Some("Europe/Berlin")), "{p}");
}

/// Every command reads a site file (`--site`), and what it prints is what `run` writes for the
/// same site; `compare`'s classic column under Slurm's decay is classic as `sshare` prints it
/// after the last pass (accounts at the pass's start), not a steady state of Fair Tree's usage.
#[test]
fn every_command_takes_the_site_file_and_agrees_with_run() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site/site.toml");
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    stdout_of(&fairshare(["run", "--site", site, "--out-dir", run_dir.to_str().unwrap()]));
    let sshare = stdout_of(&fairshare(["sshare", "--site", site, "-a", "-l"]));
    assert_eq!(sshare, std::fs::read_to_string(run_dir.join("sshare.txt")).unwrap());
    let sprio = stdout_of(&fairshare(["sprio", "--site", site]));
    assert_eq!(sprio, std::fs::read_to_string(run_dir.join("sprio.txt")).unwrap());

    // sshare's classic FairShare per user, from its parsable output.
    let classic =
        stdout_of(&fairshare(["sshare", "--site", site, "--algo", "classic", "-P", "-o", "Account,User,FairShare"]));
    let expected: Vec<(String, String)> = classic
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (!f[1].is_empty()).then(|| (format!("{}/{}", f[0].trim(), f[1]), f[2].to_string()))
        })
        .collect();
    let compared = stdout_of(&fairshare(["compare", "--site", site, "--variants", "classic,fair-tree", "--all"]));
    assert!(expected.len() > 10, "{classic}");
    for (who, factor) in &expected {
        let line = compared.lines().find(|l| l.split_whitespace().next() == Some(who.as_str()));
        let line = line.unwrap_or_else(|| panic!("{who} is not in\n{compared}"));
        assert_eq!(line.split_whitespace().nth(1), Some(factor.as_str()), "{who}: {line}");
    }
}

/// A history's instant is what `compute --now` gives at that instant, classic included: between
/// passes, with jobs running, classic's accounts hold the values of the last pass's start.
#[test]
fn a_history_instant_is_the_state_compute_gives_then() {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");
    let dir = tempfile::tempdir().unwrap();
    let (history, single) = (dir.path().join("h"), dir.path().join("c.parquet"));
    let inputs = |rest: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["--tree", "tree.csv", "--jobs", "jobs.csv", "--slurm-conf", "slurm.conf"]
            .iter()
            .enumerate()
            .map(|(k, a)| if k % 2 == 1 { format!("{site}/{a}") } else { a.to_string() })
            .collect();
        args.extend(["--qos".to_string(), format!("{site}/qos.txt")]);
        args.extend(rest.iter().map(|s| s.to_string()));
        args
    };
    for algo in ["classic", "fair-tree"] {
        let at = "2026-01-07T13:07:00";
        let mut args = vec!["usage".to_string()];
        args.extend(inputs(&["--algo", algo, "--at", &format!("{at},2026-01-08"), "--out", history.to_str().unwrap()]));
        stdout_of(&fairshare(&args));
        let mut args = vec!["compute".to_string()];
        args.extend(inputs(&["--algo", algo, "--now", at, "--out", single.to_str().unwrap()]));
        stdout_of(&fairshare(&args));
        let (h, _) = read_parquet(&history.join("date=2026-01-07/130700.parquet"));
        let (c, _) = read_parquet(&single);
        for column in ["effective_usage", "fs_factor"] {
            let (h, c) = (h[column].as_primitive::<Float64Type>(), c[column].as_primitive::<Float64Type>());
            assert_eq!(h.len(), c.len());
            for (row, (a, b)) in h.values().iter().zip(c.values()).enumerate() {
                assert!((a - b).abs() <= 1e-12, "{algo} {column} row {row}: history {a}, compute {b}");
            }
        }
    }
}
