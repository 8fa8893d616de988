//! Dumps as older Slurm releases print them (`tests/fixtures/sshare`): read, and their numbers
//! checked against the dump's own columns.

use std::path::{Path, PathBuf};

use super::{fairshare, stdout_of};

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
