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

use std::collections::HashMap;
use std::sync::Mutex;

use rayon::prelude::*;
use rustc_hash::FxBuildHasher;

use super::x87::{self, X87};
use super::{FairShare, NO_VAL, Params, norm_usage, par_fill};
use crate::tree::{AssocTree, FsGroups};

/// Neighbours whose f64 level_fs are at most this many ulps apart are re-decided in x87. With
/// fractional usage the f64 values carry one more rounding than x87's, hence the margin over the
/// 8 ulps that suffice for integer usage.
pub const NEAR_ULPS: u64 = 16;

/// x87 usage of a row: exact widening when f64 sums are exact; otherwise, for an account, Slurm's
/// sequential x87 accumulation of the users below it in lineage order. Only the accounts that own
/// or take part in a near tie are ever summed, each once.
struct ExactUsage<'a> {
    tree: &'a AssocTree,
    sums: Mutex<HashMap<u32, X87, FxBuildHasher>>,
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
    let users = tree.user_flags();
    let parent_flags = tree.parent_share_flags();
    let fs_parent = groups.fs_parents();

    // S is level-local; a `parent` association shows (and uses) its fair-share parent's.
    let level_shares_for = |f: usize| if f == 0 { NO_VAL } else { groups.level_shares(f) as f64 };
    let mut norm_shares = vec![0.0; n];
    par_fill(&mut norm_shares, |i| {
        let f = if i != 0 && parent_flags[i] { fs_parent[i] as usize } else { i };
        let ls = level_shares_for(f);
        if ls == 0.0 { 0.0 } else { shares[f] as f64 / ls }
    });
    let mut effective_usage = vec![0.0; n];
    par_fill(&mut effective_usage, |i| {
        if i == 0 {
            return 1.0;
        }
        let pu = usage[fs_parent[i] as usize];
        if pu == 0.0 { 0.0 } else { usage[i] / pu }
    });
    // level_fs as Slurm stores it (parent users inf, parent accounts NO_VAL); the root has none.
    let mut level_fs = vec![0.0; n];
    par_fill(&mut level_fs, |i| {
        if i == 0 {
            NO_VAL
        } else if parent_flags[i] {
            if users[i] { f64::INFINITY } else { NO_VAL }
        } else if norm_shares[i] == 0.0 {
            0.0
        } else if effective_usage[i] == 0.0 {
            f64::INFINITY
        } else {
            norm_shares[i] / effective_usage[i]
        }
    });

    let exact = ExactUsage { tree, sums: Mutex::new(HashMap::default()) };
    let exact_level_fs = |r: usize| -> X87 {
        let v = level_fs[r];
        if !v.is_finite() || v == 0.0 || (parent_flags[r] && !users[r]) {
            return x87::widen(v); // inf, 0 and NO_VAL are exact constants
        }
        let u = x87::div(exact.get(r), exact.get(fs_parent[r] as usize));
        x87::div(x87::widen(norm_shares[r]), u)
    };

    // Sort every group; `tied_prev[slot]` says whether the member in that slot ties with the one
    // before it (for the first slot: with NO_VAL, Slurm's initial `prev`).
    let offsets = groups.offsets();
    let members = groups.members();
    let mut sorted: Vec<u32> = members.to_vec();
    let mut tied_prev = vec![false; sorted.len()];
    {
        let mut segments: Vec<(&[u32], &mut [u32], &mut [bool])> = Vec::new();
        let (mut rest_s, mut rest_t) = (&mut sorted[..], &mut tied_prev[..]);
        for x in 0..n {
            let len = (offsets[x + 1] - offsets[x]) as usize;
            if len == 0 {
                continue;
            }
            let (s, rs) = rest_s.split_at_mut(len);
            let (t, rt) = rest_t.split_at_mut(len);
            segments.push((groups.group(x), s, t));
            rest_s = rs;
            rest_t = rt;
        }
        let inputs = GroupInputs { level_fs: &level_fs, users: &users, parent_flags: &parent_flags, usage, shares };
        let sort_group = |keys: &mut Vec<u128>, (group, out, tied): &mut (&[u32], &mut [u32], &mut [bool])| {
            sort_group(group, out, tied, keys, &inputs, near_ulps, &exact_level_fs);
        };
        if members.len() <= super::CHUNK {
            let mut keys = Vec::new();
            segments.iter_mut().for_each(|seg| sort_group(&mut keys, seg));
        } else {
            segments.par_iter_mut().with_min_len(256).for_each_init(Vec::new, sort_group);
        }
    }

    // Users below each account in the fair-share sense, bottom-up by level (members are deeper).
    let mut users_below = vec![0u64; n];
    for k in (0..tree.levels()).rev() {
        let range = tree.level(k);
        let (lo, hi) = users_below.split_at_mut(range.end);
        let end = range.end;
        let level = &mut lo[range.clone()];
        let count = |x: usize| -> u64 {
            groups.group(x).iter().map(|&m| if users[m as usize] { 1 } else { hi[m as usize - end] }).sum()
        };
        if level.len() <= super::CHUNK {
            level.iter_mut().enumerate().for_each(|(j, o)| *o = count(range.start + j));
        } else {
            level.par_iter_mut().enumerate().with_min_len(1024).for_each(|(j, o)| *o = count(range.start + j));
        }
    }

    // Top-down: visit position and tie flag of every row, owners in row order.
    let mut pos = vec![0u64; n];
    let mut tied = vec![false; n];
    for x in 0..n {
        let (a, b) = (offsets[x] as usize, offsets[x + 1] as usize);
        let mut p = pos[x];
        for slot in a..b {
            let m = sorted[slot] as usize;
            pos[m] = p;
            tied[m] = tied_prev[slot] || (slot == a && tied[x]);
            p += if users[m] { 1 } else { users_below[m] };
        }
    }

    // The rank walk as one scan over the visit order.
    let n_users = tree.user_count();
    let mut visit = vec![0u32; n_users];
    for r in 0..n {
        if users[r] {
            visit[pos[r] as usize] = r as u32;
        }
    }
    let mut rank = vec![0u32; n];
    let mut fs_factor = vec![f64::NAN; n];
    let mut current = n_users as u64;
    for (k, &u) in visit.iter().enumerate() {
        let u = u as usize;
        if !tied[u] {
            current = (n_users - k) as u64;
        }
        rank[u] = current as u32;
        fs_factor[u] = current as f64 / n_users as f64;
    }

    // sshare leaves LevelFS blank for the root and for `parent` associations.
    for (i, v) in level_fs.iter_mut().enumerate() {
        if i == 0 || parent_flags[i] {
            *v = f64::NAN;
        }
    }
    FairShare { params, norm_shares, norm_usage: norm_usage(tree), effective_usage, level_fs, rank, fs_factor }
}

/// Per-row inputs of [`sort_group`].
#[derive(Clone, Copy)]
struct GroupInputs<'a> {
    level_fs: &'a [f64],
    users: &'a [bool],
    parent_flags: &'a [bool],
    usage: &'a [f64],
    shares: &'a [u64],
}

/// Sorts one group (`group`, lineage order) into `out` and fills its tie flags.
///
/// Order: level_fs descending, users before accounts on equal values, then lineage order (a
/// stable sort, as glibc's merge-sort `qsort` is).
fn sort_group(
    group: &[u32],
    out: &mut [u32],
    tied: &mut [bool],
    keys: &mut Vec<u128>,
    inputs: &GroupInputs<'_>,
    near_ulps: u64,
    exact_level_fs: &(dyn Fn(usize) -> X87 + Sync),
) {
    let GroupInputs { level_fs, users, parent_flags, usage, shares } = *inputs;
    // Non-negative f64 bits are monotone; pack (value desc, account after user, lineage index).
    keys.clear();
    keys.extend(group.iter().enumerate().map(|(idx, &r)| {
        let r = r as usize;
        ((!level_fs[r].to_bits() as u128) << 64) | ((!users[r] as u128) << 32) | idx as u128
    }));
    keys.sort_unstable();
    let row_of = |k: u128| group[(k as u32) as usize] as usize;
    let value_of = |k: u128| level_fs[row_of(k)];
    let near =
        |a: f64, b: f64| a == b || (a.is_finite() && b.is_finite() && a.to_bits().abs_diff(b.to_bits()) <= near_ulps);

    tied.fill(false);
    let m = keys.len();
    let mut start = 0;
    while start < m {
        let mut end = start + 1;
        while end < m && near(value_of(keys[end - 1]), value_of(keys[end])) {
            end += 1;
        }
        // A run touching NO_VAL at the head also decides the first member's tie with Slurm's
        // initial `prev`.
        let head_near_noval = start == 0 && near(value_of(keys[0]), NO_VAL);
        if end - start > 1 || head_near_noval {
            let run = &mut keys[start..end];
            // Users of one group with the same usage and shares have bit-identical x87 values: a run
            // made only of them is tied as it stands, and each distinct input is divided once.
            let input = |k: u128| {
                let r = row_of(k);
                // `parent` users store 0 shares but rank as +inf: never share a key with others.
                (users[r] && !parent_flags[r]).then(|| (usage[r].to_bits(), shares[r]))
            };
            let first = input(run[0]);
            if first.is_some() && run.iter().all(|&k| input(k) == first) && !head_near_noval {
                tied[start + 1..end].fill(true);
                start = end;
                continue;
            }
            let mut memo: Vec<((u64, u64), u128)> = Vec::new();
            let mut order: Vec<(u128, u128)> = Vec::with_capacity(run.len());
            for &k in run.iter() {
                let known = input(k).and_then(|i| memo.iter().find(|(m, _)| *m == i).map(|(_, x)| *x));
                let x = known.unwrap_or_else(|| {
                    let x = x87::key(exact_level_fs(row_of(k)));
                    if let Some(i) = input(k) {
                        memo.push((i, x));
                    }
                    x
                });
                order.push((x, k));
            }
            // x87 value descending, users first, lineage index.
            order.sort_unstable_by(|a, b| {
                b.0.cmp(&a.0)
                    .then(((a.1 >> 32) as u32).cmp(&((b.1 >> 32) as u32)))
                    .then((a.1 as u32).cmp(&(b.1 as u32)))
            });
            for (j, (xk, k)) in order.iter().enumerate() {
                run[j] = *k;
                if j > 0 {
                    tied[start + j] = order[j - 1].0 == *xk;
                }
            }
            if head_near_noval {
                tied[0] = order[0].0 == x87::key(x87::widen(NO_VAL));
            }
        }
        start = end;
    }
    for (o, &k) in out.iter_mut().zip(keys.iter()) {
        *o = row_of(k) as u32;
    }
}
