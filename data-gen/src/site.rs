//! A whole synthetic site: the tree's companions `slurm.conf`, a QOS dump and a pending queue.
//!
//! The configuration follows the seed site's priority (a large fair-share weight, an age weight that
//! saturates at 7 days) plus job size, partition, QOS and TRES weights, so every factor is exercised.
//! The queue draws users from the tree's user associations, so every job resolves.

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use fairshare_base::Result;
use fairshare_engine::tree::TreeInput;

use crate::SplitMix64;
use crate::batch_writer::{BATCH, BatchWriter};

/// The site's slurm.conf: 1,000 CPU nodes and 100 GPU nodes in four partitions, billed by TRES
/// (memory priced so a node's memory costs what its cores cost; the requeue partition at half rate).
pub const SLURM_CONF: &str = "\
ClusterName=datagen
PriorityType=priority/multifactor
PriorityFlags=NO_FAIR_TREE
PriorityWeightFairshare=20000000
PriorityWeightAge=10000000
PriorityWeightJobSize=1000
PriorityWeightPartition=1000
PriorityWeightQOS=100000
PriorityWeightTRES=CPU=1000,Mem=500,GRES/gpu=5000
PriorityMaxAge=7-0
PriorityDecayHalfLife=7-0
GresTypes=gpu
NodeName=c[0001-1000] CPUs=64 RealMemory=256000
NodeName=g[001-100] CPUs=64 RealMemory=512000 Gres=gpu:4
AccountingStorageEnforce=associations,limits
PartitionName=batch Nodes=c[0001-1000] PriorityJobFactor=10 MaxTime=3-0 Default=YES TRESBillingWeights=CPU=1.0,Mem=0.25G
PartitionName=gpu Nodes=g[001-100] PriorityJobFactor=20 MaxTime=1-0 TRESBillingWeights=CPU=1.0,Mem=0.125G,GRES/gpu=8.0
PartitionName=long Nodes=c[0001-0500] PriorityJobFactor=5 MaxTime=14-0 TRESBillingWeights=CPU=1.0,Mem=0.25G
PartitionName=requeue Nodes=c[0001-1000],g[001-100] PriorityJobFactor=1 MaxTime=1-0 TRESBillingWeights=CPU=0.5
";

/// The site's QOS, as `sacctmgr show qos -p` prints them.
pub const QOS: &str = "Name|Priority|UsageFactor|Flags|\nnormal|0|1.000000||\nlow|10|0.500000||\nhigh|100|1.000000||\nurgent|1000|2.000000||\n";

/// The pending-queue header.
pub const PENDING_HEADER: &str =
    "job_id,user,account,partition,qos,submit_time,accrue_time,min_nodes,cpus,time_limit,nice,site_factor,tres_req";

/// What queue to generate.
#[derive(Clone, Copy, Debug)]
pub struct QueueSpec {
    /// Number of pending jobs.
    pub jobs: usize,
    /// Generator seed.
    pub seed: u64,
    /// The time the queue is observed (jobs were submitted up to 14 days before).
    pub now: i64,
}

/// One generated job (borrowing the tree's names).
struct Job<'a> {
    id: u64,
    user: &'a str,
    account: &'a str,
    partition: &'static str,
    qos: &'static str,
    submit: i64,
    accrue: Option<i64>,
    min_nodes: u32,
    cpus: u32,
    time_limit: Option<u32>,
    nice: i32,
    tres: String,
}

const PARTITIONS: [&str; 5] = ["batch", "batch", "gpu", "long", "batch,requeue"];
const QOS_NAMES: [&str; 5] = ["", "normal", "normal", "low", "high"];

/// Generates the jobs lazily, in id order.
fn jobs<'a>(tree: &'a TreeInput, spec: &QueueSpec) -> impl Iterator<Item = Job<'a>> {
    let users: Vec<(&str, &str)> =
        tree.records.iter().filter_map(|r| r.user.as_deref().map(|u| (u, r.account.as_str()))).collect();
    assert!(!users.is_empty(), "the tree has no user association");
    let mut rng = SplitMix64(spec.seed ^ 0x0051_ED0F_1A55);
    let now = spec.now;
    (0..spec.jobs as u64).map(move |i| {
        let (user, account) = users[rng.below(users.len() as u64) as usize];
        let partition = PARTITIONS[rng.below(PARTITIONS.len() as u64) as usize];
        let gpu = partition == "gpu";
        let submit = now - rng.below(14 * 86_400) as i64;
        let min_nodes = if rng.chance(0.8) { 1 } else { 1 + rng.below(16) as u32 };
        let cpus = min_nodes * rng.log_uniform(64.0) as u32;
        let mem = u64::from(cpus) * (1 + rng.below(8)) * 1024;
        let mut tres = format!("cpu={cpus},mem={mem}M,node={min_nodes}");
        if gpu {
            tres.push_str(&format!(",gres/gpu={}", 1 + rng.below(4)));
        }
        Job {
            id: 1_000_000 + i,
            user,
            account,
            partition,
            qos: QOS_NAMES[rng.below(QOS_NAMES.len() as u64) as usize],
            submit,
            accrue: (!rng.chance(0.05)).then(|| submit + rng.below(600) as i64),
            min_nodes,
            cpus,
            time_limit: (!rng.chance(0.1)).then(|| rng.log_uniform(2880.0) as u32),
            nice: if rng.chance(0.02) { 100 } else { 0 },
            tres,
        }
    })
}

/// Writes the pending queue as CSV.
///
/// # Errors
/// Write errors.
pub fn write_pending_csv(out: &mut dyn Write, tree: &TreeInput, spec: &QueueSpec) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 20, out);
    writeln!(out, "{PENDING_HEADER}")?;
    for j in jobs(tree, spec) {
        let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
        writeln!(
            out,
            "{},{},{},\"{}\",{},{},{},{},{},{},{},0,\"{}\"",
            j.id,
            j.user,
            j.account,
            j.partition,
            j.qos,
            j.submit,
            opt(j.accrue),
            j.min_nodes,
            j.cpus,
            opt(j.time_limit.map(i64::from)),
            j.nice,
            j.tres
        )?;
    }
    out.flush()
}

/// Writes the pending queue as Parquet (ZSTD, 1M-row batches, typed columns), atomically.
///
/// # Errors
/// I/O or encoding errors naming `path`.
pub fn write_pending_parquet(path: &Path, tree: &TreeInput, spec: &QueueSpec) -> Result<()> {
    let mut writer = BatchWriter::create(path)?;
    let mut it = jobs(tree, spec).peekable();
    while it.peek().is_some() {
        let chunk: Vec<Job<'_>> = it.by_ref().take(BATCH).collect();
        writer.write(to_batch(&chunk))?;
    }
    writer.finish("an empty queue")
}

fn to_batch(jobs: &[Job<'_>]) -> std::result::Result<RecordBatch, arrow::error::ArrowError> {
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("job_id", Arc::new(UInt64Array::from_iter_values(jobs.iter().map(|j| j.id)))),
        ("user", Arc::new(StringArray::from_iter_values(jobs.iter().map(|j| j.user)))),
        ("account", Arc::new(StringArray::from_iter_values(jobs.iter().map(|j| j.account)))),
        ("partition", Arc::new(StringArray::from_iter_values(jobs.iter().map(|j| j.partition)))),
        ("qos", Arc::new(StringArray::from_iter_values(jobs.iter().map(|j| j.qos)))),
        ("submit_time", Arc::new(Int64Array::from_iter_values(jobs.iter().map(|j| j.submit)))),
        ("accrue_time", Arc::new(Int64Array::from_iter(jobs.iter().map(|j| j.accrue)))),
        ("min_nodes", Arc::new(UInt32Array::from_iter_values(jobs.iter().map(|j| j.min_nodes)))),
        ("cpus", Arc::new(UInt32Array::from_iter_values(jobs.iter().map(|j| j.cpus)))),
        ("time_limit", Arc::new(UInt32Array::from_iter(jobs.iter().map(|j| j.time_limit)))),
        ("nice", Arc::new(Int32Array::from_iter_values(jobs.iter().map(|j| j.nice)))),
        ("site_factor", Arc::new(Int32Array::from_iter_values(jobs.iter().map(|_| 0)))),
        ("tres_req", Arc::new(StringArray::from_iter_values(jobs.iter().map(|j| j.tres.as_str())))),
    ];
    RecordBatch::try_from_iter(columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{TreeSpec, generate_tree};

    #[test]
    fn csv_and_parquet_queues_read_back_the_same() {
        let tree = generate_tree(&TreeSpec::new(500, 3));
        let spec = QueueSpec { jobs: 2000, seed: 5, now: 1_767_830_400 };
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("p.csv");
        let mut f = std::fs::File::create(&csv).unwrap();
        write_pending_csv(&mut f, &tree, &spec).unwrap();
        let pq = dir.path().join("p.parquet");
        write_pending_parquet(&pq, &tree, &spec).unwrap();
        let keep = [fairshare_engine::config::Tres::CPU, fairshare_engine::config::Tres::gres("gpu")];
        let a = fairshare_engine::jobs::PendingJobs::read(&csv, None, &keep).unwrap();
        let b = fairshare_engine::jobs::PendingJobs::read(&pq, None, &keep).unwrap();
        assert_eq!(a.len(), 2000);
        assert_eq!(
            (a.job_id.clone(), a.submit_time.clone(), a.accrue_time.clone()),
            (b.job_id.clone(), b.submit_time.clone(), b.accrue_time.clone())
        );
        assert_eq!(
            (a.time_limit.clone(), a.cpus.clone(), a.tres_req.clone()),
            (b.time_limit.clone(), b.cpus.clone(), b.tres_req.clone())
        );
        assert!(a.part_offsets.windows(2).any(|w| w[1] - w[0] == 2), "some jobs ask for two partitions");
        let names = |j: &fairshare_engine::jobs::PendingJobs| {
            (0..j.len()).map(|i| j.names.name(j.user[i]).to_string()).collect::<Vec<_>>()
        };
        assert_eq!(names(&a), names(&b));
    }
}
