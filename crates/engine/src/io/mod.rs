//! Readers: every tree input a site has, into [`AssocTree`].
//!
//! | format | what |
//! |---|---|
//! | `assoc-csv` | `id,parent_id,account,user,shares,usage[,partition][,priority]`, rows in any order |
//! | `sshare` | an `sshare -a [-l] -P`/`-p` dump with its header; hierarchy from the Account indentation |
//! | `flux-csv` | flux-accounting's weighted-tree CSV `level,bank,user,shares,usage` |
//! | `flux-db` | a flux-accounting SQLite database |
//! | `parquet` | the canonical columns as Parquet |
//! | `sacctmgr-dump` | the hierarchy file of `sacctmgr dump CLUSTER file=...` (no usage) |
//! | `sshare-json` | the `shares` response of `sshare --json` (Slurm's data_parser) |

pub mod assoc_csv;
pub mod flux_csv;
pub mod flux_db;
pub mod parquet_tree;
pub use fairshare_base::read::row_groups::{is_guarded_reader_panic, read_whole as read_parquet_whole};
pub mod sacctmgr_dump;
pub mod sshare_dump;
pub mod sshare_json;
pub(crate) mod tree_values;

use std::path::Path;

use crate::tree::{AssocTree, TreeInput};
use fairshare_base::error::{Error, Result};
use fairshare_base::named::{Choice, Named};

/// A tree input format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeFormat {
    /// `id,parent_id,account,user,shares,usage` CSV.
    AssocCsv,
    /// A parsable `sshare -a` dump.
    Sshare,
    /// flux-accounting's weighted-tree CSV.
    FluxCsv,
    /// A flux-accounting SQLite database.
    FluxDb,
    /// Canonical Parquet.
    Parquet,
    /// A `sacctmgr dump` hierarchy file.
    SacctmgrDump,
    /// The `shares` response of `sshare --json`.
    SshareJson,
}

/// The formats' names on the command line and in site files.
impl Named for TreeFormat {
    const CHOICES: &'static [Choice<Self>] = &[
        Choice::new(TreeFormat::AssocCsv, "assoc-csv", ""),
        Choice::new(TreeFormat::Sshare, "sshare", ""),
        Choice::new(TreeFormat::FluxCsv, "flux-csv", ""),
        Choice::new(TreeFormat::FluxDb, "flux-db", ""),
        Choice::new(TreeFormat::Parquet, "parquet", ""),
        Choice::new(TreeFormat::SacctmgrDump, "sacctmgr-dump", ""),
        Choice::new(TreeFormat::SshareJson, "sshare-json", ""),
    ];
}

impl TreeFormat {
    /// Tells the format of `path` from its first bytes.
    ///
    /// # Errors
    /// The file cannot be read or matches no format.
    pub fn detect(path: &Path) -> Result<TreeFormat> {
        let head = fairshare_base::read::source::head(path, 4096)?;
        if head.starts_with(b"PAR1") {
            return Ok(TreeFormat::Parquet);
        }
        if head.starts_with(b"SQLite format 3\0") {
            return Ok(TreeFormat::FluxDb);
        }
        let text = String::from_utf8_lossy(&head);
        // Slurm's responses are objects whose `shares` key comes first or soon after.
        if text.trim_start_matches('\u{feff}').trim_start().starts_with('{') && text.contains("\"shares\"") {
            return Ok(TreeFormat::SshareJson);
        }
        // A dump opens with a block of `#` comments, so look past them.
        let code = text
            .lines()
            .map(|l| l.trim().trim_start_matches('\u{feff}'))
            .find(|l| !l.is_empty() && !l.starts_with('#'));
        if code.is_some_and(|l| ["Cluster - ", "Parent - ", "Account - ", "User - "].iter().any(|k| l.starts_with(k))) {
            return Ok(TreeFormat::SacctmgrDump);
        }
        let first = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with("CLUSTER:")).unwrap_or("");
        let first = first.trim_start_matches('\u{feff}');
        if first.starts_with("Account|") || first.starts_with("Account |") {
            return Ok(TreeFormat::Sshare);
        }
        // Field by field, as the readers split them: pyarrow's `write_csv` quotes every header name.
        let fields = fairshare_base::read::fields::split_csv(first).unwrap_or_default();
        let fields: Vec<&str> = fields.iter().map(|f| f.trim()).collect();
        if fields.contains(&"parent_id") {
            return Ok(TreeFormat::AssocCsv);
        }
        if (fields.len() > 1 && fields[0] == "level") || (fields.len() == 5 && fields[0].parse::<u32>().is_ok()) {
            return Ok(TreeFormat::FluxCsv);
        }
        Err(Error::input(path, 1, "cannot tell the tree format from the first line; pass --tree-format"))
    }
}

/// Reads the records of a tree file without building the tree.
///
/// # Errors
/// As the format's reader.
pub fn read_tree_input(path: &Path, format: Option<TreeFormat>) -> Result<TreeInput> {
    let format = match format {
        Some(f) => f,
        None => TreeFormat::detect(path)?,
    };
    // Text trees run about 30 bytes per association.
    let fits = |bytes: u64| {
        fairshare_base::memory::ensure_fits(
            path,
            "this tree",
            bytes / 30 * fairshare_base::memory::BYTES_PER_ASSOCIATION,
        )
    };
    if !matches!(format, TreeFormat::Parquet | TreeFormat::FluxDb) {
        fits(fairshare_base::memory::file_size(path))?;
    }
    // A stream's size is known once it is read.
    let text = || {
        let text = fairshare_base::read::source::read_to_string(path)?;
        if fairshare_base::read::source::is_stream(path) {
            fits(text.len() as u64)?;
        }
        Ok::<_, Error>(text)
    };
    match format {
        TreeFormat::AssocCsv => assoc_csv::parse(path, &text()?),
        TreeFormat::Sshare => sshare_dump::parse(path, &text()?),
        TreeFormat::SshareJson => sshare_json::parse(path, &text()?),
        TreeFormat::FluxCsv => flux_csv::parse(path, &text()?),
        TreeFormat::FluxDb => flux_db::tree::read(path),
        TreeFormat::Parquet => parquet_tree::read(path),
        TreeFormat::SacctmgrDump => sacctmgr_dump::read(path),
    }
}

/// Reads and builds the tree in `path` (format detected when `None`).
///
/// # Errors
/// As the format's reader and [`AssocTree::build`].
pub fn read_tree(path: &Path, format: Option<TreeFormat>) -> Result<AssocTree> {
    let format = match format {
        Some(f) => f,
        None => TreeFormat::detect(path)?,
    };
    match format {
        // Columns straight into the tree: no record per row.
        TreeFormat::Parquet => AssocTree::from_columns(parquet_tree::read_columns(path)?),
        _ => AssocTree::build(read_tree_input(path, Some(format))?),
    }
}

/// The seed site's tree (`examples/seed-site/tree.csv`), as assoc-csv, embedded once for every
/// front end: a campus cluster (lab accounts whose shares add a gratis share, purchased hardware
/// and communal partitions; most users with `parent` shares; some idle users; a department account
/// with sub-labs).
pub const DEFAULT_TREE_CSV: &str = include_str!("../../../../examples/seed-site/tree.csv");

/// The embedded default tree.
///
/// # Errors
/// Never in practice: the embedded file is tested.
pub fn default_tree() -> Result<AssocTree> {
    AssocTree::build(default_tree_input()?)
}

/// The records of the embedded default tree.
///
/// # Errors
/// Never in practice: the embedded file is tested.
pub fn default_tree_input() -> Result<TreeInput> {
    assoc_csv::parse(Path::new("<embedded default site>"), DEFAULT_TREE_CSV)
}
