//! `fairshare compare`: algorithms and parameter variants side by side on the same inputs;
//! `fairshare diff`: what changed between two run directories ([`fairshare_analyses::diff`]).

use std::io::Write;

use fairshare_analyses::compare::{Variant, compare_variants_with};
use fairshare_base::write::parquet::{version_metadata, write_parquet};
use fairshare_base::{Error, Result};
use parquet::file::metadata::KeyValue;

use super::args::{CompareArgs, DiffArgs};
use super::progress::Terminal;
use super::settings::Settings;

pub(crate) fn compare(a: &CompareArgs) -> Result<()> {
    let variants: Vec<Variant> = a.variants.iter().map(|v| Variant::parse(v)).collect::<Result<_>>()?;
    let settings = Settings::new(&a.tree, &a.usage, None)?;
    let site = settings.options.resolve()?;
    let observer = Terminal::new(settings.default_notes());
    // Said as it happens, among the notes of charging (on stderr: the table compares what could
    // be computed).
    let mut say = |label: &str, e: &Error| eprintln!("fairshare: {label} left out of the comparison: {e}");
    let comparison = compare_variants_with(&site, &variants, &observer, &mut say)?;
    let text = comparison.text(a.all, a.top);
    if let Some(out) = &a.out {
        let mut meta = version_metadata();
        meta.extend([
            KeyValue::new("fairshare.source".to_string(), site.tree.source()),
            KeyValue::new("fairshare.variants".to_string(), a.variants.join(",")),
        ]);
        meta.extend(site.metadata());
        meta.extend(fairshare_engine::pipeline::charge_metadata(comparison.charge.as_ref()));
        write_parquet(out, &comparison.batch()?, meta)?;
    }
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    w.write_all(text.as_bytes()).and_then(|()| w.flush()).map_err(|e| Error::io("<stdout>", e))
}

pub(crate) fn diff(a: &DiffArgs) -> Result<()> {
    let text = fairshare_analyses::diff::diff(&a.run_a, &a.run_b, a.top)?;
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    w.write_all(text.as_bytes()).and_then(|()| w.flush()).map_err(|e| Error::io("<stdout>", e))
}
