//! Usage: from job records to the raw decayed usage of every association.
//!
//! This first stage models Slurm's decay thread (`priority_multifactor.c`) in closed form per job:
//! passes run at `T0 + k·PriorityCalcPeriod`; each pass first decays all usage by
//! `df^period` (`df = 1 - 0.693/half_life`), then charges every running job the slice since the
//! previous pass as `Δt·df^Δt·billable·UsageFactor`. The state is the one after the last pass at or
//! before `now`. The real code's edges are kept: the first pass decays nothing, classic charges
//! nothing on it while Fair Tree charges running jobs from their start; a job still running at a
//! pass is charged up to it; a job that ends between passes is charged its last slice at its end
//! only when `AccountingStorageEnforce` includes limits (that charge is then decayed by the whole
//! next pass interval). A job's contribution is a geometric series, so years of passes cost O(1).

use std::collections::HashMap;
use std::path::Path;

use crate::config::tres::{TresCounts, parse_tres_counts};
use crate::config::{QosTable, ResetPeriod, SlurmConf, billable};
use crate::error::{Error, Result};
use crate::io::text::split_csv;
use crate::jobs::parse_timestamp;
use crate::tree::TreeInput;

/// One finished or running job, as the canonical job-record CSV has it.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRecord {
    /// Job id.
    pub job_id: u64,
    /// User name.
    pub user: String,
    /// Account name.
    pub account: String,
    /// Partition name.
    pub partition: String,
    /// QOS name, if any.
    pub qos: Option<String>,
    /// Start time (epoch seconds); `None` if the job never started.
    pub start: Option<i64>,
    /// End time; `None` while running.
    pub end: Option<i64>,
    /// Allocated TRES.
    pub tres: TresCounts,
    /// 1-based line in the file.
    pub line: u64,
}

/// Reads canonical job records: `job_id,user,account,partition,qos,start,end,tres_alloc` (times as
/// epoch seconds or `YYYY-MM-DDTHH:MM:SS`; `end` empty while running; `qos` empty for none). An
/// unquoted `tres_alloc` with commas, as the last column, is taken whole.
///
/// # Errors
/// A missing column or a bad value, naming the line.
pub fn read_job_records(path: &Path) -> Result<Vec<JobRecord>> {
    let text = crate::io::text::read_to_string(path)?;
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(Error::input(
            path,
            None,
            "empty file: expected job_id,user,account,partition,qos,start,end,tres_alloc",
        ));
    };
    let names = split_csv(header).map_err(|m| Error::input(path, 1, m))?;
    let col = |n: &str| {
        names.iter().position(|h| h.trim() == n).ok_or_else(|| {
            Error::input(
                path,
                1,
                format!("missing column {n:?}: the header is job_id,user,account,partition,qos,start,end,tres_alloc"),
            )
        })
    };
    let (c_id, c_user, c_account, c_part, c_qos) =
        (col("job_id")?, col("user")?, col("account")?, col("partition")?, col("qos")?);
    let (c_start, c_end, c_tres) = (col("start")?, col("end")?, col("tres_alloc")?);
    let mut out = Vec::new();
    for (i, line) in lines {
        let line_no = i as u64 + 1;
        let err = |m: String| Error::input(path, line_no, m);
        let mut f = split_csv(line).map_err(|m| err(m.into()))?;
        if f.len() > names.len() && c_tres == names.len() - 1 {
            let tail = f.split_off(c_tres).join(",");
            f.push(tail.into());
        }
        if f.len() != names.len() {
            return Err(err(format!("expected {} fields, found {}", names.len(), f.len())));
        }
        let time = |c: usize, what: &str| -> Result<Option<i64>> {
            match f[c].trim() {
                "" | "Unknown" | "None" => Ok(None),
                t => parse_timestamp(t).map(Some).map_err(|m| err(format!("{what}: {m}"))),
            }
        };
        out.push(JobRecord {
            job_id: f[c_id].trim().parse().map_err(|_| err(format!("job_id {:?} is not an integer", f[c_id])))?,
            user: f[c_user].trim().to_string(),
            account: f[c_account].trim().to_string(),
            partition: f[c_part].trim().to_string(),
            qos: Some(f[c_qos].trim().to_string()).filter(|q| !q.is_empty()),
            start: time(c_start, "start")?,
            end: time(c_end, "end")?,
            tres: parse_tres_counts(&f[c_tres]).map_err(|m| err(format!("tres_alloc: {m}")))?,
            line: line_no,
        });
    }
    Ok(out)
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
    /// let d = SlurmDecay { half_life: 604_800, calc_period: 300, first_pass: 0, now: 300, charge_job_end: true, fair_tree: true };
    /// assert_eq!(format!("{:.6}", d.job_usage(0, Some(3600), 16.0)), "4798.350283");
    /// ```
    pub fn job_usage(&self, start: i64, end: Option<i64>, billable: f64) -> f64 {
        let (t0, c) = (self.first_pass, i64::from(self.calc_period.max(1)));
        if self.now < t0 || billable == 0.0 {
            return 0.0;
        }
        let k_last = (self.now - t0) / c;
        let pass = |k: i64| t0 + k * c;
        let df = self.decay_factor();
        let charge = |dt: i64| if dt > 0 { dt as f64 * df.powf(dt as f64) * billable } else { 0.0 };
        let r = df.powf(c as f64).max(f64::MIN_POSITIVE);
        let decay = |passes: i64| r.powf(passes as f64);
        let running_at = |t: i64| start <= t && end.is_none_or(|e| e >= t);
        let mut usage = 0.0;

        // The first pass decays nothing; only Fair Tree charges running jobs on it, from their start.
        if self.fair_tree && running_at(t0) {
            usage += charge(t0 - start) * decay(k_last);
        }
        // Passes 1..: the first one after the start charges a partial slice, the rest full ones.
        let k_first = ((start - t0 + c - 1).div_euclid(c)).max(1);
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
            let since = if k_prev < 0 { start } else { start.max(pass(k_prev)) };
            let decayed_by = if k_prev < 0 { k_last } else { k_last - k_prev };
            usage += charge(e - since) * decay(decayed_by);
        }
        usage
    }
}

/// Recomputes the usage of every user association of `input` from `jobs` with Slurm's decay
/// model and the site's billing weights and QOS usage factors. Returns the job records that match
/// no association (they charge nothing, as in Slurm).
///
/// # Errors
/// A job in a partition slurm.conf does not define, or a reset period this model does not cover.
pub fn apply_slurm_usage(
    input: &mut TreeInput,
    jobs: &[JobRecord],
    jobs_path: &Path,
    conf: &SlurmConf,
    qos: Option<&QosTable>,
    decay: &SlurmDecay,
) -> Result<Vec<u64>> {
    if !matches!(conf.priority_usage_reset_period, ResetPeriod::None | ResetPeriod::Now) {
        return Err(Error::Usage(format!(
            "PriorityUsageResetPeriod={:?} is not modelled yet (NONE and NOW are)",
            conf.priority_usage_reset_period
        )));
    }
    let mut row_of: HashMap<(&str, &str, Option<&str>), usize> = HashMap::new();
    for (i, r) in input.records.iter().enumerate() {
        if let Some(u) = &r.user {
            row_of.insert((u.as_str(), r.account.as_str(), r.partition.as_deref()), i);
        }
    }
    let mut usage = vec![0.0; input.records.len()];
    let mut unmatched = Vec::new();
    for job in jobs {
        let Some(start) = job.start else { continue };
        let Some(part) = conf.partition(&job.partition) else {
            return Err(Error::input(
                jobs_path,
                job.line,
                format!("partition {:?} is not defined in slurm.conf", job.partition),
            ));
        };
        let factor = match (&job.qos, qos) {
            (Some(name), Some(table)) => match table.get(name) {
                Some(q) if q.usage_factor >= 0.0 => q.usage_factor,
                Some(_) => 1.0,
                None => return Err(Error::input(jobs_path, job.line, format!("QOS {name:?} is not in the QOS dump"))),
            },
            _ => 1.0,
        };
        let bill = billable(&job.tres, part.billing_weights.as_ref(), conf.priority_flags) * factor;
        let key = (job.user.as_str(), job.account.as_str());
        let row =
            row_of.get(&(key.0, key.1, Some(job.partition.as_str()))).or_else(|| row_of.get(&(key.0, key.1, None)));
        match row {
            Some(&i) => usage[i] += decay.job_usage(start, job.end, bill),
            None => unmatched.push(job.job_id),
        }
    }
    for (r, u) in input.records.iter_mut().zip(usage) {
        if r.user.is_some() {
            r.usage = u;
        }
    }
    Ok(unmatched)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decay(now: i64, fair_tree: bool, charge_job_end: bool) -> SlurmDecay {
        SlurmDecay { half_life: 604_800, calc_period: 300, first_pass: 0, now, charge_job_end, fair_tree }
    }

    /// Slurm's decay thread stepped pass by pass, the model's oracle.
    fn stepped(d: &SlurmDecay, start: i64, end: Option<i64>, b: f64) -> f64 {
        let df = d.decay_factor();
        let c = i64::from(d.calc_period);
        let f = |dt: i64| if dt > 0 { dt as f64 * df.powf(dt as f64) * b } else { 0.0 };
        let mut u = 0.0;
        let mut last: Option<i64> = None;
        let mut t = d.first_pass;
        while t <= d.now {
            // End-of-job charges between the previous pass and this one.
            if let Some(e) = end.filter(|&e| d.charge_job_end && e > start && e < t && last.is_none_or(|l| e > l)) {
                u += f(e - last.map_or(start, |l| l.max(start)));
            }
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
        u
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
                    for now in [0, 299, 300, 3600, 7211] {
                        let d = decay(now, fair_tree, charge_job_end);
                        let (a, b) = (d.job_usage(start, end, 16.0), stepped(&d, start, end, 16.0));
                        assert!(
                            (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                            "{start} {end:?} ft={fair_tree} end={charge_job_end} now={now}: {a} vs {b}"
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
}
