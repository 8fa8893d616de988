//! `fairshare explain`: an association's factor derived step by step, two compared, or a job's
//! priority taken apart.

use std::io::Write;

use fairshare_analyses::explain::{explain, explain_who};
use fairshare_base::{Error, Result};
use fairshare_engine::priority::NONE;

use fairshare_engine::pipeline::Queue;

use super::args::ExplainArgs;
use super::progress::Terminal;
use super::settings::Settings;

pub(crate) fn run(a: &ExplainArgs) -> Result<()> {
    let settings = Settings::new(&a.tree, &a.usage, Some((a.pending.as_deref(), a.pending_format)))?;
    let site = settings.options.resolve()?;
    let observer = Terminal::new(settings.default_notes());
    let (tree, fs, _) = site.fair_share(&observer)?;
    let mut text = String::new();
    if let Some(id) = a.job {
        let conf = site
            .slurm_conf
            .as_ref()
            .ok_or_else(|| Error::Usage("--job needs --slurm-conf (the priority weights)".into()))?;
        let pending = site.pending.as_ref().ok_or_else(|| Error::Usage("--job needs --pending".into()))?;
        let q = Queue::slurm(conf, site.qos.as_ref(), site.now, &tree, &fs, pending, &observer)?;
        let rows: Vec<usize> = (0..q.scores.len()).filter(|&r| q.jobs.job_id[q.scores.job[r] as usize] == id).collect();
        if rows.is_empty() {
            return Err(Error::Usage(format!("job {id} is not in {}", pending.path.display())));
        }
        let s = &q.scores;
        let w = &q.weights;
        for &r in &rows {
            let j = s.job[r] as usize;
            let qos_name = if s.qos[r] == NONE { String::new() } else { q.jobs.names.name(s.qos[r]).to_string() };
            text.push_str(&format!(
                "job {id}, partition {}, QOS {}: priority {}\n",
                q.jobs.names.name(s.partition[r]),
                if qos_name.is_empty() { "(none)" } else { &qos_name },
                s.priority[r]
            ));
            let line = |name: &str, weight: f64, value: f64| {
                let factor = if weight != 0.0 { value / weight } else { 0.0 };
                format!("  {name:<12} {weight:>12} × {factor:>10.6} = {value:>14.2}\n")
            };
            text.push_str(&line("age", w.age, s.age[r]));
            text.push_str(&line("association", w.assoc, s.assoc_factor[r]));
            text.push_str(&line("fairshare", w.fairshare, s.fairshare[r]));
            text.push_str(&line("job size", w.job_size, s.job_size[r]));
            text.push_str(&line("partition", w.partition, s.partition_factor[r]));
            text.push_str(&line("qos", w.qos, s.qos_factor[r]));
            for (k, (tres, weight)) in w.tres.iter().enumerate() {
                text.push_str(&line(&format!("tres {tres}"), *weight, s.tres[k][r]));
            }
            text.push_str(&format!(
                "  {:<12} {:>43}\n  {:<12} {:>43}\n",
                "site factor", q.jobs.site_factor[j], "nice", -q.jobs.nice[j]
            ));
            text.push_str(&format!(
                "  sum (Slurm's order, floored at 1, capped at 2^32-1, truncated) = {}\n\n",
                s.priority[r]
            ));
        }
        match s.assoc[rows[0]] {
            NONE => text.push_str("The job's association is unknown: Slurm scores it with fair-share 0.\n"),
            row => text.push_str(&explain(&tree, &fs, row as usize)),
        }
    } else {
        let who = a.who.as_deref().expect("clap requires WHO without --job");
        text.push_str(&explain_who(&tree, &fs, who, a.vs.as_deref())?);
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| Error::io("<stdout>", e))
}
