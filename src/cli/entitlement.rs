//! `fairshare entitlement`: what every association deserves now ([`fairshare_analyses::entitlement`]),
//! printed as a table (or JSON), and optionally written as Parquet and drawn.

use std::io::Write;

use fairshare_analyses::entitlement::of_site;
use fairshare_analyses::entitlement::render::{batch, metadata, write_json, write_table};
use fairshare_base::write::parquet::write_parquet;
use fairshare_base::{Error, Result};
use fairshare_engine::config::Tres;

use super::args::EntitlementArgs;
use super::settings::Settings;

/// `fairshare entitlement`.
pub(crate) fn run(a: &EntitlementArgs) -> Result<()> {
    // Bad output names and TRES are refused before any work.
    let plot_tres = Tres::parse(&a.tres).map_err(|m| Error::Usage(format!("--tres {}: {m}", a.tres)))?;
    if let Some(path) = &a.plot {
        fairshare_pictures::plot::Format::of(path)?;
    }
    let settings = Settings::new(&a.tree, &a.usage, Some((a.pending.as_deref(), a.pending_format)))?;
    let site = settings.options.resolve()?;
    let (tree, e) = of_site(&site)?;
    if e.counts.unmatched > 0 {
        let n = e.counts.unmatched;
        let what = if n == 1 { "job matches no association and is" } else { "jobs match no association and are" };
        eprintln!("fairshare: {n} running or pending {what} left out");
    }
    if let Some(path) = &a.out {
        write_parquet(path, &batch(&tree, &e), metadata(&e, &site.name))?;
    }
    if let Some(path) = &a.plot {
        let k = e.index(&plot_tres).ok_or_else(|| {
            let known: Vec<String> = e.tres.iter().map(Tres::to_string).collect();
            Error::Usage(format!("--tres {}: nobody demands it; the TRES demanded are {}", a.tres, known.join(", ")))
        })?;
        fairshare_pictures::plot::save(
            &fairshare_pictures::plot::entitlement::chart(&tree, &e, k, 900, &site.name),
            path,
        )?;
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if a.json {
        write_json(&mut out, &tree, &e, None)?;
    } else {
        write_table(&mut out, &tree, &e, None)?;
    }
    out.flush().map_err(|err| Error::io("<stdout>", err))
}
