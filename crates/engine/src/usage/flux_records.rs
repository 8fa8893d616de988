//! flux-accounting's usage from plain job records, without a flux-accounting database.
//!
//! Two variants. The emulation replays what a site running `flux account-update-usage` from cron
//! every `interval` seconds since the database was created would hold at `now`, quirks included
//! (see [`super::flux`]): the half-life period ends one period after creation, each run sees the
//! jobs that became inactive since the previous one, and only runs where an association has new
//! jobs or the period rolls over change anything, so each association replays just those runs,
//! found in closed form, and stops replaying rollovers once its bins have rotated to what further
//! rotations keep: the work is bounded by the jobs, however far `now` lies.
//! The clean variant weighs a job inactive k whole periods before `now` by `D^k` for k below the
//! bin count ([`clean_usage`]). Both count completed jobs only, billed as flux does
//! (`round((nodes·node_weight + cores·core_weight + gpus·gpu_weight)·elapsed, 5)`).

use std::path::Path;

use super::flux::{AssocUsage, FluxUsageConfig, UsageBranch, clean_usage, job_usage, update_association};
use super::{ChargeContext, ChargeReport, DecayModel, ExactDecay, JobFormat, for_each_job};
use crate::config::tres::{Tres, parse_tres_counts};
use crate::tree::TreeInput;
use fairshare_base::error::{Error, Result};

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

/// The runs of update-usage up to `now` (run `k` at `created + k·interval`), in closed form.
///
/// After `m` advances the period ends at `created + P·(1 + m)`; run `k` rolls over ("visits")
/// when that end is at most `t_k - P`, i.e. `P·(2 + m) <= k·I`, and advances it when the
/// inequality is strict. So the advances after run `k` follow `m_k = min(m_{k-1} + 1, g(k))` with
/// `g(k) = max(0, ⌈k·I/P⌉ - 2)` non-decreasing, whence `m_k = min_j (g(j) + k - j)`: the minimum
/// is at `j = k` when `I <= P` (g climbs at most 1 per run) and at the last run with `g = 0`,
/// `j = ⌊2P/I⌋`, when `I > P` (g then climbs at least 1 per run).
struct Runs {
    created: i64,
    interval: i64,
    count: i64,
    /// `P`, whole seconds (0: the period end never moves and every run rolls over).
    half_life: i64,
    first_end_hl: f64,
}

impl Runs {
    fn new(created: i64, interval: i64, now: i64, half_life: i64) -> Self {
        let count = if now < created { 0 } else { (now - created) / interval };
        Runs { created, interval, count, half_life, first_end_hl: (created + half_life) as f64 }
    }

    fn time(&self, k: i64) -> f64 {
        (self.created + k * self.interval) as f64
    }

    /// Advances of the period end in runs `1..=k`.
    fn advances(&self, k: i64) -> i64 {
        if self.half_life == 0 || k <= 0 {
            return 0;
        }
        // i128: `k·I` and `P·(2 + m)` exceed i64 for long spans of long periods.
        let (k, i, p) = (i128::from(k), i128::from(self.interval), i128::from(self.half_life));
        let g = ((k * i + p - 1) / p - 2).max(0);
        g.min(k - (2 * p / i).min(k)) as i64
    }

    /// The period end run `k` reads (before its own check).
    fn end_hl_before(&self, k: i64) -> f64 {
        self.first_end_hl + self.half_life as f64 * self.advances(k - 1) as f64
    }

    /// The first run from `from` on that rolls the period over, if any up to `now`: no run
    /// advances the period end before it, so the end read at `from` decides.
    fn next_visit(&self, from: i64) -> Option<i64> {
        let (i, p, m) = (i128::from(self.interval), i128::from(self.half_life), i128::from(self.advances(from - 1)));
        let k = i128::from(from).max((p * (2 + m) + i - 1) / i);
        (k <= i128::from(self.count)).then_some(k as i64)
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
    let half_life = flux.cfg.half_life;
    // The emulation's closed forms count in whole seconds, as the CLI's half-lives are.
    if flux.emulate.is_some() && !(half_life >= 0.0 && half_life.fract() == 0.0 && half_life <= 2f64.powi(53)) {
        return Err(Error::Usage(format!("the flux half-life {half_life} is not a whole number of seconds")));
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
            let runs = Runs::new(created, interval, flux.now, half_life as i64);
            jobs.into_iter().map(|j| replay(j, &runs, &flux.cfg)).collect()
        }
    };
    let mut charged = ctx.charger();
    charged.set_usage(usage)?;
    charged.finish(input, path)?;
    Ok(report)
}

/// One association's `job_usage` after every run, replaying only the runs that change it.
fn replay(mut jobs: Vec<(f64, f64)>, runs: &Runs, cfg: &FluxUsageConfig) -> f64 {
    jobs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut state = AssocUsage { bins: vec![0.0; cfg.bins], last_job_timestamp: 0.0, job_usage: 0.0 };
    let (mut j, mut from) = (0, 1);
    // Rotations since the last run that added usage: once every bin has been rotated through, the
    // bins hold what further rotations keep (0·D^k), so until the next job no run changes anything.
    let mut rotations = 0;
    let mut batch: Vec<(f64, f64)> = Vec::new();
    loop {
        let job_run = jobs.get(j).map(|&(t, _)| runs.run_of(t)).filter(|&k| k <= runs.count);
        let visit_run = if rotations > state.bins.len() { None } else { runs.next_visit(from) };
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
        let update = update_association(
            &mut state,
            &mut batch,
            runs.end_hl_before(k),
            runs.time(k),
            cfg.half_life,
            cfg.decay_factor,
        );
        rotations = match update.branch {
            UsageBranch::Decayed => rotations + 1,
            // A roll-over run exactly one period behind only re-sums the bins.
            UsageBranch::CurrentPeriod | UsageBranch::Unchanged if batch.is_empty() => rotations,
            _ => 0,
        };
        from = k + 1;
    }
    state.job_usage
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::flux::check_end_hl;

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
            let runs = Runs::new(created, interval, now, 1000);
            let got = replay(jobs.to_vec(), &runs, &cfg);
            let want = every_run(&jobs, created, interval, now, &cfg);
            assert_eq!(got, want, "created {created}, interval {interval}, now {now}");
            assert!(want > 0.0, "a case that keeps some usage");
        }
    }

    #[test]
    fn the_closed_forms_match_stepping_the_period_end() {
        for half_life in [0, 1, 7, 100, 300, 1000] {
            for interval in [1, 3, 50, 100, 299, 300, 301, 1000, 2500] {
                let runs = Runs::new(40, interval, 40 + 60 * interval, half_life);
                let p = half_life as f64;
                let mut end_hl = runs.first_end_hl;
                let (mut advances, mut next_visits) = (0, Vec::new());
                for k in 1..=runs.count {
                    assert_eq!(runs.end_hl_before(k), end_hl, "P {half_life}, I {interval}, run {k}");
                    if end_hl <= runs.time(k) - p {
                        next_visits.push(k);
                    }
                    let next = check_end_hl(end_hl, runs.time(k), p);
                    advances += i64::from(next != end_hl);
                    end_hl = next;
                    assert_eq!(runs.advances(k), advances, "P {half_life}, I {interval}, run {k}");
                }
                for from in 1..=runs.count + 1 {
                    let want = next_visits.iter().copied().find(|&k| k >= from);
                    assert_eq!(runs.next_visit(from), want, "P {half_life}, I {interval}, from {from}");
                }
            }
        }
    }

    #[test]
    fn replay_matches_every_run_for_any_period_and_interval() {
        // Jobs close together, a gap of many periods, a job on a run and one after `now`.
        let jobs = [(130.0, 5.0), (170.0, 2.0), (1_700.0, 9.0), (1_800.0, 1.0), (9_000.0, 3.0), (99_999.0, 8.0)];
        for bins in [0, 1, 2, 4] {
            for (half_life, decay_factor) in [(0, 0.5), (1, 0.5), (100, 0.5), (300, 0.25), (1000, 1.0), (1000, 0.5)] {
                let cfg = FluxUsageConfig { half_life: f64::from(half_life), decay_factor, bins, ..Default::default() };
                for interval in [1, 7, 100, 300, 1000, 2500] {
                    for (created, now) in [(0, 9_500), (100, 20_000), (1_700, 1_900)] {
                        let runs = Runs::new(created, interval, now, i64::from(half_life));
                        let got = replay(jobs.to_vec(), &runs, &cfg);
                        let want = every_run(&jobs, created, interval, now, &cfg);
                        assert_eq!(
                            got.to_bits(),
                            want.to_bits(),
                            "bins {bins}, P {half_life}, D {decay_factor}, I {interval}, created {created}, now {now}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_far_now_costs_no_more_than_a_near_one() {
        // 2.5·10^11 runs of one second, and as many roll-overs with a one-second period.
        let cfg = FluxUsageConfig { half_life: 1.0, ..FluxUsageConfig::default() };
        let runs = Runs::new(0, 1, *fairshare_base::read::time::TIME_RANGE.end(), 1);
        assert_eq!(replay(vec![(100.0, 4.0), (200.0, 2.0)], &runs, &cfg), 0.0);
        let cfg = FluxUsageConfig { half_life: 604_800.0, ..FluxUsageConfig::default() };
        let runs = Runs::new(0, 1, *fairshare_base::read::time::TIME_RANGE.end(), 604_800);
        assert_eq!(replay(vec![(100.0, 4.0)], &runs, &cfg), 0.0);
    }
}
