//! A site's hardware file: the [`SharePolicy`] and the association tree it names, as `fairshare
//! shares --hardware FILE` reads them.
//!
//! The hardware file is TOML; paths in it are relative to it:
//!
//! ```toml
//! slurm_conf = "slurm.conf"           # nodes (CPUs), partitions (nodes, TRESBillingWeights CPU=)
//! tree = "tree.csv"                   # optional: accounts, and the tree `--format tree-csv` rewrites
//! tree_format = "assoc-csv"           # optional (detected)
//! tree_accounts = "all"               # with a tree and no `accounts`: "all" (default) or "top-level"
//! # accounts = ["astro_lab", "econ_lab"]  # or the accounts, listed (then each must be in the tree)
//! exclude = ["rc_staff"]              # optional: accounts that take no gratis share
//! public = ["shared", "skylake"]      # the gratis pool
//! requeue = ["serial_requeue"]        # never in the pool, never pricing a node
//!
//! [[lab]]                             # one purchase by one account; repeat for more
//! account = "huttenhower_lab"
//! nodes = "skl[041-048]"              # a host list, and/or `partition = "..."` (all its nodes, or
//!                                     # the partition whose CPU weight prices `nodes`)
//!
//! [[communal]]                        # one purchase by several accounts
//! name = "chemistry"
//! nodes = "bdw[057-064]"
//! labs = { chem_jacobsen = 0.5, chem_aspuru = 0.5 }   # fractions summing to 1,
//! # labs = ["chem_jacobsen", "chem_aspuru"]           # or a list: equal parts
//! ```
//!
//! Errors name the hardware file and the line of the offending key or entry.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::{
    CommunalPurchase, Hardware, LabPurchase, Named, Purchase, SharePolicy, Split, TreeAccounts, tree_accounts,
};
use fairshare_base::error::{Error, Result};
use fairshare_base::named::Named as _;
use fairshare_engine::config::HostList;
use fairshare_engine::io::{TreeFormat, read_tree_input};
use fairshare_engine::tree::{AssocTree, TreeInput};

/// A hardware file resolved: the policy, and the tree it names.
#[derive(Clone, Debug)]
pub struct HardwareSite {
    /// The share policy: the hardware of its slurm.conf, the public and requeue partitions, the
    /// purchases and the accounts.
    pub policy: SharePolicy,
    /// The file's `tree`, when it names one (checked to build).
    pub tree: Option<TreeInput>,
}

/// Reads the hardware file at `file` and what it names: its slurm.conf and its tree.
///
/// # Errors
/// An unreadable hardware file, slurm.conf or tree; an invalid hardware file (an [`Error::Input`]
/// naming the file and the line of the offending key or entry); an invalid slurm.conf; a tree that
/// does not build.
pub fn read_hardware_file(file: &Path) -> Result<HardwareSite> {
    let text = fairshare_base::read::source::read_config(file)?;
    let t = Toml { file, text: &text };
    let h: HardwareFile = toml::from_str(&text).map_err(|e| t.err(e.span(), e.message().trim_end().to_string()))?;
    let base = file.parent().unwrap_or(Path::new("."));

    let conf_path = base.join(&h.slurm_conf);
    let conf = fairshare_engine::config::read_slurm_conf(&conf_path, None)?;
    // Only scontrol's output names partition nodes without NodeName records to price them by.
    if conf.nodes.is_empty() && conf.partitions.iter().any(|p| !p.nodes.is_empty()) {
        return Err(Error::input(
            &conf_path,
            None,
            "the hardware needs each node's CPUs, from slurm.conf's NodeName lines, which scontrol's output \
             does not have",
        ));
    }
    let hardware = Hardware::from_slurm_conf(&conf)?;

    let format = match &h.tree_format {
        Some(f) => {
            let message = || format!("tree_format = {:?}: expected one of {}", f.get_ref(), TreeFormat::names());
            Some(TreeFormat::of_name(f.get_ref()).ok_or_else(|| t.err(Some(f.span()), message()))?)
        }
        None => None,
    };
    let tree = match &h.tree {
        Some(p) => {
            let input = read_tree_input(&base.join(p), format)?;
            // Fail on a broken tree now rather than write one.
            AssocTree::build(input.clone())?;
            Some(input)
        }
        None => None,
    };

    let accounts = accounts(&t, &h, tree.as_ref())?;
    let labs = h
        .lab
        .iter()
        .map(|l| {
            let e = l.get_ref();
            Ok(LabPurchase { account: e.account.clone(), hardware: t.purchase(&e.partition, &e.nodes, l.span())? })
        })
        .collect::<Result<_>>()?;
    let communal = h
        .communal
        .iter()
        .map(|c| {
            let e = c.get_ref();
            Ok(CommunalPurchase {
                name: e.name.clone(),
                hardware: t.purchase(&e.partition, &e.nodes, c.span())?,
                split: split(&t, &e.name, &e.labs)?,
            })
        })
        .collect::<Result<_>>()?;
    let policy = SharePolicy {
        source: file.to_path_buf(),
        hardware,
        public: t.names(&h.public),
        requeue: t.names(&h.requeue),
        labs,
        communal,
        accounts,
    };
    Ok(HardwareSite { policy, tree })
}

/// The hardware file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HardwareFile {
    slurm_conf: PathBuf,
    tree: Option<PathBuf>,
    tree_format: Option<Spanned<String>>,
    tree_accounts: Option<Spanned<String>>,
    accounts: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    exclude: Vec<Spanned<String>>,
    public: Vec<Spanned<String>>,
    #[serde(default)]
    requeue: Vec<Spanned<String>>,
    #[serde(default)]
    lab: Vec<Spanned<LabEntry>>,
    #[serde(default)]
    communal: Vec<Spanned<CommunalEntry>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabEntry {
    account: String,
    partition: Option<String>,
    nodes: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommunalEntry {
    name: String,
    partition: Option<String>,
    nodes: Option<Spanned<String>>,
    /// A list (equal parts) or a table of fractions; read as a value to tell which.
    labs: Spanned<toml::Value>,
}

/// The hardware file's path and text, to turn TOML spans into errors with lines.
struct Toml<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Toml<'_> {
    fn line(&self, span: Range<usize>) -> Option<u64> {
        let before = &self.text.as_bytes()[..span.start.min(self.text.len())];
        Some(1 + before.iter().filter(|&&b| b == b'\n').count() as u64)
    }

    fn err(&self, span: Option<Range<usize>>, message: String) -> Error {
        Error::input(self.file, span.and_then(|s| self.line(s)), message)
    }

    fn names(&self, list: &[Spanned<String>]) -> Vec<Named> {
        list.iter().map(|s| Named { name: s.get_ref().clone(), line: self.line(s.span()) }).collect()
    }

    fn purchase(
        &self,
        partition: &Option<String>,
        nodes: &Option<Spanned<String>>,
        span: Range<usize>,
    ) -> Result<Purchase> {
        let nodes = nodes
            .as_ref()
            .map(|n| {
                HostList::parse(n.get_ref())
                    .map_err(|m| self.err(Some(n.span()), format!("nodes = {:?}: {m}", n.get_ref())))
            })
            .transpose()?;
        Ok(Purchase { partition: partition.clone(), nodes, line: self.line(span) })
    }
}

/// The accounts sharing the gratis pool: listed, or from the tree; less the excluded ones.
fn accounts(t: &Toml<'_>, h: &HardwareFile, tree: Option<&TreeInput>) -> Result<Vec<Named>> {
    let mut accounts: Vec<Named> = match (&h.accounts, &h.tree_accounts) {
        (Some(_), Some(which)) => {
            return Err(t.err(Some(which.span()), "give `accounts` or `tree_accounts`, not both".into()));
        }
        (Some(list), None) => {
            let in_tree = tree.map(|tree| tree_accounts(tree, TreeAccounts::All)).transpose()?;
            if let Some(a) = list.get_ref().iter().find(|a| in_tree.as_ref().is_some_and(|n| !n.contains(a.get_ref())))
            {
                return Err(t.err(Some(a.span()), format!("account {:?} is not an account of the tree", a.get_ref())));
            }
            t.names(list.get_ref())
        }
        (None, which) => {
            let Some(tree) = tree else {
                let at = which.as_ref().map(Spanned::span);
                return Err(t.err(at, "name the accounts: `accounts = [...]`, or a `tree` to take them from".into()));
            };
            let which = match which {
                None => TreeAccounts::All,
                Some(w) => match w.get_ref().as_str() {
                    "all" => TreeAccounts::All,
                    "top-level" => TreeAccounts::TopLevel,
                    other => {
                        let m = format!("tree_accounts = {other:?}: expected \"all\" or \"top-level\"");
                        return Err(t.err(Some(w.span()), m));
                    }
                },
            };
            tree_accounts(tree, which)?.into_iter().map(Named::new).collect()
        }
    };
    for x in &h.exclude {
        let before = accounts.len();
        accounts.retain(|a| &a.name != x.get_ref());
        if accounts.len() == before {
            return Err(t.err(Some(x.span()), format!("exclude: {:?} is not one of the accounts", x.get_ref())));
        }
    }
    Ok(accounts)
}

/// Reads a communal purchase's `labs`: a list of accounts, or a table of account = fraction.
fn split(t: &Toml<'_>, name: &str, labs: &Spanned<toml::Value>) -> Result<Split> {
    let bad = || {
        let m = format!(
            "communal {name}: `labs` must be a list of accounts (equal parts) or a table of account = fraction"
        );
        t.err(Some(labs.span()), m)
    };
    match labs.get_ref() {
        toml::Value::Array(list) => {
            list.iter().map(|v| v.as_str().map(str::to_string).ok_or_else(bad)).collect::<Result<_>>().map(Split::Equal)
        }
        toml::Value::Table(table) => table
            .iter()
            .map(|(a, v)| match v {
                toml::Value::Float(f) => Ok((a.clone(), *f)),
                toml::Value::Integer(i) => Ok((a.clone(), *i as f64)),
                _ => Err(bad()),
            })
            .collect::<Result<_>>()
            .map(Split::Fractions),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLURM_CONF: &str = "NodeName=bdw[01-04] CPUs=32\nNodeName=skl[01-02] CPUs=48\n\
                              PartitionName=shared Nodes=bdw[01-04]\n\
                              PartitionName=skylake Nodes=skl[01-02] TRESBillingWeights=CPU=1.2\n";

    const TREE: &str = "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,chem,,1,0\n3,2,chem,u,1,0\n\
                        4,1,astro,,1,0\n5,4,astro,v,1,0\n6,1,staff,,1,0\n";

    /// Writes `hardware` as `hardware.toml` beside a slurm.conf and a `tree.csv`, and reads it.
    fn read(hardware: &str) -> Result<HardwareSite> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("slurm.conf"), SLURM_CONF).unwrap();
        std::fs::write(dir.path().join("tree.csv"), TREE).unwrap();
        let file = dir.path().join("hardware.toml");
        std::fs::write(&file, hardware).unwrap();
        read_hardware_file(&file)
    }

    fn error_of(hardware: &str) -> String {
        read(hardware).unwrap_err().to_string()
    }

    #[test]
    fn reads_the_policy_and_the_tree() {
        let site = read(
            "slurm_conf = \"slurm.conf\"\ntree = \"tree.csv\"\nexclude = [\"staff\"]\npublic = [\"shared\"]\n\
             requeue = [\"skylake\"]\n\n[[lab]]\naccount = \"astro\"\nnodes = \"skl01\"\n\n\
             [[communal]]\nname = \"c\"\npartition = \"shared\"\nlabs = { chem = 0.25, astro = 0.75 }\n",
        )
        .unwrap();
        let p = &site.policy;
        assert!(p.source.ends_with("hardware.toml"));
        assert_eq!(p.hardware.nodes.len(), 6);
        let names = |list: &[Named]| list.iter().map(|n| (n.name.clone(), n.line)).collect::<Vec<_>>();
        assert_eq!(names(&p.accounts), [("chem".to_string(), None), ("astro".to_string(), None)]);
        assert_eq!(names(&p.public), [("shared".to_string(), Some(4))]);
        assert_eq!(names(&p.requeue), [("skylake".to_string(), Some(5))]);
        assert_eq!(p.labs.len(), 1);
        assert_eq!(p.labs[0].account, "astro");
        assert_eq!(p.labs[0].hardware.nodes, Some(HostList::parse("skl01").unwrap()));
        assert_eq!(p.labs[0].hardware.line, Some(7));
        let c = &p.communal[0];
        assert_eq!(
            (c.name.as_str(), c.hardware.partition.as_deref(), c.hardware.line),
            ("c", Some("shared"), Some(11))
        );
        assert_eq!(c.split, Split::Fractions(vec![("astro".into(), 0.75), ("chem".into(), 0.25)]));
        assert_eq!(site.tree.unwrap().records.len(), 6);
    }

    #[test]
    fn listed_accounts_need_no_tree() {
        let site = read(
            "slurm_conf = \"slurm.conf\"\naccounts = [\"a\", \"b\"]\npublic = [\"shared\"]\n\n\
             [[communal]]\nname = \"ab\"\nnodes = \"bdw[01-02]\"\nlabs = [\"a\", \"b\"]\n",
        )
        .unwrap();
        assert!(site.tree.is_none());
        assert_eq!(
            site.policy.accounts,
            [Named { name: "a".into(), line: Some(2) }, Named { name: "b".into(), line: Some(2) }]
        );
        assert_eq!(site.policy.communal[0].split, Split::Equal(vec!["a".into(), "b".into()]));
    }

    #[test]
    fn scontrol_output_has_no_node_cpus_to_price() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("site.txt"),
            "PartitionName=shared\n   Nodes=bdw[01-02]\n   State=UP TotalCPUs=64 TotalNodes=2\n   \
             TRES=cpu=64,mem=250G,node=2,billing=64\n",
        )
        .unwrap();
        let file = dir.path().join("hardware.toml");
        std::fs::write(&file, "slurm_conf = \"site.txt\"\naccounts = [\"a\"]\npublic = [\"shared\"]\n").unwrap();
        let e = read_hardware_file(&file).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "site.txt: the hardware needs each node's CPUs, from slurm.conf's NodeName lines, which scontrol's \
                 output does not have"
            ),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let e = error_of("slurm_conf = \"slurm.conf\"\ntree = \"tree.csv\"\ntree_format = \"nope\"\npublic = []\n");
        assert!(
            e.ends_with(
                "hardware.toml:3: tree_format = \"nope\": expected one of assoc-csv, sshare, flux-csv, flux-db, \
                 parquet, sacctmgr-dump, sshare-json"
            ),
            "{e}"
        );
        let bad_labs = "communal c: `labs` must be a list of accounts (equal parts) or a table of account = fraction";
        let communal = |labs: &str| {
            format!(
                "slurm_conf = \"slurm.conf\"\naccounts = [\"a\"]\npublic = []\n[[communal]]\nname = \"c\"\n\
                 nodes = \"bdw01\"\nlabs = {labs}\n"
            )
        };
        for labs in ["3", "[\"a\", 1]", "{ a = \"x\" }"] {
            let e = error_of(&communal(labs));
            assert!(e.ends_with(&format!("hardware.toml:7: {bad_labs}")), "{labs}: {e}");
        }
        let e = error_of("slurm_conf = \"slurm.conf\"\nbogus = 1\npublic = []\n");
        assert!(e.contains("hardware.toml:2: unknown field `bogus`"), "{e}");
        let e = error_of("slurm_conf = \"slurm.conf\"\ntree = \"tree.csv\"\nexclude = [\"zoo\"]\npublic = []\n");
        assert!(e.ends_with("hardware.toml:3: exclude: \"zoo\" is not one of the accounts"), "{e}");
        let e = error_of("slurm_conf = \"slurm.conf\"\npublic = []\n");
        assert!(
            e.ends_with("hardware.toml: name the accounts: `accounts = [...]`, or a `tree` to take them from"),
            "{e}"
        );
    }
}
