//! Reference outputs of the real systems, in the project's fixture format (`tests/fixtures/*.case`).
//!
//! A case file has sections:
//! - `[args]`: one line of arguments after `fairshare` (the tree path is appended);
//! - `[tree FORMAT]`: the tree, as `assoc-csv`, `sshare`, `flux-csv`, `sacctmgr-dump`, or `flux-sql`
//!   (SQL building a flux-accounting database with `bank_table` and `association_table`);
//! - `[expect]`: the exact output lines; `[expect-prefix]`: the first output lines;
//!   `[expect-fairshare]`: `bank,user,fairshare` for every user row of a `-P` table (no others);
//! - `[file NAME]` (any number): another input (job records, slurm.conf, a QOS dump), written
//!   next to the tree; an argument `@NAME` is replaced by its path.
//!
//! Lines starting with `#` before the first section say where the vectors come from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{fairshare, stdout_of, write_file};

struct Case {
    name: String,
    args: Vec<String>,
    tree_format: String,
    tree: String,
    expect_kind: String,
    expect: Vec<String>,
    files: Vec<(String, String)>,
}

fn parse_case(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).expect("read case");
    let mut sections: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(name.to_string());
            sections.insert(name.to_string(), Vec::new());
        } else if let Some(c) = &current {
            sections.get_mut(c).expect("section exists").push(line.to_string());
        } else {
            assert!(line.starts_with('#') || line.is_empty(), "{}: text before the first section", path.display());
        }
    }
    let take = |prefix: &str| {
        sections
            .iter()
            .find(|(k, _)| {
                k.as_str() == prefix || k.starts_with(&format!("{prefix} ")) || k.starts_with(&format!("{prefix}-"))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .unwrap_or_else(|| panic!("{}: no [{prefix}] section", path.display()))
    };
    let (_, args) = take("args");
    let (tree_key, tree) = take("tree");
    let (expect_kind, expect) = take("expect");
    let files = sections
        .iter()
        .filter_map(|(k, v)| k.strip_prefix("file ").map(|name| (name.to_string(), v.join("\n") + "\n")))
        .collect();
    Case {
        files,
        name: path.file_stem().unwrap().to_string_lossy().into_owned(),
        args: args[0].split_whitespace().map(str::to_string).collect(),
        tree_format: tree_key.trim_start_matches("tree ").to_string(),
        tree: tree.join("\n") + "\n",
        expect_kind,
        expect,
    }
}

/// Materializes the case's tree and returns `(path, --tree-format value)`.
fn tree_file(case: &Case, dir: &Path) -> (PathBuf, &'static str) {
    match case.tree_format.as_str() {
        "assoc-csv" => (write_file(dir, "tree.csv", &case.tree), "assoc-csv"),
        "sshare" => (write_file(dir, "sshare.txt", &case.tree), "sshare"),
        "flux-csv" => (write_file(dir, "tree.csv", &case.tree), "flux-csv"),
        "sacctmgr-dump" => (write_file(dir, "cluster.cfg", &case.tree), "sacctmgr-dump"),
        "flux-sql" => {
            let p = dir.join("flux.db");
            let conn = rusqlite::Connection::open(&p).expect("create db");
            conn.execute_batch(&case.tree).expect("fixture SQL runs");
            (p, "flux-db")
        }
        other => panic!("{}: unknown tree kind {other}", case.name),
    }
}

/// `(bank, user) -> FairShare` from a `-P` table with a header.
fn fairshare_column(out: &str) -> BTreeMap<(String, String), String> {
    let mut lines = out.lines();
    let head: Vec<&str> = lines.next().expect("header").split('|').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap_or_else(|| panic!("no {n} column"));
    let (a, u, f) = (col("Account"), col("User"), col("FairShare"));
    lines
        .map(|l| l.split('|').collect::<Vec<_>>())
        .filter(|c| !c[u].is_empty())
        .map(|c| ((c[a].trim().to_string(), c[u].to_string()), c[f].to_string()))
        .collect()
}

fn run_case(path: &Path) -> Result<(), String> {
    let case = parse_case(path);
    let dir = tempfile::tempdir().expect("tempdir");
    let (tree, format) = tree_file(&case, dir.path());
    let mut args: Vec<String> = case
        .args
        .iter()
        .map(|a| match a.strip_prefix('@').and_then(|n| case.files.iter().find(|(name, _)| name == n)) {
            Some((name, text)) => write_file(dir.path(), name, text).display().to_string(),
            None => a.clone(),
        })
        .collect();
    args.extend(["--tree".into(), tree.display().to_string(), "--tree-format".into(), format.into()]);
    let out = stdout_of(&fairshare(&args));
    let got: Vec<&str> = out.lines().collect();
    let fail = |what: String| Err(format!("{}: {what}", case.name));
    match case.expect_kind.as_str() {
        "expect" | "expect-prefix" => {
            for (i, e) in case.expect.iter().enumerate() {
                match got.get(i) {
                    Some(g) if g == e => {}
                    g => return fail(format!("line {}: expected {e:?}, got {g:?}", i + 1)),
                }
            }
            if case.expect_kind == "expect" && got.len() != case.expect.len() {
                return fail(format!("{} lines, expected {}", got.len(), case.expect.len()));
            }
        }
        "expect-fairshare" => {
            let got = fairshare_column(&out);
            let want: BTreeMap<(String, String), String> = case
                .expect
                .iter()
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let f: Vec<&str> = l.split(',').collect();
                    ((f[0].to_string(), f[1].to_string()), f[2].to_string())
                })
                .collect();
            if got != want {
                return fail(format!("fairshare by (bank, user):\n expected {want:?}\n got      {got:?}"));
            }
        }
        other => return fail(format!("unknown expectation [{other}]")),
    }
    Ok(())
}

#[test]
fn published_reference_outputs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "case"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 20, "fixtures missing: found {}", cases.len());
    let failures: Vec<String> = cases.iter().filter_map(|c| run_case(c).err()).collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
