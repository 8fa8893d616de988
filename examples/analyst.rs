//! An analyst's session with the library: the seed site's users under Slurm's classic fair share
//! and under Fair Tree, side by side in one polars `DataFrame`.
//!
//! ```text
//! cargo run --release --example analyst
//! ```
//!
//! Every stage is one library call: read the association tree, charge the month of job records
//! into it (usage decayed as Slurm's decay thread does), build the tree, run the fair-share pass,
//! and take its results as a `DataFrame` (`fairshare::frame`). The classic column is what
//! `fairshare run` (whose seed site sets `PriorityFlags=NO_FAIR_TREE`) writes to sshare.txt.

use std::path::Path;

use fairshare::config::{QosTable, SlurmConf};
use fairshare::fairshare::{Algorithm, Params, compute};
use fairshare::frame::associations_frame;
use fairshare::tree::AssocTree;
use fairshare::usage::reset::last_boundary;
use fairshare::usage::{DecayModel, JobFormat, SlurmDecay, charge_jobs};
use polars::prelude::{AnyValue, DataFrame, SortMultipleOptions};

/// The seed site's evaluation time, 2026-01-08T00:00:00 UTC (its site.toml's `now`).
const NOW: i64 = 1_767_830_400;

/// Usage → tree → fair share for one algorithm, as a `DataFrame` with one row per association.
fn fair_share(site: &Path, conf: &SlurmConf, qos: &QosTable, algorithm: Algorithm) -> fairshare::Result<DataFrame> {
    let mut input = fairshare::io::read_tree_input(&site.join("tree.csv"), None)?;
    // Slurm's decay thread: passes every PriorityCalcPeriod (aligned on it), each decaying usage
    // by the half-life; Fair Tree charges running jobs on the first pass, classic does not.
    let calc_period = conf.priority_calc_period.max(1);
    let last_pass = NOW - NOW.rem_euclid(i64::from(calc_period));
    let decay = SlurmDecay {
        half_life: conf.priority_decay_half_life,
        calc_period,
        first_pass: 0,
        now: NOW,
        charge_job_end: conf.accounting_storage_enforce.charges_job_end(),
        fair_tree: algorithm == Algorithm::FairTree,
        reset: last_boundary(conf.priority_usage_reset_period, chrono_tz::UTC, last_pass),
    };
    let jobs = site.join("jobs.csv");
    let report = charge_jobs(&mut input, &jobs, JobFormat::Csv, Some(conf), Some(qos), DecayModel::Slurm(decay), None)?;
    eprintln!("{:>9}: {} job records, {} charged", algorithm.name(), report.records, report.charged);
    let tree = AssocTree::build(input)?;
    let params = Params {
        dampening: conf.fair_share_dampening_factor,
        depth_oblivious: conf.priority_flags.depth_oblivious,
        ..Params::new(algorithm)
    };
    let fs = compute(&tree, &params)?;
    associations_frame(&tree, &fs)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-site");
    let conf = fairshare::config::slurm_conf::read(&site.join("slurm.conf"))?;
    let qos = fairshare::config::qos::read(&site.join("qos.txt"))?;
    let classic = fair_share(&site, &conf, &qos, Algorithm::Classic)?;
    let fair_tree = fair_share(&site, &conf, &qos, Algorithm::FairTree)?;

    // Both passes ran over the same tree, so their rows line up (breadth-first order).
    assert!(classic.column("id")?.as_materialized_series().equals(fair_tree.column("id")?.as_materialized_series()));
    let users = classic.column("is_user")?.bool()?.clone();
    let fair_tree = fair_tree.filter(&users)?;
    let mut cmp = classic.select(["account", "user", "norm_shares", "effective_usage", "fs_factor"])?.filter(&users)?;
    cmp.rename("fs_factor", "fs_classic".into())?;
    cmp.with_column(fair_tree.column("fs_factor")?.clone().with_name("fs_fair_tree".into()))?;
    cmp.with_column(fair_tree.column("rank")?.clone().with_name("fair_tree_rank".into()))?;
    let change = (cmp.column("fs_fair_tree")? - cmp.column("fs_classic")?)?;
    cmp.with_column(change.with_name("change".into()))?;
    let cmp = cmp
        .sort(["fs_fair_tree"], SortMultipleOptions::default().with_order_descending(true).with_maintain_order(true))?;

    println!("Fair-share factor of the seed site's users at 2026-01-08, classic vs Fair Tree:");
    print_frame(&cmp)?;
    Ok(())
}

/// Prints a `DataFrame` as an aligned table (this build of polars has no table formatter), doubles
/// with six decimals as sshare prints them, nulls blank.
fn print_frame(df: &DataFrame) -> Result<(), Box<dyn std::error::Error>> {
    let mut cells: Vec<Vec<String>> = vec![df.get_column_names().iter().map(|n| n.to_string()).collect()];
    for row in 0..df.height() {
        let mut line = Vec::with_capacity(df.width());
        for col in df.columns() {
            line.push(match col.get(row)? {
                AnyValue::Null => String::new(),
                AnyValue::Float64(v) => format!("{v:.6}"),
                AnyValue::String(s) => s.to_string(),
                v => v.to_string(),
            });
        }
        cells.push(line);
    }
    let widths: Vec<usize> =
        (0..df.width()).map(|c| cells.iter().map(|line| line[c].chars().count()).max().unwrap_or(0)).collect();
    for line in &cells {
        let text: Vec<String> = line
            .iter()
            .zip(&widths)
            .enumerate()
            // Names left-aligned, numbers right-aligned.
            .map(|(c, (s, &w))| if c < 2 { format!("{s:<w$}") } else { format!("{s:>w$}") })
            .collect();
        println!("{}", text.join("  ").trim_end());
    }
    println!("shape: ({}, {})", df.height(), df.width());
    Ok(())
}
