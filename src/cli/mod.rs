//! The command-line front end: resolves clap's arguments into settings and runs the commands.

mod args;

use std::io::Write;
use std::path::{Path, PathBuf};

pub use args::Cli;
use args::{AlgoArg, Command, RunArgs, SshareArgs, TreeArgs, TreeFormatArg};
use clap::Parser;
use fairshare::fairshare::{self as fs, Algorithm, FairShare, Params};
use fairshare::io::{TreeFormat, default_tree, read_tree};
use fairshare::output::atomic::AtomicFile;
use fairshare::output::parquet::{association_batch, metadata, write_parquet};
use fairshare::output::sshare::{Parsable, SshareOptions, write_sshare};
use fairshare::tree::AssocTree;
use fairshare::{Error, Result};

/// Resolved tree input and algorithm parameters.
struct TreeSettings {
    path: Option<PathBuf>,
    format: Option<TreeFormat>,
    params: Params,
}

impl From<&TreeArgs> for TreeSettings {
    fn from(a: &TreeArgs) -> Self {
        let algorithm = match a.algo {
            AlgoArg::FairTree => Algorithm::FairTree,
            AlgoArg::Classic => Algorithm::Classic,
            AlgoArg::Flux => Algorithm::Flux,
        };
        let format = a.tree_format.map(|f| match f {
            TreeFormatArg::AssocCsv => TreeFormat::AssocCsv,
            TreeFormatArg::Sshare => TreeFormat::Sshare,
            TreeFormatArg::FluxCsv => TreeFormat::FluxCsv,
            TreeFormatArg::FluxDb => TreeFormat::FluxDb,
            TreeFormatArg::Parquet => TreeFormat::Parquet,
        });
        TreeSettings {
            path: a.tree.clone(),
            format,
            params: Params { algorithm, dampening: a.dampening, depth_oblivious: a.depth_oblivious, flux_exact_sums: a.flux_exact_sums },
        }
    }
}

impl TreeSettings {
    fn source(&self) -> String {
        self.path.as_ref().map_or_else(|| "<embedded default site>".to_string(), |p| p.display().to_string())
    }

    fn load(&self) -> Result<(AssocTree, FairShare)> {
        let tree = match &self.path {
            Some(p) => read_tree(p, self.format)?,
            None => default_tree()?,
        };
        let result = fs::compute(&tree, &self.params)?;
        Ok((tree, result))
    }
}

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
    }
}

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
    match command {
        Command::Sshare(a) => {
            let settings = TreeSettings::from(&a.tree);
            let (tree, result) = settings.load()?;
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            write_sshare(&mut out, &tree, &result, &sshare_options(&a))?;
            out.flush().map_err(|e| Error::io("<stdout>", e))
        }
        Command::Compute(a) => {
            let settings = TreeSettings::from(&a.tree);
            let (tree, result) = settings.load()?;
            write_parquet(&a.out, &association_batch(&tree, &result), metadata(&result, &settings.source()))
        }
        Command::Run(a) => run_main(&a),
    }
}

/// `fairshare run`: sshare's long table on stdout, or a run directory with Parquet and text.
fn run_main(a: &RunArgs) -> Result<()> {
    let settings = TreeSettings::from(&a.tree);
    let (tree, result) = settings.load()?;
    let opts = SshareOptions { long: true, ..SshareOptions::default() };
    match &a.out_dir {
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            write_sshare(&mut out, &tree, &result, &opts)?;
            out.flush().map_err(|e| Error::io("<stdout>", e))?;
            if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                eprintln!(
                    "fairshare: {} associations, {} users, {} ({}); add --out-dir DIR for Parquet",
                    tree.len(),
                    tree.user_count(),
                    result.params.algorithm.name(),
                    settings.source()
                );
            }
            Ok(())
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            write_parquet(&dir.join("associations.parquet"), &association_batch(&tree, &result), metadata(&result, &settings.source()))?;
            let mut text = AtomicFile::create(&dir.join("sshare.txt"))?;
            write_sshare(&mut text, &tree, &result, &opts)?;
            text.commit()
        }
    }
}

/// True when `e` is a failed write to a closed pipe (`fairshare ... | head`).
pub fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { path, source } if path == Path::new("<stdout>") && source.kind() == std::io::ErrorKind::BrokenPipe)
}
