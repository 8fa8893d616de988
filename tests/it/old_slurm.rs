//! Dumps as older Slurm releases print them (`tests/fixtures/sshare`, `tests/fixtures/sacct`):
//! read, and their numbers checked against the dump's own columns or against sums worked out
//! here from its rows.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::usage::read_parquet;
use super::{fairshare, stdout_of, write_file};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// The rows of a parsable sshare table, (account without its indentation, user) → the named
/// columns, in the table's order; and each row's depth.
fn sshare_rows(text: &str, columns: &[&str]) -> Vec<((String, String), usize, Vec<String>)> {
    let mut lines = text.lines();
    // Slurm 14 names `Norm Shares`; later releases `NormShares`.
    let header: Vec<String> = lines.next().unwrap().split('|').map(|h| h.replace(' ', "")).collect();
    let at: Vec<usize> = columns.iter().map(|c| header.iter().position(|h| h == c).unwrap()).collect();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            let account = f[0].trim_start();
            let key = (account.to_string(), f[1].to_string());
            (key, f[0].len() - account.len(), at.iter().map(|&i| f[i].to_string()).collect())
        })
        .collect()
}

/// Slurm 14.03's `sshare -a -l -P` under classic: header names with spaces, the root's user row
/// unindented. Recomputed from its RawShares and RawUsage, every association's NormShares,
/// NormUsage and EffectvUsage and every user's FairShare are the dump's, and the root's user
/// row sits under the root (printed one space in, as newer Slurm prints it).
#[test]
fn slurm_14_sshare_dump_recomputes_to_its_own_numbers() {
    let dump = fixture("sshare/slurm-14.03-classic.txt");
    let ours = stdout_of(&fairshare(["sshare", "--tree", dump.to_str().unwrap(), "--algo", "classic", "-l", "-P"]));
    let columns = ["NormShares", "NormUsage", "EffectvUsage", "FairShare"];
    let theirs = sshare_rows(&std::fs::read_to_string(&dump).unwrap(), &columns);
    let ours = sshare_rows(&ours, &columns);
    let keys = |rows: &[((String, String), usize, Vec<String>)]| -> Vec<(String, String)> {
        rows.iter().map(|r| r.0.clone()).collect()
    };
    assert_eq!(keys(&ours), keys(&theirs));
    assert_eq!(ours.len(), 9);
    for ((key, depth, got), (_, their_depth, want)) in ours.iter().zip(&theirs) {
        let user_row = !key.1.is_empty();
        if key == &("root".to_string(), "root".to_string()) {
            assert_eq!((*depth, *their_depth), (1, 0), "the root's user row");
        } else {
            assert_eq!(depth, their_depth, "{key:?}");
        }
        // The root's NormUsage is blank in both; FairShare: Slurm 14 printed it on accounts too.
        let compared = if user_row { 4 } else { 3 };
        assert_eq!(got[..compared], want[..compared], "{key:?}");
    }
}

/// Slurm 16/17's `sacct -P` without AllocTRES: the CPUs from AllocCPUS, the nodes from NNodes,
/// the GPUs from AllocGRES (`gpu:2`, `gpu:tesla:4`); job steps are not charged again. Without
/// decay, a job costs its billing per second × its run: alice 32 CPUs × 7200 s; bob
/// (8 CPUs + 4 × 2 GPUs) × 5400 s; carol (16 + 4 × 4) × 1800 s + 1 × 600 + 1 × 900 + 4 × 20.
/// The job cancelled while pending is skipped, and said to be.
#[test]
fn slurm_17_sacct_dump_charges_cpus_nodes_and_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(
        dir.path(),
        "tree.csv",
        "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,physics,,1,0\n3,1,chem,,1,0\n\
         4,2,physics,alice,1,0\n5,2,physics,bob,1,0\n6,3,chem,carol,1,0\n",
    );
    let conf = write_file(
        dir.path(),
        "slurm.conf",
        "PartitionName=batch\nPartitionName=gpu TRESBillingWeights=CPU=1.0,GRES/gpu=4.0\n",
    );
    let jobs = fixture("sacct/slurm-17.02-allocations.txt");
    let out = dir.path().join("usage.parquet");
    let run = fairshare([
        "usage",
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
        "2017-03-08",
        "--out",
        out.to_str().unwrap(),
    ]);
    stdout_of(&run);
    let records = fairshare_engine::io::parquet_tree::read(&out).unwrap().records;
    let usage: HashMap<String, f64> = records.into_iter().filter_map(|r| Some((r.user?, r.usage))).collect();
    let want = HashMap::from([
        ("alice".to_string(), 32.0 * 7200.0),
        ("bob".to_string(), (8.0 + 4.0 * 2.0) * 5400.0),
        ("carol".to_string(), (16.0 + 4.0 * 4.0) * 1800.0 + 600.0 + 900.0 + 4.0 * 20.0),
    ]);
    assert_eq!(usage, want);
    let err = String::from_utf8_lossy(&run.stderr);
    let summary = format!("fairshare: charged 6 of 7 job records ({}); skipped 1 (never started: 1)\n", jobs.display());
    assert!(err.contains(&summary), "{err}");
    let (_, meta) = read_parquet(&out);
    for (key, n) in [("job_records", "7"), ("job_records_charged", "6"), ("job_records_not_started", "1")] {
        assert_eq!(meta[&format!("fairshare.{key}")], n, "{key}");
    }
}
