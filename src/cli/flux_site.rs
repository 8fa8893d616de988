//! `fairshare run --flux-db DB`: a flux-accounting site. Usage as `flux account-update-usage`
//! computes it at `--now`, fair-share as `update-fshare` does, and with `--write-back` both
//! written into the database in one transaction.

use std::collections::HashMap;

use fairshare::Result;
use fairshare::fairshare::{self as fs, Algorithm};
use fairshare::tree::AssocTree;
use fairshare::usage::flux::FluxDbUsage;

use super::TreeSettings;
use super::args::RunArgs;
use super::run::{Outputs, Stages};

pub(crate) fn run(a: &RunArgs) -> Result<()> {
    let db = a.flux_db.as_deref().expect("called with --flux-db");
    // Before the usage reader opens it by name (SQLite reads a database in place).
    fairshare::io::source::require_file(db, "a flux-accounting database")?;
    let now = super::now_arg(a.usage.now.as_deref())?;
    let mut stages = Stages::new();
    let mut usage = FluxDbUsage::load(db)?;
    usage.update(now as f64);
    let updated: HashMap<(&str, &str), f64> = usage.job_usages().map(|(u, b, v)| ((u, b), v)).collect();
    let mut input = fairshare::io::flux_db::read(db)?;
    for r in &mut input.records {
        if let Some(v) = r.user.as_deref().and_then(|u| updated.get(&(u, r.account.as_str()))) {
            r.usage = *v;
        }
    }
    stages.finish("usage", || format!("update-usage at {now}, {} jobs skipped (unreadable R)", usage.skipped_jobs()));

    let tree = AssocTree::build(input)?;
    let mut settings = TreeSettings::resolve(&a.tree, None)?;
    settings.params.algorithm = Algorithm::Flux;
    let result = fs::compute(&tree, &settings.params)?;
    stages.finish("fairshare", || format!("{} associations (flux weighted tree)", tree.len()));

    let inputs = super::run::describe_inputs(a.out_dir.is_some(), &[("flux_db", db)])?;
    if a.write_back {
        let values: Vec<(String, String, f64)> = (0..tree.len())
            .filter(|&r| tree.is_user(r))
            .map(|r| {
                let user = tree.user_name(r).unwrap_or_default().to_string();
                (user, tree.account(r).to_string(), result.fs_factor[r])
            })
            .collect();
        usage.write_back(db, &values)?;
        stages
            .finish("write-back", || format!("{} associations' fair-share written to {}", values.len(), db.display()));
    }
    let mut rows = serde_json::Map::new();
    rows.insert("flux_jobs_skipped".into(), usage.skipped_jobs().into());
    let source = db.display().to_string();
    let meta = [("fairshare.decay", "flux".to_string()), ("fairshare.now", now.to_string())]
        .into_iter()
        .map(|(k, v)| parquet::file::metadata::KeyValue::new(k.to_string(), v))
        .collect();
    Outputs {
        out_dir: a.out_dir.as_deref(),
        source: &source,
        tree: &tree,
        result: &result,
        now,
        usage_meta: meta,
        rows,
        inputs,
        queue: None,
    }
    .write(stages)
}
