//! Site files (`--site site.toml`) and the embedded default site.
//!
//! Every command that computes and is given no input at all (no tree, job records, slurm.conf,
//! QOS or pending queue) runs the embedded seed site with its site file's settings, so
//! `fairshare run`, `fairshare sshare` and `fairshare explain USER` all show the same numbers.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::ValueEnum;
use fairshare::output::atomic::create_private_dir;
use fairshare::{Error, Result};
use serde::Deserialize;

use super::args::{AlgoArg, DecayArg, JobsFormatArg, PendingFormatArg, TreeArgs, TreeFormatArg, UsageArgs};

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
    now: Option<toml::Value>,
    first_pass: Option<toml::Value>,
    half_life: Option<String>,
    timezone: Option<String>,
}

/// A time in a site file: text (`"2026-01-08"`, `"now"`), epoch seconds, or a TOML date-time,
/// as the command line would spell it; anything else, or a bad time, names the file and line.
fn site_time(value: toml::Value, key: &str, file: &Path, text: &str) -> Result<String> {
    let spelled = match value {
        toml::Value::String(t) => t,
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        other => {
            return Err(Error::input(
                file,
                key_line(text, key),
                format!(
                    "{key} is a {}: expected a time (\"2026-01-08T00:00:00\", epoch seconds or a TOML date-time)",
                    other.type_str()
                ),
            ));
        }
    };
    fairshare::jobs::parse_time_arg(&spelled)
        .map_err(|m| Error::input(file, key_line(text, key), format!("{key} = {spelled}: {m}")))?;
    Ok(spelled)
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

/// What outputs call the embedded site.
pub(crate) const EMBEDDED: &str = "<embedded default site>";

/// The directory the embedded site was written to in this process, for [`shown`].
static EMBEDDED_DIR: OnceLock<PathBuf> = OnceLock::new();

/// A temporary copy of the embedded site, removed when dropped.
pub(crate) struct EmbeddedSite(PathBuf);

impl EmbeddedSite {
    /// Writes the files into a new private directory: a fixed name under the shared temporary
    /// directory could be planted (as a link to the user's files) by another local user.
    fn write() -> Result<Self> {
        let site = EmbeddedSite(create_private_dir(&std::env::temp_dir(), "fairshare-default-site-")?);
        for (name, body) in DEFAULT_SITE {
            let path = site.0.join(name);
            std::fs::write(&path, body).map_err(|e| Error::io(&path, e))?;
        }
        let _ = EMBEDDED_DIR.set(site.0.clone());
        Ok(site)
    }

    /// Its site file.
    pub(crate) fn site_file(&self) -> PathBuf {
        self.0.join("site.toml")
    }
}

impl Drop for EmbeddedSite {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A path as outputs record it: a file of the embedded site is `<embedded default site>/NAME`,
/// so that outputs do not depend on the per-process directory it was written to.
pub(crate) fn shown(path: &Path) -> String {
    match (EMBEDDED_DIR.get(), path.file_name()) {
        (Some(dir), Some(name)) if path.parent() == Some(dir.as_path()) => {
            format!("{EMBEDDED}/{}", name.to_string_lossy())
        }
        _ => path.display().to_string(),
    }
}

/// The options a site file can fill: the tree and usage flags, and the pending queue of the
/// commands that score one.
pub(crate) struct SiteSlots<'a> {
    pub tree: &'a mut TreeArgs,
    pub usage: &'a mut UsageArgs,
    pub pending: Option<(&'a mut Option<PathBuf>, &'a mut Option<PendingFormatArg>)>,
}

impl SiteSlots<'_> {
    /// Whether no input at all was given.
    fn nothing_given(&self) -> bool {
        self.tree.tree.is_none()
            && self.usage.jobs.is_none()
            && self.usage.slurm_conf.is_none()
            && self.usage.qos.is_none()
            && self.pending.as_ref().is_none_or(|(p, _)| p.is_none())
    }

    /// With no input given, fills the slots from the embedded site (kept on disk while the
    /// returned value lives); otherwise leaves them alone.
    ///
    /// # Errors
    /// The embedded site cannot be written to the temporary directory.
    pub(crate) fn embedded_if_empty(mut self) -> Result<Option<EmbeddedSite>> {
        if !self.nothing_given() {
            return Ok(None);
        }
        let site = EmbeddedSite::write()?;
        self.apply(&site.site_file())?;
        Ok(Some(site))
    }

    /// Fills the options the command line left unset from the site file.
    ///
    /// # Errors
    /// The file cannot be read, is not TOML, or has an unknown key or value (file and line).
    pub(crate) fn apply(&mut self, file: &Path) -> Result<()> {
        let text = fairshare::io::source::read_config(file)?;
        let site: SiteFile = toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|s| 1 + text[..s.start].matches('\n').count() as u64);
            Error::input(file, line, e.message().to_string())
        })?;
        let base = file.parent().unwrap_or(Path::new("."));
        let fill = |slot: &mut Option<PathBuf>, v: Option<PathBuf>| {
            if slot.is_none() {
                *slot = v.map(|p| base.join(p));
            }
        };
        let (tree, usage) = (&mut *self.tree, &mut *self.usage);
        fill(&mut usage.slurm_conf, site.slurm_conf);
        fill(&mut usage.qos, site.qos);
        fill(&mut tree.tree, site.tree);
        fill(&mut usage.jobs, site.jobs);
        let text_slot = |slot: &mut Option<String>, v: Option<String>| {
            if slot.is_none() {
                *slot = v;
            }
        };
        text_slot(&mut usage.now, site.now.map(|t| site_time(t, "now", file, &text)).transpose()?);
        let first_pass = site.first_pass.map(|t| site_time(t, "first_pass", file, &text)).transpose()?;
        text_slot(&mut usage.first_pass, first_pass);
        text_slot(&mut usage.half_life, site.half_life);
        text_slot(&mut usage.timezone, site.timezone);
        if let (None, Some(f)) = (tree.tree_format, site.tree_format) {
            tree.tree_format = Some(parse_enum::<TreeFormatArg>(&f, "tree_format", file, &text)?);
        }
        if let (None, Some(f)) = (usage.jobs_format, site.jobs_format) {
            usage.jobs_format = Some(parse_enum::<JobsFormatArg>(&f, "jobs_format", file, &text)?);
        }
        if let (None, Some(f)) = (tree.algo, site.algorithm) {
            tree.algo = Some(parse_enum::<AlgoArg>(&f, "algorithm", file, &text)?);
        }
        if let (None, Some(d)) = (usage.decay, site.decay) {
            usage.decay = Some(parse_enum::<DecayArg>(&d, "decay", file, &text)?);
        }
        if let Some((pending, format)) = &mut self.pending {
            fill(pending, site.pending);
            if let (None, Some(f)) = (&format, site.pending_format) {
                **format = Some(parse_enum::<PendingFormatArg>(&f, "pending_format", file, &text)?);
            }
        }
        Ok(())
    }
}

fn parse_enum<T: ValueEnum>(value: &str, key: &str, file: &Path, text: &str) -> Result<T> {
    T::from_str(value, true).map_err(|_| {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value())
            .map(|p| p.get_name().to_string())
            .collect();
        Error::input(file, key_line(text, key), format!("{key} = {value:?}: expected one of {}", names.join(", ")))
    })
}

/// The line of `key` in a site file, for messages: serde has already dropped the spans.
fn key_line(text: &str, key: &str) -> Option<u64> {
    text.lines().position(|l| l.trim_start().starts_with(key)).map(|i| i as u64 + 1)
}
