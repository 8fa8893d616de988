//! `fairshare run`: the nightly job. Usage → fair-share → priorities for a whole site, written as
//! one run directory that appears atomically, with `run.json` recording what went in and how long
//! each stage took.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::ValueEnum;
use fairshare::fairshare as fs;
use fairshare::output::atomic::{AtomicDir, AtomicFile, DirKind, check_replaceable, create_private_dir};
use fairshare::output::parquet::{association_batch, jobs_batch, jobs_metadata, metadata, write_parquet};
use fairshare::output::sprio::{Format, SprioOptions, write_sprio};
use fairshare::output::sshare::{SshareOptions, write_sshare};
use fairshare::tree::AssocTree;
use fairshare::{Error, Result};
use serde::Deserialize;

use super::args::{AlgoArg, DecayArg, JobsFormatArg, PendingFormatArg, RunArgs, TreeFormatArg};
use super::usage::UsageSettings;
use super::{Queue, TreeSettings, charged_input, site_files};

/// A site description, as `--site FILE` reads it. Every key is optional; flags win.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SiteFile {
    slurm_conf: Option<PathBuf>,
    qos: Option<PathBuf>,
    tree: Option<PathBuf>,
    tree_format: Option<String>,
    jobs: Option<PathBuf>,
    jobs_format: Option<String>,
    pending: Option<PathBuf>,
    pending_format: Option<String>,
    algorithm: Option<String>,
    decay: Option<String>,
    now: Option<String>,
    first_pass: Option<String>,
    half_life: Option<String>,
    timezone: Option<String>,
}

/// The embedded default site: the files of `examples/seed-site`.
const DEFAULT_SITE: [(&str, &str); 6] = [
    ("site.toml", include_str!("../../examples/seed-site/site.toml")),
    ("slurm.conf", include_str!("../../examples/seed-site/slurm.conf")),
    ("qos.txt", include_str!("../../examples/seed-site/qos.txt")),
    ("tree.csv", include_str!("../../examples/seed-site/tree.csv")),
    ("jobs.csv", include_str!("../../examples/seed-site/jobs.csv")),
    ("pending.csv", include_str!("../../examples/seed-site/pending.csv")),
];

/// A temporary copy of the embedded site, removed when dropped.
struct EmbeddedSite(PathBuf);

impl EmbeddedSite {
    /// Writes the files into a new private directory: a fixed name under the shared temporary
    /// directory could be planted (as a link to the user's files) by another local user.
    fn write() -> Result<Self> {
        let site = EmbeddedSite(create_private_dir(&std::env::temp_dir(), "fairshare-default-site-")?);
        for (name, body) in DEFAULT_SITE {
            let path = site.0.join(name);
            std::fs::write(&path, body).map_err(|e| Error::io(&path, e))?;
        }
        Ok(site)
    }
}

impl Drop for EmbeddedSite {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn parse_enum<T: ValueEnum>(value: &str, key: &str, file: &Path, text: &str) -> Result<T> {
    T::from_str(value, true).map_err(|_| {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value())
            .map(|p| p.get_name().to_string())
            .collect();
        // The key's line, for the message: serde has already dropped the spans.
        let line = text.lines().position(|l| l.trim_start().starts_with(key)).map(|i| i as u64 + 1);
        Error::input(file, line, format!("{key} = {value:?}: expected one of {}", names.join(", ")))
    })
}

/// Fills the options the command line left unset from the site file.
fn apply_site(a: &mut RunArgs, file: &Path) -> Result<()> {
    let text = fairshare::io::source::read_config(file)?;
    let site: SiteFile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|s| 1 + text[..s.start].matches('\n').count() as u64);
        Error::input(file, line, e.message().to_string())
    })?;
    let base = file.parent().unwrap_or(Path::new("."));
    let path = |p: Option<PathBuf>| p.map(|p| base.join(p));
    let fill = |slot: &mut Option<PathBuf>, v: Option<PathBuf>| {
        if slot.is_none() {
            *slot = path(v);
        }
    };
    fill(&mut a.usage.slurm_conf, site.slurm_conf);
    fill(&mut a.usage.qos, site.qos);
    fill(&mut a.tree.tree, site.tree);
    fill(&mut a.usage.jobs, site.jobs);
    fill(&mut a.pending, site.pending);
    let text_slot = |slot: &mut Option<String>, v: Option<String>| {
        if slot.is_none() {
            *slot = v;
        }
    };
    text_slot(&mut a.usage.now, site.now);
    text_slot(&mut a.usage.first_pass, site.first_pass);
    text_slot(&mut a.usage.half_life, site.half_life);
    if let Some(tz) = site.timezone.filter(|_| a.usage.timezone == "UTC") {
        a.usage.timezone = tz;
    }
    if let (None, Some(f)) = (a.tree.tree_format, site.tree_format) {
        a.tree.tree_format = Some(parse_enum::<TreeFormatArg>(&f, "tree_format", file, &text)?);
    }
    if let (None, Some(f)) = (a.usage.jobs_format, site.jobs_format) {
        a.usage.jobs_format = Some(parse_enum::<JobsFormatArg>(&f, "jobs_format", file, &text)?);
    }
    if let (None, Some(f)) = (a.pending_format, site.pending_format) {
        a.pending_format = Some(parse_enum::<PendingFormatArg>(&f, "pending_format", file, &text)?);
    }
    if let (None, Some(f)) = (a.tree.algo, site.algorithm) {
        a.tree.algo = Some(parse_enum::<AlgoArg>(&f, "algorithm", file, &text)?);
    }
    if let Some(d) = site.decay {
        a.usage.decay = parse_enum::<DecayArg>(&d, "decay", file, &text)?;
    }
    Ok(())
}

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
pub(super) fn describe_inputs(
    wanted: bool,
    inputs: &[(&str, &Path)],
    embedded: bool,
) -> Result<Vec<serde_json::Value>> {
    if !wanted {
        return Ok(Vec::new());
    }
    inputs
        .iter()
        .map(|&(role, p)| {
            let mut d = describe_input(role, p)?;
            if embedded {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                d["path"] = format!("<embedded default site>/{name}").into();
            }
            Ok(d)
        })
        .collect()
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
        "path": path.display().to_string(),
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
    let nothing_given = a.site.is_none()
        && a.tree.tree.is_none()
        && a.usage.jobs.is_none()
        && a.usage.slurm_conf.is_none()
        && a.pending.is_none();
    let embedded = if nothing_given { Some(EmbeddedSite::write()?) } else { None };
    let site_file = a.site.clone().or_else(|| embedded.as_ref().map(|e| e.0.join("site.toml")));
    if let Some(file) = &site_file {
        apply_site(&mut a, file)?;
    }
    let source = match (&embedded, &a.site) {
        (Some(_), _) => "<embedded default site>".to_string(),
        (None, Some(s)) => s.display().to_string(),
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

    let tree = AssocTree::build(input)?;
    let result = fs::compute(&tree, &settings.params)?;
    stages.finish("fairshare", || {
        format!("{} associations, {} ({})", tree.len(), result.params.algorithm.name(), settings.source())
    });

    let now = match (&usage, &a.usage.now) {
        (Some(u), _) => u.now,
        (None, Some(t)) => fairshare::jobs::parse_timestamp(t).map_err(|m| Error::Usage(format!("--now: {m}")))?,
        (None, None) => {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
        }
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
    let inputs = describe_inputs(a.out_dir.is_some(), &inputs, embedded.is_some())?;
    let mut rows = serde_json::Map::new();
    if let Some(r) = &report {
        rows.insert("job_records".into(), r.records.into());
        rows.insert("job_records_charged".into(), r.charged.into());
        rows.insert("job_records_unmatched".into(), r.unmatched.into());
        rows.insert("job_records_not_started".into(), r.not_started.into());
    }
    // The embedded site's files live in a per-process directory: name them as run.json does, so
    // the data files do not depend on the process.
    let usage_meta = usage_meta
        .into_iter()
        .chain(settings.what_if_metadata())
        .map(|kv| match (&embedded, kv.key.as_str(), &kv.value) {
            (Some(_), "fairshare.jobs", Some(v)) => {
                let name = Path::new(v).file_name().unwrap_or_default().to_string_lossy().into_owned();
                parquet::file::metadata::KeyValue::new(kv.key, format!("<embedded default site>/{name}"))
            }
            _ => kv,
        })
        .collect();
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
                parameters[key] = v.clone().into();
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
