//! flux-accounting's usage from plain job records, without a flux-accounting database.
//!
//! Two variants. The emulation replays what a site running `flux account-update-usage` from cron
//! every `interval` seconds since the database was created would hold at `now`, quirks included
//! (see [`super::flux`]): the half-life period ends one period after creation, each run sees the
//! jobs that became inactive since the previous one, and only runs where an association has new
//! jobs or the period rolls over change anything, so each association replays just those runs.
//! The clean variant weighs a job inactive k whole periods before `now` by `D^k` for k below the
//! bin count ([`clean_usage`]). Both count completed jobs only, billed as flux does
//! (`round((nodes·node_weight + cores·core_weight + gpus·gpu_weight)·elapsed, 5)`).

use std::path::Path;

use super::flux::{AssocUsage, FluxUsageConfig, check_end_hl, clean_usage, job_usage, update_association};
use super::{ChargeContext, ChargeReport, DecayModel, ExactDecay, JobFormat, for_each_job};
use crate::config::tres::{Tres, parse_tres_counts};
use crate::error::{Error, Result};
use crate::tree::TreeInput;

/// How flux usage is derived from records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FluxRecords {
    /// `P`, `D`, the bins and the billing weights.
    pub cfg: FluxUsageConfig,
    /// The state at this time.
    pub now: i64,
    /// `Some((created, interval))`: emulate update-usage runs at `created + k·interval` (created
    /// defaults to the first job end rounded down to the interval); `None`: the clean variant.
    pub emulate: Option<(Option<i64>, i64)>,
}

/// The runs of update-usage up to `now` and the half-life period end each one reads.
struct Runs {
    created: i64,
    interval: i64,
    count: i64,
    /// Runs (by index, from 1) where the period rolls over or sits exactly one period behind:
    /// every association must be visited there.
    visits: Vec<i64>,
    /// Runs after which `end_hl` has moved one period on.
    advances: Vec<i64>,
    first_end_hl: f64,
    half_life: f64,
}

impl Runs {
    fn new(created: i64, interval: i64, now: i64, half_life: f64) -> Self {
        let count = if now < created { 0 } else { (now - created) / interval };
        let first_end_hl = created as f64 + half_life;
        let (mut visits, mut advances) = (Vec::new(), Vec::new());
        let mut end_hl = first_end_hl;
        for k in 1..=count {
            let t = (created + k * interval) as f64;
            if end_hl <= t - half_life {
                visits.push(k);
            }
            let next = check_end_hl(end_hl, t, half_life);
            if next != end_hl {
                advances.push(k);
                end_hl = next;
            }
        }
        Runs { created, interval, count, visits, advances, first_end_hl, half_life }
    }

    fn time(&self, k: i64) -> f64 {
        (self.created + k * self.interval) as f64
    }

    /// The period end run `k` reads (before its own check).
    fn end_hl_before(&self, k: i64) -> f64 {
        self.first_end_hl + self.half_life * self.advances.partition_point(|&a| a < k) as f64
    }

    /// The first run that sees a job inactive at `t`.
    fn run_of(&self, t: f64) -> i64 {
        (((t - self.created as f64) / self.interval as f64).ceil() as i64).max(1)
    }
}

/// Charges completed jobs of `path` to the user associations of `input` as flux-accounting
/// would, writing `job_usage` into them (accounts get their users' sums).
///
/// # Errors
/// A malformed record or TRES string, naming the line; a non-positive cron interval.
pub fn charge_flux_records(
    input: &mut TreeInput,
    path: &Path,
    format: JobFormat,
    flux: &FluxRecords,
) -> Result<ChargeReport> {
    if flux.emulate.is_some_and(|(_, interval)| interval <= 0) {
        return Err(Error::Usage("the update-usage interval must be positive".into()));
    }
    // The lookup and counting of the Slurm charger; its billing and decay are not used.
    let model = DecayModel::Exact(ExactDecay { half_life: 0, now: flux.now, reset: None });
    let ctx = ChargeContext::new(input, None, None, model);
    let mut charger = ctx.charger();
    let mut jobs: Vec<Vec<(f64, f64)>> = vec![Vec::new(); ctx.rows()];
    let gpu = Tres::gres("gpu");
    for_each_job(path, format, &mut |job| {
        let Some((row, start, _)) = charger.resolve(job, path)? else { return Ok(()) };
        // Only inactive jobs are in flux's jobs table.
        let Some(end) = job.end.filter(|&e| e <= flux.now) else { return Ok(()) };
        let counts =
            parse_tres_counts(job.tres_alloc).map_err(|m| Error::input(path, job.line, format!("tres_alloc: {m}")))?;
        let nodes = counts.get(&Tres::parse("node").expect("node is a TRES"));
        let usage = job_usage(nodes, counts.cpu(), counts.get(&gpu), (end - start) as f64, &flux.cfg);
        jobs[row as usize].push((end as f64, usage));
        Ok(())
    })?;
    let report = charger.finish_report();
    let usage: Vec<f64> = match flux.emulate {
        None => jobs.into_iter().map(|j| clean_usage(j.into_iter(), flux.now as f64, &flux.cfg)).collect(),
        Some((created, interval)) => {
            let first_end = jobs.iter().flatten().map(|&(t, _)| t as i64).min().unwrap_or(flux.now);
            let created = created.unwrap_or(first_end.div_euclid(interval) * interval);
            let runs = Runs::new(created, interval, flux.now, flux.cfg.half_life);
            jobs.into_iter().map(|j| replay(j, &runs, &flux.cfg)).collect()
        }
    };
    let mut charged = ctx.charger();
    charged.set_usage(usage);
    charged.finish(input);
    Ok(report)
}

/// One association's `job_usage` after every run, replaying only the runs that change it.
fn replay(mut jobs: Vec<(f64, f64)>, runs: &Runs, cfg: &FluxUsageConfig) -> f64 {
    jobs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut state = AssocUsage { bins: vec![0.0; cfg.bins], last_job_timestamp: 0.0, job_usage: 0.0 };
    let (mut j, mut v) = (0, 0);
    let mut batch: Vec<(f64, f64)> = Vec::new();
    loop {
        let job_run = jobs.get(j).map(|&(t, _)| runs.run_of(t)).filter(|&k| k <= runs.count);
        let visit_run = runs.visits.get(v).copied();
        let k = match (job_run, visit_run) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        batch.clear();
        while let Some(&(t, u)) = jobs.get(j) {
            if runs.run_of(t) != k {
                break;
            }
            batch.push((t, u));
            j += 1;
        }
        if visit_run == Some(k) {
            v += 1;
        }
        update_association(
            &mut state,
            &mut batch,
            runs.end_hl_before(k),
            runs.time(k),
            cfg.half_life,
            cfg.decay_factor,
        );
    }
    state.job_usage
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The oracle: every run of update-usage, in order, for one association.
    fn every_run(jobs: &[(f64, f64)], created: i64, interval: i64, now: i64, cfg: &FluxUsageConfig) -> f64 {
        let mut state = AssocUsage { bins: vec![0.0; cfg.bins], last_job_timestamp: 0.0, job_usage: 0.0 };
        let mut end_hl = created as f64 + cfg.half_life;
        let mut k = 1;
        while created + k * interval <= now {
            let t = (created + k * interval) as f64;
            let mut new: Vec<(f64, f64)> =
                jobs.iter().copied().filter(|&(ti, _)| ti > state.last_job_timestamp && ti <= t).collect();
            update_association(&mut state, &mut new, end_hl, t, cfg.half_life, cfg.decay_factor);
            end_hl = check_end_hl(end_hl, t, cfg.half_life);
            k += 1;
        }
        state.job_usage
    }

    #[test]
    fn replaying_only_the_changing_runs_matches_every_run() {
        let cfg = FluxUsageConfig { half_life: 1000.0, ..FluxUsageConfig::default() };
        // Jobs in the first period, across rollovers, two in one run, one exactly on a run.
        let jobs = [(150.0, 10.0), (990.0, 4.0), (995.0, 3.0), (2600.0, 100.0), (3000.0, 7.0), (7777.0, 1.0)];
        for (created, interval, now) in [(0, 100, 9000), (50, 300, 8_200), (0, 1000, 9000), (0, 2500, 10_000)] {
            let runs = Runs::new(created, interval, now, cfg.half_life);
            let got = replay(jobs.to_vec(), &runs, &cfg);
            let want = every_run(&jobs, created, interval, now, &cfg);
            assert_eq!(got, want, "created {created}, interval {interval}, now {now}");
            assert!(want > 0.0, "a case that keeps some usage");
        }
    }
}
