//! `fairshare run`: the run directory, its determinism and atomic replacement, `--site` files, and
//! a flux-accounting site written back.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;
use rusqlite::{Connection, params};

use super::usage::read_parquet;
use super::{csv_fields, fairshare, stdout_of, write_file, write_row_groups};

const FILES: [&str; 6] =
    [".fairshare-output", "associations.parquet", "jobs.parquet", "run.json", "sprio.txt", "sshare.txt"];

fn seed_site() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-site")
}

/// Non-empty lines after the header.
fn data_lines(path: &Path) -> u64 {
    std::fs::read_to_string(path).unwrap().lines().skip(1).filter(|l| !l.trim().is_empty()).count() as u64
}

/// `fairshare [pre...] run [args...] --out-dir dir`.
fn run_into(dir: &Path, pre: &[&str], args: &[&str]) {
    let mut all: Vec<&str> = pre.to_vec();
    all.push("run");
    all.extend_from_slice(args);
    all.extend(["--out-dir", dir.to_str().unwrap()]);
    stdout_of(&fairshare(&all));
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn run_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).expect("run.json is JSON")
}

/// The data of a Parquet file: its columns, without the key-value metadata.
fn columns(batch: &RecordBatch) -> Vec<arrow::array::ArrayData> {
    batch.columns().iter().map(|c| c.to_data()).collect()
}

/// A copy of the seed site (with its site.toml, whose paths are relative) in `dir`.
fn copy_seed_site(dir: &Path) -> PathBuf {
    for e in std::fs::read_dir(seed_site()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    dir.join("site.toml")
}

#[test]
fn embedded_run_writes_the_five_files() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("run");
    run_into(&d, &[], &[]);
    assert_eq!(names(&d), FILES);
    let json = run_json(&d);
    let rows = &json["rows"];
    let site = seed_site();
    assert_eq!(rows["associations"].as_u64(), Some(data_lines(&site.join("tree.csv"))));
    assert_eq!(rows["job_records"].as_u64(), Some(data_lines(&site.join("jobs.csv"))));
    assert_eq!(rows["pending_jobs"].as_u64(), Some(data_lines(&site.join("pending.csv"))));
    // The six inputs, each hashed: the embedded copies hash like the example files.
    let inputs = json["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 6);
    for input in inputs {
        let hash = input["xxh3_64"].as_str().unwrap();
        assert!(hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()), "{input}");
        let path = input["path"].as_str().unwrap();
        let name = path.strip_prefix("<embedded default site>/").unwrap_or_else(|| panic!("{path}"));
        let bytes = std::fs::read(site.join(name)).unwrap();
        assert_eq!(hash, format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes)), "{name}");
        assert_eq!(input["bytes"].as_u64(), Some(bytes.len() as u64), "{name}");
    }
    // sshare.txt: a header and a dashes line, then one line per association.
    let sshare = std::fs::read_to_string(d.join("sshare.txt")).unwrap();
    let (assoc, _) = read_parquet(&d.join("associations.parquet"));
    assert_eq!(assoc.num_rows(), sshare.lines().count() - 2);
    assert_eq!(Some(assoc.num_rows() as u64), rows["associations"].as_u64());
    let (jobs, _) = read_parquet(&d.join("jobs.parquet"));
    assert_eq!(Some(jobs.num_rows() as u64), rows["priority_rows"].as_u64());
    assert!(jobs.num_rows() as u64 >= data_lines(&site.join("pending.csv")));
}

/// run.json without its timings.
fn timeless(dir: &Path) -> serde_json::Value {
    let mut j = run_json(dir);
    assert!(j["timings_s"]["total"].is_number());
    // Linux reports each stage's peak memory; it varies from run to run like the timings.
    assert!(j["peak_rss_bytes"]["usage"].as_u64().is_some_and(|b| b > 0), "{j}");
    j.as_object_mut().unwrap().remove("timings_s");
    j.as_object_mut().unwrap().remove("peak_rss_bytes");
    j
}

/// Two runs, and runs with 1 and 2 threads, write the same bytes (run.json: all but the timings
/// and memory peaks).
fn assert_reproducible(site: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = [tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("t1"), tmp.path().join("t2")];
    run_into(&dirs[0], &[], site);
    run_into(&dirs[1], &[], site);
    run_into(&dirs[2], &["--threads", "1"], site);
    run_into(&dirs[3], &["--threads", "2"], site);
    for d in &dirs[1..] {
        for f in ["associations.parquet", "jobs.parquet", "sshare.txt", "sprio.txt"] {
            assert!(
                std::fs::read(dirs[0].join(f)).unwrap() == std::fs::read(d.join(f)).unwrap(),
                "{f} differs between {} and {}",
                dirs[0].display(),
                d.display()
            );
        }
        assert_eq!(timeless(&dirs[0]), timeless(d));
    }
}

#[test]
fn site_runs_are_reproducible() {
    let tmp = tempfile::tempdir().unwrap();
    let site = copy_seed_site(tmp.path());
    assert_reproducible(&["--site", site.to_str().unwrap()]);
}

#[test]
fn embedded_runs_are_reproducible() {
    assert_reproducible(&[]);
}

/// A failing run leaves the previous run directory as it was, and no temporary directory.
#[test]
fn failed_run_leaves_the_previous_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("D");
    run_into(&d, &[], &[]);
    let before: Vec<(String, Vec<u8>)> =
        names(&d).into_iter().map(|n| (n.clone(), std::fs::read(d.join(&n)).unwrap())).collect();
    let inputs = tempfile::tempdir().unwrap();
    let site = copy_seed_site(inputs.path());
    let bad_tree =
        write_file(inputs.path(), "bad-tree.toml", "tree = \"no-such-tree.csv\"\nslurm_conf = \"slurm.conf\"\n");
    let pending = std::fs::read_to_string(inputs.path().join("pending.csv")).unwrap();
    let header = pending.lines().next().unwrap();
    let bad_pending = write_file(
        inputs.path(),
        "bad-pending.csv",
        &format!("{header}\n200000,pat,econ_lab,skylake,normal,not-a-time,1767146179,1,32,60,0,0,\"cpu=32,node=1\"\n"),
    );
    for args in [
        vec!["--site".to_string(), bad_tree.display().to_string()],
        vec!["--site".into(), site.display().to_string(), "--pending".into(), bad_pending.display().to_string()],
    ] {
        let mut all = vec!["run".to_string()];
        all.extend(args.clone());
        all.extend(["--out-dir".to_string(), d.display().to_string()]);
        let out = fairshare(&all);
        assert!(!out.status.success(), "{args:?} should fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("no-such-tree.csv") || stderr.contains("bad-pending.csv"), "{stderr}");
        let after: Vec<(String, Vec<u8>)> =
            names(&d).into_iter().map(|n| (n.clone(), std::fs::read(d.join(&n)).unwrap())).collect();
        assert!(after == before, "{args:?}: the previous run changed");
        assert_eq!(names(tmp.path()), ["D"], "{args:?}: something was left beside D");
    }
}

/// `--site` with relative paths reads the files beside it; an unknown key is an error naming the
/// file and line.
#[test]
fn site_file_paths_are_relative_to_it() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = tmp.path().join("site");
    std::fs::create_dir(&inputs).unwrap();
    let site = copy_seed_site(&inputs);
    // Run from elsewhere, so a path taken relative to the working directory would not resolve.
    let (embedded, from_file) = (tmp.path().join("embedded"), tmp.path().join("file"));
    run_into(&embedded, &[], &[]);
    run_into(&from_file, &[], &["--site", site.to_str().unwrap()]);
    let ((a, ma), (b, mb)) =
        (read_parquet(&embedded.join("associations.parquet")), read_parquet(&from_file.join("associations.parquet")));
    assert_eq!(columns(&a), columns(&b));
    assert_eq!(mb["fairshare.source"], site.display().to_string());
    assert_eq!(ma["fairshare.algorithm"], mb["fairshare.algorithm"]);
    for f in ["sshare.txt", "sprio.txt", "jobs.parquet"] {
        assert!(std::fs::read(embedded.join(f)).unwrap() == std::fs::read(from_file.join(f)).unwrap(), "{f}");
    }
    let json = run_json(&from_file);
    let tree_input = json["inputs"].as_array().unwrap().iter().find(|i| i["role"] == "tree").unwrap().clone();
    assert_eq!(tree_input["path"].as_str().map(PathBuf::from), Some(inputs.join("tree.csv")));

    let bad = write_file(&inputs, "typo.toml", "tree = \"tree.csv\"\n# a comment\njobz = \"jobs.csv\"\n");
    let out = fairshare(["run", "--site", bad.to_str().unwrap(), "--out-dir", tmp.path().join("x").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("typo.toml:3") && stderr.contains("jobz"), "{stderr}");
    assert!(!tmp.path().join("x").exists());
}

/// flux-accounting's tables, shared with the unit tests of `usage::flux`.
const FLUX_SCHEMA: &str = include_str!("../fixtures/flux_schema.sql");

/// A flux-accounting site: P = 1000 s, 4 bins, D = 0.5, node weight 1; the half-life period ends
/// at 10000 and the run is at 10500 (so associations without new jobs are left alone).
fn flux_db(path: &Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(FLUX_SCHEMA).unwrap();
    conn.execute_batch(
        "INSERT INTO config_table VALUES ('priority_decay_half_life','1000'),
            ('priority_usage_reset_period','4000'), ('decay_factor','0.5'), ('node_weight','1.0'),
            ('core_weight','0'), ('gpu_weight','0');
         INSERT INTO t_half_life_period_table VALUES ('cluster', 10000);
         INSERT INTO bank_table (bank, parent_bank, shares) VALUES
            ('root','',1), ('physics','root',3), ('bio','root',1);",
    )
    .unwrap();
    // (user, uid, bank, shares, job_usage = Σ bins)
    let assocs = [
        ("alice", 1001, "physics", 1, 50.0),
        ("bob", 1002, "physics", 2, 300.0),
        ("carol", 1003, "bio", 1, 120.0),
        ("dave", 1004, "bio", 1, 0.0),
    ];
    for (user, uid, bank, shares, usage) in assocs {
        conn.execute(
            "INSERT INTO association_table (username, userid, bank, default_bank, shares, job_usage)
             VALUES (?1, ?2, ?3, ?3, ?4, ?5)",
            params![user, uid, bank, shares, usage],
        )
        .unwrap();
        for (period, value) in [usage, 0.0, 0.0, 0.0].into_iter().enumerate() {
            conn.execute(
                "INSERT INTO job_usage_per_association_table VALUES (?1, ?2, ?3, ?4, ?5)",
                params![user, uid, bank, period as i64, value],
            )
            .unwrap();
        }
        conn.execute("INSERT INTO job_usage_factor_table VALUES (?1, ?2, ?3, 0)", params![user, uid, bank]).unwrap();
    }
    // alice: one job on 2 nodes, 10200 → 10400: 2 nodes × 200 s × node weight 1 = 400.
    let r = r#"{"version":1,"execution":{"R_lite":[{"rank":"0-1","children":{"core":"0-3"}}]}}"#;
    conn.execute(
        "INSERT INTO jobs (id, userid, t_submit, t_run, t_inactive, ranks, R, jobspec, bank)
         VALUES ('f1', 1001, 10100, 10200, 10400, '', ?1, '{}', 'physics')",
        params![r],
    )
    .unwrap();
}

/// `run --flux-db --write-back` writes update-usage's state and update-fshare's values; the tree
/// read back from the database then gives sshare exactly the fair-share stored.
#[test]
fn flux_db_run_writes_back() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("FluxAccounting.db");
    flux_db(&db);
    let out_dir = tmp.path().join("run");
    let read = std::fs::read(&db).unwrap();
    run_into(&out_dir, &[], &["--flux-db", db.to_str().unwrap(), "--now", "10500", "--write-back"]);
    assert_eq!(names(&out_dir), [".fairshare-output", "associations.parquet", "run.json", "sshare.txt"]);
    // run.json identifies the database as it was read, not as written back.
    let input = &run_json(&out_dir)["inputs"][0];
    assert_eq!(input["bytes"], read.len());
    assert_eq!(input["xxh3_64"], format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&read)));
    assert_ne!(std::fs::read(&db).unwrap(), read, "the write-back changed the database");

    let conn = Connection::open(&db).unwrap();
    let stored: HashMap<String, (f64, f64, f64)> = conn
        .prepare("SELECT username, fairshare, job_usage, (SELECT last_job_timestamp FROM job_usage_factor_table j WHERE j.username = a.username AND j.bank = a.bank) FROM association_table a")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?))))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // alice's new job lands in the current period (10400 − 10000 < 1000): 50 + 400; the others
    // have no new job and the period has not ended (10500 − 1000 < 10000): unchanged.
    assert_eq!(stored["alice"].1, 450.0);
    assert_eq!(stored["alice"].2, 10400.0);
    let bin0: f64 = conn
        .query_row("SELECT value FROM job_usage_per_association_table WHERE username='alice' AND period=0", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(bin0, 450.0);
    for (user, usage) in [("bob", 300.0), ("carol", 120.0), ("dave", 0.0)] {
        assert_eq!(stored[user].1, usage, "{user}");
    }
    let physics: f64 =
        conn.query_row("SELECT job_usage FROM bank_table WHERE bank='physics'", [], |r| r.get(0)).unwrap();
    assert_eq!(physics, 750.0);
    drop(conn);

    let text = stdout_of(&fairshare(["sshare", "--tree", db.to_str().unwrap(), "--algo", "flux", "-a", "-P"]));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('|').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (c_user, c_fs, c_raw) = (col("User"), col("FairShare"), col("RawUsage"));
    let mut users = 0;
    for line in lines {
        let f: Vec<&str> = line.split('|').collect();
        if f[c_user].is_empty() {
            continue;
        }
        let (fs, usage, _) = stored[f[c_user]];
        assert_eq!(f[c_fs], format!("{fs:.6}"), "{line}");
        assert_eq!(f[c_raw].parse::<f64>().unwrap(), usage.trunc(), "{line}");
        users += 1;
    }
    assert_eq!(users, 4);
    // The fair-share values were written (not the 0.5 default for everyone): the users differ.
    let mut distinct: Vec<String> = stored.values().map(|v| format!("{:.6}", v.0)).collect();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() > 1, "{stored:?}");
    // The run directory's sshare.txt was computed from the same state.
    let sshare = std::fs::read_to_string(out_dir.join("sshare.txt")).unwrap();
    assert!(sshare.lines().any(|l| l.contains("alice") && l.contains(" 450 ")), "{sshare}");
}

/// A flux-accounting database's `jobs` table is a job-record input too (detected by its SQLite
/// header): alice's one job, 2 ranks × 4 cores for 200 s, costs 8 × 200 CPU-seconds undecayed.
#[test]
fn flux_jobs_table_as_job_records() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("FluxAccounting.db");
    flux_db(&db);
    let out = tmp.path().join("usage.parquet");
    let db_arg = db.to_str().unwrap();
    stdout_of(&fairshare([
        "usage",
        "--tree",
        db_arg,
        "--jobs",
        db_arg,
        "--decay",
        "exact",
        "--half-life",
        "0",
        "--now",
        "20000",
        "--out",
        out.to_str().unwrap(),
    ]));
    let tree = fairshare_engine::io::parquet_tree::read(&out).unwrap();
    let usage: HashMap<&str, f64> =
        tree.records.iter().filter_map(|r| r.user.as_deref().map(|u| (u, r.usage))).collect();
    assert_eq!(usage["alice"], 1600.0);
    for user in ["bob", "carol", "dave"] {
        assert_eq!(usage[user], 0.0, "{user}");
    }
}

/// A run directory takes the queue as it is scored: its `sprio.txt` lists the rows by job id
/// whatever the queue's order (a queue out of order is sorted whole), and its `jobs.parquet` is
/// the file `score` writes for the same queue, in the queue's order.
#[test]
fn run_directory_queue_is_sprio_and_score_whatever_its_order() {
    let tmp = tempfile::tempdir().unwrap();
    let site = copy_seed_site(tmp.path());
    let pending = std::fs::read_to_string(tmp.path().join("pending.csv")).unwrap();
    let mut lines: Vec<&str> = pending.lines().collect();
    assert!(lines.len() > 3);
    lines[1..].reverse();
    let reversed = write_file(tmp.path(), "reversed.csv", &(lines.join("\n") + "\n"));
    let site = site.to_str().unwrap();
    let (sorted_dir, reversed_dir) = (tmp.path().join("sorted"), tmp.path().join("reversed"));
    run_into(&sorted_dir, &[], &["--site", site]);
    run_into(&reversed_dir, &[], &["--site", site, "--pending", reversed.to_str().unwrap()]);
    let sprio = std::fs::read_to_string(sorted_dir.join("sprio.txt")).unwrap();
    assert!(sprio.lines().count() as u64 > data_lines(&tmp.path().join("pending.csv")), "{sprio}");
    assert_eq!(sprio, std::fs::read_to_string(reversed_dir.join("sprio.txt")).unwrap());
    for (dir, queue) in [(&sorted_dir, "pending.csv"), (&reversed_dir, "reversed.csv")] {
        let scored = tmp.path().join(format!("{queue}.parquet"));
        let queue = tmp.path().join(queue);
        stdout_of(&fairshare([
            "score",
            "--site",
            site,
            "--pending",
            queue.to_str().unwrap(),
            "--out",
            scored.to_str().unwrap(),
        ]));
        assert!(
            std::fs::read(&scored).unwrap() == std::fs::read(dir.join("jobs.parquet")).unwrap(),
            "{}",
            dir.display()
        );
        assert_eq!(run_json(dir)["rows"]["pending_jobs"].as_u64(), Some(data_lines(&queue)));
    }
    let first_ids = |dir: &Path| {
        let (batch, _) = read_parquet(&dir.join("jobs.parquet"));
        let ids = batch
            .column_by_name("job_id")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow::array::UInt64Array>()
            .unwrap()
            .clone();
        (ids.value(0), ids.value(ids.len() - 1))
    };
    let (a, b) = first_ids(&sorted_dir);
    assert!(a < b);
    assert_eq!(first_ids(&reversed_dir), (b, a));
}

/// The seed site's queue rows as Parquet, `rows` per row group.
fn write_queue_parquet(path: &Path, lines: &[Vec<String>], rows: usize) {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, StringArray};
    let text = |c: usize| -> ArrayRef { Arc::new(StringArray::from_iter_values(lines.iter().map(|l| l[c].clone()))) };
    let ints = |c: usize| -> ArrayRef { Arc::new(Int64Array::from_iter(lines.iter().map(|l| l[c].parse().ok()))) };
    let batch = RecordBatch::try_from_iter([
        ("job_id", ints(0)),
        ("user", text(1)),
        ("account", text(2)),
        ("partition", text(3)),
        ("qos", text(4)),
        ("submit_time", ints(5)),
        ("accrue_time", ints(6)),
        ("min_nodes", ints(7)),
        ("cpus", ints(8)),
        ("time_limit", ints(9)),
        ("nice", ints(10)),
        ("site_factor", ints(11)),
        ("tres_req", text(12)),
    ])
    .unwrap();
    write_row_groups(path, &batch, rows);
}

/// A Parquet queue of many row groups, scored a wave of row groups at a time, writes the
/// `sprio.txt` of the same queue in CSV; with its row groups in reverse order (each in job-id
/// order, the queue not), the lines are still by job id.
#[test]
fn parquet_queue_scored_wave_by_wave_writes_the_sprio_of_its_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let site = copy_seed_site(tmp.path());
    let site = site.to_str().unwrap();
    let pending = std::fs::read_to_string(tmp.path().join("pending.csv")).unwrap();
    let lines: Vec<Vec<String>> = pending.lines().skip(1).map(csv_fields).collect();
    assert!(lines.len() > 30 && lines.iter().all(|l| l.len() == 13));
    let blocks: Vec<Vec<String>> = lines.chunks(7).rev().flatten().cloned().collect();
    let (ordered, reversed) = (tmp.path().join("ordered.parquet"), tmp.path().join("blocks.parquet"));
    write_queue_parquet(&ordered, &lines, 7);
    write_queue_parquet(&reversed, &blocks, 7);
    let csv_dir = tmp.path().join("csv");
    run_into(&csv_dir, &[], &["--site", site]);
    let sprio = std::fs::read_to_string(csv_dir.join("sprio.txt")).unwrap();
    for queue in [&ordered, &reversed] {
        for threads in ["1", "2"] {
            let dir = tmp.path().join(format!("{}-{threads}", queue.file_stem().unwrap().to_str().unwrap()));
            run_into(&dir, &["--threads", threads], &["--site", site, "--pending", queue.to_str().unwrap()]);
            assert_eq!(std::fs::read_to_string(dir.join("sprio.txt")).unwrap(), sprio, "{}", dir.display());
            assert_eq!(run_json(&dir)["rows"]["pending_jobs"].as_u64(), Some(lines.len() as u64));
        }
    }
}
