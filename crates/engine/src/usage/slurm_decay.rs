//! Slurm's decay thread (`priority_multifactor.c`) in closed form per job.
//!
//! Passes run at `T0 + k·PriorityCalcPeriod`; each pass first decays all usage by `df^period`
//! (`df = 1 - 0.693/half_life`), then charges every running job the slice since the previous pass
//! as `Δt·df^Δt·billable·UsageFactor`. The state is the one after the last pass at or before `now`.
//! The real code's edges are kept: the first pass decays nothing, classic charges nothing on it
//! while Fair Tree charges running jobs from their start; a job still running at a pass is charged
//! up to it; a job that ends between passes is charged its last slice at its end only when
//! `AccountingStorageEnforce` includes limits (that charge is then decayed by the whole next pass
//! interval). A job's contribution is a geometric series, so years of passes cost O(1).

use super::tres::scaled_secs;

/// Passes (and pass-interval seconds) whose factors [`DecayTables`] keeps: a year of 5-minute
/// passes; longer ones compute their own.
const MAX_POWERS: u32 = 1 << 17;

/// A [`SlurmDecay`] with what job after job takes again computed once: the passes, and per
/// slice, per number of passes and per run of full slices the factors (`Δt·df^Δt`, `r^k`,
/// `(1 - r^n)/(1 - r)` with `r = df^period`), made with the operations a job would make, so a
/// charge is the same bits with or without them. A charge of 10^7 records spent a tenth of its
/// time in `pow`; once tabled, the closed form was still a sixth of a 10^8-record charge under
/// `limits` (two per record, each taking the passes apart again: removing both took ~2 s off
/// 13 s).
#[derive(Clone, Debug)]
pub(crate) struct DecayTables {
    decay: SlurmDecay,
    /// The first pass and the pass interval.
    t0: i64,
    c: i64,
    /// The last pass at or before `now`, counted from the first (when `now` is not before it).
    k_last: i64,
    /// The first pass at or after the reset boundary, when there is one after the first pass.
    k_reset: Option<i64>,
    /// The factor per second, and per pass.
    df: f64,
    r: f64,
    /// `Δt·df^Δt` for Δt of 0 to one pass interval.
    slice_charge: Vec<f64>,
    /// `r^k` for k up to the passes ([`MAX_POWERS`] at most).
    passes: Vec<f64>,
    /// `(1 - r^n)/(1 - r)`, or `n` when `r` is 1, for as many n.
    series: Vec<f64>,
}

impl DecayTables {
    /// `Δt·df^Δt·billable` (none for Δt <= 0).
    #[inline]
    fn charge(&self, dt: i64, billable: f64) -> f64 {
        if dt <= 0 {
            return 0.0;
        }
        tabled(&self.slice_charge, dt, || dt as f64 * self.df.powf(dt as f64)) * billable
    }

    /// `r^passes`.
    #[inline]
    fn decay(&self, passes: i64) -> f64 {
        tabled(&self.passes, passes, || self.r.powf(passes as f64))
    }

    /// The sum of `r^j` for j below `n`, as [`series`].
    #[inline]
    fn series(&self, n: i64) -> f64 {
        tabled(&self.series, n, || series(self.r, self.decay(n), n))
    }

    /// [`SlurmDecay::job_usage`], the same bits.
    pub(crate) fn job_usage(&self, start: i64, end: Option<i64>, billable: f64) -> f64 {
        if self.decay.now < self.t0 || billable == 0.0 {
            return 0.0;
        }
        let (first, last) = self.passes_of(start, end);
        self.usage_after(self.k_last, start, end, billable, first, last)
    }

    /// [`SlurmDecay::job_usage`] and [`SlurmDecay::job_usage_at_last_pass_start`], the same bits,
    /// the job's passes found once for both.
    pub(crate) fn job_usages(&self, start: i64, end: Option<i64>, billable: f64) -> (f64, f64) {
        if self.decay.now < self.t0 || billable == 0.0 {
            return (0.0, 0.0);
        }
        let (first, last) = self.passes_of(start, end);
        let k = self.k_last;
        if let Some((e, l)) = end.zip(last).filter(|&(_, l)| k >= 1 && l <= k - 2 && self.k_reset.is_none()) {
            return self.usages_of_ended(start, e, l, billable, first);
        }
        let usage = self.usage_after(k, start, end, billable, first, last);
        // A reset due at the last pass clears everything before step 2 reads it.
        if self.k_reset.is_some_and(|r| r.min(k) == k) {
            return (usage, 0.0);
        }
        let previous = self.pass(k - 1);
        let mut before = if k >= 1 { self.usage_after(k - 1, start, end, billable, first, last) } else { 0.0 };
        // The end-of-job charge made after the previous pass (a job ending on a pass is charged by it).
        if let Some(e) =
            end.filter(|&e| self.decay.charge_job_end && e > start && e < self.pass(k) && (k == 0 || e > previous))
        {
            let since = if k == 0 { start } else { start.max(previous) };
            before += self.charge(e - since, billable);
        }
        (usage, before)
    }

    /// [`DecayTables::job_usages`] of a job that ended before the previous pass (the last pass
    /// at or before its end, `last`, is at most the last but two; the last pass is not the
    /// first), with no reset: its passes are the same after the last pass and at its start, only
    /// their decay differs, so each term is found once and decayed twice (most of a month's
    /// history is such jobs). The same operations as [`DecayTables::usage_after`] for each, so
    /// the same bits.
    #[inline]
    fn usages_of_ended(&self, start: i64, e: i64, last: i64, billable: f64, first: i64) -> (f64, f64) {
        let (k, d) = (self.k_last, &self.decay);
        let (mut usage, mut before) = (0.0, 0.0);
        if d.fair_tree && start <= self.t0 && e >= self.t0 {
            let charge = self.charge(self.t0 - start, billable);
            usage += charge * self.decay(k);
            before += charge * self.decay(k - 1);
        }
        let k_first = first.max(1);
        if k_first <= last {
            let charge = self.charge(self.pass(k_first) - start.max(self.pass(k_first - 1)), billable);
            usage += charge * self.decay(k - k_first);
            before += charge * self.decay(k - 1 - k_first);
            let full = last - k_first;
            if full > 0 {
                let (charge, series) = (self.charge(self.c, billable), self.series(full));
                usage += charge * self.decay(k - last) * series;
                before += charge * self.decay(k - 1 - last) * series;
            }
        }
        // It ended before the previous pass: its end-of-job charge is in both states.
        if d.charge_job_end && e > start {
            let since = if last < 0 { start } else { start.max(self.pass(last)) };
            let charge = self.charge(e - since, billable);
            let (decayed_by, decayed_by_before) = if last < 0 { (k, k - 1) } else { (k - last, k - 1 - last) };
            usage += charge * self.decay(decayed_by);
            before += charge * self.decay(decayed_by_before);
        }
        (usage, before)
    }

    /// Pass `k`'s time.
    #[inline]
    fn pass(&self, k: i64) -> i64 {
        self.t0 + k * self.c
    }

    /// The first pass after `start` (uncapped), and the last at or before `end`.
    #[inline]
    fn passes_of(&self, start: i64, end: Option<i64>) -> (i64, Option<i64>) {
        let c = self.c;
        ((start - self.t0 + c - 1).div_euclid(c), end.map(|e| (e - self.t0).div_euclid(c)))
    }

    /// [`SlurmDecay::job_usage_with`]'s closed form after pass `k` (`now` at or after the first
    /// pass), given the job's passes ([`DecayTables::passes_of`]).
    #[inline]
    fn usage_after(&self, k: i64, start: i64, end: Option<i64>, billable: f64, first: i64, last: Option<i64>) -> f64 {
        let d = &self.decay;
        let k_min = self.k_reset.map_or(0, |r| r.min(k));
        let mut usage = 0.0;
        if k_min == 0 && d.fair_tree && start <= self.t0 && end.is_none_or(|e| e >= self.t0) {
            usage += self.charge(self.t0 - start, billable) * self.decay(k);
        }
        let k_first = first.max(1).max(k_min);
        let k_end = last.map_or(k, |l| l.min(k));
        if k_first <= k_end {
            let first_slice = self.pass(k_first) - start.max(self.pass(k_first - 1));
            usage += self.charge(first_slice, billable) * self.decay(k - k_first);
            let full = k_end - k_first;
            if full > 0 {
                usage += self.charge(self.c, billable) * self.decay(k - k_end) * self.series(full);
            }
        }
        if let (Some(e), Some(k_prev)) = (end, last)
            && d.charge_job_end
            && e > start
            && e <= self.pass(k)
            && (k_min == 0 || k_prev >= k_min)
        {
            let since = if k_prev < 0 { start } else { start.max(self.pass(k_prev)) };
            let decayed_by = if k_prev < 0 { k } else { k - k_prev };
            usage += self.charge(e - since, billable) * self.decay(decayed_by);
        }
        usage
    }
}

/// `table[n]`, or `compute()` where the table stops.
#[inline]
fn tabled(table: &[f64], n: i64, compute: impl FnOnce() -> f64) -> f64 {
    usize::try_from(n).ok().and_then(|k| table.get(k)).copied().unwrap_or_else(compute)
}

/// `(1 - r^n)/(1 - r)` from `r^n`, or `n` when `r` is 1: the decay of `n` full slices.
fn series(r: f64, r_n: f64, n: i64) -> f64 {
    if r == 1.0 { n as f64 } else { (1.0 - r_n) / (1.0 - r) }
}

/// Slurm's decay thread, as parameters of a closed form.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlurmDecay {
    /// PriorityDecayHalfLife in seconds (0: no decay).
    pub half_life: u32,
    /// PriorityCalcPeriod in seconds.
    pub calc_period: u32,
    /// The first pass.
    pub first_pass: i64,
    /// The state is the one after the last pass at or before this time.
    pub now: i64,
    /// Whether a job's last slice is charged at its end (AccountingStorageEnforce has limits).
    pub charge_job_end: bool,
    /// Fair Tree charges running jobs on the first pass; classic does not.
    pub fair_tree: bool,
    /// The last `PriorityUsageResetPeriod` boundary at or before the last pass, if any: the first
    /// pass at or after it cleared all usage and then charged its whole interval.
    pub reset: Option<i64>,
}

impl SlurmDecay {
    /// `1 - 0.693/half_life`, Slurm's linear approximation (1 without a half-life).
    pub fn decay_factor(&self) -> f64 {
        if self.half_life > 0 { 1.0 - 0.693 / f64::from(self.half_life) } else { 1.0 }
    }

    /// Usage of one job billed `billable` per second, after the last pass at or before `now`.
    ///
    /// # Example
    /// ```
    /// use fairshare_engine::usage::SlurmDecay;
    /// // One job billed 16 from the first pass, 12 passes of 300 s, half-life 7 days (spec §4.3).
    /// let d = SlurmDecay {
    ///     half_life: 604_800, calc_period: 300, first_pass: 0, now: 300,
    ///     charge_job_end: true, fair_tree: true, reset: None,
    /// };
    /// assert_eq!(format!("{:.6}", d.job_usage(0, Some(3600), 16.0)), "4798.350283");
    /// ```
    pub fn job_usage(&self, start: i64, end: Option<i64>, billable: f64) -> f64 {
        self.job_usage_with(start, end, billable)
    }

    /// The decay factor per second and per pass (`df^PriorityCalcPeriod`, kept above 0).
    fn factors(&self) -> (f64, f64) {
        let df = self.decay_factor();
        (df, df.powf(f64::from(self.calc_period.max(1))).max(f64::MIN_POSITIVE))
    }

    /// The tables every job's charge takes again, computed once.
    pub(crate) fn tables(&self) -> DecayTables {
        let (df, r) = self.factors();
        let (t0, c) = (self.first_pass, i64::from(self.calc_period.max(1)));
        let k_last = self.now.saturating_sub(t0) / c;
        let passes = k_last.clamp(0, i64::from(MAX_POWERS)) as u32;
        let passes: Vec<f64> = (0..=passes).map(|k| r.powf(f64::from(k))).collect();
        DecayTables {
            decay: *self,
            t0,
            c,
            k_last,
            k_reset: self.reset.filter(|&b| b > t0).map(|b| (b - t0 + c - 1).div_euclid(c)),
            df,
            r,
            // A period of days would make a table of millions: longer slices compute their own.
            slice_charge: (0..=self.calc_period.clamp(1, MAX_POWERS))
                .map(|dt| f64::from(dt) * df.powf(f64::from(dt)))
                .collect(),
            series: passes.iter().enumerate().map(|(n, &r_n)| series(r, r_n, n as i64)).collect(),
            passes,
        }
    }

    /// [`SlurmDecay::job_usage`]: the closed form, every power taken with `powf` (the reference
    /// [`DecayTables`] gives the same bits as).
    fn job_usage_with(&self, start: i64, end: Option<i64>, billable: f64) -> f64 {
        let (t0, c) = (self.first_pass, i64::from(self.calc_period.max(1)));
        if self.now < t0 || billable == 0.0 {
            return 0.0;
        }
        let k_last = (self.now - t0) / c;
        let pass = |k: i64| t0 + k * c;
        let (df, r) = self.factors();
        let charge = |dt: i64| if dt > 0 { dt as f64 * df.powf(dt as f64) * billable } else { 0.0 };
        let decay = |passes: i64| r.powf(passes as f64);
        let running_at = |t: i64| start <= t && end.is_none_or(|e| e >= t);
        // Passes before the reset pass were wiped by it.
        let k_min = match self.reset {
            Some(b) if b > t0 => ((b - t0 + c - 1).div_euclid(c)).min(k_last),
            _ => 0,
        };
        let mut usage = 0.0;

        // The first pass decays nothing; only Fair Tree charges running jobs on it, from their start.
        if k_min == 0 && self.fair_tree && running_at(t0) {
            usage += charge(t0 - start) * decay(k_last);
        }
        // Passes 1..: the first one after the start charges a partial slice, the rest full ones.
        let k_first = ((start - t0 + c - 1).div_euclid(c)).max(1).max(k_min);
        let k_end = match end {
            None => k_last,
            Some(e) => ((e - t0).div_euclid(c)).min(k_last),
        };
        if k_first <= k_end {
            let first_slice = pass(k_first) - start.max(pass(k_first - 1));
            usage += charge(first_slice) * decay(k_last - k_first);
            let full = k_end - k_first;
            if full > 0 {
                usage += charge(c) * decay(k_last - k_end) * series(r, decay(full), full);
            }
        }
        // The last slice, charged at the job's end and decayed by every later pass's full interval.
        if let Some(e) = end.filter(|&e| self.charge_job_end && e > start && e <= pass(k_last)) {
            // Since the last pass at or before the end (a job ending on a pass was charged by it).
            let k_prev = (e - t0).div_euclid(c);
            // A charge made before the reset pass is wiped by it.
            if k_min == 0 || k_prev >= k_min {
                let since = if k_prev < 0 { start } else { start.max(pass(k_prev)) };
                let decayed_by = if k_prev < 0 { k_last } else { k_last - k_prev };
                usage += charge(e - since) * decay(decayed_by);
            }
        }
        usage
    }

    /// What slurmctld's `grp_used_tres_run_secs` keeps of one job per unit of a TRES after the
    /// last pass at or before `now`: the time limit (`time_limit` minutes, `× usage_factor`,
    /// truncated) less the slice each pass charged the job, up to the limit's end (each
    /// `× usage_factor`, truncated). A job that is not running at that pass has given it all
    /// back; classic's first pass charges no slice, Fair Tree's charges from the job's start.
    ///
    /// # Example
    /// ```
    /// use fairshare_engine::usage::SlurmDecay;
    /// let d = SlurmDecay {
    ///     half_life: 604_800, calc_period: 300, first_pass: 0, now: 1000,
    ///     charge_job_end: true, fair_tree: true, reset: None,
    /// };
    /// // A one-hour limit from 100, after the pass at 900: 3600 - 800 seconds left.
    /// assert_eq!(d.job_run_secs(100, None, 60, 1.0), 2800);
    /// assert_eq!(d.job_run_secs(100, Some(950), 60, 1.0), 2800); // still running at the pass
    /// assert_eq!(d.job_run_secs(100, Some(900), 60, 1.0), 0);    // ended at it
    /// ```
    pub fn job_run_secs(&self, start: i64, end: Option<i64>, time_limit: u32, usage_factor: f64) -> u64 {
        let (t0, c) = (self.first_pass, i64::from(self.calc_period.max(1)));
        if self.now < t0 {
            return 0;
        }
        let k_last = (self.now - t0) / c;
        let pass = |k: i64| t0 + k * c;
        if start > pass(k_last) || end.is_some_and(|e| e <= pass(k_last)) {
            return 0;
        }
        let limit = u64::from(time_limit) * 60;
        // Within i64: a limit is at most 2^32 minutes.
        let limit_end = start.saturating_add(limit as i64);
        let taken = |a: i64, b: i64| {
            let to = b.min(limit_end);
            scaled_secs(if to > a { (to - a) as u64 } else { 0 }, usage_factor)
        };
        let mut took = 0u64;
        if self.fair_tree && start <= t0 {
            took += taken(start, t0);
        }
        let k_first = (start - t0 + c - 1).div_euclid(c).max(1);
        if k_first <= k_last {
            took += taken(start.max(pass(k_first - 1)), pass(k_first));
            // Later slices: whole ones until the limit's end, the one across it in part, none after.
            let whole_until = (limit_end - t0).div_euclid(c).clamp(k_first, k_last);
            took = took.saturating_add((whole_until - k_first) as u64 * scaled_secs(c as u64, usage_factor));
            if whole_until < k_last {
                took += taken(pass(whole_until), pass(whole_until + 1));
            }
        }
        scaled_secs(limit, usage_factor).saturating_sub(took)
    }

    /// Usage of one job at the start of the last pass at or before `now`, as the classic
    /// algorithm reads it there (spec §4, step 2): after that pass's reset, if one is due, but
    /// before its decay and its charges. That is the state after the previous pass plus the
    /// end-of-job charges made since, undecayed; nothing before the first pass but those charges.
    ///
    /// # Example
    /// ```
    /// use fairshare_engine::usage::SlurmDecay;
    /// let d = SlurmDecay {
    ///     half_life: 604_800, calc_period: 300, first_pass: 0, now: 600,
    ///     charge_job_end: true, fair_tree: false, reset: None,
    /// };
    /// // The last pass (600) starts from the state after the pass at 300.
    /// let before = SlurmDecay { now: 300, ..d };
    /// assert_eq!(d.job_usage_at_last_pass_start(0, None, 16.0), before.job_usage(0, None, 16.0));
    /// ```
    pub fn job_usage_at_last_pass_start(&self, start: i64, end: Option<i64>, billable: f64) -> f64 {
        let (t0, c) = (self.first_pass, i64::from(self.calc_period.max(1)));
        if self.now < t0 || billable == 0.0 {
            return 0.0;
        }
        let k_last = (self.now - t0) / c;
        // A reset due at the last pass clears everything before step 2 reads it.
        if let Some(b) = self.reset.filter(|&b| b > t0)
            && (b - t0 + c - 1).div_euclid(c).min(k_last) == k_last
        {
            return 0.0;
        }
        let previous = t0 + (k_last - 1) * c;
        let mut usage =
            if k_last >= 1 { SlurmDecay { now: previous, ..*self }.job_usage_with(start, end, billable) } else { 0.0 };
        // The end-of-job charge made after the previous pass (a job ending on a pass is charged by it).
        let after_previous = |e: i64| k_last == 0 || e > previous;
        if let Some(e) = end.filter(|&e| self.charge_job_end && e > start && e < t0 + k_last * c && after_previous(e)) {
            let since = if k_last == 0 { start } else { start.max(previous) };
            let df = self.decay_factor();
            let dt = (e - since) as f64;
            usage += dt * df.powf(dt) * billable;
        }
        usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decay(now: i64, fair_tree: bool, charge_job_end: bool) -> SlurmDecay {
        SlurmDecay { half_life: 604_800, calc_period: 300, first_pass: 0, now, charge_job_end, fair_tree, reset: None }
    }

    /// Slurm's decay thread stepped pass by pass, the model's oracle: the usage after the last
    /// pass and at its start (after its reset, before its decay).
    fn stepped_with_pass_start(d: &SlurmDecay, start: i64, end: Option<i64>, b: f64) -> (f64, f64) {
        let df = d.decay_factor();
        let c = i64::from(d.calc_period);
        let f = |dt: i64| if dt > 0 { dt as f64 * df.powf(dt as f64) * b } else { 0.0 };
        let (mut u, mut pass_start) = (0.0, 0.0);
        let mut last: Option<i64> = None;
        let mut t = d.first_pass;
        while t <= d.now {
            // End-of-job charges between the previous pass and this one.
            if let Some(e) = end.filter(|&e| d.charge_job_end && e > start && e < t && last.is_none_or(|l| e > l)) {
                u += f(e - last.map_or(start, |l| l.max(start)));
            }
            // A reset at the first pass at or after the boundary wipes everything charged so far.
            if d.reset.is_some_and(|b| b > d.first_pass && t >= b && last.is_some_and(|l| l < b)) {
                u = 0.0;
            }
            pass_start = u;
            match last {
                None => {
                    if d.fair_tree && start <= t && end.is_none_or(|e| e >= t) {
                        u += f(t - start);
                    }
                }
                Some(l) => {
                    u *= df.powf((t - l) as f64);
                    if start <= t && end.is_none_or(|e| e >= t) {
                        u += f(t - l.max(start));
                    }
                }
            }
            last = Some(t);
            t += c;
        }
        (u, pass_start)
    }

    #[test]
    fn closed_form_matches_stepping_the_passes() {
        let cases: &[(i64, Option<i64>)] = &[
            (0, Some(3600)),
            (0, None),
            (-500, Some(3600)),
            (-500, Some(-100)),
            (137, Some(1000)),
            (137, Some(1200)),
            (1300, None),
            (4000, Some(4100)),
            (299, Some(301)),
        ];
        for &(start, end) in cases {
            for fair_tree in [false, true] {
                for charge_job_end in [false, true] {
                    for (now, reset) in [
                        (0, None),
                        (299, None),
                        (300, None),
                        (3600, None),
                        (7211, None),
                        (3600, Some(1000)),
                        (3600, Some(1200)),
                        (3600, Some(3500)),
                        (3600, Some(3600)),
                        (7211, Some(300)),
                        (7211, Some(7000)),
                        (7211, Some(-50)),
                    ] {
                        let d = SlurmDecay { reset, ..decay(now, fair_tree, charge_job_end) };
                        let (b, b_start) = stepped_with_pass_start(&d, start, end, 16.0);
                        let a = d.job_usage(start, end, 16.0);
                        assert!(
                            (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                            "{start} {end:?} ft={fair_tree} end={charge_job_end} now={now} reset={reset:?}: {a} vs {b}"
                        );
                        let a_start = d.job_usage_at_last_pass_start(start, end, 16.0);
                        assert!(
                            (a_start - b_start).abs() <= 1e-9 * b_start.abs().max(1.0),
                            "pass start: {start} {end:?} ft={fair_tree} end={charge_job_end} now={now} \
                             reset={reset:?}: {a_start} vs {b_start}"
                        );
                    }
                }
            }
        }
    }

    /// The tables give the reference's bits (every power by `powf`) for jobs on and around every
    /// edge: before the first pass, ending on a pass, across a reset, past the tables' passes.
    #[test]
    fn tables_give_the_closed_forms_bits() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 24) % m
        };
        let mut compared = 0;
        for case in 0..400 {
            let calc_period = [1, 7, 60, 300][case % 4];
            let c = i64::from(calc_period);
            let first_pass = next(2000) as i64 - 1000;
            // Up to 3000 passes after the first (or before it), some past a table cut short below;
            // every seventh decay within its first two passes.
            let now = match case % 7 {
                0 => first_pass + next(2 * c as u64) as i64,
                _ => first_pass + next(3000 * c as u64) as i64 - 200,
            };
            let reset = match next(3) {
                0 => None,
                _ => Some(first_pass + next(3000 * c as u64) as i64 - 100),
            };
            let d = SlurmDecay {
                half_life: [0, 3600, 604_800][case % 3],
                calc_period,
                first_pass,
                now,
                charge_job_end: next(2) == 0,
                fair_tree: next(2) == 0,
                reset,
            };
            let mut tables = d.tables();
            if case % 5 == 0 {
                // As a history longer than the tables: the powers past them are taken with `powf`.
                let keep = tables.passes.len().min(1 + next(50) as usize);
                tables.passes.truncate(keep);
                tables.series.truncate(keep);
                tables.slice_charge.truncate(1 + next(calc_period as u64) as usize);
            }
            for _ in 0..200 {
                // Starts and ends near passes (on them, a second either side) and anywhere.
                let near = |t: i64, n: &mut dyn FnMut(u64) -> u64| match n(3) {
                    0 => first_pass + (t - first_pass).div_euclid(c) * c + n(3) as i64 - 1,
                    _ => t,
                };
                let start = near(first_pass + next(3200 * c as u64) as i64 - 300 * c, &mut next);
                let end = match next(4) {
                    0 => None,
                    _ => Some(near(start + next(400 * c as u64) as i64 - 2, &mut next)),
                };
                let billable = [16.0, 0.5, 0.0, 3.75e6][next(4) as usize];
                let usage = d.job_usage(start, end, billable);
                let before = d.job_usage_at_last_pass_start(start, end, billable);
                let what = format!("{d:?} start {start} end {end:?} billable {billable}");
                assert_eq!(tables.job_usage(start, end, billable).to_bits(), usage.to_bits(), "{what}");
                let both = tables.job_usages(start, end, billable);
                assert_eq!((both.0.to_bits(), both.1.to_bits()), (usage.to_bits(), before.to_bits()), "{what}");
                compared += usize::from(usage != 0.0) + usize::from(before != 0.0);
            }
        }
        assert!(compared > 30_000, "jobs charged: {compared}");
        // A period of a year: a slice table of 2^17 entries, not of 31 million.
        let yearly = SlurmDecay { calc_period: 365 * 86_400, now: 3 * 365 * 86_400, ..decay(0, false, true) };
        let tables = yearly.tables();
        assert_eq!(tables.slice_charge.len(), MAX_POWERS as usize + 1);
        for (start, end) in [(100, Some(20_000_000)), (5, None), (40_000_000, Some(90_000_000))] {
            let (usage, before) = tables.job_usages(start, end, 3.0);
            assert_eq!(usage.to_bits(), yearly.job_usage(start, end, 3.0).to_bits());
            assert_eq!(before.to_bits(), yearly.job_usage_at_last_pass_start(start, end, 3.0).to_bits());
            assert!(usage > 0.0, "{start} {end:?}");
        }
    }

    #[test]
    fn the_published_accrual() {
        // spec §11.7 / the conformance case: billable 16 from the first pass, 12 running passes then
        // 12 idle ones; usage after pass k.
        for (k, expected) in [(1, "4798.350283"), (12, "57471.484065"), (13, "57451.731626"), (24, "57234.902343")] {
            let d = decay(300 * k, true, true);
            assert_eq!(format!("{:.6}", d.job_usage(0, Some(3600), 16.0)), expected, "pass {k}");
        }
    }

    #[test]
    fn factors() {
        assert_eq!(format!("{:.17}", decay(0, true, true).decay_factor()), "0.99999885416666667");
        let no_decay = SlurmDecay { half_life: 0, ..decay(600, true, true) };
        assert_eq!(no_decay.job_usage(0, None, 2.0), 1200.0);
    }

    /// spec §11.7: the decay factor and `pow(df, d)` for the pass intervals sites use.
    #[test]
    fn published_decay_table() {
        let table: [(u32, &str, [&str; 5]); 4] = [
            (
                604_800,
                "0.99999885416666667",
                ["0.999998854167", "0.999656308878", "0.995883493773", "0.905742656651", "0.500073397153"],
            ),
            (
                1_209_600,
                "0.99999942708333334",
                ["0.999999427083", "0.999828139720", "0.997939624902", "0.951705144642", "0.707158749098"],
            ),
            (
                86_400,
                "0.99999197916666671",
                ["0.999991979167", "0.997596633072", "0.971537786609", "0.500072205878", "0.007820400940"],
            ),
            (
                3_600,
                "0.99980749999999996",
                ["0.999807500000", "0.943880642226", "0.500040236993", "0.000000059720", "0.000000000000"],
            ),
        ];
        for (hl, df_text, powers) in table {
            let df = SlurmDecay { half_life: hl, ..decay(0, true, true) }.decay_factor();
            assert_eq!(format!("{df:.17}"), df_text, "hl={hl}");
            for (d, expected) in [1.0, 300.0, 3600.0, 86_400.0, 604_800.0].into_iter().zip(powers) {
                assert_eq!(format!("{:.12}", df.powf(d)), expected, "hl={hl} d={d}");
            }
        }
    }
}
