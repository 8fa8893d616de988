//! `flux-db`: a flux-accounting SQLite database, read with the rules of its C++ reader
//! (`data_reader_db.cpp`).
//!
//! The root is the first bank with an empty `parent_bank`. A bank with any sub-bank row (active or
//! not) takes only its active sub-banks, ordered by name, and ignores associations attached to it;
//! a bank without sub-banks takes its active associations, ordered by username. Inactive banks and
//! their subtrees are left out. Bank usage is the sum of its active users' `job_usage`.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};
use crate::tree::{AccountUsage, AssocRecord, Shares, SiblingOrder, TreeInput};

/// Reads the association tree of a flux-accounting database.
///
/// # Errors
/// The file is `-` or a stream, cannot be opened as SQLite, lacks `bank_table`/`association_table`,
/// has no root bank, or has a negative share count.
pub fn read(path: &Path) -> Result<TreeInput> {
    let db_err = |e: rusqlite::Error| Error::format(path, format!("flux-accounting database: {e}"));
    crate::io::source::require_file(path, "a flux-accounting database")?;
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(db_err)?;
    let root: String = conn
        .query_row("SELECT bank FROM bank_table WHERE parent_bank='' LIMIT 1", [], |r| r.get(0))
        .map_err(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => {
                Error::input(path, None, "no root bank: no bank_table row has parent_bank=''")
            }
            e => db_err(e),
        })?;
    let mut shares_q = conn.prepare("SELECT shares FROM bank_table WHERE bank=?1").map_err(db_err)?;
    let mut banks_q =
        conn.prepare("SELECT bank, active FROM bank_table WHERE parent_bank=?1 ORDER BY bank").map_err(db_err)?;
    let mut assoc_q = conn
        .prepare("SELECT username, shares, job_usage, active FROM association_table WHERE bank=?1 ORDER BY username")
        .map_err(db_err)?;

    let mut records: Vec<AssocRecord> = Vec::new();
    let mut next_id = 1u64;
    // Depth-first, as the C++ reader recurses: (bank, parent id).
    let mut stack: Vec<(String, Option<u64>)> = vec![(root, None)];
    // A bank reached twice (a parent_bank cycle through the root, or a bank listed twice) would
    // otherwise be walked again and again.
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    while let Some((bank, parent_id)) = stack.pop() {
        if !seen.insert(bank.clone()) {
            return Err(Error::input(
                path,
                None,
                format!("bank_table: bank {bank:?} is reached twice (a parent_bank cycle, or a bank listed twice)"),
            ));
        }
        let row_err = |e: rusqlite::Error| {
            Error::format(path, format!("flux-accounting database: bank_table: bank {bank:?}: {e}"))
        };
        let shares: i64 = shares_q.query_row([&bank], |r| r.get(0)).map_err(row_err)?;
        let shares = u64::try_from(shares)
            .map_err(|_| Error::input(path, None, format!("bank_table: bank {bank:?} has negative shares {shares}")))?;
        let id = next_id;
        next_id += 1;
        records.push(AssocRecord::account(id, parent_id, bank.clone(), Shares::Value(shares), id));
        let subs: Vec<(String, bool)> = banks_q
            .query_map([&bank], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? != 0)))
            .map_err(db_err)?
            .collect::<std::result::Result<_, _>>()
            .map_err(db_err)?;
        if subs.is_empty() {
            let rows = assoc_q
                .query_map([&bank], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, f64>(2)?, r.get::<_, i64>(3)? != 0))
                })
                .map_err(db_err)?;
            for row in rows {
                let (user, shares, usage, active) = row.map_err(|e| {
                    Error::format(
                        path,
                        format!("flux-accounting database: association_table: a user of bank {bank:?}: {e}"),
                    )
                })?;
                if !active {
                    continue;
                }
                let shares = u64::try_from(shares).map_err(|_| {
                    Error::input(
                        path,
                        None,
                        format!("association_table: {user} in {bank} has negative shares {shares}"),
                    )
                })?;
                if !usage.is_finite() || usage < 0.0 {
                    return Err(Error::input(
                        path,
                        None,
                        format!("association_table: {user} in {bank} has job_usage {usage}"),
                    ));
                }
                records.push(AssocRecord {
                    id: next_id,
                    parent_id: Some(id),
                    account: bank.clone(),
                    user: Some(user),
                    partition: None,
                    shares: Shares::Value(shares),
                    usage,
                    priority: None,
                    line: next_id,
                });
                next_id += 1;
            }
        } else {
            // Reverse so the stack pops them in name order.
            stack.extend(subs.into_iter().rev().filter(|(_, active)| *active).map(|(b, _)| (b, Some(id))));
        }
    }
    Ok(TreeInput {
        source: path.to_path_buf(),
        records,
        sibling_order: SiblingOrder::Input,
        account_usage: AccountUsage::SumOfUsers,
    })
}

/// The tables flux-accounting's priority plugin reads besides the fair-share values.
#[derive(Clone, Debug, Default)]
pub struct FluxPriorityTables {
    /// `priority_factor_weight_table` (defaults where a row is missing).
    pub weights: crate::priority::flux::FluxWeights,
    /// `queue_table.priority` by queue name.
    pub queues: std::collections::HashMap<String, i32>,
    /// `bank_table.priority` by bank name.
    pub banks: std::collections::HashMap<String, f64>,
}

/// Reads the priority weights, queue priorities and bank priorities of a flux-accounting database.
/// Tables or columns an older schema lacks leave the plugin's defaults.
///
/// # Errors
/// The file is `-` or a stream, or not a readable SQLite database.
pub fn read_priority_tables(path: &Path) -> Result<FluxPriorityTables> {
    let db_err = |e: rusqlite::Error| Error::format(path, format!("flux-accounting database: {e}"));
    crate::io::source::require_file(path, "a flux-accounting database")?;
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(db_err)?;
    let mut tables = FluxPriorityTables::default();
    // A missing table is an older schema, not an error.
    let rows = |sql: &str| -> Vec<(String, f64)> {
        conn.prepare(sql)
            .and_then(|mut q| q.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))?.collect())
            .unwrap_or_default()
    };
    for (factor, weight) in rows("SELECT factor, weight FROM priority_factor_weight_table") {
        let w = weight as i32;
        match factor.as_str() {
            "fairshare" => tables.weights.fairshare = w,
            "queue" => tables.weights.queue = w,
            "bank" => tables.weights.bank = w,
            "urgency" => tables.weights.urgency = w,
            _ => {}
        }
    }
    tables.queues = rows("SELECT queue, priority FROM queue_table").into_iter().map(|(q, p)| (q, p as i32)).collect();
    tables.banks = rows("SELECT bank, priority FROM bank_table").into_iter().collect();
    Ok(tables)
}
