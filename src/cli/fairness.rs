//! `fairshare fairness`: delivered against entitled usage over a usage history, as a table on
//! stdout, and optionally Parquet and a chart.

use std::io::Write;

use fairshare_analyses::fairness::{Capacity, Fairness, machine_capacity};
use fairshare_base::write::parquet::write_parquet;
use fairshare_base::{Error, Result};
use fairshare_engine::pipeline::{SiteOptions, shown};
use fairshare_pictures::plot::history::line_charts;
use fairshare_pictures::plot::{Format, save};

use super::args::FairnessArgs;

pub(crate) fn run(a: &FairnessArgs) -> Result<()> {
    // Checked before the (possibly long) reading.
    if let Some(plot) = &a.plot {
        Format::of(plot)?;
    }
    let capacity = capacity(a)?;
    let fairness = Fairness::read(&a.history, a.depth)?;
    let capacity = match capacity {
        Ok(c) => Some(c),
        Err(why) => {
            eprintln!("fairshare: {why}: the capacity normalization is left blank");
            None
        }
    };
    let mut text = Vec::new();
    fairness.write_report(&mut text, capacity.as_ref()).map_err(|e| Error::io("<stdout>", e))?;
    let mut out = std::io::stdout().lock();
    out.write_all(&text).and_then(|()| out.flush()).map_err(|e| Error::io("<stdout>", e))?;
    let per_second = capacity.as_ref().map(|c| c.per_second);
    if let Some(path) = &a.out {
        write_parquet(path, &fairness.to_batch(per_second), fairness.metadata(capacity.as_ref()))?;
    }
    if let Some(path) = &a.plot {
        save(&line_charts(&fairness.charts(capacity.as_ref(), a.width)), path)?;
    }
    Ok(())
}

/// The capacity of `--capacity`, or of the slurm.conf of `--slurm-conf` or `--site`; `Err` says
/// why there is none.
fn capacity(a: &FairnessArgs) -> Result<std::result::Result<Capacity, String>> {
    if let Some(c) = a.capacity {
        if !(c.is_finite() && c > 0.0) {
            return Err(Error::Usage(format!("--capacity {c}: give the billing units per second, above 0")));
        }
        return Ok(Ok(Capacity { per_second: c, source: "--capacity".into() }));
    }
    let mut options = SiteOptions {
        slurm_conf: a.slurm_conf.clone(),
        slurm_conf_format: a.slurm_conf_format,
        ..SiteOptions::default()
    };
    if let Some(site) = &a.site {
        options.under_site_file(site)?;
    }
    let Some(path) = &options.slurm_conf else {
        return Ok(Err(match &a.site {
            Some(site) => format!("the site file {} names no slurm_conf", site.display()),
            None => "no --capacity, --slurm-conf or --site".to_string(),
        }));
    };
    let conf = fairshare_engine::config::read_slurm_conf(path, options.slurm_conf_format)?;
    Ok(machine_capacity(&conf)
        .map(|per_second| {
            let nodes = conf.nodes.iter().map(|g| g.names.len()).sum::<u64>();
            Capacity { per_second, source: format!("{}: {nodes} nodes", shown(path)) }
        })
        .map_err(|m| format!("{}: {m}", shown(path))))
}
