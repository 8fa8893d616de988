//! `fairshare run`: the nightly job. Usage → fair-share → priorities for a whole site, written as
//! one run directory that appears atomically, with `run.json` recording what went in and how long
//! each stage took.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

use fairshare::fairshare as fs;
use fairshare::output::atomic::{AtomicDir, AtomicFile, DirKind, check_replaceable};
use fairshare::output::parquet::{association_batch, jobs_batch, jobs_metadata, metadata, write_parquet};
use fairshare::output::sprio::{Format, SprioOptions, write_sprio};
use fairshare::output::sshare::{SshareOptions, write_sshare};
use fairshare::tree::AssocTree;
use fairshare::{Error, Result};

use super::args::RunArgs;
use super::site::{EMBEDDED, EmbeddedSite, SiteSlots, shown};
use super::usage::UsageSettings;
use super::{Queue, TreeSettings, charged_input, charged_pass, site_files};

/// Stage timings, printed as they finish when stderr is a terminal.
pub(super) struct Stages {
    start: Instant,
    last: Instant,
    /// (stage, seconds, peak resident bytes).
    done: Vec<(&'static str, f64, Option<u64>)>,
    pub(super) verbose: bool,
}

impl Stages {
    pub(super) fn new() -> Self {
        let now = Instant::now();
        Stages {
            start: now,
            last: now,
            done: Vec::new(),
            verbose: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }

    pub(super) fn finish(&mut self, name: &'static str, what: impl FnOnce() -> String) {
        let now = Instant::now();
        let secs = (now - self.last).as_secs_f64();
        self.last = now;
        let peak = peak_rss_since_last_stage();
        self.done.push((name, secs, peak));
        if self.verbose {
            let mem = peak.map(|b| format!("  peak {:.2} GB", b as f64 / 1e9)).unwrap_or_default();
            eprintln!("fairshare: {name:<10} {secs:>8.3} s{mem}  {}", what());
        }
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

/// The identities of the input files, (role, path), for `run.json` (empty when no run directory
/// is written). Taken as the inputs were read, before anything (a flux write-back) changes them.
///
/// # Errors
/// An input cannot be read again.
pub(super) fn describe_inputs(wanted: bool, inputs: &[(&str, &Path)]) -> Result<Vec<serde_json::Value>> {
    if !wanted {
        return Ok(Vec::new());
    }
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
    let mut file = fairshare::io::source::open(path)?;
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

/// `fairshare run`.
pub(crate) fn run(mut a: RunArgs) -> Result<()> {
    // Refused before any work (and before a flux write-back): the check is repeated at commit.
    if let Some(dir) = &a.out_dir {
        check_replaceable(dir, DirKind::Run)?;
    }
    if a.flux_db.is_some() {
        return super::flux_site::run(&a);
    }
    let site_file = a.site.clone();
    let mut slots =
        SiteSlots { tree: &mut a.tree, usage: &mut a.usage, pending: Some((&mut a.pending, &mut a.pending_format)) };
    let embedded = match &site_file {
        Some(file) => {
            slots.apply(file)?;
            None
        }
        None => slots.embedded_if_empty()?,
    };
    let site_file = site_file.or_else(|| embedded.as_ref().map(EmbeddedSite::site_file));
    let source = match (&embedded, &a.site) {
        (Some(_), _) => EMBEDDED.to_string(),
        (None, Some(s)) => shown(s),
        (None, None) => "<command line>".to_string(),
    };
    let mut stages = Stages::new();

    // Configuration and tree.
    let usage = UsageSettings::resolve(&a.usage)?;
    let (conf, qos) = site_files(&a.usage, usage.as_ref())?;
    let settings = TreeSettings::resolve(&a.tree, conf.as_ref())?;
    let (input, usage_meta, report) = match &usage {
        Some(u) => {
            let (input, meta, report) = charged_input(&settings, u)?;
            (input, meta, Some(report))
        }
        None => {
            let input = match settings.given_input()? {
                Some(input) => input,
                None => settings.default_input()?,
            };
            (input, Vec::new(), None)
        }
    };
    stages.finish("usage", || match &report {
        Some(r) => format!("{} job records, {} charged", r.records, r.charged),
        None => "no job records: usage as given".into(),
    });

    let (tree, result) = charged_pass(input, report.as_ref(), &settings.params)?;
    stages.finish("fairshare", || {
        format!("{} associations, {} ({})", tree.len(), result.params.algorithm.name(), settings.source())
    });

    let now = match &usage {
        Some(u) => u.now,
        None => super::now_arg(a.usage.now.as_deref())?,
    };
    let queue = match (&a.pending, &conf) {
        (Some(p), Some(c)) => {
            let format = a.pending_format.map(super::pending_format);
            Some(Queue::slurm(c, qos.as_ref(), now, &tree, &result, p, format)?)
        }
        (Some(_), None) => return Err(Error::Usage("--pending needs --slurm-conf (the priority weights)".into())),
        (None, _) => None,
    };
    if let Some(q) = &queue {
        stages.finish("priority", || format!("{} pending jobs, {} priority rows", q.jobs.len(), q.scores.job.len()));
    }

    let roles = [
        ("site", site_file.as_deref()),
        ("slurm_conf", a.usage.slurm_conf.as_deref()),
        ("qos", a.usage.qos.as_deref()),
        ("tree", a.tree.tree.as_deref()),
        ("jobs", a.usage.jobs.as_deref()),
        ("pending", a.pending.as_deref()),
    ];
    let inputs: Vec<(&str, &Path)> = roles.into_iter().filter_map(|(role, p)| Some((role, p?))).collect();
    let inputs = describe_inputs(a.out_dir.is_some(), &inputs)?;
    let mut rows = serde_json::Map::new();
    if let Some(r) = &report {
        rows.insert("job_records".into(), r.records.into());
        rows.insert("job_records_charged".into(), r.charged.into());
        rows.insert("job_records_unmatched".into(), r.unmatched.into());
        rows.insert("job_records_not_started".into(), r.not_started.into());
    }
    // The embedded site's files live in a per-process directory: name them as run.json does, so
    // the data files do not depend on the process.
    let usage_meta = usage_meta.into_iter().chain(settings.what_if_metadata()).collect();
    let outputs = Outputs {
        out_dir: a.out_dir.as_deref(),
        source: &source,
        tree: &tree,
        result: &result,
        now,
        usage_meta,
        rows,
        inputs,
        queue,
    };
    outputs.write(stages)
}

/// What a run writes: sshare's table on stdout, or the run directory.
pub(super) struct Outputs<'a> {
    pub out_dir: Option<&'a Path>,
    pub source: &'a str,
    pub tree: &'a AssocTree,
    pub result: &'a fs::FairShare,
    pub now: i64,
    pub usage_meta: Vec<parquet::file::metadata::KeyValue>,
    /// Row counts of the usage stage, for `run.json`.
    pub rows: serde_json::Map<String, serde_json::Value>,
    /// Every input file's identity for `run.json` ([`describe_inputs`]).
    pub inputs: Vec<serde_json::Value>,
    pub queue: Option<Queue>,
}

impl Outputs<'_> {
    pub(super) fn write(self, mut stages: Stages) -> Result<()> {
        let (tree, result) = (self.tree, self.result);
        let sshare_opts = SshareOptions { long: true, ..SshareOptions::default() };
        let Some(out_dir) = self.out_dir else {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            write_sshare(&mut out, tree, result, &sshare_opts)?;
            out.flush().map_err(|e| Error::io("<stdout>", e))?;
            if stages.verbose {
                eprintln!(
                    "fairshare: {}; add --out-dir DIR for the run directory (Parquet, sprio, run.json)",
                    self.source
                );
            }
            return Ok(());
        };

        let dir = AtomicDir::create(out_dir, DirKind::Run)?;
        let mut meta = metadata(result, self.source);
        meta.extend(self.usage_meta.iter().cloned());
        write_parquet(&dir.path().join("associations.parquet"), &association_batch(tree, result), meta)?;
        let mut text = AtomicFile::create(&dir.path().join("sshare.txt"))?;
        let sshare_opts = SshareOptions { dest: Some(out_dir.join("sshare.txt")), ..sshare_opts };
        write_sshare(&mut text, tree, result, &sshare_opts)?;
        text.commit()?;
        let mut rows = serde_json::Map::new();
        rows.insert("associations".into(), tree.len().into());
        rows.insert("user_associations".into(), tree.user_count().into());
        rows.extend(self.rows);
        if let Some(q) = self.queue {
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
        stages.finish("write", || out_dir.display().to_string());

        let p = result.params;
        let mut parameters = serde_json::json!({
            "algorithm": p.algorithm.name(),
            "dampening": p.dampening,
            "depth_oblivious": p.depth_oblivious,
            "now": self.now,
        });
        for kv in &self.usage_meta {
            let key = kv.key.strip_prefix("fairshare.").filter(|k| *k != "jobs" && *k != "now");
            if let (Some(key), Some(v)) = (key, &kv.value) {
                parameters[key] = typed(v);
            }
        }
        let run_json = serde_json::json!({
            "fairshare_version": env!("CARGO_PKG_VERSION"),
            "source": self.source,
            "parameters": parameters,
            "inputs": self.inputs,
            "rows": rows,
            "timings_s": stages.json(),
            "peak_rss_bytes": stages.memory_json(),
        });
        let path = dir.path().join("run.json");
        let mut f = AtomicFile::create(&path)?;
        let body = serde_json::to_string_pretty(&run_json).map_err(|e| Error::format(&path, e))?;
        f.write_all(body.as_bytes()).and_then(|()| f.write_all(b"\n")).map_err(|e| Error::io(&path, e))?;
        f.commit()?;
        dir.commit()?;
        if stages.verbose {
            eprintln!("fairshare: wrote {}", out_dir.display());
        }
        Ok(())
    }
}
