//! A flux-accounting site run from its database: usage as `flux account-update-usage` computes
//! it at `now`, fair-share as `update-fshare` does, and optionally both written back into the
//! database in one transaction.

use std::collections::HashMap;
use std::path::Path;

use super::run_dir::{Stages, describe_inputs};
use super::{Observer, Run};
use crate::pass::{self as fs, Algorithm, Params};
use crate::tree::AssocTree;
use crate::usage::flux::FluxDbUsage;
use fairshare_base::Result;

/// Runs the flux-accounting site in `db` at `now` (`params`' algorithm is taken as flux's);
/// `describe_inputs` records the database's identity (before any write-back) for `run.json`;
/// `write_back` stores the usage state and the users' fair-share in the database.
///
/// # Errors
/// The database cannot be read or written, or its tree is not one flux can compute.
pub fn run_flux_db(
    db: &Path,
    now: i64,
    params: Params,
    describe: bool,
    write_back: bool,
    observer: &dyn Observer,
) -> Result<Run> {
    // Before the usage reader opens it by name (SQLite reads a database in place).
    fairshare_base::read::source::require_file(db, "a flux-accounting database")?;
    let mut stages = Stages::default();
    let mut usage = FluxDbUsage::load(db)?;
    usage.update(now as f64);
    let updated: HashMap<(&str, &str), f64> = usage.job_usages().map(|(u, b, v)| ((u, b), v)).collect();
    let mut input = crate::io::flux_db::tree::read(db)?;
    for r in &mut input.records {
        if let Some(v) = r.user.as_deref().and_then(|u| updated.get(&(u, r.account.as_str()))) {
            r.usage = *v;
        }
    }
    let skipped = usage.skipped_jobs();
    stages.finish("usage", || format!("update-usage at {now}, {skipped} jobs skipped (unreadable R)"), observer);

    let tree = AssocTree::build(input)?;
    let result = fs::compute(&tree, &Params { algorithm: Algorithm::Flux, ..params })?;
    stages.finish("fairshare", || format!("{} associations (flux weighted tree)", tree.len()), observer);

    let inputs = if describe { describe_inputs(&[("flux_db", db)])? } else { Vec::new() };
    if write_back {
        // In update-fshare's order: a user the tree holds twice keeps the value written last.
        let values: Vec<(String, String, f64)> = fs::update_fshare_order(&tree, &result)
            .into_iter()
            .map(|r| {
                let user = tree.user_name(r).unwrap_or_default().to_string();
                (user, tree.account(r).to_string(), result.fs_factor[r])
            })
            .collect();
        usage.write_back(db, &values)?;
        let count = values.len();
        stages.finish("write-back", || format!("{count} fair-share values written to {}", db.display()), observer);
    }
    let metadata = [("fairshare.decay", "flux".to_string()), ("fairshare.now", now.to_string())]
        .into_iter()
        .map(|(k, v)| parquet::file::metadata::KeyValue::new(k.to_string(), v))
        .collect();
    Ok(Run {
        source: db.display().to_string(),
        tree,
        fair_share: result,
        now,
        metadata,
        charge: None,
        flux_jobs_skipped: Some(skipped),
        inputs,
        queue: None,
        written_queue: None,
        stages,
    })
}
