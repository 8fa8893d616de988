//! The `squeue --json` queue: the pending entries of its `jobs` array, numbers plain or as
//! data_parser's `{"set", "infinite", "number"}`; an entry with a missing or mistyped field is
//! refused, naming the entry and the field.

use std::path::Path;

use super::queue::{DEFAULT_URGENCY, KeptTres, NICE_RANGE, NO_VAL, Names, PendingJobs, RawJob, TresReq};
use fairshare_base::error::{Error, Result};
use fairshare_base::read::source;

impl PendingJobs {
    /// Reads the pending jobs of the `squeue --json` output `path`.
    ///
    /// # Errors
    /// Not JSON, no `jobs` array, or an entry that is not a job, naming the entry.
    pub(super) fn read_squeue_json(&mut self, path: &Path) -> Result<()> {
        let mut kept = KeptTres::new(&self.tres);
        // A JSON document may be one line of any length: checked by its first byte instead, so
        // that an endless stream of anything else stops at once.
        let head = source::head(path, 64)?;
        if head.iter().any(|b| !b.is_ascii_whitespace()) && !starts_json(&head) {
            return Err(Error::input(path, 1, "not JSON: expected the output of `squeue --json`"));
        }
        let text = source::read_text(path, None)?;
        let doc: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| Error::input(path, e.line() as u64, format!("not JSON: {e}")))?;
        let Some(jobs) = doc.get("jobs").and_then(|j| j.as_array()) else {
            return Err(Error::input(path, None, "no `jobs` array: expected the output of `squeue --json`"));
        };
        for (i, job) in jobs.iter().enumerate() {
            let mut job = JsonJob::new(path, i, job)?;
            let state = "a string or a list of strings";
            // squeue lists every job; only the pending ones are scored.
            match job.text("job_state", state)? {
                Some(s) if s.contains("PENDING") => {}
                Some(_) => continue,
                None => return Err(job.err(format!("no job_state: expected {state}"))),
            }
            let job_id = job.required("job_id", "a whole number", 0..=i64::MAX)? as u64;
            job.at = format!("jobs[{i}] (job {job_id})");
            let name = |key: &str| job.text(key, "a string");
            let required_name = |key: &str| name(key)?.ok_or_else(|| job.err(format!("no {key}: expected a string")));
            let (user, account, partition) =
                (required_name("user_name")?, required_name("account")?, required_name("partition")?);
            let (qos, tres) = (name("qos")?.unwrap_or_default(), name("tres_req_str")?.unwrap_or_default());
            let time_limit = match job.number("time_limit", "whole minutes")? {
                JsonNumber::Unset | JsonNumber::Infinite => NO_VAL,
                _ => job.ranged("time_limit", "whole minutes", 0, 0..=u32::MAX.into())? as u32,
            };
            let raw = RawJob {
                job_id,
                user: Names::Text(&user),
                account: Names::Text(&account),
                partition: Names::Text(&partition),
                qos: Names::Text(&qos),
                submit: job.required("submit_time", "whole seconds", i64::MIN..=i64::MAX)?,
                // Slurm's accrue time 0 means "not yet eligible".
                accrue: Some(job.ranged("accrue_time", "whole seconds", 0, i64::MIN..=i64::MAX)?).filter(|&t| t > 0),
                min_nodes: job.ranged("node_count", "a whole number", 1, 0..=u32::MAX.into())? as u32,
                cpus: job.ranged("cpus", "a whole number", 0, 0..=u32::MAX.into())? as u32,
                time_limit,
                nice: job.ranged("nice", "a whole number", 0, NICE_RANGE)? as i32,
                site_factor: job.ranged("site_factor", "a whole number", 0, NICE_RANGE)? as i32,
                tres_req: TresReq::Text(&tres),
                urgency: DEFAULT_URGENCY,
            };
            // The job's index names it: a JSON document has no useful line numbers.
            self.push(raw, i as u64 + 1, &mut kept).map_err(|e| match e {
                Error::Input { message, .. } => job.err(message),
                e => e,
            })?;
        }
        Ok(())
    }
}

/// Whether `head` (the first bytes of an input) opens a JSON object.
pub(super) fn starts_json(head: &[u8]) -> bool {
    head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// One entry of `squeue --json`'s `jobs`, read field by field. Its errors name the file and the
/// entry (`jobs[3]`, then `jobs[3] (job 17)` once the id is read), the field, its value and what
/// was expected: a job with a missing or mistyped field is refused, never read as empty.
struct JsonJob<'a> {
    path: &'a Path,
    fields: &'a serde_json::Map<String, serde_json::Value>,
    /// How errors name the job.
    at: String,
}

/// A number in squeue's JSON: plain, or data_parser's `{"set": true, "infinite": false, "number":
/// N}` (`set: false` is Slurm's NO_VAL: unset; `infinite` wins over the rest). `null`, which the
/// data_parser's complex mode writes for NO_VAL, is unset too.
enum JsonNumber {
    Unset,
    Infinite,
    Whole(i128),
}

impl<'a> JsonJob<'a> {
    /// Entry `index`, which must be an object.
    fn new(path: &'a Path, index: usize, job: &'a serde_json::Value) -> Result<Self> {
        match job.as_object() {
            Some(fields) => Ok(JsonJob { path, fields, at: format!("jobs[{index}]") }),
            None => Err(Error::input(path, None, format!("jobs[{index}]: expected an object, found {}", shown(job)))),
        }
    }

    fn err(&self, message: impl std::fmt::Display) -> Error {
        Error::input(self.path, None, format!("{}: {message}", self.at))
    }

    /// `{key} {value}: expected {what}`.
    fn wrong(&self, key: &str, what: &str) -> Error {
        self.err(format!("{key} {}: expected {what}", self.fields.get(key).map_or_else(String::new, shown)))
    }

    /// A number field; unset when absent.
    fn number(&self, key: &str, what: &str) -> Result<JsonNumber> {
        let Some(v) = self.fields.get(key) else { return Ok(JsonNumber::Unset) };
        let whole = |n: &serde_json::Number| {
            n.as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                // A whole float (`1.0`, as some tools write every number) loses nothing.
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 2f64.powi(64)).map(|f| f as i128))
        };
        let number = match v {
            serde_json::Value::Null => Some(JsonNumber::Unset),
            serde_json::Value::Number(n) => whole(n).map(JsonNumber::Whole),
            serde_json::Value::Object(o) => match (o.get("set"), o.get("infinite"), o.get("number")) {
                (_, Some(serde_json::Value::Bool(true)), _) => Some(JsonNumber::Infinite),
                (Some(serde_json::Value::Bool(false)), _, _) => Some(JsonNumber::Unset),
                (_, _, Some(serde_json::Value::Number(n))) => whole(n).map(JsonNumber::Whole),
                _ => None,
            },
            _ => None,
        };
        number.ok_or_else(|| self.wrong(key, what))
    }

    /// A whole number field in `range`, `default` when unset.
    fn ranged(&self, key: &str, what: &str, default: i64, range: std::ops::RangeInclusive<i64>) -> Result<i64> {
        match self.number(key, what)? {
            JsonNumber::Unset => Ok(default),
            JsonNumber::Infinite => Err(self.wrong(key, what)),
            JsonNumber::Whole(n) => i64::try_from(n)
                .ok()
                .filter(|n| range.contains(n))
                .ok_or_else(|| self.err(format!("{key} {n} is not in {range:?}"))),
        }
    }

    /// A whole number field that must be present and set.
    fn required(&self, key: &str, what: &str, range: std::ops::RangeInclusive<i64>) -> Result<i64> {
        match self.number(key, what)? {
            JsonNumber::Whole(_) => self.ranged(key, what, 0, range),
            _ if !self.fields.contains_key(key) => Err(self.err(format!("no {key}: expected {what}"))),
            _ => Err(self.wrong(key, what)),
        }
    }

    /// A text field: a string, or a list of strings joined by commas (`job_state: ["PENDING"]`);
    /// `None` when absent or null.
    fn text(&self, key: &str, what: &str) -> Result<Option<String>> {
        match self.fields.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str())
                .collect::<Option<Vec<_>>>()
                .map(|parts| Some(parts.join(",")))
                .ok_or_else(|| self.wrong(key, what)),
            Some(_) => Err(self.wrong(key, what)),
        }
    }
}

/// A JSON value as compact text for a message, cut short when long.
fn shown(v: &serde_json::Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Tres;
    use crate::jobs::pending::queue::PendingFormat;

    /// The `squeue --json` text `json` read, keeping the cpu and gpu counts; the error as its message.
    fn read(json: &str) -> std::result::Result<PendingJobs, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("squeue.json");
        std::fs::write(&path, json).unwrap();
        let keep = [Tres::CPU, Tres::gres("gpu")];
        PendingJobs::read(&path, Some(PendingFormat::SqueueJson), &keep).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_the_pending_jobs_with_plain_and_data_parser_numbers() {
        let jobs = read(
            r#"  {"jobs": [
                {"job_id": 5, "job_state": ["PENDING"], "user_name": "alice", "account": "lab",
                 "partition": "batch,gpu", "qos": "high",
                 "submit_time": {"set": true, "infinite": false, "number": 1767830400},
                 "accrue_time": 0, "node_count": {"set": false, "infinite": false, "number": 0},
                 "cpus": 4.0, "time_limit": {"set": true, "infinite": true, "number": 0}, "nice": -3,
                 "site_factor": null, "tres_req_str": "cpu=4,gres/gpu=1"},
                {"job_id": 6, "job_state": "RUNNING"},
                {"job_id": 7, "job_state": "PENDING", "user_name": "bob", "account": "lab", "partition": "batch",
                 "submit_time": 100, "accrue_time": 120, "node_count": 3, "time_limit": 60}
            ]}"#,
        )
        .unwrap();
        let names = |ids: &[u32]| ids.iter().map(|&i| jobs.names.name(i)).collect::<Vec<_>>().join("+");
        assert_eq!(jobs.format, PendingFormat::SqueueJson);
        assert_eq!(jobs.job_id, [5, 7]);
        assert_eq!(
            (names(&jobs.user), names(jobs.partitions(0)), names(jobs.qos(0))),
            ("alice+bob".into(), "batch+gpu".into(), "high".into())
        );
        assert!(jobs.qos(1).is_empty());
        assert_eq!(jobs.submit_time, [1_767_830_400, 100]);
        assert_eq!(jobs.accrue_time, [None, Some(120)]);
        assert_eq!((jobs.min_nodes.as_slice(), jobs.cpus.as_slice()), (&[1, 3][..], &[4, 0][..]));
        assert_eq!(jobs.time_limit, [NO_VAL, 60]);
        assert_eq!((jobs.nice.as_slice(), jobs.site_factor.as_slice()), (&[-3, 0][..], &[0, 0][..]));
        assert_eq!(jobs.urgency, [DEFAULT_URGENCY; 2]);
        assert_eq!(jobs.tres_req, [vec![4, 0], vec![1, 0]]);
        // A job is named by its index in `jobs`.
        assert_eq!(jobs.line, [1, 3]);
        assert!(jobs.location(1).ends_with("squeue.json jobs[2]"), "{}", jobs.location(1));
        assert!(jobs.error_at(1, "bad").to_string().ends_with("squeue.json: jobs[2] (job 7): bad"));
    }

    #[test]
    fn errors_name_the_entry_and_the_field() {
        let job = |fields: &str| {
            read(&format!(r#"{{"jobs": [{{"job_id": 5, "job_state": "PENDING", "submit_time": 1, {fields}}}]}}"#))
                .unwrap_err()
        };
        let names = r#""user_name": "u", "account": "a", "partition": "p""#;
        let e = read(r#"{"jobs": "#).unwrap_err();
        assert!(e.contains("squeue.json:1: not JSON: "), "{e}");
        let e = read("job_id,user\n").unwrap_err();
        assert!(e.ends_with("squeue.json:1: not JSON: expected the output of `squeue --json`"), "{e}");
        let e = read(r#"{"meta": {}}"#).unwrap_err();
        assert!(e.ends_with("squeue.json: no `jobs` array: expected the output of `squeue --json`"), "{e}");
        let e = read(r#"{"jobs": [3]}"#).unwrap_err();
        assert!(e.ends_with("squeue.json: jobs[0]: expected an object, found 3"), "{e}");
        let e = read(r#"{"jobs": [{"job_id": 5}]}"#).unwrap_err();
        assert!(e.ends_with("squeue.json: jobs[0]: no job_state: expected a string or a list of strings"), "{e}");
        let e = job(r#""account": "a", "partition": "p""#);
        assert!(e.ends_with("squeue.json: jobs[0] (job 5): no user_name: expected a string"), "{e}");
        let e = job(&format!(r#"{names}, "cpus": "x""#));
        assert!(e.ends_with("squeue.json: jobs[0] (job 5): cpus \"x\": expected a whole number"), "{e}");
        let e = job(&format!(r#"{names}, "nice": 10000000000"#));
        assert!(e.ends_with("jobs[0] (job 5): nice 10000000000 is not in -2147483645..=2147483645"), "{e}");
        let e = job(&format!(r#"{names}, "time_limit": 1.5"#));
        assert!(e.ends_with("jobs[0] (job 5): time_limit 1.5: expected whole minutes"), "{e}");
        // The queue's own checks name the entry too, with no line.
        let e = job(r#""user_name": "", "account": "a", "partition": "p""#);
        assert!(e.ends_with("squeue.json: jobs[0] (job 5): user, account and partition must not be empty"), "{e}");
    }
}
