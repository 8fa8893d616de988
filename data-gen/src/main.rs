//! `data-gen`: writes synthetic association trees for fairshare tests and benchmarks.
//!
//! ```text
//! data-gen tree --associations 1000000 [--seed 42] [--format assoc-csv|parquet] --out tree.parquet
//! ```
//!
//! The file is written atomically; nothing is printed on success.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::RangedU64ValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use data_gen::{TreeSpec, generate_tree, write_assoc_csv};
use fairshare::io::parquet_tree;
use fairshare::output::atomic::AtomicFile;
use fairshare::{Error, Result};

/// Synthetic association trees for fairshare tests and benchmarks.
#[derive(Parser)]
#[command(name = "data-gen", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a seeded, site-shaped association tree.
    Tree(TreeArgs),
}

#[derive(Args)]
struct TreeArgs {
    /// Number of associations, root included (at least 2).
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(2..))]
    associations: usize,
    /// Generator seed: the same seed gives the same tree.
    #[arg(long, default_value_t = TreeSpec::default().seed)]
    seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::AssocCsv)]
    format: Format,
    /// Output file.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// `id,parent_id,account,user,shares,usage,priority` CSV.
    AssocCsv,
    /// The canonical tree columns as Parquet.
    Parquet,
}

/// Generates the tree and writes it in the requested format.
fn write_tree(args: &TreeArgs) -> Result<()> {
    let input = generate_tree(&TreeSpec::new(args.associations, args.seed));
    match args.format {
        Format::AssocCsv => {
            let mut file = AtomicFile::create(&args.out)?;
            write_assoc_csv(&mut file, &input).map_err(|e| Error::io(&args.out, e))?;
            file.commit()
        }
        Format::Parquet => parquet_tree::write(&args.out, &input.records),
    }
}

fn main() -> ExitCode {
    let Command::Tree(args) = Cli::parse().command;
    match write_tree(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("data-gen: error: {e}");
            ExitCode::FAILURE
        }
    }
}
