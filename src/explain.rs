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

use std::fmt::Write;

use crate::pass::{Algorithm, FairShare};
use crate::tree::AssocTree;

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

/// 1-based place of `row` among its siblings by Level FS, highest first (users first on ties),
/// and the number of siblings.
fn place(tree: &AssocTree, fs: &FairShare, row: usize) -> (usize, usize) {
    let parent = tree.parents()[row] as usize;
    let key = |r: usize| (fs.level_fs[r], tree.is_user(r));
    let better = |a: (f64, bool), b: (f64, bool)| a.0 > b.0 || (a.0 == b.0 && a.1 && !b.1);
    let siblings = tree.children(parent);
    let n = siblings.len();
    let ahead = siblings.filter(|&s| s != row && better(key(s), key(row))).count();
    (ahead + 1, n)
}

/// A value as the explanations print it: 6 decimals, `inf`, or `-` when unset.
pub(crate) fn num(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else if v.is_infinite() {
        "inf".into()
    } else {
        format!("{v:.6}")
    }
}

fn shares(tree: &AssocTree, row: usize) -> String {
    if tree.is_parent_shares(row) { "parent".into() } else { tree.raw_shares()[row].to_string() }
}

/// The derivation of one association's factor.
pub fn explain(tree: &AssocTree, fs: &FairShare, row: usize) -> String {
    let mut out = String::new();
    let algorithm = fs.params.algorithm;
    let users = tree.user_count();
    let _ = writeln!(out, "{} ({} of {} user associations)", assoc_name(tree, row), algorithm.name(), users);
    let rows = path(tree, row);
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
            for &r in &rows[1..] {
                // `parent` associations are not ranked at their own level (they are lifted).
                let placed = if fs.level_fs[r].is_nan() {
                    "-".to_string()
                } else {
                    let (p, n) = place(tree, fs, r);
                    format!("{p} of {n}")
                };
                let range = subtree_range(tree, fs, r)
                    .map_or_else(|| "no users".to_string(), |(lo, hi)| format!("[{lo:.6}, {hi:.6}]"));
                let indent = "  ".repeat(tree.depths()[r] as usize - 1);
                let _ = writeln!(
                    out,
                    "  {:<32} {:>10} {:>10} {:>14.0} {:>15} {:>10} {:>8}  {}",
                    format!("{indent}{}", assoc_name(tree, r)),
                    shares(tree, r),
                    num(fs.norm_shares[r]),
                    tree.raw_usage()[r],
                    num(fs.effective_usage[r]),
                    num(fs.level_fs[r]),
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
            for &r in &rows[1..] {
                let indent = "  ".repeat(tree.depths()[r] as usize - 1);
                let _ = writeln!(
                    out,
                    "  {:<32} {:>10} {:>12} {:>14.0} {:>12} {:>12}",
                    format!("{indent}{}", assoc_name(tree, r)),
                    shares(tree, r),
                    num(fs.norm_shares[r]),
                    tree.raw_usage()[r],
                    num(fs.norm_usage[r]),
                    num(fs.effective_usage[r]),
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
/// use fairshare::pass::{compute, Algorithm, Params};
/// let tree = fairshare::io::default_tree()?;
/// let fs = compute(&tree, &Params::new(Algorithm::FairTree))?;
/// assert!(!fairshare::explain::explain_who(&tree, &fs, tree.account(0), None)?.is_empty());
/// # Ok::<(), fairshare::Error>(())
/// ```
pub fn explain_who(tree: &AssocTree, fs: &FairShare, who: &str, vs: Option<&str>) -> crate::Result<String> {
    let rows = find_rows(tree, who).map_err(crate::Error::Usage)?;
    let Some(other) = vs else {
        let texts: Vec<String> = rows.iter().map(|&r| explain(tree, fs, r)).collect();
        return Ok(texts.join("\n"));
    };
    let others = find_rows(tree, other).map_err(crate::Error::Usage)?;
    if rows.len() > 1 || others.len() > 1 {
        let names = |rs: &[usize]| rs.iter().map(|&r| assoc_name(tree, r)).collect::<Vec<_>>().join(", ");
        return Err(crate::Error::Usage(format!(
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
    use crate::pass::{Params, compute};

    fn site(algorithm: Algorithm) -> (AssocTree, FairShare) {
        let tree = crate::io::default_tree().unwrap();
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

    #[test]
    fn the_subtree_ranges_nest_and_hold_the_factor() {
        let (tree, fs) = site(Algorithm::FairTree);
        for row in (0..tree.len()).filter(|&r| tree.is_user(r)) {
            let f = fs.fs_factor[row];
            let mut inner = (f, f);
            for &r in path(&tree, row).iter().rev() {
                let (lo, hi) = subtree_range(&tree, &fs, r).unwrap();
                assert!(lo <= inner.0 && inner.1 <= hi, "{} at {}", assoc_name(&tree, row), assoc_name(&tree, r));
                inner = (lo, hi);
            }
        }
        // Fair Tree's blocks do not overlap between siblings.
        let kids: Vec<usize> = tree.children(0).filter(|&r| subtree_range(&tree, &fs, r).is_some()).collect();
        for &x in &kids {
            for &y in &kids {
                let (a, b) = (subtree_range(&tree, &fs, x).unwrap(), subtree_range(&tree, &fs, y).unwrap());
                assert!(x == y || a.1 <= b.0 || b.1 <= a.0, "{x} {y}: {a:?} {b:?}");
            }
        }
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
