//! `fairshare sshare`: Slurm's `sshare` text, `--json` or `--yaml` of the site's fair-share.

use std::io::Write;

use fairshare_base::{Error, Result};
use fairshare_engine::output::sshare::{Parsable, SshareOptions, write_sshare};
use fairshare_engine::output::sshare_json::{SshareJsonOptions, write_sshare_json, write_sshare_yaml};

use super::args::SshareArgs;
use super::progress::Terminal;
use super::settings::Settings;
use super::stdout::print;
use fairshare_base::named::Named;

fn sshare_options(a: &SshareArgs) -> SshareOptions {
    SshareOptions {
        long: a.long,
        parsable: if a.parsable {
            Parsable::Ending
        } else if a.parsable2 {
            Parsable::NoEnding
        } else {
            Parsable::No
        },
        no_header: a.no_header,
        partitions: a.partitions,
        users_only: a.users_only,
        accounts: a.accounts.clone(),
        users: a.users.clone(),
        format: a.format.clone(),
        dest: None,
    }
}

/// What `sshare --json` writes: the text's filters, and the command line for `meta.command`.
fn sshare_json_options(a: &SshareArgs, cluster: String) -> SshareJsonOptions {
    SshareJsonOptions {
        cluster,
        users_only: a.users_only,
        accounts: a.accounts.clone(),
        users: a.users.clone(),
        command: std::env::args().skip(1).collect(),
        dest: None,
    }
}

/// Runs `fairshare sshare`.
pub(crate) fn run(a: &SshareArgs) -> Result<()> {
    if a.helpformat {
        return print(fairshare_engine::output::sshare::help_format().as_bytes());
    }
    let settings = Settings::new(&a.tree, &a.usage, None)?;
    let site = settings.options.resolve()?;
    let (tree, result, _) = site.fair_share(&Terminal::new(settings.default_notes()))?;
    if a.verbose {
        let o = &settings.options;
        eprintln!(
            "fairshare: {}: {} associations, {}{}",
            site.tree.source(),
            tree.len(),
            result.params.algorithm.name(),
            o.jobs.as_deref().map_or_else(
                || " with the tree's usage".to_string(),
                |j| format!(
                    " with usage from {} at --now {}",
                    fairshare_engine::pipeline::shown(j),
                    o.now.as_deref().unwrap_or("?")
                )
            )
        );
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if a.json || a.yaml {
        let cluster = site.slurm_conf.as_ref().and_then(|c| c.cluster_name.clone()).unwrap_or_default();
        let opts = sshare_json_options(a, cluster);
        if a.json {
            write_sshare_json(&mut out, &tree, &result, &opts)?;
        } else {
            write_sshare_yaml(&mut out, &tree, &result, &opts)?;
        }
    } else {
        write_sshare(&mut out, &tree, &result, &sshare_options(a))?;
    }
    out.flush().map_err(|e| Error::io("<stdout>", e))
}
