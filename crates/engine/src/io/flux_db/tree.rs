//! The association tree of a flux-accounting database, read with the rules of its C++ reader
//! (`data_reader_db.cpp`).
//!
//! The root is the first bank with an empty `parent_bank`. A bank with any sub-bank row (active or
//! not) takes only its active sub-banks, ordered by name, and ignores associations attached to it;
//! a bank without sub-banks takes its active associations, ordered by username. Inactive banks and
//! their subtrees are left out. Bank usage is the sum of its active users' `job_usage`.
//!
//! The C++ reader finds a bank's sub-banks by name (`WHERE parent_bank=?`), so a bank name with two
//! `bank_table` rows under two parents is read under each: every copy takes the shares of the
//! name's first row, the `active` of its own row, and all the sub-banks and associations of the
//! name. Its users are then in the tree twice, each copy ranked on its own (and counted in the
//! number of users); update-fshare writes both values, the one written last staying
//! ([`crate::pass::update_fshare_order`]). A `parent_bank` cycle is refused: under the root the C++
//! reader would recurse forever, elsewhere it would silently leave out the cycle's banks and users.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::{db_err, open_read};
use crate::tree::{AccountUsage, AssocRecord, Shares, SiblingOrder, TreeInput};
use fairshare_base::error::{Error, Result};

/// Reads the association tree of a flux-accounting database.
///
/// # Errors
/// The file is `-` or a stream, cannot be opened as SQLite, lacks `bank_table`/`association_table`,
/// has no root bank, has a `parent_bank` cycle, or has a negative share count or usage.
pub fn read(path: &Path) -> Result<TreeInput> {
    let err = db_err(path);
    let conn = open_read(path)?;
    let root: String = conn
        .query_row("SELECT bank FROM bank_table WHERE parent_bank='' LIMIT 1", [], |r| r.get(0))
        .map_err(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => {
                Error::input(path, None, "no root bank: no bank_table row has parent_bank=''")
            }
            e => err(e),
        })?;
    let mut shares_q = conn.prepare("SELECT shares FROM bank_table WHERE bank=?1").map_err(&err)?;
    let mut banks_q =
        conn.prepare("SELECT bank, active FROM bank_table WHERE parent_bank=?1 ORDER BY bank").map_err(&err)?;
    let mut assoc_q = conn
        .prepare("SELECT username, shares, job_usage, active FROM association_table WHERE bank=?1 ORDER BY username")
        .map_err(&err)?;

    let mut records: Vec<AssocRecord> = Vec::new();
    let mut next_id = 1u64;
    // Depth-first, as the C++ reader recurses: (bank, parent id).
    let mut stack: Vec<(String, Option<u64>)> = vec![(root, None)];
    // The banks from the root down to the one being read (ids and names): a bank met again on its
    // own path, a parent_bank cycle through the root, would make the C++ reader recurse forever.
    // A bank under two parents is met on two paths, and read under each.
    let mut trail: Vec<(u64, String)> = Vec::new();
    let mut on_trail: HashSet<String> = HashSet::new();
    while let Some((bank, parent_id)) = stack.pop() {
        while let Some((id, name)) = trail.last()
            && Some(*id) != parent_id
        {
            on_trail.remove(name);
            trail.pop();
        }
        if on_trail.contains(&bank) {
            let chain: Vec<String> = trail
                .iter()
                .map(|(_, b)| b)
                .skip_while(|b| **b != bank)
                .chain([&bank])
                .map(|b| format!("{b:?}"))
                .collect();
            return Err(Error::input(
                path,
                None,
                format!(
                    "bank_table: parent_bank cycle {} under the root bank (each bank is a sub-bank of the one \
                     before): flux-accounting's reader would never return",
                    chain.join(" → ")
                ),
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
        on_trail.insert(bank.clone());
        trail.push((id, bank.clone()));
        let subs: Vec<(String, bool)> = banks_q
            .query_map([&bank], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? != 0)))
            .map_err(&err)?
            .collect::<std::result::Result<_, _>>()
            .map_err(&err)?;
        if subs.is_empty() {
            let rows = assoc_q
                .query_map([&bank], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, f64>(2)?, r.get::<_, i64>(3)? != 0))
                })
                .map_err(&err)?;
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
                    grp_tres_mins: None,
                    line: next_id,
                });
                next_id += 1;
            }
        } else {
            // Reverse so the stack pops them in name order.
            stack.extend(subs.into_iter().rev().filter(|(_, active)| *active).map(|(b, _)| (b, Some(id))));
        }
    }
    // The walk from the root never meets a cycle of banks that are not under it.
    let banks: Vec<(String, Option<String>)> = conn
        .prepare("SELECT bank, parent_bank FROM bank_table ORDER BY rowid")
        .and_then(|mut q| q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .map_err(&err)?;
    let root = records.first().map_or("", |r| r.account.as_str());
    check_parent_cycles(path, root, &banks.iter().map(|(b, p)| (b.as_str(), p.as_deref())).collect::<Vec<_>>())?;
    Ok(TreeInput::ordered(path, records, SiblingOrder::Input, AccountUsage::SumOfUsers))
}

/// An error naming the banks of a `parent_bank` cycle, if `banks` (`(bank, parent_bank)` rows in
/// rowid order, `None` for NULL) have one. Its banks cannot be under the root bank `root`, so
/// both flux-accounting readers would silently leave them and their users out.
///
/// # Errors
/// The first cycle found, from the first of its banks in rowid order.
pub(crate) fn check_parent_cycles(path: &Path, root: &str, banks: &[(&str, Option<&str>)]) -> Result<()> {
    let mut parents: HashMap<&str, Vec<&str>> = HashMap::new();
    for &(bank, parent) in banks {
        // A bank listed twice has two parents: each is followed.
        parents.entry(bank).or_default().extend(parent);
    }
    // Depth-first along parent_bank, keeping the path (and its set, for long chains): a parent on
    // the path closes a cycle.
    let (mut done, mut on_trail): (HashSet<&str>, HashSet<&str>) = Default::default();
    for &(start, _) in banks {
        if done.contains(start) {
            continue;
        }
        let mut trail: Vec<(&str, usize)> = vec![(start, 0)];
        on_trail.insert(start);
        while let Some((bank, next)) = trail.last_mut() {
            let Some(&parent) = parents.get(*bank).and_then(|p| p.get(*next)) else {
                on_trail.remove(*bank);
                done.insert(*bank);
                trail.pop();
                continue;
            };
            *next += 1;
            if on_trail.contains(parent) {
                let k = trail.iter().position(|(b, _)| *b == parent).unwrap_or_default();
                let chain: Vec<String> =
                    trail[k..].iter().map(|(b, _)| b).chain([&parent]).map(|b| format!("{b:?}")).collect();
                return Err(Error::input(
                    path,
                    None,
                    format!(
                        "bank_table: parent_bank cycle {} (each bank's parent_bank is the next) is not under the \
                         root bank {root:?}: its banks and their users would be left out",
                        chain.join(" → ")
                    ),
                ));
            }
            if parents.contains_key(parent) && !done.contains(parent) {
                on_trail.insert(parent);
                trail.push((parent, 0));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bank met again under itself (here `a`, a sub-bank of the root and of its own sub-bank
    /// `b`) is refused, naming the path; `a` under two parents that are not its own is not.
    #[test]
    fn a_cycle_through_the_root_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(include_str!("../../../../../tests/fixtures/flux_schema.sql")).unwrap();
        conn.execute_batch(
            "INSERT INTO bank_table (bank, parent_bank) VALUES ('root',''), ('a','root'), ('b','a'), ('c','root'),
                ('d','c'), ('a','d');",
        )
        .unwrap();
        let input = read(&db).unwrap();
        let banks: Vec<&str> = input.records.iter().map(|r| r.account.as_str()).collect();
        assert_eq!(banks, ["root", "a", "b", "c", "d", "a", "b"]);
        conn.execute_batch("INSERT INTO bank_table (bank, parent_bank) VALUES ('a','b');").unwrap();
        let e = read(&db).unwrap_err().to_string();
        assert!(e.ends_with("bank_table: parent_bank cycle \"a\" → \"b\" → \"a\" under the root bank (each bank is a sub-bank of the one before): flux-accounting's reader would never return"), "{e}");
    }

    #[test]
    fn parent_cycles() {
        let p = Path::new("x.db");
        let check = |banks: &[(&str, Option<&str>)]| check_parent_cycles(p, "r", banks).map_err(|e| e.to_string());
        // Orphans and NULL parents are not cycles.
        assert!(check(&[("r", Some("")), ("a", Some("r")), ("lost", Some("nowhere")), ("n", None)]).is_ok());
        let e = check(&[("r", Some("")), ("s", Some("s"))]).unwrap_err();
        assert!(e.contains("parent_bank cycle \"s\" → \"s\" (each"), "{e}");
        // A chain into the cycle is not part of it.
        let e = check(&[("r", Some("")), ("t", Some("a")), ("a", Some("b")), ("b", Some("c")), ("c", Some("a"))])
            .unwrap_err();
        assert!(e.contains("cycle \"a\" → \"b\" → \"c\" → \"a\" (each"), "{e}");
        // A long chain is walked once.
        let names: Vec<String> = (0..200_000).map(|i| format!("b{i}")).collect();
        let mut banks: Vec<(&str, Option<&str>)> = vec![("r", Some(""))];
        banks.extend(
            names.iter().enumerate().map(|(i, n)| (n.as_str(), Some(if i == 0 { "r" } else { &names[i - 1] }))),
        );
        assert!(check(&banks).is_ok());
    }
}
