//! `sshare`: a dump made with `sshare -a -P` or `-p` (with or without `-l`, with a header line).
//!
//! The hierarchy comes from the leading spaces of the Account column (one per depth); Account,
//! User, RawShares (a number or `parent`), RawUsage and, when printed, Partition (`-m`) and
//! GrpTRESMins (`-l`; an older Slurm's GrpCPUMins, as `cpu=`) are used.
//! Rows get their line number as id.
//!
//! Older Slurm differs in two ways, both read: its header names have spaces (`Raw Shares`,
//! `Norm Usage`, `Effectv Usage` in Slurm 14), and it prints the root's own user association
//! without indentation (`root|root|1|...` right under `root|||...`), where newer Slurm indents it
//! by one space like every other child of the root.

use std::collections::HashMap;
use std::path::Path;

use super::tree_values::{parse_shares, parse_usage};
use crate::tree::{AssocRecord, Shares, TreeInput};
use fairshare_base::error::{Error, Result};

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
    // Slurm 14 spells `RawShares` as `Raw Shares`.
    let names: Vec<String> = header.split('|').map(|n| n.replace(' ', "")).collect();
    let col: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
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

    let mut records: Vec<AssocRecord> = Vec::new();
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
            // Older Slurm's root user association: `root|root|...`, unindented.
            0 if user.is_some() && account == records[0].account => Some(open[0].clone()),
            0 => {
                return Err(err(
                    "a second row at depth 0: only the root (and, from older Slurm, the root's own user row) has no \
                     indentation"
                        .into(),
                ));
            }
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
    Ok(TreeInput::slurm(path, records))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (id, parent id, account, user, shares, usage) of every record.
    fn rows(text: &str) -> Result<Vec<(u64, Option<u64>, String, Option<String>, Shares, f64)>> {
        let input = parse(Path::new("sshare.txt"), text)?;
        Ok(input.records.into_iter().map(|r| (r.id, r.parent_id, r.account, r.user, r.shares, r.usage)).collect())
    }

    /// Slurm 15.08 to 16.05 under classic, `-l -p`: no spaces in the header names, TRES columns,
    /// the root's user row unindented.
    #[test]
    fn reads_the_unindented_root_user_row_of_older_slurm() {
        let text = "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|GrpTRESMins|TRESRunMins|\n\
                    root|||1.000000|100||1.000000|||cpu=0,mem=0,energy=0,node=0|\n\
                    root|root|1|0.500000|0|0.000000|0.000000|1.000000||cpu=0,mem=0,energy=0,node=0|\n \
                    a||1|0.500000|100|1.000000|1.000000|||cpu=0,mem=0,energy=0,node=0|\n  \
                    a|u|1|0.500000|100|1.000000|1.000000|0.250000||cpu=0,mem=0,energy=0,node=0|\n";
        let s = |v: &str| v.to_string();
        assert_eq!(
            rows(text).unwrap(),
            [
                (2, None, s("root"), None, Shares::Value(0), 100.0),
                (3, Some(2), s("root"), Some(s("root")), Shares::Value(1), 0.0),
                (4, Some(2), s("a"), None, Shares::Value(1), 100.0),
                (5, Some(4), s("a"), Some(s("u")), Shares::Value(1), 100.0),
            ]
        );
        // Newer Slurm's indented root user row reads the same.
        let indented = text.replace("\nroot|root|", "\n root|root|");
        assert_eq!(rows(&indented).unwrap(), rows(text).unwrap());
    }

    #[test]
    fn reads_slurm_14_header_names_with_spaces() {
        let text = "Account|User|Raw Shares|Norm Shares|Raw Usage|Norm Usage|Effectv Usage|FairShare|GrpCPUMins|CPURunMins\n\
                    root|||1.000000|7||1.000000|0.500000||0\n \
                    a||parent|1.000000|7|1.000000|1.000000|0.500000||0\n  \
                    a|u|3|1.000000|7|1.000000|1.000000|0.500000||0\n";
        let got: Vec<(Shares, f64)> = rows(text).unwrap().into_iter().map(|r| (r.4, r.5)).collect();
        assert_eq!(got, [(Shares::Value(0), 7.0), (Shares::Parent, 7.0), (Shares::Value(3), 7.0)]);
    }

    #[test]
    fn only_the_root_and_its_own_user_row_are_unindented() {
        const H: &str = "Account|User|RawShares|RawUsage\n";
        // A user row at depth 0 under another account, or a second account at depth 0.
        for (rows_text, line) in [("root|||0\n a||1|0\na|u|1|0\n", 4), ("root|||0\nroot|root|1|0\nother|||0\n", 4)] {
            let e = rows(&format!("{H}{rows_text}")).unwrap_err().to_string();
            assert!(e.starts_with(&format!("sshare.txt:{line}: a second row at depth 0")), "{e}");
        }
    }
}
