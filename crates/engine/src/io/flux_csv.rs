//! `flux-csv`: flux-accounting's weighted-tree CSV `level,bank,user,shares,usage`, depth-first,
//! `%^+_nouser` in the user column marking a bank. Bank usage is taken as given, as the upstream
//! loader does.

use std::path::Path;

use super::tree_values::parse_usage;
use crate::tree::{AccountUsage, AssocRecord, Shares, SiblingOrder, TreeInput};
use fairshare_base::error::{Error, Result};
use fairshare_base::read::fields::{split_csv, strip_zero_fraction};

/// The user-column marker of a bank row.
pub const NO_USER: &str = "%^+_nouser";

/// Parses flux-csv text (`path` names it in errors). A header line whose first field (quoted or
/// not) starts with `level` is skipped, as is a leading UTF-8 byte order mark.
///
/// # Errors
/// A malformed row, a level that skips a level, or a user whose bank column differs from the bank
/// it sits under, with its line.
pub fn parse(path: &Path, text: &str) -> Result<TreeInput> {
    let mut records: Vec<AssocRecord> = Vec::new();
    // Most recent bank at each level: (id, name).
    let mut open: Vec<(u64, String)> = Vec::new();
    for (i, line) in text.trim_start_matches('\u{feff}').lines().enumerate() {
        let line_no = i as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        let err = |m: String| Error::input(path, line_no, m);
        let f = split_csv(line).map_err(|m| err(m.into()))?;
        // pyarrow's `write_csv` quotes the header's names.
        if records.is_empty() && f[0].trim_start().starts_with("level") {
            continue;
        }
        if f.len() != 5 {
            return Err(err(format!("expected 5 fields level,bank,user,shares,usage, found {}", f.len())));
        }
        let level =
            f[0].trim().parse::<usize>().map_err(|_| err(format!("level {:?} is not a non-negative integer", f[0])))?;
        let bank = f[1].trim().to_string();
        let is_bank = f[2].trim() == NO_USER;
        let shares = strip_zero_fraction(f[3].trim())
            .parse::<u64>()
            .map_err(|_| err(format!("shares {:?} is not a non-negative integer", f[3])))?;
        let usage = parse_usage(&f[4]).map_err(err)?;
        if level > open.len() || (level == 0 && (!records.is_empty() || !is_bank)) || (level > 0 && open.is_empty()) {
            return Err(err(format!(
                "level {level} does not follow the levels above it (a single root bank at level 0 comes first)"
            )));
        }
        let parent = level.checked_sub(1).map(|l| open[l].clone());
        if let (false, Some((_, pname))) = (is_bank, &parent)
            && *pname != bank
        {
            return Err(err(format!("user {} names bank {bank:?} but sits under bank {pname:?}", f[2].trim())));
        }
        let id = line_no;
        records.push(AssocRecord {
            id,
            parent_id: parent.map(|(pid, _)| pid),
            account: bank.clone(),
            user: (!is_bank).then(|| f[2].trim().to_string()),
            partition: None,
            shares: Shares::Value(shares),
            usage,
            priority: None,
            grp_tres_mins: None,
            line: line_no,
        });
        if is_bank {
            open.truncate(level);
            open.push((id, bank));
        }
    }
    if records.is_empty() {
        return Err(Error::input(path, None, "empty file: expected rows level,bank,user,shares,usage"));
    }
    Ok(TreeInput::ordered(path, records, SiblingOrder::Input, AccountUsage::Given))
}
