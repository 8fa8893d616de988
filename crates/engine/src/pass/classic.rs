//! Slurm's classic fair share (`PriorityFlags=NO_FAIR_TREE`), optionally DEPTH_OBLIVIOUS.
//!
//! `S` multiplies `shares / level_shares` up the *direct* parents (skipping `parent` ones, the
//! root excluded), in Slurm's order: the association's own factor first. Effective usage goes
//! top-down over the fair-share tree: `UE = UA + (UEp - UA) * shares / level_shares`, the first
//! level takes its normalized usage, a `parent` association takes its fair-share parent's.
//! `F = 2^(-(UE / S) / dampening)` for users.
//!
//! After a decay pass Slurm holds the accounts' `usage_norm` and `usage_efctv` from the start of
//! that pass (before its decay and charges), while users are computed when sshare asks, from their
//! fresh usage and that parent value (spec §9 "Classic timing"). Given the usage at the pass's
//! start, the accounts take their normalized usage from it; the rest follows, DEPTH_OBLIVIOUS's
//! sibling sums included (accounts as stored at the pass's start, users fresh).

use super::{FairShare, Params, norm_usage, norm_usage_at};
use crate::tree::{AssocTree, FsGroups};
use fairshare_base::parallel;

/// DEPTH_OBLIVIOUS's fixed steepness (`f = 5.0` in the plugin).
const DEPTH_OBLIVIOUS_F: f64 = 5.0;

/// `pass_start`: per row, the raw usage at the start of the last decay pass (accounts summed), or
/// `None` for the steady state of a static tree.
pub(super) fn classic(tree: &AssocTree, groups: &FsGroups, params: Params, pass_start: Option<&[f64]>) -> FairShare {
    let n = tree.len();
    let shares = tree.raw_shares();
    let parents = tree.parents();
    let parent_flags = groups.parent_flags();
    let users = groups.user_flags();
    let fs_parent = groups.fs_parents();

    let chain = parallel::column(n, |i| {
        let mut sn = 1.0f64;
        let mut x = i;
        while x != 0 {
            if !parent_flags[x] {
                let ls = groups.level_shares(x);
                if ls == 0 {
                    sn = 0.0;
                } else {
                    sn *= shares[x] as f64 / ls as f64;
                }
            }
            x = parents[x] as usize;
        }
        sn
    });
    let norm_shares =
        parallel::column(n, |i| if i != 0 && parent_flags[i] { chain[fs_parent[i] as usize] } else { chain[i] });

    let mut norm_usage = norm_usage(tree);
    if let Some(start) = pass_start {
        assert_eq!(start.len(), n, "one pass-start usage per row");
        // Accounts as stored at the pass's start; users (computed lazily) fresh.
        let accounts = parallel::column(n, |i| if users[i] { norm_usage[i] } else { norm_usage_at(start, i) });
        norm_usage = accounts;
    }
    // DEPTH_OBLIVIOUS compares with the siblings' (non-`parent`) normalized usage.
    let sibling_usage: Vec<f64> = if params.depth_oblivious {
        parallel::column(n, |x| {
            groups.group(x).iter().filter(|&&m| !parent_flags[m as usize]).map(|&m| norm_usage[m as usize]).sum()
        })
    } else {
        Vec::new()
    };

    // Effective usage, level by level: a fair-share parent always sits at a lower level.
    let mut effective_usage = vec![0.0; n];
    effective_usage[0] = 1.0;
    let ue_of = |i: usize, done: &[f64]| -> f64 {
        let p = fs_parent[i] as usize;
        let ua = norm_usage[i];
        if p == 0 {
            ua
        } else if parent_flags[i] {
            done[p]
        } else if params.depth_oblivious {
            depth_oblivious(ua, norm_shares[i], done[p], norm_shares[p], sibling_usage[p])
        } else {
            usage_efctv(ua, done[p], shares[i], groups.level_shares(i))
        }
    };
    for k in 1..tree.levels() {
        let range = tree.level(k);
        let (done, rest) = effective_usage.split_at_mut(range.start);
        parallel::fill_rows([&mut rest[..range.len()]], |j| [ue_of(range.start + j, done)]);
    }

    let damp = f64::from(params.dampening.max(1));
    let fs_factor = parallel::column(n, |i| {
        if !users[i] {
            return f64::NAN;
        }
        let f = if parent_flags[i] { fs_parent[i] as usize } else { i };
        calc_fs_factor(effective_usage[f], norm_shares[f], damp)
    });

    FairShare {
        params,
        norm_shares,
        norm_usage,
        effective_usage,
        level_fs: vec![f64::NAN; n],
        rank: vec![0; n],
        fs_factor,
    }
}

/// Effective usage as `_set_usage_efctv` computes it: `UE = UA + (UEp - UA) * shares / level_shares`,
/// the association's normalized usage `ua` pulled towards its fair-share parent's effective usage
/// `ue_parent` by its share of the level. A level without shares passes `ue_parent` on.
fn usage_efctv(ua: f64, ue_parent: f64, shares: u64, level_shares: u64) -> f64 {
    if level_shares == 0 { ue_parent } else { ua + (ue_parent - ua) * (shares as f64 / level_shares as f64) }
}

/// The classic fair-share factor (`priority_p_calc_fs_factor`): `F = 2^(-(UE / S) / dampening)`,
/// 0 for an association without shares.
fn calc_fs_factor(ue: f64, s: f64, dampening: f64) -> f64 {
    if s <= 0.0 { 0.0 } else { 2f64.powf(-((ue / s) / dampening)) }
}

/// `_depth_oblivious_set_usage_efctv` in its steady state (every sibling's usage_norm fresh).
fn depth_oblivious(ua: f64, s: f64, ue_parent: f64, s_parent: f64, sibling_usage: f64) -> f64 {
    if s == 0.0 || s_parent == 0.0 || ue_parent == 0.0 || ua == 0.0 {
        return ua;
    }
    let ratio_p = ue_parent / s_parent;
    let ratio_s = sibling_usage / s_parent;
    let ratio_l = (ua / s) / ratio_s;
    let k = if ratio_p == 0.0 || ratio_l == 0.0 || ratio_p.ln() * ratio_l.ln() >= 0.0 {
        1.0
    } else {
        1.0 / (1.0 + (DEPTH_OBLIVIOUS_F * ratio_p.ln()).powi(2))
    };
    ratio_p * ratio_l.powf(k) * s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_usage_moves_towards_the_parent_by_the_share_of_the_level() {
        assert_eq!(usage_efctv(0.25, 0.75, 1, 2), 0.5);
        assert_eq!(usage_efctv(0.25, 0.75, 2, 2), 0.75);
        assert_eq!(usage_efctv(0.25, 0.75, 0, 2), 0.25);
        assert_eq!(usage_efctv(0.25, 0.75, 0, 0), 0.75);
    }

    #[test]
    fn the_factor_halves_per_share_of_effective_usage_and_dampening() {
        assert_eq!(calc_fs_factor(0.0, 0.5, 1.0), 1.0);
        assert_eq!(calc_fs_factor(0.5, 0.5, 1.0), 0.5);
        assert_eq!(calc_fs_factor(1.0, 0.5, 2.0), 0.5);
        assert_eq!(calc_fs_factor(0.5, 0.0, 1.0), 0.0);
    }

    #[test]
    fn depth_oblivious_keeps_the_usage_without_shares_or_parent_usage() {
        assert_eq!(depth_oblivious(0.3, 0.0, 0.5, 0.5, 0.6), 0.3);
        assert_eq!(depth_oblivious(0.3, 0.5, 0.0, 0.5, 0.6), 0.3);
        // Parent and child both at their share: the child keeps its normalized usage.
        assert_eq!(depth_oblivious(0.25, 0.25, 0.5, 0.5, 0.5), 0.25);
    }
}
