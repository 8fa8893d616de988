//! `sshare`: a dump made with `sshare -a -P` or `-p` (with or without `-l`, with a header line).
//!
//! The hierarchy comes from the leading spaces of the Account column (one per depth); Account,
//! User, RawShares (a number or `parent`), RawUsage and, when printed, Partition (`-m`) and
//! GrpTRESMins (`-l`; an older Slurm's GrpCPUMins, as `cpu=`) are used.
//! Rows get their line number as id.

use std::collections::HashMap;
use std::path::Path;

use super::tree_values::{parse_shares, parse_usage};
use crate::error::{Error, Result};
use crate::tree::{AccountUsage, AssocRecord, Shares, SiblingOrder, TreeInput};

/// Parses a parsable sshare dump (`path` names it in errors).
///
/// # Errors
/// No header, a missing Account/User/RawShares/RawUsage column, fixed-width output, a row whose
/// indentation skips a level, or a bad value, with its line.
pub fn parse(path: &Path, text: &str) -> Result<TreeInput> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.starts_with("CLUSTER:"));
    let Some((hi, header)) = lines.next() else {
        return Err(Error::input(path, None, "empty file: expected an `sshare -a -P` dump with its header"));
    };
    if !header.contains('|') {
        return Err(Error::input(path, hi as u64 + 1, "not a parsable sshare dump: make it with `sshare -a -l -P`"));
    }
    let names: Vec<&str> = header.split('|').map(str::trim).collect();
    let col: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let need = |name: &str| {
        col.get(name)
            .copied()
            .ok_or_else(|| Error::input(path, hi as u64 + 1, format!("missing column {name:?} in the sshare header")))
    };
    let (c_account, c_user, c_shares, c_usage) =
        (need("Account")?, need("User")?, need("RawShares")?, need("RawUsage")?);
    let c_partition = col.get("Partition").copied();
    let c_grp_tres_mins = col.get("GrpTRESMins").copied();
    let c_grp_cpu_mins = col.get("GrpCPUMins").copied();
    let width = [c_account, c_user, c_shares, c_usage].into_iter().max().unwrap_or(0) + 1;

    let mut records = Vec::new();
    // Most recent account at each depth: (id, name).
    let mut open: Vec<(u64, String)> = Vec::new();
    for (i, line) in lines {
        let line_no = i as u64 + 1;
        let err = |m: String| Error::input(path, line_no, m);
        let f: Vec<&str> = line.split('|').collect();
        if f.len() < width {
            return Err(err(format!("expected {} fields, found {}", names.len(), f.len())));
        }
        let raw_account = f[c_account];
        let account = raw_account.trim_start_matches(' ');
        let depth = raw_account.len() - account.len();
        let account = account.trim_end().to_string();
        let user = Some(f[c_user].trim()).filter(|u| !u.is_empty()).map(str::to_string);
        if account.is_empty() {
            return Err(err("empty Account field".into()));
        }
        let parent = match depth {
            0 if records.is_empty() && user.is_none() => None,
            _ if records.is_empty() => {
                return Err(err("the first row must be the root account: no indentation and no User".into()));
            }
            0 => return Err(err("a second row at depth 0: only the root has no indentation".into())),
            d if d <= open.len() => Some(open[d - 1].clone()),
            d => {
                return Err(err(format!(
                    "indentation of {d} spaces skips a level (the row above is at depth {})",
                    open.len().saturating_sub(1)
                )));
            }
        };
        let shares = match f[c_shares].trim() {
            "" if parent.is_none() => Shares::Value(0),
            "" => return Err(err("empty RawShares on a non-root row".into())),
            s => parse_shares(s).map_err(err)?,
        };
        let partition =
            c_partition.and_then(|c| f.get(c)).map(|p| p.trim()).filter(|p| !p.is_empty()).map(str::to_string);
        let field = |c: Option<usize>| c.and_then(|c| f.get(c)).map(|v| v.trim()).filter(|v| !v.is_empty());
        let grp_tres_mins =
            field(c_grp_tres_mins).map(str::to_string).or_else(|| field(c_grp_cpu_mins).map(|m| format!("cpu={m}")));
        let id = line_no;
        if user.is_none() {
            open.truncate(depth);
            open.push((id, account.clone()));
        }
        records.push(AssocRecord {
            id,
            parent_id: parent.map(|(pid, _)| pid),
            account,
            user,
            partition,
            shares,
            usage: parse_usage(f[c_usage]).map_err(err)?,
            priority: None,
            grp_tres_mins,
            line: line_no,
        });
    }
    Ok(TreeInput {
        source: path.to_path_buf(),
        records,
        sibling_order: SiblingOrder::Lineage,
        account_usage: AccountUsage::SumOfUsers,
        tres: None,
    })
}
