//! The `exact` decay model: usage decays continuously as `2^(-age/half_life)`, integrated over
//! each job's run, with no calc-period stepping and no linear approximation of the decay factor.

/// Continuous exponential decay, evaluated at `now`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactDecay {
    /// Half-life in seconds (0: no decay).
    pub half_life: u32,
    /// The instant the usage is evaluated at.
    pub now: i64,
    /// Usage before this instant was reset away (`PriorityUsageResetPeriod`).
    pub reset: Option<i64>,
}

impl ExactDecay {
    /// `∫ billable · 2^(-(now - t)/half_life) dt` over the part of `[start, end)` before `now` (and
    /// after the last reset); a running job (`end` None) runs up to `now`.
    ///
    /// # Example
    /// ```
    /// use fairshare_engine::usage::ExactDecay;
    /// let d = ExactDecay { half_life: 86_400, now: 86_400 + 60, reset: None };
    /// let fresh = ExactDecay { now: 60, ..d };
    /// // One half-life later, a job's charge has halved.
    /// let ratio = d.job_usage(0, Some(60), 4.0) / fresh.job_usage(0, Some(60), 4.0);
    /// assert!((ratio - 0.5).abs() < 1e-12);
    /// ```
    pub fn job_usage(&self, start: i64, end: Option<i64>, billable: f64) -> f64 {
        self.job_usage_at_rate(start, end, billable, self.rate())
    }

    /// The decay rate per second, `ln 2 / half_life` (unused without a half-life).
    pub(crate) fn rate(&self) -> f64 {
        std::f64::consts::LN_2 / f64::from(self.half_life)
    }

    /// [`ExactDecay::job_usage`] with its [`ExactDecay::rate`] computed once for many jobs: a
    /// charge of 10^8 records divided for it before each job's `exp`, which waited on it.
    pub(crate) fn job_usage_at_rate(&self, start: i64, end: Option<i64>, billable: f64, rate: f64) -> f64 {
        let from = self.reset.map_or(start, |r| start.max(r));
        let to = end.map_or(self.now, |e| e.min(self.now));
        if to <= from || billable == 0.0 {
            return 0.0;
        }
        let run = (to - from) as f64;
        if self.half_life == 0 {
            return billable * run;
        }
        // expm1 keeps short jobs exact: the integral is b/rate · e^(-rate·age_end) · (1 - e^(-rate·run)).
        billable / rate * (-rate * (self.now - to) as f64).exp() * -(-rate * run).exp_m1()
    }

    /// The seconds left at `now` in the time limit of a job running then (`time_limit` minutes
    /// `× usage_factor`, less its run time `× usage_factor`, each truncated as Slurm does);
    /// 0 for a job not running at `now`.
    ///
    /// # Example
    /// ```
    /// use fairshare_engine::usage::ExactDecay;
    /// let d = ExactDecay { half_life: 86_400, now: 1000, reset: None };
    /// assert_eq!(d.job_run_secs(100, None, 60, 1.0), 2700);
    /// assert_eq!(d.job_run_secs(100, Some(1000), 60, 1.0), 0);
    /// ```
    pub fn job_run_secs(&self, start: i64, end: Option<i64>, time_limit: u32, usage_factor: f64) -> u64 {
        if start > self.now || end.is_some_and(|e| e <= self.now) {
            return 0;
        }
        let limit = u64::from(time_limit) * 60;
        let ran = ((self.now - start) as u64).min(limit);
        super::tres::scaled_secs(limit, usage_factor).saturating_sub(super::tres::scaled_secs(ran, usage_factor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_decay_charges_billable_seconds() {
        let d = ExactDecay { half_life: 0, now: 1000, reset: None };
        assert_eq!(d.job_usage(100, Some(400), 2.0), 600.0);
        assert_eq!(d.job_usage(100, None, 2.0), 1800.0);
        assert_eq!(d.job_usage(1000, None, 2.0), 0.0);
        assert_eq!(ExactDecay { reset: Some(300), ..d }.job_usage(100, Some(400), 2.0), 200.0);
    }

    #[test]
    fn matches_a_fine_riemann_sum_and_halves_per_half_life() {
        let d = ExactDecay { half_life: 3600, now: 10_000, reset: None };
        let (s, e, b) = (1_000i64, 7_000i64, 3.0);
        let steps = 600_000;
        let h = (e - s) as f64 / f64::from(steps);
        let sum: f64 = (0..steps)
            .map(|i| {
                let t = s as f64 + (f64::from(i) + 0.5) * h;
                b * 2f64.powf(-(d.now as f64 - t) / 3600.0) * h
            })
            .sum();
        assert!((d.job_usage(s, Some(e), b) - sum).abs() < 1e-6 * sum, "{} vs {sum}", d.job_usage(s, Some(e), b));
        let later = ExactDecay { now: d.now + 3600, ..d };
        assert!((later.job_usage(s, Some(e), b) * 2.0 - d.job_usage(s, Some(e), b)).abs() < 1e-9);
    }
}
