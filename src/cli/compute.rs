//! `fairshare compute`: the fair-share of every association as Parquet.

use fairshare_base::Result;
use fairshare_base::write::parquet::write_parquet;
use fairshare_engine::output::parquet::{into_association_batch, metadata};
use fairshare_engine::pipeline::charge_metadata;

use super::args::ComputeArgs;
use super::progress::Terminal;
use super::settings::Settings;

/// Runs `fairshare compute`.
pub(crate) fn run(a: &ComputeArgs) -> Result<()> {
    let settings = Settings::new(&a.tree, &a.usage, None)?;
    let site = settings.options.resolve()?;
    let (tree, result, charge) = site.fair_share(&Terminal::new(settings.default_notes()))?;
    let mut meta = metadata(&result, &site.tree.source());
    meta.extend(site.metadata());
    meta.extend(charge_metadata(charge.as_ref()));
    write_parquet(&a.out, &into_association_batch(&tree, result), meta)
}
