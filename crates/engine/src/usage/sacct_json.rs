//! `sacct --json` job records: the `jobs` array of Slurm's data_parser response (v0.0.40 on).
//!
//! Per job: `job_id`, `user`, `account`, `partition`, `qos`, `time.start`, `time.end`,
//! `time.elapsed`, `state.current` and `tres.allocated` (`{type, name, id, count}` items). Numbers
//! may be plain or data_parser's `{"set", "infinite", "number"}` structs. As in the `sacct -P`
//! reader: a start of 0 (or unset) means the job never ran; an end of 0 means still running unless
//! the state says the job is over, when the end is `start + elapsed`; steps (`jobs[].steps`) are not
//! records, usage is charged per allocation. A TRES count of -2 (`NO_VAL64` as sacct prints it
//! signed) is unknown and leaves that TRES out of the allocation; a job whose counts are all unknown
//! is charged by nothing. A record's "line" in messages is its place in `jobs` (counting from 1).

use std::path::Path;

use serde_json::Value;

use super::sacct::FINISHED;
use super::{JobRef, JobSink};
use crate::config::time::INFINITE;
use fairshare_base::error::{Error, Result};
use fairshare_base::read::source;

/// `NO_VAL64` as a signed count: unknown.
const UNKNOWN_COUNT: i64 = -2;

/// Streams the job allocations of a `sacct --json` dump into `sink`, in `jobs` order.
///
/// # Errors
/// Not JSON (with its line), no `jobs` array, or a job with a missing or mistyped field, a
/// negative count other than -2, or a finished job whose end is unknown, naming the job by its
/// place; or the sink's own error.
pub fn read(path: &Path, sink: &mut JobSink<'_>) -> Result<()> {
    let text = source::read_text(path, None)?;
    let doc: Value =
        serde_json::from_str(&text).map_err(|e| Error::input(path, e.line() as u64, format!("not JSON: {e}")))?;
    let jobs = doc
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::input(path, None, "no `jobs` array: expected the output of `sacct --json`"))?;
    let mut tres = String::new();
    for (i, job) in jobs.iter().enumerate() {
        let line = i as u64 + 1;
        let err = |m: String| Error::input(path, line, format!("jobs[{i}]: {m}"));
        let text =
            |k: &str| job.get(k).map_or(Some(""), Value::as_str).ok_or_else(|| err(format!("`{k}` is not a string")));
        let job_id = number(job.get("job_id"))
            .map_err(|m| err(format!("job_id: {m}")))?
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| err("no job_id (a whole number)".into()))?;
        let err = |m: String| Error::input(path, line, format!("jobs[{i}] (job {job_id}): {m}"));
        let time = |k: &str| number(job.pointer(&format!("/time/{k}"))).map_err(|m| err(format!("time.{k}: {m}")));
        let start = time("start")?.filter(|&t| t > 0);
        let end = match (start, time("end")?.filter(|&t| t > 0)) {
            (None, _) => None,
            (Some(_), Some(e)) => Some(e),
            (Some(s), None) if finished(job) => {
                let elapsed =
                    time("elapsed")?.ok_or_else(|| err("finished, but time.end and time.elapsed are unset".into()))?;
                Some(
                    s.checked_add(elapsed)
                        .ok_or_else(|| err(format!("start + elapsed overflows ({s} + {elapsed})")))?,
                )
            }
            (Some(_), None) => None,
        };
        tres_string(job, &mut tres).map_err(err)?;
        // `time.limit` in minutes: unset is unknown, infinite is Slurm's INFINITE.
        let time_limit = match job.pointer("/time/limit") {
            Some(Value::Object(l)) if l.get("infinite") == Some(&Value::Bool(true)) => Some(INFINITE),
            limit => number(limit)
                .map_err(|m| err(format!("time.limit: {m}")))?
                .map(|m| u32::try_from(m).map_err(|_| err(format!("time.limit: {m} is not a number of minutes"))))
                .transpose()?,
        };
        let job = JobRef {
            job_id,
            user: text("user")?,
            account: text("account")?,
            partition: text("partition")?,
            qos: text("qos")?,
            start,
            end,
            tres_alloc: &tres,
            time_limit,
            line,
            skip: None,
            started_at_submit: false,
        };
        sink(&job)?;
    }
    Ok(())
}

/// True when `state.current` names a state after which the job holds no allocation.
fn finished(job: &Value) -> bool {
    let states = match job.pointer("/state/current") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        Some(Value::String(s)) => vec![s.as_str()],
        _ => Vec::new(),
    };
    states.iter().any(|s| FINISHED.iter().any(|f| f.eq_ignore_ascii_case(s)))
}

/// `tres.allocated` as a TRES string (`cpu=16,mem=65536M,gres/gpu=2`) in `out`; unknown counts
/// (-2) are left out.
///
/// # Errors
/// An item without a `type` or an integer `count`, or a negative count other than -2.
fn tres_string(job: &Value, out: &mut String) -> std::result::Result<(), String> {
    out.clear();
    let items = match job.pointer("/tres/allocated") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err("tres.allocated is not a list".into()),
    };
    for (k, item) in items.iter().enumerate() {
        let kind = item.get("type").and_then(Value::as_str).ok_or(format!("tres.allocated[{k}]: no type"))?;
        let name = item.get("name").and_then(Value::as_str).unwrap_or("");
        let count = number(item.get("count"))
            .map_err(|m| format!("tres.allocated[{k}].count: {m}"))?
            .ok_or(format!("tres.allocated[{k}]: no count"))?;
        match count {
            UNKNOWN_COUNT => continue,
            c if c < 0 => return Err(format!("tres.allocated[{k}]: count {c} (only -2, unknown, may be negative)")),
            _ => {}
        }
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(kind);
        if !name.is_empty() {
            out.push('/');
            out.push_str(name);
        }
        // Slurm counts memory in MB; say so, whatever a TRES string's default unit.
        let unit = if kind.eq_ignore_ascii_case("mem") { "M" } else { "" };
        out.push_str(&format!("={count}{unit}"));
    }
    Ok(())
}

/// A whole number, plain or as a `{"set", "infinite", "number"}` struct; `None` when absent, null,
/// unset or infinite.
///
/// # Errors
/// Anything else.
fn number(v: Option<&Value>) -> std::result::Result<Option<i64>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(s)) => match (s.get("set"), s.get("infinite")) {
            (Some(Value::Bool(false)), _) | (_, Some(Value::Bool(true))) => Ok(None),
            _ => number(s.get("number")),
        },
        Some(n) => n.as_i64().map(Some).ok_or_else(|| format!("{n} is not a whole number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(text: &str) -> Result<Vec<(u64, String, Option<i64>, Option<i64>, String)>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sacct.json");
        std::fs::write(&path, text).unwrap();
        let mut out = Vec::new();
        read(&path, &mut |j| {
            out.push((j.job_id, j.user.to_string(), j.start, j.end, j.tres_alloc.to_string()));
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn reads_jobs_structs_unknown_counts_and_unended_jobs() {
        let text = r#"{"jobs": [
          {"job_id": 1, "user": "ann", "account": "bio", "partition": "batch", "qos": "normal",
           "state": {"current": ["COMPLETED"]}, "time": {"start": 100, "end": 0, "elapsed": 50},
           "tres": {"allocated": [{"type": "cpu", "name": "", "id": 1, "count": 4},
                                  {"type": "mem", "name": "", "id": 2, "count": -2},
                                  {"type": "gres", "name": "gpu", "id": 1001, "count": 2}]}},
          {"job_id": {"set": true, "infinite": false, "number": 2}, "user": "bo", "account": "bio",
           "partition": "batch", "state": {"current": ["RUNNING"]}, "time": {"start": 200, "end": 0},
           "tres": {"allocated": [{"type": "mem", "count": 1024}]}},
          {"job_id": 3, "user": "cy", "account": "bio", "partition": "batch",
           "state": {"current": ["CANCELLED"]}, "time": {"start": 0, "end": 300}}
        ]}"#;
        let jobs = collect(text).unwrap();
        assert_eq!(jobs[0], (1, "ann".into(), Some(100), Some(150), "cpu=4,gres/gpu=2".into()));
        assert_eq!(jobs[1], (2, "bo".into(), Some(200), None, "mem=1024M".into()));
        assert_eq!(jobs[2], (3, "cy".into(), None, None, String::new()));
    }

    #[test]
    fn errors_name_the_file_and_job() {
        let e = collect(
            r#"{"jobs": [{"job_id": 7, "time": {"start": 1}, "tres": {"allocated": [{"type": "cpu", "count": -5}]}}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("sacct.json:1") && e.contains("jobs[0] (job 7)") && e.contains("-5"), "{e}");
        let e = collect(r#"{"jobs": [{"job_id": 8, "state": {"current": ["FAILED"]}, "time": {"start": 1}}]}"#);
        assert!(e.unwrap_err().to_string().contains("time.elapsed are unset"));
        assert!(collect("{\"jobs\": 3}").unwrap_err().to_string().contains("no `jobs` array"));
        assert!(collect("{\n\"jobs\": [").unwrap_err().to_string().contains("not JSON"));
    }
}
