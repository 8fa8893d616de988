//! The command-line front end: parses arguments, resolves them into the library's site options
//! ([`settings`]), calls the pipeline ([`fairshare_engine::pipeline`]) and prints or writes its results.

mod args;
mod compare;
mod compute;
mod entitlement;
mod explain;
mod fairness;
mod forecast;
mod plot;
mod progress;
mod queue;
mod report;
mod run;
mod score;
mod settings;
mod shares;
mod sprio;
mod sshare;
mod stdout;
mod usage;

use std::path::Path;

pub use args::Cli;
use args::Command;
use clap::Parser;
use fairshare_base::{Error, Result};

/// Runs the parsed command line.
///
/// # Errors
/// Whatever the command fails with; the caller prints it and exits non-zero.
pub fn run(cli: Cli) -> Result<()> {
    if let Some(n) = cli.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global()
            .map_err(|e| Error::Usage(format!("--threads {n}: {e}")))?;
    }
    let command = match cli.command {
        Some(c) => c,
        // No subcommand: the main job on the embedded default site.
        None => Cli::try_parse_from(["fairshare", "run"]).ok().and_then(|c| c.command).expect("`run` parses"),
    };
    // Standard input can be read as one input only.
    let stdin: Vec<&str> = command
        .inputs()
        .into_iter()
        .filter(|(_, p)| p.as_os_str() == fairshare_base::read::source::STDIN)
        .map(|(flag, _)| flag)
        .collect();
    if stdin.len() > 1 {
        return Err(Error::Usage(format!(
            "standard input (`-`) is given to {}: only one input can read it; give the others as files",
            stdin.join(" and ")
        )));
    }
    match command {
        Command::Sshare(a) => sshare::run(&a),
        Command::Compute(a) => compute::run(&a),
        Command::Usage(a) => usage::run(&a),
        Command::Run(a) => run::run(&a),
        Command::Shares(a) => shares::run(&a),
        Command::Explain(a) => explain::run(&a),
        Command::Compare(a) => compare::compare(&a),
        Command::Diff(a) => compare::diff(&a),
        Command::Plot(a) => plot::run(&a),
        Command::Entitlement(a) => entitlement::run(&a),
        Command::Fairness(a) => fairness::run(&a),
        Command::Forecast(a) => forecast::run(&a),
        Command::Report(a) => report::run(&a),
        Command::Sprio(a) => sprio::run(&a),
        Command::Score(a) => score::run(&a),
    }
}

/// True when `e` is a failed write to a closed pipe (`fairshare ... | head`).
pub fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { path, source } if path == Path::new("<stdout>") && source.kind() == std::io::ErrorKind::BrokenPipe)
}
