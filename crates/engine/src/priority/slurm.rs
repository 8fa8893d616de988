//! Slurm's `priority/multifactor` formula.
//!
//! A job gets one row per (partition, QOS) pair, as Slurm's `priority_array` has them. Rows are
//! computed in tasks of consecutive jobs ([`fairshare_base::parallel`] cuts them by row count); a row reads
//! a few tens of bytes and gathers one fair-share factor, with no allocation per job.

use std::borrow::Cow;

use super::{NONE, Scores};
use crate::config::{PriorityFlags, QosTable, SlurmConf, Tres};
use crate::jobs::pending::{NO_VAL, user_associations};
use crate::jobs::{PendingJobs, TreeNames};
use crate::pass::FairShare;
use crate::tree::AssocTree;
use fairshare_base::error::{Error, Result};
use fairshare_base::parallel;

/// The weights and flags of `priority/multifactor`.
#[derive(Clone, Debug)]
pub struct Weights {
    /// PriorityWeightAge.
    pub age: f64,
    /// PriorityWeightAssoc.
    pub assoc: f64,
    /// PriorityWeightFairshare.
    pub fairshare: f64,
    /// PriorityWeightJobSize.
    pub job_size: f64,
    /// PriorityWeightPartition.
    pub partition: f64,
    /// PriorityWeightQOS.
    pub qos: f64,
    /// PriorityWeightTRES, nonzero entries in Slurm's TRES order.
    pub tres: Vec<(Tres, f64)>,
}

impl Weights {
    /// The weights configured in `conf`.
    pub fn from_conf(conf: &SlurmConf) -> Self {
        Weights {
            age: conf.priority_weight_age.into(),
            assoc: conf.priority_weight_assoc.into(),
            fairshare: conf.priority_weight_fairshare.into(),
            job_size: conf.priority_weight_job_size.into(),
            partition: conf.priority_weight_partition.into(),
            qos: conf.priority_weight_qos.into(),
            tres: conf
                .priority_weight_tres
                .as_ref()
                .map(|w| w.iter().filter(|(_, v)| *v != 0.0).map(|(t, v)| (t.clone(), v)).collect())
                .unwrap_or_default(),
        }
    }

    /// The TRES whose requested counts the scorer needs.
    pub fn tres_keys(&self) -> Vec<Tres> {
        self.tres.iter().map(|(t, _)| t.clone()).collect()
    }
}

/// A partition as the scorer sees it.
#[derive(Clone, Debug)]
struct PartitionInfo {
    job_factor: f64,
    norm: f64,
    tier: u16,
    max_time: u32,
    tres_total: [f64; MAX_TRES],
}

/// Everything the multifactor formula reads besides the job.
pub struct SlurmPriority<'a> {
    /// Weights.
    pub weights: Weights,
    /// PriorityFlags.
    pub flags: PriorityFlags,
    /// PriorityFavorSmall.
    pub favor_small: bool,
    /// PriorityMaxAge in seconds.
    pub max_age: u32,
    /// Total CPUs of the cluster.
    pub cluster_cpus: u32,
    /// Active node records.
    pub node_count: u32,
    /// The time of the computation.
    pub now: i64,
    conf: &'a SlurmConf,
    qos: Option<&'a QosTable>,
}

impl<'a> SlurmPriority<'a> {
    /// The formula's settings from `conf` (and QOS priorities from `qos`, if given).
    pub fn new(conf: &'a SlurmConf, qos: Option<&'a QosTable>, now: i64) -> Self {
        SlurmPriority {
            weights: Weights::from_conf(conf),
            flags: conf.priority_flags,
            favor_small: conf.priority_favor_small,
            max_age: conf.priority_max_age,
            cluster_cpus: conf.cluster_cpus.min(u32::MAX.into()) as u32,
            node_count: conf.node_count.min(u32::MAX.into()) as u32,
            now,
            conf,
            qos,
        }
    }

    /// Scores every pending job against the association tree and its fair-share result.
    ///
    /// Returns the scores and the jobs whose association is unknown (scored with fair-share 0).
    ///
    /// # Errors
    /// A job naming a partition that slurm.conf does not define, or a QOS missing from the QOS
    /// dump, with the job's line.
    pub fn score(&self, jobs: &PendingJobs, tree: &AssocTree, fs: &FairShare) -> Result<(Scores, Vec<usize>)> {
        let mut scores = Scores::default();
        let unknown = self.score_into(jobs, tree, fs, &mut scores)?;
        Ok((scores, unknown))
    }

    /// [`Self::score`] into `s`, reusing its columns' memory (a site scoring its queue every few
    /// minutes, or a benchmark, keeps one `Scores`).
    ///
    /// # Errors
    /// As [`Self::score`].
    pub fn score_into(
        &self,
        jobs: &PendingJobs,
        tree: &AssocTree,
        fs: &FairShare,
        s: &mut Scores,
    ) -> Result<Vec<usize>> {
        let queue = self.prepare(jobs, tree, fs)?;
        Ok(queue.score_jobs(0..jobs.len(), s))
    }

    /// Checks the queue's partitions and QOS and indexes the associations, so that
    /// [`PreparedQueue::score_jobs`] can score it a slice at a time (a large queue then streams to
    /// its output in bounded memory).
    ///
    /// # Errors
    /// As [`Self::score`].
    pub fn prepare<'q>(
        &'q self,
        jobs: &'q PendingJobs,
        tree: &AssocTree,
        fs: &'q FairShare,
    ) -> Result<PreparedQueue<'q>> {
        self.prepare_with(jobs, tree, fs, None)
    }

    /// [`Self::prepare`] for a queue read against `names`, the names of `tree`
    /// ([`PendingJobs::read_with`]): the associations are indexed by the ids `names` gave them,
    /// without a lookup per association (at 10^6 associations, most of the cost of preparing
    /// each row group of a streamed queue). Jobs read otherwise are indexed as [`Self::prepare`]
    /// does.
    ///
    /// # Errors
    /// As [`Self::prepare`].
    pub fn prepare_with<'q>(
        &'q self,
        jobs: &'q PendingJobs,
        tree: &AssocTree,
        fs: &'q FairShare,
        names: Option<&TreeNames>,
    ) -> Result<PreparedQueue<'q>> {
        let assoc = match names {
            Some(names) if names.named(tree, &jobs.names) => self.associations(tree, fs, names),
            _ => self.associations_of(tree, fs, &user_associations(tree, &jobs.names), jobs.names.len()),
        };
        self.prepared(jobs, fs, Cow::Owned(assoc))
    }

    /// The associations of `tree`, with the factors of `fs`, indexed for queues read against
    /// `names` (its names): made once for every wave of a streamed queue
    /// ([`Self::prepare_shared`]), as indexed by name id they take a few hundred MB at 10^7
    /// associations.
    pub fn associations(&self, tree: &AssocTree, fs: &FairShare, names: &TreeNames) -> QueueAssociations {
        self.associations_of(tree, fs, names.by_user(), names.names_len())
    }

    /// The associations `by_user` ([`user_associations`]) of `tree`, over `names` name ids.
    fn associations_of(
        &self,
        tree: &AssocTree,
        fs: &FairShare,
        by_user: &[(u32, u32, u32, u32)],
        names: usize,
    ) -> QueueAssociations {
        let prio = assoc_priorities(tree, self.flags.no_normal_assoc);
        QueueAssociations { index: AssocIndex::new(by_user, names, &fs.fs_factor, &prio), prio }
    }

    /// [`Self::prepare_with`] with `assoc`, made by [`Self::associations`] for the same `tree`,
    /// `fs` and `names`; a queue not read against `names` is indexed on its own.
    ///
    /// # Errors
    /// As [`Self::prepare`].
    pub fn prepare_shared<'q>(
        &'q self,
        jobs: &'q PendingJobs,
        tree: &AssocTree,
        fs: &'q FairShare,
        names: &TreeNames,
        assoc: &'q QueueAssociations,
    ) -> Result<PreparedQueue<'q>> {
        match names.named(tree, &jobs.names) {
            true => self.prepared(jobs, fs, Cow::Borrowed(assoc)),
            false => self.prepare_with(jobs, tree, fs, None),
        }
    }

    /// The queue's partitions and QOS checked, with its associations `assoc`.
    fn prepared<'q>(
        &'q self,
        jobs: &'q PendingJobs,
        fs: &'q FairShare,
        assoc: Cow<'q, QueueAssociations>,
    ) -> Result<PreparedQueue<'q>> {
        let tres_keys = self.weights.tres_keys();
        if jobs.tres != tres_keys {
            return Err(Error::Usage("the pending jobs were read for other PriorityWeightTRES entries".into()));
        }
        if tres_keys.len() > MAX_TRES {
            return Err(Error::Usage(format!("more than {MAX_TRES} PriorityWeightTRES entries")));
        }
        let (part_slot, parts) = self.partitions(jobs, &tres_keys)?;
        let qos = self.qos_table(jobs)?;
        Ok(PreparedQueue { p: self, jobs, part_slot, parts, qos, assoc, fs: &fs.fs_factor })
    }

    /// The settings of every partition the queue names, and each name id's slot among them
    /// ([`NONE`] for names that are not partitions).
    fn partitions(&self, jobs: &PendingJobs, tres: &[Tres]) -> Result<(Vec<u32>, Vec<PartitionInfo>)> {
        let mut slot = vec![NONE; jobs.names.len()];
        let mut infos = Vec::new();
        for j in 0..jobs.len() {
            for &p in jobs.partitions(j) {
                if slot[p as usize] != NONE {
                    continue;
                }
                let name = jobs.names.name(p);
                let Some(part) = self.conf.partition(name) else {
                    return Err(jobs.error_at(j, format!("partition {name:?} is not defined in slurm.conf")));
                };
                let mut tres_total = [0.0; MAX_TRES];
                for (t_slot, t) in tres_total.iter_mut().zip(tres) {
                    *t_slot = part.tres.get(t) as f64;
                }
                slot[p as usize] = infos.len() as u32;
                infos.push(PartitionInfo {
                    job_factor: part.priority_job_factor.into(),
                    norm: part.norm_priority,
                    tier: part.priority_tier,
                    max_time: part.max_time.slurm_minutes(),
                    tres_total,
                });
            }
        }
        Ok((slot, infos))
    }

    /// (priority, normalized priority) by QOS name id; all 0 without a QOS dump.
    fn qos_table(&self, jobs: &PendingJobs) -> Result<Vec<(f64, f64)>> {
        let mut out = vec![(0.0, 0.0); jobs.names.len()];
        let mut seen = vec![false; jobs.names.len()];
        for j in 0..jobs.len() {
            for &q in jobs.qos(j) {
                if std::mem::replace(&mut seen[q as usize], true) {
                    continue;
                }
                let name = jobs.names.name(q);
                if let Some(table) = self.qos {
                    let Some(qos) = table.get(name) else {
                        return Err(jobs.error_at(j, format!("QOS {name:?} is not in the QOS dump")));
                    };
                    out[q as usize] = (qos.priority.into(), qos.norm_priority);
                }
            }
        }
        Ok(out)
    }
}

/// A queue checked and indexed for scoring ([`SlurmPriority::prepare`]).
pub struct PreparedQueue<'a> {
    p: &'a SlurmPriority<'a>,
    jobs: &'a PendingJobs,
    part_slot: Vec<u32>,
    parts: Vec<PartitionInfo>,
    qos: Vec<(f64, f64)>,
    assoc: Cow<'a, QueueAssociations>,
    fs: &'a [f64],
}

/// The associations as the scoring kernel finds a job's: indexed by name id, with their
/// association priorities ([`SlurmPriority::associations`]).
#[derive(Clone)]
pub struct QueueAssociations {
    index: AssocIndex,
    prio: Vec<f64>,
}

impl PreparedQueue<'_> {
    /// Scores the jobs in `range` into `s` (resized to their rows, memory reused): one row per
    /// (partition, QOS) of each job, jobs in order. Returns the jobs whose association is unknown.
    ///
    /// # Panics
    /// If `range` is not within the queue.
    pub fn score_jobs(&self, range: std::ops::Range<usize>, s: &mut Scores) -> Vec<usize> {
        let jobs = self.jobs;
        assert!(range.end <= jobs.len(), "jobs {range:?} are not all in the queue");
        // A job has one row per partition and QOS; rows of a job are contiguous.
        let mut offsets = Vec::with_capacity(range.len() + 1);
        offsets.push(0usize);
        for j in range.clone() {
            offsets.push(offsets.last().copied().unwrap_or(0) + jobs.partitions(j).len() * jobs.qos(j).len().max(1));
        }
        let n = offsets.last().copied().unwrap_or(0);
        // Every row is overwritten below; sizing only touches new memory.
        fn size<T: Copy + Default>(v: &mut Vec<T>, n: usize) {
            v.resize(n, T::default());
        }
        size(&mut s.job, n);
        size(&mut s.partition, n);
        size(&mut s.qos, n);
        size(&mut s.assoc, n);
        size(&mut s.age, n);
        size(&mut s.assoc_factor, n);
        size(&mut s.fairshare, n);
        size(&mut s.job_size, n);
        size(&mut s.partition_factor, n);
        size(&mut s.qos_factor, n);
        s.tres.resize_with(self.p.weights.tres.len(), Vec::new);
        for c in &mut s.tres {
            size(c, n);
        }
        size(&mut s.priority, n);
        size(&mut s.sprio_sum, n);
        fill_rows(s, range.start, &offsets, self)
    }
}

/// The output columns of a run of rows.
struct RowsOut<'a> {
    job: &'a mut [u32],
    partition: &'a mut [u32],
    qos: &'a mut [u32],
    assoc: &'a mut [u32],
    age: &'a mut [f64],
    assoc_factor: &'a mut [f64],
    fairshare: &'a mut [f64],
    job_size: &'a mut [f64],
    partition_factor: &'a mut [f64],
    qos_factor: &'a mut [f64],
    tres: Vec<&'a mut [f64]>,
    priority: &'a mut [u32],
    sprio_sum: &'a mut [f64],
}

impl<'a> RowsOut<'a> {
    fn of(s: &'a mut Scores) -> Self {
        RowsOut {
            job: &mut s.job,
            partition: &mut s.partition,
            qos: &mut s.qos,
            assoc: &mut s.assoc,
            age: &mut s.age,
            assoc_factor: &mut s.assoc_factor,
            fairshare: &mut s.fairshare,
            job_size: &mut s.job_size,
            partition_factor: &mut s.partition_factor,
            qos_factor: &mut s.qos_factor,
            tres: s.tres.iter_mut().map(|c| &mut c[..]).collect(),
            priority: &mut s.priority,
            sprio_sum: &mut s.sprio_sum,
        }
    }

    /// Splits off the first `len` rows of every column.
    fn split_off_front(&mut self, len: usize) -> RowsOut<'a> {
        fn cut<'a, T>(v: &mut &'a mut [T], len: usize) -> &'a mut [T] {
            let (a, b) = std::mem::take(v).split_at_mut(len);
            *v = b;
            a
        }
        RowsOut {
            job: cut(&mut self.job, len),
            partition: cut(&mut self.partition, len),
            qos: cut(&mut self.qos, len),
            assoc: cut(&mut self.assoc, len),
            age: cut(&mut self.age, len),
            assoc_factor: cut(&mut self.assoc_factor, len),
            fairshare: cut(&mut self.fairshare, len),
            job_size: cut(&mut self.job_size, len),
            partition_factor: cut(&mut self.partition_factor, len),
            qos_factor: cut(&mut self.qos_factor, len),
            tres: self.tres.iter_mut().map(|c| cut(c, len)).collect(),
            priority: cut(&mut self.priority, len),
            sprio_sum: cut(&mut self.sprio_sum, len),
        }
    }
}

/// Fills the rows of jobs `first..first + offsets.len() - 1`, whose rows start at `offsets`
/// (relative to `first`), in tasks of consecutive jobs (each task owns its rows' slices), and
/// returns the jobs without an association, in job order.
fn fill_rows(s: &mut Scores, first: usize, offsets: &[usize], ctx: &PreparedQueue<'_>) -> Vec<usize> {
    let mut all = RowsOut::of(s);
    let mut tasks: Vec<(std::ops::Range<usize>, RowsOut<'_>)> =
        parallel::task_runs(0..offsets.len() - 1, |j| offsets[j])
            .into_iter()
            .map(|(jobs, rows)| (first + jobs.start..first + jobs.end, all.split_off_front(rows)))
            .collect();
    let unknown = parallel::map_tasks(&mut tasks, |(range, out)| {
        // The association lookup is a cache miss per job: gathered first in a tight loop, the
        // misses overlap instead of stalling the long per-row body one at a time.
        let near: Vec<Single> = ctx.jobs.user[range.clone()].iter().map(|&u| ctx.assoc.index.single(u)).collect();
        let mut unknown = Vec::new();
        let mut ordered: Vec<u32> = Vec::new();
        let mut r = 0;
        for (j, near) in range.clone().zip(near) {
            if fill_job(ctx, j, near, out, &mut r, &mut ordered) {
                unknown.push(j);
            }
        }
        unknown
    });
    unknown.concat()
}

/// Writes job `j`'s rows from row `*r` on: partitions by descending PriorityTier (stable), each
/// times each QOS. `near` is the job user's entry of [`AssocIndex::single`]. Returns true when the
/// job has no association in some partition.
fn fill_job(
    ctx: &PreparedQueue<'_>,
    j: usize,
    near: Single,
    out: &mut RowsOut<'_>,
    r: &mut usize,
    ordered: &mut Vec<u32>,
) -> bool {
    let jobs = ctx.jobs;
    let parts = jobs.partitions(j);
    let parts: &[u32] = if parts.len() == 1 {
        parts
    } else {
        ordered.clear();
        ordered.extend_from_slice(parts);
        ordered.sort_by_key(|&p| std::cmp::Reverse(ctx.parts[ctx.part_slot[p as usize] as usize].tier));
        ordered
    };
    let qs = jobs.qos(j);
    let qs: &[u32] = if qs.is_empty() { &[NONE] } else { qs };
    let mut missing = false;
    for &p in parts {
        let a = ctx.assoc.index.find(near, jobs.user[j], jobs.account[j], p, ctx.fs, &ctx.assoc.prio);
        missing |= a.row == NONE;
        for &q in qs {
            write_row(ctx, j, p, q, a, out, *r);
            *r += 1;
        }
    }
    missing
}

/// Up to this many weighted TRES are scored without allocating (Slurm sites weigh a handful).
const MAX_TRES: usize = 32;

/// One row's factors, as `set_priority_factors` and `_get_priority_internal` compute them.
fn write_row(ctx: &PreparedQueue<'_>, j: usize, p: u32, q: u32, a: Resolved, out: &mut RowsOut<'_>, r: usize) {
    let sp = ctx.p;
    let w = &sp.weights;
    let jobs = ctx.jobs;
    let part = &ctx.parts[ctx.part_slot[p as usize] as usize];
    let flags = sp.flags;

    let use_time = if flags.accrue_always { Some(jobs.submit_time[j]) } else { jobs.accrue_time[j] };
    let age = match use_time {
        Some(t) if w.age != 0.0 => age_factor(sp.now, t, sp.max_age),
        _ => 0.0,
    };
    let fs = if w.fairshare != 0.0 { a.fs } else { 0.0 };
    let js = if w.job_size != 0.0 {
        let time_limit = if jobs.time_limit[j] != NO_VAL { jobs.time_limit[j] } else { part.max_time };
        job_size_factor(sp, jobs.min_nodes[j], jobs.cpus[j], time_limit)
    } else {
        0.0
    };
    let part_f = match (part.job_factor != 0.0 && w.partition != 0.0, flags.no_normal_part) {
        (false, _) => 0.0,
        (true, true) => part.job_factor,
        (true, false) => part.norm,
    };
    let assoc_f = if w.assoc != 0.0 { a.prio } else { 0.0 };
    let qos_f = match (q != NONE && w.qos != 0.0).then(|| ctx.qos[q as usize]) {
        Some((prio, _)) if prio != 0.0 && flags.no_normal_qos => prio,
        Some((prio, norm)) if prio != 0.0 => norm,
        _ => 0.0,
    };
    let (age, assoc, fs, js, part_w, qos) =
        (age * w.age, assoc_f * w.assoc, fs * w.fairshare, js * w.job_size, part_f * w.partition, qos_f * w.qos);
    let site = f64::from(jobs.site_factor[j]);
    let nice = f64::from(jobs.nice[j]);
    // sprio's order (get_priority_from_factors) adds the TRES terms last ...
    let mut sprio_sum = age + assoc + fs + js + part_w + qos + site - nice;
    let mut tres_sum = 0.0;
    for (i, ((_, weight), col)) in w.tres.iter().zip(out.tres.iter_mut()).enumerate() {
        let value = jobs.tres_req[i][j] as f64;
        let total = part.tres_total[i];
        let factor = if flags.no_normal_tres {
            value
        } else if value != 0.0 && total != 0.0 {
            value / total
        } else {
            0.0
        };
        let term = factor * weight;
        col[r] = term;
        tres_sum += term;
        if term != 0.0 {
            sprio_sum += term;
        }
    }
    // ... the plugin's (_get_priority_internal) adds their sum before the site factor and nice.
    let total = age + assoc + fs + js + part_w + qos + tres_sum + site - nice;
    out.job[r] = j as u32;
    out.partition[r] = p;
    out.qos[r] = q;
    out.assoc[r] = a.row;
    out.age[r] = age;
    out.assoc_factor[r] = assoc;
    out.fairshare[r] = fs;
    out.job_size[r] = js;
    out.partition_factor[r] = part_w;
    out.qos_factor[r] = qos;
    out.priority[r] = clamp_priority(total);
    out.sprio_sum[r] = sprio_sum.max(1.0);
}

/// The age factor: seconds since `use_time` over PriorityMaxAge, saturating at 1.
///
/// Slurm keeps the difference in a `uint32_t`, so it is truncated the same way here.
///
/// # Example
/// ```
/// assert_eq!(fairshare_engine::priority::age_factor(1000, 400, 1200), 0.5);
/// assert_eq!(fairshare_engine::priority::age_factor(1000, 2000, 1200), 0.0); // accrues in the future
/// assert_eq!(fairshare_engine::priority::age_factor(1000, 0, 0), 1.0);        // PriorityMaxAge=0
/// ```
pub fn age_factor(now: i64, use_time: i64, max_age: u32) -> f64 {
    let diff = if now > use_time { (now - use_time) as u32 } else { 0 };
    if diff < max_age { f64::from(diff) / f64::from(max_age) } else { 1.0 }
}

/// The job-size factor in [0, 1] for the three modes (favor large, PriorityFavorSmall,
/// SMALL_RELATIVE_TO_TIME), with Slurm's unsigned arithmetic.
fn job_size_factor(sp: &SlurmPriority<'_>, min_nodes: u32, cpu_cnt: u32, time_limit: u32) -> f64 {
    let (nodes, cpus) = (sp.node_count, sp.cluster_cpus);
    let js = if sp.flags.small_relative_to_time {
        let mut js = f64::from(min_nodes) * f64::from(cpus) / f64::from(nodes);
        if f64::from(cpu_cnt) > js {
            js = f64::from(cpu_cnt);
        }
        js /= f64::from(time_limit);
        js /= f64::from(cpus);
        if sp.favor_small { 1.0 - js } else { js }
    } else if sp.favor_small {
        // A job asking for at least every node gets no node term; the CPU term below still
        // wraps in Slurm's unsigned arithmetic when it asks for more CPUs than the cluster has.
        let mut js = if nodes > min_nodes { f64::from(nodes - min_nodes) / f64::from(nodes) } else { 0.0 };
        if cpu_cnt != 0 {
            js += f64::from(cpus.wrapping_sub(cpu_cnt)) / f64::from(cpus);
            js /= 2.0;
        }
        js
    } else {
        let mut js = f64::from(min_nodes) / f64::from(nodes);
        if cpu_cnt != 0 {
            js += f64::from(cpu_cnt) / f64::from(cpus);
            js /= 2.0;
        }
        js
    };
    js.clamp(0.0, 1.0)
}

/// The final priority: at least 1 (0 is for held jobs), at most 2^32-1, truncated.
///
/// # Example
/// ```
/// use fairshare_engine::priority::clamp_priority;
/// assert_eq!(clamp_priority(1217.9), 1217);
/// assert_eq!(clamp_priority(-5.0), 1);
/// assert_eq!(clamp_priority(1e12), u32::MAX);
/// ```
pub fn clamp_priority(p: f64) -> u32 {
    if p < 1.0 {
        1
    } else if p > f64::from(u32::MAX) {
        u32::MAX
    } else {
        p as u32
    }
}

/// Association priority factors per row: the priority inherited down the tree, normalized by the
/// largest one (`NO_NORMAL_ASSOC`: the raw priority).
fn assoc_priorities(tree: &AssocTree, raw: bool) -> Vec<f64> {
    let parents = tree.parents();
    let mut prio = vec![0u32; tree.len()];
    for r in 0..tree.len() {
        prio[r] = tree.priority(r).unwrap_or(if r == 0 { 0 } else { prio[parents[r] as usize] });
    }
    let max = prio.iter().copied().max().unwrap_or(0);
    prio.iter()
        .map(|&p| {
            if raw {
                f64::from(p)
            } else if max == 0 {
                0.0
            } else {
                f64::from(p) / f64::from(max)
            }
        })
        .collect()
}

/// (user, account, partition) → association, in the queue's name ids. A user with a single
/// partition-less association (most users) has it inline with its factors, so resolving a job is
/// one cache line; others go through a compact per-user list. Names past those indexed (a
/// queue's names that are not the tree's) have no association.
#[derive(Clone)]
struct AssocIndex {
    single: Vec<Single>,
    start: Vec<u32>,
    entries: Vec<(u32, u32, u32)>,
}

/// A user's only association, with the factors a job gathers from it.
#[derive(Clone, Copy)]
struct Single {
    account: u32,
    row: u32,
    fs: f64,
    prio: f64,
}

/// What a job gathers from its association.
#[derive(Clone, Copy)]
struct Resolved {
    row: u32,
    fs: f64,
    prio: f64,
}

const UNRESOLVED: Resolved = Resolved { row: NONE, fs: 0.0, prio: 0.0 };

/// No single association.
const NO_SINGLE: Single = Single { account: NONE, row: NONE, fs: 0.0, prio: 0.0 };

impl AssocIndex {
    /// The index of `by_user` ([`user_associations`]) over `names` name ids.
    fn new(by_user: &[(u32, u32, u32, u32)], names: usize, fs: &[f64], prio: &[f64]) -> Self {
        let mut start = vec![0u32; names + 1];
        for &(user, ..) in by_user {
            start[user as usize + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut single = vec![NO_SINGLE; names];
        for (user, s) in single.iter_mut().enumerate() {
            let own = &by_user[start[user] as usize..start[user + 1] as usize];
            if let [(_, account, NONE, row)] = own {
                *s = Single { account: *account, row: *row, fs: fs[*row as usize], prio: prio[*row as usize] };
            }
        }
        AssocIndex { single, start, entries: by_user.iter().map(|&(_, a, p, r)| (a, p, r)).collect() }
    }

    /// `user`'s single association ([`NONE`] as its account when it has none, or several).
    fn single(&self, user: u32) -> Single {
        self.single.get(user as usize).copied().unwrap_or(NO_SINGLE)
    }

    /// The partition's own association, else the partition-less one, as slurmctld resolves it.
    /// `s` is `self.single(user)`, gathered by the caller.
    fn find(&self, s: Single, user: u32, account: u32, partition: u32, fs: &[f64], prio: &[f64]) -> Resolved {
        if s.account == account {
            return Resolved { row: s.row, fs: s.fs, prio: s.prio };
        }
        let Some(&[from, to]) = self.start.get(user as usize..user as usize + 2) else { return UNRESOLVED };
        let own = &self.entries[from as usize..to as usize];
        let pick = |p: u32| own.iter().find(|e| e.0 == account && e.1 == p).map(|e| e.2);
        match pick(partition).or_else(|| pick(NONE)) {
            Some(row) => Resolved { row, fs: fs[row as usize], prio: prio[row as usize] },
            None => UNRESOLVED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn age_uses_unsigned_seconds() {
        assert_eq!(age_factor(604_800, 0, 604_800), 1.0);
        assert_eq!(age_factor(302_400, 0, 604_800), 0.5);
        // A difference beyond u32 wraps as in Slurm's uint32_t.
        assert_eq!(age_factor(1 << 32, 0, 604_800), 0.0);
    }

    #[test]
    fn favor_small_node_term_is_zero_when_a_job_asks_for_every_node() {
        let conf = SlurmConf { cluster_cpus: 40, node_count: 10, priority_favor_small: true, ..SlurmConf::default() };
        let sp = SlurmPriority::new(&conf, None, 0);
        // (10 - 2)/10 for the nodes, (40 - 8)/40 for the CPUs, averaged.
        assert_eq!(job_size_factor(&sp, 2, 8, 60), (0.8 + 0.8) / 2.0);
        // More nodes than the cluster has: no node term (not a wrapped, saturated one).
        assert_eq!(job_size_factor(&sp, 20, 20, 60), (0.0 + 0.5) / 2.0);
        assert_eq!(job_size_factor(&sp, 10, 0, 60), 0.0);
    }

    #[test]
    fn clamps() {
        assert_eq!(clamp_priority(0.999), 1);
        assert_eq!(clamp_priority(4_294_967_295.7), u32::MAX);
        assert_eq!(clamp_priority(4_294_967_294.9), 4_294_967_294);
    }
}
