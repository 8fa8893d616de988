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

use rayon::prelude::*;

use super::{CHUNK, FairShare, Params, norm_usage, norm_usage_at, par_column};
use crate::tree::{AssocTree, FsGroups};

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

    let chain = par_column(n, |i| {
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
        par_column(n, |i| if i != 0 && parent_flags[i] { chain[fs_parent[i] as usize] } else { chain[i] });

    let mut norm_usage = norm_usage(tree);
    if let Some(start) = pass_start {
        assert_eq!(start.len(), n, "one pass-start usage per row");
        // Accounts as stored at the pass's start; users (computed lazily) fresh.
        let accounts = par_column(n, |i| if users[i] { norm_usage[i] } else { norm_usage_at(start, i) });
        norm_usage = accounts;
    }
    // DEPTH_OBLIVIOUS compares with the siblings' (non-`parent`) normalized usage.
    let sibling_usage: Vec<f64> = if params.depth_oblivious {
        par_column(n, |x| {
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
            let ls = groups.level_shares(i);
            if ls == 0 { done[p] } else { ua + (done[p] - ua) * (shares[i] as f64 / ls as f64) }
        }
    };
    for k in 1..tree.levels() {
        let range = tree.level(k);
        let (done, rest) = effective_usage.split_at_mut(range.start);
        let level = &mut rest[..range.len()];
        if level.len() <= CHUNK {
            level.iter_mut().enumerate().for_each(|(j, o)| *o = ue_of(range.start + j, done));
        } else {
            level.par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
                for (j, o) in chunk.iter_mut().enumerate() {
                    *o = ue_of(range.start + c * CHUNK + j, done);
                }
            });
        }
    }

    let damp = f64::from(params.dampening.max(1));
    let fs_factor = par_column(n, |i| {
        if !users[i] {
            return f64::NAN;
        }
        let f = if parent_flags[i] { fs_parent[i] as usize } else { i };
        let s = norm_shares[f];
        if s <= 0.0 { 0.0 } else { 2f64.powf(-((effective_usage[f] / s) / damp)) }
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
