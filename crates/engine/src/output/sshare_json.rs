//! `sshare --json`: the `shares` response of Slurm's data_parser (`sshare --json`, slurmrestd's
//! `GET /slurm/v0.0.44/shares`, unchanged through v0.0.46).
//!
//! The envelope is `{"shares": {"shares": [...], "total_shares": N}, "meta": {...}, "errors": [],
//! "warnings": []}`; each association carries the fields of data_parser's `ASSOC_SHARES_OBJ_WRAP`
//! as `assoc_mgr_get_shares` fills them:
//!
//! - `id`, `cluster`, `name` (the user for a user association, else the account), `parent` (a
//!   user's account, an account's parent account; `""` for the root), `partition` (`""` when none);
//! - `shares`: the raw shares as a `{"set", "infinite", "number"}` struct: unset for the root (Slurm
//!   stores `NO_VAL` there), `number` 2147483647 (`SLURMDB_FS_USE_PARENT`) for `parent` shares;
//! - `shares_normalized`, `effective_usage`, `usage_normalized`, `fairshare.factor`,
//!   `fairshare.level`: `FLOAT64_NO_VAL` structs (`inf` → `infinite: true`; NaN and `NO_VAL` →
//!   `set: false`, as for an account's factor and a `parent` association's level);
//! - `usage`: the raw usage truncated to an integer, as Slurm's `(uint64_t)usage_raw`;
//! - `tres.run_seconds`, `tres.group_minutes` (`{"name", "value"}` with `UINT64_NO_VAL` values) and
//!   `tres.usage` (`{"name", "value"}` with plain numbers). When the usage was charged under a
//!   slurm.conf, each list names every TRES of the cluster: running jobs' remaining TRES-seconds,
//!   `GrpTRESMins` (unset TRES `infinite`), and the decayed TRES-seconds; otherwise each list has
//!   one entry, `billing`. The `billing` usage is always the raw usage untruncated (slurmctld's
//!   differs from it only by its truncated billing count), which lets the output be read back
//!   exactly;
//! - `type`: `["USER"]` or `["ASSOCIATION"]`.
//!
//! `total_shares` is the sum of the root's children's raw shares (slurmctld never fills it and
//! prints 0; the sum is what the name says). Associations come in sshare's order, one per line.

use std::io::{self, Write};
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Value, json};

use super::yaml::write_block;
use crate::config::tres::parse_tres_counts;
use crate::pass::{FairShare, NO_VAL};
use crate::tree::AssocTree;
use fairshare_base::error::{Error, Result};

/// The data_parser version whose schema the output follows.
pub const DATA_PARSER: &str = "data_parser/v0.0.44";

/// Slurm's `SLURMDB_FS_USE_PARENT`: the raw shares of a `parent` association.
pub const FS_USE_PARENT: u64 = 0x7FFF_FFFF;

/// The TRES every `tres` list names without a cluster (fairshare charges billing units).
const TRES: &str = "billing";

/// What to write.
#[derive(Clone, Debug, Default)]
pub struct SshareJsonOptions {
    /// The cluster name every association carries (`""` when unknown).
    pub cluster: String,
    /// `-U`: user associations only.
    pub users_only: bool,
    /// `-A`: only associations of these accounts.
    pub accounts: Vec<String>,
    /// `-u`: only these users' associations (account associations are kept).
    pub users: Vec<String>,
    /// The command line `meta.command` records.
    pub command: Vec<String>,
    /// The file the JSON goes to, named in write errors (`None`: `<stdout>`).
    pub dest: Option<PathBuf>,
}

/// Writes the `shares` response for `tree` and its fair-share result.
///
/// # Errors
/// I/O errors from `out`, as [`Error::Io`] on `opts.dest`.
pub fn write_sshare_json(
    out: &mut dyn Write,
    tree: &AssocTree,
    fs: &FairShare,
    opts: &SshareJsonOptions,
) -> Result<()> {
    write_response(out, tree, fs, opts).map_err(|e| Error::io(super::dest_name(opts.dest.as_deref()), e))
}

fn write_response(out: &mut dyn Write, tree: &AssocTree, fs: &FairShare, opts: &SshareJsonOptions) -> io::Result<()> {
    out.write_all(b"{\"shares\": {\"shares\": [")?;
    let mut first = true;
    for row in tree.preorder() {
        let row = row as usize;
        if !selected(tree, row, opts) {
            continue;
        }
        out.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        serde_json::to_writer(&mut *out, &association(tree, fs, row, &opts.cluster))?;
    }
    write!(out, "\n], \"total_shares\": {}}},\n\"meta\": ", total_shares(tree))?;
    serde_json::to_writer(&mut *out, &meta(opts))?;
    out.write_all(b",\n\"errors\": [],\n\"warnings\": []}\n")
}

/// Writes the same `shares` response as YAML (`sshare --yaml`), a YAML document of the same
/// structure: associations in sshare's order, the keys of each mapping in alphabetical order.
///
/// # Errors
/// I/O errors from `out`, as [`Error::Io`] on `opts.dest`.
pub fn write_sshare_yaml(
    out: &mut dyn Write,
    tree: &AssocTree,
    fs: &FairShare,
    opts: &SshareJsonOptions,
) -> Result<()> {
    write_yaml_response(out, tree, fs, opts).map_err(|e| Error::io(super::dest_name(opts.dest.as_deref()), e))
}

fn write_yaml_response(
    out: &mut dyn Write,
    tree: &AssocTree,
    fs: &FairShare,
    opts: &SshareJsonOptions,
) -> io::Result<()> {
    let rows: Vec<usize> =
        tree.preorder().into_iter().map(|r| r as usize).filter(|&r| selected(tree, r, opts)).collect();
    out.write_all(b"---\nshares:\n")?;
    if rows.is_empty() {
        out.write_all(b"  shares: []\n")?;
    } else {
        out.write_all(b"  shares:\n")?;
        // One association at a time, as a one-item sequence: never the whole response in memory.
        for row in rows {
            let item = serde_json::to_value(association(tree, fs, row, &opts.cluster))?;
            write_block(out, &Value::Array(vec![item]), 2)?;
        }
    }
    writeln!(out, "  total_shares: {}", total_shares(tree))?;
    write_block(out, &json!({"meta": meta(opts), "errors": [], "warnings": []}), 0)
}

/// The response's `meta`: who made it, with which parser.
fn meta(opts: &SshareJsonOptions) -> Value {
    json!({
        "plugin": {"type": "", "name": "", "data_parser": DATA_PARSER, "accounting_storage": ""},
        "client": {"source": "fairshare", "user": "", "group": ""},
        "command": opts.command,
    })
}

/// The `-A`, `-u` and `-U` filters, as sshare's text applies them.
fn selected(tree: &AssocTree, row: usize, opts: &SshareJsonOptions) -> bool {
    let user = tree.user_name(row);
    !(opts.users_only && user.is_none())
        && (opts.accounts.is_empty() || opts.accounts.iter().any(|a| a == tree.account(row)))
        && (opts.users.is_empty() || user.is_none_or(|u| opts.users.iter().any(|x| x == u)))
}

/// The raw shares of the root's children (`parent` ones hold none of their own).
fn total_shares(tree: &AssocTree) -> u64 {
    tree.children(0).filter(|&c| !tree.is_parent_shares(c)).map(|c| tree.raw_shares()[c]).sum()
}

/// One association as `ASSOC_SHARES_OBJ_WRAP` dumps it, fields in its order.
#[derive(Serialize)]
struct Association<'a> {
    id: u64,
    cluster: &'a str,
    name: &'a str,
    parent: &'a str,
    partition: &'a str,
    shares_normalized: NoVal<f64>,
    shares: NoVal<u64>,
    tres: Tres,
    effective_usage: NoVal<f64>,
    usage_normalized: NoVal<f64>,
    usage: u64,
    fairshare: Factors,
    #[serde(rename = "type")]
    kind: [&'static str; 1],
}

/// Slurm's `{"set", "infinite", "number"}` struct of a number that may be unset or infinite.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
struct NoVal<T> {
    set: bool,
    infinite: bool,
    number: T,
}

/// The `tres` lists.
#[derive(Serialize)]
struct Tres {
    run_seconds: Vec<TresValue<NoVal<u64>>>,
    group_minutes: Vec<TresValue<NoVal<u64>>>,
    usage: Vec<TresValue<Value>>,
}

/// One `{"name", "value"}` entry of a `tres` list.
#[derive(Serialize)]
struct TresValue<T> {
    name: String,
    value: T,
}

/// One entry of a `tres` list.
fn tres_value<T>(name: &crate::config::Tres, value: T) -> TresValue<T> {
    TresValue { name: name.to_string(), value }
}

/// Row `row`'s `tres` lists: every TRES of the cluster when the tree knows them, else `billing`.
fn tres_lists(tree: &AssocTree, row: usize) -> Tres {
    let usage = tree.raw_usage()[row];
    let unlimited = NoVal { set: false, infinite: true, number: 0 };
    let Some(t) = tree.tres() else {
        return Tres {
            run_seconds: vec![TresValue { name: TRES.into(), value: uint_no_val(Some(0)) }],
            group_minutes: vec![TresValue { name: TRES.into(), value: unlimited }],
            usage: vec![TresValue { name: TRES.into(), value: finite(usage) }],
        };
    };
    let limits = tree.grp_tres_mins(row).and_then(|l| parse_tres_counts(l).ok()).unwrap_or_default();
    Tres {
        run_seconds: t
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| tres_value(n, uint_no_val(Some(t.run_secs(row, i)))))
            .collect(),
        group_minutes: t
            .names
            .iter()
            .map(|n| match limits.iter().find(|(l, _)| *l == n) {
                Some((_, m)) => tres_value(n, uint_no_val(Some(m))),
                None => tres_value(n, unlimited),
            })
            .collect(),
        usage: t
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                tres_value(n, finite(if *n == crate::config::Tres::BILLING { usage } else { t.usage(row, i) }))
            })
            .collect(),
    }
}

/// `fairshare.factor` and `fairshare.level`.
#[derive(Serialize)]
struct Factors {
    factor: NoVal<f64>,
    level: NoVal<f64>,
}

fn association<'a>(tree: &'a AssocTree, fs: &FairShare, row: usize, cluster: &'a str) -> Association<'a> {
    let user = tree.user_name(row);
    let parent = match (user, row) {
        (Some(_), _) => tree.account(row),
        (None, 0) => "",
        (None, _) => tree.account(tree.parents()[row] as usize),
    };
    let shares = match row {
        0 => None,
        _ if tree.is_parent_shares(row) => Some(FS_USE_PARENT),
        _ => Some(tree.raw_shares()[row]),
    };
    let usage = tree.raw_usage()[row];
    Association {
        id: tree.ids()[row],
        cluster,
        name: user.unwrap_or(tree.account(row)),
        parent,
        partition: tree.partition(row).unwrap_or(""),
        shares_normalized: float_no_val(fs.norm_shares[row]),
        shares: uint_no_val(shares),
        tres: tres_lists(tree, row),
        effective_usage: float_no_val(fs.effective_usage[row]),
        usage_normalized: float_no_val(fs.norm_usage[row]),
        // Slurm's `(uint64_t)usage_raw`: truncation, saturating as Rust's cast does.
        usage: usage as u64,
        fairshare: Factors { factor: float_no_val(fs.fs_factor[row]), level: float_no_val(fs.level_fs[row]) },
        kind: [if user.is_some() { "USER" } else { "ASSOCIATION" }],
    }
}

/// `FLOAT64_NO_VAL`'s struct: infinity is `infinite`, NaN and Slurm's NO_VAL/INFINITE are unset.
fn float_no_val(v: f64) -> NoVal<f64> {
    if v.is_infinite() || v == 4_294_967_295.0 {
        NoVal { set: false, infinite: true, number: 0.0 }
    } else if v.is_nan() || v == NO_VAL {
        NoVal { set: false, infinite: false, number: 0.0 }
    } else {
        NoVal { set: true, infinite: false, number: v }
    }
}

/// `UINT32_NO_VAL`/`UINT64_NO_VAL`'s struct; `None` is unset.
fn uint_no_val(v: Option<u64>) -> NoVal<u64> {
    NoVal { set: v.is_some(), infinite: false, number: v.unwrap_or(0) }
}

/// A plain JSON number; a non-finite value (which JSON cannot hold) is `null`.
fn finite(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::{Algorithm, Params, compute};

    fn response(algorithm: Algorithm) -> Value {
        let tree = crate::io::default_tree().unwrap();
        let fs = compute(&tree, &Params::new(algorithm)).unwrap();
        let mut out = Vec::new();
        write_sshare_json(&mut out, &tree, &fs, &SshareJsonOptions::default()).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn number_structs_follow_data_parser() {
        let json = |v| serde_json::to_value(v).unwrap();
        assert_eq!(json(float_no_val(f64::INFINITY)), json!({"set": false, "infinite": true, "number": 0.0}));
        assert!(!float_no_val(f64::NAN).set && !float_no_val(f64::NAN).infinite);
        assert!(!float_no_val(NO_VAL).set && !float_no_val(NO_VAL).infinite);
        assert_eq!(json(float_no_val(0.25)), json!({"set": true, "infinite": false, "number": 0.25}));
        assert!(!uint_no_val(None).set);
    }

    #[test]
    fn root_accounts_users_and_parent_shares() {
        let v = response(Algorithm::FairTree);
        let shares = v["shares"]["shares"].as_array().unwrap();
        let root = &shares[0];
        assert_eq!(root["name"], "root");
        assert_eq!(root["parent"], "");
        assert_eq!(root["shares"]["set"], false);
        assert_eq!(root["type"], json!(["ASSOCIATION"]));
        let user = shares.iter().find(|a| a["type"] == json!(["USER"])).unwrap();
        assert_eq!(user["fairshare"]["factor"]["set"], true);
        let parent = shares.iter().find(|a| a["shares"]["number"] == FS_USE_PARENT).unwrap();
        assert_eq!(parent["fairshare"]["level"]["set"], false);
        assert!(v["shares"]["total_shares"].as_u64().unwrap() > 0);
        assert_eq!(v["meta"]["plugin"]["data_parser"], DATA_PARSER);
    }
}
