//! Every account's RawShares from the hardware, by the policy of the project's seed site.
//!
//! An account's share is the sum of three parts, each in CPU TRES:
//!
//! - **gratis share**: the CPU TRES of every node in the public partitions (requeue partitions
//!   excepted), divided equally among all the accounts;
//! - **lab share**: the CPU TRES of the hardware the account bought;
//! - **communal share**: the account's fraction of the CPU TRES of hardware it bought together with
//!   other accounts (fractions agreed among them, or an equal split).
//!
//! A node's CPU TRES is its CPUs (Slurm's `cpu` TRES) times the `CPU=` weight of the
//! `TRESBillingWeights` of the partition it sits in: 0.25 for an AMD Abu Dhabi core, 1.0 for
//! Broadwell, 1.2 for Skylake, and so on. A partition without `TRESBillingWeights` has weight 1
//! (Slurm then bills a job its CPUs); one with weights but no `CPU=` has weight 0.
//!
//! Rules this module settles, where the policy is silent:
//!
//! - Purchased nodes count for their buyers only, even when they also sit in a public partition (as
//!   when owners lend idle nodes to everyone). Counting them in the gratis pool too would sell the
//!   same cores twice; this way the shares add up to the CPU TRES of the public and purchased
//!   hardware, the seed's "the total number of RawShares should be equivalent to the number of CPU
//!   TRES".
//! - A node counts once however many public partitions hold it; those partitions must agree on its
//!   weight.
//! - Requeue partitions are left out of the pool even when also listed as public, and never price a
//!   node: their flat half rate is a discount for preemptible work, not what the hardware is worth.
//!   A purchase given as a host list is priced by the other partitions holding its nodes (or by the
//!   partition the purchase names).
//! - A node bought twice (by two labs, or a lab and a communal group, or listed twice) is an error.
//! - RawShares are integers in Slurm: each account's total is rounded to the nearest integer
//!   (halves away from zero); the unrounded parts are kept in the report.
//!
//! [`compute`] is pure: it takes the hardware ([`Hardware`], e.g. [`Hardware::from_slurm_conf`]) and
//! the site's choices ([`SharePolicy`]) and returns a [`ShareReport`]. [`tree_accounts`],
//! [`set_tree_shares`] and [`flat_tree`] connect it to association trees. [`read_hardware_file`]
//! reads both from a site's hardware file ([`hardware_file`]).

pub mod hardware_file;
pub mod render;

pub use hardware_file::{HardwareSite, read_hardware_file};

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use fairshare_base::error::{Error, Result};
use fairshare_engine::config::{HostList, SlurmConf, Tres};
use fairshare_engine::tree::{AssocRecord, Shares, TreeInput};

/// How far the agreed fractions of a communal purchase may be from summing to 1.
pub const FRACTION_TOLERANCE: f64 = 1e-9;

/// A compute node: its name and its CPUs (Slurm's `cpu` TRES of the node).
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The node name, as in `NodeName=`.
    pub name: String,
    /// CPUs of the node.
    pub cpus: u32,
}

/// A partition: its nodes and the CPU weight of its `TRESBillingWeights`.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionHardware {
    /// `PartitionName`.
    pub name: String,
    /// CPU TRES per CPU of a node in this partition.
    pub cpu_weight: f64,
    /// Names of its nodes (each must be one of [`Hardware::nodes`]; repeats count once).
    pub nodes: Vec<String>,
}

/// The nodes and partitions of a cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hardware {
    /// Every node, once.
    pub nodes: Vec<Node>,
    /// Every partition.
    pub partitions: Vec<PartitionHardware>,
}

impl Hardware {
    /// The nodes and partitions of a `slurm.conf`: each node's CPUs, each partition's nodes (`ALL`
    /// expanded) and `CPU=` billing weight (1 without `TRESBillingWeights`, as Slurm then bills
    /// CPUs).
    ///
    /// # Errors
    /// A partition's node list that is not a host list (the `slurm.conf` reader has already
    /// rejected these, so only a hand-built [`SlurmConf`] can fail).
    ///
    /// # Example
    /// ```
    /// use std::path::Path;
    /// use fairshare_analyses::shares::Hardware;
    /// let conf = fairshare_engine::config::slurm_conf::parse(
    ///     Path::new("slurm.conf"),
    ///     "NodeName=abu[1-2] CPUs=64\nPartitionName=abudhabi Nodes=abu[1-2] TRESBillingWeights=CPU=0.25\n",
    /// )?;
    /// let hw = Hardware::from_slurm_conf(&conf)?;
    /// assert_eq!((hw.nodes[1].name.as_str(), hw.nodes[1].cpus), ("abu2", 64));
    /// assert_eq!(hw.partitions[0].cpu_weight, 0.25);
    /// # Ok::<(), fairshare_base::Error>(())
    /// ```
    pub fn from_slurm_conf(conf: &SlurmConf) -> Result<Hardware> {
        let mut nodes = Vec::new();
        for group in &conf.nodes {
            nodes.extend(group.names.iter().map(|name| Node { name, cpus: u32::from(group.cpus) }));
        }
        let mut partitions = Vec::with_capacity(conf.partitions.len());
        for p in &conf.partitions {
            let names = if p.nodes.eq_ignore_ascii_case("ALL") {
                nodes.iter().map(|n| n.name.clone()).collect()
            } else {
                HostList::parse(&p.nodes)
                    .map_err(|m| Error::Usage(format!("partition {} Nodes={}: {m}", p.name, p.nodes)))?
                    .iter()
                    .collect()
            };
            let cpu_weight = p.billing_weights.as_ref().map_or(1.0, |w| w.get(&Tres::CPU));
            partitions.push(PartitionHardware { name: p.name.clone(), cpu_weight, nodes: names });
        }
        Ok(Hardware { nodes, partitions })
    }
}

/// A name from the policy file and the line it is on (for errors).
#[derive(Clone, Debug, PartialEq)]
pub struct Named {
    /// The name.
    pub name: String,
    /// 1-based line in [`SharePolicy::source`], when known.
    pub line: Option<u64>,
}

impl Named {
    /// A name without a line.
    pub fn new(name: impl Into<String>) -> Self {
        Named { name: name.into(), line: None }
    }
}

/// Hardware bought: a whole partition, some nodes, or some nodes priced by a named partition.
#[derive(Clone, Debug, PartialEq)]
pub struct Purchase {
    /// The partition bought (all its nodes when `nodes` is `None`), or the partition whose CPU
    /// weight prices `nodes` (which must then all be in it).
    pub partition: Option<String>,
    /// The nodes bought. Without `partition` each is priced by the non-requeue partitions holding
    /// it, which must agree on its weight.
    pub nodes: Option<HostList>,
    /// 1-based line of the purchase in [`SharePolicy::source`], when known.
    pub line: Option<u64>,
}

/// Hardware one account bought for itself.
#[derive(Clone, Debug, PartialEq)]
pub struct LabPurchase {
    /// The buying account.
    pub account: String,
    /// What it bought.
    pub hardware: Purchase,
}

/// How a communal purchase is divided among its accounts.
#[derive(Clone, Debug, PartialEq)]
pub enum Split {
    /// Equal parts.
    Equal(Vec<String>),
    /// The agreed fractions, which must sum to 1 (within [`FRACTION_TOLERANCE`]).
    Fractions(Vec<(String, f64)>),
}

/// Hardware several accounts bought together.
#[derive(Clone, Debug, PartialEq)]
pub struct CommunalPurchase {
    /// A name for the purchase (a department, a school, a collaboration), for messages.
    pub name: String,
    /// What was bought.
    pub hardware: Purchase,
    /// Who gets what part of it.
    pub split: Split,
}

/// The hardware and the site's choices: what is public, what is requeue, who bought what, and
/// which accounts share the gratis pool.
#[derive(Clone, Debug, PartialEq)]
pub struct SharePolicy {
    /// The file the policy came from, named in errors.
    pub source: PathBuf,
    /// Nodes and partitions.
    pub hardware: Hardware,
    /// Public partitions: their nodes form the gratis pool.
    pub public: Vec<Named>,
    /// Requeue partitions: never in the pool, never pricing a node.
    pub requeue: Vec<Named>,
    /// Purchases by one account.
    pub labs: Vec<LabPurchase>,
    /// Purchases by several accounts.
    pub communal: Vec<CommunalPurchase>,
    /// The accounts dividing the gratis pool (and the only ones that may buy hardware).
    pub accounts: Vec<Named>,
}

/// One account's share, in CPU TRES.
#[derive(Clone, Debug, PartialEq)]
pub struct AccountShares {
    /// The account.
    pub account: String,
    /// Its part of the gratis pool.
    pub gratis: f64,
    /// CPU TRES of the hardware it bought alone.
    pub lab: f64,
    /// Its parts of communal purchases.
    pub communal: f64,
    /// `gratis + lab + communal`.
    pub total: f64,
    /// `total` rounded to the nearest integer (halves away from zero): the `sacctmgr` fairshare.
    pub raw_shares: u32,
}

/// The CPU TRES of one purchase.
#[derive(Clone, Debug, PartialEq)]
pub struct PurchaseTres {
    /// The buying account, or the communal purchase's name.
    pub owner: String,
    /// Nodes bought.
    pub nodes: u64,
    /// Their CPU TRES.
    pub tres: f64,
}

/// What [`compute`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct ShareReport {
    /// Every account, by name.
    pub accounts: Vec<AccountShares>,
    /// Nodes in the gratis pool.
    pub public_nodes: u64,
    /// CPU TRES of the gratis pool.
    pub public_tres: f64,
    /// Each account's gratis share: `public_tres` over the number of accounts.
    pub gratis: f64,
    /// Lab purchases, in policy order.
    pub labs: Vec<PurchaseTres>,
    /// Communal purchases, in policy order.
    pub communal: Vec<PurchaseTres>,
}

impl ShareReport {
    /// The share of `account`, if it is one of the accounts.
    pub fn get(&self, account: &str) -> Option<&AccountShares> {
        self.accounts.binary_search_by(|a| a.account.as_str().cmp(account)).ok().map(|i| &self.accounts[i])
    }
}

/// Computes every account's share from the hardware and the policy.
///
/// # Errors
/// An [`Error::Input`] naming [`SharePolicy::source`] and, where the policy gives it, the line, for:
/// no accounts, an account listed twice, a public, requeue or purchased partition not in the
/// hardware, a requeue partition bought, a node not in the hardware, a purchase of no nodes, a
/// purchased node outside the partition named for it or with no (or an ambiguous) weight, a node
/// bought twice, a node whose public partitions disagree on its weight, a buyer that is not one of
/// the accounts, a communal split with no accounts, an account twice, a fraction outside [0, 1] or
/// fractions not summing to 1, and a total that is not a 32-bit RawShares value. An
/// [`Error::Usage`] for hardware that names a node twice, a partition twice, or a partition node
/// that is not a node.
///
/// # Example
/// ```
/// use fairshare_analyses::shares::*;
/// let hardware = Hardware {
///     nodes: vec![
///         Node { name: "bdw1".into(), cpus: 32 },
///         Node { name: "abu1".into(), cpus: 64 },
///         Node { name: "skl1".into(), cpus: 48 },
///     ],
///     partitions: vec![
///         PartitionHardware { name: "shared".into(), cpu_weight: 1.0, nodes: vec!["bdw1".into()] },
///         PartitionHardware { name: "abudhabi".into(), cpu_weight: 0.25, nodes: vec!["abu1".into()] },
///         PartitionHardware { name: "lab".into(), cpu_weight: 1.2, nodes: vec!["skl1".into()] },
///     ],
/// };
/// let policy = SharePolicy {
///     source: "hardware.toml".into(),
///     hardware,
///     public: vec![Named::new("shared"), Named::new("abudhabi")],
///     requeue: vec![],
///     labs: vec![LabPurchase {
///         account: "a".into(),
///         hardware: Purchase { partition: Some("lab".into()), nodes: None, line: None },
///     }],
///     communal: vec![],
///     accounts: vec![Named::new("a"), Named::new("b")],
/// };
/// let report = compute(&policy)?;
/// assert_eq!(report.public_tres, 32.0 + 16.0); // 32 Broadwell cores, 64 Abu Dhabi cores at 0.25
/// let a = report.get("a").unwrap();
/// assert_eq!(a.gratis, 24.0); // the pool over two accounts
/// assert!((a.lab - 57.6).abs() < 1e-9); // 48 Skylake cores at 1.2
/// assert_eq!(a.raw_shares, 82); // 81.6 rounds to 82
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn compute(policy: &SharePolicy) -> Result<ShareReport> {
    let err = |line: Option<u64>, message: String| Error::input(&policy.source, line, message);
    let hw = Index::new(&policy.hardware)?;

    if policy.accounts.is_empty() {
        return Err(err(None, "no accounts to share the gratis pool".into()));
    }
    let mut account_index: HashMap<&str, usize> = HashMap::with_capacity(policy.accounts.len());
    for (i, a) in policy.accounts.iter().enumerate() {
        if account_index.insert(a.name.as_str(), i).is_some() {
            return Err(err(a.line, format!("account {:?} is listed twice", a.name)));
        }
    }
    let account = |name: &str, line: Option<u64>, what: &str| {
        account_index.get(name).copied().ok_or_else(|| {
            err(line, format!("{what}: account {name:?} is not one of the accounts sharing the gratis pool"))
        })
    };

    let mut requeue = vec![false; policy.hardware.partitions.len()];
    for r in &policy.requeue {
        let pi =
            hw.partition(&r.name, || err(r.line, format!("requeue partition {:?} is not in slurm.conf", r.name)))?;
        requeue[pi] = true;
    }

    // Purchases first: their nodes leave the gratis pool.
    let mut owner: Vec<Option<usize>> = vec![None; policy.hardware.nodes.len()];
    let mut bought: Vec<(String, Option<u64>)> = Vec::new();
    let mut buy = |p: &Purchase, what: String| -> Result<PurchaseTres> {
        let nodes = hw.resolve(p, &requeue, &what, &err)?;
        let id = bought.len();
        for &(n, _) in &nodes {
            if let Some(prev) = owner[n].replace(id) {
                let name = &policy.hardware.nodes[n].name;
                return Err(if prev == id {
                    err(p.line, format!("{what}: lists node {name} twice"))
                } else {
                    let (first, line) = &bought[prev];
                    let at = line.map_or_else(String::new, |l| format!(" (line {l})"));
                    err(p.line, format!("node {name} is bought twice: by {first}{at} and by {what}"))
                });
            }
        }
        bought.push((what.clone(), p.line));
        let tres = nodes.iter().map(|&(n, w)| f64::from(policy.hardware.nodes[n].cpus) * w).sum();
        Ok(PurchaseTres { owner: String::new(), nodes: nodes.len() as u64, tres })
    };

    let n = policy.accounts.len();
    let (mut lab, mut communal) = (vec![0.0; n], vec![0.0; n]);
    let mut labs = Vec::with_capacity(policy.labs.len());
    for l in &policy.labs {
        let what = format!("lab {}", l.account);
        let i = account(&l.account, l.hardware.line, &what)?;
        let mut t = buy(&l.hardware, what)?;
        lab[i] += t.tres;
        t.owner = l.account.clone();
        labs.push(t);
    }
    let mut communals = Vec::with_capacity(policy.communal.len());
    for c in &policy.communal {
        let what = format!("communal {}", c.name);
        let parts = split(&c.split, |m| err(c.hardware.line, format!("{what}: {m}")))?;
        let parts: Vec<(usize, f64)> = parts
            .into_iter()
            .map(|(name, f)| account(name, c.hardware.line, &what).map(|i| (i, f)))
            .collect::<Result<_>>()?;
        let mut t = buy(&c.hardware, what)?;
        for (i, f) in parts {
            communal[i] += t.tres * f;
        }
        t.owner = c.name.clone();
        communals.push(t);
    }

    // The pool: each node of a public, non-requeue partition once, unless someone bought it.
    let mut public_weight: Vec<Option<(f64, usize)>> = vec![None; policy.hardware.nodes.len()];
    for p in &policy.public {
        let pi =
            hw.partition(&p.name, || err(p.line, format!("public partition {:?} is not in slurm.conf", p.name)))?;
        if requeue[pi] {
            continue;
        }
        let w = policy.hardware.partitions[pi].cpu_weight;
        for &node in &hw.members[pi] {
            match public_weight[node] {
                Some((prev, q)) if prev != w => {
                    let (a, b) = (&policy.hardware.partitions[q].name, &p.name);
                    return Err(err(
                        p.line,
                        format!(
                            "node {} is in public partitions {a} (CPU={prev}) and {b} (CPU={w}): its CPU TRES is ambiguous",
                            policy.hardware.nodes[node].name
                        ),
                    ));
                }
                Some(_) => {}
                None => public_weight[node] = Some((w, pi)),
            }
        }
    }
    let (mut public_nodes, mut public_tres) = (0u64, 0.0);
    for ((node, w), owner) in policy.hardware.nodes.iter().zip(&public_weight).zip(&owner) {
        if let (Some((w, _)), None) = (w, owner) {
            public_nodes += 1;
            public_tres += f64::from(node.cpus) * w;
        }
    }
    let gratis = public_tres / n as f64;

    let mut accounts = Vec::with_capacity(n);
    for (i, a) in policy.accounts.iter().enumerate() {
        let total = gratis + lab[i] + communal[i];
        let rounded = total.round();
        if !(0.0..=f64::from(u32::MAX)).contains(&rounded) {
            return Err(err(
                a.line,
                format!("account {}: total share {total} is not a RawShares value (0 to {})", a.name, u32::MAX),
            ));
        }
        accounts.push(AccountShares {
            account: a.name.clone(),
            gratis,
            lab: lab[i],
            communal: communal[i],
            total,
            raw_shares: rounded as u32,
        });
    }
    accounts.sort_by(|a, b| a.account.cmp(&b.account));
    Ok(ShareReport { accounts, public_nodes, public_tres, gratis, labs, communal: communals })
}

/// Name lookups over [`Hardware`], checked once.
struct Index<'a> {
    hardware: &'a Hardware,
    nodes: HashMap<&'a str, usize>,
    partitions: HashMap<&'a str, usize>,
    /// Each partition's distinct nodes, in its order.
    members: Vec<Vec<usize>>,
    /// The partitions holding each node.
    holders: Vec<Vec<usize>>,
}

impl<'a> Index<'a> {
    fn new(hardware: &'a Hardware) -> Result<Self> {
        let mut nodes = HashMap::with_capacity(hardware.nodes.len());
        for (i, node) in hardware.nodes.iter().enumerate() {
            if nodes.insert(node.name.as_str(), i).is_some() {
                return Err(Error::Usage(format!("node {} is defined twice", node.name)));
            }
        }
        let mut partitions = HashMap::with_capacity(hardware.partitions.len());
        let mut members = Vec::with_capacity(hardware.partitions.len());
        let mut holders = vec![Vec::new(); hardware.nodes.len()];
        for (pi, p) in hardware.partitions.iter().enumerate() {
            if partitions.insert(p.name.as_str(), pi).is_some() {
                return Err(Error::Usage(format!("partition {} is defined twice", p.name)));
            }
            let mut list = Vec::with_capacity(p.nodes.len());
            for name in &p.nodes {
                let &node = nodes
                    .get(name.as_str())
                    .ok_or_else(|| Error::Usage(format!("partition {}: node {name} is not defined", p.name)))?;
                // A repeated name in a partition's list is one node.
                if holders[node].last() != Some(&pi) {
                    holders[node].push(pi);
                    list.push(node);
                }
            }
            members.push(list);
        }
        Ok(Index { hardware, nodes, partitions, members, holders })
    }

    fn partition(&self, name: &str, missing: impl FnOnce() -> Error) -> Result<usize> {
        self.partitions.get(name).copied().ok_or_else(missing)
    }

    /// The nodes of a purchase, each with the CPU weight that prices it.
    fn resolve(
        &self,
        p: &Purchase,
        requeue: &[bool],
        what: &str,
        err: &impl Fn(Option<u64>, String) -> Error,
    ) -> Result<Vec<(usize, f64)>> {
        let fail = |m: String| err(p.line, format!("{what}: {m}"));
        let parts = &self.hardware.partitions;
        let partition = match &p.partition {
            Some(name) => {
                let pi = self.partition(name, || fail(format!("partition {name:?} is not in slurm.conf")))?;
                if requeue[pi] {
                    return Err(fail(format!("{name} is a requeue partition: its flat rate does not price hardware")));
                }
                Some(pi)
            }
            None => None,
        };
        let nodes: Vec<usize> = match (&p.nodes, partition) {
            (Some(list), _) => list
                .iter()
                .map(|name| {
                    let &node = self
                        .nodes
                        .get(name.as_str())
                        .ok_or_else(|| fail(format!("node {name} is not in slurm.conf")))?;
                    if let Some(pi) = partition.filter(|pi| !self.holders[node].contains(pi)) {
                        return Err(fail(format!("node {name} is not in partition {}", parts[pi].name)));
                    }
                    Ok(node)
                })
                .collect::<Result<_>>()?,
            (None, Some(pi)) => self.members[pi].clone(),
            (None, None) => return Err(fail("name the `partition` bought, its `nodes`, or both".into())),
        };
        if nodes.is_empty() {
            return Err(fail("buys no nodes".into()));
        }
        nodes
            .into_iter()
            .map(|node| match partition {
                Some(pi) => Ok((node, parts[pi].cpu_weight)),
                None => self.weight(node, requeue).map(|w| (node, w)).map_err(fail),
            })
            .collect()
    }

    /// The CPU weight of a node from the non-requeue partitions holding it, which must agree.
    fn weight(&self, node: usize, requeue: &[bool]) -> Result<f64, String> {
        let name = &self.hardware.nodes[node].name;
        let parts = &self.hardware.partitions;
        let mut holders = self.holders[node].iter().filter(|&&pi| !requeue[pi]);
        let Some(&first) = holders.next() else {
            return Err(format!(
                "node {name} is in no partition but requeue ones: name the `partition` whose CPU weight prices it"
            ));
        };
        let w = parts[first].cpu_weight;
        if let Some(&other) = holders.find(|&&pi| parts[pi].cpu_weight != w) {
            return Err(format!(
                "node {name} is in partitions {} (CPU={w}) and {} (CPU={}): name the `partition` whose CPU weight prices it",
                parts[first].name, parts[other].name, parts[other].cpu_weight
            ));
        }
        Ok(w)
    }
}

/// The accounts of a split and their fractions, checked.
fn split(s: &Split, fail: impl Fn(String) -> Error) -> Result<Vec<(&str, f64)>> {
    let parts: Vec<(&str, f64)> = match s {
        Split::Equal(names) => names.iter().map(|a| (a.as_str(), 1.0 / names.len() as f64)).collect(),
        Split::Fractions(list) => list.iter().map(|(a, f)| (a.as_str(), *f)).collect(),
    };
    if parts.is_empty() {
        return Err(fail("no accounts share it".into()));
    }
    let mut seen = HashSet::with_capacity(parts.len());
    for &(a, f) in &parts {
        if !seen.insert(a) {
            return Err(fail(format!("account {a:?} is listed twice")));
        }
        if !(0.0..=1.0).contains(&f) {
            return Err(fail(format!("account {a:?}: fraction {f} is not between 0 and 1")));
        }
    }
    if let Split::Fractions(_) = s {
        let sum: f64 = parts.iter().map(|&(_, f)| f).sum();
        if (sum - 1.0).abs() > FRACTION_TOLERANCE {
            return Err(fail(format!("the fractions sum to {sum}, not 1")));
        }
    }
    Ok(parts)
}

/// Which accounts of a tree share the gratis pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TreeAccounts {
    /// Every account but the root, at any depth (the seed divides the pool by "the total number of
    /// Accounts").
    #[default]
    All,
    /// The accounts directly under the root.
    TopLevel,
}

/// The account names of a tree, in file order, each once.
///
/// # Errors
/// An [`Error::Input`] on the tree's source when it has no root (a row without a parent) or two.
///
/// # Example
/// ```
/// use std::path::Path;
/// use fairshare_analyses::shares::{tree_accounts, TreeAccounts};
/// let tree = fairshare_engine::io::assoc_csv::parse(
///     Path::new("tree.csv"),
///     "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,chem,,1,0\n3,2,chem_a,,1,0\n4,3,chem_a,u,1,0\n",
/// )?;
/// assert_eq!(tree_accounts(&tree, TreeAccounts::All)?, ["chem", "chem_a"]);
/// assert_eq!(tree_accounts(&tree, TreeAccounts::TopLevel)?, ["chem"]);
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn tree_accounts(input: &TreeInput, which: TreeAccounts) -> Result<Vec<String>> {
    let mut roots = input.records.iter().filter(|r| r.parent_id.is_none());
    let root = roots.next().ok_or_else(|| Error::input(&input.source, None, "no root (a row without a parent)"))?;
    if let Some(second) = roots.next() {
        return Err(Error::input(
            &input.source,
            second.line,
            format!("a second root (rows without a parent: ids {} and {})", root.id, second.id),
        ));
    }
    let mut seen = HashSet::new();
    Ok(input
        .records
        .iter()
        .filter(|r| !r.is_user() && r.parent_id.is_some())
        .filter(|r| which == TreeAccounts::All || r.parent_id == Some(root.id))
        .filter(|r| seen.insert(r.account.as_str()))
        .map(|r| r.account.clone())
        .collect())
}

/// Sets the shares of the report's accounts on their account rows; users, usage and every other
/// association are kept. Returns the number of rows changed.
///
/// # Errors
/// An [`Error::Input`] on the tree's source naming a report account with no account row.
///
/// # Example
/// ```
/// use std::path::Path;
/// use fairshare_analyses::shares::{AccountShares, ShareReport, set_tree_shares};
/// use fairshare_engine::tree::Shares;
/// let mut tree = fairshare_engine::io::assoc_csv::parse(
///     Path::new("tree.csv"),
///     "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,a,,1,0\n3,2,a,u,parent,5\n",
/// )?;
/// let a = AccountShares { account: "a".into(), gratis: 40.0, lab: 2.4, communal: 0.0, total: 42.4, raw_shares: 42 };
/// let report = ShareReport {
///     accounts: vec![a], public_nodes: 1, public_tres: 40.0, gratis: 40.0, labs: vec![], communal: vec![],
/// };
/// assert_eq!(set_tree_shares(&mut tree, &report)?, 1);
/// assert_eq!(tree.records[1].shares, Shares::Value(42));
/// assert_eq!(tree.records[2].shares, Shares::Parent);
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn set_tree_shares(input: &mut TreeInput, report: &ShareReport) -> Result<usize> {
    let mut found = vec![false; report.accounts.len()];
    let mut changed = 0;
    for r in input.records.iter_mut().filter(|r| !r.is_user() && r.parent_id.is_some()) {
        if let Ok(i) = report.accounts.binary_search_by(|a| a.account.as_str().cmp(&r.account)) {
            r.shares = Shares::Value(u64::from(report.accounts[i].raw_shares));
            found[i] = true;
            changed += 1;
        }
    }
    if let Some(i) = found.iter().position(|f| !f) {
        let name = &report.accounts[i].account;
        return Err(Error::input(&input.source, None, format!("account {name:?} has no account row in the tree")));
    }
    Ok(changed)
}

/// A tree of the report's accounts under a root: `root` (id 1, one share) and each account by name
/// (ids from 2) with its RawShares and no usage.
///
/// # Example
/// ```
/// use fairshare_analyses::shares::{AccountShares, ShareReport, flat_tree};
/// let a = AccountShares { account: "a".into(), gratis: 4.0, lab: 0.0, communal: 0.0, total: 4.0, raw_shares: 4 };
/// let report =
///     ShareReport { accounts: vec![a], public_nodes: 1, public_tres: 4.0, gratis: 4.0, labs: vec![], communal: vec![] };
/// let tree = fairshare_engine::tree::AssocTree::build(flat_tree(&report, "shares"))?;
/// assert_eq!(tree.len(), 2);
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn flat_tree(report: &ShareReport, source: impl Into<PathBuf>) -> TreeInput {
    let row = |id: u64, parent_id, account: &str, shares| {
        AssocRecord::account(id, parent_id, account, Shares::Value(shares), id)
    };
    let mut records = vec![row(1, None, "root", 1)];
    for (i, a) in report.accounts.iter().enumerate() {
        records.push(row(i as u64 + 2, Some(1), &a.account, u64::from(a.raw_shares)));
    }
    TreeInput::slurm(source, records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, cpus: u32) -> Node {
        Node { name: name.into(), cpus }
    }

    fn part(name: &str, cpu_weight: f64, nodes: &[&str]) -> PartitionHardware {
        PartitionHardware { name: name.into(), cpu_weight, nodes: nodes.iter().map(|n| n.to_string()).collect() }
    }

    fn named(names: &[&str]) -> Vec<Named> {
        names.iter().map(|n| Named::new(*n)).collect()
    }

    fn buy(partition: Option<&str>, nodes: Option<&str>, line: u64) -> Purchase {
        Purchase {
            partition: partition.map(Into::into),
            nodes: nodes.map(|n| HostList::parse(n).unwrap()),
            line: Some(line),
        }
    }

    /// A small site in the seed's hardware generations:
    /// - abu[1-2]: Abu Dhabi, 64 cores at 0.25 = 16 each (public `abudhabi`);
    /// - ivy[1-2]: Ivy Bridge, 16 cores at 0.5 = 8 each (public `ivybridge`);
    /// - bdw[1-4]: Broadwell, 32 cores at 1.0 = 32 each (public `shared`);
    /// - skl[1-2]: Skylake, 48 cores at 1.2 = 57.6 each (public `skylake`);
    /// - gpu1: Skylake, 48 cores at 1.2 = 57.6 (partition `gpu`, not public);
    /// - `requeue` holds every node at a flat 0.5.
    fn site() -> SharePolicy {
        let hardware = Hardware {
            nodes: vec![
                node("abu1", 64),
                node("abu2", 64),
                node("ivy1", 16),
                node("ivy2", 16),
                node("bdw1", 32),
                node("bdw2", 32),
                node("bdw3", 32),
                node("bdw4", 32),
                node("skl1", 48),
                node("skl2", 48),
                node("gpu1", 48),
            ],
            partitions: vec![
                part("abudhabi", 0.25, &["abu1", "abu2"]),
                part("ivybridge", 0.5, &["ivy1", "ivy2"]),
                part("shared", 1.0, &["bdw1", "bdw2", "bdw3", "bdw4"]),
                part("skylake", 1.2, &["skl1", "skl2"]),
                part("gpu", 1.2, &["gpu1"]),
                part(
                    "requeue",
                    0.5,
                    &["abu1", "abu2", "ivy1", "ivy2", "bdw1", "bdw2", "bdw3", "bdw4", "skl1", "skl2", "gpu1"],
                ),
            ],
        };
        SharePolicy {
            source: "hardware.toml".into(),
            hardware,
            public: named(&["shared", "skylake", "abudhabi", "ivybridge"]),
            requeue: named(&["requeue"]),
            labs: vec![],
            communal: vec![],
            accounts: named(&["lab_a", "lab_b", "lab_c", "lab_d"]),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn gratis_divides_the_public_pool() {
        let r = compute(&site()).unwrap();
        // 2 × 16 + 2 × 8 + 4 × 32 + 2 × 57.6 = 32 + 16 + 128 + 115.2 = 291.2; gpu1 is not public and
        // the requeue partition is not counted.
        assert_eq!(r.public_nodes, 10);
        assert!(close(r.public_tres, 291.2), "{}", r.public_tres);
        assert!(close(r.gratis, 72.8));
        for a in &r.accounts {
            assert_eq!((a.lab, a.communal), (0.0, 0.0));
            assert!(close(a.total, 72.8));
            assert_eq!(a.raw_shares, 73);
        }
    }

    #[test]
    fn seed_node_values() {
        // The seed's examples: a Broadwell node of 32 cores at CPU=1.0 is 32 TRES, an Abu Dhabi node
        // of 64 cores at 0.25 is 16.
        let mut p = site();
        p.public = vec![];
        p.accounts = named(&["a"]);
        p.labs = vec![
            LabPurchase { account: "a".into(), hardware: buy(None, Some("bdw1"), 1) },
            LabPurchase { account: "a".into(), hardware: buy(None, Some("abu1"), 2) },
        ];
        let r = compute(&p).unwrap();
        assert_eq!(r.labs.iter().map(|l| l.tres).collect::<Vec<_>>(), [32.0, 16.0]);
        assert_eq!(r.get("a").unwrap().raw_shares, 48);
    }

    #[test]
    fn purchases_leave_the_pool_and_add_up() {
        let mut p = site();
        p.labs = vec![
            // A whole partition, and public nodes priced by the partitions holding them.
            LabPurchase { account: "lab_a".into(), hardware: buy(Some("gpu"), None, 10) },
            LabPurchase { account: "lab_b".into(), hardware: buy(None, Some("skl2"), 11) },
        ];
        p.communal = vec![
            CommunalPurchase {
                name: "chem".into(),
                hardware: buy(None, Some("bdw[3-4]"), 12),
                split: Split::Fractions(vec![("lab_c".into(), 0.75), ("lab_d".into(), 0.25)]),
            },
            CommunalPurchase {
                name: "all".into(),
                hardware: buy(Some("ivybridge"), Some("ivy2"), 13),
                split: Split::Equal(vec!["lab_a".into(), "lab_b".into(), "lab_c".into(), "lab_d".into()]),
            },
        ];
        let r = compute(&p).unwrap();
        // The pool loses skl2 (57.6), bdw3-4 (64) and ivy2 (8): 291.2 - 129.6 = 161.6 over 4 accounts.
        assert_eq!(r.public_nodes, 6);
        assert!(close(r.public_tres, 161.6));
        assert!(close(r.gratis, 40.4));
        let parts = |name: &str| {
            let a = r.get(name).unwrap();
            assert!(close(a.total, a.gratis + a.lab + a.communal));
            (a.lab, a.communal, a.raw_shares)
        };
        // lab_a: gpu1 = 57.6, + 2 of ivy2's 8; 40.4 + 57.6 + 2 = 100.
        let (l, c, raw) = parts("lab_a");
        assert!(close(l, 57.6) && close(c, 2.0) && raw == 100);
        // lab_b: skl2 = 57.6, + 2; also 100.
        let (l, c, raw) = parts("lab_b");
        assert!(close(l, 57.6) && close(c, 2.0) && raw == 100);
        // lab_c: 0.75 of 64 = 48, + 2; 40.4 + 50 = 90.4 -> 90.
        let (l, c, raw) = parts("lab_c");
        assert!(close(l, 0.0) && close(c, 50.0) && raw == 90);
        // lab_d: 0.25 of 64 = 16, + 2; 58.4 -> 58.
        let (l, c, raw) = parts("lab_d");
        assert!(close(l, 0.0) && close(c, 18.0) && raw == 58);
        // Nothing is counted twice: the totals are the CPU TRES of public and purchased hardware.
        let sum: f64 = r.accounts.iter().map(|a| a.total).sum();
        assert!(close(sum, 291.2 + 57.6), "{sum}");
        assert_eq!(r.communal.iter().map(|c| (c.nodes, c.tres)).collect::<Vec<_>>(), [(2, 64.0), (1, 8.0)]);
    }

    #[test]
    fn rounding_is_to_nearest_with_halves_away_from_zero() {
        // The ivybridge pool is 16 TRES: 2 for each of 8 accounts. abu1 (16 TRES) is split so that a
        // gets 0.5 and b 15.5: totals 2.5 and 17.5 round up, c's 2 stays, and no total is lost
        // before rounding.
        let mut p = site();
        p.public = named(&["ivybridge"]);
        p.accounts = named(&["a", "b", "c", "d", "e", "f", "g", "h"]);
        p.communal = vec![CommunalPurchase {
            name: "x".into(),
            hardware: buy(Some("abudhabi"), Some("abu1"), 1),
            split: Split::Fractions(vec![("a".into(), 0.03125), ("b".into(), 0.96875)]),
        }];
        let r = compute(&p).unwrap();
        let total_and_raw = |name| r.get(name).map(|a| (a.total, a.raw_shares)).unwrap();
        assert_eq!([total_and_raw("a"), total_and_raw("b"), total_and_raw("c")], [(2.5, 3), (17.5, 18), (2.0, 2)]);
        // Just under a half rounds down.
        p.communal[0].split = Split::Fractions(vec![("a".into(), 0.03), ("b".into(), 0.97)]);
        let r = compute(&p).unwrap();
        let a = r.get("a").unwrap();
        assert!(close(a.total, 2.48) && a.raw_shares == 2);
    }

    #[test]
    fn requeue_is_never_in_the_pool() {
        let mut p = site();
        p.public.push(Named::new("requeue"));
        let r = compute(&p).unwrap();
        assert!(close(r.public_tres, 291.2));
        // Without the requeue list, the flat-rate partition would price and pool every node.
        p.requeue.clear();
        let e = compute(&p).unwrap_err().to_string();
        assert!(e.contains("node abu1 is in public partitions abudhabi (CPU=0.25) and requeue (CPU=0.5)"), "{e}");
    }

    fn error_of(p: &SharePolicy) -> String {
        compute(p).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let mut p = site();
        p.public[1].line = Some(4);
        p.public[1].name = "skylark".into();
        assert_eq!(error_of(&p), "hardware.toml:4: public partition \"skylark\" is not in slurm.conf");

        let mut p = site();
        p.requeue[0].name = "nope".into();
        assert!(error_of(&p).contains("requeue partition \"nope\" is not in slurm.conf"));

        let mut p = site();
        p.labs = vec![LabPurchase { account: "lab_a".into(), hardware: buy(Some("gpu2"), None, 7) }];
        assert_eq!(error_of(&p), "hardware.toml:7: lab lab_a: partition \"gpu2\" is not in slurm.conf");

        let mut p = site();
        p.labs = vec![LabPurchase { account: "nobody".into(), hardware: buy(Some("gpu"), None, 8) }];
        assert_eq!(
            error_of(&p),
            "hardware.toml:8: lab nobody: account \"nobody\" is not one of the accounts sharing the gratis pool"
        );

        let mut p = site();
        p.accounts.clear();
        assert_eq!(error_of(&p), "hardware.toml: no accounts to share the gratis pool");

        let mut p = site();
        p.accounts.push(Named { name: "lab_a".into(), line: Some(3) });
        assert_eq!(error_of(&p), "hardware.toml:3: account \"lab_a\" is listed twice");
    }

    #[test]
    fn fractions_must_sum_to_one() {
        let communal = |split| CommunalPurchase { name: "chem".into(), hardware: buy(Some("gpu"), None, 9), split };
        let mut p = site();
        p.communal = vec![communal(Split::Fractions(vec![("lab_a".into(), 0.5), ("lab_b".into(), 0.4)]))];
        assert_eq!(error_of(&p), "hardware.toml:9: communal chem: the fractions sum to 0.9, not 1");
        // Within the tolerance is fine: thirds rounded to eight places are not.
        let third = 1.0 / 3.0;
        p.communal = vec![communal(Split::Fractions(vec![
            ("lab_a".into(), third),
            ("lab_b".into(), third),
            ("lab_c".into(), third),
        ]))];
        compute(&p).unwrap();
        p.communal = vec![communal(Split::Fractions(vec![("lab_a".into(), 0.33333333), ("lab_b".into(), 0.66666666)]))];
        assert!(error_of(&p).contains("sum to 0.99999999, not 1"));
        p.communal = vec![communal(Split::Fractions(vec![("lab_a".into(), 1.5), ("lab_b".into(), -0.5)]))];
        assert!(error_of(&p).contains("fraction 1.5 is not between 0 and 1"));
        p.communal = vec![communal(Split::Equal(vec![]))];
        assert!(error_of(&p).contains("communal chem: no accounts share it"));
        p.communal = vec![communal(Split::Equal(vec!["lab_a".into(), "lab_a".into()]))];
        assert!(error_of(&p).contains("account \"lab_a\" is listed twice"));
    }

    #[test]
    fn a_node_is_bought_once() {
        let mut p = site();
        p.labs = vec![
            LabPurchase { account: "lab_a".into(), hardware: buy(None, Some("skl[1-2]"), 5) },
            LabPurchase { account: "lab_b".into(), hardware: buy(Some("skylake"), None, 9) },
        ];
        assert_eq!(error_of(&p), "hardware.toml:9: node skl1 is bought twice: by lab lab_a (line 5) and by lab lab_b");
        p.labs.truncate(1);
        p.communal = vec![CommunalPurchase {
            name: "c".into(),
            hardware: buy(None, Some("skl2"), 12),
            split: Split::Equal(vec!["lab_c".into()]),
        }];
        assert!(error_of(&p).contains("node skl2 is bought twice: by lab lab_a (line 5) and by communal c"));
        p.communal.clear();
        p.labs = vec![LabPurchase { account: "lab_a".into(), hardware: buy(None, Some("skl1,skl1"), 5) }];
        assert_eq!(error_of(&p), "hardware.toml:5: lab lab_a: lists node skl1 twice");
    }

    #[test]
    fn purchases_are_priced_by_their_partition() {
        let lab = |hardware| vec![LabPurchase { account: "lab_a".into(), hardware }];
        let mut p = site();
        p.labs = lab(buy(Some("skylake"), Some("bdw1"), 2));
        assert!(error_of(&p).contains("lab lab_a: node bdw1 is not in partition skylake"));
        p.labs = lab(buy(None, Some("bdw9"), 2));
        assert!(error_of(&p).contains("node bdw9 is not in slurm.conf"));
        p.labs = lab(buy(Some("requeue"), None, 2));
        assert!(error_of(&p).contains("requeue is a requeue partition"));
        p.labs = lab(buy(None, None, 2));
        assert!(error_of(&p).contains("name the `partition` bought"));
        p.labs = lab(Purchase { partition: None, nodes: Some(HostList::parse("").unwrap()), line: None });
        assert!(error_of(&p).contains("buys no nodes"));
        // A node only in a requeue partition has no price of its own.
        p.hardware.nodes.push(node("old1", 8));
        p.hardware.partitions[5].nodes.push("old1".into());
        p.labs = lab(buy(None, Some("old1"), 2));
        assert!(error_of(&p).contains("node old1 is in no partition but requeue ones"));
        // Two partitions pricing a node differently need the purchase to say which.
        p.hardware.partitions.push(part("fast", 2.0, &["bdw1"]));
        p.labs = lab(buy(None, Some("bdw1"), 2));
        assert!(error_of(&p).contains("node bdw1 is in partitions shared (CPU=1) and fast (CPU=2)"));
        p.labs = lab(buy(Some("fast"), Some("bdw1"), 2));
        assert!(close(compute(&p).unwrap().get("lab_a").unwrap().lab, 64.0));
    }

    #[test]
    fn hardware_from_slurm_conf() {
        let conf = fairshare_engine::config::slurm_conf::parse(
            std::path::Path::new("slurm.conf"),
            "NodeName=abu[01-02] Sockets=4 CoresPerSocket=16\nNodeName=bdw01 CPUs=32\n\
             PartitionName=abudhabi Nodes=abu[01-02] TRESBillingWeights=CPU=0.25,Mem=0.0625G\n\
             PartitionName=shared Nodes=bdw01\nPartitionName=mem Nodes=bdw01 TRESBillingWeights=Mem=1G\n\
             PartitionName=requeue Nodes=ALL TRESBillingWeights=CPU=0.5\n",
        )
        .unwrap();
        let hw = Hardware::from_slurm_conf(&conf).unwrap();
        assert_eq!(hw.nodes, [node("abu01", 64), node("abu02", 64), node("bdw01", 32)]);
        let weights: Vec<(&str, f64, usize)> =
            hw.partitions.iter().map(|p| (p.name.as_str(), p.cpu_weight, p.nodes.len())).collect();
        assert_eq!(weights, [("abudhabi", 0.25, 2), ("shared", 1.0, 1), ("mem", 0.0, 1), ("requeue", 0.5, 3)]);
    }

    #[test]
    fn tree_helpers() {
        use Shares::{Parent, Value};
        let text = "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,chem,,5,0\n3,2,chem_a,,1,0\n\
                    4,3,chem_a,u,parent,9\n5,1,astro,,7,0\n6,5,astro,v,1,3\n";
        let mut tree = fairshare_engine::io::assoc_csv::parse(std::path::Path::new("t.csv"), text).unwrap();
        assert_eq!(tree_accounts(&tree, TreeAccounts::All).unwrap(), ["chem", "chem_a", "astro"]);
        assert_eq!(tree_accounts(&tree, TreeAccounts::TopLevel).unwrap(), ["chem", "astro"]);
        let share = |account: &str, raw_shares| AccountShares {
            account: account.into(),
            gratis: 0.0,
            lab: 0.0,
            communal: 0.0,
            total: f64::from(raw_shares),
            raw_shares,
        };
        let report = ShareReport {
            accounts: vec![share("astro", 70), share("chem_a", 30)],
            public_nodes: 0,
            public_tres: 0.0,
            gratis: 0.0,
            labs: vec![],
            communal: vec![],
        };
        assert_eq!(set_tree_shares(&mut tree, &report).unwrap(), 2);
        let shares: Vec<Shares> = tree.records.iter().map(|r| r.shares).collect();
        assert_eq!(shares, [Value(1), Value(5), Value(30), Parent, Value(70), Value(1)]);
        let mut missing = report.clone();
        missing.accounts.push(share("zoo", 1));
        assert!(set_tree_shares(&mut tree, &missing).unwrap_err().to_string().contains("\"zoo\" has no account row"));
        let flat = flat_tree(&report, "x");
        let rows: Vec<(u64, Option<u64>, &str, Shares)> =
            flat.records.iter().map(|r| (r.id, r.parent_id, r.account.as_str(), r.shares)).collect();
        assert_eq!(
            rows,
            [(1, None, "root", Value(1)), (2, Some(1), "astro", Value(70)), (3, Some(1), "chem_a", Value(30))]
        );
    }
}
