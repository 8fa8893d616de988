//! Entitlement now: what each association deserves of the cluster at one instant, by its shares,
//! given what it asks for, and how far what it holds is above or below that.
//!
//! This is the "deserved" quota of gang schedulers (KAI-scheduler's queues, Volcano's proportion
//! plugin) computed on a Slurm association tree:
//!
//! - **Capacity** per TRES: the cluster's nodes in slurm.conf (`cpu`, `mem` in MB, `node` and
//!   every GRES the nodes declare), [`SlurmConf::cluster_tres`](fairshare_engine::config::SlurmConf::cluster_tres).
//! - **Demand** of a user association per TRES: what its running jobs hold at `now` (records
//!   started at or before `now` that have not ended by then, their `tres_alloc`) plus what its
//!   pending jobs request (their `tres_req`; a job pending in several partitions counts once, with
//!   the association of the first of its partitions that has one, else the partition-less one).
//!   An account's demand is the sum of its users'.
//! - **Deserved**, per TRES independently: hierarchical weighted water-filling (max-min fairness
//!   weighted by raw shares, capped at demand). The root deserves `min(capacity, demand)`; each
//!   account's deserved is divided among its children in proportion to their shares, no child
//!   getting more than its demand, and what a saturated child leaves goes to its unsaturated
//!   siblings by their shares, until every child is saturated or the amount is spent
//!   ([`water_fill`], exact: one sort per sibling group).
//! - **Allocated**: what running jobs hold now; **over** = allocated − deserved (negative: under).
//!
//! Two rules beyond the plain water-filling:
//!
//! - Zero shares (`RawShares=0`, and users with `FairShare=parent`, which hold no shares of their
//!   own): such a child gets only what its positive-share siblings leave, split among the
//!   zero-share siblings equally (water-filled with equal weights, capped by demand). In a group
//!   of `parent` users only (an account whose users all draw on its shares), the account's
//!   deserved is therefore split equally among its users, max-min fair.
//! - `FairShare=parent` accounts: their children compete among the parent account's siblings, as
//!   Fair Tree groups them ([`fairshare_engine::tree::FsGroups`]); the `parent` account itself takes no part
//!   and deserves the sum of what its children deserve.
//!
//! Sums are consistent: the children of every account deserve together what it deserves (its
//! demand covers theirs), no association deserves more than its demand, and a child whose demand is
//! below its weighted share gets its demand.
//!
//! ```
//! use fairshare_analyses::entitlement::water_fill;
//!
//! // 10 CPUs for three siblings with shares 1:1:2 asking 1, 8 and 8: the first is saturated at 1,
//! // the 9 left split 1:2 between the others.
//! let mut out = [0.0; 3];
//! let left = water_fill(10.0, &[1.0, 8.0, 8.0], &[1.0, 1.0, 2.0], &mut out, &mut Vec::new());
//! assert_eq!((out, left), ([1.0, 3.0, 6.0], 0.0));
//! ```

pub mod render;

use std::path::Path;

use rayon::prelude::*;

use fairshare_base::error::{Error, Result};
use fairshare_engine::config::tres::{Tres, TresCounts, read_kept_counts};
use fairshare_engine::jobs::{PendingFormat, PendingJobs};
use fairshare_engine::pipeline::Site;
use fairshare_engine::tree::AssocTree;
use fairshare_engine::usage::{JobFormat, for_each_job};

/// Water-fills `amount` over one sibling group: `demand[i]` and `shares[i]` of member `i`; writes
/// what each deserves into `out` and returns what is left (when the group asks for less than
/// `amount`). Members with positive shares are served first, weighted by their shares; members
/// with zero shares share what is left equally; nobody gets more than its demand. `order` is
/// scratch space, reused between calls.
///
/// Exact, not iterative: members are sorted by demand over weight, and walked in that order,
/// saturating each whose demand is below its share of what is left, until the rest all get the
/// same amount per share. O(k log k) for k members.
///
/// # Panics
/// If the slices differ in length.
pub fn water_fill(amount: f64, demand: &[f64], shares: &[f64], out: &mut [f64], order: &mut Vec<u32>) -> f64 {
    assert!(demand.len() == shares.len() && shares.len() == out.len(), "one demand, share and output per member");
    out.fill(0.0);
    let wanting = |i: &usize| demand[*i] > 0.0;
    order.clear();
    order.extend((0..demand.len()).filter(wanting).filter(|&i| shares[i] > 0.0).map(|i| i as u32));
    let left = fill_weighted(amount, demand, |i| shares[i], order, out);
    order.clear();
    order.extend((0..demand.len()).filter(wanting).filter(|&i| shares[i] <= 0.0).map(|i| i as u32));
    fill_weighted(left, demand, |_| 1.0, order, out)
}

/// Weighted water-filling of `amount` over the members in `order` (positive weights and demands);
/// returns what is left.
fn fill_weighted(
    amount: f64,
    demand: &[f64],
    weight: impl Fn(usize) -> f64,
    order: &mut [u32],
    out: &mut [f64],
) -> f64 {
    if order.is_empty() || amount <= 0.0 {
        return amount.max(0.0);
    }
    let level = |i: u32| demand[i as usize] / weight(i as usize);
    order.sort_unstable_by(|&a, &b| level(a).total_cmp(&level(b)));
    // The weight still unsaturated from each position on, summed from the end (one rounding per
    // member instead of a running difference).
    let mut rest_weight = vec![0.0; order.len() + 1];
    for k in (0..order.len()).rev() {
        rest_weight[k] = rest_weight[k + 1] + weight(order[k] as usize);
    }
    let mut left = amount;
    for (k, &i) in order.iter().enumerate() {
        let (i, w) = (i as usize, weight(i as usize));
        // Saturated: its demand is within its share of what is left.
        if demand[i] * rest_weight[k] <= left * w {
            out[i] = demand[i];
            left = (left - demand[i]).max(0.0);
            continue;
        }
        let per_share = left / rest_weight[k];
        for &j in &order[k..] {
            let j = j as usize;
            out[j] = (per_share * weight(j)).min(demand[j]);
        }
        return 0.0;
    }
    left
}

/// What each association of `tree` deserves of `capacity` of one TRES, given each row's demand
/// (accounts holding the sums of their users'): the root `min(capacity, demand)`, then every
/// sibling group water-filled ([`water_fill`]) with its owner's deserved, owners in row order (the
/// tree is breadth-first, so level by level); `parent` accounts last, bottom-up, as the sums of
/// their children.
///
/// # Panics
/// If `demand` does not have one value per row.
pub fn deserved(tree: &AssocTree, demand: &[f64], capacity: f64) -> Vec<f64> {
    let n = tree.len();
    assert_eq!(demand.len(), n, "one demand per row");
    let groups = tree.fs_groups();
    let (users, parent_flags) = (groups.user_flags(), groups.parent_flags());
    let lifted = |r: usize| parent_flags[r] && !users[r];
    let shares = tree.raw_shares();
    let mut out = vec![0.0; n];
    out[0] = capacity.min(demand[0]).max(0.0);
    let (mut members, mut d, mut s, mut got, mut order) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for owner in 0..tree.parent_rows() {
        if out[owner] <= 0.0 {
            continue;
        }
        members.clear();
        members.extend(groups.group(owner).iter().map(|&m| m as usize).filter(|&m| !lifted(m)));
        d.clear();
        d.extend(members.iter().map(|&m| demand[m]));
        s.clear();
        s.extend(members.iter().map(|&m| if parent_flags[m] { 0.0 } else { shares[m] as f64 }));
        got.clear();
        got.resize(members.len(), 0.0);
        water_fill(out[owner], &d, &s, &mut got, &mut order);
        for (&m, &g) in members.iter().zip(&got) {
            out[m] = g;
        }
    }
    // Only `parent` accounts sum their children: every other account got its deserved in its
    // fair-share parent's group. Children sit at higher rows, so nested ones are summed first.
    if tree.has_parent_shares() {
        for r in (1..n).rev().filter(|&r| lifted(r)) {
            out[r] = tree.children(r).map(|c| out[c]).sum();
        }
    }
    out
}

/// (user, account, partition) → user association row, as slurmctld resolves a job: the
/// partition's own association, else the partition-less one.
pub struct AssocLookup<'t> {
    any: StrMap<(&'t str, &'t str), u32>,
    by_partition: StrMap<(&'t str, &'t str, &'t str), u32>,
}

/// Maps keyed by borrowed names: foldhash spreads short, similar names (`u000123`).
type StrMap<K, V> = hashbrown::HashMap<K, V, fairshare_base::hash::FixedState>;

impl<'t> AssocLookup<'t> {
    /// The user associations of `tree`.
    pub fn new(tree: &'t AssocTree) -> Self {
        let hasher = fairshare_base::hash::FixedState::default;
        let mut any = StrMap::with_capacity_and_hasher(tree.user_count(), hasher());
        let mut by_partition = StrMap::with_hasher(hasher());
        for r in 0..tree.len() {
            let Some(user) = tree.user_name(r) else { continue };
            match tree.partition(r) {
                None => any.insert((user, tree.account(r)), r as u32),
                Some(p) => by_partition.insert((user, tree.account(r), p), r as u32),
            };
        }
        AssocLookup { any, by_partition }
    }

    /// The row of `user` in `account` for a job in `partitions` (the first with its own
    /// association, else the partition-less association); `None` when there is none.
    pub fn find<'p>(&self, user: &str, account: &str, partitions: impl IntoIterator<Item = &'p str>) -> Option<u32> {
        let own = || partitions.into_iter().find_map(|p| self.by_partition.get(&(user, account, p)).copied());
        let own = if self.by_partition.is_empty() { None } else { own() };
        own.or_else(|| self.any.get(&(user, account)).copied())
    }
}

/// What the jobs read came to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobCounts {
    /// Job records read.
    pub records: u64,
    /// Of them, running at `now` and matched to an association.
    pub running: u64,
    /// Pending jobs read.
    pub pending: u64,
    /// Running or pending jobs that match no association (left out).
    pub unmatched: u64,
}

/// The entitlement of every association, per TRES. Per-TRES values are columns: `[k][row]` is
/// TRES `tres[k]` of row `row`, rows in the tree's order; `mem` is in MB.
#[derive(Clone, Debug, PartialEq)]
pub struct Entitlement {
    /// The TRES, in Slurm's order: those of the capacity that someone demands, and `cpu` always.
    pub tres: Vec<Tres>,
    /// The cluster's capacity of each.
    pub capacity: Vec<u64>,
    /// What running jobs hold at `now` (the allocated amount).
    pub running: Vec<Vec<u64>>,
    /// What pending jobs request.
    pub pending: Vec<Vec<u64>>,
    /// What each association deserves.
    pub deserved: Vec<Vec<f64>>,
    /// The evaluation instant.
    pub now: i64,
    /// What was read.
    pub counts: JobCounts,
}

impl Entitlement {
    /// The index of `tres` among [`Entitlement::tres`].
    pub fn index(&self, tres: &Tres) -> Option<usize> {
        self.tres.iter().position(|t| t == tres)
    }

    /// Demand of TRES `k` at `row`: running plus pending.
    pub fn demand(&self, k: usize, row: usize) -> u64 {
        self.running[k][row].saturating_add(self.pending[k][row])
    }

    /// Allocated minus deserved of TRES `k` at `row` (negative: below its entitlement).
    pub fn over(&self, k: usize, row: usize) -> f64 {
        self.running[k][row] as f64 - self.deserved[k][row]
    }
}

/// Adds every row's values into its parent's, bottom-up, so accounts hold their users' sums.
fn sum_up(tree: &AssocTree, values: &mut [u64]) {
    let parents = tree.parents();
    for r in (1..values.len()).rev() {
        values[parents[r] as usize] = values[parents[r] as usize].saturating_add(values[r]);
    }
}

/// Adds what the jobs of `path` running at `now` hold of each TRES of `tres` to their user
/// associations' rows (`[k][row]`, users only).
///
/// # Errors
/// A malformed record or `tres_alloc`, naming the file and line.
pub fn add_running(
    lookup: &AssocLookup<'_>,
    (path, format): (&Path, JobFormat),
    now: i64,
    tres: &[Tres],
    out: &mut [Vec<u64>],
    counts: &mut JobCounts,
) -> Result<()> {
    let names: Vec<String> = tres.iter().map(Tres::to_string).collect();
    let mut held = vec![0u64; tres.len()];
    for_each_job(path, format, &mut |job| {
        counts.records += 1;
        let running = job.skip.is_none() && job.start.is_some_and(|s| s <= now) && job.end.is_none_or(|e| e > now);
        if !running {
            return Ok(());
        }
        let Some(row) = lookup.find(job.user, job.account, [job.partition]) else {
            counts.unmatched += 1;
            return Ok(());
        };
        read_kept_counts(job.tres_alloc, tres, &names, &mut held)
            .map_err(|m| Error::input(path, job.line, format!("tres_alloc: {m}")))?;
        for (col, &h) in out.iter_mut().zip(&held) {
            col[row as usize] = col[row as usize].saturating_add(h);
        }
        counts.running += 1;
        Ok(())
    })
}

/// Adds what the pending jobs request of each of their TRES (`jobs.tres`) to their user
/// associations' rows (`[k][row]`). A request without `cpu` (or `node`) counts the job's `cpus`
/// (`min_nodes`) column.
pub fn add_pending(lookup: &AssocLookup<'_>, jobs: &PendingJobs, out: &mut [Vec<u64>], counts: &mut JobCounts) {
    let fallback: Vec<Option<&[u32]>> = (jobs.tres.iter())
        .map(|t| match t {
            t if *t == Tres::CPU => Some(jobs.cpus.as_slice()),
            t if *t == Tres::NODE => Some(jobs.min_nodes.as_slice()),
            _ => None,
        })
        .collect();
    for j in 0..jobs.len() {
        counts.pending += 1;
        let name = |id: u32| jobs.names.name(id);
        let parts = jobs.partitions(j).iter().map(|&p| name(p));
        let Some(row) = lookup.find(name(jobs.user[j]), name(jobs.account[j]), parts) else {
            counts.unmatched += 1;
            continue;
        };
        for (k, col) in out.iter_mut().enumerate() {
            let asked = match (jobs.tres_req[k][j], fallback[k]) {
                (0, Some(column)) => u64::from(column[j]),
                (n, _) => n,
            };
            col[row as usize] = col[row as usize].saturating_add(asked);
        }
    }
}

/// The entitlement of `tree`'s associations to `capacity`, from the job records running at `now`
/// (`jobs`) and the pending queue (`pending`, read keeping the capacity's TRES). Each TRES is
/// water-filled on its own, in parallel.
///
/// # Errors
/// A job record or the queue cannot be read.
pub fn entitlement(
    tree: &AssocTree,
    capacity: &TresCounts,
    jobs: Option<(&Path, JobFormat)>,
    pending: Option<(&Path, Option<PendingFormat>)>,
    now: i64,
) -> Result<Entitlement> {
    let all: Vec<Tres> = capacity.iter().filter(|(_, n)| *n > 0).map(|(t, _)| t.clone()).collect();
    let lookup = AssocLookup::new(tree);
    let mut counts = JobCounts::default();
    let mut running = vec![vec![0u64; tree.len()]; all.len()];
    if let Some(jobs) = jobs {
        add_running(&lookup, jobs, now, &all, &mut running, &mut counts)?;
    }
    let mut asked = vec![vec![0u64; tree.len()]; all.len()];
    if let Some((path, format)) = pending {
        let queue = PendingJobs::read(path, format, &all)?;
        add_pending(&lookup, &queue, &mut asked, &mut counts);
    }
    running.par_iter_mut().chain(asked.par_iter_mut()).for_each(|col| sum_up(tree, col));
    // A TRES nobody asks for is left out; `cpu` always stays.
    let keep: Vec<usize> =
        (0..all.len()).filter(|&k| all[k] == Tres::CPU || running[k][0] > 0 || asked[k][0] > 0).collect();
    let pick = |cols: Vec<Vec<u64>>| -> Vec<Vec<u64>> {
        cols.into_iter().enumerate().filter(|(k, _)| keep.contains(k)).map(|(_, c)| c).collect()
    };
    let (running, pending) = (pick(running), pick(asked));
    let tres: Vec<Tres> = keep.iter().map(|&k| all[k].clone()).collect();
    let capacity: Vec<u64> = tres.iter().map(|t| capacity.get(t)).collect();
    let deserved = (0..tres.len())
        .into_par_iter()
        .map(|k| {
            let demand: Vec<f64> =
                running[k].iter().zip(&pending[k]).map(|(&r, &p)| r.saturating_add(p) as f64).collect();
            self::deserved(tree, &demand, capacity[k] as f64)
        })
        .collect();
    Ok(Entitlement { tres, capacity, running, pending, deserved, now, counts })
}

/// The entitlement on a resolved site: its tree (without charging usage), slurm.conf's nodes as
/// the capacity, its job records at its `now` and its pending queue.
///
/// # Errors
/// No slurm.conf, or as [`entitlement`] and reading the tree.
pub fn of_site(site: &Site) -> Result<(AssocTree, Entitlement)> {
    let conf = site
        .slurm_conf
        .as_ref()
        .ok_or_else(|| Error::Usage("the capacity is slurm.conf's nodes: give --slurm-conf".into()))?;
    if conf.cluster_tres.cpu() == 0 {
        return Err(Error::Usage("slurm.conf defines no nodes: there is no capacity to share".into()));
    }
    // A tree given (or none at all) loads straight from its columns; only an SWF trace's tree
    // comes from the records the usage stage would charge.
    let tree = if site.tree.path.is_some() || site.tree.table.is_some() || site.usage.is_none() {
        site.tree.load()?
    } else {
        AssocTree::build(site.tree_input()?)?
    };
    let jobs = site.usage.as_ref().map(|u| (u.jobs.as_path(), u.format));
    let pending = site.pending.as_ref().map(|p| (p.path.as_path(), p.format));
    let e = entitlement(&tree, &conf.cluster_tres, jobs, pending, site.now)?;
    Ok((tree, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(amount: f64, demand: &[f64], shares: &[f64]) -> (Vec<f64>, f64) {
        let mut out = vec![0.0; demand.len()];
        let left = water_fill(amount, demand, shares, &mut out, &mut Vec::new());
        (out, left)
    }

    #[test]
    fn a_saturated_member_leaves_its_excess_to_the_others_by_shares() {
        assert_eq!(fill(12.0, &[2.0, 100.0, 100.0], &[1.0, 1.0, 1.0]), (vec![2.0, 5.0, 5.0], 0.0));
        assert_eq!(fill(9.0, &[100.0, 100.0], &[1.0, 2.0]), (vec![3.0, 6.0], 0.0));
        // Everyone saturated: the rest is left.
        assert_eq!(fill(10.0, &[1.0, 2.0], &[5.0, 1.0]), (vec![1.0, 2.0], 7.0));
    }

    #[test]
    fn zero_shares_get_what_positive_shares_leave_equally() {
        // Positive shares ask for 3 of 10: the two zero-share members split 7, one capped at 1.
        assert_eq!(fill(10.0, &[3.0, 1.0, 100.0], &[4.0, 0.0, 0.0]), (vec![3.0, 1.0, 6.0], 0.0));
        // Positive shares take everything.
        assert_eq!(fill(10.0, &[30.0, 5.0], &[1.0, 0.0]), (vec![10.0, 0.0], 0.0));
        // No demand, nothing.
        assert_eq!(fill(10.0, &[0.0, 0.0], &[1.0, 0.0]), (vec![0.0, 0.0], 10.0));
    }

    #[test]
    fn a_job_resolves_to_its_partitions_association_else_the_partition_less_one() {
        let text = "id,parent_id,account,user,shares,usage,partition\n\
                    1,,root,,1,0,\n2,1,a,,1,0,\n3,2,a,u,1,0,\n4,2,a,u,1,0,gpu\n";
        let tree = AssocTree::build(fairshare_engine::io::assoc_csv::parse(Path::new("t.csv"), text).unwrap()).unwrap();
        let lookup = AssocLookup::new(&tree);
        let row = |parts: &[&str]| lookup.find("u", "a", parts.iter().copied()).map(|r| tree.partition(r as usize));
        assert_eq!(row(&["gpu"]), Some(Some("gpu")));
        assert_eq!(row(&["cpu", "gpu"]), Some(Some("gpu")));
        assert_eq!(row(&["cpu"]), Some(None));
        assert_eq!(lookup.find("u", "b", ["cpu"]), None);
    }
}
