//! `sacct --json` job records (`--jobs-format sacct-json`, detected): the same usage as the same
//! records in canonical CSV, NO_VAL counts (-2) included (`tests/fixtures/sacct_json/`), and the
//! seed site's 1,500 records converted.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{fairshare, stdout_of, write_file};

fn root(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// `sshare -l -P` of the seed site with usage from `jobs` (and `--jobs-format` when given).
fn sshare_with(jobs: &Path, format: Option<&str>) -> String {
    let seed = root("examples/seed-site");
    let (tree, conf, qos) = (seed.join("tree.csv"), seed.join("slurm.conf"), seed.join("qos.txt"));
    let mut args: Vec<&OsStr> = ["sshare", "-l", "-P", "--now", "2026-01-08T00:00:00"].map(OsStr::new).to_vec();
    args.extend([
        OsStr::new("--tree"),
        tree.as_os_str(),
        OsStr::new("--slurm-conf"),
        conf.as_os_str(),
        OsStr::new("--qos"),
        qos.as_os_str(),
        OsStr::new("--jobs"),
        jobs.as_os_str(),
    ]);
    if let Some(f) = format {
        args.extend([OsStr::new("--jobs-format"), OsStr::new(f)]);
    }
    stdout_of(&fairshare(args))
}

#[test]
fn the_fixture_charges_as_its_csv_twin() {
    let json = root("tests/fixtures/sacct_json/jobs.json");
    let csv = sshare_with(&root("tests/fixtures/sacct_json/jobs.csv"), None);
    assert_eq!(sshare_with(&json, None), csv);
    assert_eq!(sshare_with(&json, Some("sacct-json")), csv);
}

/// The seed's canonical CSV records as `sacct --json` would print them (memory in MB).
fn seed_as_sacct_json() -> String {
    let text = std::fs::read_to_string(root("examples/seed-site/jobs.csv")).unwrap();
    let mut jobs = Vec::new();
    for line in text.lines().skip(1) {
        let (head, tres) = line.split_once(",\"").unwrap_or((line, ""));
        let f: Vec<&str> = head.split(',').collect();
        let allocated: Vec<serde_json::Value> = tres
            .trim_end_matches('"')
            .split(',')
            .filter(|t| !t.is_empty())
            .map(|t| {
                let (key, count) = t.split_once('=').unwrap();
                let (kind, name) = key.split_once('/').unwrap_or((key, ""));
                let count: i64 = match count.strip_suffix('G') {
                    Some(g) => g.parse::<i64>().unwrap() * 1024,
                    None => count.trim_end_matches('M').parse().unwrap(),
                };
                serde_json::json!({"type": kind, "name": name, "id": 0, "count": count})
            })
            .collect();
        let (start, end) = (f[5].parse::<i64>().unwrap_or(0), f[6].parse::<i64>().unwrap_or(0));
        let state = if end == 0 { "RUNNING" } else { "COMPLETED" };
        jobs.push(serde_json::json!({
            "job_id": f[0].parse::<u64>().unwrap(), "user": f[1], "account": f[2], "partition": f[3], "qos": f[4],
            "state": {"current": [state], "reason": "None"},
            "time": {"start": start, "end": end, "elapsed": if end > 0 { end - start } else { 0 }},
            "tres": {"allocated": allocated},
        }));
    }
    serde_json::to_string_pretty(&serde_json::json!({"jobs": jobs, "errors": [], "warnings": []})).unwrap()
}

#[test]
fn the_seed_records_as_sacct_json_give_the_same_usage() {
    let dir = tempfile::tempdir().unwrap();
    let json = write_file(dir.path(), "sacct.json", &seed_as_sacct_json());
    assert_eq!(sshare_with(&json, None), sshare_with(&root("examples/seed-site/jobs.csv"), None));
}

#[test]
fn bad_records_name_the_file_and_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write_file(
        dir.path(),
        "bad.json",
        r#"{"jobs": [{"job_id": 9, "user": "pat", "account": "econ_lab", "partition": "ivybridge",
            "time": {"start": 1767700800, "end": 1767704400},
            "tres": {"allocated": [{"type": "cpu", "name": "", "id": 1, "count": -3}]}}]}"#,
    );
    let seed = root("examples/seed-site");
    let out = fairshare([
        OsStr::new("sshare"),
        OsStr::new("--tree"),
        seed.join("tree.csv").as_os_str(),
        OsStr::new("--slurm-conf"),
        seed.join("slurm.conf").as_os_str(),
        OsStr::new("--now"),
        OsStr::new("2026-01-08"),
        OsStr::new("--jobs"),
        bad.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("bad.json") && err.contains("jobs[0] (job 9)"), "{err}");
}
