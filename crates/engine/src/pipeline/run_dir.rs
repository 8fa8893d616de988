//! The run directory: `associations.parquet`, `sshare.txt`, `jobs.parquet`, `sprio.txt` and
//! `run.json` (what went in, the parameters, how long each stage took), appearing atomically;
//! and the stage timings that go into it.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

use arrow::array::RecordBatch;

use super::embedded::shown;
use super::queue::score_slices;
use super::{Observer, Run, Silent, Site};
use crate::jobs::PendingJobs;
use crate::output::parquet::{association_batch, jobs_batch, jobs_metadata, metadata};
use crate::output::sprio::{Format, SprioLines, SprioOptions, write_sprio};
use crate::output::sshare::{SshareOptions, write_sshare};
use crate::priority::{Scores, Weights};
use crate::usage::ChargeReport;
use fairshare_base::named::Named;
use fairshare_base::write::atomic::{AtomicDir, AtomicFile, DirKind};
use fairshare_base::write::parquet::{ParquetSink, write_parquet};
use fairshare_base::{Error, Result};

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
    let mut file = fairshare_base::read::source::open(path)?;
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
    pub fn write_dir(&mut self, out_dir: &Path, observer: &dyn Observer) -> Result<()> {
        let dir = AtomicDir::create(out_dir, DirKind::Run)?;
        let mut rows = serde_json::Map::new();
        if let Some(q) = self.queue.take() {
            rows.insert("pending_jobs".into(), q.jobs.len().into());
            rows.insert("priority_rows".into(), q.scores.job.len().into());
            let mut text = AtomicFile::create(&dir.path().join("sprio.txt"))?;
            let opts = SprioOptions {
                tres_weight_text: q.tres_weight_text.clone(),
                dest: Some(out_dir.join("sprio.txt")),
                ..SprioOptions::default()
            };
            write_sprio(&mut text, &q.scores, &q.jobs, &q.weights, &sprio_format(&q.weights), &opts)?;
            text.commit()?;
            let meta = jobs_metadata(q.formula, q.algorithm, q.now);
            write_parquet(&dir.path().join("jobs.parquet"), &jobs_batch(q.scores, &q.jobs, &q.weights)?, meta)?;
        }
        self.finish_dir(dir, out_dir, rows, observer)
    }

    /// Writes the run directory `out_dir` as [`Run::write_dir`] does, scoring `site`'s pending
    /// queue with Slurm's formula as it goes (`self` has none scored): a slice of jobs at a time
    /// ([`score_slices`]) into `sprio.txt` and `jobs.parquet`, so that neither the queue nor its
    /// scores are ever all in memory, and the writing runs beside the scoring. The stage
    /// `priority` then includes writing those two files.
    ///
    /// `sprio.txt` lists rows by job id as sprio does: a queue in that order (as a scheduler's
    /// ids grow with submission) is written as it is scored; a queue out of order is scored
    /// again whole for it, once the rest is written.
    fn write_dir_scoring(&mut self, site: &Site, out_dir: &Path, observer: &dyn Observer) -> Result<()> {
        let dir = AtomicDir::create(out_dir, DirKind::Run)?;
        let mut rows = serde_json::Map::new();
        if let Some(pending) = &site.pending {
            let prio = site.slurm_priority()?;
            let (tree, fs) = (&self.tree, &self.fair_share);
            let format = sprio_format(&prio.weights);
            let lines = SprioLines::new(&format, &prio.weights);
            // Set once the queue is found out of order: its lines are then no longer formatted.
            let broken = std::sync::atomic::AtomicBool::new(false);
            let slice = |scores: Scores, jobs: &PendingJobs, range: std::ops::Range<usize>| -> Result<QueueSlice> {
                let ids = &jobs.job_id[range.clone()];
                let in_order = !broken.load(std::sync::atomic::Ordering::Relaxed) && ids.is_sorted();
                let sprio = if in_order {
                    let rows: Vec<usize> = (0..scores.len()).collect();
                    fairshare_base::parallel::texts(&rows, |&r, text| lines.row(r, &scores, jobs, text))
                } else {
                    Vec::new()
                };
                let bounds = ids.first().zip(ids.last()).map(|(&a, &b)| (a, b));
                Ok(QueueSlice {
                    jobs: range.len(),
                    sprio,
                    in_order,
                    bounds,
                    batch: jobs_batch(scores, jobs, &prio.weights)?,
                })
            };
            let sprio_path = dir.path().join("sprio.txt");
            let sprio_error = |e| Error::io(out_dir.join("sprio.txt"), e);
            let mut sprio = AtomicFile::create(&sprio_path)?;
            let mut header = String::new();
            lines.header(&mut header);
            sprio.write_all(header.as_bytes()).map_err(sprio_error)?;
            let jobs_path = dir.path().join("jobs.parquet");
            let meta = jobs_metadata("slurm", fs.params.algorithm, self.now);
            let (mut parquet, mut order) = (None::<ParquetSink>, IdOrder::default());
            let mut written = WrittenQueue { pending_jobs: 0, priority_rows: 0, weights: prio.weights.clone() };
            score_slices(&prio, tree, fs, pending, observer, &slice, &mut |s: QueueSlice| {
                written.pending_jobs += s.jobs as u64;
                written.priority_rows += s.batch.num_rows() as u64;
                let in_order = order.follow(s.in_order, s.bounds);
                if !in_order {
                    broken.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                let text = || match in_order {
                    true => s.sprio.iter().try_for_each(|t| sprio.write_all(t.as_bytes())).map_err(sprio_error),
                    false => Ok(()),
                };
                let rows = || match &mut parquet {
                    Some(p) => p.write(&s.batch),
                    None => parquet.insert(ParquetSink::create(&jobs_path, &s.batch, meta.clone())?).write(&s.batch),
                };
                let (text, rows) = rayon::join(text, rows);
                text.and(rows)
            })?;
            parquet.ok_or_else(|| Error::Usage("the queue gave no batch to write".into()))?.finish()?;
            // Out of order: the queue scored again, whole, for sprio's order (its warnings were given).
            let whole = if order.broken { site.score(tree, fs, &Silent)? } else { None };
            if let Some(q) = whole {
                drop(sprio);
                sprio = AtomicFile::create(&sprio_path)?;
                let opts = SprioOptions { dest: Some(out_dir.join("sprio.txt")), ..SprioOptions::default() };
                write_sprio(&mut sprio, &q.scores, &q.jobs, &q.weights, &format, &opts)?;
            }
            sprio.commit()?;
            rows.insert("pending_jobs".into(), written.pending_jobs.into());
            rows.insert("priority_rows".into(), written.priority_rows.into());
            let what = format!(
                "{} pending jobs, {} priority rows, written to sprio.txt and jobs.parquet",
                written.pending_jobs, written.priority_rows
            );
            self.stages.finish("priority", || what, observer);
            self.written_queue = Some(written);
        }
        self.finish_dir(dir, out_dir, rows, observer)
    }

    /// Writes the tree's files (`associations.parquet`, `sshare.txt`) and `run.json` into `dir`
    /// (whose queue files, if any, are written: `rows` counts them), ends the stage `write`, and
    /// commits `dir` to `out_dir`.
    fn finish_dir(
        &mut self,
        dir: AtomicDir,
        out_dir: &Path,
        mut rows: serde_json::Map<String, serde_json::Value>,
        observer: &dyn Observer,
    ) -> Result<()> {
        let (tree, result) = (&self.tree, &self.fair_share);
        let mut meta = metadata(result, &self.source);
        meta.extend(self.metadata.iter().cloned());
        meta.extend(super::charge_metadata(self.charge.as_ref()));
        // The two files side by side: each leaves part of the cores idle (the Parquet writer's
        // uneven columns, the text's copy into the page cache).
        let parquet =
            || write_parquet(&dir.path().join("associations.parquet"), &association_batch(tree, result), meta);
        let sshare = || {
            let mut text = AtomicFile::create(&dir.path().join("sshare.txt"))?;
            let sshare_opts =
                SshareOptions { long: true, dest: Some(out_dir.join("sshare.txt")), ..SshareOptions::default() };
            write_sshare(&mut text, tree, result, &sshare_opts)?;
            text.commit()
        };
        let (parquet, sshare) = rayon::join(parquet, sshare);
        parquet.and(sshare)?;
        rows.insert("associations".into(), tree.len().into());
        rows.insert("user_associations".into(), tree.user_count().into());
        for (key, n) in self.charge.as_ref().map(ChargeReport::counts).unwrap_or_default() {
            rows.insert(key, n.into());
        }
        if let Some(skipped) = self.flux_jobs_skipped {
            rows.insert("flux_jobs_skipped".into(), skipped.into());
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

/// The format of a run directory's `sprio.txt`: sprio's default for `weights`.
fn sprio_format(weights: &Weights) -> Format {
    Format::default_for(weights, false, false, false)
}

/// A slice of a queue as a run directory takes it.
struct QueueSlice {
    /// Its jobs.
    jobs: usize,
    /// Its sprio lines, in tasks (none when its jobs, or the queue's so far, are out of order).
    sprio: Vec<String>,
    /// Whether its jobs' ids never decrease (false once the queue's were found to).
    in_order: bool,
    /// Its first and last job ids (none for no jobs).
    bounds: Option<(u64, u64)>,
    /// Its rows of `jobs.parquet`.
    batch: RecordBatch,
}

/// Whether a queue's job ids have never decreased so far, followed a slice at a time.
#[derive(Debug, Default)]
struct IdOrder {
    /// The last id of the slices so far.
    last: Option<u64>,
    /// Some id came after a larger one.
    broken: bool,
}

impl IdOrder {
    /// Follows the next slice (`in_order`: its own ids never decrease; `bounds`: its first and
    /// last, none for no jobs); true while the queue so far is in order.
    fn follow(&mut self, in_order: bool, bounds: Option<(u64, u64)>) -> bool {
        let continues = self.last.zip(bounds).is_none_or(|(last, (first, _))| last <= first);
        self.broken |= !(in_order && continues);
        self.last = bounds.map(|(_, last)| last).or(self.last);
        !self.broken
    }
}

impl Site {
    /// The whole run written into the run directory `out_dir` ([`Run::write_dir`]), with the
    /// input files' identities; the pending queue is scored as it is written, so that neither
    /// the queue nor its scores are all in memory at once: the returned run holds no queue, and
    /// its `written_queue` says what was written.
    ///
    /// # Errors
    /// As [`Site::run`] and [`Run::write_dir`].
    pub fn run_into_dir(&self, out_dir: &Path, observer: &dyn Observer) -> Result<Run> {
        let mut run = self.run_fair_share(true, observer)?;
        run.write_dir_scoring(self, out_dir, observer)?;
        Ok(run)
    }
}

/// The pending queue of a run, scored as its run directory was written
/// ([`Site::run_into_dir`]): the directory's `jobs.parquet` holds its rows.
#[derive(Debug, Clone)]
pub struct WrittenQueue {
    /// Jobs in the queue.
    pub pending_jobs: u64,
    /// Their (job, partition, QOS) rows.
    pub priority_rows: u64,
    /// The weights of Slurm's formula they were scored with.
    pub weights: Weights,
}

#[cfg(test)]
mod tests {
    use super::IdOrder;

    #[test]
    fn id_order_holds_across_slices_until_an_id_goes_back() {
        let mut order = IdOrder::default();
        assert!(order.follow(true, Some((1, 5))));
        // Equal ids across a boundary, and a slice of no jobs, keep the order.
        assert!(order.follow(true, Some((5, 9))));
        assert!(order.follow(true, None));
        assert!(!order.follow(true, Some((8, 20))));
        // Once broken, it stays broken.
        assert!(!order.follow(true, Some((30, 40))));
        assert!(!IdOrder::default().follow(false, Some((1, 2))));
    }
}
