//! Explanations: why an association's fair-share factor is what it is, in words and numbers.
//!
//! For Fair Tree and flux, the path from the root: at every level the association's share of its
//! siblings' shares (S), of its parent's usage (U), its Level FS (S/U, or flux's weight), where it
//! placed among its siblings, and the [lo, hi] range of final factors its subtree occupies (Fair
//! Tree ranks users depth-first, so a subtree holds a contiguous block of ranks, except under a
//! `FairShare=parent` account, whose users are ranked among its parent's children). For classic,
//! the normalized shares multiplied down the path, the effective usage blended up from the
//! parent, and `F = 2^(-UE/S/d)`. Two associations are compared at the level where their paths
//! part: that is where the order of their factors is decided.
//!
//! The numbers of a path are also given as data ([`path_rows`], [`path_batch`]), for front ends
//! that tabulate them rather than print them.

use std::fmt::Write;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};

use fairshare_base::named::Named;
use fairshare_engine::pass::{Algorithm, FairShare, NO_VAL};
use fairshare_engine::tree::AssocTree;

/// A row's display name: `account` or `account/user` (with `@partition`).
pub fn assoc_name(tree: &AssocTree, row: usize) -> String {
    let mut name = tree.account(row).to_string();
    if let Some(u) = tree.user_name(row) {
        name.push('/');
        name.push_str(u);
    }
    if let Some(p) = tree.partition(row) {
        name.push('@');
        name.push_str(p);
    }
    name
}

/// Finds `USER`, `USER@ACCOUNT` or an account name: the user's rows (all of them when the account
/// is not given), or the account row.
///
/// # Errors
/// No such user or account, listing what would have matched.
pub fn find_rows(tree: &AssocTree, who: &str) -> Result<Vec<usize>, String> {
    let (user, account) = match who.split_once('@') {
        Some((u, a)) => (u, Some(a)),
        None => (who, None),
    };
    let users: Vec<usize> = (0..tree.len())
        .filter(|&r| tree.user_name(r) == Some(user) && account.is_none_or(|a| tree.account(r) == a))
        .collect();
    if !users.is_empty() {
        return Ok(users);
    }
    if account.is_none()
        && let Some(r) = (0..tree.len()).find(|&r| !tree.is_user(r) && tree.account(r) == who)
    {
        return Ok(vec![r]);
    }
    Err(format!("no association {who:?}: give a user, USER@ACCOUNT or an account name"))
}

/// The rows from the root down to `row`.
fn path(tree: &AssocTree, row: usize) -> Vec<usize> {
    let mut p = vec![row];
    let mut r = row;
    while r != 0 {
        r = tree.parents()[r] as usize;
        p.push(r);
    }
    p.reverse();
    p
}

/// Min and max final factor over the users of `row`'s subtree (`None` without users).
fn subtree_range(tree: &AssocTree, fs: &FairShare, row: usize) -> Option<(f64, f64)> {
    let mut stack = vec![row];
    let mut range: Option<(f64, f64)> = None;
    while let Some(r) = stack.pop() {
        if tree.is_user(r) {
            let f = fs.fs_factor[r];
            if !f.is_nan() {
                range = Some(range.map_or((f, f), |(lo, hi)| (lo.min(f), hi.max(f))));
            }
        }
        stack.extend(tree.children(r));
    }
    range
}

/// The [lo, hi] range of the users' factors below every row at once (as [`path_rows`] gives
/// them along a path), folded up from the leaves (the tree is in
/// breadth-first order, so every child comes after its parent): for tables that show the range of
/// many associations.
pub fn subtree_ranges(tree: &AssocTree, fs: &FairShare) -> Vec<Option<(f64, f64)>> {
    let mut ranges: Vec<Option<(f64, f64)>> = (0..tree.len())
        .map(|r| Some(fs.fs_factor[r]).filter(|f| tree.is_user(r) && !f.is_nan()).map(|f| (f, f)))
        .collect();
    for r in (1..tree.len()).rev() {
        let p = tree.parents()[r] as usize;
        if let Some((lo, hi)) = ranges[r] {
            ranges[p] = Some(ranges[p].map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
    }
    ranges
}

/// 1-based place of `row` among the siblings it is ranked with (its fair-share group: a `parent`
/// account's children are ranked among its parent's) by Level FS, highest first (users first on
/// ties), and the number of those siblings. `parent` associations sort as the pass sorts them: a
/// user as +inf, an account as `NO_VAL` under Fair Tree; flux leaves `parent` accounts out.
fn place(tree: &AssocTree, fs: &FairShare, row: usize) -> (usize, usize) {
    let groups = tree.fs_groups();
    let flux = fs.params.algorithm == Algorithm::Flux;
    let key = |r: usize| {
        let user = tree.is_user(r);
        match (tree.is_parent_shares(r), user) {
            (false, _) => Some((fs.level_fs[r], user)),
            (true, true) => Some((f64::INFINITY, user)),
            (true, false) => (!flux).then_some((NO_VAL, user)),
        }
    };
    let better = |a: (f64, bool), b: (f64, bool)| a.0 > b.0 || (a.0 == b.0 && a.1 && !b.1);
    let siblings: Vec<(f64, bool)> =
        groups.group(groups.fs_parents()[row] as usize).iter().filter_map(|&s| key(s as usize)).collect();
    let own = key(row).unwrap_or((f64::NAN, false));
    let ahead = siblings.iter().filter(|&&s| better(s, own)).count();
    (ahead + 1, siblings.len())
}

/// A value as the explanations print it: 6 decimals, `inf`, or `-` when unset.
pub fn num(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else if v.is_infinite() {
        "inf".into()
    } else {
        format!("{v:.6}")
    }
}

/// One level of the path from the root to an association (the root itself is not a level):
/// the numbers [`explain`] prints for it.
#[derive(Debug, Clone)]
pub struct PathRow {
    /// The id of the association the path leads to.
    pub path_of: u64,
    /// This level's association id.
    pub id: u64,
    /// Its depth (1 below the root).
    pub depth: u32,
    /// Its account.
    pub account: String,
    /// Its user (`None` for an account).
    pub user: Option<String>,
    /// Its partition, if any.
    pub partition: Option<String>,
    /// Its raw shares as the tree holds them (0 where `parent_shares`).
    pub raw_shares: u64,
    /// Whether it has `FairShare=parent`.
    pub parent_shares: bool,
    /// S: its share of its siblings' shares (classic: multiplied down the path).
    pub norm_shares: f64,
    /// Its raw usage.
    pub raw_usage: f64,
    /// U: Fair Tree, of the parent's usage; flux, of the siblings'; classic, the effective usage.
    pub effective_usage: f64,
    /// Its usage over the root's (classic's NormUsage).
    pub norm_usage: f64,
    /// Fair Tree's Level FS, flux's weight; NaN for classic and `parent` associations.
    pub level_fs: f64,
    /// Its place among its siblings by `level_fs`, highest first (users first on ties); `None`
    /// where it is not placed at this level (`level_fs` unset).
    pub place: Option<u32>,
    /// The number of its siblings (itself included) when it is placed.
    pub siblings: Option<u32>,
    /// The lowest final factor of the users of its subtree (`None`: no user with a factor).
    pub range_lo: Option<f64>,
    /// The highest final factor of the users of its subtree.
    pub range_hi: Option<f64>,
    /// Its own factor (NaN for an account).
    pub fs_factor: f64,
}

impl PathRow {
    /// The display name, as [`assoc_name`] gives it.
    pub fn name(&self) -> String {
        let mut name = self.account.clone();
        if let Some(u) = &self.user {
            name.push('/');
            name.push_str(u);
        }
        if let Some(p) = &self.partition {
            name.push('@');
            name.push_str(p);
        }
        name
    }

    /// The shares as the explanation prints them: the count, or `parent`.
    fn shares_text(&self) -> String {
        if self.parent_shares { "parent".into() } else { self.raw_shares.to_string() }
    }
}

/// The levels of the path from the root (excluded) down to `row` (included).
///
/// # Example
/// ```
/// use fairshare_engine::pass::{compute, Algorithm, Params};
/// let tree = fairshare_engine::io::default_tree()?;
/// let fs = compute(&tree, &Params::new(Algorithm::FairTree))?;
/// let dana = fairshare_analyses::explain::find_rows(&tree, "dana").unwrap()[0];
/// let rows = fairshare_analyses::explain::path_rows(&tree, &fs, dana);
/// assert_eq!(rows.last().unwrap().fs_factor, fs.fs_factor[dana]);
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn path_rows(tree: &AssocTree, fs: &FairShare, row: usize) -> Vec<PathRow> {
    let path_of = tree.ids()[row];
    path(tree, row)[1..]
        .iter()
        .map(|&r| {
            // `parent` associations are not placed at their own level (they are lifted).
            let placed = (!fs.level_fs[r].is_nan()).then(|| place(tree, fs, r));
            let range = subtree_range(tree, fs, r);
            PathRow {
                path_of,
                id: tree.ids()[r],
                depth: tree.depths()[r],
                account: tree.account(r).to_string(),
                user: tree.user_name(r).map(str::to_string),
                partition: tree.partition(r).map(str::to_string),
                raw_shares: tree.raw_shares()[r],
                parent_shares: tree.is_parent_shares(r),
                norm_shares: fs.norm_shares[r],
                raw_usage: tree.raw_usage()[r],
                effective_usage: fs.effective_usage[r],
                norm_usage: fs.norm_usage[r],
                level_fs: fs.level_fs[r],
                place: placed.map(|(p, _)| p as u32),
                siblings: placed.map(|(_, n)| n as u32),
                range_lo: range.map(|(lo, _)| lo),
                range_hi: range.map(|(_, hi)| hi),
                fs_factor: fs.fs_factor[r],
            }
        })
        .collect()
}

/// The path rows of every association `who` names (`USER`, `USER@ACCOUNT` or an account, as
/// [`explain_who`] resolves it), one path after the other.
///
/// # Errors
/// The name matches no association.
pub fn explain_who_rows(tree: &AssocTree, fs: &FairShare, who: &str) -> fairshare_base::Result<Vec<PathRow>> {
    let rows = find_rows(tree, who).map_err(fairshare_base::Error::Usage)?;
    Ok(rows.iter().flat_map(|&r| path_rows(tree, fs, r)).collect())
}

/// `rows` as an Arrow batch, one row each: `path_of`, `id`, `depth`, `account`, `user`,
/// `partition`, `raw_shares`, `parent_shares`, `norm_shares`, `raw_usage`, `norm_usage`,
/// `effective_usage`, `level_fs`, `place`, `siblings`, `range_lo`, `range_hi`, `fs_factor`
/// (unset values null, as in the associations file).
pub fn path_batch(rows: &[PathRow]) -> RecordBatch {
    // NaN marks an unset value: null, as the associations file has it.
    let f64s = |get: fn(&PathRow) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter(rows.iter().map(|r| Some(get(r)).filter(|v| !v.is_nan()))))
    };
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("path_of", Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.path_of)))),
        ("id", Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.id)))),
        ("depth", Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.depth)))),
        ("account", Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.account)))),
        ("user", Arc::new(StringArray::from_iter(rows.iter().map(|r| r.user.as_deref())))),
        ("partition", Arc::new(StringArray::from_iter(rows.iter().map(|r| r.partition.as_deref())))),
        ("raw_shares", Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.raw_shares)))),
        ("parent_shares", Arc::new(BooleanArray::from_iter(rows.iter().map(|r| Some(r.parent_shares))))),
        ("norm_shares", f64s(|r| r.norm_shares)),
        ("raw_usage", f64s(|r| r.raw_usage)),
        ("norm_usage", f64s(|r| r.norm_usage)),
        ("effective_usage", f64s(|r| r.effective_usage)),
        ("level_fs", f64s(|r| r.level_fs)),
        ("place", Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.place)))),
        ("siblings", Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.siblings)))),
        ("range_lo", Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.range_lo)))),
        ("range_hi", Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.range_hi)))),
        ("fs_factor", f64s(|r| r.fs_factor)),
    ];
    RecordBatch::try_from_iter(columns).expect("equally long columns")
}

/// The derivation of one association's factor.
pub fn explain(tree: &AssocTree, fs: &FairShare, row: usize) -> String {
    let mut out = String::new();
    let algorithm = fs.params.algorithm;
    let users = tree.user_count();
    let _ = writeln!(out, "{} ({} of {} user associations)", assoc_name(tree, row), algorithm.name(), users);
    let rows = path_rows(tree, fs, row);
    let label = |p: &PathRow| format!("{}{}", "  ".repeat(p.depth as usize - 1), p.name());
    match algorithm {
        Algorithm::FairTree | Algorithm::Flux => {
            let (u_name, lfs_name) = if algorithm == Algorithm::Flux {
                ("U (of siblings)", "weight")
            } else {
                ("U (of parent)", "Level FS")
            };
            let _ = writeln!(
                out,
                "  {:<32} {:>10} {:>10} {:>14} {:>15} {:>10} {:>8}  factors of the subtree",
                "path", "RawShares", "S (level)", "RawUsage", u_name, lfs_name, "place"
            );
            for p in &rows {
                let placed = match (p.place, p.siblings) {
                    (Some(k), Some(n)) => format!("{k} of {n}"),
                    _ => "-".to_string(),
                };
                let range = match (p.range_lo, p.range_hi) {
                    (Some(lo), Some(hi)) => format!("[{lo:.6}, {hi:.6}]"),
                    _ => "no users".to_string(),
                };
                let _ = writeln!(
                    out,
                    "  {:<32} {:>10} {:>10} {:>14.0} {:>15} {:>10} {:>8}  {}",
                    label(p),
                    p.shares_text(),
                    num(p.norm_shares),
                    p.raw_usage,
                    num(p.effective_usage),
                    num(p.level_fs),
                    placed,
                    range
                );
            }
            if tree.is_user(row) {
                let rank = fs.rank[row];
                let _ = writeln!(out, "  FairShare = rank / users = {rank} / {users} = {}", num(fs.fs_factor[row]));
                let _ = writeln!(
                    out,
                    "  Siblings are ranked by {lfs_name}, highest first (S/U: a share used less than granted ranks higher; \
                     users before accounts on ties); every user below a better-placed sibling outranks every user \
                     below a worse-placed one, so a subtree's users hold the block of factors shown (a `parent` account's users are placed among its parent's children)."
                );
            }
        }
        Algorithm::Classic => {
            let d = fs.params.dampening;
            let _ = writeln!(
                out,
                "  {:<32} {:>10} {:>12} {:>14} {:>12} {:>12}",
                "path", "RawShares", "NormShares", "RawUsage", "NormUsage", "EffectvUsage"
            );
            for p in &rows {
                let _ = writeln!(
                    out,
                    "  {:<32} {:>10} {:>12} {:>14.0} {:>12} {:>12}",
                    label(p),
                    p.shares_text(),
                    num(p.norm_shares),
                    p.raw_usage,
                    num(p.norm_usage),
                    num(p.effective_usage),
                );
            }
            if tree.is_user(row) {
                let (s, ue) = (fs.norm_shares[row], fs.effective_usage[row]);
                let _ = writeln!(
                    out,
                    "  FairShare = 2^(-EffectvUsage / NormShares / {d}) = 2^(-{} / {} / {d}) = {}",
                    num(ue),
                    num(s),
                    num(fs.fs_factor[row])
                );
                let _ = writeln!(
                    out,
                    "  NormShares multiplies each level's share of its siblings' shares down the path; EffectvUsage \
                     blends the association's own usage with its parent's by that share. 0.5 means used exactly as \
                     granted; above 0.5 under-used, below over-used."
                );
            }
        }
    }
    out
}

/// Why `a`'s factor is below (or above) `b`'s: both explanations, then the level where their
/// paths part and what decided it there.
pub fn compare(tree: &AssocTree, fs: &FairShare, a: usize, b: usize) -> String {
    let mut out = explain(tree, fs, a);
    out.push('\n');
    out.push_str(&explain(tree, fs, b));
    out.push('\n');
    let (pa, pb) = (path(tree, a), path(tree, b));
    let common = pa.iter().zip(&pb).take_while(|(x, y)| x == y).count();
    let (fa, fb) = (fs.fs_factor[a], fs.fs_factor[b]);
    let (na, nb) = (assoc_name(tree, a), assoc_name(tree, b));
    let verdict = if fa < fb {
        "lower than"
    } else if fa > fb {
        "higher than"
    } else {
        "equal to"
    };
    let _ = writeln!(out, "{na}'s FairShare {} is {verdict} {nb}'s {}.", num(fa), num(fb));
    if common == pa.len() || common == pb.len() {
        let _ = writeln!(out, "One is an ancestor of the other.");
        return out;
    }
    let (xa, xb) = (pa[common], pb[common]);
    let parent = assoc_name(tree, pa[common - 1]);
    match fs.params.algorithm {
        Algorithm::FairTree | Algorithm::Flux => {
            let (la, lb) = (fs.level_fs[xa], fs.level_fs[xb]);
            let what = if fs.params.algorithm == Algorithm::Flux { "weight" } else { "Level FS" };
            let _ = writeln!(
                out,
                "Their paths part under {parent}: {} ({what} {}) against {} ({what} {}).",
                assoc_name(tree, xa),
                num(la),
                assoc_name(tree, xb),
                num(lb)
            );
            let (s, u) = (
                format!("S = {} vs {}", num(fs.norm_shares[xa]), num(fs.norm_shares[xb])),
                format!("U = {} vs {}", num(fs.effective_usage[xa]), num(fs.effective_usage[xb])),
            );
            if fa == fb {
                // Nothing placed one above the other: saying which sibling won would contradict
                // the verdict above.
                let _ = writeln!(
                    out,
                    "Neither is placed above the other there ({s}, {u}): tied siblings are ranked together, \
                     so their users share the same factor."
                );
            } else {
                let _ = writeln!(
                    out,
                    "The sibling placed higher there puts every user below it ahead of every user below the \
                     other, whatever happens deeper down: {s}, {u}."
                );
            }
        }
        Algorithm::Classic => {
            let _ = writeln!(
                out,
                "Classic compares the two directly: NormShares {} vs {}, EffectvUsage {} vs {}; the factor falls as \
                 EffectvUsage/NormShares grows ({} vs {}).",
                num(fs.norm_shares[a]),
                num(fs.norm_shares[b]),
                num(fs.effective_usage[a]),
                num(fs.effective_usage[b]),
                num(fs.effective_usage[a] / fs.norm_shares[a]),
                num(fs.effective_usage[b] / fs.norm_shares[b])
            );
        }
    }
    out
}

/// What `fairshare explain WHO [--vs OTHER]` prints, for front ends: every association `who` names
/// explained (a blank line between them), or, with `vs`, the two compared.
///
/// # Errors
/// A name matches no association, or with `vs`, one matches several (name them `USER@ACCOUNT`).
///
/// # Example
/// ```
/// use fairshare_engine::pass::{compute, Algorithm, Params};
/// let tree = fairshare_engine::io::default_tree()?;
/// let fs = compute(&tree, &Params::new(Algorithm::FairTree))?;
/// assert!(!fairshare_analyses::explain::explain_who(&tree, &fs, tree.account(0), None)?.is_empty());
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn explain_who(tree: &AssocTree, fs: &FairShare, who: &str, vs: Option<&str>) -> fairshare_base::Result<String> {
    let rows = find_rows(tree, who).map_err(fairshare_base::Error::Usage)?;
    let Some(other) = vs else {
        let texts: Vec<String> = rows.iter().map(|&r| explain(tree, fs, r)).collect();
        return Ok(texts.join("\n"));
    };
    let others = find_rows(tree, other).map_err(fairshare_base::Error::Usage)?;
    if rows.len() > 1 || others.len() > 1 {
        let names = |rs: &[usize]| rs.iter().map(|&r| assoc_name(tree, r)).collect::<Vec<_>>().join(", ");
        return Err(fairshare_base::Error::Usage(format!(
            "several associations match ({}; {}): name them as USER@ACCOUNT",
            names(&rows),
            names(&others)
        )));
    }
    Ok(compare(tree, fs, rows[0], others[0]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairshare_engine::pass::{Params, compute};

    fn site(algorithm: Algorithm) -> (AssocTree, FairShare) {
        let tree = fairshare_engine::io::default_tree().unwrap();
        let fs = compute(&tree, &Params::new(algorithm)).unwrap();
        (tree, fs)
    }

    #[test]
    fn explain_who_joins_a_users_associations_and_compares_two() {
        let (tree, fs) = site(Algorithm::FairTree);
        let user = (0..tree.len()).find_map(|r| tree.user_name(r)).expect("a user").to_string();
        let rows = find_rows(&tree, &user).unwrap();
        let each: Vec<String> = rows.iter().map(|&r| explain(&tree, &fs, r)).collect();
        assert_eq!(explain_who(&tree, &fs, &user, None).unwrap(), each.join("\n"));
        let a = format!("{user}@{}", tree.account(rows[0]));
        assert_eq!(explain_who(&tree, &fs, &a, Some(tree.account(0))).unwrap(), compare(&tree, &fs, rows[0], 0));
        assert!(explain_who(&tree, &fs, "no-such-user", None).is_err());
    }

    /// The numbers of each path row, read back from the text `explain` prints: name, shares,
    /// S, raw usage, U (or NormUsage and EffectvUsage), Level FS, place, range.
    fn text_rows(text: &str) -> Vec<Vec<String>> {
        let table = text.lines().skip(2).take_while(|l| !l.trim_start().starts_with("FairShare ="));
        table.map(|l| l.split_whitespace().map(str::to_string).collect()).collect()
    }

    #[test]
    fn path_rows_hold_the_numbers_the_text_prints() {
        for algorithm in [Algorithm::FairTree, Algorithm::Classic, Algorithm::Flux] {
            let (tree, fs) = site(algorithm);
            for row in 1..tree.len() {
                let rows = path_rows(&tree, &fs, row);
                let text = explain(&tree, &fs, row);
                let printed = text_rows(&text);
                assert_eq!(rows.len(), printed.len(), "{text}");
                assert_eq!(rows.len(), tree.depths()[row] as usize);
                assert_eq!(rows.last().unwrap().id, tree.ids()[row]);
                let f = fs.fs_factor[row];
                assert!(rows.last().unwrap().fs_factor.to_bits() == f.to_bits(), "{text}");
                for (k, (p, t)) in rows.iter().zip(&printed).enumerate() {
                    assert_eq!((p.path_of, p.depth as usize), (tree.ids()[row], k + 1));
                    assert_eq!(t[0], p.name(), "{text}");
                    let shares = if p.parent_shares { "parent".to_string() } else { p.raw_shares.to_string() };
                    assert_eq!(t[1], shares);
                    assert_eq!(t[2], num(p.norm_shares));
                    assert_eq!(t[3], format!("{:.0}", p.raw_usage));
                    if algorithm == Algorithm::Classic {
                        assert_eq!((&t[4], &t[5], t.len()), (&num(p.norm_usage), &num(p.effective_usage), 6));
                        continue;
                    }
                    assert_eq!((&t[4], &t[5]), (&num(p.effective_usage), &num(p.level_fs)), "{text}");
                    let rest: Vec<&str> = t[6..].iter().map(String::as_str).collect();
                    let (placed, range) = match p.place {
                        Some(_) => rest.split_at(3),
                        None => rest.split_at(1),
                    };
                    match (p.place, p.siblings) {
                        (Some(k), Some(n)) => {
                            assert_eq!(placed, [k.to_string().as_str(), "of", n.to_string().as_str()])
                        }
                        _ => assert_eq!(placed, ["-"]),
                    }
                    match (p.range_lo, p.range_hi) {
                        (Some(lo), Some(hi)) => {
                            assert_eq!(range, [format!("[{lo:.6},").as_str(), format!("{hi:.6}]").as_str()]);
                            assert!(p.user.is_none() || lo <= p.fs_factor && p.fs_factor <= hi);
                        }
                        _ => assert_eq!(range, ["no", "users"]),
                    }
                }
            }
        }
    }

    #[test]
    fn path_rows_as_a_batch_and_by_name() {
        let (tree, fs) = site(Algorithm::FairTree);
        let dana = find_rows(&tree, "dana").unwrap()[0];
        let rows = explain_who_rows(&tree, &fs, "dana").unwrap();
        // Unset values are NaN, which equals nothing: compared as printed.
        let same = |a: &[PathRow], b: &[PathRow]| assert_eq!(format!("{a:?}"), format!("{b:?}"));
        same(&rows, &path_rows(&tree, &fs, dana));
        // A user with several associations: one path after the other.
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("t.csv");
        let text = "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,a,,2,10\n3,1,b,,1,5\n\
                    4,2,a,u,1,10\n5,3,b,u,1,5\n6,3,b,v,1,0\n";
        std::fs::write(&csv, text).unwrap();
        let two = AssocTree::build(fairshare_engine::io::read_tree_input(&csv, None).unwrap()).unwrap();
        let two_fs = compute(&two, &Params::new(Algorithm::FairTree)).unwrap();
        let each: Vec<PathRow> =
            find_rows(&two, "u").unwrap().iter().flat_map(|&r| path_rows(&two, &two_fs, r)).collect();
        assert_eq!(each.iter().map(|p| (p.path_of, p.id)).collect::<Vec<_>>(), [(4, 2), (4, 4), (5, 3), (5, 5)]);
        same(&explain_who_rows(&two, &two_fs, "u").unwrap(), &each);
        same(&explain_who_rows(&two, &two_fs, "u@b").unwrap(), &each[2..]);
        let (a, b) = (explain_who_rows(&tree, &fs, "nobody"), explain_who(&tree, &fs, "nobody", None));
        assert_eq!(a.unwrap_err().to_string(), b.unwrap_err().to_string());

        let batch = path_batch(&rows);
        assert_eq!(batch.num_rows(), rows.len());
        let f64s = |name: &str| -> Vec<Option<f64>> {
            batch.column_by_name(name).unwrap().as_any().downcast_ref::<Float64Array>().unwrap().iter().collect()
        };
        let set = |v: f64| Some(v).filter(|v| !v.is_nan());
        assert_eq!(f64s("norm_shares"), rows.iter().map(|r| set(r.norm_shares)).collect::<Vec<_>>());
        assert_eq!(f64s("level_fs"), rows.iter().map(|r| set(r.level_fs)).collect::<Vec<_>>());
        assert_eq!(f64s("fs_factor").last().unwrap().unwrap(), fs.fs_factor[dana]);
        assert_eq!(f64s("range_lo"), rows.iter().map(|r| r.range_lo).collect::<Vec<_>>());
        let place = batch.column_by_name("place").unwrap().as_any().downcast_ref::<UInt32Array>().unwrap();
        assert_eq!(place.iter().collect::<Vec<_>>(), rows.iter().map(|r| r.place).collect::<Vec<_>>());
    }

    #[test]
    fn the_subtree_ranges_nest_and_hold_the_factor() {
        // The seed site has `parent` accounts and users; flux groups them as Fair Tree does.
        for algorithm in [Algorithm::FairTree, Algorithm::Flux] {
            let (tree, fs) = site(algorithm);
            for row in (0..tree.len()).filter(|&r| tree.is_user(r)) {
                let f = fs.fs_factor[row];
                let mut inner = (f, f);
                for &r in path(&tree, row).iter().rev() {
                    let (lo, hi) = subtree_range(&tree, &fs, r).unwrap();
                    assert!(lo <= inner.0 && inner.1 <= hi, "{} at {}", assoc_name(&tree, row), assoc_name(&tree, r));
                    inner = (lo, hi);
                }
            }
            // The blocks do not overlap between siblings (no tied accounts there).
            let kids: Vec<usize> = tree.children(0).filter(|&r| subtree_range(&tree, &fs, r).is_some()).collect();
            for &x in &kids {
                for &y in &kids {
                    let (a, b) = (subtree_range(&tree, &fs, x).unwrap(), subtree_range(&tree, &fs, y).unwrap());
                    assert!(x == y || a.1 <= b.0 || b.1 <= a.0, "{algorithm:?} {x} {y}: {a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn all_ranges_at_once_are_each_rows_range() {
        for algorithm in [Algorithm::FairTree, Algorithm::Classic, Algorithm::Flux] {
            let (tree, fs) = site(algorithm);
            let all = subtree_ranges(&tree, &fs);
            for (r, range) in all.iter().enumerate() {
                assert_eq!(*range, subtree_range(&tree, &fs, r), "{algorithm:?} row {r}");
            }
        }
    }

    /// flux's ranges and places through a `parent` account, on the tree of
    /// `pass::flux`'s `parent_shares_rank_as_fair_tree_groups_them` (factors p2 1, p1 0.8, a1 0.6,
    /// b2 0.4, b1 0.2): A's users hold [0.6, 1]; P's own users p1 and p2 [0.8, 1]; p1 is placed
    /// among A's group (p2 at 2^64, p1, a1), not among P's children.
    #[test]
    fn flux_ranges_and_places_through_a_parent_account() {
        // The engine's `parent_shares_rank_as_fair_tree_groups_them` tree: a `parent` account P
        // among A's children, `parent` users in P and B.
        let text = "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,A,,3,0\n3,2,A,a1,1,40\n\
                    4,2,P,,parent,0\n5,4,P,p1,2,20\n6,4,P,p2,parent,10\n7,1,B,,1,0\n8,7,B,b1,1,10\n\
                    9,7,B,b2,parent,30\n";
        let parsed = fairshare_engine::io::assoc_csv::parse(std::path::Path::new("parent.csv"), text).unwrap();
        let tree = AssocTree::build(parsed).unwrap();
        let fs = compute(&tree, &Params::new(Algorithm::Flux)).unwrap();
        let p1 = find_rows(&tree, "p1").unwrap()[0];
        let rows = path_rows(&tree, &fs, p1);
        let got: Vec<(String, Option<u32>, Option<u32>, Option<f64>, Option<f64>)> =
            rows.iter().map(|p| (p.name(), p.place, p.siblings, p.range_lo, p.range_hi)).collect();
        assert_eq!(
            got,
            [
                ("A".into(), Some(1), Some(2), Some(0.6), Some(1.0)),
                ("P".into(), None, None, Some(0.8), Some(1.0)),
                ("P/p1".into(), Some(2), Some(3), Some(0.8), Some(0.8)),
            ]
        );
        let text = explain(&tree, &fs, p1);
        assert!(text.contains("[0.600000, 1.000000]") && text.contains("2 of 3"), "{text}");
        assert!(text.contains("FairShare = rank / users = 4 / 5 = 0.800000"), "{text}");
    }

    #[test]
    fn explanations_state_the_factor_and_where_two_part() {
        let (tree, fs) = site(Algorithm::FairTree);
        let dana = find_rows(&tree, "dana").unwrap()[0];
        let text = explain(&tree, &fs, dana);
        let rank = fs.rank[dana];
        assert!(text.contains(&format!("= {rank} / {} = {:.6}", tree.user_count(), fs.fs_factor[dana])), "{text}");
        let sam = find_rows(&tree, "sam@rc_staff").unwrap()[0];
        let why = compare(&tree, &fs, dana, sam);
        assert!(why.contains("Their paths part under root:"), "{why}");
        assert!(why.contains("The sibling placed higher there"), "{why}");
        // Tied users: no sibling is said to be placed higher.
        let eli = find_rows(&tree, "eli").unwrap()[0];
        assert_eq!(fs.fs_factor[dana], fs.fs_factor[eli]);
        let tie = compare(&tree, &fs, dana, eli);
        assert!(tie.contains("is equal to") && tie.contains("Neither is placed above the other"), "{tie}");
        assert!(!tie.contains("placed higher"), "{tie}");
        assert!(why.contains("huttenhower_lab") && why.contains("rc_staff"), "{why}");
        assert!(find_rows(&tree, "nobody").is_err());
        assert_eq!(find_rows(&tree, "chemistry").unwrap().len(), 1);

        let (tree, fs) = site(Algorithm::Classic);
        let gus = find_rows(&tree, "gus").unwrap()[0];
        let text = explain(&tree, &fs, gus);
        assert!(text.contains(&format!("= {:.6}", fs.fs_factor[gus])), "{text}");
        assert!(text.contains(&format!("2^(-{:.6} / {:.6} / 1)", fs.effective_usage[gus], fs.norm_shares[gus])));
    }
}
