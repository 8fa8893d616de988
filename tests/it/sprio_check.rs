//! `sprio --check`: the controller's priorities of an `squeue --json` queue against ours, on the
//! seed site.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{fairshare, stdout_of, write_file};

fn site() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-site/site.toml")
}

/// Two pending jobs of the seed site: job 1 in two partitions with the controller's
/// `priority_by_partition` entries `by_partition_1`, job 2 in one with the `priority` `job_2`.
fn queue(by_partition_1: &str, job_2: &str) -> String {
    format!(
        r#"{{"jobs": [
        {{"job_id": 1, "user_name": "pat", "account": "econ_lab", "partition": "skylake,shared", "qos": "normal",
         "job_state": ["PENDING"], "submit_time": 1767145996, "accrue_time": 1767146179, "node_count": 1,
         "cpus": 32, "time_limit": 60, "nice": 0, "tres_req_str": "cpu=32,mem=128G,node=1",
         "priority_by_partition": [{by_partition_1}]}},
        {{"job_id": 2, "user_name": "dana", "account": "huttenhower_lab", "partition": "shared", "qos": "",
         "job_state": ["PENDING"], "submit_time": 1767093697, "accrue_time": 1767093971, "node_count": 1,
         "cpus": 16, "tres_req_str": "cpu=16,mem=64G,node=1", "priority": {job_2}}}
        ]}}"#
    )
}

fn sprio(queue: &Path, extra: &[&str]) -> std::process::Output {
    let site = site();
    let mut args: Vec<&OsStr> = vec![OsStr::new("sprio"), OsStr::new("--site"), site.as_os_str()];
    args.extend([OsStr::new("--pending"), queue.as_os_str()]);
    args.extend(extra.iter().map(OsStr::new));
    fairshare(args)
}

#[test]
fn only_the_pairs_that_differ_are_printed() {
    let dir = tempfile::tempdir().unwrap();
    // Our own priorities first, then a controller that agrees on all but job 1 in shared.
    let probe = write_file(dir.path(), "probe.json", &queue("", "1"));
    let ours = stdout_of(&sprio(&probe, &["-h", "-o", "%i %r %Y"]));
    let prio = |job: &str, part: &str| -> u32 {
        let line = ours.lines().find(|l| l.starts_with(&format!("{job} {part} "))).unwrap_or_else(|| panic!("{ours}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (sky, shared, dana) = (prio("1", "skylake"), prio("1", "shared"), prio("2", "shared"));
    let by_partition = format!(
        r#"{{"partition": "skylake", "priority": {sky}}}, {{"partition": "shared", "priority": {}}}"#,
        shared + 7
    );
    let q = write_file(
        dir.path(),
        "squeue.json",
        &queue(&by_partition, &format!(r#"{{"set": true, "infinite": false, "number": {dana}}}"#)),
    );
    let out = sprio(&q, &["--check"]);
    let text = stdout_of(&out);
    let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows, [vec!["1", "shared", &(shared + 7).to_string(), &shared.to_string()]], "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 (job, partition) priorities differ"));
}

#[test]
fn a_csv_queue_has_no_controller_priorities_to_check() {
    let out = fairshare([OsStr::new("sprio"), OsStr::new("--site"), site().as_os_str(), OsStr::new("--check")]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("squeue --json"));
}
