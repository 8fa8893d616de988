//! `fairshare usage`: the tree with its usage charged from job records, or a history of it at
//! many instants.

use fairshare_base::write::atomic::{DirKind, check_replaceable};
use fairshare_base::{Error, Result};
use fairshare_engine::pipeline::{history_instants_of, write_history};

use super::args::UsageCmdArgs;
use super::progress::Terminal;
use super::settings::Settings;

/// `fairshare usage`.
pub(crate) fn run(a: &UsageCmdArgs) -> Result<()> {
    let mut settings = Settings::new(&a.tree, &a.usage, None)?;
    let instants = history_instants(a)?;
    if !instants.is_empty() {
        // Refused before the charging; checked again when the history is committed.
        check_replaceable(&a.out, DirKind::History)?;
    }
    if let (Some(last), None) = (instants.last(), &settings.options.now) {
        settings.options.now = Some(last.to_string());
    }
    if settings.options.jobs.is_none() {
        return Err(Error::Usage("usage needs --jobs".into()));
    }
    let site = settings.options.resolve()?;
    let observer = Terminal::new(settings.default_notes());
    if !instants.is_empty() {
        let w = write_history(&site, instants, &a.out, &observer)?;
        if w.kept + w.replaced > 0 {
            eprintln!(
                "fairshare: added {} instant(s) to the history in {} ({} earlier instant(s) kept, {} replaced)",
                w.written,
                a.out.display(),
                w.kept,
                w.replaced
            );
        }
        return Ok(());
    }
    let mut input = site.tree_input()?;
    let charge = site.charge(&mut input, &observer)?;
    let mut meta = fairshare_base::write::parquet::version_metadata();
    meta.extend(site.metadata());
    meta.extend(fairshare_engine::pipeline::charge_metadata(charge.as_ref()));
    fairshare_engine::io::parquet_tree::write(&a.out, &input.records, meta)
}

/// The instants `--at` or `--every/--from/--to` ask for (empty for a single `--now`).
///
/// # Errors
/// A bad time or interval, or more instants than `--max-instants`.
fn history_instants(a: &UsageCmdArgs) -> Result<Vec<i64>> {
    let every = a.every.as_deref().map(|every| (every, a.from.as_deref(), a.to.as_deref()));
    let instants = history_instants_of(&a.at, every, a.max_instants)?;
    if let (Some(_), Some(first), Some(last)) = (&a.every, instants.first(), instants.last()) {
        eprintln!(
            "fairshare: {} instant(s), {} to {}",
            instants.len(),
            fairshare_base::time_format::iso_utc(*first),
            fairshare_base::time_format::iso_utc(*last)
        );
    }
    Ok(instants)
}
