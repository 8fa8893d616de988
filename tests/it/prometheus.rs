//! `run --prometheus FILE.prom`: node_exporter's textfile, written atomically, agreeing with the
//! run's sshare table, with no timestamps and no NaN.

use std::collections::HashMap;

use super::{fairshare, stdout_of};

/// Samples by `name{labels}`, each line checked: a metric name, labels, one value, no timestamp.
fn samples(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with("# HELP ") && !l.starts_with("# TYPE ")) {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no value: {line}"));
        let name = series.split('{').next().unwrap();
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{line}");
        assert!(!series.contains("} ") && (!series.contains('{') || series.ends_with('}')), "a timestamp? {line}");
        assert!(value == "+Inf" || value.parse::<f64>().is_ok_and(|v| v.is_finite()), "{line}");
        assert!(out.insert(series.to_string(), value.to_string()).is_none(), "repeated series: {line}");
    }
    out
}

#[test]
fn run_writes_the_textfile_atomically_and_it_agrees_with_sshare() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("textfile/fairshare.prom");
    let table = stdout_of(&fairshare(["run".as_ref(), "--prometheus".as_ref(), prom.as_os_str()]));
    let text = std::fs::read_to_string(&prom).unwrap();
    let s = samples(&text);
    // Every user row of sshare's table has its factor, as printed to 6 decimals.
    let mut users = 0;
    // `-l` under classic: a user row has 9 fields (Account, User, ..., FairShare, TRESRunMins).
    for row in table.lines().skip(2) {
        let f: Vec<&str> = row.split_whitespace().collect();
        if f.len() != 9 {
            continue;
        }
        let key =
            format!("fairshare_factor{{cluster=\"odyssey\",account=\"{}\",user=\"{}\",partition=\"\"}}", f[0], f[1]);
        let v: f64 = s.get(&key).unwrap_or_else(|| panic!("no {key}")).parse().unwrap();
        assert_eq!(format!("{v:.6}"), f[7], "{key}");
        users += 1;
    }
    assert!(users > 10, "{users} users");
    assert_eq!(s["fairshare_run_job_records{state=\"read\"}"], "1500");
    assert!(s.contains_key("fairshare_run_stage_seconds{stage=\"fairshare\"}"));
    assert!(s.contains_key("fairshare_usage_raw{cluster=\"odyssey\",account=\"root\",user=\"\",partition=\"\"}"));
    // Only the file: the temporary name is gone, and the collector reads `*.prom` only.
    let names: Vec<_> = std::fs::read_dir(prom.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["fairshare.prom"]);
}

#[test]
fn fair_tree_levels_may_be_infinite_with_a_help_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("fs.prom");
    let tree = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-site/tree.csv");
    let out = fairshare([
        "run".as_ref(),
        "--tree".as_ref(),
        tree.as_os_str(),
        "--algo".as_ref(),
        "fair-tree".as_ref(),
        "--out-dir".as_ref(),
        dir.path().join("run").as_os_str(),
        "--prometheus".as_ref(),
        prom.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&prom).unwrap();
    let s = samples(&text);
    assert!(s.iter().any(|(k, v)| k.starts_with("fairshare_level{") && v == "+Inf"));
    assert!(s.iter().all(|(k, v)| v != "+Inf" || k.starts_with("fairshare_level{")));
    assert!(text.lines().any(|l| l.starts_with("# HELP fairshare_level ") && l.contains("+Inf means")));
    assert!(dir.path().join("run/sshare.txt").exists());
}

#[test]
fn a_directory_in_the_way_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = fairshare(["run".as_ref(), "--prometheus".as_ref(), dir.path().as_os_str()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&dir.path().display().to_string()), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
