//! flux-accounting's weighted tree (`weighted_walk_t`), quirks included.
//!
//! Each node's weight is `(shares / Σ sibling shares) / (usage / Σ sibling usage)`, computed with
//! exactly flux-accounting's operations: the sibling usage sum is accumulated into an integer
//! (each partial sum truncated, `--flux-exact-sums` turns that off), zero usage weighs 2^64, zero
//! shares weigh 0. Siblings are sorted by weight descending, users first among tolerance-equal
//! weights. The walk goes depth-first; users take `rank / N` with competition ranking among
//! tolerance-tied adjacent users; tolerance-tied adjacent banks are merged into one virtual bank
//! whose children are re-sorted by their existing weights (recursively). A user never ties a bank.
//!
//! Weights and sorts are per-group kernels run in parallel; the walk itself is sequential and
//! recursive only through the tree's depth.

use rayon::prelude::*;

use super::{FairShare, Params, norm_usage, par_fill};
use crate::error::{Error, Result};
use crate::tree::AssocTree;

/// Weight of a zero-usage sibling: `(double)UINT64_MAX + 1`.
pub const MAX_WEIGHT: f64 = 18_446_744_073_709_551_616.0;

/// `weighted_tree_node_t::is_equal`.
fn is_equal(a: f64, b: f64) -> bool {
    (a - b).abs() < f64::EPSILON * a.abs().max(b.abs()).max(1.0)
}

pub(super) fn flux(tree: &AssocTree, params: Params) -> Result<FairShare> {
    let n = tree.len();
    if let Some(r) = (1..n).find(|&r| tree.is_parent_shares(r)) {
        return Err(Error::Usage(format!(
            "flux-accounting has no `parent` shares, but association {} ({}) has them",
            tree.ids()[r],
            tree.user_name(r).unwrap_or(tree.account(r))
        )));
    }
    let usage = tree.raw_usage();
    let shares = tree.raw_shares();
    let users = tree.user_flags();
    let parents = tree.parents();

    // Per-parent sibling sums, in child order, as flux-accounting accumulates them.
    let mut sums = vec![(0u64, 0.0f64); n];
    par_fill(&mut sums, |p| {
        let kids = tree.children(p);
        let s = kids.clone().fold(0u64, |acc, c| acc.wrapping_add(shares[c]));
        let u = if params.flux_exact_sums {
            kids.map(|c| usage[c]).sum::<f64>()
        } else {
            kids.fold(0u64, |acc, c| (acc as f64 + usage[c]) as u64) as f64
        };
        (s, u)
    });

    let mut weight = vec![0.0f64; n];
    par_fill(&mut weight, |c| {
        if c == 0 {
            return 0.0;
        }
        let p = parents[c] as usize;
        if shares[c] == 0 {
            0.0
        } else if usage[c].abs() < 1e-9 {
            MAX_WEIGHT
        } else {
            (shares[c] as f64 / sums[p].0 as f64) / (usage[c] / sums[p].1)
        }
    });

    // Sort every child range (rows of one parent are contiguous).
    let mut sorted: Vec<u32> = (0..n as u32).collect();
    {
        let mut ranges: Vec<&mut [u32]> = Vec::new();
        let mut rest = &mut sorted[1..];
        for p in 0..n {
            let len = tree.children(p).len();
            if len > 0 {
                let (a, b) = rest.split_at_mut(len);
                ranges.push(a);
                rest = b;
            }
        }
        let sort = |r: &mut &mut [u32]| sort_weighted(r, &weight, &users);
        if n <= super::CHUNK {
            ranges.iter_mut().for_each(sort);
        } else {
            ranges.par_iter_mut().with_min_len(64).for_each(sort);
        }
    }

    let n_users = tree.user_count();
    let mut walk = Walk {
        tree,
        sorted: &sorted,
        weight: &weight,
        users: &users,
        rank: n_users as u32,
        stride: 0,
        ranks: vec![0; n],
    };
    if n_users > 0 {
        walk.visit(&sorted[tree.children(0)]);
    }
    let ranks = walk.ranks;
    let mut fs_factor = vec![f64::NAN; n];
    par_fill(&mut fs_factor, |i| if users[i] { f64::from(ranks[i]) / n_users as f64 } else { f64::NAN });

    let mut norm_shares = vec![0.0; n];
    par_fill(
        &mut norm_shares,
        |c| {
            if c == 0 { f64::NAN } else { shares[c] as f64 / sums[parents[c] as usize].0 as f64 }
        },
    );
    let mut effective_usage = vec![0.0; n];
    par_fill(&mut effective_usage, |c| {
        if c == 0 {
            return 1.0;
        }
        let u = sums[parents[c] as usize].1;
        if u == 0.0 { 0.0 } else { usage[c] / u }
    });
    let level_fs = weight
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            if i == 0 {
                f64::NAN
            } else if w == MAX_WEIGHT {
                f64::INFINITY
            } else {
                w
            }
        })
        .collect();
    Ok(FairShare {
        params,
        norm_shares,
        norm_usage: norm_usage(tree),
        effective_usage,
        level_fs,
        rank: ranks,
        fs_factor,
    })
}

/// Sorts siblings as `sort_weighted_children` does: libstdc++'s `std::sort` with flux-accounting's
/// comparator (users first among tolerance-equal weights, otherwise weight descending). The
/// comparator is not transitive on chains of near-equal weights, so the algorithm itself matters.
fn sort_weighted(rows: &mut [u32], weight: &[f64], users: &[bool]) {
    super::stdsort::sort(rows, |&a, &b| {
        let (a, b) = (a as usize, b as usize);
        if is_equal(weight[a], weight[b]) && users[a] != users[b] {
            return users[a];
        }
        weight[a] > weight[b]
    });
}

struct Walk<'a> {
    tree: &'a AssocTree,
    sorted: &'a [u32],
    weight: &'a [f64],
    users: &'a [bool],
    rank: u32,
    stride: u32,
    ranks: Vec<u32>,
}

enum Entry {
    Node(u32),
    Virtual(Vec<u32>),
}

impl<'a> Walk<'a> {
    fn children(&self, row: usize) -> &'a [u32] {
        &self.sorted[self.tree.children(row)]
    }

    fn equal_next(&self, list: &[u32], i: usize) -> bool {
        if i + 1 >= list.len() {
            return false;
        }
        let (a, b) = (list[i] as usize, list[i + 1] as usize);
        self.users[a] == self.users[b] && is_equal(self.weight[a], self.weight[b])
    }

    /// `handle_internal` over a sorted child list (of a bank or of a virtual bank).
    fn visit(&mut self, list: &[u32]) {
        let mut entries: Vec<(Entry, bool)> = Vec::with_capacity(list.len());
        let mut merged: Option<Vec<u32>> = None;
        for (i, &c) in list.iter().enumerate() {
            let tied = self.equal_next(list, i);
            if self.users[c as usize] {
                entries.push((Entry::Node(c), tied));
            } else if tied {
                merged.get_or_insert_with(Vec::new).extend_from_slice(self.children(c as usize));
            } else if let Some(mut v) = merged.take() {
                v.extend_from_slice(self.children(c as usize));
                sort_weighted(&mut v, self.weight, self.users);
                entries.push((Entry::Virtual(v), false));
            } else {
                entries.push((Entry::Node(c), false));
            }
        }
        for (entry, tie_with_next) in entries {
            match entry {
                Entry::Node(c) if self.users[c as usize] => {
                    self.ranks[c as usize] = self.rank;
                    if tie_with_next {
                        self.stride += 1;
                    } else {
                        self.rank = self.rank.saturating_sub(1 + self.stride);
                        self.stride = 0;
                    }
                }
                Entry::Node(c) => self.visit(self.children(c as usize)),
                Entry::Virtual(v) => self.visit(&v),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_ties_put_users_first() {
        let weight = [0.0, 0.998_498_498_498_498_6, 0.998_498_498_498_498_5, 2.0];
        let users = [false, false, true, true];
        let mut rows = vec![1, 2, 3];
        sort_weighted(&mut rows, &weight, &users);
        assert_eq!(rows, vec![3, 2, 1]);
        assert!(is_equal(weight[1], weight[2]));
        assert!(!is_equal(1.0, 1.0 + 1e-12));
    }
}
