//! Command-line syntax (clap derive). Nothing here is interpreted: [`super::settings`] resolves it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Offline, exact HPC fair-share: Slurm classic and Fair Tree, flux-accounting's weighted tree.
#[derive(Debug, Parser)]
#[command(name = "fairshare", version, about, propagate_version = true)]
pub struct Cli {
    /// Worker threads (default: all cores). Output is identical for any count.
    #[arg(long, global = true, value_name = "N")]
    pub threads: Option<usize>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print what Slurm's `sshare -a` would print for a tree (`-h` is sshare's no-header flag).
    #[command(disable_help_flag = true)]
    Sshare(SshareArgs),
    /// Compute fair-share for every association and write Parquet.
    Compute(ComputeArgs),
    /// Run the main job (the embedded default site unless --tree is given).
    Run(RunArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AlgoArg {
    /// Slurm's Fair Tree (Slurm's default).
    FairTree,
    /// Slurm's classic algorithm (NO_FAIR_TREE).
    Classic,
    /// flux-accounting's weighted tree.
    Flux,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TreeFormatArg {
    AssocCsv,
    Sshare,
    FluxCsv,
    FluxDb,
    Parquet,
}

/// The tree and how to compute on it.
#[derive(Debug, Args)]
pub struct TreeArgs {
    /// Association tree file (default: the embedded default site).
    #[arg(long, value_name = "PATH")]
    pub tree: Option<PathBuf>,
    /// Tree format (detected from the file when omitted).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub tree_format: Option<TreeFormatArg>,
    /// Fair-share algorithm.
    #[arg(long, value_enum, default_value = "fair-tree")]
    pub algo: AlgoArg,
    /// Classic FairShareDampeningFactor.
    #[arg(long, default_value_t = 1, value_name = "D", value_parser = clap::value_parser!(u16).range(1..))]
    pub dampening: u16,
    /// Classic PriorityFlags=DEPTH_OBLIVIOUS.
    #[arg(long)]
    pub depth_oblivious: bool,
    /// flux: sum sibling usage exactly (flux-accounting truncates each partial sum to an integer).
    #[arg(long)]
    pub flux_exact_sums: bool,
}

#[derive(Debug, Args)]
pub struct SshareArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Long listing (NormUsage, LevelFS, GrpTRESMins, TRESRunMins).
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// Parsable: `|` after every field.
    #[arg(short = 'p', long = "parsable", conflicts_with = "parsable2")]
    pub parsable: bool,
    /// Parsable: `|` between fields.
    #[arg(short = 'P', long = "parsable2")]
    pub parsable2: bool,
    /// No header.
    #[arg(short = 'n', short_alias = 'h', long = "noheader")]
    pub no_header: bool,
    /// All users (always on: every association row is printed).
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Only these accounts (comma-separated).
    #[arg(short = 'A', long = "accounts", value_delimiter = ',', value_name = "LIST")]
    pub accounts: Vec<String>,
    /// Only these users' rows (comma-separated; account rows are kept).
    #[arg(short = 'u', long = "users", value_delimiter = ',', value_name = "LIST")]
    pub users: Vec<String>,
    /// Show the Partition column.
    #[arg(short = 'm', long = "partition")]
    pub partitions: bool,
    /// User rows only.
    #[arg(short = 'U', long = "Users")]
    pub users_only: bool,
    /// Fields to print, e.g. `Account,User,FairShare%12`.
    #[arg(short = 'o', long = "format", value_name = "FIELDS")]
    pub format: Option<String>,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

#[derive(Debug, Args)]
pub struct ComputeArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Output Parquet file (written atomically).
    #[arg(long, value_name = "FILE.parquet")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Write `associations.parquet` and `sshare.txt` into this directory instead of printing.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}
