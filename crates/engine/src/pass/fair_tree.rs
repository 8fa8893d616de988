//! Slurm's Fair Tree (`fair_tree.c`), as the code behaves.
//!
//! Per association: `U = usage / fs-parent usage`, `S = shares / level shares` (level-local),
//! `level_fs = S / U` (`inf` when U is 0, 0 when S is 0; a `parent` user is `inf`, a `parent`
//! account `NO_VAL`). Each fair-share group is sorted by level_fs descending, users before accounts
//! on equal values, otherwise in lineage order; users are then ranked depth-first with the tie rules
//! of the real code: tied users share a rank (competition ranking), a tied account's first user
//! inherits the current rank, tied accounts are never merged.
//!
//! Slurm decides ties with `==` on x87 80-bit values. Computing everything in 80-bit software float
//! is slow, so level_fs is computed in f64 first and only runs of neighbours within [`NEAR_ULPS`]
//! are recomputed in x87 and re-sorted: two values whose f64 and x87 orders could differ are less
//! than a few ulps apart.
//!
//! The depth-first walk is turned into level passes: each member's *visit position* is its group
//! owner's position plus the user counts of the siblings sorted before it, and its rank is
//! `N - position` unless it is tied, in which case it inherits the rank of the previous user in
//! visit order.
//!
//! Phases: one fused pass over the rows (S, U, level_fs, normalized usage); the group sorts, many
//! small groups per task; the visit positions, level by level, owners of a level in parallel; one
//! scan over the visit order for the tie runs; one gather of each user's rank.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

use fairshare_base::hash::FixedState;

use super::keysort::key_order;
use super::x87::{self, X87};
use super::{FairShare, NO_VAL, Params, norm_usage_at};
use crate::tree::{AssocTree, FsGroups};
use fairshare_base::parallel;
use fairshare_base::parallel::runs::split_runs;

/// Neighbours whose f64 level_fs are at most this many ulps apart are re-decided in x87. With
/// fractional usage the f64 values carry one more rounding than x87's, hence the margin over the
/// 8 ulps that suffice for integer usage.
pub const NEAR_ULPS: u64 = 16;

/// x87 usage of a row: exact widening when f64 sums are exact; otherwise, for an account, Slurm's
/// sequential x87 accumulation of the users below it in lineage order. Only the accounts that own
/// or take part in a near tie are ever summed, each once.
struct ExactUsage<'a> {
    tree: &'a AssocTree,
    sums: Mutex<HashMap<u32, X87, FixedState>>,
}

impl ExactUsage<'_> {
    fn get(&self, row: usize) -> X87 {
        let usage = self.tree.raw_usage();
        if self.tree.usage_is_integral() || self.tree.is_user(row) {
            return x87::widen(usage[row]);
        }
        if let Some(v) = self.sums.lock().unwrap_or_else(|e| e.into_inner()).get(&(row as u32)) {
            return *v;
        }
        let mut acc = x87::widen(0.0);
        let mut stack = vec![self.tree.children(row)];
        while let Some(range) = stack.last_mut() {
            match range.next() {
                None => {
                    stack.pop();
                }
                Some(c) if self.tree.is_user(c) => acc = x87::add(acc, x87::widen(usage[c])),
                Some(c) => stack.push(self.tree.children(c)),
            }
        }
        self.sums.lock().unwrap_or_else(|e| e.into_inner()).insert(row as u32, acc);
        acc
    }
}

/// Runs Fair Tree over `tree`, re-deciding neighbours within `near_ulps` in x87.
pub(super) fn fair_tree(tree: &AssocTree, groups: &FsGroups, near_ulps: u64, params: Params) -> FairShare {
    let n = tree.len();
    let usage = tree.raw_usage();
    let shares = tree.raw_shares();
    let users = groups.user_flags();
    let parent_flags = groups.parent_flags();
    let fs_parent = groups.fs_parents();

    // S is level-local; a `parent` association shows (and uses) its fair-share parent's. sshare
    // leaves level_fs blank for the root and for `parent` associations ([`stored_level_fs`] gives
    // the value Slurm sorts by).
    let mut norm_shares = vec![0.0; n];
    let mut effective_usage = vec![0.0; n];
    let mut level_fs = vec![0.0; n];
    let mut norm_usage = vec![0.0; n];
    parallel::fill_rows([&mut norm_shares, &mut effective_usage, &mut level_fs, &mut norm_usage], |i| {
        let f = if i != 0 && parent_flags[i] { fs_parent[i] as usize } else { i };
        // The root's level shares are Slurm's NO_VAL.
        let s = s_among_siblings(shares[f], if f == 0 { NO_VAL } else { groups.level_shares(f) as f64 });
        let u = if i == 0 { 1.0 } else { u_among_siblings(usage[i], usage[fs_parent[i] as usize]) };
        let fs = if i == 0 || parent_flags[i] { f64::NAN } else { level_fs_of(s, u) };
        [s, u, fs, norm_usage_at(usage, i)]
    });
    let inputs = GroupInputs { level_fs: &level_fs, users, parent_flags, usage, shares };

    let exact = ExactUsage { tree, sums: Mutex::new(HashMap::default()) };
    let exact_level_fs = |r: usize| -> X87 {
        let v = inputs.stored_level_fs(r);
        if !v.is_finite() || v == 0.0 || (parent_flags[r] && !users[r]) {
            return x87::widen(v); // inf, 0 and NO_VAL are exact constants
        }
        let u = x87::div(exact.get(r), exact.get(fs_parent[r] as usize));
        x87::div(x87::widen(norm_shares[r]), u)
    };

    // Sort every group; `tied_prev[slot]` says whether the member in that slot ties with the one
    // before it (for the first slot: with NO_VAL, Slurm's initial `prev`). A task takes consecutive
    // owners until it holds a chunk of members: most groups have a handful.
    let offsets = groups.offsets();
    let n_slots = groups.members().len();
    let mut sorted = vec![0u32; n_slots];
    let mut tied_prev = vec![false; n_slots];
    {
        let runs = parallel::task_runs(0..tree.parent_rows(), |x| offsets[x] as usize);
        let mut tasks: Vec<_> = runs
            .iter()
            .map(|(owners, _)| owners.clone())
            .zip(split_runs(&mut sorted, &runs))
            .zip(split_runs(&mut tied_prev, &runs))
            .map(|((owners, s), t)| (owners, s, t))
            .collect();
        let run_task =
            |scratch: &mut SortScratch, (owners, out, tied): &mut (std::ops::Range<usize>, &mut [u32], &mut [bool])| {
                let base = offsets[owners.start] as usize;
                for x in owners.clone() {
                    let (a, b) = (offsets[x] as usize - base, offsets[x + 1] as usize - base);
                    if a < b {
                        sort_group(
                            groups.group(x),
                            &mut out[a..b],
                            &mut tied[a..b],
                            scratch,
                            &inputs,
                            near_ulps,
                            &exact_level_fs,
                        );
                    }
                }
            };
        parallel::for_each_task_with(&mut tasks, SortScratch::default, run_task);
    }

    // Top-down, a level of owners at a time: each member's visit position and tie flag. Every row
    // is some group's member exactly once, so the relaxed stores never race; the users' tie flags
    // also go to `tied_at`, indexed by visit position.
    let users_below = groups.users_below();
    let n_users = tree.user_count();
    let pos: Vec<AtomicU32> = parallel::column(n, |_| AtomicU32::new(0));
    let tied: Vec<AtomicBool> = parallel::column(n, |_| AtomicBool::new(false));
    let tied_at: Vec<AtomicBool> = parallel::column(n_users, |_| AtomicBool::new(false));
    let place = |x: usize| {
        let (a, b) = (offsets[x] as usize, offsets[x + 1] as usize);
        let mut p = pos[x].load(Relaxed);
        let owner_tied = tied[x].load(Relaxed);
        for slot in a..b {
            let m = sorted[slot] as usize;
            let t = tied_prev[slot] || (slot == a && owner_tied);
            pos[m].store(p, Relaxed);
            tied[m].store(t, Relaxed);
            if users[m] {
                tied_at[p as usize].store(t, Relaxed);
                p += 1;
            } else {
                p += users_below[m];
            }
        }
    };
    for k in 0..tree.levels() {
        let owners = tree.level(k);
        // A level of users owns no members: no walk over its rows.
        if offsets[owners.end] == offsets[owners.start] {
            continue;
        }
        let mut runs = parallel::task_runs(owners, |x| offsets[x] as usize);
        parallel::for_each_task(&mut runs, |(owners, _)| owners.clone().for_each(&place));
    }

    // The rank walk: a tied user inherits the rank of the user visited before it, so each visit
    // position takes the rank of the last untied position at or before it.
    let mut run_rank = vec![0u32; n_users];
    let mut current = n_users as u32;
    for (p, (r, t)) in run_rank.iter_mut().zip(&tied_at).enumerate() {
        if !t.load(Relaxed) {
            current = (n_users - p) as u32;
        }
        *r = current;
    }
    let (rank, fs_factor): (Vec<u32>, Vec<f64>) = parallel::unzip(n, |i| {
        if users[i] {
            let r = run_rank[pos[i].load(Relaxed) as usize];
            (r, f64::from(r) / n_users as f64)
        } else {
            (0, f64::NAN)
        }
    });
    FairShare { params, norm_shares, norm_usage, effective_usage, level_fs, rank, fs_factor }
}

/// Fair Tree's S, the association's shares normalized among its siblings: `shares /
/// level_shares`, 0 when the level has no shares.
fn s_among_siblings(shares: u64, level_shares: f64) -> f64 {
    if level_shares == 0.0 { 0.0 } else { shares as f64 / level_shares }
}

/// Fair Tree's U, the association's usage normalized among its siblings: its raw usage over its
/// fair-share parent's, 0 when the parent has none.
fn u_among_siblings(usage: f64, parent_usage: f64) -> f64 {
    if parent_usage == 0.0 { 0.0 } else { usage / parent_usage }
}

/// Level FS = S / U (`_calc_assoc_fs`): 0 when S is 0 (the lowest value, even when U is 0 too),
/// infinity when only U is 0 (an idle association with shares ranks highest).
fn level_fs_of(s: f64, u: f64) -> f64 {
    if s == 0.0 {
        0.0
    } else if u == 0.0 {
        f64::INFINITY
    } else {
        s / u
    }
}

/// Per-row inputs of [`sort_group`].
#[derive(Clone, Copy)]
struct GroupInputs<'a> {
    /// As output: unset for `parent` associations.
    level_fs: &'a [f64],
    users: &'a [bool],
    parent_flags: &'a [bool],
    usage: &'a [f64],
    shares: &'a [u64],
}

impl GroupInputs<'_> {
    /// The level_fs Slurm sorts `row` by: `parent` users rank as inf, `parent` accounts hold NO_VAL.
    fn stored_level_fs(&self, row: usize) -> f64 {
        if self.parent_flags[row] { if self.users[row] { f64::INFINITY } else { NO_VAL } } else { self.level_fs[row] }
    }

    /// The usage and shares Slurm divides for a user's level_fs: users of one group with the same
    /// pair divide the same numbers. None for accounts and `parent` users (a `parent` user stores
    /// 0 shares but ranks as +inf, so it never shares an input with another).
    fn division_inputs(&self, row: usize) -> Option<(u64, u64)> {
        (self.users[row] && !self.parent_flags[row]).then(|| (self.usage[row].to_bits(), self.shares[row]))
    }
}

/// A group member being sorted: its sort key, row and lineage index in the group.
#[derive(Clone, Copy)]
struct Member {
    key: u64,
    row: u32,
    idx: u32,
}

/// Bits of the largest non-NaN f64 pattern: keys count down from it, so ascending keys are
/// descending values.
const DESC_MAX: u64 = 0x7FFF_FFFF_FFFF_FFFF;

/// Sort key of a non-negative, non-NaN level_fs: value descending, then users before accounts.
fn sort_key(level_fs: f64, user: bool) -> u64 {
    ((DESC_MAX - level_fs.to_bits()) << 1) | u64::from(!user)
}

/// The level_fs a [`sort_key`] was made from.
fn key_value(key: u64) -> f64 {
    f64::from_bits(DESC_MAX - (key >> 1))
}

/// Reusable buffers of [`sort_group`].
#[derive(Default)]
struct SortScratch {
    /// The [`sort_key`] of each member, by lineage index.
    keys: Vec<u64>,
    /// The members in sorted order, as [`key_order`] packs them.
    packed: Vec<u64>,
    /// The members of a run being re-decided.
    run: Vec<Member>,
}

/// Sorts one group (`group`, lineage order) into `out` and sets its tie flags (`tied` starts all
/// false).
///
/// Order: level_fs descending, users before accounts on equal values, then lineage order (a
/// stable sort, as glibc's merge-sort `qsort` is).
///
/// The sort itself is [`key_order`]'s, on [`sort_key`]s.
fn sort_group(
    group: &[u32],
    out: &mut [u32],
    tied: &mut [bool],
    scratch: &mut SortScratch,
    inputs: &GroupInputs<'_>,
    near_ulps: u64,
    exact_level_fs: &(dyn Fn(usize) -> X87 + Sync),
) {
    let SortScratch { keys, packed, run } = scratch;
    let m = group.len();
    keys.clear();
    keys.extend(group.iter().map(|&r| sort_key(inputs.stored_level_fs(r as usize), inputs.users[r as usize])));
    let idx_mask = key_order(keys, packed);
    let key_at = |p: u64| keys[(p & idx_mask) as usize];

    // On keys: `key >> 1` counts down the value's bits, so the ulp distance of two values is the
    // distance of their keys, and a value is finite when its key is above inf's.
    let finite_above = DESC_MAX - f64::INFINITY.to_bits();
    let near = |a: u64, b: u64| {
        let (a, b) = (a >> 1, b >> 1);
        a == b || (a.min(b) > finite_above && a.abs_diff(b) <= near_ulps)
    };
    // One sweep writes the rows and finds the runs of near neighbours. A run touching NO_VAL at
    // the head also decides the first member's tie with Slurm's initial `prev`.
    let mut head_near_noval = m > 0 && near(key_at(packed[0]), sort_key(NO_VAL, false));
    let (mut start, mut equal) = (0, true);
    let mut prev = 0;
    for end in 0..=m {
        let key = if end < m { key_at(packed[end]) } else { 0 };
        if end > 0 && (end == m || !near(prev, key)) {
            if end - start > 1 || head_near_noval {
                let rows = &mut out[start..end];
                let tied = &mut tied[start..end];
                if !(equal && resolve_equal_run(rows, prev, tied, head_near_noval, inputs)) {
                    run.clear();
                    run.extend(packed[start..end].iter().map(|&p| {
                        let idx = (p & idx_mask) as u32;
                        Member { key: keys[idx as usize], row: group[idx as usize], idx }
                    }));
                    resolve_run(run, tied, head_near_noval, inputs, exact_level_fs);
                    for (o, m) in rows.iter_mut().zip(run.iter()) {
                        *o = m.row;
                    }
                }
            }
            head_near_noval = false;
            (start, equal) = (end, true);
        } else if end > 0 {
            equal &= prev >> 1 == key >> 1;
        }
        if end < m {
            out[end] = group[(packed[end] & idx_mask) as usize];
            prev = key;
        }
    }
}

/// Sets the ties of a run of members with one level_fs (`key` is one of theirs) when no x87
/// arithmetic can part them; false when it can.
fn resolve_equal_run(
    rows: &[u32],
    key: u64,
    tied: &mut [bool],
    head_near_noval: bool,
    inputs: &GroupInputs<'_>,
) -> bool {
    // inf, 0 and NO_VAL (a `parent` account) are the same constants in any width; only NO_VAL
    // needs a look at the members (and equals Slurm's initial `prev`).
    let v = key_value(key);
    let parent_account = |&r: &u32| inputs.parent_flags[r as usize] && !inputs.users[r as usize];
    if !v.is_finite() || v == 0.0 || (v == NO_VAL && rows.iter().all(parent_account)) {
        tied[1..].fill(true);
        tied[0] = head_near_noval && v == NO_VAL;
        return true;
    }
    let first = inputs.division_inputs(rows[0] as usize);
    if !head_near_noval && first.is_some() && rows[1..].iter().all(|&r| inputs.division_inputs(r as usize) == first) {
        tied[1..].fill(true);
        return true;
    }
    false
}

/// Orders a run of near-equal members as Slurm's x87 values order them and sets their ties.
fn resolve_run(
    run: &mut [Member],
    tied: &mut [bool],
    head_near_noval: bool,
    inputs: &GroupInputs<'_>,
    exact_level_fs: &(dyn Fn(usize) -> X87 + Sync),
) {
    let input = |m: &Member| inputs.division_inputs(m.row as usize);
    let mut memo: HashMap<(u64, u64), u128, FixedState> = HashMap::default();
    let mut order: Vec<(u128, Member)> = run
        .iter()
        .map(|m| {
            let x = match input(m) {
                Some(i) => *memo.entry(i).or_insert_with(|| x87::key(exact_level_fs(m.row as usize))),
                None => x87::key(exact_level_fs(m.row as usize)),
            };
            (x, *m)
        })
        .collect();
    // x87 value descending, users first, lineage index.
    order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then((a.1.key & 1).cmp(&(b.1.key & 1))).then(a.1.idx.cmp(&b.1.idx)));
    for (j, (x, m)) in order.iter().enumerate() {
        run[j] = *m;
        tied[j] = j > 0 && order[j - 1].0 == *x;
    }
    if head_near_noval {
        tied[0] = order[0].0 == x87::key(x87::widen(NO_VAL));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorts rows `0..level_fs.len()` as one group (no `parent` shares): the order and the ties.
    fn sorted(level_fs: &[f64], users: &[bool]) -> (Vec<u32>, Vec<bool>) {
        let n = level_fs.len();
        let (parent_flags, usage, shares) = (vec![false; n], vec![1.0; n], vec![1; n]);
        let inputs = GroupInputs { level_fs, users, parent_flags: &parent_flags, usage: &usage, shares: &shares };
        let group: Vec<u32> = (0..n as u32).collect();
        let (mut out, mut tied) = (vec![0; n], vec![false; n]);
        let exact = |r: usize| x87::widen(level_fs[r]);
        sort_group(&group, &mut out, &mut tied, &mut SortScratch::default(), &inputs, NEAR_ULPS, &exact);
        (out, tied)
    }

    #[test]
    fn values_apart_below_the_truncated_bits_sort_on_their_full_keys() {
        // In a group of 20 the packed key keeps the lineage index in 5 bits, so the value loses
        // its last 5 bits: two values 20 ulps apart (more than NEAR_ULPS, so never re-decided in
        // x87) in one 32-ulp block have equal truncated values. The larger is an account and the
        // smaller a user, so the packed order alone would put the smaller first.
        let hi_bits = (1.5f64.to_bits() & !31) | 31;
        let (hi, lo) = (f64::from_bits(hi_bits), f64::from_bits(hi_bits - 20));
        const { assert!(20 > NEAR_ULPS) };
        let mut level_fs: Vec<f64> = (0..20).map(|i| 100.0 + f64::from(i)).collect();
        let mut users = vec![true; 20];
        (level_fs[3], level_fs[5], users[5]) = (lo, hi, false);
        let (out, tied) = sorted(&level_fs, &users);
        assert!(tied.iter().all(|&t| !t));
        let mut expected: Vec<u32> = (0..20).collect();
        expected.sort_by(|&a, &b| level_fs[b as usize].total_cmp(&level_fs[a as usize]));
        assert_eq!(out, expected);
        assert_eq!(&out[18..], [5, 3]);
    }

    #[test]
    fn s_and_u_are_normalized_among_siblings() {
        assert_eq!(s_among_siblings(3, 12.0), 0.25);
        assert_eq!(s_among_siblings(3, 0.0), 0.0);
        assert_eq!(s_among_siblings(1, NO_VAL), 1.0 / NO_VAL);
        assert_eq!(u_among_siblings(30.0, 120.0), 0.25);
        assert_eq!(u_among_siblings(0.0, 0.0), 0.0);
        assert_eq!(u_among_siblings(5.0, 0.0), 0.0);
    }

    #[test]
    fn level_fs_is_zero_without_shares_and_infinite_without_usage() {
        assert_eq!(level_fs_of(0.25, 0.5), 0.5);
        assert_eq!(level_fs_of(0.0, 0.5), 0.0);
        assert_eq!(level_fs_of(0.0, 0.0), 0.0);
        assert_eq!(level_fs_of(0.25, 0.0), f64::INFINITY);
    }

    #[test]
    fn equal_values_put_users_first_then_lineage_order() {
        let level_fs = [2.0, 3.0, 2.0, 2.0, 3.0];
        let users = [false, true, true, false, false];
        let (out, tied) = sorted(&level_fs, &users);
        assert_eq!(out, [1, 4, 2, 0, 3]);
        assert_eq!(tied, [false, true, false, true, true]);
    }
}
