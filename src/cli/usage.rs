//! `fairshare usage`: the tree with its usage charged from job records, or a history of it at
//! many instants.

use fairshare::output::atomic::{DirKind, check_replaceable};
use fairshare::pipeline::write_history;
use fairshare::{Error, Result};

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
        observer.say_notes();
        if w.kept + w.replaced > 0 {
            eprintln!(
                "fairshare: added {} instant(s) to the history in {} ({} earlier instant(s) kept, {} replaced)",
                w.written,
                a.out.display(),
                w.kept,
                w.replaced
            );
        }
        if let Some(u) = &site.usage {
            u.warn_unmatched(&w.report, &observer);
        }
        return Ok(());
    }
    let mut input = site.tree_input()?;
    site.charge(&mut input, &observer)?;
    let mut meta = fairshare::output::parquet::version_metadata();
    meta.extend(site.metadata());
    fairshare::io::parquet_tree::write(&a.out, &input.records, meta)
}

fn time(text: &str, flag: &str) -> Result<i64> {
    fairshare::io::read::time::parse_time_arg(text).map_err(|m| Error::Usage(format!("{flag}: {m}")))
}

/// The instants `--at` or `--every/--from/--to` ask for (empty for a single `--now`).
///
/// # Errors
/// A bad time or interval, or more instants than `--max-instants`.
fn history_instants(a: &UsageCmdArgs) -> Result<Vec<i64>> {
    if let Some(every) = &a.every {
        let step = fairshare::config::time::parse_duration(every).map_err(|m| Error::Usage(format!("--every: {m}")))?;
        let from = time(a.from.as_deref().unwrap_or_default(), "--from")?;
        let to = time(a.to.as_deref().unwrap_or_default(), "--to")?;
        if to < from {
            return Err(Error::Usage(format!("--to {to} is before --from {from}")));
        }
        let count = (to - from) / step + 1;
        check_instant_count(count as u64, a.max_instants, &format!("--every {every} from --from to --to"))?;
        let instants: Vec<i64> = (0..count).map(|k| from + k * step).collect();
        eprintln!("fairshare: {count} instant(s), {} to {}", iso(from), iso(instants[instants.len() - 1]));
        return Ok(instants);
    }
    check_instant_count(a.at.len() as u64, a.max_instants, "--at")?;
    a.at.iter().map(|t| time(t, "--at")).collect()
}

/// Refuses a history of more instants than `max` (each is a Parquet file).
fn check_instant_count(count: u64, max: u64, what: &str) -> Result<()> {
    if count > max {
        return Err(Error::Usage(format!(
            "{what} is {count} instants (one Parquet file each), more than --max-instants {max}: \
             give a coarser interval or raise --max-instants"
        )));
    }
    Ok(())
}

/// An epoch time as `YYYY-MM-DDTHH:MM:SSZ`.
fn iso(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0).unwrap_or_default().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}
