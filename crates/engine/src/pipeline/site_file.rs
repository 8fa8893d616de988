//! Site files (`site.toml`): where a site's inputs are and how it computes, so that a nightly job
//! is one path. Every key is optional; paths are relative to the file. Front ends merge it under
//! their own options (flag, then site file, then default).
//!
//! It lives beside the pipeline rather than in [`crate::config`]: it names the formats and decay
//! models of the readers and the usage stage, which themselves read `config`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::usage::Decay;
use crate::config::SlurmConfFormat;
use crate::io::TreeFormat;
use crate::jobs::PendingFormat;
use crate::pass::Algorithm;
use crate::usage::JobFormat;
use fairshare_base::named::Named;
use fairshare_base::{Error, Result};

/// The file as TOML holds it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    slurm_conf: Option<PathBuf>,
    slurm_conf_format: Option<String>,
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

/// A site file, read and checked: paths resolved against the file's directory, names parsed.
#[derive(Debug, Default)]
pub struct SiteFile {
    /// slurm.conf (or scontrol's output).
    pub slurm_conf: Option<PathBuf>,
    /// What `slurm_conf` holds.
    pub slurm_conf_format: Option<SlurmConfFormat>,
    /// The `sacctmgr show qos -P` dump.
    pub qos: Option<PathBuf>,
    /// The association tree.
    pub tree: Option<PathBuf>,
    /// The tree's format.
    pub tree_format: Option<TreeFormat>,
    /// The job records.
    pub jobs: Option<PathBuf>,
    /// The job records' format (an SWF trace with the group → user layout).
    pub jobs_format: Option<JobFormat>,
    /// The pending queue.
    pub pending: Option<PathBuf>,
    /// The pending queue's format.
    pub pending_format: Option<PendingFormat>,
    /// The fair-share algorithm.
    pub algorithm: Option<Algorithm>,
    /// The decay model.
    pub decay: Option<Decay>,
    /// The evaluation time, as spelled (checked to be a time the command line reads).
    pub now: Option<String>,
    /// The first decay pass, as spelled (checked).
    pub first_pass: Option<String>,
    /// PriorityDecayHalfLife, as spelled.
    pub half_life: Option<String>,
    /// The timezone of reset boundaries.
    pub timezone: Option<String>,
}

impl SiteFile {
    /// Reads and checks `file`.
    ///
    /// # Errors
    /// The file cannot be read, is not TOML, or has an unknown key or a bad value (file and line).
    pub fn read(file: &Path) -> Result<Self> {
        let text = fairshare_base::read::source::read_config(file)?;
        let raw: Raw = toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|s| 1 + text[..s.start].matches('\n').count() as u64);
            Error::input(file, line, e.message().to_string())
        })?;
        let base = file.parent().unwrap_or(Path::new("."));
        let path = |p: Option<PathBuf>| p.map(|p| base.join(p));
        Ok(SiteFile {
            slurm_conf: path(raw.slurm_conf),
            qos: path(raw.qos),
            tree: path(raw.tree),
            jobs: path(raw.jobs),
            pending: path(raw.pending),
            now: raw.now.map(|t| site_time(t, "now", file, &text)).transpose()?,
            first_pass: raw.first_pass.map(|t| site_time(t, "first_pass", file, &text)).transpose()?,
            half_life: raw.half_life,
            timezone: raw.timezone,
            slurm_conf_format: raw
                .slurm_conf_format
                .map(|v| by_name(&v, "slurm_conf_format", file, &text))
                .transpose()?,
            tree_format: raw.tree_format.map(|v| by_name(&v, "tree_format", file, &text)).transpose()?,
            jobs_format: raw.jobs_format.map(|v| by_name(&v, "jobs_format", file, &text)).transpose()?,
            algorithm: raw.algorithm.map(|v| by_name(&v, "algorithm", file, &text)).transpose()?,
            decay: raw.decay.map(|v| by_name(&v, "decay", file, &text)).transpose()?,
            pending_format: raw.pending_format.map(|v| by_name(&v, "pending_format", file, &text)).transpose()?,
        })
    }
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
    fairshare_base::read::time::parse_time_arg(&spelled)
        .map_err(|m| Error::input(file, key_line(text, key), format!("{key} = {spelled}: {m}")))?;
    Ok(spelled)
}

/// The choice named `value` (any case).
fn by_name<T: Named>(value: &str, key: &str, file: &Path, text: &str) -> Result<T> {
    T::CHOICES.iter().find(|c| c.name.eq_ignore_ascii_case(value)).map(|c| c.value).ok_or_else(|| {
        Error::input(file, key_line(text, key), format!("{key} = {value:?}: expected one of {}", T::names()))
    })
}

/// The line of `key` in a site file, for messages: serde has already dropped the spans.
fn key_line(text: &str, key: &str) -> Option<u64> {
    text.lines().position(|l| l.trim_start().starts_with(key)).map(|i| i as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(text: &str) -> Result<SiteFile> {
        let dir = std::env::temp_dir().join(format!("fairshare-site-file-{}-{}", std::process::id(), text.len()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("site.toml");
        std::fs::write(&file, text).unwrap();
        let site = SiteFile::read(&file);
        std::fs::remove_dir_all(&dir).unwrap();
        site
    }

    #[test]
    fn paths_are_relative_to_the_file_and_names_are_parsed() {
        let s = site(
            "tree = \"t.csv\"\nalgorithm = \"Classic\"\ndecay = \"flux-clean\"\nnow = 1767830400\n\
             slurm_conf_format = \"scontrol\"\n",
        )
        .unwrap();
        assert_eq!(s.tree.unwrap().file_name().unwrap(), "t.csv");
        assert_eq!(s.slurm_conf_format, Some(SlurmConfFormat::Scontrol));
        assert_eq!(s.algorithm, Some(Algorithm::Classic));
        assert_eq!(s.decay, Some(Decay::FluxClean));
        assert_eq!(s.now.as_deref(), Some("1767830400"));
        assert!(s.jobs.is_none());
    }

    #[test]
    fn a_bad_name_lists_the_good_ones_at_its_line() {
        let e = site("# site\njobs_format = \"xml\"\n").unwrap_err().to_string();
        assert!(
            e.ends_with(":2: jobs_format = \"xml\": expected one of csv, parquet, sacct, sacct-json, swf, flux-db"),
            "{e}"
        );
    }

    #[test]
    fn a_time_of_the_wrong_type_is_refused() {
        let e = site("now = 1.5\n").unwrap_err().to_string();
        assert!(e.contains(":1: now is a float: expected a time"), "{e}");
    }
}
