//! `assoc-csv`: `id,parent_id,account,user,shares,usage[,partition][,priority][,grp_tres_mins]`, rows
//! in any order. `grp_tres_mins` is a quoted TRES list (`"cpu=60000,gres/gpu=600"`), empty for none.

use std::collections::HashMap;
use std::path::Path;

use super::tree_values::{parse_shares, parse_usage};
use crate::tree::{AssocRecord, TreeInput};
use fairshare_base::error::{Error, Result};
use fairshare_base::read::fields::{split_csv, strip_zero_fraction};

/// Parses assoc-csv text (`path` names it in errors).
///
/// # Errors
/// A missing required column, a row with the wrong number of fields, or a bad id, shares or
/// usage value, with its line.
pub fn parse(path: &Path, text: &str) -> Result<TreeInput> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(Error::input(path, None, "empty file: expected the header id,parent_id,account,user,shares,usage"));
    };
    let names = split_csv(header.trim_start_matches('\u{feff}')).map_err(|m| Error::input(path, 1, m))?;
    let col: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.trim(), i)).collect();
    let need = |name: &str| {
        col.get(name).copied().ok_or_else(|| {
            Error::input(
                path,
                1,
                format!("missing column {name:?}: the header must have id,parent_id,account,user,shares,usage"),
            )
        })
    };
    let (c_id, c_parent, c_account, c_user, c_shares, c_usage) =
        (need("id")?, need("parent_id")?, need("account")?, need("user")?, need("shares")?, need("usage")?);
    let c_partition = col.get("partition").copied();
    let c_priority = col.get("priority").copied();
    let c_grp_tres_mins = col.get("grp_tres_mins").copied();

    let mut records = Vec::new();
    for (i, line) in lines {
        let line_no = i as u64 + 1;
        let err = |m: String| Error::input(path, line_no, m);
        let f = split_csv(line).map_err(|m| err(m.into()))?;
        if f.len() != names.len() {
            return Err(err(format!("expected {} fields, found {}", names.len(), f.len())));
        }
        let id = strip_zero_fraction(f[c_id].trim())
            .parse::<u64>()
            .map_err(|_| err(format!("id {:?} is not a non-negative integer", f[c_id])))?;
        let parent_id = match f[c_parent].trim() {
            "" => None,
            p => Some(
                strip_zero_fraction(p)
                    .parse::<u64>()
                    .map_err(|_| err(format!("parent_id {p:?} is not a non-negative integer")))?,
            ),
        };
        let text_opt = |c: Option<usize>| c.map(|c| f[c].trim().to_string()).filter(|s| !s.is_empty());
        let account = f[c_account].trim().to_string();
        if account.is_empty() {
            return Err(err("empty account".into()));
        }
        let priority = match text_opt(c_priority) {
            None => None,
            Some(p) => Some(
                strip_zero_fraction(&p)
                    .parse::<u32>()
                    .map_err(|_| err(format!("priority {p:?} is not a 32-bit unsigned integer")))?,
            ),
        };
        records.push(AssocRecord {
            id,
            parent_id,
            account,
            user: text_opt(Some(c_user)),
            partition: text_opt(c_partition),
            shares: parse_shares(&f[c_shares]).map_err(err)?,
            usage: parse_usage(&f[c_usage]).map_err(err)?,
            priority,
            grp_tres_mins: text_opt(c_grp_tres_mins),
            line: line_no,
        });
    }
    Ok(TreeInput::slurm(path, records))
}
