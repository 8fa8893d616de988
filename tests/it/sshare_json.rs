//! `sshare --json`: the output against a JSON Schema of data_parser's `shares` response
//! (`tests/fixtures/sshare_json.schema.json`, written from the field list of issue 22 and
//! data_parser v0.0.44), and read back through `--tree` into the same sshare text.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{fairshare, stdout_of, write_file};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn seed_tree() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-site/tree.csv")
}

/// The schema subset the fixture uses: `type`, `required`, `properties`, `additionalProperties:
/// false`, `items`, `enum`, `minimum`, `minItems`, `maxItems` and `$ref` to `#/$defs/NAME`. Returns
/// the JSON pointer and reason of each violation.
fn violations(root: &Value, schema: &Value, v: &Value, at: &str, found: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let def = r.strip_prefix("#/$defs/").and_then(|d| root["$defs"].get(d)).expect("a known $ref");
        return violations(root, def, v, at, found);
    }
    if let Some(t) = schema.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "integer" => v.is_u64() || v.is_i64(),
            "number" => v.is_number(),
            _ => panic!("schema type {t} not handled"),
        };
        if !ok {
            return found.push(format!("{at}: not {t}: {v}"));
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        found.push(format!("{at}: {v} not in {e:?}"));
    }
    if let (Some(min), Some(n)) = (schema.get("minimum").and_then(Value::as_f64), v.as_f64())
        && n < min
    {
        found.push(format!("{at}: {n} < {min}"));
    }
    if let Some(obj) = v.as_object() {
        for k in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            if !obj.contains_key(k.as_str().unwrap()) {
                found.push(format!("{at}: missing {k}"));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, x) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => violations(root, s, x, &format!("{at}/{k}"), found),
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    found.push(format!("{at}: unexpected {k}"));
                }
                None => {}
            }
        }
    }
    if let Some(items) = v.as_array() {
        let len = items.len() as u64;
        if schema.get("minItems").and_then(Value::as_u64).is_some_and(|m| len < m)
            || schema.get("maxItems").and_then(Value::as_u64).is_some_and(|m| len > m)
        {
            found.push(format!("{at}: {len} items"));
        }
        if let Some(s) = schema.get("items") {
            for (i, x) in items.iter().enumerate() {
                violations(root, s, x, &format!("{at}/{i}"), found);
            }
        }
    }
}

fn check(doc: &Value) -> Vec<String> {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("sshare_json.schema.json")).unwrap()).unwrap();
    let mut found = Vec::new();
    violations(&schema, &schema, doc, "", &mut found);
    found
}

#[test]
fn output_follows_the_shares_schema() {
    let dir = tempfile::tempdir().unwrap();
    // flux on a flux-csv tree, and on the seed tree's `parent` shares.
    let flux = write_file(
        dir.path(),
        "flux.csv",
        "level,bank,user,shares,usage\n0,root,%^+_nouser,1,0\n1,a,%^+_nouser,1,10\n2,a,u1,1,4\n2,a,u2,3,6\n\
         1,b,%^+_nouser,2,0\n2,b,u3,1,0\n",
    );
    for (algo, tree) in [("fair-tree", seed_tree()), ("classic", seed_tree()), ("flux", flux), ("flux", seed_tree())] {
        let out = fairshare([
            "sshare".as_ref(),
            "--json".as_ref(),
            "--algo".as_ref(),
            algo.as_ref(),
            "--tree".as_ref(),
            tree.as_os_str(),
        ]);
        let doc: Value = serde_json::from_str(&stdout_of(&out)).unwrap();
        assert_eq!(check(&doc), Vec::<String>::new(), "{algo}");
        assert!(doc["shares"]["shares"].as_array().unwrap().len() > 3, "{algo}");
    }
    // The check itself catches a missing field and a wrong type.
    let mut bad: Value = serde_json::from_str(&stdout_of(&fairshare(["sshare", "--json"]))).unwrap();
    let first = bad["shares"]["shares"][0].as_object_mut().unwrap();
    first.remove("fairshare");
    first.insert("usage".into(), Value::from(-1.5));
    assert_eq!(check(&bad).len(), 2, "{:?}", check(&bad));
}

#[test]
fn infinite_level_fs_and_parent_shares_as_slurm_encodes_them() {
    let out = fairshare(["sshare".as_ref(), "--json".as_ref(), "--tree".as_ref(), seed_tree().as_os_str()]);
    let doc: Value = serde_json::from_str(&stdout_of(&out)).unwrap();
    let shares = doc["shares"]["shares"].as_array().unwrap();
    let text = stdout_of(&fairshare([
        "sshare".as_ref(),
        "-l".as_ref(),
        "-P".as_ref(),
        "--tree".as_ref(),
        seed_tree().as_os_str(),
    ]));
    // Every `inf` LevelFS of the text is an `infinite` struct, every `parent` a 2147483647.
    let inf_rows = text.lines().filter(|l| l.split('|').nth(8) == Some("inf")).count();
    let infinite = shares.iter().filter(|a| a["fairshare"]["level"]["infinite"] == true).count();
    assert_eq!(inf_rows, infinite);
    let parent_rows = text.lines().filter(|l| l.split('|').nth(2) == Some("parent")).count();
    assert_eq!(shares.iter().filter(|a| a["shares"]["number"] == 2147483647u64).count(), parent_rows);
    assert!(parent_rows > 0);
    for a in shares.iter().filter(|a| a["fairshare"]["level"]["infinite"] == true) {
        assert_eq!(a["fairshare"]["level"]["set"], false);
    }
}

#[test]
fn json_reads_back_as_the_same_tree() {
    let dir = tempfile::tempdir().unwrap();
    for algo in ["fair-tree", "classic"] {
        let tree = seed_tree();
        let json = stdout_of(&fairshare([
            "sshare".as_ref(),
            "--json".as_ref(),
            "--algo".as_ref(),
            algo.as_ref(),
            "--tree".as_ref(),
            tree.as_os_str(),
        ]));
        let path = write_file(dir.path(), "shares.json", &json);
        for flags in [vec!["-l"], vec!["-l", "-P"], vec!["-m", "-p"]] {
            let text = |t: &Path| {
                let mut args =
                    vec!["sshare".as_ref(), "--algo".as_ref(), algo.as_ref(), "--tree".as_ref(), t.as_os_str()];
                args.extend(flags.iter().map(std::ffi::OsStr::new));
                stdout_of(&fairshare(args))
            };
            assert_eq!(text(&path), text(&tree), "{algo} {flags:?}");
        }
        // Named by --tree-format as well: the tree read back writes the same associations.
        let named = stdout_of(&fairshare([
            "sshare".as_ref(),
            "--json".as_ref(),
            "--algo".as_ref(),
            algo.as_ref(),
            "--tree-format".as_ref(),
            "sshare-json".as_ref(),
            "--tree".as_ref(),
            path.as_os_str(),
        ]));
        // The root's raw shares are not in the response (Slurm writes NO_VAL there) and Fair Tree
        // divides them by NO_VAL into the root's shares_normalized: the root's line may differ.
        let without_meta = |s: &str| {
            s.lines()
                .filter(|l| !l.starts_with("\"meta\"") && !l.starts_with("{\"id\":1,"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(without_meta(&named), without_meta(&json), "{algo}");
    }
}

#[test]
fn json_conflicts_with_the_text_flags_and_bad_json_is_an_error() {
    for flag in ["-l", "-p", "-P", "-n", "-m", "-oAccount"] {
        let out = fairshare(["sshare", "--json", flag]);
        assert!(!out.status.success(), "{flag}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"), "{flag}");
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = write_file(dir.path(), "bad.json", "{\"shares\": {\"shares\": [\n{\"id\": 1, \"name\": \"root\"}\n]}}\n");
    let out = fairshare(["sshare".as_ref(), "--tree".as_ref(), bad.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("bad.json") && err.contains("association 1"), "{err}");
}
