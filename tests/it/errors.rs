//! Bad input: a clear error naming the file and the line, a non-zero exit, no panic, and no output
//! file left behind (an existing one stays untouched).

use super::{fairshare, write_file};

const HEADER: &str = "id,parent_id,account,user,shares,usage\n";

/// Runs `sshare` on `tree` (assoc-csv) and returns stderr, asserting a clean failure.
fn assoc_csv_error(tree: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "bad.csv", tree);
    let out = fairshare(["sshare", "--tree-format", "assoc-csv", "--tree", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "accepted bad input:\n{tree}");
    assert!(!err.contains("panicked"), "panic instead of an error: {err}");
    assert!(out.stdout.is_empty(), "partial output on bad input");
    err
}

#[test]
fn structural_errors_name_file_and_line() {
    let cases: &[(&str, &str, &str)] = &[
        ("1,,root,,1,0\n2,3,a,,1,0\n3,2,b,,1,0\n", "bad.csv:3", "cycle"),
        ("1,,root,,1,0\n2,9,a,,1,0\n", "bad.csv:3", "parent 9 of association 2 does not exist"),
        ("1,,root,,1,0\n2,,other,,1,0\n", "bad.csv:3", "second root"),
        ("1,,root,,1,0\n2,1,a,,1,0\n2,1,b,,1,0\n", "bad.csv:4", "duplicate id 2"),
        ("1,,root,,1,0\n2,1,a,,1,0\n3,1,a,,1,0\n", "bad.csv:4", "duplicate association: account a"),
        (
            "1,,root,,1,0\n2,1,a,,1,0\n3,2,a,u,1,0\n4,2,a,u,1,0\n",
            "bad.csv:5",
            "duplicate association: user u in account a",
        ),
        ("1,,root,,1,0\n2,1,a,,-3,0\n", "bad.csv:3", "shares \"-3\""),
        ("1,,root,,1,0\n2,1,a,,lots,0\n", "bad.csv:3", "shares \"lots\""),
        ("1,,root,,1,0\n2,1,a,u,1,NaN\n", "bad.csv:3", "usage \"NaN\""),
        ("1,,root,,1,0\n2,1,a,u,1\n", "bad.csv:3", "expected 6 fields, found 5"),
        ("1,,root,,1,0\n2,1,root,u,1,0\n3,2,root,v,1,0\n", "bad.csv:4", "only accounts have children"),
        ("1,,root,,1,0\n2,1,a,,1,0\n3,2,b,u,1,0\n", "bad.csv:4", "user u is in account \"b\""),
        ("", "bad.csv", "empty file"),
        ("1,,root,,1,0\n", "bad.csv:1", "missing column \"id\""),
    ];
    for (rows, at, what) in cases {
        let text =
            if rows.is_empty() || what.starts_with("missing") { rows.to_string() } else { format!("{HEADER}{rows}") };
        let err = assoc_csv_error(&text);
        assert!(err.contains(at) && err.contains(what), "for {rows:?} expected `{at}` and `{what}` in: {err}");
    }
}

#[test]
fn other_formats_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, &str, &str)] = &[
        ("flux-csv", "0,root,%^+_nouser,1,0\n2,a,u,1,0\n", ":2", "does not follow the levels"),
        ("flux-csv", "0,root,%^+_nouser,1,0\n1,a,%^+_nouser,x,0\n", ":2", "shares \"x\""),
        ("sshare", "Account|User|RawShares|RawUsage|\nroot|||0|\n   a||1|0|\n", ":3", "skips a level"),
        ("sshare", "Account  User\nroot\n", ":1", "not a parsable sshare dump"),
        ("parquet", "this is not parquet", "bad.in", ""),
        ("flux-db", "this is not sqlite", "bad.in", "flux-accounting database"),
    ];
    for (format, text, at, what) in cases {
        let path = write_file(dir.path(), "bad.in", text);
        let out = fairshare(["sshare", "--tree-format", format, "--tree", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && !err.contains("panicked"), "{format}: {err}");
        assert!(err.contains(at) && err.contains(what), "{format}: expected `{at}` and `{what}` in: {err}");
    }
}

#[test]
fn failed_compute_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write_file(dir.path(), "bad.csv", &format!("{HEADER}1,,root,,1,0\n2,7,a,,1,0\n"));
    let out_path = dir.path().join("out.parquet");
    let out = fairshare(["compute", "--tree", bad.to_str().unwrap(), "--out", out_path.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(!out_path.exists(), "an output file was written for bad input");
    std::fs::write(&out_path, b"previous run").unwrap();
    let out = fairshare(["compute", "--tree", bad.to_str().unwrap(), "--out", out_path.to_str().unwrap()]);
    assert!(!out.status.success());
    assert_eq!(std::fs::read(&out_path).unwrap(), b"previous run");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "temporary files left behind");
}

#[test]
fn unknown_sshare_field_is_an_error() {
    let out = fairshare(["sshare", "-o", "Account,Bogus"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("Invalid field requested: \"Bogus\""), "{err}");
}

/// `sshare` on the damaged Parquet tree `tests/fixtures/<name>`: it must fail with status 1, no
/// output and no panic; returns stderr, which must name the file.
fn damaged_tree_error(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let out = fairshare(["sshare", "--tree-format", "parquet", "--tree", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked") && err.contains(name), "{err}");
    assert!(out.stdout.is_empty());
    err
}

/// A Parquet file whose footer gives a column chunk a negative offset (found by fuzzing): the
/// Parquet reader asserts on it, which must come out as an error naming the file, not a panic.
#[test]
fn damaged_parquet_is_an_error_not_a_panic() {
    let err = damaged_tree_error("damaged_negative_offset.parquet");
    assert!(err.contains("Parquet reader failed"), "{err}");
}

/// A 5 KB file whose dictionary page declares 939 million entries (found by fuzzing): the Parquet
/// reader would zero-fill 7.5 GB for them before failing, so the page headers are checked first.
#[test]
fn a_dictionary_page_declaring_more_than_it_holds_is_refused_before_decoding() {
    let err = damaged_tree_error("damaged_dictionary_count.parquet");
    assert!(
        err.contains("row group 0") && err.contains("dictionary page declares 939524095 values in 24 bytes"),
        "{err}"
    );
}

/// The same page as a pending queue: a queue's row groups are checked by the thread that reads
/// each, before it decodes it, and `score` leaves no output.
#[test]
fn a_queue_dictionary_page_declaring_more_than_it_holds_is_refused_before_decoding() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let pending = fixtures.join("damaged_dictionary_count.parquet");
    let (tree, conf) = (fixtures.join("slurm_jobs/tree.csv"), fixtures.join("slurm_jobs/default/slurm.conf"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("jobs.parquet");
    let run = fairshare([
        "score",
        "--tree",
        tree.to_str().unwrap(),
        "--slurm-conf",
        conf.to_str().unwrap(),
        "--pending",
        pending.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked") && err.contains("damaged_dictionary_count.parquet"), "{err}");
    assert!(
        err.contains("row group 0") && err.contains("dictionary page declares 939524095 values in 24 bytes"),
        "{err}"
    );
    assert!(!out.exists() && std::fs::read_dir(dir.path()).unwrap().next().is_none(), "output left behind");
}
