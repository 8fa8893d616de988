//! flux-accounting's `mf_priority` formula (`priority_calculation` in `mf_priority.cpp`).
//!
//! `P = round(W_fs·fairshare + W_q·queue + W_b·bank + W_u·(urgency − 16))`, with the queue and urgency
//! terms in integer arithmetic, urgency 0 (hold) giving 0, urgency 31 (expedite) giving 2^32-1, and
//! a negative result giving 0. `fairshare` is the association's value as flux-accounting stores it,
//! rounded to 6 decimals.

use std::collections::HashMap;

use fairshare_base::hash::FixedState;

use super::{NONE, Scores};
use crate::io::flux_db::priority::FluxPriorityTables;
pub use crate::io::flux_db::priority::FluxWeights;
use crate::jobs::PendingJobs;
use crate::pass::FairShare;
use crate::tree::AssocTree;

/// `FLUX_JOB_URGENCY_HOLD`.
pub const URGENCY_HOLD: u8 = 0;
/// `FLUX_JOB_URGENCY_EXPEDITE`.
pub const URGENCY_EXPEDITE: u8 = 31;

/// The value flux-accounting stores for a fair-share factor: `std::to_string`, 6 decimals.
///
/// # Example
/// ```
/// assert_eq!(fairshare_engine::priority::flux::stored_fairshare(6.0 / 7.0), 0.857143);
/// ```
pub fn stored_fairshare(fs: f64) -> f64 {
    format!("{fs:.6}").parse().unwrap_or(0.0)
}

/// The priority of one job.
///
/// # Example
/// ```
/// use fairshare_engine::priority::flux::{flux_priority, FluxWeights};
/// let w = FluxWeights::default();
/// assert_eq!(flux_priority(&w, 0.5, 10_000, 0.0, 16), 100_050_000); // t1013: expedite queue
/// assert_eq!(flux_priority(&w, 0.5, 0, 0.0, 0), 0);                 // held
/// ```
pub fn flux_priority(w: &FluxWeights, fairshare: f64, queue: i32, bank: f64, urgency: u8) -> u32 {
    match urgency {
        URGENCY_HOLD => 0,
        URGENCY_EXPEDITE => u32::MAX,
        _ => {
            let queue_term = w.queue.wrapping_mul(queue);
            let urgency_term = w.urgency.wrapping_mul(i32::from(urgency) - 16);
            let p = (f64::from(w.fairshare) * fairshare
                + f64::from(queue_term)
                + f64::from(w.bank) * bank
                + f64::from(urgency_term))
            .round();
            if p < 0.0 { 0 } else { p.min(f64::from(u32::MAX)) as u32 }
        }
    }
}

/// Scores the queue with flux-accounting's formula. A job's queue is its first partition; its
/// association is (user, bank = account), with the fair-share update-fshare stored for it; an
/// unknown association scores fair-share 0. The weighted
/// terms land in the [`Scores`] columns sprio shows: fair-share, QOS (the queue term) and
/// association (the bank term).
pub fn score_flux(
    jobs: &PendingJobs,
    tree: &AssocTree,
    fs: &FairShare,
    tables: &FluxPriorityTables,
) -> (Scores, Vec<usize>) {
    let mut assoc: HashMap<(&str, &str), u32, FixedState> = HashMap::with_hasher(FixedState::default());
    let mut repeated = false;
    for r in 0..tree.len() {
        if let Some(u) = tree.user_name(r) {
            repeated |= assoc.insert((u, tree.account(r)), r as u32).is_some();
        }
    }
    // A user the tree holds twice (its bank listed under two parents) has the value update-fshare
    // wrote last.
    if repeated {
        for r in crate::pass::update_fshare_order(tree, fs) {
            if let Some(u) = tree.user_name(r) {
                assoc.insert((u, tree.account(r)), r as u32);
            }
        }
    }
    let w = &tables.weights;
    let n = jobs.len();
    let mut s =
        Scores { age: vec![0.0; n], job_size: vec![0.0; n], partition_factor: vec![0.0; n], ..Scores::default() };
    let mut unknown = Vec::new();
    for j in 0..n {
        let (user, bank) = (jobs.names.name(jobs.user[j]), jobs.names.name(jobs.account[j]));
        let a = assoc.get(&(user, bank)).copied().unwrap_or(NONE);
        if a == NONE {
            unknown.push(j);
        }
        let fairshare = if a == NONE { 0.0 } else { stored_fairshare(fs.fs_factor[a as usize]) };
        let part = jobs.partitions(j)[0];
        let queue = tables.queues.get(jobs.names.name(part)).copied().unwrap_or(0);
        let bank_prio = tables.banks.get(bank).copied().unwrap_or(0.0);
        let p = flux_priority(w, fairshare, queue, bank_prio, jobs.urgency[j]);
        s.job.push(j as u32);
        s.partition.push(part);
        s.qos.push(NONE);
        s.assoc.push(a);
        s.fairshare.push(f64::from(w.fairshare) * fairshare);
        s.qos_factor.push(f64::from(w.queue.wrapping_mul(queue)));
        s.assoc_factor.push(f64::from(w.bank) * bank_prio);
        s.priority.push(p);
        s.sprio_sum.push(f64::from(p));
    }
    (s, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// spec/flux.md §9.D.
    #[test]
    fn upstream_priority_vectors() {
        let d = FluxWeights::default();
        let w_u1 = FluxWeights { urgency: 1, ..d };
        assert_eq!(flux_priority(&w_u1, 0.45321, 0, 0.0, 16), 45321);
        assert_eq!(flux_priority(&w_u1, 0.45321, 0, 0.0, 15), 45320);
        assert_eq!(flux_priority(&w_u1, 0.45321, 0, 0.0, 0), 0);
        assert_eq!(flux_priority(&w_u1, 0.45321, 0, 0.0, 31), 4_294_967_295);
        assert_eq!(flux_priority(&w_u1, 0.11345, 0, 0.0, 16), 11345);
        for (queue, expected) in [(0, 50_000), (10_000, 100_050_000)] {
            assert_eq!(flux_priority(&d, 0.5, queue, 0.0, 16), expected);
        }
        let bank_only = FluxWeights { fairshare: 0, queue: 0, bank: 100, urgency: 0 };
        for (bank, expected) in [(1.0, 100), (2.0, 200), (3.5, 350)] {
            assert_eq!(flux_priority(&bank_only, 0.5, 0, bank, 16), expected);
        }
        let urgency_only = FluxWeights { fairshare: 0, queue: 0, bank: 0, urgency: 1000 };
        assert_eq!(flux_priority(&urgency_only, 0.5, 0, 0.0, 17), 1000);
        assert_eq!(flux_priority(&urgency_only, 0.5, 0, 0.0, 15), 0);
        let fs_u = FluxWeights { fairshare: 100, queue: 0, bank: 0, urgency: 1000 };
        assert_eq!(flux_priority(&fs_u, 0.5, 0, 0.0, 18), 2050);
        assert_eq!(flux_priority(&fs_u, 0.5, 0, 0.0, 17), 1050);
        for (queue, expected) in [(100, 1_050_000), (500, 5_050_000)] {
            assert_eq!(flux_priority(&d, 0.5, queue, 0.0, 16), expected);
        }
        let bank10 = FluxWeights { bank: 10, ..d };
        assert_eq!(flux_priority(&bank10, 0.5, 0, 300.0, 16), 53_000);
        assert_eq!(flux_priority(&bank10, 0.5, 0, -5.0, 16), 49_950);
    }

    #[test]
    fn stored_values_have_six_decimals() {
        assert_eq!(stored_fairshare(1.0 / 3.0), 0.333333);
        assert_eq!(stored_fairshare(1.0), 1.0);
    }
}
