//! `data-gen`: writes synthetic association trees for fairshare tests and benchmarks.
//!
//! ```text
//! data-gen tree --associations 1000000 [--seed 42] [--format assoc-csv|parquet] --out tree.parquet
//! data-gen site --associations 100000 --jobs 10000000 [--records 100000000 [--records-format sacct]]
//!               [--seed 42] [--format csv|parquet] --out-dir DIR
//! ```
//!
//! `site` writes `tree.*`, `pending.*`, `slurm.conf` and `qos.txt`: a whole site to score; with
//! `--records`, also a job history `jobs.{csv,parquet,sacct}` over the 30 days before `--now`.
//! Files are written atomically; nothing is printed on success.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::RangedU64ValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::Write;

use data_gen::history::{self, HistorySpec};
use data_gen::site::{self, QueueSpec};
use data_gen::{TreeSpec, generate_tree, write_assoc_csv};
use fairshare_base::write::atomic::AtomicFile;
use fairshare_base::{Error, Result};
use fairshare_engine::io::parquet_tree;

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
    /// Write a whole site: tree, pending queue, slurm.conf and QOS dump.
    Site(SiteArgs),
}

#[derive(Args)]
struct SiteArgs {
    /// Number of associations, root included (at least 2).
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(2..))]
    associations: usize,
    /// Number of pending jobs.
    #[arg(long)]
    jobs: usize,
    /// Generator seed.
    #[arg(long, default_value_t = TreeSpec::default().seed)]
    seed: u64,
    /// The time the queue is observed (epoch seconds).
    #[arg(long, default_value_t = 1_767_830_400)]
    now: i64,
    /// Number of job records (finished and running jobs of the 30 days before --now).
    #[arg(long, default_value_t = 0)]
    records: u64,
    /// Format of the job records (default: the site's --format).
    #[arg(long, value_enum)]
    records_format: Option<RecordsFormat>,
    /// File format of the tree and the queue.
    #[arg(long, value_enum, default_value_t = SiteFormat::Parquet)]
    format: SiteFormat,
    /// Output directory (created if needed).
    #[arg(long)]
    out_dir: PathBuf,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RecordsFormat {
    /// Canonical CSV.
    Csv,
    /// Canonical Parquet.
    Parquet,
    /// `sacct -P` text with XDMoD's columns.
    Sacct,
}

#[derive(Clone, Copy, ValueEnum)]
enum SiteFormat {
    /// CSV tree and queue.
    Csv,
    /// Parquet tree and queue.
    Parquet,
}

/// Writes a whole site into `args.out_dir`.
fn write_site(args: &SiteArgs) -> Result<()> {
    let dir = &args.out_dir;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let input = generate_tree(&TreeSpec::new(args.associations, args.seed));
    let spec = QueueSpec { jobs: args.jobs, seed: args.seed, now: args.now };
    let text = |name: &str, body: &str| -> Result<()> {
        let path = dir.join(name);
        let mut f = AtomicFile::create(&path)?;
        f.write_all(body.as_bytes()).map_err(|e| Error::io(&path, e))?;
        f.commit()
    };
    text("slurm.conf", site::SLURM_CONF)?;
    text("qos.txt", site::QOS)?;
    if args.records > 0 {
        let spec = HistorySpec { records: args.records, seed: args.seed, from: args.now - 30 * 86_400, to: args.now };
        let format = args.records_format.unwrap_or(match args.format {
            SiteFormat::Csv => RecordsFormat::Csv,
            SiteFormat::Parquet => RecordsFormat::Parquet,
        });
        let stream = |name: &str, f: &dyn Fn(&mut AtomicFile) -> std::io::Result<()>| -> Result<()> {
            let path = dir.join(name);
            let mut file = AtomicFile::create(&path)?;
            f(&mut file).map_err(|e| Error::io(&path, e))?;
            file.commit()
        };
        match format {
            RecordsFormat::Csv => stream("jobs.csv", &|f| history::write_records_csv(f, &input, &spec))?,
            RecordsFormat::Sacct => stream("jobs.sacct", &|f| history::write_records_sacct(f, &input, &spec))?,
            RecordsFormat::Parquet => history::write_records_parquet(&dir.join("jobs.parquet"), &input, &spec)?,
        }
    }
    match args.format {
        SiteFormat::Parquet => {
            parquet_tree::write(&dir.join("tree.parquet"), &input.records, Vec::new())?;
            site::write_pending_parquet(&dir.join("pending.parquet"), &input, &spec)
        }
        SiteFormat::Csv => {
            let write = |name: &str, f: &dyn Fn(&mut AtomicFile) -> std::io::Result<()>| -> Result<()> {
                let path = dir.join(name);
                let mut file = AtomicFile::create(&path)?;
                f(&mut file).map_err(|e| Error::io(&path, e))?;
                file.commit()
            };
            write("tree.csv", &|f| write_assoc_csv(f, &input))?;
            write("pending.csv", &|f| site::write_pending_csv(f, &input, &spec))
        }
    }
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
        Format::Parquet => parquet_tree::write(&args.out, &input.records, Vec::new()),
    }
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Tree(args) => write_tree(&args),
        Command::Site(args) => write_site(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("data-gen: error: {e}");
            ExitCode::FAILURE
        }
    }
}
