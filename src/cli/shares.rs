//! `fairshare shares --hardware FILE`: every account's RawShares from the hardware it bought and the
//! public hardware it shares ([`fairshare::shares`]), as a table, as `sacctmgr` commands, or as an
//! `assoc-csv` tree.
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

use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use fairshare::config::HostList;
use fairshare::io::{TreeFormat, read_tree_input};
use fairshare::output::atomic::AtomicFile;
use fairshare::shares::{
    CommunalPurchase, Hardware, LabPurchase, Named, Purchase, SharePolicy, ShareReport, Split, TreeAccounts, compute,
    flat_tree, set_tree_shares, tree_accounts,
};
use fairshare::tree::{AssocTree, Shares, TreeInput};
use fairshare::{Error, Result};
use serde::Deserialize;
use toml::Spanned;

use super::args::{SharesArgs, SharesFormat};

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

/// The hardware file resolved: the policy, and the tree it names.
struct Site {
    policy: SharePolicy,
    tree: Option<TreeInput>,
}

/// Runs `fairshare shares`.
///
/// # Errors
/// An unreadable or invalid hardware file, slurm.conf or tree, an inconsistent policy, or a failed
/// write.
pub fn run(a: &SharesArgs) -> Result<()> {
    let site = read_site(&a.hardware)?;
    let report = compute(&site.policy)?;
    let mut text = String::new();
    match a.format {
        SharesFormat::Table => write_table(&mut text, &report),
        SharesFormat::Sacctmgr => write_sacctmgr(&mut text, &report),
        SharesFormat::TreeCsv => {
            let tree = match site.tree {
                Some(mut tree) => {
                    set_tree_shares(&mut tree, &report)?;
                    tree
                }
                None => flat_tree(&report, &a.hardware),
            };
            write_tree_csv(&mut text, &tree);
        }
    }
    match &a.out {
        Some(path) => {
            let mut file = AtomicFile::create(path)?;
            file.write_all(text.as_bytes()).map_err(|e| Error::io(path, e))?;
            file.commit()
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| Error::io("<stdout>", e))
        }
    }
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

/// Reads the hardware file and what it names.
fn read_site(file: &Path) -> Result<Site> {
    let text = fairshare::io::source::read_config(file)?;
    let t = Toml { file, text: &text };
    let h: HardwareFile = toml::from_str(&text).map_err(|e| t.err(e.span(), e.message().trim_end().to_string()))?;
    let base = file.parent().unwrap_or(Path::new("."));

    let conf = fairshare::config::slurm_conf::read(&base.join(&h.slurm_conf))?;
    let hardware = Hardware::from_slurm_conf(&conf)?;

    let format = match &h.tree_format {
        Some(f) => {
            let found = TreeFormat::ALL.iter().find(|(_, name)| *name == f.get_ref().as_str());
            let names: Vec<&str> = TreeFormat::ALL.iter().map(|(_, n)| *n).collect();
            let message = || format!("tree_format = {:?}: expected one of {}", f.get_ref(), names.join(", "));
            Some(found.map(|(f, _)| *f).ok_or_else(|| t.err(Some(f.span()), message()))?)
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
    Ok(Site { policy, tree })
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

/// Account, gratis, lab, communal, total (3 decimals) and RawShares, then a total row.
fn write_table(out: &mut String, r: &ShareReport) {
    let w = r.accounts.iter().map(|a| a.account.len()).max().unwrap_or(0).max("Account".len());
    let row = |out: &mut String, name: &str, g: f64, l: f64, c: f64, t: f64, raw: u64| {
        out.push_str(&format!("{name:<w$} {g:>12.3} {l:>12.3} {c:>12.3} {t:>12.3} {raw:>10}\n"));
    };
    let (d, n) = ("-".repeat(12), "-".repeat(10));
    let rule = format!("{} {d} {d} {d} {d} {n}\n", "-".repeat(w));
    out.push_str(&format!(
        "{:<w$} {:>12} {:>12} {:>12} {:>12} {:>10}\n",
        "Account", "Gratis", "Lab", "Communal", "Total", "RawShares"
    ));
    out.push_str(&rule);
    let mut sum = (0.0, 0.0, 0.0, 0.0, 0u64);
    for a in &r.accounts {
        let raw = u64::from(a.raw_shares);
        row(out, &a.account, a.gratis, a.lab, a.communal, a.total, raw);
        sum = (sum.0 + a.gratis, sum.1 + a.lab, sum.2 + a.communal, sum.3 + a.total, sum.4 + raw);
    }
    out.push_str(&rule);
    row(out, "(total)", sum.0, sum.1, sum.2, sum.3, sum.4);
}

/// One `sacctmgr` command per account, by account name.
fn write_sacctmgr(out: &mut String, r: &ShareReport) {
    for a in &r.accounts {
        let name = shell_word(&a.account);
        out.push_str(&format!("sacctmgr -i modify account where name={name} set fairshare={}\n", a.raw_shares));
    }
}

/// `word` as one shell word: as is when it has only safe characters, else single-quoted.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.+@%:/".contains(&b)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The tree as `assoc-csv`, rows in input order. `partition` and `priority` columns are added
/// when some row has one, so nothing the tree holds is dropped; account usage is written as read
/// (assoc-csv readers sum account usage from the users).
fn write_tree_csv(out: &mut String, tree: &TreeInput) {
    let partitions = tree.records.iter().any(|r| r.partition.is_some());
    let priorities = tree.records.iter().any(|r| r.priority.is_some());
    out.push_str("id,parent_id,account,user,shares,usage");
    if partitions {
        out.push_str(",partition");
    }
    if priorities {
        out.push_str(",priority");
    }
    out.push('\n');
    for r in &tree.records {
        let parent = r.parent_id.map_or_else(String::new, |p| p.to_string());
        let shares = match r.shares {
            Shares::Value(n) => n.to_string(),
            Shares::Parent => "parent".to_string(),
        };
        let (account, user) = (csv_field(&r.account), csv_field(r.user.as_deref().unwrap_or("")));
        out.push_str(&format!("{},{parent},{account},{user},{shares},{}", r.id, r.usage));
        if partitions {
            out.push(',');
            out.push_str(&csv_field(r.partition.as_deref().unwrap_or("")));
        }
        if priorities {
            out.push(',');
            out.push_str(&r.priority.map_or_else(String::new, |p| p.to_string()));
        }
        out.push('\n');
    }
}

/// A CSV field, quoted when it holds a comma, a quote, a line break or white space at an end.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.trim() != s {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
