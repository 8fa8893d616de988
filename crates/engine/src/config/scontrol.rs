//! `scontrol show config` and `scontrol show partition` output, read in place of a slurm.conf (for
//! users who can run scontrol but cannot read the file) into the same [`SlurmConf`].
//!
//! - `scontrol show config` (`slurm_print_ctl_conf()`): a `Configuration data as of TIME` line,
//!   then one `Key = Value` line per setting (the key padded to 23 columns, `%-23s = %s`), up to
//!   the first blank line. What follows it (`Cgroup Support Configuration:`, `MPI Plugins
//!   Configuration:`, `Slurmctld(primary) at HOST is UP`, ...) is not slurm.conf's and is skipped.
//!   The `Priority*` durations are printed by `secs2time_str()` in exact seconds
//!   (`PriorityDecayHalfLife = 7-00:00:00`, `PriorityCalcPeriod = 00:05:00`,
//!   `PriorityMaxAge = 7-00:00:00`) and read so; an unset value is `(null)`; booleans are
//!   `Yes`/`No` (`yes`/`no` since Slurm 24.05); no enforcement is `none`; the default
//!   PriorityFlags is an empty value. Every other value is read by the slurm.conf reader's own
//!   parser for its key (keys are case-insensitive: scontrol's `PriorityWeightFairShare` is
//!   slurm.conf's `PriorityWeightFairshare`), and keys not used here are skipped.
//! - `scontrol show partition` (`slurm_sprint_partition_info()`): one record per partition,
//!   `PartitionName=NAME` and then indented lines of space-separated `Key=Value` pairs (all on one
//!   line with `scontrol -o`), records separated by blank lines. Its settings (`PriorityJobFactor`,
//!   `PriorityTier`, `MaxTime`, `Default`, `State`, `TRESBillingWeights`) are read as a slurm.conf
//!   partition line's are; its totals are slurmctld's own: `TotalNodes` and `TRES` (the sum of
//!   its nodes' TRES and the tracked licenses, `_calc_part_tres()`).
//!
//! The two may come alone or in one file (`(scontrol show config; scontrol show partition)`).
//! scontrol shows no node records, so the cluster's node count is the number of nodes in its
//! partitions, and its CPUs (which `PriorityWeightJobSize` needs) the partitions' totals combined
//! so that each of those nodes counts once, when their node lists allow that. A node in no
//! partition is not seen.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::Path;

use super::conf_syntax::parse_unsigned;
use super::hostlist::HostList;
use super::slurm_conf::{
    CALC_PERIOD_RANGE, Loc, MAX_NODES, PartitionSpec, SlurmConf, Table, Value, add_partitions, attributes,
    check_scalars, partition_settings, set_scalar,
};
use super::time::{INFINITE, parse_secs2time_str};
use super::tres::{Tres, TresCounts, TresKind, parse_tres_counts};
use fairshare_base::error::{Error, Result};

/// The first line of `scontrol show config`.
const HEADER: &str = "Configuration data as of";

/// What scontrol prints for a value that is not set (C's `printf("%s", NULL)`).
const NULL: &str = "(null)";

/// Whether `text` begins as scontrol's output does: its first non-blank line is the `scontrol
/// show config` header or a `Key = Value` line padded as scontrol pads a short key, or begins a
/// `scontrol show partition` record: `PartitionName=NAME` alone with an indented line after it, or
/// (`scontrol -o`) with `TotalNodes=`, which a slurm.conf partition line never has.
pub fn looks_like(text: &str) -> bool {
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    let Some(first) = lines.next() else { return false };
    let alone = |l: &str| !l.trim_end().contains(char::is_whitespace) && !l.trim_end().ends_with('\\');
    first.starts_with(HEADER)
        || is_padded_pair(first)
        || first.starts_with("PartitionName=")
            && (first.contains(" TotalNodes=")
                || alone(first) && lines.next().is_some_and(|l| l.starts_with([' ', '\t'])))
}

/// `Key = Value` as `slurm_print_key_pairs()` prints it (`%-23s = %s`) for a key shorter than 23
/// characters: the key padded to 23 columns, a space and the `=`. (A longer key takes one space,
/// as anyone writes `Key = Value`.)
fn is_padded_pair(line: &str) -> bool {
    let key_len = line.find(' ').unwrap_or(0);
    (1..23).contains(&key_len)
        && !line[..key_len].contains('=')
        && line.find('=').is_some_and(|eq| eq == 24 && line[key_len..eq].bytes().all(|b| b == b' '))
}

/// One line of `scontrol show config`'s list: the key and the value, trimmed (an empty value
/// may have lost its trailing space to an editor).
fn config_pair(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once('=')?;
    let key_end = key.trim_end();
    let spaced = key_end.len() < key.len();
    (spaced && !key_end.is_empty() && !key_end.contains(char::is_whitespace)).then(|| (key_end, value.trim()))
}

/// Parses scontrol's output; `path` names it in errors.
///
/// # Errors
/// A line of the configuration list that is not `Key = Value`; a malformed value of a key used
/// here (`file:line: Key=Value: why`); a partition record that cannot be read or lacks
/// `TotalNodes` or `TRES`; a partition given twice; a line that belongs to neither output; or
/// `PriorityWeightJobSize` with partitions that do not determine the cluster's CPU count.
///
/// # Example
/// ```
/// use std::path::Path;
/// let conf = fairshare_engine::config::scontrol::parse(
///     Path::new("site.txt"),
///     "Configuration data as of 2026-01-08T00:00:00\n\
///      PriorityDecayHalfLife   = 14-00:00:00\n\
///      PriorityFlags           = \n\
///      PriorityWeightJobSize   = 1000\n\
///      \n\
///      PartitionName=batch\n   Nodes=n[01-04]\n   State=UP TotalCPUs=128 TotalNodes=4\n   \
///      TRES=cpu=128,mem=500G,node=4,billing=128\n",
/// )?;
/// assert_eq!((conf.priority_decay_half_life, conf.node_count, conf.cluster_cpus), (14 * 86_400, 4, 128));
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn parse(path: &Path, text: &str) -> Result<SlurmConf> {
    let mut reader = Reader::default();
    let mut lines = text.lines().zip(1u64..).peekable();
    while let Some((line, number)) = lines.next() {
        let loc = Loc { path: path.to_path_buf(), line: number };
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with("PartitionName=") {
            let mut table = attributes(&loc, line)?;
            // The record's indented lines (`scontrol -o` prints none).
            while let Some(&(next, n)) = lines.peek() {
                if !next.starts_with([' ', '\t']) || next.trim().is_empty() {
                    break;
                }
                table.extend(attributes(&Loc { path: path.to_path_buf(), line: n }, next)?);
                lines.next();
            }
            reader.partition(&loc, &table)?;
        } else if line.starts_with(HEADER) || (!reader.config_read && config_pair(line).is_some()) {
            if reader.config_read {
                return Err(loc.err("a second `scontrol show config` output"));
            }
            reader.config_read = true;
            // Without the header line, this line is the list's first.
            let first = (!line.starts_with(HEADER)).then_some((line, number));
            let list = std::iter::from_fn(|| lines.next_if(|(l, _)| !l.trim().is_empty()));
            for (pair, n) in first.into_iter().chain(list) {
                reader.setting(&Loc { path: path.to_path_buf(), line: n }, pair)?;
            }
        } else if reader.config_read && !is_slurm_conf_pair(line) {
            // scontrol's sections after the list (plugin configurations, the controllers' state):
            // not what slurmctld computes priorities with.
        } else {
            return Err(loc.err(format!(
                "cannot parse {:?}: expected `scontrol show config` or `scontrol show partition` output",
                line.trim()
            )));
        }
    }
    reader.finish(path)
}

/// A `Key=Value` line as slurm.conf writes one (no space before the `=`), which scontrol's
/// sections after its list never print: such a line is refused there rather than skipped, so
/// that a slurm.conf taken for scontrol's output is not silently half read.
fn is_slurm_conf_pair(line: &str) -> bool {
    line.split_once('=').is_some_and(|(key, _)| !key.is_empty() && !key.contains(char::is_whitespace))
}

#[derive(Default)]
struct Reader {
    conf: SlurmConf,
    /// Where each setting used here was read.
    scalars: Table,
    /// Whether `scontrol show config`'s list has been read.
    config_read: bool,
    partitions: Vec<PartitionSpec>,
    /// Each partition's nodes.
    members: Vec<HostList>,
}

impl Reader {
    /// One `Key = Value` line of `scontrol show config`.
    fn setting(&mut self, loc: &Loc, line: &str) -> Result<()> {
        let Some((key, value)) = config_pair(line) else {
            return Err(loc.err(format!(
                "cannot parse {:?}: expected `Key = Value`, as `scontrol show config` prints it",
                line.trim()
            )));
        };
        if value == NULL {
            return Ok(());
        }
        let lower = key.to_ascii_lowercase();
        let v = Value { key: key.to_string(), text: value.to_string(), loc: loc.clone() };
        let c = &mut self.conf;
        let used = match lower.as_str() {
            "prioritydecayhalflife" => {
                c.priority_decay_half_life = v.parse(parse_secs2time_str)?;
                true
            }
            "prioritymaxage" => {
                c.priority_max_age = v.parse(parse_secs2time_str)?;
                true
            }
            "prioritycalcperiod" => {
                c.priority_calc_period = v.parse(|t| {
                    parse_secs2time_str(t)
                        .and_then(|s| if (60..INFINITE).contains(&s) { Ok(s) } else { Err(CALC_PERIOD_RANGE.into()) })
                })?;
                true
            }
            _ => set_scalar(c, &lower, &v)?,
        };
        if used {
            self.scalars.insert(lower, v);
        }
        Ok(())
    }

    /// One `scontrol show partition` record: its settings as slurm.conf's, its totals as printed.
    fn partition(&mut self, loc: &Loc, table: &Table) -> Result<()> {
        let name = &table["partitionname"].text;
        if self.partitions.iter().any(|p| p.partition.name == *name) {
            return Err(loc.err(format!("PartitionName={name} is defined twice")));
        }
        let printed = |key: &str| {
            table.get(&key.to_ascii_lowercase()).ok_or_else(|| {
                loc.err(format!(
                    "PartitionName={name}: no {key} (scontrol show partition prints the partition's totals)"
                ))
            })
        };
        let (total_nodes, tres) = (printed("TotalNodes")?, printed("TRES")?);
        let get = |key: &str| table.get(key).filter(|v| v.text != NULL);
        let mut partition = partition_settings(name, &get)?;
        partition.total_nodes = total_nodes.parse(|t| parse_unsigned(t, MAX_NODES, false, false))?;
        partition.tres = if tres.text == NULL { TresCounts::new() } else { tres.parse(partition_tres)? };
        // As the slurm.conf reader's totals: cpu and mem always there, node the node count.
        partition.tres.set(Tres::CPU, partition.tres.cpu());
        partition.tres.set(Tres::MEM, partition.tres.get(&Tres::MEM));
        partition.tres.set(Tres::NODE, partition.total_nodes);
        let err = |m: String| loc.err(format!("PartitionName={name} Nodes={}: {m}", partition.nodes));
        let nodes = HostList::parse(&partition.nodes).map_err(err)?;
        if nodes.len() > MAX_NODES {
            return Err(err(format!("more than {MAX_NODES} names")));
        }
        self.members.push(nodes);
        self.partitions.push(PartitionSpec { partition, loc: loc.clone() });
        Ok(())
    }

    fn finish(mut self, path: &Path) -> Result<SlurmConf> {
        let mut conf = std::mem::take(&mut self.conf);
        check_scalars(&mut conf, &self.scalars)?;
        let parts: Vec<&TresCounts> = self.partitions.iter().map(|p| &p.partition.tres).collect();
        let (node_count, totals) = cluster_totals(&self.members, &parts).map_err(|m| Error::input(path, None, m))?;
        conf.node_count = node_count;
        match totals {
            Some(mut tres) => {
                tres.set(Tres::NODE, node_count);
                for (license, count) in conf.licenses.iter() {
                    tres.set(license.clone(), count);
                }
                conf.cluster_cpus = tres.cpu();
                conf.cluster_tres = tres;
            }
            None if conf.priority_weight_job_size > 0 => {
                return Err(Error::input(
                    path,
                    None,
                    "PriorityWeightJobSize needs the cluster's CPU count, which scontrol does not print and these \
                     partitions do not determine (no combination of their totals counts each of their nodes once); \
                     give the slurm.conf instead",
                ));
            }
            // Nothing reads the totals without a job-size weight: they stay 0, as documented.
            None => conf.cluster_tres.set(Tres::NODE, node_count),
        }
        add_partitions(&mut conf, self.partitions)?;
        Ok(conf)
    }
}

/// A partition's `TRES=` as `assoc_mgr_make_tres_str_from_array()` prints it
/// (`cpu=1024,mem=4000G,node=16,billing=2024,gres/gpu=32`: memory with a unit, zero counts left
/// out). `billing` is left out: the slurm.conf reader does not compute a partition's billing
/// total, and both readers give the same partitions. TRES this engine does not know (`ic/*`) are
/// skipped: no weight can name them.
fn partition_tres(text: &str) -> Result<TresCounts, String> {
    let mut tres = TresCounts::new();
    for item in text.split(',').filter(|i| !i.is_empty()) {
        let name = item.split_once('=').ok_or_else(|| format!("TRES count {item:?} is not type=count"))?.0;
        if Tres::parse(name).is_ok_and(|t| t != Tres::BILLING) {
            for (t, count) in parse_tres_counts(item)?.iter() {
                tres.set(t.clone(), count);
            }
        }
    }
    Ok(tres)
}

/// The cluster's node count (the distinct nodes of the partitions, `members`) and, when the
/// partitions determine them, its TRES totals but licenses and burst buffers (cluster-wide counts
/// every partition repeats): the partitions' totals `parts` weighed so that every node counts
/// once.
///
/// Nodes that belong to the same partitions form a block; a partition's total is the sum of its
/// blocks'. Weights `y` with, for every block, the sum of `y` over the partitions holding it equal
/// to 1 give `Σ y_p · total_p` = the sum over all blocks, whatever each block holds. Such weights
/// exist when a partition holds every node (`y` = 1 for it), when some partitions split the nodes
/// between them, and in the other cases linear algebra finds; otherwise the totals are unknown.
///
/// # Errors
/// More than [`MAX_NODES`] nodes.
fn cluster_totals(members: &[HostList], parts: &[&TresCounts]) -> Result<(u64, Option<TresCounts>), String> {
    // Each node's partitions, in partition order.
    let mut holders: HashMap<String, Vec<usize>> = HashMap::new();
    for (p, list) in members.iter().enumerate() {
        for name in list.iter() {
            let len = holders.len() as u64;
            match holders.entry(name) {
                Entry::Occupied(mut e) => e.get_mut().push(p),
                Entry::Vacant(e) if len < MAX_NODES => {
                    e.insert(vec![p]);
                }
                Entry::Vacant(_) => return Err(format!("the partitions hold more than {MAX_NODES} nodes")),
            }
        }
    }
    let node_count = holders.len() as u64;
    let mut blocks: Vec<Vec<usize>> = holders.into_values().collect();
    blocks.sort_unstable();
    blocks.dedup();
    let Some(y) = once_per_block(&blocks, parts.len()) else { return Ok((node_count, None)) };
    let mut sums: Vec<(Tres, f64)> = vec![(Tres::CPU, 0.0), (Tres::MEM, 0.0)];
    for (tres, weight) in parts.iter().zip(&y).filter(|(_, w)| **w != 0.0) {
        for (t, count) in tres.iter().filter(|(t, _)| !matches!(t.kind(), TresKind::License | TresKind::Bb)) {
            match sums.iter_mut().find(|(s, _)| s == t) {
                Some((_, sum)) => *sum += weight * count as f64,
                None => sums.push((t.clone(), weight * count as f64)),
            }
        }
    }
    let mut totals = TresCounts::new();
    for (t, sum) in sums {
        totals.set(t, sum.round().max(0.0) as u64);
    }
    Ok((node_count, Some(totals)))
}

/// Weights `y` (one per partition) with `Σ_{p ∋ b} y_p = 1` for every block `b` (the sorted
/// partitions holding it), by Gauss-Jordan elimination; `None` when there are none.
fn once_per_block(blocks: &[Vec<usize>], partitions: usize) -> Option<Vec<f64>> {
    const EPS: f64 = 1e-9;
    // One equation per block: its partitions' coefficients, then the right-hand side 1.
    let mut rows: Vec<Vec<f64>> = blocks
        .iter()
        .map(|b| {
            let mut row = vec![0.0; partitions + 1];
            for &p in b {
                row[p] = 1.0;
            }
            row[partitions] = 1.0;
            row
        })
        .collect();
    let mut pivots = Vec::new();
    for col in 0..partitions {
        let r = pivots.len();
        let Some(best) = (r..rows.len()).max_by(|&a, &b| rows[a][col].abs().total_cmp(&rows[b][col].abs())) else {
            break;
        };
        if rows[best][col].abs() < EPS {
            continue;
        }
        rows.swap(r, best);
        let pivot_row: Vec<f64> = rows[r].iter().map(|x| x / rows[r][col]).collect();
        for (i, row) in rows.iter_mut().enumerate() {
            let f = row[col];
            if i != r && f != 0.0 {
                for (x, p) in row.iter_mut().zip(&pivot_row) {
                    *x -= f * p;
                }
            }
        }
        rows[r] = pivot_row;
        pivots.push(col);
    }
    // Equations left without a pivot read 0 = rhs.
    if rows[pivots.len()..].iter().any(|row| row[partitions].abs() > EPS) {
        return None;
    }
    let mut y = vec![0.0; partitions];
    for (row, &col) in rows.iter().zip(&pivots) {
        y[col] = row[partitions];
    }
    Some(y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::slurm_conf::{AccountingEnforce, PartitionState, ResetPeriod};
    use crate::config::time::TimeLimit;

    fn conf(text: &str) -> Result<SlurmConf> {
        parse(Path::new("site.txt"), text)
    }

    fn err(text: &str) -> String {
        conf(text).unwrap_err().to_string()
    }

    /// A partition record as `slurm_sprint_partition_info()` prints it, for `count` nodes of 64 CPUs and
    /// 256000 MB.
    fn partition(name: &str, nodes: &str, count: u64, extra: &str) -> String {
        format!(
            "PartitionName={name}\n   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n   \
             AllocNodes=ALL Default=NO QoS=N/A\n   \
             DefaultTime=NONE DisableRootJobs=NO Exclusive=NO GraceTime=0 Hidden=NO\n   \
             MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED \
             MaxCPUsPerSocket=UNLIMITED\n   Nodes={nodes}\n   \
             PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO\n   \
             OverTimeLimit=NONE PreemptMode=OFF\n   \
             State=UP TotalCPUs={cpus} TotalNodes={count} SelectTypeParameters=NONE\n   \
             JobDefaults=(null)\n   DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED\n   \
             TRES=cpu={cpus},mem={gb}G,node={count},billing={cpus}{extra}\n\n",
            cpus = 64 * count,
            gb = 250 * count,
        )
    }

    #[test]
    fn the_configuration_list_is_read_with_scontrol_spellings() {
        let c = conf(
            "Configuration data as of 2026-01-08T00:00:00\n\
             AccountingStorageBackupHost = (null)\n\
             AccountingStorageEnforce = associations,limits,qos\n\
             AcctGatherNodeFreq      = 0 sec\n\
             ClusterName             = Odyssey\n\
             FairShareDampeningFactor = 2\n\
             GresTypes               = gpu\n\
             HASH_VAL                = Different Ours=0x1 Slurmctld=0x2\n\
             Licenses                = matlab:10\n\
             PriorityDecayHalfLife   = 14-00:00:00\n\
             PriorityCalcPeriod      = 00:01:00\n\
             PriorityFavorSmall      = Yes\n\
             PriorityFlags           = NO_FAIR_TREE,MAX_TRES\n\
             PriorityMaxAge          = 3-12:00:00\n\
             PriorityType            = priority/multifactor\n\
             PriorityUsageResetPeriod = QUARTERLY\n\
             PriorityWeightAge       = 1000\n\
             PriorityWeightFairShare = 20000\n\
             PriorityWeightTRES      = CPU=1000,Mem=2000G\n\
             SlurmctldHost[0]        = ctl1(10.0.0.1)\n",
        )
        .unwrap();
        assert_eq!(c.cluster_name.as_deref(), Some("odyssey"));
        let e = c.accounting_storage_enforce;
        assert!(e.associations && e.limits && e.qos && !e.safe);
        assert_eq!((c.fair_share_dampening_factor, c.gres_types.as_slice()), (2, ["gpu".to_string()].as_slice()));
        assert_eq!(c.licenses.get(&Tres::license("matlab")), 10);
        assert_eq!((c.priority_decay_half_life, c.priority_calc_period, c.priority_max_age), (1_209_600, 60, 302_400));
        assert!(c.priority_favor_small && !c.priority_flags.fair_tree && c.priority_flags.max_tres);
        assert_eq!(c.priority_usage_reset_period, ResetPeriod::Quarterly);
        assert_eq!((c.priority_weight_age, c.priority_weight_fairshare), (1000, 20_000));
        assert_eq!(c.priority_weight_tres.unwrap().get(&Tres::MEM), 2000.0 / 1024.0);
        assert!(c.partitions.is_empty() && c.nodes.is_empty());
    }

    #[test]
    fn unset_values_defaults_and_newer_spellings() {
        let c = conf(
            "Configuration data as of 2026-01-08T00:00:00\n\
             AccountingStorageEnforce = none\n\
             ClusterName             = (null)\n\
             Licenses                = (null)\n\
             PriorityFavorSmall      = no\n\
             PriorityFlags           = \n\
             PriorityWeightTRES      = (null)\n\
             PriorityUsageResetPeriod = NONE\n",
        )
        .unwrap();
        assert_eq!(c, SlurmConf::default());
        // An editor may have taken the empty value's trailing space; the header may be gone.
        assert_eq!(conf("PriorityFlags           =\n").unwrap(), SlurmConf::default());
        assert!(conf("PriorityFlags           =\nPriorityFavorSmall      = yes\n").unwrap().priority_favor_small);
        assert_eq!(
            conf("Configuration data as of 2026-01-08T00:00:00\nAccountingStorageEnforce = none\n")
                .unwrap()
                .accounting_storage_enforce,
            AccountingEnforce::default()
        );
    }

    #[test]
    fn durations_are_exact_seconds() {
        let c = conf(
            "Configuration data as of x\nPriorityMaxAge          = 49710-06:27:16\nPriorityDecayHalfLife   = 00:00:00\n\
             PriorityUsageResetPeriod = WEEKLY\n",
        )
        .unwrap();
        // An UNLIMITED PriorityMaxAge, as slurmctld keeps it and the slurm.conf reader reads it.
        let from_conf =
            crate::config::slurm_conf::parse(Path::new("slurm.conf"), "PriorityMaxAge=UNLIMITED\n").unwrap();
        assert_eq!((c.priority_max_age, c.priority_decay_half_life), (from_conf.priority_max_age, 0));
        assert_eq!(
            err("Configuration data as of x\nPriorityCalcPeriod      = 5\n"),
            "site.txt:2: PriorityCalcPeriod=5: \"5\" is not a duration as scontrol prints one ([days-]HH:MM:SS or UNLIMITED)"
        );
        assert_eq!(
            err(
                "PartitionName=p TotalNodes=0 TRES=(null)\n\nConfiguration data as of x\nPriorityCalcPeriod      = 00:00:00\n"
            ),
            "site.txt:4: PriorityCalcPeriod=00:00:00: must be at least one minute, and not UNLIMITED"
        );
        assert!(
            err("Configuration data as of x\nPriorityDecayHalfLife   = 00:00:00\n")
                .starts_with("site.txt:2: PriorityDecayHalfLife=0 needs a PriorityUsageResetPeriod")
        );
    }

    #[test]
    fn the_sections_after_the_list_are_skipped() {
        let c = conf(
            "Configuration data as of 2026-01-08T00:00:00\nPriorityWeightAge       = 7\n\n\
             Cgroup Support Configuration:\nAllowedRAMSpace         = 100.0%\nCgroupPlugin            = autodetect\n\n\
             MPI Plugins Configuration:\nPMIxCliTmpDirBase       = (null)\n\n\
             Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup) at ctl2 is UP\n",
        )
        .unwrap();
        assert_eq!(c.priority_weight_age, 7);
        // A slurm.conf line there is refused, not skipped.
        assert_eq!(
            err("Configuration data as of x\n\nNodeName=n1 CPUs=4\n"),
            "site.txt:3: cannot parse \"NodeName=n1 CPUs=4\": expected `scontrol show config` or `scontrol show partition` output"
        );
    }

    #[test]
    fn malformed_lines_name_the_file_and_line() {
        assert_eq!(
            err("Configuration data as of x\nPriorityWeightAge       = 1\nPriorityWeightQOS 5\n"),
            "site.txt:3: cannot parse \"PriorityWeightQOS 5\": expected `Key = Value`, as `scontrol show config` prints it"
        );
        assert_eq!(
            err("Configuration data as of x\nPriorityWeightAge       = lots\n"),
            "site.txt:2: PriorityWeightAge=lots: not a valid number"
        );
        assert!(
            err("Configuration data as of x\nPriorityFavorSmall      = maybe\n")
                .starts_with("site.txt:2: PriorityFavorSmall=maybe:")
        );
        assert_eq!(
            err("Configuration data as of x\n\nConfiguration data as of y\n"),
            "site.txt:3: a second `scontrol show config` output"
        );
        assert_eq!(
            err("hello\n"),
            "site.txt:1: cannot parse \"hello\": expected `scontrol show config` or `scontrol show partition` output"
        );
    }

    #[test]
    fn partition_records_give_settings_and_totals() {
        let text = format!(
            "{}{}",
            partition("batch", "n[01-16]", 16, ",license/lic=20")
                .replace("Default=NO", "Default=YES")
                .replace("PriorityJobFactor=1 PriorityTier=1", "PriorityJobFactor=30 PriorityTier=2")
                .replace("MaxTime=UNLIMITED", "MaxTime=2-00:00:00")
                .replace("\n\n", "\n   TRESBillingWeights=CPU=1.0,Mem=0.25G\n\n"),
            partition("gpu", "g[01-04]", 4, ",gres/gpu=32,ic/ofed=4").replace("State=UP", "State=DRAIN")
        );
        let c = conf(&text).unwrap();
        let batch = c.partition("batch").unwrap();
        assert_eq!((batch.nodes.as_str(), batch.total_nodes, batch.default), ("n[01-16]", 16, true));
        assert_eq!((batch.priority_job_factor, batch.priority_tier, batch.max_time), (30, 2, TimeLimit::Minutes(2880)));
        assert_eq!(batch.tres.to_string(), "cpu=1024,mem=4096000,node=16,license/lic=20");
        assert_eq!(batch.billing_weights.as_ref().unwrap().get(&Tres::MEM), 0.25 / 1024.0);
        assert_eq!(batch.norm_priority, 1.0);
        let gpu = c.partition("gpu").unwrap();
        assert_eq!(
            (gpu.state, gpu.max_time, gpu.norm_priority),
            (PartitionState::Drain, TimeLimit::Unlimited, 1.0 / 30.0)
        );
        assert_eq!(gpu.tres.to_string(), "cpu=256,mem=1024000,node=4,gres/gpu=32");
        assert_eq!(c.default_partition().unwrap().name, "batch");
        // Two partitions splitting the nodes: the cluster is their sum.
        assert_eq!((c.node_count, c.cluster_cpus), (20, 1280));
        assert_eq!(c.cluster_tres.to_string(), "cpu=1280,mem=5120000,node=20,gres/gpu=32");
        // `scontrol -o` prints a record on one line.
        let one_line = partition("batch", "n[01-16]", 16, "").replace("\n   ", " ");
        assert_eq!(conf(&one_line).unwrap().partition("batch").unwrap().tres.cpu(), 1024);
    }

    #[test]
    fn empty_partitions_and_bad_records() {
        let c = conf("PartitionName=empty\n   Nodes=(null)\n   State=UP TotalCPUs=0 TotalNodes=0\n   TRES=(null)\n")
            .unwrap();
        assert_eq!(
            (c.partitions[0].nodes.as_str(), c.partitions[0].tres.to_string().as_str()),
            ("", "cpu=0,mem=0,node=0")
        );
        assert_eq!(
            err("PartitionName=p\n   Nodes=n1\n   State=UP TotalCPUs=1\n   TRES=cpu=1,node=1\n"),
            "site.txt:1: PartitionName=p: no TotalNodes (scontrol show partition prints the partition's totals)"
        );
        assert_eq!(
            err("PartitionName=p\n   Nodes=n1\n   State=UP TotalNodes=1\n   TRES=cpu=1,mem=x,node=1\n"),
            "site.txt:4: TRES=cpu=1,mem=x,node=1: TRES count \"mem=x\": unknown unit 'x' (K, M, G, T or P)"
        );
        assert_eq!(
            err("PartitionName=p\n   MaxTime=forever TotalNodes=0 TRES=(null)\n"),
            "site.txt:2: MaxTime=forever: \"forever\" is not a Slurm time (minutes, min:sec, h:m:s, days-h[:m[:s]] or UNLIMITED)"
        );
        assert_eq!(err("PartitionName=p\n   State=UP junk\n"), "site.txt:2: cannot parse \"junk\": expected Key=Value");
        assert_eq!(
            err("PartitionName=p TotalNodes=0 TRES=(null)\n\nPartitionName=p TotalNodes=0 TRES=(null)\n"),
            "site.txt:3: PartitionName=p is defined twice"
        );
    }

    #[test]
    fn cluster_totals_count_each_node_once() {
        let part = |name: &str, nodes: &str, count: u64| partition(name, nodes, count, "");
        // A partition holding every node gives the totals; so do overlapping ones that can be
        // combined: {a, b}, {b, c}, {a, c} each count every node twice.
        for (text, cpus) in [
            (part("all", "n[1-6]", 6) + &part("some", "n[1-2]", 2), 6 * 64),
            (part("ab", "n[1-4]", 4) + &part("bc", "n[3-6]", 4) + &part("ac", "n[1-2,5-6]", 4), 6 * 64),
            (part("ab", "n[1-4]", 4) + &part("b", "n[3-4]", 2) + &part("c", "n[5-6]", 2), 6 * 64),
        ] {
            let c = conf(&text).unwrap();
            assert_eq!((c.node_count, c.cluster_cpus, c.cluster_tres.get(&Tres::MEM)), (6, cpus, 6 * 256_000));
        }
        // {a, b} and {b, c} alone do not tell a + b + c: unknown, which only a job-size weight needs.
        let overlapping = part("ab", "n[1-4]", 4) + &part("bc", "n[3-6]", 4);
        let c = conf(&overlapping).unwrap();
        assert_eq!((c.node_count, c.cluster_cpus), (6, 0));
        assert_eq!(
            err(&format!("Configuration data as of x\nPriorityWeightJobSize   = 10\n\n{overlapping}")),
            "site.txt: PriorityWeightJobSize needs the cluster's CPU count, which scontrol does not print and these \
             partitions do not determine (no combination of their totals counts each of their nodes once); give \
             the slurm.conf instead"
        );
    }

    #[test]
    fn the_fixture_pair_reads_alike() {
        let from_conf = crate::config::slurm_conf::parse(
            Path::new("slurm.conf"),
            include_str!("../../../../tests/fixtures/scontrol/slurm.conf"),
        )
        .unwrap();
        let mut from_scontrol = conf(include_str!("../../../../tests/fixtures/scontrol/scontrol.txt")).unwrap();
        // What scontrol does not show as slurm.conf does: the node records, and `Nodes=` as written.
        assert!(from_scontrol.nodes.is_empty());
        from_scontrol.nodes.clone_from(&from_conf.nodes);
        assert_eq!(from_scontrol.partition("long").unwrap().nodes, "g[01-04],n[09-16]");
        for (p, q) in from_scontrol.partitions.iter_mut().zip(&from_conf.partitions) {
            p.nodes.clone_from(&q.nodes);
        }
        assert_eq!(from_scontrol, from_conf);
    }

    #[test]
    fn detection() {
        for scontrol in [
            "Configuration data as of 2026-01-08T00:00:00\nAccountingStorageBackupHost = (null)\n",
            "\n\nClusterName             = odyssey\n",
            "PriorityWeightAge       = 1000\n",
            "PartitionName=batch\n   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n",
            "PartitionName=batch AllowGroups=ALL State=UP TotalCPUs=4 TotalNodes=1 TRES=cpu=4\n",
        ] {
            assert!(looks_like(scontrol), "{scontrol:?}");
        }
        for slurm_conf in [
            "",
            "# slurm.conf\nPriorityWeightAge=1000\n",
            "PriorityWeightAge = 1000\n",
            "priorityweightpartition = 0x10\n",
            "PartitionName=batch Nodes=ALL\nPartitionName=gpu Nodes=g1\n",
            "PartitionName=batch Nodes=ALL \\\n   MaxTime=1-0\n",
        ] {
            assert!(!looks_like(slurm_conf), "{slurm_conf:?}");
        }
    }
}
