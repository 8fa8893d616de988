//! Usage history: the usage of every association at many instants from one pass over the job
//! records.
//!
//! A job's usage at instant `T_i` relates to its usage at `T_{i-1}` by a carry factor that is the
//! same for every job: the decay between the two instants (`r^passes` for Slurm's decay thread,
//! `2^(-Δt/half_life)` for the exact model), or 0 when a `PriorityUsageResetPeriod` boundary falls
//! between them. So each job adds, at each instant, only the difference
//! `Δ_i = u(T_i) - carry_i · u(T_{i-1})`, which is zero once the job's last charge is behind
//! both instants; the usage at every instant is then one scan,
//! `U_i = carry_i · U_{i-1} + Δ_i`. A job touches only the instants its run overlaps, however
//! many instants there are.
//!
//! Under Slurm's decay for the classic algorithm, each instant also has the usage at the start of
//! its last pass ([`SlurmDecay::job_usage_at_last_pass_start`], which classic's accounts read). It
//! follows the same recurrence with the same carry: once a job's last charge is a pass behind,
//! its value at a pass's start is its usage after the previous pass, which decays pass by pass
//! as the usage does, and a reset clears both.

use std::path::{Path, PathBuf};

use fairshare_base::hash::FastMap;

use super::SlurmDecay;
use super::charge::{ChargeContext, ChargeReport, DecayModel, finite_usage};
use super::records::{JobFormat, for_each_job};
use fairshare_base::{Error, Result};

/// The instants of a history and the decay model evaluated at each.
#[derive(Clone, Debug)]
pub struct Instants {
    times: Vec<i64>,
    models: Vec<DecayModel>,
}

impl Instants {
    /// Instants `times` (sorted and deduplicated here), with `model_at(t)` the decay model that
    /// evaluates usage at `t`. All models must share one kind and its parameters but `now` and
    /// the reset boundary.
    pub fn new(mut times: Vec<i64>, model_at: impl Fn(i64) -> DecayModel) -> Self {
        times.sort_unstable();
        times.dedup();
        let models = times.iter().map(|&t| model_at(t)).collect();
        Instants { times, models }
    }

    /// The instants, ascending.
    pub fn times(&self) -> &[i64] {
        &self.times
    }

    /// The factor carrying usage at instant `i - 1` to instant `i` (`i` from 1): the decay
    /// between the two, or 0 when a reset falls between them.
    pub fn carry(&self, i: usize) -> f64 {
        match (&self.models[i - 1], &self.models[i]) {
            (DecayModel::Slurm(a), DecayModel::Slurm(b)) => {
                let c = i64::from(b.calc_period.max(1));
                let last_pass = |d: &super::SlurmDecay| (d.now - d.first_pass).div_euclid(c);
                let (ka, kb) = (last_pass(a), last_pass(b));
                let pass_a = b.first_pass + ka * c;
                // A reset pass between the two instants clears everything before it.
                if ka < 0 || b.reset.is_some_and(|r| r > pass_a && r > b.first_pass) {
                    return 0.0;
                }
                let r = b.decay_factor().powf(c as f64).max(f64::MIN_POSITIVE);
                r.powf((kb - ka) as f64)
            }
            (DecayModel::Exact(a), DecayModel::Exact(b)) => {
                if b.reset.is_some_and(|r| r > a.now) {
                    return 0.0;
                }
                if b.half_life == 0 {
                    1.0
                } else {
                    (-(std::f64::consts::LN_2) * (b.now - a.now) as f64 / f64::from(b.half_life)).exp()
                }
            }
            _ => 0.0,
        }
    }

    /// The decay thread at instant `i` when its last pass's start is kept (Slurm's, for classic).
    fn pass_start_model(&self, i: usize) -> Option<&SlurmDecay> {
        match &self.models[i] {
            DecayModel::Slurm(d) if !d.fair_tree => Some(d),
            _ => None,
        }
    }

    /// After this time a job that ended at `end` only decays: its last charge (Slurm's end-of-job
    /// charge or the pass after the end) is behind.
    pub fn settled(&self, end: i64) -> i64 {
        match &self.models[0] {
            DecayModel::Slurm(d) => end + 2 * i64::from(d.calc_period.max(1)),
            DecayModel::Exact(_) => end,
        }
    }
}

/// The usage differences per instant, to be scanned into usage per instant.
pub struct History {
    /// The job records, for messages.
    path: PathBuf,
    instants: Instants,
    deltas: Vec<FastMap<u32, f64>>,
    /// The same for the usage at the start of each instant's last pass, when it is kept.
    pass_start_deltas: Option<Vec<FastMap<u32, f64>>>,
    rows: usize,
    /// What the charging saw.
    pub report: ChargeReport,
}

impl History {
    /// Calls `f(i, usage, pass_start)` for every instant in order, with the raw usage per record
    /// of the tree input the context was made from (accounts 0: theirs is their users' sum), and
    /// under Slurm's decay for classic the usage at the start of the instant's last pass.
    ///
    /// # Errors
    /// Usage at an instant whose sum over the associations is not a finite number, or whatever
    /// `f` returns.
    pub fn for_each_instant(&self, mut f: impl FnMut(usize, &[f64], Option<&[f64]>) -> Result<()>) -> Result<()> {
        let mut usage = vec![0.0; self.rows];
        let mut pass_start = self.pass_start_deltas.as_ref().map(|_| vec![0.0; self.rows]);
        for (i, delta) in self.deltas.iter().enumerate() {
            self.scan(i, delta, &mut usage)?;
            if let (Some(ps), Some(deltas)) = (&mut pass_start, &self.pass_start_deltas) {
                self.scan(i, &deltas[i], ps)?;
            }
            f(i, &usage, pass_start.as_deref())?;
        }
        Ok(())
    }

    /// Carries `usage` from instant `i - 1` to `i` and adds the instant's differences.
    fn scan(&self, i: usize, delta: &FastMap<u32, f64>, usage: &mut [f64]) -> Result<()> {
        if i > 0 {
            let carry = self.instants.carry(i);
            usage.iter_mut().for_each(|u| *u *= carry);
        }
        // Sorted by row so the sums do not depend on the map's iteration order.
        let mut rows: Vec<(u32, f64)> = delta.iter().map(|(&r, &d)| (r, d)).collect();
        rows.sort_unstable_by_key(|&(r, _)| r);
        for (r, d) in rows {
            usage[r as usize] += d;
        }
        // Each charge is finite; their sums, up to the root's, can still overflow.
        let total: f64 = usage.iter().sum();
        if !total.is_finite() {
            let t = self.instants.times[i];
            return Err(Error::input(
                &self.path,
                None,
                format!("the usage charged at {t} sums to {total} over the associations, not a finite number"),
            ));
        }
        Ok(())
    }

    /// The instants.
    pub fn instants(&self) -> &Instants {
        &self.instants
    }
}

/// Reads the job records of `path` once and returns the usage differences of every association
/// at every instant.
///
/// # Errors
/// A malformed record or one the charger rejects, naming the line.
pub fn charge_history(path: &Path, format: JobFormat, ctx: &ChargeContext<'_>, instants: Instants) -> Result<History> {
    charge_history_with(path, format, ctx, instants, |_| true)
}

/// A record as [`charge_history_with`] shows it before charging it.
#[derive(Clone, Copy, Debug)]
pub struct Charged {
    /// The association's record in the tree input.
    pub row: u32,
    /// Its start.
    pub start: i64,
    /// Its end (`None`: still running).
    pub end: Option<i64>,
    /// Billing per second, with the QOS usage factor.
    pub bill: f64,
}

/// [`charge_history`], with `each` seeing every record it charges first: it may change the
/// record's end, or return `false` to leave the record out (a forecast ends the jobs running at
/// its start and reads the recent rates).
///
/// # Errors
/// As [`charge_history`].
pub fn charge_history_with(
    path: &Path,
    format: JobFormat,
    ctx: &ChargeContext<'_>,
    instants: Instants,
    mut each: impl FnMut(&mut Charged) -> bool,
) -> Result<History> {
    let n = instants.times.len();
    let mut deltas: Vec<FastMap<u32, f64>> = vec![FastMap::default(); n];
    let keep_pass_start = n > 0 && instants.pass_start_model(0).is_some();
    let mut pass_start_deltas: Vec<FastMap<u32, f64>> =
        if keep_pass_start { vec![FastMap::default(); n] } else { Vec::new() };
    let mut charger = ctx.charger();
    for_each_job(path, format, &mut |job| {
        let Some((row, start, bill)) = charger.resolve(job, path)? else {
            return Ok(());
        };
        let mut charged = Charged { row, start, end: job.end, bill };
        if !each(&mut charged) {
            return Ok(());
        }
        let end = charged.end;
        let first = instants.times.partition_point(|&t| t < start);
        let settled = end.map(|e| instants.settled(e));
        add_deltas(&instants, &mut deltas, first, settled, row, |i| {
            finite_usage(instants.models[i].job_usage(start, end, bill), job, bill, path)
        })?;
        if keep_pass_start {
            // `settled` leaves two calc periods after the end: the previous pass, whose state a
            // pass's start holds, is then behind the last charge too.
            add_deltas(&instants, &mut pass_start_deltas, first, settled, row, |i| {
                let d = instants.pass_start_model(i).expect("every instant has the same model");
                finite_usage(d.job_usage_at_last_pass_start(start, end, bill), job, bill, path)
            })?;
        }
        Ok(())
    })?;
    let report = charger.finish_report();
    let pass_start_deltas = keep_pass_start.then_some(pass_start_deltas);
    Ok(History { path: path.to_path_buf(), instants, deltas, pass_start_deltas, rows: ctx.rows(), report })
}

/// Adds one job's differences `value(i) - carry_i · value(i - 1)` at the instants from `first`
/// until the one after `settled` (from then on the carry alone moves its value).
fn add_deltas(
    instants: &Instants,
    deltas: &mut [FastMap<u32, f64>],
    first: usize,
    settled: Option<i64>,
    row: u32,
    mut value: impl FnMut(usize) -> Result<f64>,
) -> Result<()> {
    let mut before = 0.0;
    for (i, delta) in deltas.iter_mut().enumerate().skip(first) {
        if i > first && settled.is_some_and(|s| instants.times[i - 1] >= s) {
            break;
        }
        let now = value(i)?;
        let carried = if i > first { before * instants.carry(i) } else { 0.0 };
        let d = now - carried;
        if d != 0.0 {
            *delta.entry(row).or_insert(0.0) += d;
        }
        before = now;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ResetPeriod;
    use crate::usage::reset::last_boundary;
    use crate::usage::{ExactDecay, SlurmDecay};

    const TREE: &str = "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,a,,1,0\n3,2,a,u1,1,0\n4,2,a,u2,1,0\n5,1,b,,1,0\n6,5,b,u3,1,0\n";

    /// Jobs that start before, between and after instants, span several, end on a pass, and run on.
    fn jobs() -> String {
        let mut s = String::from("job_id,user,account,partition,qos,start,end,tres_alloc\n");
        let rows = [
            ("u1", "a", 100, Some(5_000)),
            ("u2", "a", 86_000, Some(90_000)),
            ("u3", "b", 3_000, None),
            ("u1", "a", 170_000, Some(170_600)),
            ("u2", "a", 86_700, Some(86_800)),
            ("u3", "b", 250_000, Some(400_000)),
            ("u1", "a", 10, Some(600)),
        ];
        for (i, (u, a, start, end)) in rows.into_iter().enumerate() {
            let end = end.map(|e: i64| e.to_string()).unwrap_or_default();
            s.push_str(&format!("{i},{u},{a},p,,{start},{end},\"cpu={},node=1\"\n", 1 + i));
        }
        s
    }

    fn check(model_at: &dyn Fn(i64) -> DecayModel) {
        let dir = tempfile::tempdir().unwrap();
        let (tree_path, jobs_path) = (dir.path().join("tree.csv"), dir.path().join("jobs.csv"));
        std::fs::write(&tree_path, TREE).unwrap();
        std::fs::write(&jobs_path, jobs()).unwrap();
        let input = crate::io::read_tree_input(&tree_path, None).unwrap();
        let times: Vec<i64> = (0..12).map(|k| 1_000 + k * 37_000).collect();
        let ctx = ChargeContext::new(&input, None, None, model_at(0));
        let history = charge_history(&jobs_path, JobFormat::Csv, &ctx, Instants::new(times.clone(), model_at)).unwrap();
        assert_eq!(history.report.charged, 7);
        history
            .for_each_instant(|i, usage, pass_start| {
                // The oracle: every record charged afresh at this instant.
                let direct = ChargeContext::new(&input, None, None, model_at(times[i]));
                let mut charger = direct.charger();
                crate::usage::for_each_job(&jobs_path, JobFormat::Csv, &mut |j| charger.charge(j, &jobs_path))?;
                let mut expected = input.clone();
                let report = charger.finish(&mut expected, &jobs_path)?;
                assert_eq!(pass_start.is_some(), report.pass_start.is_some(), "instant {i}");
                if let (Some(got), Some(want)) = (pass_start, &report.pass_start) {
                    for (r, (g, w)) in got.iter().zip(want).enumerate() {
                        if expected.records[r].user.is_some() {
                            let tol = 1e-9 * w.abs().max(1.0);
                            assert!((g - w).abs() <= tol, "pass start, instant {i} row {r}: {g} vs {w}");
                        }
                    }
                }
                for (r, (got, want)) in usage.iter().zip(&expected.records).enumerate() {
                    if want.user.is_some() {
                        let tol = 1e-9 * want.usage.abs().max(1.0);
                        assert!((got - want.usage).abs() <= tol, "instant {i} row {r}: {got} vs {}", want.usage);
                    }
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn the_scan_matches_charging_each_instant_afresh() {
        let slurm = |reset: ResetPeriod, fair_tree: bool| {
            move |t: i64| {
                let last_pass = t.div_euclid(300) * 300;
                DecayModel::Slurm(SlurmDecay {
                    half_life: 86_400,
                    calc_period: 300,
                    first_pass: 0,
                    now: t,
                    charge_job_end: true,
                    fair_tree,
                    reset: last_boundary(reset, chrono_tz::UTC, last_pass),
                })
            }
        };
        check(&slurm(ResetPeriod::None, true));
        check(&slurm(ResetPeriod::None, false));
        check(&slurm(ResetPeriod::Daily, true));
        check(&slurm(ResetPeriod::Daily, false));
        let exact = |reset: ResetPeriod, half_life: u32| {
            move |t: i64| {
                DecayModel::Exact(ExactDecay { half_life, now: t, reset: last_boundary(reset, chrono_tz::UTC, t) })
            }
        };
        check(&exact(ResetPeriod::None, 3_600));
        check(&exact(ResetPeriod::Daily, 86_400));
        check(&exact(ResetPeriod::None, 0));
    }
}
