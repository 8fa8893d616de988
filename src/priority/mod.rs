//! Job priority: Slurm's priority/multifactor formula and flux-accounting's `mf_priority`.
//!
//! A job gets one row per (partition, QOS) pair, as Slurm's `priority_array` has them. Each row's
//! factors are computed column-wise in fixed-size chunks across rayon; a row reads a few tens of
//! bytes and gathers one fair-share factor, with no allocation per job.

pub mod flux;

use std::collections::HashMap;

use rayon::prelude::*;
use rustc_hash::FxBuildHasher;

use crate::config::{PriorityFlags, QosTable, SlurmConf, Tres};
use crate::error::{Error, Result};
use crate::fairshare::FairShare;
use crate::jobs::PendingJobs;
use crate::jobs::pending::NO_VAL;
use crate::tree::AssocTree;

/// Marks "none" in the per-row QOS and association columns.
pub const NONE: u32 = u32::MAX;

/// Rows per rayon task.
const CHUNK: usize = 64 * 1024;

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
    tres_total: Vec<f64>,
}

/// Scored rows, one per (job, partition, QOS), column by column. Factors are weighted.
#[derive(Clone, Debug, Default)]
pub struct Scores {
    /// Job index into the pending queue.
    pub job: Vec<u32>,
    /// Partition name id (the queue's interner).
    pub partition: Vec<u32>,
    /// QOS name id, or [`NONE`].
    pub qos: Vec<u32>,
    /// Association row, or [`NONE`] when the job's association is unknown.
    pub assoc: Vec<u32>,
    /// Weighted age factor.
    pub age: Vec<f64>,
    /// Weighted association factor.
    pub assoc_factor: Vec<f64>,
    /// Weighted fair-share factor.
    pub fairshare: Vec<f64>,
    /// Weighted job-size factor.
    pub job_size: Vec<f64>,
    /// Weighted partition factor.
    pub partition_factor: Vec<f64>,
    /// Weighted QOS factor.
    pub qos_factor: Vec<f64>,
    /// Weighted TRES terms, one column per entry of [`Weights::tres`].
    pub tres: Vec<Vec<f64>>,
    /// The job priority as the plugin stores it: clamped to [1, 2^32-1], truncated.
    pub priority: Vec<u32>,
    /// The sum as sprio recomputes it for `%Y`/`%y` (at least 1, not clamped above).
    pub sprio_sum: Vec<f64>,
}

impl Scores {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.job.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.job.is_empty()
    }
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
        let tres_keys = self.weights.tres_keys();
        if jobs.tres != tres_keys {
            return Err(Error::Usage("the pending jobs were read for other PriorityWeightTRES entries".into()));
        }
        let parts = self.partitions(jobs, &tres_keys)?;
        let qos = self.qos_table(jobs)?;
        let assoc_of = AssocIndex::new(tree, jobs);
        let assoc_prio = assoc_priorities(tree, self.flags.no_normal_assoc);

        // Rows: partitions by descending PriorityTier (stable), times each QOS.
        let mut rows_job = Vec::with_capacity(jobs.len());
        let mut rows_part = Vec::with_capacity(jobs.len());
        let mut rows_qos = Vec::with_capacity(jobs.len());
        let mut rows_assoc = Vec::with_capacity(jobs.len());
        let mut unknown = Vec::new();
        let mut ordered: Vec<u32> = Vec::new();
        for j in 0..jobs.len() {
            ordered.clear();
            ordered.extend_from_slice(jobs.partitions(j));
            ordered.sort_by_key(|&p| std::cmp::Reverse(parts[&p].tier));
            let qs = jobs.qos(j);
            let mut missing = false;
            for &p in &ordered {
                let a = assoc_of.find(jobs.user[j], jobs.account[j], p);
                missing |= a == NONE;
                for &q in if qs.is_empty() { &[NONE][..] } else { qs } {
                    rows_job.push(j as u32);
                    rows_part.push(p);
                    rows_qos.push(q);
                    rows_assoc.push(a);
                }
            }
            if missing {
                unknown.push(j);
            }
        }

        let n = rows_job.len();
        let w = &self.weights;
        let mut s = Scores {
            job: rows_job,
            partition: rows_part,
            qos: rows_qos,
            assoc: rows_assoc,
            age: vec![0.0; n],
            assoc_factor: vec![0.0; n],
            fairshare: vec![0.0; n],
            job_size: vec![0.0; n],
            partition_factor: vec![0.0; n],
            qos_factor: vec![0.0; n],
            tres: vec![vec![0.0; n]; w.tres.len()],
            priority: vec![0; n],
            sprio_sum: vec![0.0; n],
        };
        let ctx = RowContext { p: self, jobs, parts: &parts, qos: &qos, fs: &fs.fs_factor, assoc_prio: &assoc_prio };
        fill_rows(&mut s, &ctx);
        Ok((s, unknown))
    }

    fn partitions(&self, jobs: &PendingJobs, tres: &[Tres]) -> Result<HashMap<u32, PartitionInfo, FxBuildHasher>> {
        let mut out = HashMap::with_hasher(FxBuildHasher);
        for j in 0..jobs.len() {
            for &p in jobs.partitions(j) {
                if out.contains_key(&p) {
                    continue;
                }
                let name = jobs.names.name(p);
                let Some(part) = self.conf.partition(name) else {
                    return Err(Error::input(
                        &jobs.source,
                        jobs.line[j],
                        format!("partition {name:?} is not defined in slurm.conf"),
                    ));
                };
                out.insert(
                    p,
                    PartitionInfo {
                        job_factor: part.priority_job_factor.into(),
                        norm: part.norm_priority,
                        tier: part.priority_tier,
                        max_time: part.max_time.slurm_minutes(),
                        tres_total: tres.iter().map(|t| part.tres.get(t) as f64).collect(),
                    },
                );
            }
        }
        Ok(out)
    }

    /// (priority, normalized priority) per QOS name id; all 0 without a QOS dump.
    fn qos_table(&self, jobs: &PendingJobs) -> Result<HashMap<u32, (f64, f64), FxBuildHasher>> {
        let mut out = HashMap::with_hasher(FxBuildHasher);
        for j in 0..jobs.len() {
            for &q in jobs.qos(j) {
                if out.contains_key(&q) {
                    continue;
                }
                let name = jobs.names.name(q);
                let value = match self.qos {
                    None => (0.0, 0.0),
                    Some(table) => match table.get(name) {
                        Some(qos) => (qos.priority.into(), qos.norm_priority),
                        None => {
                            return Err(Error::input(
                                &jobs.source,
                                jobs.line[j],
                                format!("QOS {name:?} is not in the QOS dump"),
                            ));
                        }
                    },
                };
                out.insert(q, value);
            }
        }
        Ok(out)
    }
}

struct RowContext<'a> {
    p: &'a SlurmPriority<'a>,
    jobs: &'a PendingJobs,
    parts: &'a HashMap<u32, PartitionInfo, FxBuildHasher>,
    qos: &'a HashMap<u32, (f64, f64), FxBuildHasher>,
    fs: &'a [f64],
    assoc_prio: &'a [f64],
}

/// Fills every row's factors, chunk by chunk.
fn fill_rows(s: &mut Scores, ctx: &RowContext<'_>) {
    let n = s.len();
    let k = s.tres.len();
    // Per chunk, every output column is split at the same bounds; rayon runs chunks in parallel.
    let starts: Vec<usize> = (0..n).step_by(CHUNK).collect();
    let mut chunks: Vec<ChunkOut<'_>> = Vec::with_capacity(starts.len());
    {
        let mut age = &mut s.age[..];
        let mut assoc = &mut s.assoc_factor[..];
        let mut fsv = &mut s.fairshare[..];
        let mut js = &mut s.job_size[..];
        let mut part = &mut s.partition_factor[..];
        let mut qos = &mut s.qos_factor[..];
        let mut prio = &mut s.priority[..];
        let mut sum = &mut s.sprio_sum[..];
        let mut tres: Vec<&mut [f64]> = s.tres.iter_mut().map(|c| &mut c[..]).collect();
        for &start in &starts {
            let len = CHUNK.min(n - start);
            macro_rules! take {
                ($v:ident) => {{
                    let (a, b) = std::mem::take(&mut $v).split_at_mut(len);
                    $v = b;
                    a
                }};
            }
            let tres_chunk = tres
                .iter_mut()
                .map(|c| {
                    let (a, b) = std::mem::take(c).split_at_mut(len);
                    *c = b;
                    a
                })
                .collect();
            chunks.push(ChunkOut {
                start,
                age: take!(age),
                assoc: take!(assoc),
                fs: take!(fsv),
                js: take!(js),
                part: take!(part),
                qos: take!(qos),
                tres: tres_chunk,
                priority: take!(prio),
                sum: take!(sum),
            });
        }
    }
    let (job, partition, qos, assoc) = (&s.job, &s.partition, &s.qos, &s.assoc);
    let run = |c: &mut ChunkOut<'_>| {
        for i in 0..c.age.len() {
            let r = c.start + i;
            let f = row_factors(ctx, job[r] as usize, partition[r], qos[r], assoc[r], k);
            c.age[i] = f.age;
            c.assoc[i] = f.assoc;
            c.fs[i] = f.fs;
            c.js[i] = f.js;
            c.part[i] = f.part;
            c.qos[i] = f.qos;
            for (col, v) in c.tres.iter_mut().zip(&f.tres[..k]) {
                col[i] = *v;
            }
            c.priority[i] = f.priority;
            c.sum[i] = f.sprio_sum;
        }
    };
    if chunks.len() <= 1 {
        chunks.iter_mut().for_each(run);
    } else {
        chunks.par_iter_mut().for_each(run);
    }
}

struct ChunkOut<'a> {
    start: usize,
    age: &'a mut [f64],
    assoc: &'a mut [f64],
    fs: &'a mut [f64],
    js: &'a mut [f64],
    part: &'a mut [f64],
    qos: &'a mut [f64],
    tres: Vec<&'a mut [f64]>,
    priority: &'a mut [u32],
    sum: &'a mut [f64],
}

/// Up to this many weighted TRES are scored without allocating (Slurm sites weigh a handful).
const MAX_TRES: usize = 32;

struct RowFactors {
    age: f64,
    assoc: f64,
    fs: f64,
    js: f64,
    part: f64,
    qos: f64,
    tres: [f64; MAX_TRES],
    priority: u32,
    sprio_sum: f64,
}

/// The factors of one row, as `set_priority_factors` and `_get_priority_internal` compute them.
fn row_factors(ctx: &RowContext<'_>, j: usize, p: u32, q: u32, a: u32, k: usize) -> RowFactors {
    let sp = ctx.p;
    let w = &sp.weights;
    let jobs = ctx.jobs;
    let part = &ctx.parts[&p];
    let flags = sp.flags;

    let age = match (w.age != 0.0, if flags.accrue_always { Some(jobs.submit_time[j]) } else { jobs.accrue_time[j] }) {
        (true, Some(use_time)) => age_factor(sp.now, use_time, sp.max_age),
        _ => 0.0,
    };
    let fs = if a != NONE && w.fairshare != 0.0 { ctx.fs[a as usize] } else { 0.0 };
    let js = if w.job_size != 0.0 {
        let time_limit = if jobs.time_limit[j] != NO_VAL { jobs.time_limit[j] } else { part.max_time };
        job_size_factor(sp, jobs.min_nodes[j], jobs.cpus[j], time_limit)
    } else {
        0.0
    };
    let part_f = if part.job_factor != 0.0 && w.partition != 0.0 {
        if flags.no_normal_part { part.job_factor } else { part.norm }
    } else {
        0.0
    };
    let assoc_f = if a != NONE && w.assoc != 0.0 { ctx.assoc_prio[a as usize] } else { 0.0 };
    let qos_f = match (q != NONE && w.qos != 0.0).then(|| ctx.qos[&q]) {
        Some((prio, norm)) if prio != 0.0 => {
            if flags.no_normal_qos {
                prio
            } else {
                norm
            }
        }
        _ => 0.0,
    };
    let mut tres = [0.0; MAX_TRES];
    let mut tres_sum = 0.0;
    for (i, (_, weight)) in w.tres.iter().enumerate().take(k.min(MAX_TRES)) {
        let value = jobs.tres_req[i][j] as f64;
        let total = part.tres_total[i];
        let factor = if flags.no_normal_tres {
            value
        } else if value != 0.0 && total != 0.0 {
            value / total
        } else {
            0.0
        };
        tres[i] = factor * weight;
        tres_sum += tres[i];
    }
    let (age, assoc, fs, js, part_w, qos) =
        (age * w.age, assoc_f * w.assoc, fs * w.fairshare, js * w.job_size, part_f * w.partition, qos_f * w.qos);
    let site = f64::from(jobs.site_factor[j]);
    let nice = f64::from(jobs.nice[j]);
    // The plugin's order (_get_priority_internal) ...
    let total = age + assoc + fs + js + part_w + qos + tres_sum + site - nice;
    // ... and sprio's (get_priority_from_factors), which adds the TRES terms last.
    let mut sprio_sum = age + assoc + fs + js + part_w + qos + site - nice;
    for t in &tres[..k.min(MAX_TRES)] {
        if *t != 0.0 {
            sprio_sum += t;
        }
    }
    RowFactors {
        age,
        assoc,
        fs,
        js,
        part: part_w,
        qos,
        tres,
        priority: clamp_priority(total),
        sprio_sum: sprio_sum.max(1.0),
    }
}

/// The age factor: seconds since `use_time` over PriorityMaxAge, saturating at 1.
///
/// Slurm keeps the difference in a `uint32_t`, so it is truncated the same way here.
///
/// # Example
/// ```
/// assert_eq!(fairshare::priority::age_factor(1000, 400, 1200), 0.5);
/// assert_eq!(fairshare::priority::age_factor(1000, 2000, 1200), 0.0); // accrues in the future
/// assert_eq!(fairshare::priority::age_factor(1000, 0, 0), 1.0);        // PriorityMaxAge=0
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
        let mut js = f64::from(nodes.wrapping_sub(min_nodes)) / f64::from(nodes);
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
/// use fairshare::priority::clamp_priority;
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

/// (user, account, partition) → association row, in the queue's name ids.
struct AssocIndex {
    map: HashMap<(u32, u32, u32), u32, FxBuildHasher>,
}

impl AssocIndex {
    fn new(tree: &AssocTree, jobs: &PendingJobs) -> Self {
        let mut map = HashMap::with_hasher(FxBuildHasher);
        for r in 0..tree.len() {
            let Some(user) = tree.user_name(r).and_then(|u| jobs.names.get(u)) else { continue };
            let Some(account) = jobs.names.get(tree.account(r)) else { continue };
            let part = match tree.partition(r) {
                None => NONE,
                Some(p) => match jobs.names.get(p) {
                    Some(id) => id,
                    None => continue,
                },
            };
            map.insert((user, account, part), r as u32);
        }
        AssocIndex { map }
    }

    /// The partition's own association, else the partition-less one, as slurmctld resolves it.
    fn find(&self, user: u32, account: u32, partition: u32) -> u32 {
        self.map
            .get(&(user, account, partition))
            .or_else(|| self.map.get(&(user, account, NONE)))
            .copied()
            .unwrap_or(NONE)
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
    fn clamps() {
        assert_eq!(clamp_priority(0.999), 1);
        assert_eq!(clamp_priority(4_294_967_295.7), u32::MAX);
        assert_eq!(clamp_priority(4_294_967_294.9), 4_294_967_294);
    }
}
