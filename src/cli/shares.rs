//! `fairshare shares --hardware FILE`: every account's RawShares from the hardware it bought and the
//! public hardware it shares ([`fairshare_analyses::shares`]), as a table, as `sacctmgr` commands, or as an
//! `assoc-csv` tree. The hardware file's format is [`fairshare_analyses::shares::hardware_file`]'s.

use std::io::Write;

use fairshare_analyses::shares::{compute, flat_tree, read_hardware_file, render as shares, set_tree_shares};
use fairshare_base::write::atomic::AtomicFile;
use fairshare_base::{Error, Result};
use fairshare_engine::output::assoc_csv;

use super::args::{SharesArgs, SharesFormat};

/// Runs `fairshare shares`.
///
/// # Errors
/// An unreadable or invalid hardware file, slurm.conf or tree, an inconsistent policy, or a failed
/// write.
pub fn run(a: &SharesArgs) -> Result<()> {
    let site = read_hardware_file(&a.hardware)?;
    let report = compute(&site.policy)?;
    let mut text = String::new();
    match a.format {
        SharesFormat::Table => shares::write_table(&mut text, &report),
        SharesFormat::Sacctmgr => shares::write_sacctmgr(&mut text, &report),
        SharesFormat::TreeCsv => {
            let tree = match site.tree {
                Some(mut tree) => {
                    set_tree_shares(&mut tree, &report)?;
                    tree
                }
                None => flat_tree(&report, &a.hardware),
            };
            assoc_csv::write_tree(&mut text, &tree);
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
