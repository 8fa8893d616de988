//! A forecast ([`crate::forecast`]) as a user reads it (text), as `--json` prints it, and its
//! trajectory as a Parquet table.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, RecordBatch, TimestampMicrosecondArray, UInt32Array};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use parquet::file::metadata::KeyValue;

use crate::forecast::{Assume, Budget, Forecast};
use fairshare_base::named::Named;
use fairshare_base::time_format::{TimeFormat, iso_utc};
use fairshare_engine::output::printable;

/// A duration as Slurm prints one: `D-HH:MM:SS`, or `HH:MM:SS` under a day.
fn slurm_duration(secs: i64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60, secs % 60);
    if d > 0 { format!("{d}-{h:02}:{m:02}:{s:02}") } else { format!("{h:02}:{m:02}:{s:02}") }
}

/// An epoch time as the text prints it: `2026-01-08 00:00:00 UTC`.
fn when(t: i64) -> String {
    TimeFormat::Text.format(t)
}

/// A number of billing-seconds or hours to four significant digits, without exponent.
fn amount(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (3 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// The forecast as a user reads it: now, the target, the budget, then the trajectory.
pub fn text(f: &Forecast) -> String {
    let mut out = String::new();
    let first = f.trajectory[0];
    let assumption = match f.assume {
        Assume::Idle => "no new usage anywhere".to_string(),
        Assume::Steady => format!("everyone goes on at their rate of the last {}", slurm_duration(f.window)),
    };
    out.push_str(&format!(
        "Forecast for {} ({}), assuming {assumption}\n",
        printable(&f.association),
        f.algorithm.name()
    ));
    out.push_str(&format!(
        "  now      {}: FairShare {:.6}, rank {} of {} users\n",
        when(f.now),
        first.fs_factor,
        first.rank,
        f.users
    ));
    if f.assume == Assume::Steady {
        let share = if f.total_rate > 0.0 { 100.0 * f.rate / f.total_rate } else { 0.0 };
        out.push_str(&format!(
            "  its rate {} billing/s of everyone's {} ({share:.1}%)\n",
            amount(f.rate),
            amount(f.total_rate)
        ));
    }
    let end = f.now + f.horizon;
    match f.reached_at {
        Some(t) if t == f.now => {
            out.push_str(&format!("  target   {:.6}: already reached\n", f.target));
        }
        Some(t) => out.push_str(&format!(
            "  target   {:.6}: reached at {} (in {})\n",
            f.target,
            when(t),
            slurm_duration(t - f.now)
        )),
        None => {
            let best = f.trajectory.iter().fold(first, |b, p| if p.fs_factor > b.fs_factor { *p } else { b });
            out.push_str(&format!(
                "  target   {:.6}: not reached by {} (the horizon); highest {:.6} at {}\n",
                f.target,
                when(end),
                best.fs_factor,
                when(best.at)
            ));
        }
    }
    let period = slurm_duration(f.budget_over);
    match f.budget {
        Budget::Amount(x) => {
            let cpu = match (f.budget_cpu_hours(), &f.cpu_billing) {
                (Some(h), Some((p, per_cpu))) if p.is_empty() => {
                    format!(", {} CPU-hours at {} per CPU", amount(h), amount(*per_cpu))
                }
                (Some(h), Some((p, per_cpu))) => {
                    format!(", {} CPU-hours in partition {} ({} per CPU)", amount(h), printable(p), amount(*per_cpu))
                }
                _ => String::new(),
            };
            out.push_str(&format!(
                "  budget   {} billing-seconds ({} billing-hours{cpu}) spread over the next {period} keep \
                 FairShare at or above {:.6}\n",
                amount(x),
                amount(x / 3600.0),
                f.floor
            ));
        }
        Budget::Below => out.push_str(&format!(
            "  budget   none: FairShare ends the next {period} below {:.6} even without running anything\n",
            f.floor
        )),
        Budget::Unlimited => out.push_str(&format!(
            "  budget   unlimited: FairShare stays at or above {:.6} whatever it runs over the next {period}\n",
            f.floor
        )),
    }
    let (lo, hi) = f.trajectory.iter().fold((f64::MAX, f64::MIN), |(l, h), p| (l.min(p.fs_factor), h.max(p.fs_factor)));
    if f.assume == Assume::Idle && hi - lo < 5e-7 {
        out.push_str(
            "  note     fair-share is relative: with no usage anywhere every usage decays at the same rate and \
             the factor holds; it recovers as others use the machine (--assume steady) or at a usage reset\n",
        );
    }
    out.push_str("\n  At                       FairShare   Rank         RawUsage\n");
    for p in &f.trajectory {
        out.push_str(&format!("  {:<23}  {:>9.6}  {:>5}  {:>15.0}\n", when(p.at), p.fs_factor, p.rank, p.raw_usage));
    }
    out
}

/// What `--json` prints: the association, the target, the instant it is reached (ISO 8601
/// UTC, or null) and the trajectory.
pub fn json(f: &Forecast) -> serde_json::Value {
    let trajectory: Vec<serde_json::Value> = f
        .trajectory
        .iter()
        .map(|p| serde_json::json!({"at": iso_utc(p.at), "fs_factor": p.fs_factor, "rank": p.rank}))
        .collect();
    serde_json::json!({
        "association": f.association,
        "target": f.target,
        "reached_at": f.reached_at.map(iso_utc),
        "trajectory": trajectory,
    })
}

/// The trajectory as a table: `as_of` (UTC), `fs_factor`, `rank`, `raw_usage`.
pub fn trajectory_batch(f: &Forecast) -> RecordBatch {
    let at: Vec<i64> = f.trajectory.iter().map(|p| p.at * 1_000_000).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(TimestampMicrosecondArray::from(at).with_timezone("UTC")),
        Arc::new(Float64Array::from_iter_values(f.trajectory.iter().map(|p| p.fs_factor))),
        Arc::new(UInt32Array::from_iter_values(f.trajectory.iter().map(|p| p.rank))),
        Arc::new(Float64Array::from_iter_values(f.trajectory.iter().map(|p| p.raw_usage))),
    ];
    let schema = Schema::new(vec![
        Field::new("as_of", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), false),
        Field::new("fs_factor", DataType::Float64, false),
        Field::new("rank", DataType::UInt32, false),
        Field::new("raw_usage", DataType::Float64, false),
    ]);
    RecordBatch::try_new(Arc::new(schema), columns).expect("columns match the schema")
}

/// The forecast's parameters and answers, for the Parquet metadata.
pub fn metadata(f: &Forecast) -> Vec<KeyValue> {
    let budget = match f.budget {
        Budget::Amount(x) => x.to_string(),
        Budget::Below => "below".into(),
        Budget::Unlimited => "unlimited".into(),
    };
    let mut m = vec![
        ("association", f.association.clone()),
        ("algorithm", f.algorithm.name().to_string()),
        ("assume", f.assume.name().to_string()),
        ("window_secs", f.window.to_string()),
        ("horizon_secs", f.horizon.to_string()),
        ("rate", f.rate.to_string()),
        ("target", f.target.to_string()),
        ("reached_at", f.reached_at.map(iso_utc).unwrap_or_default()),
        ("floor", f.floor.to_string()),
        ("budget_over_secs", f.budget_over.to_string()),
        ("budget_billing_secs", budget),
    ];
    if let Some(h) = f.budget_cpu_hours() {
        m.push(("budget_cpu_hours", h.to_string()));
    }
    m.into_iter().map(|(k, v)| KeyValue::new(format!("fairshare.forecast.{k}"), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_slurm_prints_them() {
        assert_eq!(slurm_duration(59), "00:00:59");
        assert_eq!(slurm_duration(86_400 + 3_661), "1-01:01:01");
        assert_eq!(slurm_duration(14 * 86_400), "14-00:00:00");
    }

    #[test]
    fn amounts_keep_four_significant_digits() {
        assert_eq!(amount(0.0), "0");
        assert_eq!(amount(1234567.8), "1234568");
        assert_eq!(amount(12.3456), "12.35");
        assert_eq!(amount(0.0123456), "0.01235");
    }
}
