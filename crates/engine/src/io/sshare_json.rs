//! `sshare-json`: the `shares` response of Slurm's data_parser (`sshare --json`, slurmrestd's
//! `/shares`, or `fairshare sshare --json`) read back as a tree.
//!
//! Each entry of `shares.shares` is an association: `type` `["USER"]` (`name` is the user,
//! `parent` its account) or `["ASSOCIATION"]` (`name` is the account, `parent` its parent
//! account, `""` for the root). `shares` is a `{"set", "infinite", "number"}` struct or a plain
//! number; 2147483647 (`SLURMDB_FS_USE_PARENT`) is `parent`, an unset value is allowed on the root
//! only. The raw usage is the `billing` entry of `tres.usage` when there is one (untruncated),
//! else `usage`. Accounts are named by `parent`, so account names must be unique. Errors name the
//! association by its place in `shares.shares` (`association 3`, counting from 1).

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::tree::{AssocRecord, MAX_SHARES, Shares, TreeInput, shares_too_large};
use fairshare_base::error::{Error, Result};

/// Slurm's `SLURMDB_FS_USE_PARENT`.
const FS_USE_PARENT: u64 = 0x7FFF_FFFF;

/// Parses a `shares` response (`path` names it in errors).
///
/// # Errors
/// Text that is not JSON (with its line), no `shares.shares` array, an association without an
/// `id`, `name` or `type`, a bad `shares` or usage value, a repeated account name, or a `parent`
/// naming no account; with the association's place.
pub fn parse(path: &Path, text: &str) -> Result<TreeInput> {
    let doc: Value =
        serde_json::from_str(text).map_err(|e| Error::input(path, e.line() as u64, format!("not JSON: {e}")))?;
    let entries = doc
        .get("shares")
        .and_then(|s| s.get("shares"))
        .and_then(Value::as_array)
        .ok_or_else(|| Error::input(path, None, "no `shares.shares` array: not a `sshare --json` response"))?;
    let mut accounts: HashMap<&str, u64> = HashMap::new();
    let mut parsed = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let err = |m: String| Error::input(path, None, format!("association {}: {m}", i + 1));
        let a = association(entry).map_err(err)?;
        if !a.user
            && let Some(id) = accounts.insert(a.name, a.id)
        {
            return Err(err(format!("account {:?} appears twice (ids {id} and {})", a.name, a.id)));
        }
        parsed.push(a);
    }
    let mut records = Vec::with_capacity(parsed.len());
    for (i, a) in parsed.into_iter().enumerate() {
        let err = |m: String| Error::input(path, None, format!("association {}: {m}", i + 1));
        let parent_id = match a.parent {
            "" if !a.user => None,
            p => Some(*accounts.get(p).ok_or_else(|| err(format!("parent {p:?} names no account")))?),
        };
        let shares = match a.shares {
            Some(FS_USE_PARENT) => Shares::Parent,
            Some(n) if n > MAX_SHARES => return Err(err(shares_too_large(n))),
            Some(n) => Shares::Value(n),
            None if parent_id.is_none() => Shares::Value(0),
            None => return Err(err("unset `shares` on an association other than the root".into())),
        };
        let (account, user) = match a.user {
            true => (a.parent.to_string(), Some(a.name.to_string())),
            false => (a.name.to_string(), None),
        };
        records.push(AssocRecord {
            id: a.id,
            parent_id,
            account,
            user,
            partition: Some(a.partition).filter(|p| !p.is_empty()).map(str::to_string),
            shares,
            usage: a.usage,
            priority: None,
            grp_tres_mins: None,
            line: i as u64 + 1,
        });
    }
    Ok(TreeInput::slurm(path, records))
}

/// The fields of one entry the tree needs.
struct Entry<'a> {
    id: u64,
    name: &'a str,
    parent: &'a str,
    partition: &'a str,
    user: bool,
    /// `None`: unset.
    shares: Option<u64>,
    usage: f64,
}

/// Reads one entry of `shares.shares`.
///
/// # Errors
/// A missing or mistyped field, as a message.
fn association(v: &Value) -> std::result::Result<Entry<'_>, String> {
    let text = |k: &str| v.get(k).map_or(Some(""), Value::as_str).ok_or_else(|| format!("`{k}` is not a string"));
    let name = text("name")?;
    if name.is_empty() {
        return Err("no `name`".into());
    }
    let id = v.get("id").and_then(Value::as_u64).ok_or("no `id` (a non-negative integer)")?;
    let user = match v.get("type").and_then(Value::as_array).map(Vec::as_slice) {
        Some([t]) if t == "USER" => true,
        Some([t]) if t == "ASSOCIATION" => false,
        _ => return Err("`type` is neither [\"USER\"] nor [\"ASSOCIATION\"]".into()),
    };
    let shares = match v.get("shares") {
        Some(Value::Object(s)) if s.get("infinite") == Some(&Value::Bool(true)) => {
            return Err("infinite `shares`".into());
        }
        Some(Value::Object(s)) if s.get("set") == Some(&Value::Bool(false)) => None,
        Some(Value::Object(s)) => {
            Some(s.get("number").and_then(Value::as_u64).ok_or("`shares.number` is not a count")?)
        }
        Some(n) => Some(n.as_u64().ok_or("`shares` is not a count")?),
        None => return Err("no `shares`".into()),
    };
    let billing = v
        .pointer("/tres/usage")
        .and_then(Value::as_array)
        .and_then(|l| l.iter().find(|t| t.get("name").and_then(Value::as_str) == Some("billing")))
        .map(|t| t.get("value").and_then(Value::as_f64).ok_or("`tres.usage` billing value is not a number"))
        .transpose()?;
    let usage = match billing {
        Some(u) => u,
        None => v.get("usage").map_or(Some(0.0), Value::as_f64).ok_or("`usage` is not a number")?,
    };
    if !(usage.is_finite() && usage >= 0.0) {
        return Err(format!("usage {usage} is not a non-negative number"));
    }
    Ok(Entry { id, name, parent: text("parent")?, partition: text("partition")?, user, shares, usage })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(shares: &str, extra: &str) -> String {
        format!(
            r#"{{"shares": {{"shares": [
            {{"id": 1, "name": "root", "parent": "", "shares": {{"set": false, "infinite": false, "number": 0}}, "type": ["ASSOCIATION"]}},
            {{"id": 2, "name": "a", "parent": "root", "shares": {shares}, "usage": 7, "type": ["ASSOCIATION"]}},
            {{"id": 3, "name": "u", "parent": "a", "shares": 2147483647, "usage": 7, "type": ["USER"]{extra}}}
            ], "total_shares": 0}}}}"#
        )
    }

    #[test]
    fn reads_structs_plain_numbers_and_parent() {
        let t = parse(Path::new("s.json"), &one(r#"{"set": true, "infinite": false, "number": 5}"#, "")).unwrap();
        assert_eq!(t.records[1].shares, Shares::Value(5));
        assert_eq!(t.records[2].shares, Shares::Parent);
        assert_eq!((t.records[2].account.as_str(), t.records[2].parent_id), ("a", Some(2)));
        assert_eq!(t.records[2].usage, 7.0);
        let billing = r#", "tres": {"usage": [{"name": "billing", "value": 7.25}]}"#;
        assert_eq!(parse(Path::new("s.json"), &one("5", billing)).unwrap().records[2].usage, 7.25);
    }

    #[test]
    fn bad_input_names_file_and_association() {
        let e = parse(Path::new("s.json"), &one(r#"{"set": false}"#, "")).unwrap_err().to_string();
        assert!(e.contains("s.json") && e.contains("association 2") && e.contains("unset"), "{e}");
        let e = parse(Path::new("s.json"), &one("5", "").replace("\"parent\": \"a\"", "\"parent\": \"b\""));
        assert!(e.unwrap_err().to_string().contains("names no account"));
        let e = parse(Path::new("s.json"), "{\n\"shares\": [").unwrap_err().to_string();
        assert!(e.contains("s.json") && e.contains("not JSON"), "{e}");
        assert!(parse(Path::new("s.json"), "{}").unwrap_err().to_string().contains("shares.shares"));
    }

    /// Shares past a uint32, as the CSV reader refuses them; two siblings of 2^63 once wrapped
    /// their sum to 0.
    #[test]
    fn shares_past_slurms_uint32_are_refused() {
        assert_eq!(
            parse(Path::new("s.json"), &one("4294967294", "")).unwrap().records[1].shares,
            Shares::Value(MAX_SHARES)
        );
        for shares in ["4294967295", "4294967296", "9223372036854775808"] {
            let e = parse(Path::new("s.json"), &one(shares, "")).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "s.json: association 2: shares {shares} is too large: expected a whole number in 0..=4294967294 or `parent`"
                )
            );
        }
    }
}
