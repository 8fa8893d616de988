//! `slurm.conf`, read as Slurm's parser (`src/common/parse_config.c`) and `read_config.c` read it,
//! and resolved into the totals slurmctld derives from it.
//!
//! File syntax: `Key=Value` pairs with case-insensitive keys; values quoted with `"` may hold white
//! space; `#` starts a comment unless escaped (`\#`); a line ending in `\` continues on the next one;
//! `\x` is `x`; `Include FILE` (any case, at the start of a line) reads another file, relative to the
//! including file's directory, with `%c` standing for the cluster name. `NodeName=` and
//! `PartitionName=` lines carry further pairs, and `NodeName=DEFAULT` / `PartitionName=DEFAULT` set
//! defaults for the lines after them. Other lines hold one pair.
//!
//! Keys this crate does not use are ignored, with whatever follows them on their line, since real
//! files hold hundreds; a malformed value of a key it uses is an error naming the file and line,
//! even when a later line sets the key again (each value is parsed as its line is read, as
//! slurmctld does). Include cycles are errors (slurmctld would recurse until it runs out of files).
//!
//! The knobs the command line can override (`--half-life`, `--calc-period`, `--reset-period`,
//! `--dampening`) are read by one function each ([`parse_half_life`], ...), used by both routes,
//! so a value means the same and is refused with the same words wherever it is given.
//!
//! [`read_slurm_conf`](super::read_slurm_conf) reads a file, this format or scontrol's output
//! ([`super::scontrol`]), which comes to the same [`SlurmConf`].
//!
//! Derived as slurmctld derives them: every `NodeName` record is a node (`node_count`, Slurm's
//! `active_node_record_count`), the cluster CPU count sums their CPUs, a partition's TRES sum its
//! nodes' CPUs, memory and GRES with its node count and the cluster-wide licenses
//! (`partition_mgr.c: _calc_part_tres()`), and `norm_priority` is `PriorityJobFactor` over the
//! largest one (at least 1; `_sync_part_prio()`). Not modelled: `CoreSpecCount` / `CPUSpecList`
//! (slurmctld counts a node's CPUs less its specialized ones), `NodeSet` names in partitions, and
//! burst-buffer totals (known to the plugin, not the file).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};

use super::conf_syntax::{include_directive, is_c_space, logical_lines, next_pair, parse_bool, parse_unsigned};
use super::flags::PriorityFlags;
use super::hostlist::HostList;
use super::time::{TimeLimit, parse_time};
use super::tres::{Tres, TresCounts, TresWeights, billable, parse_tres_weights, tracked_tres};
use fairshare_base::error::{Error, Result};
use fairshare_base::read::source::read_config;

/// More nodes than any cluster has; bounds memory when a typo such as `node[0-9999999999]` is read.
pub(super) const MAX_NODES: u64 = 1 << 22;

/// `PriorityUsageResetPeriod`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ResetPeriod {
    /// `NONE` (the default): usage only decays.
    #[default]
    None,
    /// `NOW`: cleared once, when slurmctld starts.
    Now,
    /// `DAILY`.
    Daily,
    /// `WEEKLY`.
    Weekly,
    /// `MONTHLY`.
    Monthly,
    /// `QUARTERLY`.
    Quarterly,
    /// `YEARLY`.
    Yearly,
}

/// A partition's `State`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PartitionState {
    /// `UP` (the default).
    #[default]
    Up,
    /// `DOWN`.
    Down,
    /// `DRAIN`.
    Drain,
    /// `INACTIVE`.
    Inactive,
}

/// `AccountingStorageEnforce`, as `_validate_accounting_storage_enforce()` sets its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccountingEnforce {
    /// `associations` (implied by every other word but `nojobs`/`nosteps`).
    pub associations: bool,
    /// `limits` (implied by `safe` and `all`).
    pub limits: bool,
    /// `safe`.
    pub safe: bool,
    /// `wckeys`.
    pub wckeys: bool,
    /// `qos`.
    pub qos: bool,
    /// `nojobs` (not implied by `all`).
    pub nojobs: bool,
    /// `nosteps` (implied by `nojobs`, not by `all`).
    pub nosteps: bool,
}

impl AccountingEnforce {
    /// Parses the comma-separated words (any case; `1` is `associations`, `2` is `limits`).
    /// `none`, which `scontrol show config` prints for no enforcement, sets nothing (slurmctld
    /// itself refuses the word in slurm.conf; here a file copied from scontrol's output reads).
    ///
    /// # Errors
    /// A word Slurm does not know.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut e = AccountingEnforce::default();
        for word in text.split(',').filter(|w| !w.is_empty()) {
            match word.to_ascii_lowercase().as_str() {
                "none" => {}
                "1" | "associations" => e.associations = true,
                "2" | "limits" => (e.associations, e.limits) = (true, true),
                "safe" => (e.associations, e.limits, e.safe) = (true, true, true),
                "wckeys" => (e.associations, e.wckeys) = (true, true),
                "qos" => (e.associations, e.qos) = (true, true),
                "all" => {
                    let (nojobs, nosteps) = (e.nojobs, e.nosteps);
                    e = AccountingEnforce {
                        associations: true,
                        limits: true,
                        safe: true,
                        wckeys: true,
                        qos: true,
                        nojobs,
                        nosteps,
                    };
                }
                "nojobs" => (e.nojobs, e.nosteps) = (true, true),
                "nosteps" => e.nosteps = true,
                _ => return Err(format!("invalid AccountingStorageEnforce word {word:?}")),
            }
        }
        Ok(e)
    }

    /// Whether slurmctld charges a job's usage to its association when the job ends
    /// (`ACCOUNTING_ENFORCE_LIMITS`: `limits`, `safe` or `all`), which `GrpTRESRaw`-style bookkeeping
    /// needs.
    pub fn charges_job_end(&self) -> bool {
        self.limits
    }
}

/// The nodes of one `NodeName=` line.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeGroup {
    /// The node names.
    pub names: HostList,
    /// CPUs per node: `CPUs` (or `Procs`), else Boards × Sockets × CoresPerSocket × ThreadsPerCore,
    /// reconciled as `_parse_nodename()` does.
    pub cpus: u16,
    /// `Boards` (default 1).
    pub boards: u16,
    /// Sockets per node (`Sockets`, or Boards × `SocketsPerBoard`, or inferred from `CPUs`).
    pub sockets: u16,
    /// `CoresPerSocket` (default 1).
    pub cores_per_socket: u16,
    /// `ThreadsPerCore` (default 1).
    pub threads_per_core: u16,
    /// `RealMemory` in MB (default 1).
    pub real_memory: u64,
    /// GRES per node from `Gres=`: `gres/NAME` and, for typed GRES, `gres/NAME:TYPE` too.
    pub gres: TresCounts,
}

/// One `PartitionName=` line and its totals.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    /// `PartitionName`.
    pub name: String,
    /// `Nodes` as written (a host list, `ALL`, or empty; scontrol prints the host list).
    pub nodes: String,
    /// `PriorityJobFactor` (default 1; `Priority=` sets it and the tier).
    pub priority_job_factor: u16,
    /// `PriorityTier` (default 1).
    pub priority_tier: u16,
    /// `priority_job_factor` over the largest factor of any partition (at least 1).
    pub norm_priority: f64,
    /// `MaxTime` (default UNLIMITED).
    pub max_time: TimeLimit,
    /// `TRESBillingWeights`; `None` bills a job its CPUs.
    pub billing_weights: Option<TresWeights>,
    /// `Default=YES`.
    pub default: bool,
    /// `State`.
    pub state: PartitionState,
    /// Distinct nodes in the partition.
    pub total_nodes: u64,
    /// The partition's TRES: cpu, mem, node, its nodes' gres, and the cluster's licenses (from
    /// scontrol's `TRES=`: those `AccountingStorageTRES` tracks).
    pub tres: TresCounts,
}

/// A `slurm.conf`, typed and resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct SlurmConf {
    /// `ClusterName`, lower-cased as Slurm does.
    pub cluster_name: Option<String>,
    /// `PriorityType` (default `priority/multifactor`).
    pub priority_type: String,
    /// `PriorityFlags`.
    pub priority_flags: PriorityFlags,
    /// `PriorityWeightAge`.
    pub priority_weight_age: u32,
    /// `PriorityWeightAssoc`.
    pub priority_weight_assoc: u32,
    /// `PriorityWeightFairshare`.
    pub priority_weight_fairshare: u32,
    /// `PriorityWeightJobSize`.
    pub priority_weight_job_size: u32,
    /// `PriorityWeightPartition`.
    pub priority_weight_partition: u32,
    /// `PriorityWeightQOS`.
    pub priority_weight_qos: u32,
    /// `PriorityWeightTRES`, or `None` when unset.
    pub priority_weight_tres: Option<TresWeights>,
    /// `PriorityMaxAge` in seconds (default 7 days).
    pub priority_max_age: u32,
    /// `PriorityDecayHalfLife` in seconds (default 7 days; 0 = no decay).
    pub priority_decay_half_life: u32,
    /// `PriorityCalcPeriod` in seconds (default 5 minutes).
    pub priority_calc_period: u32,
    /// `PriorityUsageResetPeriod`.
    pub priority_usage_reset_period: ResetPeriod,
    /// `PriorityFavorSmall`.
    pub priority_favor_small: bool,
    /// `FairShareDampeningFactor` (default 1).
    pub fair_share_dampening_factor: u16,
    /// `AccountingStorageEnforce`.
    pub accounting_storage_enforce: AccountingEnforce,
    /// `AccountingStorageTRES` as slurmctld completes it (the built-in TRES included).
    pub accounting_storage_tres: Vec<Tres>,
    /// `GresTypes`.
    pub gres_types: Vec<String>,
    /// `Licenses`, as `license/NAME` counts.
    pub licenses: TresCounts,
    /// The `NodeName` lines, in order (none from scontrol's output, which has no node records).
    pub nodes: Vec<NodeGroup>,
    /// The `PartitionName` lines, in order.
    pub partitions: Vec<Partition>,
    /// Node records (slurmctld's `active_node_record_count`; from scontrol's output, the nodes of
    /// its partitions).
    pub node_count: u64,
    /// CPUs of all nodes (slurmctld's `cluster_cpus`; from scontrol's output, derived from the
    /// partitions' totals, and 0 when they do not determine it).
    pub cluster_cpus: u64,
    /// The cluster's TRES: cpu, mem, node, gres and licenses (from scontrol's output, as
    /// `cluster_cpus`).
    pub cluster_tres: TresCounts,
    /// What was read but is not reproduced here (`file:line: ...`);
    /// [`read_slurm_conf`](super::read_slurm_conf) prints them on stderr.
    pub warnings: Vec<String>,
}

impl Default for SlurmConf {
    /// Slurm's defaults: what an empty `slurm.conf` gives.
    fn default() -> Self {
        SlurmConf {
            cluster_name: None,
            priority_type: "priority/multifactor".to_string(),
            priority_flags: PriorityFlags::default(),
            priority_weight_age: 0,
            priority_weight_assoc: 0,
            priority_weight_fairshare: 0,
            priority_weight_job_size: 0,
            priority_weight_partition: 0,
            priority_weight_qos: 0,
            priority_weight_tres: None,
            priority_max_age: 7 * 86_400,
            priority_decay_half_life: 7 * 86_400,
            priority_calc_period: 300,
            priority_usage_reset_period: ResetPeriod::None,
            priority_favor_small: false,
            fair_share_dampening_factor: 1,
            accounting_storage_enforce: AccountingEnforce::default(),
            accounting_storage_tres: Vec::new(),
            gres_types: Vec::new(),
            licenses: TresCounts::new(),
            nodes: Vec::new(),
            partitions: Vec::new(),
            node_count: 0,
            cluster_cpus: 0,
            cluster_tres: node_totals(&[], &[], 0, &TresCounts::new()),
            warnings: Vec::new(),
        }
    }
}

impl SlurmConf {
    /// The partition named `name` (partition names are case-sensitive).
    pub fn partition(&self, name: &str) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.name == name)
    }

    /// The TRES slurmctld tracks and sshare prints: the built-in ones, `AccountingStorageTRES`,
    /// and every TRES a `TRESBillingWeights` or `PriorityWeightTRES` names (slurmctld refuses a
    /// weight on a TRES it does not track), in Slurm's TRES order.
    pub fn tracked_tres(&self) -> Vec<Tres> {
        let weights =
            self.partitions.iter().filter_map(|p| p.billing_weights.as_ref()).chain(&self.priority_weight_tres);
        tracked_tres(
            self.accounting_storage_tres.iter().cloned().chain(weights.flat_map(|w| w.iter().map(|(t, _)| t.clone()))),
        )
    }

    /// The default partition: the last one with `Default=YES`, as slurmctld keeps it.
    pub fn default_partition(&self) -> Option<&Partition> {
        self.partitions.iter().rev().find(|p| p.default)
    }
}

/// Parses `slurm.conf` text; `path` names it in errors and anchors relative `Include` files.
///
/// # Errors
/// A line that is not `Key=Value` pairs, a malformed value of a key used here (with its file and
/// line; an unknown `PriorityFlags` word is one), an unreadable or cyclic `Include`, a duplicate
/// node or partition, a partition naming an undefined node, or `PriorityDecayHalfLife=0` without a
/// `PriorityUsageResetPeriod`.
///
/// # Example
/// ```
/// use std::path::Path;
/// let conf = fairshare_engine::config::slurm_conf::parse(
///     Path::new("slurm.conf"),
///     "PriorityWeightFairshare=10000\nNodeName=n[01-04] CPUs=32 RealMemory=128000\n\
///      PartitionName=batch Nodes=ALL Default=YES TRESBillingWeights=CPU=1.0,Mem=0.25G\n",
/// )?;
/// assert_eq!((conf.node_count, conf.cluster_cpus), (4, 128));
/// assert_eq!(conf.partition("batch").unwrap().tres.get(&fairshare_engine::config::Tres::MEM), 512_000);
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn parse(path: &Path, text: &str) -> Result<SlurmConf> {
    let mut reader = Reader::default();
    reader.stack.push(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()));
    reader.read_lines(path, text)?;
    reader.finish()
}

/// A file and 1-based line.
#[derive(Clone, Debug)]
pub(super) struct Loc {
    pub(super) path: PathBuf,
    pub(super) line: u64,
}

impl Loc {
    pub(super) fn err(&self, message: impl Into<String>) -> Error {
        Error::input(&self.path, self.line, message)
    }
}

/// A value and where it was read.
#[derive(Clone, Debug)]
pub(super) struct Value {
    pub(super) key: String,
    pub(super) text: String,
    pub(super) loc: Loc,
}

impl Value {
    /// Maps a parse failure to an error naming the key, file and line.
    pub(super) fn parse<T>(&self, parse: impl FnOnce(&str) -> Result<T, String>) -> Result<T> {
        parse(&self.text).map_err(|m| self.loc.err(format!("{}={}: {m}", self.key, self.text)))
    }
}

/// The pairs of one line (lower-case keys; a repeated key keeps its last value).
pub(super) type Table = HashMap<String, Value>;

/// A partition line, and where it was read.
pub(super) struct PartitionSpec {
    pub(super) partition: Partition,
    pub(super) loc: Loc,
}

#[derive(Default)]
struct Reader {
    /// The one-pair settings, parsed as their lines are read; nodes and partitions come in `finish`.
    conf: SlurmConf,
    /// Where each one-pair key was last set.
    scalars: Table,
    node_default: Table,
    part_default: Table,
    nodes: Vec<(NodeGroup, Loc)>,
    partitions: Vec<PartitionSpec>,
    /// Canonical paths of the files being read, outermost first.
    stack: Vec<PathBuf>,
}

impl Reader {
    fn read_lines(&mut self, path: &Path, text: &str) -> Result<()> {
        for (line, content) in logical_lines(text) {
            let loc = Loc { path: path.to_path_buf(), line };
            match include_directive(&content) {
                Some(Ok(file)) => self.include(&loc, file)?,
                Some(Err(m)) => return Err(loc.err(m)),
                None => self.line(&loc, &content)?,
            }
        }
        Ok(())
    }

    fn include(&mut self, loc: &Loc, file: &str) -> Result<()> {
        let file = if file.contains("%c") {
            let cluster = (self.conf.cluster_name.as_deref())
                .ok_or_else(|| loc.err(format!("Include {file}: %c needs a ClusterName before this line")))?;
            file.replace("%c", cluster)
        } else {
            file.to_string()
        };
        let target = loc.path.parent().unwrap_or(Path::new("")).join(&file);
        let canonical =
            std::fs::canonicalize(&target).map_err(|e| loc.err(format!("Include {}: {e}", target.display())))?;
        if self.stack.contains(&canonical) {
            return Err(
                loc.err(format!("Include {}: include cycle (the file is already being read)", target.display()))
            );
        }
        let text = read_config(&target).map_err(|e| match e {
            Error::Io { source, .. } => loc.err(format!("Include {}: {source}", target.display())),
            other => other,
        })?;
        self.stack.push(canonical);
        self.read_lines(&target, &text)?;
        self.stack.pop();
        Ok(())
    }

    fn line(&mut self, loc: &Loc, content: &str) -> Result<()> {
        let Some((key, value, rest)) = next_pair(content) else {
            if content.trim_matches(is_c_space).is_empty() {
                return Ok(());
            }
            return Err(loc.err(format!("cannot parse {:?}: expected Key=Value", content.trim_matches(is_c_space))));
        };
        let lower = key.to_ascii_lowercase();
        match lower.as_str() {
            "nodename" => {
                let table = attributes(loc, rest)?;
                self.node_line(loc, value, table)
            }
            "partitionname" => {
                let table = attributes(loc, rest)?;
                self.partition_line(loc, value, table)
            }
            _ => {
                let v = Value { key: key.to_string(), text: value.to_string(), loc: loc.clone() };
                // Keys not used here are skipped with the attributes they may carry (DownNodes=, ...).
                if !set_scalar(&mut self.conf, &lower, &v)? {
                    return Ok(());
                }
                if !rest.trim_matches(is_c_space).is_empty() {
                    return Err(loc.err(format!(
                        "unexpected {:?} after {key}={value}: Slurm reads one Key=Value on this line",
                        rest.trim_matches(is_c_space)
                    )));
                }
                self.scalars.insert(lower, v);
                Ok(())
            }
        }
    }

    fn node_line(&mut self, loc: &Loc, name: &str, table: Table) -> Result<()> {
        if name.eq_ignore_ascii_case("DEFAULT") {
            self.node_default = merge_defaults(table, std::mem::take(&mut self.node_default));
            return Ok(());
        }
        if name.eq_ignore_ascii_case("ALL") {
            return Err(loc.err("NodeName=ALL: ALL is a reserved word"));
        }
        let get = |key: &str| table.get(key).or_else(|| self.node_default.get(key));
        let names = HostList::parse(name).map_err(|m| loc.err(format!("NodeName={name}: {m}")))?;
        let group = node_group(names, &get)?;
        self.nodes.push((group, loc.clone()));
        Ok(())
    }

    fn partition_line(&mut self, loc: &Loc, name: &str, table: Table) -> Result<()> {
        if name.eq_ignore_ascii_case("DEFAULT") {
            self.part_default = merge_defaults(table, std::mem::take(&mut self.part_default));
            return Ok(());
        }
        if self.partitions.iter().any(|p| p.partition.name == name) {
            return Err(loc.err(format!("PartitionName={name} is defined twice")));
        }
        let get = |key: &str| table.get(key).or_else(|| self.part_default.get(key));
        let partition = partition_settings(name, &get)?;
        self.partitions.push(PartitionSpec { partition, loc: loc.clone() });
        Ok(())
    }

    fn finish(mut self) -> Result<SlurmConf> {
        let mut conf = std::mem::take(&mut self.conf);
        check_scalars(&mut conf, &self.scalars)?;
        self.resolve_nodes(&mut conf)?;
        Ok(conf)
    }

    /// Counts the nodes, checks their names are unique, and totals the cluster and each partition.
    fn resolve_nodes(self, conf: &mut SlurmConf) -> Result<()> {
        let mut node_count = 0u64;
        for (group, loc) in &self.nodes {
            node_count = node_count.saturating_add(group.names.len());
            if node_count > MAX_NODES {
                return Err(loc.err(format!("more than {MAX_NODES} nodes")));
            }
        }
        // Node name -> (node index, group index), to resolve partition node lists.
        let mut index: HashMap<String, (u32, u32)> = HashMap::with_capacity(node_count as usize);
        for (g, (group, loc)) in self.nodes.iter().enumerate() {
            for name in group.names.iter() {
                let node = index.len() as u32;
                match index.entry(name) {
                    Entry::Occupied(e) => {
                        return Err(loc.err(format!("node {} is defined twice (Duplicated NodeName)", e.key())));
                    }
                    Entry::Vacant(e) => e.insert((node, g as u32)),
                };
            }
        }
        let groups: Vec<NodeGroup> = self.nodes.into_iter().map(|(g, _)| g).collect();
        let all: Vec<u64> = groups.iter().map(|g| g.names.len()).collect();
        conf.cluster_tres = node_totals(&groups, &all, node_count, &conf.licenses);
        conf.cluster_cpus = conf.cluster_tres.cpu();
        conf.node_count = node_count;

        let mut seen = vec![false; node_count as usize];
        let mut partitions = self.partitions;
        for PartitionSpec { partition, loc } in &mut partitions {
            let per_group = if partition.nodes.eq_ignore_ascii_case("ALL") {
                all.clone()
            } else {
                members(partition, loc, &index, &mut seen, groups.len())?
            };
            partition.total_nodes = per_group.iter().sum();
            partition.tres = node_totals(&groups, &per_group, partition.total_nodes, &conf.licenses);
        }
        conf.nodes = groups;
        add_partitions(conf, partitions)
    }
}

/// The checks slurmctld makes of the one-pair settings once all are read (`scalars`: where each
/// was set), and the warnings for the flags not modelled here.
///
/// # Errors
/// `PriorityDecayHalfLife=0` without a `PriorityUsageResetPeriod`.
pub(super) fn check_scalars(conf: &mut SlurmConf, scalars: &Table) -> Result<()> {
    let given = |key: &str| scalars.get(key);
    // slurmctld refuses this pair at start-up: usage would only ever grow.
    if let (0, Some(v), None) =
        (conf.priority_decay_half_life, given("prioritydecayhalflife"), given("priorityusageresetperiod"))
    {
        return Err(v.loc.err("PriorityDecayHalfLife=0 needs a PriorityUsageResetPeriod, or usage would never shrink"));
    }
    if let Some(v) = given("priorityflags") {
        let unmodelled = conf.priority_flags.unmodelled();
        if !unmodelled.is_empty() {
            conf.warnings.push(format!(
                "{}:{}: {}={}: {} not modelled here, and ignored",
                v.loc.path.display(),
                v.loc.line,
                v.key,
                v.text,
                unmodelled.join(", ")
            ));
        }
    }
    Ok(())
}

/// Adds the partitions, their TRES totals known, to `conf`: checks that each one's billing of its
/// own TRES is finite, and normalizes `PriorityJobFactor` over the largest one (at least 1;
/// `_sync_part_prio()`).
///
/// # Errors
/// `TRESBillingWeights` that bill a partition's own TRES beyond `f64`.
pub(super) fn add_partitions(conf: &mut SlurmConf, partitions: Vec<PartitionSpec>) -> Result<()> {
    let max_factor = partitions.iter().map(|p| p.partition.priority_job_factor).max().unwrap_or(1).max(1);
    for PartitionSpec { mut partition, loc } in partitions {
        // Weights that bill the partition's own TRES beyond f64 would charge its jobs `inf`.
        let whole = billable(&partition.tres, partition.billing_weights.as_ref(), conf.priority_flags);
        if !whole.is_finite() {
            return Err(loc.err(format!(
                "PartitionName={}: TRESBillingWeights bill the partition's own TRES {whole} per second, \
                 not a finite number",
                partition.name
            )));
        }
        partition.norm_priority = f64::from(partition.priority_job_factor) / f64::from(max_factor);
        conf.partitions.push(partition);
    }
    Ok(())
}

/// How many distinct nodes of each group a partition's `Nodes` list names.
fn members(
    partition: &Partition,
    loc: &Loc,
    index: &HashMap<String, (u32, u32)>,
    seen: &mut [bool],
    groups: usize,
) -> Result<Vec<u64>> {
    let err = |m: String| loc.err(format!("PartitionName={} Nodes={}: {m}", partition.name, partition.nodes));
    let list = HostList::parse(&partition.nodes).map_err(err)?;
    if list.len() > MAX_NODES {
        return Err(err(format!("more than {MAX_NODES} names")));
    }
    let mut per_group = vec![0u64; groups];
    let mut marked = Vec::new();
    for name in list.iter() {
        let &(node, group) =
            index.get(&name).ok_or_else(|| err(format!("node {name} is not defined by a NodeName line")))?;
        if !std::mem::replace(&mut seen[node as usize], true) {
            per_group[group as usize] += 1;
            marked.push(node);
        }
    }
    for node in marked {
        seen[node as usize] = false;
    }
    Ok(per_group)
}

/// TRES totals of `counts[g]` nodes of each group `g`, with `nodes` as the node count and the
/// cluster-wide licenses.
fn node_totals(groups: &[NodeGroup], counts: &[u64], nodes: u64, licenses: &TresCounts) -> TresCounts {
    let mut tres = TresCounts::new();
    tres.set(Tres::CPU, 0);
    tres.set(Tres::MEM, 0);
    tres.set(Tres::NODE, nodes);
    for (group, &n) in groups.iter().zip(counts).filter(|&(_, &n)| n > 0) {
        tres.add(Tres::CPU, n * u64::from(group.cpus));
        tres.add(Tres::MEM, n.saturating_mul(group.real_memory));
        for (gres, per_node) in group.gres.iter() {
            tres.add(gres.clone(), n.saturating_mul(per_node));
        }
    }
    for (license, count) in licenses.iter() {
        tres.set(license.clone(), count);
    }
    tres
}

/// Parses the value of a one-pair line into `conf`; `false` for a key not used here.
pub(super) fn set_scalar(conf: &mut SlurmConf, key: &str, v: &Value) -> Result<bool> {
    let weight = |t: &str| parse_unsigned(t, u32::MAX.into(), true, true).map(|w| w as u32);
    match key {
        "accountingstorageenforce" => conf.accounting_storage_enforce = v.parse(AccountingEnforce::parse)?,
        "accountingstoragetres" => conf.accounting_storage_tres = v.parse(parse_tres_list)?,
        "clustername" => conf.cluster_name = Some(v.text.to_ascii_lowercase()),
        "fairsharedampeningfactor" => conf.fair_share_dampening_factor = v.parse(parse_dampening)?,
        "grestypes" => {
            conf.gres_types = v.text.split(',').map(str::trim).filter(|g| !g.is_empty()).map(str::to_string).collect();
        }
        "licenses" => conf.licenses = v.parse(parse_licenses)?,
        "prioritycalcperiod" => conf.priority_calc_period = v.parse(parse_calc_period)?,
        "prioritydecayhalflife" => conf.priority_decay_half_life = v.parse(parse_half_life)?,
        "priorityfavorsmall" => conf.priority_favor_small = v.parse(parse_bool)?,
        "priorityflags" => conf.priority_flags = v.parse(PriorityFlags::parse)?,
        "prioritymaxage" => conf.priority_max_age = v.parse(parse_time)?.slurm_knob_seconds(),
        "prioritytype" => conf.priority_type = v.text.clone(),
        "priorityusageresetperiod" => conf.priority_usage_reset_period = v.parse(parse_reset_period)?,
        "priorityweightage" => conf.priority_weight_age = v.parse(weight)?,
        "priorityweightassoc" => conf.priority_weight_assoc = v.parse(weight)?,
        "priorityweightfairshare" => conf.priority_weight_fairshare = v.parse(weight)?,
        "priorityweightjobsize" => conf.priority_weight_job_size = v.parse(weight)?,
        "priorityweightpartition" => conf.priority_weight_partition = v.parse(weight)?,
        "priorityweightqos" => conf.priority_weight_qos = v.parse(weight)?,
        "priorityweighttres" => {
            // An empty value is unset, as slurmctld reads it.
            conf.priority_weight_tres = if v.text.is_empty() { None } else { Some(v.parse(parse_tres_weights)?) };
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `s_p_hashtbl_merge()`: a new DEFAULT line's values win, earlier defaults fill the rest.
fn merge_defaults(mut new: Table, old: Table) -> Table {
    for (key, value) in old {
        new.entry(key).or_insert(value);
    }
    new
}

/// The remaining pairs of a `NodeName`/`PartitionName` line.
pub(super) fn attributes(loc: &Loc, mut text: &str) -> Result<Table> {
    let mut table = Table::new();
    while let Some((key, value, rest)) = next_pair(text) {
        let v = Value { key: key.to_string(), text: value.to_string(), loc: loc.clone() };
        table.insert(key.to_ascii_lowercase(), v);
        text = rest;
    }
    let left = text.trim_matches(is_c_space);
    if left.is_empty() { Ok(table) } else { Err(loc.err(format!("cannot parse {left:?}: expected Key=Value"))) }
}

/// One node line's shape and resources, as `_parse_nodename()` reconciles them.
fn node_group<'a>(names: HostList, get: &impl Fn(&str) -> Option<&'a Value>) -> Result<NodeGroup> {
    let u16_of = |key: &str| get(key).map(|v| v.parse(|t| parse_unsigned(t, u16::MAX.into(), false, true))).transpose();
    // Zero is reset to 1 for each of these, with an error message, by slurmctld.
    let at_least_one = |n: Option<u64>| n.map(|n| n.max(1) as u16);
    let cpus_given = at_least_one(u16_of("cpus")?.or(u16_of("procs")?));
    let mut boards = at_least_one(u16_of("boards")?).unwrap_or(1);
    let cores = at_least_one(u16_of("corespersocket")?).unwrap_or(1);
    let threads = at_least_one(u16_of("threadspercore")?).unwrap_or(1);
    let sockets_given = at_least_one(u16_of("sockets")?);
    let per_board = at_least_one(u16_of("socketsperboard")?);
    // The C code multiplies these uint16_t fields as ints and stores some products back into a
    // uint16_t: compare untruncated, assign truncated.
    let (c, t) = (u64::from(cores), u64::from(threads));
    let sockets = match (sockets_given, per_board) {
        // SocketsPerBoard wins when both are given.
        (_, Some(per_board)) => (u64::from(boards) * u64::from(per_board)) as u16,
        (Some(s), None) => s,
        (None, None) => match cpus_given.map(u64::from) {
            Some(n) if n / (c * t) > 0 && n % (c * t) == 0 => (n / (c * t)) as u16,
            _ => boards,
        },
    };
    let s = u64::from(sockets);
    let full = (s * c * t) as u16;
    let mut cpus = cpus_given.unwrap_or(full);
    if sockets < boards {
        boards = 1;
    }
    if ![s, s * c, s * c * t].contains(&u64::from(cpus)) {
        cpus = full;
    }
    let real_memory =
        get("realmemory").map(|v| v.parse(|t| parse_unsigned(t, u64::MAX, true, false))).transpose()?.unwrap_or(1);
    let gres = get("gres").map(|v| v.parse(parse_node_gres)).transpose()?.unwrap_or_default();
    Ok(NodeGroup {
        names,
        cpus,
        boards,
        sockets,
        cores_per_socket: cores,
        threads_per_core: threads,
        real_memory,
        gres,
    })
}

/// One partition line's settings (totals are filled in later).
pub(super) fn partition_settings<'a>(name: &str, get: &impl Fn(&str) -> Option<&'a Value>) -> Result<Partition> {
    let u16_of = |key: &str| {
        get(key).map(|v| v.parse(|t| parse_unsigned(t, u16::MAX.into(), false, true).map(|n| n as u16))).transpose()
    };
    let priority = u16_of("priority")?;
    Ok(Partition {
        name: name.to_string(),
        nodes: get("nodes").map_or_else(String::new, |v| v.text.replace(|c: char| c.is_ascii_whitespace(), ",")),
        priority_job_factor: priority.or(u16_of("priorityjobfactor")?).unwrap_or(1),
        priority_tier: priority.or(u16_of("prioritytier")?).unwrap_or(1),
        norm_priority: 0.0,
        max_time: get("maxtime").map(|v| v.parse(parse_time)).transpose()?.unwrap_or(TimeLimit::Unlimited),
        billing_weights: get("tresbillingweights")
            .filter(|v| !v.text.is_empty())
            .map(|v| v.parse(parse_tres_weights))
            .transpose()?,
        default: get("default").map(|v| v.parse(parse_bool)).transpose()?.unwrap_or(false),
        state: get("state").map(|v| v.parse(parse_partition_state)).transpose()?.unwrap_or_default(),
        total_nodes: 0,
        tres: TresCounts::new(),
    })
}

/// `Gres=gpu:8`, `gpu:a100:4(S:0-1)`, `gpu:tesla:no_consume:2,mps:200` -> per-node `gres/...` counts.
fn parse_node_gres(text: &str) -> Result<TresCounts, String> {
    let mut gres = TresCounts::new();
    for spec in split_outside_parens(text).into_iter().filter(|s| !s.is_empty()) {
        let spec = spec.split_once('(').map_or(spec, |(s, _)| s);
        let fields: Vec<&str> = spec.split(':').collect();
        let (name, rest) =
            fields.split_first().filter(|(n, _)| !n.is_empty()).ok_or_else(|| format!("bad GRES {spec:?}"))?;
        let (count, middle) = match rest.split_last() {
            Some((last, middle)) if last.starts_with(|c: char| c.is_ascii_digit()) => (gres_count(last)?, middle),
            _ => (1, rest),
        };
        let mut types = middle.iter().filter(|f| !f.eq_ignore_ascii_case("no_consume"));
        let ty = types.next();
        if types.next().is_some() || ty.is_some_and(|t| t.is_empty()) {
            return Err(format!("bad GRES {spec:?} (expected name[:type][:no_consume][:count])"));
        }
        gres.add(Tres::gres(name), count);
        if let Some(ty) = ty {
            gres.add(Tres::gres(&format!("{name}:{ty}")), count);
        }
    }
    Ok(gres)
}

/// Splits at commas that are not inside parentheses (`gpu:2(S:0,1)`).
fn split_outside_parens(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0u32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// A GRES count: digits with an optional K/M/G/T/P multiplier (powers of 1024).
fn gres_count(text: &str) -> Result<u64, String> {
    let bad = || format!("bad GRES count {text:?}");
    let (number, unit) = text.split_at(text.bytes().take_while(u8::is_ascii_digit).count());
    let shift = match unit.as_bytes() {
        [] => 0,
        [u] => 10 * ("KMGTP".find(u.to_ascii_uppercase() as char).ok_or_else(bad)? + 1),
        _ => return Err(bad()),
    };
    number.parse::<u64>().ok().and_then(|n| n.checked_mul(1 << shift)).ok_or_else(bad)
}

/// `AccountingStorageTRES`: a comma list of TRES names (`gres/gpu,license/lic,bb/cray`), as
/// slurmctld completes it: with the built-in TRES, and with `gres/gpumem` and `gres/gpuutil` when
/// `gres/gpu` is tracked (`read_config.c`), in Slurm's TRES order.
fn parse_tres_list(text: &str) -> Result<Vec<Tres>, String> {
    let listed = text.split(',').map(str::trim).filter(|t| !t.is_empty()).map(Tres::parse);
    let mut listed = listed.collect::<Result<Vec<_>, _>>()?;
    if listed.contains(&Tres::gres("gpu")) {
        listed.extend([Tres::gres("gpumem"), Tres::gres("gpuutil")]);
    }
    Ok(tracked_tres(listed))
}

/// `Licenses=name[:count],...` (also `name*count`, `;` between items); count defaults to 1.
fn parse_licenses(text: &str) -> Result<TresCounts, String> {
    let mut licenses = TresCounts::new();
    for item in text.split([',', ';']).filter(|s| !s.is_empty()) {
        if item.contains(|c: char| c.is_whitespace()) {
            return Err(format!("license {item:?} contains white space"));
        }
        let (name, count) = match item.split_once([':', '*']) {
            Some((name, count)) => {
                (name, count.parse::<u32>().map_err(|_| format!("license {item:?}: count is not a number"))?)
            }
            None => (item, 1),
        };
        if name.is_empty() {
            return Err(format!("license {item:?} has no name"));
        }
        licenses.add(Tres::license(name), count.into());
    }
    Ok(licenses)
}

/// Parses a `PriorityDecayHalfLife` (or `--half-life`) value into the seconds slurmctld keeps: a
/// Slurm time, 0 meaning no decay.
///
/// # Errors
/// Not a Slurm time, or a negative one.
pub fn parse_half_life(text: &str) -> Result<u32, String> {
    parse_time(text).map(TimeLimit::slurm_knob_seconds)
}

/// Parses a `PriorityCalcPeriod` (or `--calc-period`) value into seconds.
///
/// # Errors
/// Not a Slurm time, or one under a minute or `UNLIMITED`, which slurmctld refuses (a decay pass
/// every 0 seconds, or never, charges nothing).
pub fn parse_calc_period(text: &str) -> Result<u32, String> {
    match parse_time(text)? {
        TimeLimit::Minutes(0) | TimeLimit::Unlimited => Err(CALC_PERIOD_RANGE.into()),
        t => Ok(t.slurm_knob_seconds()),
    }
}

/// Why a `PriorityCalcPeriod` is refused, in every format that gives one.
pub(super) const CALC_PERIOD_RANGE: &str = "must be at least one minute, and not UNLIMITED";

/// Parses a `FairShareDampeningFactor` (or `--dampening`) value.
///
/// # Errors
/// Not a number from 1 to 65535: classic fair-share divides by it, and slurmctld's 0 makes every
/// factor 0 (or NaN).
pub fn parse_dampening(text: &str) -> Result<u16, String> {
    match parse_unsigned(text, u16::MAX.into(), false, true)? {
        0 => Err("must be at least 1 (1 is no dampening)".into()),
        d => Ok(d as u16),
    }
}

/// Parses a `PriorityUsageResetPeriod` (or `--reset-period`) value (case-insensitive).
///
/// # Errors
/// Anything but the seven keywords.
pub fn parse_reset_period(text: &str) -> Result<ResetPeriod, String> {
    Ok(match text.to_ascii_lowercase().as_str() {
        "none" => ResetPeriod::None,
        "now" => ResetPeriod::Now,
        "daily" => ResetPeriod::Daily,
        "weekly" => ResetPeriod::Weekly,
        "monthly" => ResetPeriod::Monthly,
        "quarterly" => ResetPeriod::Quarterly,
        "yearly" => ResetPeriod::Yearly,
        _ => return Err("expected NONE, NOW, DAILY, WEEKLY, MONTHLY, QUARTERLY or YEARLY".into()),
    })
}

/// `State=` is matched on its first letters, as `_parse_partitionname()` does (`UPPER` is `UP`).
fn parse_partition_state(text: &str) -> Result<PartitionState, String> {
    let upper = text.to_ascii_uppercase();
    [("DOWN", PartitionState::Down), ("UP", PartitionState::Up), ("DRAIN", PartitionState::Drain)]
        .into_iter()
        .chain([("INACTIVE", PartitionState::Inactive)])
        .find(|(word, _)| upper.starts_with(word))
        .map(|(_, state)| state)
        .ok_or_else(|| "expected UP, DOWN, DRAIN or INACTIVE".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tres::{billable, parse_tres_counts};

    fn conf(text: &str) -> Result<SlurmConf> {
        parse(Path::new("test.conf"), text)
    }

    fn read(path: &Path) -> Result<SlurmConf> {
        crate::config::read_slurm_conf(path, Some(crate::config::SlurmConfFormat::SlurmConf))
    }

    fn err(text: &str) -> String {
        conf(text).unwrap_err().to_string()
    }

    #[test]
    fn defaults_without_any_key() {
        let c = conf("").unwrap();
        assert_eq!(c.priority_type, "priority/multifactor");
        assert_eq!(c.priority_flags, PriorityFlags::default());
        assert_eq!((c.priority_max_age, c.priority_decay_half_life, c.priority_calc_period), (604_800, 604_800, 300));
        assert_eq!(c.priority_weight_fairshare, 0);
        assert_eq!(c.priority_weight_tres, None);
        assert_eq!(c.fair_share_dampening_factor, 1);
        assert_eq!(c.priority_usage_reset_period, ResetPeriod::None);
        assert!(!c.priority_favor_small && !c.accounting_storage_enforce.charges_job_end());
        assert_eq!((c.node_count, c.cluster_cpus), (0, 0));
    }

    /// A site's file: an Include in a temporary directory, continuations, comments, quoted values,
    /// DEFAULT lines, keys this crate ignores, and several partitions with a requeue one.
    #[test]
    fn realistic_site_with_include() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("nodes.conf"),
            "# compute nodes\n\
             NodeName=DEFAULT Sockets=2 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=191000 State=UNKNOWN\n\
             NodeName=node[001-128,200] \\\n    Weight=10 Feature=\"skylake, avx512\"\n\
             NodeName=DEFAULT RealMemory=384000\n\
             NodeName=gpu[01-04] CPUs=48 Sockets=2 CoresPerSocket=24 Gres=gpu:v100:4(S:0-1),nic:1 # GPU nodes\n\
             NodeName=bigmem1 CPUs=64 RealMemory=2048000 Boards=1 SocketsPerBoard=4 CoresPerSocket=16\n",
        )
        .unwrap();
        let main = dir.path().join("slurm.conf");
        std::fs::write(
            &main,
            "ClusterName=Odyssey\n\
             SlurmctldHost=ctl1(10.0.0.1)\n\
             # Priority\n\
             PriorityType=priority/multifactor\n\
             PriorityFlags=NO_FAIR_TREE,MAX_TRES\n\
             PriorityWeightFairshare=20000000   # fair-share dominates\n\
             PriorityWeightAge=10000000\n\
             priorityweightpartition = 0x10\n\
             PriorityWeightTRES=CPU=1000,Mem=2000G,GRES/gpu=3000\n\
             PriorityMaxAge=7-0\n\
             PriorityDecayHalfLife=14-0\n\
             PriorityCalcPeriod=1:30\n\
             PriorityUsageResetPeriod=Quarterly\n\
             PriorityFavorSmall=YES\n\
             FairShareDampeningFactor=2\n\
             AccountingStorageEnforce=associations,limits,qos\n\
             GresTypes=gpu,nic\n\
             Licenses=matlab:10,fluent*4;abaqus\n\
             SchedulerParameters=bf_continue,default_queue_depth=1000\n\
             DownNodes=node007 Reason=\"bad DIMM\" State=DOWN\n\
             include nodes.conf\n\
             PartitionName=DEFAULT State=UP MaxTime=3-0 \\\n  PriorityJobFactor=10\n\
             PartitionName=shared Nodes=node[001-128] Default=YES TRESBillingWeights=\"CPU=1.0,Mem=0.25G\"\n\
             PartitionName=gpu Nodes=gpu[01-04] PriorityJobFactor=50 MaxTime=UNLIMITED \\\n\
             \x20  TRESBillingWeights=CPU=1.2,Mem=0.1G,GRES/gpu=30\n\
             PartitionName=bigmem Nodes=\"bigmem1 node200\" Priority=20 State=DRAIN\n\
             PartitionName=serial_requeue Nodes=ALL PriorityJobFactor=1 MaxTime=1-00:00:00 \\\n\
             \x20  TRESBillingWeights=CPU=0.5,Mem=0.125G\n",
        )
        .unwrap();
        let c = read(&main).unwrap();

        assert_eq!(c.cluster_name.as_deref(), Some("odyssey"));
        assert!(!c.priority_flags.fair_tree && c.priority_flags.max_tres);
        assert_eq!((c.priority_weight_fairshare, c.priority_weight_age), (20_000_000, 10_000_000));
        assert_eq!((c.priority_weight_partition, c.priority_weight_qos), (16, 0));
        let wt = c.priority_weight_tres.as_ref().unwrap();
        assert_eq!(
            (wt.get(&Tres::CPU), wt.get(&Tres::MEM), wt.get(&Tres::gres("gpu"))),
            (1000.0, 2000.0 / 1024.0, 3000.0)
        );
        assert_eq!((c.priority_max_age, c.priority_decay_half_life, c.priority_calc_period), (604_800, 1_209_600, 120));
        assert_eq!(c.priority_usage_reset_period, ResetPeriod::Quarterly);
        assert!(c.priority_favor_small);
        assert_eq!(c.fair_share_dampening_factor, 2);
        let e = c.accounting_storage_enforce;
        assert!(e.associations && e.limits && e.qos && !e.safe && e.charges_job_end());
        assert_eq!(c.gres_types, ["gpu", "nic"]);
        assert_eq!(c.licenses.to_string(), "license/abaqus=1,license/fluent=4,license/matlab=10");

        // 129 Skylake nodes of 2x16 cores, 4 GPU nodes, 1 big-memory node of 4 sockets.
        assert_eq!(c.nodes.len(), 3);
        assert_eq!((c.nodes[0].cpus, c.nodes[0].real_memory, c.nodes[0].names.len()), (32, 191_000, 129));
        assert_eq!((c.nodes[1].cpus, c.nodes[1].real_memory), (48, 384_000));
        assert_eq!(c.nodes[1].gres.to_string(), "gres/gpu=4,gres/gpu:v100=4,gres/nic=1");
        assert_eq!((c.nodes[2].sockets, c.nodes[2].cpus, c.nodes[2].real_memory), (4, 64, 2_048_000));
        assert_eq!(c.node_count, 134);
        assert_eq!(c.cluster_cpus, 129 * 32 + 4 * 48 + 64);
        assert_eq!(c.cluster_tres.get(&Tres::gres("gpu")), 16);

        let shared = c.partition("shared").unwrap();
        assert_eq!(shared.total_nodes, 128);
        assert_eq!(
            shared.tres.to_string(),
            format!(
                "cpu={},mem={},node=128,license/abaqus=1,license/fluent=4,license/matlab=10",
                128 * 32,
                128 * 191_000
            )
        );
        assert_eq!(
            (shared.max_time, shared.priority_job_factor, shared.state),
            (TimeLimit::Minutes(3 * 1440), 10, PartitionState::Up)
        );
        assert_eq!(c.default_partition().unwrap().name, "shared");
        let gpu = c.partition("gpu").unwrap();
        assert_eq!((gpu.max_time, gpu.tres.get(&Tres::gres("gpu")), gpu.tres.cpu()), (TimeLimit::Unlimited, 16, 192));
        let bigmem = c.partition("bigmem").unwrap();
        assert_eq!((bigmem.total_nodes, bigmem.tres.cpu(), bigmem.tres.get(&Tres::MEM)), (2, 96, 2_048_000 + 191_000));
        assert_eq!((bigmem.priority_job_factor, bigmem.priority_tier, bigmem.state), (20, 20, PartitionState::Drain));
        assert!(bigmem.billing_weights.is_none());
        let requeue = c.partition("serial_requeue").unwrap();
        assert_eq!(
            (requeue.total_nodes, requeue.tres.cpu(), requeue.max_time),
            (134, c.cluster_cpus, TimeLimit::Minutes(1440))
        );
        // Normalized PriorityJobFactor: over the largest (50).
        let norms: Vec<f64> = c.partitions.iter().map(|p| p.norm_priority).collect();
        assert_eq!(norms, [0.2, 1.0, 0.4, 0.02]);

        // Requeue billing: a flat 0.5 per CPU and 0.125 per GB.
        let job = parse_tres_counts("cpu=8,mem=32G,node=1").unwrap();
        let w = requeue.billing_weights.as_ref();
        assert_eq!(billable(&job, w, PriorityFlags::default()), 4.0 + 4.0);
        assert_eq!(billable(&job, w, c.priority_flags), 4.0);
        assert_eq!(billable(&job, bigmem.billing_weights.as_ref(), c.priority_flags), 8.0);
    }

    #[test]
    fn node_cpus_follow_parse_nodename() {
        let cpus = |line: &str| conf(line).unwrap().nodes[0].cpus;
        assert_eq!(cpus("NodeName=a"), 1);
        assert_eq!(cpus("NodeName=a Sockets=2 CoresPerSocket=8 ThreadsPerCore=2"), 32);
        assert_eq!(cpus("NodeName=a Boards=2 SocketsPerBoard=2 CoresPerSocket=4"), 16);
        assert_eq!(cpus("NodeName=a Procs=12"), 12);
        assert_eq!(cpus("NodeName=a CPUs=16 CoresPerSocket=8 ThreadsPerCore=2"), 16);
        // CPUs=Sockets*CoresPerSocket (threads not counted) is kept.
        assert_eq!(cpus("NodeName=a CPUs=16 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2"), 16);
        // CPUs matching no product is reset to the full count.
        assert_eq!(cpus("NodeName=a CPUs=7 Sockets=2 CoresPerSocket=4"), 8);
        assert_eq!(cpus("NodeName=a CPUs=0"), 1);
        let n = &conf("NodeName=a CPUs=48 CoresPerSocket=12").unwrap().nodes[0];
        assert_eq!((n.sockets, n.cpus), (4, 48));
    }

    #[test]
    fn defaults_accumulate_and_apply_to_later_lines_only() {
        let c = conf(
            "NodeName=a CPUs=2\nNodeName=DEFAULT CPUs=4 RealMemory=100\nNodeName=DEFAULT RealMemory=200\nNodeName=b\n\
             NodeName=c CPUs=8\nPartitionName=DEFAULT MaxTime=60\nPartitionName=p Nodes=a,b,c\n",
        )
        .unwrap();
        let got: Vec<(u16, u64)> = c.nodes.iter().map(|n| (n.cpus, n.real_memory)).collect();
        assert_eq!(got, [(2, 1), (4, 200), (8, 200)]);
        assert_eq!(c.partitions[0].max_time, TimeLimit::Minutes(60));
        assert_eq!(c.partitions[0].tres.get(&Tres::MEM), 401);
    }

    #[test]
    fn duplicate_nodes_in_a_partition_count_once() {
        let c = conf("NodeName=n[1-4] CPUs=2\nPartitionName=p Nodes=n[1-3],n2,n[2-4]\nPartitionName=q\n").unwrap();
        assert_eq!((c.partitions[0].total_nodes, c.partitions[0].tres.cpu()), (4, 8));
        assert_eq!((c.partitions[1].total_nodes, c.partitions[1].tres.cpu()), (0, 0));
    }

    #[test]
    fn unknown_keys_and_their_attributes_are_ignored() {
        let c = conf("FooBar=1 Baz=2\nNodeSet=ns Feature=x\nNodeName=a CPUs=4 UnknownNodeKey=7\n").unwrap();
        assert_eq!(c.cluster_cpus, 4);
    }

    #[test]
    fn errors_name_the_file_and_line() {
        assert_eq!(
            err("ClusterName=x\nPriorityWeightAge=12x\n"),
            "test.conf:2: PriorityWeightAge=12x: not a valid number"
        );
        assert!(err("\n\nNodeName=a CPUs=-1").starts_with("test.conf:3: CPUs=-1:"));
        assert!(err("NodeName=DEFAULT CPUs=abc\n\nNodeName=a").starts_with("test.conf:1: CPUs=abc"));
        assert!(err("PartitionName=p MaxTime=5:xx").starts_with("test.conf:1: MaxTime=5:xx"));
        assert!(err("PartitionName=p TRESBillingWeights=CPU=1,gpu=2").starts_with("test.conf:1: TRESBillingWeights"));
        assert!(err("PriorityWeightTRES=CPU=1x").starts_with("test.conf:1: PriorityWeightTRES"));
        assert!(err("PriorityCalcPeriod=0").starts_with("test.conf:1: PriorityCalcPeriod=0: must be at least"));
        assert!(err("PriorityCalcPeriod=UNLIMITED").starts_with("test.conf:1: PriorityCalcPeriod=UNLIMITED: must be"));
        // Each value is checked on its own line, whatever comes later.
        assert_eq!(
            err("PriorityWeightAge=zz\nPriorityWeightAge=5\n"),
            "test.conf:1: PriorityWeightAge=zz: not a valid number"
        );
        assert!(err("PriorityFlags=NO_FAIR_TRE\n").starts_with("test.conf:1: PriorityFlags=NO_FAIR_TRE: unknown flag"));
        assert_eq!(
            err("FairShareDampeningFactor=0"),
            "test.conf:1: FairShareDampeningFactor=0: must be at least 1 (1 is no dampening)"
        );
        assert!(err("PriorityUsageResetPeriod=sometimes").starts_with("test.conf:1:"));
        assert!(err("\nPriorityDecayHalfLife=0").starts_with("test.conf:2: PriorityDecayHalfLife=0 needs"));
        assert!(conf("PriorityDecayHalfLife=0\nPriorityUsageResetPeriod=MONTHLY").is_ok());
        assert!(err("PriorityFavorSmall=maybe").starts_with("test.conf:1:"));
        assert!(err("AccountingStorageEnforce=limits,sometimes").contains("sometimes"));
        assert!(err("a\\\nb").starts_with("test.conf:1: cannot parse \"ab\""));
        assert!(err("PriorityWeightAge=1 PriorityWeightQOS=2").starts_with("test.conf:1: unexpected"));
        assert!(err("NodeName=n[1-2] CPUs=2 junk").starts_with("test.conf:1: cannot parse \"junk\""));
        assert!(err("NodeName=n[1-2\n").starts_with("test.conf:1: NodeName=n[1-2:"));
        assert!(err("NodeName=n[1-2]\nNodeName=n2\n").starts_with("test.conf:2: node n2 is defined twice"));
        assert!(
            err("NodeName=a\nPartitionName=p Nodes=a,b\n")
                .starts_with("test.conf:2: PartitionName=p Nodes=a,b: node b")
        );
        assert!(err("PartitionName=p\nPartitionName=p\n").starts_with("test.conf:2:"));
        assert!(err("PartitionName=p State=SIDEWAYS").starts_with("test.conf:1:"));
        assert!(err("NodeName=n[0-99999999]").contains("more than"));
        assert!(err("Licenses=a:x").starts_with("test.conf:1: Licenses=a:x"));
        assert!(err("NodeName=a Gres=gpu:a:b:2").starts_with("test.conf:1: Gres="));
    }

    #[test]
    fn accounting_storage_enforce_none_is_no_enforcement() {
        assert_eq!(conf("AccountingStorageEnforce=none\n").unwrap(), SlurmConf::default());
        let e = conf("AccountingStorageEnforce=NONE,limits\n").unwrap().accounting_storage_enforce;
        assert!(e.limits && e.associations && !e.qos);
    }

    #[test]
    fn unmodelled_flags_are_warnings_with_their_line() {
        assert_eq!(
            conf("\nPriorityFlags=incr_only").unwrap().warnings,
            ["test.conf:2: PriorityFlags=incr_only: INCR_ONLY not modelled here, and ignored"]
        );
        assert!(conf("PriorityFlags=CALCULATE_RUNNING").unwrap().warnings.is_empty());
    }

    #[test]
    fn the_knobs_the_command_line_shares() {
        assert_eq!(parse_half_life("0"), Ok(0));
        assert_eq!(parse_half_life("14-0"), Ok(14 * 86_400));
        assert_eq!(parse_calc_period("0:30"), Ok(60));
        assert!(parse_calc_period("-1").is_err() && parse_calc_period("0").is_err());
        assert_eq!(parse_dampening("0x10"), Ok(16));
        assert!(parse_dampening("65536").is_err());
        assert_eq!(conf("").unwrap(), SlurmConf::default());
    }

    #[test]
    fn include_errors_name_the_including_line() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.conf"), dir.path().join("b.conf"));
        std::fs::write(&a, "ClusterName=c\nInclude b.conf\n").unwrap();
        std::fs::write(&b, "# b\n\nINCLUDE a.conf\n").unwrap();
        let e = read(&a).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:3: Include", b.display())) && e.contains("cycle"), "{e}");

        std::fs::write(&a, "\ninclude missing.conf\n").unwrap();
        let e = read(&a).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:2: Include", a.display())) && e.contains("missing.conf"), "{e}");

        std::fs::write(&a, "ClusterName=Big\nInclude %c-nodes.conf\n").unwrap();
        std::fs::write(dir.path().join("big-nodes.conf"), "NodeName=n[1-2] CPUs=8\nPriorityWeightQOS=oops\n").unwrap();
        let e = read(&a).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}:2: PriorityWeightQOS=oops", dir.path().join("big-nodes.conf").display())),
            "{e}"
        );
        assert!(err("Include").starts_with("test.conf:1: cannot parse"));
        assert!(err("Include a b").starts_with("test.conf:1: unexpected"));
    }

    #[test]
    fn the_seed_site_example_parses() {
        let c = parse(
            Path::new("examples/seed-site/slurm.conf"),
            include_str!("../../../../examples/seed-site/slurm.conf"),
        )
        .unwrap();
        assert!(c.partitions.len() >= 5 && c.node_count > 0);
        let weight = |p: &str, t: &Tres| c.partition(p).unwrap().billing_weights.as_ref().unwrap().get(t);
        // Broadwell is the unit; its 32 cores and 128 GB make 4 GB cost one core: 0.25 per GB.
        assert_eq!((weight("shared", &Tres::CPU), weight("shared", &Tres::MEM) * 1024.0), (1.0, 0.25));
        // Requeue partitions: a flat 0.5 per CPU and 0.125 per GB.
        for p in ["serial_requeue", "gpu_requeue"] {
            assert_eq!((weight(p, &Tres::CPU), weight(p, &Tres::MEM) * 1024.0), (0.5, 0.125));
        }
        // In every non-requeue partition a whole node's memory costs what its cores cost.
        for p in c.partitions.iter().filter(|p| !p.name.ends_with("_requeue")) {
            let w = p.billing_weights.as_ref().unwrap();
            let whole_node = p.tres.cpu() as f64 * w.get(&Tres::CPU);
            let memory = p.tres.get(&Tres::MEM) as f64 * w.get(&Tres::MEM);
            assert!((whole_node - memory).abs() < 1e-9 * whole_node, "{}: {whole_node} vs {memory}", p.name);
        }
        assert_eq!(
            (c.priority_weight_fairshare, c.priority_weight_age, c.priority_max_age),
            (20_000_000, 10_000_000, 604_800)
        );
        assert_eq!(c.priority_decay_half_life, 604_800);
    }
}
