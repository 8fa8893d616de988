//! `fairshare run`: the nightly job. Usage → fair-share → priorities for a whole site, printed as
//! sshare's long table or written as one run directory ([`fairshare::pipeline::Run::write_dir`]).

use std::io::Write;

use fairshare::output::atomic::{DirKind, check_replaceable};
use fairshare::output::sshare::{SshareOptions, write_sshare};
use fairshare::pipeline::{Run, run_flux_db};
use fairshare::{Error, Result};

use super::args::RunArgs;
use super::progress::Terminal;
use super::settings::Settings;

/// `fairshare run`.
pub(crate) fn run(a: &RunArgs) -> Result<()> {
    // Refused before any work (and before a flux write-back): the check is repeated at commit.
    if let Some(dir) = &a.out_dir {
        check_replaceable(dir, DirKind::Run)?;
    }
    let (run, observer) = match &a.flux_db {
        Some(db) => {
            // The database is the whole site: no site file, embedded or given.
            let o = super::settings::flags(&a.tree, &a.usage)?;
            let observer = Terminal::new(Vec::new());
            let run = run_flux_db(db, o.now()?, o.params(None), a.out_dir.is_some(), a.write_back, &observer)?;
            (run, observer)
        }
        None => {
            let settings = Settings::new(&a.tree, &a.usage, Some((a.pending.as_deref(), a.pending_format)))?;
            let site = settings.options.resolve()?;
            let observer = Terminal::new(settings.default_notes());
            (site.run(a.out_dir.is_some(), &observer)?, observer)
        }
    };
    match &a.out_dir {
        Some(dir) => {
            run.write_dir(dir, &observer)?;
            if observer.interactive() {
                eprintln!("fairshare: wrote {}", dir.display());
            }
            Ok(())
        }
        None => print_sshare(&run, &observer),
    }
}

/// sshare's long table of the run on stdout.
fn print_sshare(run: &Run, observer: &Terminal) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let opts = SshareOptions { long: true, ..SshareOptions::default() };
    write_sshare(&mut out, &run.tree, &run.fair_share, &opts)?;
    out.flush().map_err(|e| Error::io("<stdout>", e))?;
    if observer.interactive() {
        eprintln!("fairshare: {}; add --out-dir DIR for the run directory (Parquet, sprio, run.json)", run.source);
    }
    Ok(())
}
