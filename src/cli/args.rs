//! Command-line syntax (clap derive). Nothing here is interpreted: [`super::settings`] resolves it.

use std::path::{Path, PathBuf};

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use fairshare_analyses::forecast::Assume;
use fairshare_base::named::Named;
use fairshare_engine::config::SlurmConfFormat;
use fairshare_engine::io::TreeFormat;
use fairshare_engine::jobs::PendingFormat;
use fairshare_engine::pass::Algorithm;
use fairshare_engine::pipeline::Decay;
use fairshare_engine::usage::JobFormat;
use fairshare_engine::usage::swf::{SwfTree, UnknownWait};
use fairshare_pictures::plot::history::Metric;
use fairshare_pictures::plot::icicle::ColorBy;

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

/// A library enumeration as an option's value: its names (and aliases) are the possible values,
/// with its help, as the library's one table spells them ([`Named::CHOICES`]).
fn choice<T: Named>() -> impl TypedValueParser<Value = T> {
    let values = T::CHOICES.iter().map(|c| {
        let value = PossibleValue::new(c.name).aliases(c.aliases.iter().copied());
        if c.help.is_empty() { value } else { value.help(c.help) }
    });
    PossibleValuesParser::new(values).map(|name| T::of_name(&name).expect("a possible value has a name"))
}

// One command is parsed per process; boxing the large variants would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print what Slurm's `sshare -a` would print for a tree (`-h` is sshare's no-header flag).
    #[command(disable_help_flag = true)]
    Sshare(SshareArgs),
    /// Compute fair-share for every association and write Parquet.
    Compute(ComputeArgs),
    /// Charge job records to associations and write the tree with its recomputed raw usage.
    Usage(UsageCmdArgs),
    /// Run the main job (the embedded default site when no input is given).
    Run(RunArgs),
    /// Print what Slurm's `sprio` would print for a pending queue (`-h` is sprio's no-header flag).
    #[command(disable_help_flag = true)]
    Sprio(SprioArgs),
    /// Score a pending queue and write one Parquet row per (job, partition, QOS).
    Score(ScoreArgs),
    /// Every account's RawShares from the hardware: a gratis share of the public partitions, plus
    /// what the account bought alone or with others.
    Shares(SharesArgs),
    /// Explain an association's fair-share factor (or a job's priority), or why one is below another.
    Explain(ExplainArgs),
    /// The algorithms (and parameter variants) side by side: rank correlation, biggest movers.
    Compare(CompareArgs),
    /// What changed between two run directories: shares, usage, factors, priorities.
    Diff(DiffArgs),
    /// Draw the tree as an icicle of fair-share ranks, or chosen associations' history (SVG or PNG).
    Plot(PlotArgs),
    /// When does a user's fair-share recover, and how much can it still run? Its factor over the
    /// coming days under an assumption about everyone's usage.
    Forecast(Box<ForecastArgs>),
    /// Is the policy fair? Each account's delivered usage against its entitled share, window by
    /// window of a `usage --every` history: residuals and Jain's index.
    Fairness(FairnessArgs),
    /// What each association deserves of the cluster now by its shares, given its running and
    /// pending jobs (water-filled per TRES), and how far what it holds is above or below it.
    Entitlement(EntitlementArgs),
    /// A static web report (HTML, inline SVG, no external request) from a run directory: the tree
    /// at a glance and a page per association (why its factor, its history, pending jobs).
    Report(ReportArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PriorityArg {
    /// Slurm's priority/multifactor.
    Slurm,
    /// flux-accounting's mf_priority.
    Flux,
}

/// The pending queue and the site configuration that scores it.
#[derive(Debug, Args)]
pub struct QueueArgs {
    /// Pending jobs (CSV, Parquet or `squeue --json`; default: the site file's, or the embedded
    /// default site's when no input is given).
    #[arg(long, value_name = "PATH")]
    pub pending: Option<PathBuf>,
    /// Pending-jobs format (detected when omitted).
    #[arg(long, value_parser = choice::<PendingFormat>(), value_name = "FORMAT")]
    pub pending_format: Option<PendingFormat>,
    /// slurm.conf (the priority weights, flags, nodes and partitions; required for Slurm), the
    /// QOS dump, `--now` (default: now) and, with `--jobs`, the usage recomputed from job records
    /// with every what-if flag of the usage stage.
    #[command(flatten)]
    pub usage: UsageArgs,
    /// Priority formula.
    #[arg(long, value_enum, default_value = "slurm")]
    pub priority: PriorityArg,
}

#[derive(Debug, Args)]
// sprio's `-j/--jobs` lists job ids, as in Slurm: here the job records are `--job-records`.
#[command(mut_arg("jobs", |a| a.long("job-records")))]
pub struct SprioArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    #[command(flatten)]
    pub queue: QueueArgs,
    /// Compare with the controller's priorities in an `squeue --json` queue: print the (job,
    /// partition) pairs whose priority we compute differently.
    #[arg(long)]
    pub check: bool,
    /// No header.
    #[arg(short = 'h', long = "noheader")]
    pub no_header: bool,
    /// Long listing.
    #[arg(short = 'l', long = "long", conflicts_with = "format")]
    pub long: bool,
    /// Normalized factors.
    #[arg(short = 'n', long = "norm")]
    pub normalized: bool,
    /// Print the weights only.
    #[arg(short = 'w', long = "weights")]
    pub weights: bool,
    /// Output format, e.g. `%.15i %.12Y`.
    #[arg(short = 'o', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,
    /// Only these job ids (comma-separated).
    #[arg(id = "job_ids", short = 'j', long = "jobs", value_delimiter = ',', value_name = "LIST")]
    pub jobs: Vec<u64>,
    /// Only these users (comma-separated).
    #[arg(short = 'u', long = "user", value_delimiter = ',', value_name = "LIST")]
    pub users: Vec<String>,
    /// Only these partitions (comma-separated).
    #[arg(short = 'p', long = "partition", value_delimiter = ',', value_name = "LIST")]
    pub partitions: Vec<String>,
    /// Sort keys (format letters, `-` for descending: `-S -y`, as sprio spells it).
    #[arg(short = 'S', long = "sort", value_name = "KEYS", allow_hyphen_values = true)]
    pub sort: Option<String>,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

#[derive(Debug, Args)]
pub struct ScoreArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    #[command(flatten)]
    pub queue: QueueArgs,
    /// Output Parquet file (written atomically; missing parent directories are created).
    #[arg(long, value_name = "FILE.parquet", value_parser = parquet_path)]
    pub out: PathBuf,
}

/// The site, the tree and how to compute on it.
#[derive(Debug, Args)]
pub struct TreeArgs {
    /// Site description (TOML: slurm_conf, qos, tree, jobs, pending, now, algorithm, decay, ...;
    /// paths relative to the file). Flags override it. Without it and without any input, the
    /// embedded default site.
    #[arg(long, value_name = "FILE")]
    pub site: Option<PathBuf>,
    /// Association tree file [default: the site file's `tree`, else the embedded default tree].
    #[arg(long, value_name = "PATH")]
    pub tree: Option<PathBuf>,
    /// Tree format (detected from the file when omitted).
    #[arg(long, value_parser = choice::<TreeFormat>(), value_name = "FORMAT")]
    pub tree_format: Option<TreeFormat>,
    /// Fair-share algorithm [default: the site file's `algorithm`, else slurm.conf's PriorityFlags,
    /// else fair-tree].
    #[arg(long, value_parser = choice::<Algorithm>())]
    pub algo: Option<Algorithm>,
    /// Classic FairShareDampeningFactor (default: slurm.conf's, else 1).
    #[arg(long, value_name = "D", value_parser = fairshare_engine::config::slurm_conf::parse_dampening)]
    pub dampening: Option<u16>,
    /// Classic PriorityFlags=DEPTH_OBLIVIOUS.
    #[arg(long)]
    pub depth_oblivious: bool,
    /// flux: sum sibling usage exactly (flux-accounting truncates each partial sum to an integer).
    #[arg(long)]
    pub flux_exact_sums: bool,
    /// What-if: give an account (NAME) or a user association (USER@ACCOUNT) these shares (a count
    /// or `parent`); repeatable.
    #[arg(long, value_name = "NAME=N", value_parser = parse_assignment)]
    pub set_shares: Vec<(String, String)>,
}

/// Recompute user usage from job records before the fair-share pass.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// Job records: canonical CSV/Parquet (`job_id,user,account,partition,qos,start,end,tres_alloc`),
    /// `sacct -P` text or an SWF trace.
    #[arg(long, value_name = "PATH")]
    pub jobs: Option<PathBuf>,
    /// The job records' format (default: detected).
    #[arg(long, value_parser = choice::<JobFormat>(), value_name = "FORMAT")]
    pub jobs_format: Option<JobFormat>,
    /// SWF traces: the association tree the trace implies (used when no --tree is given)
    /// [default: group-user].
    #[arg(long, value_parser = choice::<SwfTree>())]
    pub swf_tree: Option<SwfTree>,
    /// SWF traces: what a job whose wait time is unknown (-1) charges [default: zero].
    #[arg(long, value_parser = choice::<UnknownWait>(), value_name = "CHOICE")]
    pub swf_unknown_wait: Option<UnknownWait>,
    /// slurm.conf with the half-life, calc period, reset period, enforcement and billing weights;
    /// or `(scontrol show config; scontrol show partition)` output.
    #[arg(long, value_name = "FILE")]
    pub slurm_conf: Option<PathBuf>,
    /// What --slurm-conf holds (default: detected).
    #[arg(long, value_parser = choice::<SlurmConfFormat>(), value_name = "FORMAT", requires = "slurm_conf")]
    pub slurm_conf_format: Option<SlurmConfFormat>,
    /// `sacctmgr show qos -P` dump (QOS usage factors).
    #[arg(long, value_name = "FILE")]
    pub qos: Option<PathBuf>,
    /// Decay model [default: the site file's `decay`, else slurm].
    #[arg(long, value_parser = choice::<Decay>())]
    pub decay: Option<Decay>,
    /// The first decay pass (default: passes aligned on the calc period, as if the first pass
    /// were at or before the first job start).
    #[arg(long, value_name = "T0")]
    pub first_pass: Option<String>,
    /// The usage is the state after the last pass at or before this time [default: the site
    /// file's `now`, else the current time; required with --jobs].
    #[arg(long, value_name = "T")]
    pub now: Option<String>,
    /// Override PriorityDecayHalfLife (`14d`, or Slurm's `7-0`, `14-00:00:00`; `0` for none)
    /// [default: the site file's, else slurm.conf's, else 7 days; flux's decays: 7 days].
    #[arg(long, value_name = "TIME")]
    pub half_life: Option<String>,
    /// Override PriorityCalcPeriod (`5m`, or Slurm's time syntax: a bare number is minutes)
    /// [default: slurm.conf's, else 5 minutes].
    #[arg(long, value_name = "TIME")]
    pub calc_period: Option<String>,
    /// Override PriorityUsageResetPeriod (NONE, NOW, DAILY, WEEKLY, MONTHLY, QUARTERLY, YEARLY)
    /// [default: slurm.conf's, else NONE].
    #[arg(long, value_name = "PERIOD")]
    pub reset_period: Option<String>,
    /// The timezone reset boundaries (midnight, Sunday, the 1st) are in, as slurmctld's local time
    /// [default: the site file's `timezone`, else UTC].
    #[arg(long, value_name = "TZ")]
    pub timezone: Option<String>,
    /// What-if: bill PARTITION with these TRESBillingWeights (`CPU=1.0,Mem=0.25G`) instead of
    /// slurm.conf's; repeatable.
    #[arg(long, value_name = "PARTITION=WEIGHTS", value_parser = parse_assignment)]
    pub billing: Vec<(String, String)>,
    /// --decay flux: how often update-usage runs (cron): `1h`, `30m`, or Slurm's time syntax
    /// [default: 1h].
    #[arg(long, value_name = "INTERVAL")]
    pub flux_interval: Option<String>,
}

#[derive(Debug, Args)]
pub struct SshareArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    #[command(flatten)]
    pub usage: UsageArgs,
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
    /// Print the fields `--format` accepts, and exit.
    #[arg(short = 'e', long = "helpformat")]
    pub helpformat: bool,
    /// Print Slurm's data_parser `shares` response (as `sshare --json`), readable back as a tree.
    #[arg(long, conflicts_with_all = ["long", "parsable", "parsable2", "no_header", "partitions", "format"])]
    pub json: bool,
    /// The same response as YAML (as `sshare --yaml`).
    #[arg(long, conflicts_with_all = ["json", "long", "parsable", "parsable2", "no_header", "partitions", "format"])]
    pub yaml: bool,
    /// Say on stderr what was computed (inputs, algorithm).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

#[derive(Debug, Args)]
pub struct ComputeArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    #[command(flatten)]
    pub usage: UsageArgs,
    /// Output Parquet file (written atomically; missing parent directories are created).
    #[arg(long, value_name = "FILE.parquet", value_parser = parquet_path)]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct UsageCmdArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    #[command(flatten)]
    pub usage: UsageArgs,
    /// Output Parquet file: the tree's canonical columns with the recomputed usage (a valid
    /// `--tree` input), the decay parameters in its metadata. With --at or --every, a directory
    /// of one Parquet file per instant, partitioned by date (`date=YYYY-MM-DD/HHMMSS.parquet`),
    /// each with the usage and the fair-share of every association at that instant.
    #[arg(long, value_name = "PATH")]
    pub out: PathBuf,
    /// The history at these instants (comma-separated), from one pass over the records.
    #[arg(long, value_delimiter = ',', value_name = "T1,T2,...", conflicts_with = "every")]
    pub at: Vec<String>,
    /// The history at every interval (`30m`, `6h`, `1d`, `1w`, or Slurm's `1-0`, `90` minutes)
    /// from --from to --to.
    #[arg(long, value_name = "INTERVAL", requires_all = ["from", "to"])]
    pub every: Option<String>,
    /// First instant of --every.
    #[arg(long, value_name = "T", requires = "every")]
    pub from: Option<String>,
    /// Last instant of --every (included when on the interval).
    #[arg(long, value_name = "T", requires = "every")]
    pub to: Option<String>,
    /// The most instants (one Parquet file each) a history may ask for: a slip such as `--every
    /// 1m` over a year is refused instead of writing hundreds of thousands of files.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_instants: u64,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    #[command(flatten)]
    pub usage: UsageArgs,
    /// Pending jobs to score (CSV, Parquet or `squeue --json`).
    #[arg(long, value_name = "PATH")]
    pub pending: Option<PathBuf>,
    /// Pending-jobs format (detected when omitted).
    #[arg(long, value_parser = choice::<PendingFormat>(), value_name = "FORMAT")]
    pub pending_format: Option<PendingFormat>,
    /// A flux-accounting database: usage and fair-share as `flux account-update-usage` and
    /// `update-fshare` compute them at --now.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["jobs", "site"])]
    pub flux_db: Option<PathBuf>,
    /// With --flux-db: write the usage state and the fair-share back into the database, in one
    /// transaction, in place of the two cron steps.
    #[arg(long, requires = "flux_db")]
    pub write_back: bool,
    /// Write the run directory (associations.parquet, jobs.parquet, sshare.txt, sprio.txt,
    /// run.json) here, atomically, instead of printing sshare's table.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Also write a Prometheus textfile (for node_exporter's textfile collector), atomically:
    /// per-association fair-share gauges and the run's own.
    #[arg(long, value_name = "FILE.prom")]
    pub prometheus: Option<PathBuf>,
    /// Also write the static web report of the run here (a directory, atomically), with every
    /// user's forecast.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub report_parts: ReportPartsArgs,
}

/// What a web report adds from other runs.
#[derive(Debug, Args)]
pub struct ReportPartsArgs {
    /// A fair-share history (`fairshare usage --every ... --out DIR`): a chart on every page.
    #[arg(long, value_name = "DIR")]
    pub history: Option<PathBuf>,
    /// The previous run directory: the index lists the factors that moved most since.
    #[arg(long, value_name = "RUN_DIR")]
    pub previous: Option<PathBuf>,
    /// The most association pages (trees above 20000 associations get pages only for accounts
    /// with users and users with pending jobs); the rest are named without a link.
    #[arg(long, value_name = "N", default_value_t = 50_000)]
    pub max_pages: usize,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run directory (`fairshare run --out-dir`).
    #[arg(long, value_name = "RUN_DIR")]
    pub run: PathBuf,
    /// Where to write the report (a directory, replaced atomically if it is an earlier report).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub parts: ReportPartsArgs,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// USER, USER@ACCOUNT or ACCOUNT.
    #[arg(value_name = "WHO", required_unless_present = "job")]
    pub who: Option<String>,
    /// Compare with another association: why is WHO's factor below (or above) this one's?
    #[arg(long, value_name = "WHO", requires = "who")]
    pub vs: Option<String>,
    /// Explain a pending job's priority instead: each weighted factor and the sum.
    #[arg(long, value_name = "ID", conflicts_with = "who")]
    pub job: Option<u64>,
    /// Pending jobs (with --job).
    #[arg(long, value_name = "PATH")]
    pub pending: Option<PathBuf>,
    /// Pending-jobs format (detected when omitted).
    #[arg(long, value_parser = choice::<PendingFormat>(), value_name = "FORMAT")]
    pub pending_format: Option<PendingFormat>,
    #[command(flatten)]
    pub tree: TreeArgs,
    #[command(flatten)]
    pub usage: UsageArgs,
}

#[derive(Debug, Args)]
pub struct ForecastArgs {
    /// The user association: USER (when it has one association) or USER@ACCOUNT.
    #[arg(value_name = "USER[@ACCOUNT]")]
    pub who: String,
    /// Everyone's usage from --now on.
    #[arg(long, value_parser = choice::<Assume>(), default_value = "idle")]
    pub assume: Assume,
    /// With --assume steady: the window whose rates go on [default: one half-life].
    #[arg(long, value_name = "DURATION")]
    pub window: Option<String>,
    /// How far ahead [default: four half-lives].
    #[arg(long, value_name = "DURATION")]
    pub horizon: Option<String>,
    /// Intervals of the trajectory (it has one more instant).
    #[arg(long, value_name = "N", default_value = "48", value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub steps: u32,
    /// The fair-share factor whose first reaching is sought.
    #[arg(long, value_name = "F", default_value = "0.5")]
    pub target: f64,
    /// The budget: what the association can still run before its factor drops below this.
    #[arg(long, value_name = "F", default_value = "0.5")]
    pub floor: f64,
    /// The budget is run evenly over this period from now.
    #[arg(long, value_name = "DURATION", default_value = "7-0")]
    pub budget_over: String,
    /// The partition whose CPU billing turns the budget into CPU-hours [default: slurm.conf's
    /// default partition].
    #[arg(long, value_name = "NAME")]
    pub partition: Option<String>,
    /// Print `{"association", "target", "reached_at", "trajectory": [{"at", "fs_factor", "rank"}]}`.
    #[arg(long)]
    pub json: bool,
    /// Write the trajectory as Parquet (as_of, fs_factor, rank, raw_usage), atomically.
    #[arg(long, value_name = "FILE.parquet", value_parser = parquet_path)]
    pub out: Option<PathBuf>,
    /// Draw the trajectory: `.svg` or `.png` (written atomically).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub tree: TreeArgs,
    #[command(flatten)]
    pub usage: UsageArgs,
}

/// A Parquet output's path: not `-` (Parquet is binary and written by rename, so it cannot go to
/// standard output) and not a name whose extension promises another format.
fn parquet_path(text: &str) -> Result<PathBuf, String> {
    if text == "-" {
        return Err("Parquet cannot be written to standard output; give a file name (FILE.parquet)".into());
    }
    let path = PathBuf::from(text);
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some(e @ ("csv" | "tsv" | "txt" | "json" | "jsonl" | "ndjson" | "svg" | "png" | "arrow" | "feather")) => {
            Err(format!("{text:?} names a .{e} file, but this output is Parquet; use a .parquet name"))
        }
        _ => Ok(path),
    }
}

/// `NAME=VALUE`, split at the first `=`.
fn parse_assignment(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("{text:?} is not NAME=VALUE")),
    }
}

/// What `fairshare shares` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SharesFormat {
    /// Account, gratis, lab, communal, total and RawShares, with a total row.
    Table,
    /// `sacctmgr -i modify account where name=ACCOUNT set fairshare=N`, by account name.
    Sacctmgr,
    /// The tree as `assoc-csv` with the new shares (a root and the accounts when no tree is named).
    TreeCsv,
}

#[derive(Debug, Args)]
pub struct SharesArgs {
    /// The site's hardware and purchases (TOML: slurm_conf, tree, public, requeue, [[lab]],
    /// [[communal]], ...; paths relative to the file).
    #[arg(long, value_name = "FILE")]
    pub hardware: PathBuf,
    /// Output: a table, `sacctmgr` commands, or the tree as assoc-csv with the new shares.
    #[arg(long, value_enum, default_value = "table")]
    pub format: SharesFormat,
    /// Write here (atomically) instead of to stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PlotArgs {
    #[command(subcommand)]
    pub what: PlotCommand,
}

#[derive(Debug, Subcommand)]
pub enum PlotCommand {
    /// The association tree as an icicle: one row per depth, each association as wide as its
    /// users' block of fair-share ranks.
    Icicle(Box<IcicleArgs>),
    /// Chosen associations' fair-share over time, from a `fairshare usage --every` directory.
    History(HistoryArgs),
}

#[derive(Debug, Args)]
pub struct IcicleArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    #[command(flatten)]
    pub usage: UsageArgs,
    /// Output picture: `.svg` or `.png` (written atomically).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Draw down to this depth (the root is 0; default: all).
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Width in pixels.
    #[arg(long, value_name = "PX", default_value = "1200", value_parser = clap::value_parser!(u32).range(320..=20000))]
    pub width: u32,
    /// What the colour shows.
    #[arg(long, value_parser = choice::<ColorBy>())]
    pub color: Option<ColorBy>,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The directory `fairshare usage --every ... --out DIR` wrote.
    #[arg(long, value_name = "DIR")]
    pub history: PathBuf,
    /// Associations to draw (comma-separated): ACCOUNT, USER or USER@ACCOUNT.
    #[arg(long, value_delimiter = ',', value_name = "A,B,...", required = true)]
    pub accounts: Vec<String>,
    /// Output picture: `.svg` or `.png` (written atomically).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The value drawn.
    #[arg(long, value_parser = choice::<Metric>(), default_value = "fs_factor")]
    pub metric: Metric,
    /// Width in pixels (the height is half of it).
    #[arg(long, value_name = "PX", default_value = "1000", value_parser = clap::value_parser!(u32).range(400..=20000))]
    pub width: u32,
}

#[derive(Debug, Args)]
pub struct FairnessArgs {
    /// The directory `fairshare usage --every ... --out DIR` wrote.
    #[arg(long, value_name = "DIR")]
    pub history: PathBuf,
    /// Compare the accounts at this depth (1: the root's children).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub depth: u32,
    /// Also write one Parquet row per (window, account), the window's indices on each of its rows
    /// (written atomically).
    #[arg(long, value_name = "FILE.parquet", value_parser = parquet_path)]
    pub out: Option<PathBuf>,
    /// Also draw Jain's index over time and the delivered against the entitled shares: `.svg` or
    /// `.png` (written atomically).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Width of the picture in pixels.
    #[arg(long, value_name = "PX", default_value = "1000", value_parser = clap::value_parser!(u32).range(400..=20000))]
    pub width: u32,
    /// The machine's capacity in billing units per second [default: the nodes' billing in the
    /// slurm.conf of --slurm-conf or --site].
    #[arg(long, value_name = "UNITS_PER_SECOND", conflicts_with_all = ["site", "slurm_conf"])]
    pub capacity: Option<f64>,
    /// Site description (TOML) whose slurm_conf gives the capacity.
    #[arg(long, value_name = "FILE")]
    pub site: Option<PathBuf>,
    /// slurm.conf (or `scontrol show config; scontrol show partition` output) giving the capacity.
    #[arg(long, value_name = "FILE")]
    pub slurm_conf: Option<PathBuf>,
    /// What --slurm-conf holds (default: detected).
    #[arg(long, value_parser = choice::<SlurmConfFormat>(), value_name = "FORMAT", requires = "slurm_conf")]
    pub slurm_conf_format: Option<SlurmConfFormat>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    #[command(flatten)]
    pub usage: UsageArgs,
    /// Variants to compare: `fair-tree`, `classic`, `flux`, with `:dampening=D`,
    /// `:depth-oblivious` or `:exact-sums` (flux).
    #[arg(long, value_delimiter = ',', default_value = "fair-tree,classic,flux")]
    pub variants: Vec<String>,
    /// Print every user association's factor and rank under each variant.
    #[arg(long)]
    pub all: bool,
    /// How many movers to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Also write one Parquet row per user association with `fs_<variant>` and `rank_<variant>`.
    #[arg(long, value_name = "FILE.parquet", value_parser = parquet_path)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct EntitlementArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    /// The job records (what is running at --now), slurm.conf (the nodes: the capacity) and --now.
    #[command(flatten)]
    pub usage: UsageArgs,
    /// Pending jobs (CSV, Parquet or `squeue --json`).
    #[arg(long, value_name = "PATH")]
    pub pending: Option<PathBuf>,
    /// Pending-jobs format (detected when omitted).
    #[arg(long, value_parser = choice::<PendingFormat>(), value_name = "FORMAT")]
    pub pending_format: Option<PendingFormat>,
    /// Also write one Parquet row per (association, TRES), atomically.
    #[arg(long, value_name = "FILE.parquet", value_parser = parquet_path)]
    pub out: Option<PathBuf>,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also draw deserved, allocated and demand per top-level account for --tres (`.svg` or `.png`).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// The TRES --plot draws.
    #[arg(long, value_name = "TRES", default_value = "cpu")]
    pub tres: String,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The earlier run directory (`fairshare run --out-dir`).
    pub run_a: PathBuf,
    /// The later run directory.
    pub run_b: PathBuf,
    /// How many changes of each kind to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
}

impl Command {
    /// The input files named on the command line, with their flags (a site or hardware file's own
    /// paths are not among them).
    pub fn inputs(&self) -> Vec<(&'static str, &Path)> {
        type Inputs<'a> = Vec<(&'static str, Option<&'a Path>)>;
        fn tree(t: &TreeArgs) -> Inputs<'_> {
            vec![("--site", t.site.as_deref()), ("--tree", t.tree.as_deref())]
        }
        fn usage(u: &UsageArgs) -> Inputs<'_> {
            vec![("--jobs", u.jobs.as_deref()), ("--slurm-conf", u.slurm_conf.as_deref()), ("--qos", u.qos.as_deref())]
        }
        fn queue(q: &QueueArgs) -> Inputs<'_> {
            [vec![("--pending", q.pending.as_deref())], usage(&q.usage)].concat()
        }
        let all: Inputs<'_> = match self {
            Command::Sshare(a) => [tree(&a.tree), usage(&a.usage)].concat(),
            Command::Compute(a) => [tree(&a.tree), usage(&a.usage)].concat(),
            Command::Usage(a) => [tree(&a.tree), usage(&a.usage)].concat(),
            Command::Compare(a) => [tree(&a.tree), usage(&a.usage)].concat(),
            // sprio's records flag is renamed (its `--jobs` lists job ids).
            Command::Sprio(a) => [tree(&a.tree), queue(&a.queue)]
                .concat()
                .into_iter()
                .map(|(flag, p)| (if flag == "--jobs" { "--job-records" } else { flag }, p))
                .collect(),
            Command::Score(a) => [tree(&a.tree), queue(&a.queue)].concat(),
            Command::Run(a) => [
                tree(&a.tree),
                usage(&a.usage),
                vec![("--pending", a.pending.as_deref()), ("--flux-db", a.flux_db.as_deref())],
            ]
            .concat(),
            Command::Explain(a) => [tree(&a.tree), usage(&a.usage), vec![("--pending", a.pending.as_deref())]].concat(),
            Command::Shares(a) => vec![("--hardware", Some(a.hardware.as_path()))],
            Command::Plot(a) => match &a.what {
                PlotCommand::Icicle(i) => [tree(&i.tree), usage(&i.usage)].concat(),
                PlotCommand::History(_) => Vec::new(),
            },
            Command::Diff(_) | Command::Report(_) => Vec::new(),
            Command::Forecast(a) => [tree(&a.tree), usage(&a.usage)].concat(),
            Command::Fairness(a) => vec![("--site", a.site.as_deref()), ("--slurm-conf", a.slurm_conf.as_deref())],
            Command::Entitlement(a) => {
                [tree(&a.tree), usage(&a.usage), vec![("--pending", a.pending.as_deref())]].concat()
            }
        };
        all.into_iter().filter_map(|(flag, p)| Some((flag, p?))).collect()
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own checks of the whole command line (duplicate flags, bad defaults), which release
    /// builds otherwise skip.
    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
