//! An analyst's session with the library: the seed site's users under Slurm's classic fair share
//! and under Fair Tree, side by side in one polars `DataFrame`.
//!
//! ```text
//! cargo run --release --example analyst
//! ```
//!
//! The library's pipeline does the work (`fairshare_engine::pipeline`): the site file names the tree,
//! slurm.conf, the QOS and a month of job records; resolving it and asking for the fair share
//! charges the records (usage decayed as Slurm's decay thread does), builds the tree and runs the
//! pass; `fairshare_frame` hands the result over as a `DataFrame`. The classic column is what
//! `fairshare run` (whose seed site sets `PriorityFlags=NO_FAIR_TREE`) writes to sshare.txt.

use fairshare_base::named::Named;
use fairshare_engine::pass::Algorithm;
use fairshare_engine::pipeline::{Silent, SiteOptions};
use fairshare_frame::associations_frame;
use polars::prelude::{AnyValue, DataFrame, SortMultipleOptions};

/// The seed site's fair share under one algorithm, as a `DataFrame` with one row per association.
fn fair_share(site_file: &std::path::Path, algorithm: Algorithm) -> fairshare_base::Result<DataFrame> {
    // The algorithm as a flag would give it; the rest (slurm.conf, QOS, job records, `now`,
    // Slurm's decay) from the site file, as `fairshare run --site` takes them.
    let mut options = SiteOptions { algorithm: Some(algorithm), ..SiteOptions::default() };
    options.under_site_file(site_file)?;
    let (tree, fs, charged) = options.resolve()?.fair_share(&Silent)?;
    if let Some(r) = charged {
        eprintln!("{:>9}: {} job records, {} charged", algorithm.name(), r.records, r.charged);
    }
    associations_frame(&tree, &fs)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let site = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/seed-site/site.toml");
    let classic = fair_share(&site, Algorithm::Classic)?;
    let fair_tree = fair_share(&site, Algorithm::FairTree)?;

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
