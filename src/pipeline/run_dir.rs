//! The run directory: `associations.parquet`, `sshare.txt`, `jobs.parquet`, `sprio.txt` and
//! `run.json` (what went in, the parameters, how long each stage took), appearing atomically;
//! and the stage timings that go into it.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

use super::embedded::shown;
use super::{Observer, Run};
use crate::output::atomic::{AtomicDir, AtomicFile, DirKind};
use crate::output::parquet::{association_batch, jobs_batch, jobs_metadata, metadata, write_parquet};
use crate::output::sprio::{Format, SprioOptions, write_sprio};
use crate::output::sshare::{SshareOptions, write_sshare};
use crate::usage::ChargeReport;
use crate::{Error, Result};

/// Stage timings of a run, each told to the observer as it finishes.
#[derive(Debug)]
pub struct Stages {
    start: Instant,
    last: Instant,
    /// (stage, seconds, peak resident bytes).
    done: Vec<(&'static str, f64, Option<u64>)>,
}

impl Default for Stages {
    fn default() -> Self {
        let now = Instant::now();
        Stages { start: now, last: now, done: Vec::new() }
    }
}

impl Stages {
    /// Ends the stage `name` (started when the previous one ended); `what` says what it did.
    pub fn finish(&mut self, name: &'static str, what: impl FnOnce() -> String, observer: &dyn Observer) {
        let now = Instant::now();
        let secs = (now - self.last).as_secs_f64();
        self.last = now;
        let peak = peak_rss_since_last_stage();
        self.done.push((name, secs, peak));
        observer.stage(name, secs, peak, &what());
    }

    /// (stage, seconds, peak resident bytes where the system reports it), in order.
    pub fn done(&self) -> &[(&'static str, f64, Option<u64>)] {
        &self.done
    }

    fn json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for (name, secs, _) in &self.done {
            m.insert((*name).to_string(), serde_json::json!((secs * 1e6).round() / 1e6));
        }
        m.insert("total".into(), serde_json::json!(((self.last - self.start).as_secs_f64() * 1e6).round() / 1e6));
        serde_json::Value::Object(m)
    }

    /// Peak resident memory per stage, in bytes, where the system reports it.
    fn memory_json(&self) -> serde_json::Value {
        let m: serde_json::Map<String, serde_json::Value> =
            self.done.iter().filter_map(|(name, _, peak)| peak.map(|b| ((*name).to_string(), b.into()))).collect();
        serde_json::Value::Object(m)
    }
}

/// The process's peak resident set since the previous call (Linux: `VmHWM`, then reset through
/// `/proc/self/clear_refs`, so each stage reports its own peak); `None` elsewhere.
fn peak_rss_since_last_stage() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 =
        status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    // "5" resets the peak to the current resident set.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    Some(kb * 1024)
}

/// The identities of the input files, (role, path), for `run.json`. Taken as the inputs were
/// read, before anything (a flux write-back) changes them.
///
/// # Errors
/// An input cannot be read again.
pub fn describe_inputs(inputs: &[(&str, &Path)]) -> Result<Vec<serde_json::Value>> {
    inputs.iter().map(|&(role, p)| describe_input(role, p)).collect()
}

/// A parameter as `run.json` holds it: numbers and booleans as JSON numbers and booleans (as the
/// algorithm's own parameters are), anything else as text. Parquet metadata holds them all as text.
fn typed(value: &str) -> serde_json::Value {
    if let Ok(n) = value.parse::<i64>() {
        return n.into();
    }
    if let Ok(b) = value.parse::<bool>() {
        return b.into();
    }
    match value.parse::<f64>() {
        Ok(x) if x.is_finite() && !value.contains(|c: char| c.is_ascii_alphabetic()) => x.into(),
        _ => value.into(),
    }
}

/// An input file's identity for `run.json`: size and XXH3-64 of its bytes.
fn describe_input(role: &str, path: &Path) -> Result<serde_json::Value> {
    // A stream is read again from its spool.
    let mut file = crate::io::read::source::open(path)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
    Ok(serde_json::json!({
        "role": role,
        "path": shown(path),
        "bytes": bytes,
        "xxh3_64": format!("{:016x}", hasher.digest()),
    }))
}

impl Run {
    /// The run's parameters as `run.json` holds them: the pass's, the evaluation time, the usage
    /// stage's and the what-if edits.
    pub fn parameters(&self) -> serde_json::Value {
        let p = self.fair_share.params;
        let mut parameters = serde_json::json!({
            "algorithm": p.algorithm.name(),
            "dampening": p.dampening,
            "depth_oblivious": p.depth_oblivious,
            "now": self.now,
        });
        for kv in &self.metadata {
            let key = kv.key.strip_prefix("fairshare.").filter(|k| *k != "jobs" && *k != "now");
            if let (Some(key), Some(v)) = (key, &kv.value) {
                parameters[key] = typed(v);
            }
        }
        parameters
    }

    /// Writes the run directory `out_dir` atomically: it appears whole or not at all, and
    /// replaces only an earlier run directory of ours.
    ///
    /// # Errors
    /// A user's file or directory is in the way, or writing fails.
    pub fn write_dir(mut self, out_dir: &Path, observer: &dyn Observer) -> Result<()> {
        let (tree, result) = (&self.tree, &self.fair_share);
        let dir = AtomicDir::create(out_dir, DirKind::Run)?;
        let mut meta = metadata(result, &self.source);
        meta.extend(self.metadata.iter().cloned());
        meta.extend(super::charge_metadata(self.charge.as_ref()));
        write_parquet(&dir.path().join("associations.parquet"), &association_batch(tree, result), meta)?;
        let mut text = AtomicFile::create(&dir.path().join("sshare.txt"))?;
        let sshare_opts =
            SshareOptions { long: true, dest: Some(out_dir.join("sshare.txt")), ..SshareOptions::default() };
        write_sshare(&mut text, tree, result, &sshare_opts)?;
        text.commit()?;
        let mut rows = serde_json::Map::new();
        rows.insert("associations".into(), tree.len().into());
        rows.insert("user_associations".into(), tree.user_count().into());
        for (key, n) in self.charge.as_ref().map(ChargeReport::counts).unwrap_or_default() {
            rows.insert(key, n.into());
        }
        if let Some(skipped) = self.flux_jobs_skipped {
            rows.insert("flux_jobs_skipped".into(), skipped.into());
        }
        if let Some(q) = self.queue.take() {
            rows.insert("pending_jobs".into(), q.jobs.len().into());
            rows.insert("priority_rows".into(), q.scores.job.len().into());
            let format = Format::default_for(&q.weights, false, false, false);
            let opts = SprioOptions {
                tres_weight_text: q.tres_weight_text.clone(),
                dest: Some(out_dir.join("sprio.txt")),
                ..SprioOptions::default()
            };
            let mut text = AtomicFile::create(&dir.path().join("sprio.txt"))?;
            write_sprio(&mut text, &q.scores, &q.jobs, &q.weights, &format, &opts)?;
            text.commit()?;
            let meta = jobs_metadata(q.formula, q.algorithm, q.now);
            write_parquet(&dir.path().join("jobs.parquet"), &jobs_batch(q.scores, &q.jobs, &q.weights)?, meta)?;
        }
        self.stages.finish("write", || out_dir.display().to_string(), observer);

        let run_json = serde_json::json!({
            "fairshare_version": env!("CARGO_PKG_VERSION"),
            "source": self.source,
            "parameters": self.parameters(),
            "inputs": self.inputs,
            "rows": rows,
            "timings_s": self.stages.json(),
            "peak_rss_bytes": self.stages.memory_json(),
        });
        let path = dir.path().join("run.json");
        let mut f = AtomicFile::create(&path)?;
        let body = serde_json::to_string_pretty(&run_json).map_err(|e| Error::format(&path, e))?;
        f.write_all(body.as_bytes()).and_then(|()| f.write_all(b"\n")).map_err(|e| Error::io(&path, e))?;
        f.commit()?;
        dir.commit()
    }
}
