//! `sprio --check`: our priorities against the controller's, as `squeue --json` recorded them.
//!
//! squeue's `priority_by_partition` (`[{"partition", "priority"}]`, data_parser's `PART_PRIO`)
//! holds the controller's priority of a pending job in each partition it may run in; a job without
//! one (a single partition) has its `priority` (a plain number or a `{"set", "infinite",
//! "number"}` struct) for every partition. A (job, partition) differs when none of its scored rows
//! (one per QOS) has the controller's value.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::Scores;
use crate::jobs::PendingJobs;
use fairshare_base::error::{Error, Result};

/// The controller's priorities of one job: by partition, or one for all (`None`).
pub type ControllerPriorities = HashMap<u64, Vec<(Option<String>, u32)>>;

/// A (job, partition) whose priority we compute differently from the controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// Job id.
    pub job_id: u64,
    /// Partition.
    pub partition: String,
    /// The controller's priority.
    pub controller: u32,
    /// Ours (the rows' values, one per QOS).
    pub computed: Vec<u32>,
}

/// Parses the controller's priorities of the jobs in `text`, the `squeue --json` output `path`
/// (named in errors).
///
/// # Errors
/// Not JSON (with its line), no `jobs` array, or a job whose `job_id`, `priority` or
/// `priority_by_partition` entries are mistyped, naming the job by its place in `jobs`.
pub fn controller_priorities(path: &Path, text: &str) -> Result<ControllerPriorities> {
    let doc: Value =
        serde_json::from_str(text).map_err(|e| Error::input(path, e.line() as u64, format!("not JSON: {e}")))?;
    let jobs = doc
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::input(path, None, "no `jobs` array: expected the output of `squeue --json`"))?;
    let mut out = ControllerPriorities::new();
    for (i, job) in jobs.iter().enumerate() {
        let err = |m: String| Error::input(path, None, format!("jobs[{i}]: {m}"));
        let Some(job_id) = job.get("job_id").and_then(Value::as_u64) else {
            return Err(err("no job_id (a whole number)".into()));
        };
        let mut by_partition = Vec::new();
        for (k, p) in job.get("priority_by_partition").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let name = p.get("partition").and_then(Value::as_str);
            let prio = p.get("priority").and_then(uint32);
            match (name, prio) {
                (Some(n), Some(v)) => by_partition.push((Some(n.to_string()), v)),
                _ => return Err(err(format!("priority_by_partition[{k}] is not {{partition, priority}}"))),
            }
        }
        if by_partition.is_empty()
            && let Some(v) = job.get("priority").and_then(uint32)
        {
            by_partition.push((None, v));
        }
        out.insert(job_id, by_partition);
    }
    Ok(out)
}

/// A priority, plain or as a set `{"set", "infinite", "number"}` struct.
fn uint32(v: &Value) -> Option<u32> {
    let n = match v {
        Value::Object(s) if s.get("set") == Some(&Value::Bool(true)) => s.get("number")?,
        Value::Object(_) => return None,
        n => n,
    };
    n.as_u64().and_then(|n| u32::try_from(n).ok())
}

/// The (job, partition) pairs whose scored rows all differ from the controller's priority, in
/// score order; pairs the controller gave no priority for are not compared.
pub fn differences(jobs: &PendingJobs, scores: &Scores, controller: &ControllerPriorities) -> Vec<Difference> {
    // (job index, partition id) → our values, in first-seen order.
    let mut ours: Vec<((u32, u32), Vec<u32>)> = Vec::new();
    let mut at: HashMap<(u32, u32), usize> = HashMap::new();
    for r in 0..scores.len() {
        let key = (scores.job[r], scores.partition[r]);
        let i = *at.entry(key).or_insert_with(|| {
            ours.push((key, Vec::new()));
            ours.len() - 1
        });
        ours[i].1.push(scores.priority[r]);
    }
    let mut out = Vec::new();
    for ((j, p), computed) in ours {
        let (job_id, partition) = (jobs.job_id[j as usize], jobs.names.name(p));
        let Some(theirs) = controller.get(&job_id) else { continue };
        let expected = theirs.iter().find(|(name, _)| name.as_deref().is_none_or(|n| n == partition));
        if let Some(&(_, controller)) = expected
            && !computed.contains(&controller)
        {
            out.push(Difference { job_id, partition: partition.to_string(), controller, computed });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_by_partition_structs_and_plain_priorities() {
        let path = Path::new("q.json");
        let c = controller_priorities(
            path,
            r#"{"jobs": [
              {"job_id": 1, "priority": {"set": true, "infinite": false, "number": 70},
               "priority_by_partition": [{"partition": "a", "priority": 70}, {"partition": "b", "priority": 90}]},
              {"job_id": 2, "priority": {"set": true, "infinite": false, "number": 5}},
              {"job_id": 3, "priority": 6, "priority_by_partition": []},
              {"job_id": 4, "priority": {"set": false, "infinite": false, "number": 0}}
            ]}"#,
        )
        .unwrap();
        assert_eq!(c[&1], [(Some("a".into()), 70), (Some("b".into()), 90)]);
        assert_eq!(c[&2], [(None, 5)]);
        assert_eq!(c[&3], [(None, 6)]);
        assert!(c[&4].is_empty());
        let e =
            controller_priorities(path, r#"{"jobs": [{"job_id": 1, "priority_by_partition": [{"partition": "a"}]}]}"#)
                .unwrap_err()
                .to_string();
        assert!(e.contains("q.json") && e.contains("jobs[0]") && e.contains("priority_by_partition[0]"), "{e}");
    }
}
