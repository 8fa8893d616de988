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

/// Passes whose decay [`DecayPowers`] keeps (a year of 5-minute passes; older charges compute
/// their own).
const MAX_POWERS: u32 = 1 << 17;

/// The powers of the decay factor that job after job takes again: `df^dt` for a slice of up to
/// one `PriorityCalcPeriod`, and `(df^period)^k` for `k` passes. Made with the same `powf` calls
/// a job would make, so a charge is the same bits with or without them (a charge of 10^7 records
/// spent a tenth of its time in `pow`).
#[derive(Clone, Debug)]
pub(crate) struct DecayPowers {
    /// The factor per second, and per pass.
    df: f64,
    r: f64,
    slice: Vec<f64>,
    passes: Vec<f64>,
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
    /// use fairshare::usage::SlurmDecay;
    /// // One job billed 16 from the first pass, 12 passes of 300 s, half-life 7 days (spec §4.3).
    /// let d = SlurmDecay {
    ///     half_life: 604_800, calc_period: 300, first_pass: 0, now: 300,
    ///     charge_job_end: true, fair_tree: true, reset: None,
    /// };
    /// assert_eq!(format!("{:.6}", d.job_usage(0, Some(3600), 16.0)), "4798.350283");
    /// ```
    pub fn job_usage(&self, start: i64, end: Option<i64>, billable: f64) -> f64 {
        self.job_usage_with(start, end, billable, None)
    }

    /// The decay factor per second and per pass (`df^PriorityCalcPeriod`, kept above 0).
    fn factors(&self) -> (f64, f64) {
        let df = self.decay_factor();
        (df, df.powf(f64::from(self.calc_period.max(1))).max(f64::MIN_POSITIVE))
    }

    /// The powers of the decay factor every job's charge takes again, computed once.
    pub(crate) fn powers(&self) -> DecayPowers {
        let (df, r) = self.factors();
        let passes = self.now.saturating_sub(self.first_pass) / i64::from(self.calc_period.max(1));
        let passes = passes.clamp(0, MAX_POWERS as i64) as u32;
        DecayPowers {
            df,
            r,
            slice: (0..=self.calc_period.max(1)).map(|dt| df.powf(f64::from(dt))).collect(),
            passes: (0..=passes).map(|k| r.powf(f64::from(k))).collect(),
        }
    }

    /// [`SlurmDecay::job_usage`], reading the powers it needs from `powers` (made by
    /// [`SlurmDecay::powers`] of a decay with the same half-life and period) where they hold them.
    pub(crate) fn job_usage_with(
        &self,
        start: i64,
        end: Option<i64>,
        billable: f64,
        powers: Option<&DecayPowers>,
    ) -> f64 {
        let (t0, c) = (self.first_pass, i64::from(self.calc_period.max(1)));
        if self.now < t0 || billable == 0.0 {
            return 0.0;
        }
        let k_last = (self.now - t0) / c;
        let pass = |k: i64| t0 + k * c;
        // `r` is itself a power: taken from `powers` when given.
        let (df, r) = powers.map_or_else(|| self.factors(), |p| (p.df, p.r));
        let power = |table: Option<&Vec<f64>>, base: f64, n: i64| {
            usize::try_from(n).ok().and_then(|n| table?.get(n)).copied().unwrap_or_else(|| base.powf(n as f64))
        };
        let charge =
            |dt: i64| if dt > 0 { dt as f64 * power(powers.map(|p| &p.slice), df, dt) * billable } else { 0.0 };
        let decay = |passes: i64| power(powers.map(|p| &p.passes), r, passes);
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
                let series = if r == 1.0 { full as f64 } else { (1.0 - decay(full)) / (1.0 - r) };
                usage += charge(c) * decay(k_last - k_end) * series;
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
    /// use fairshare::usage::SlurmDecay;
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
    /// use fairshare::usage::SlurmDecay;
    /// let d = SlurmDecay {
    ///     half_life: 604_800, calc_period: 300, first_pass: 0, now: 600,
    ///     charge_job_end: true, fair_tree: false, reset: None,
    /// };
    /// // The last pass (600) starts from the state after the pass at 300.
    /// let before = SlurmDecay { now: 300, ..d };
    /// assert_eq!(d.job_usage_at_last_pass_start(0, None, 16.0), before.job_usage(0, None, 16.0));
    /// ```
    pub fn job_usage_at_last_pass_start(&self, start: i64, end: Option<i64>, billable: f64) -> f64 {
        self.job_usage_at_last_pass_start_with(start, end, billable, None)
    }

    /// [`SlurmDecay::job_usage_at_last_pass_start`] with `powers`, as
    /// [`SlurmDecay::job_usage_with`].
    pub(crate) fn job_usage_at_last_pass_start_with(
        &self,
        start: i64,
        end: Option<i64>,
        billable: f64,
        powers: Option<&DecayPowers>,
    ) -> f64 {
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
        let mut usage = if k_last >= 1 {
            SlurmDecay { now: previous, ..*self }.job_usage_with(start, end, billable, powers)
        } else {
            0.0
        };
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
