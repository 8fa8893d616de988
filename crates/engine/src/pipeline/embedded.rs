//! The embedded default site: the seed site's files (`examples/seed-site`) compiled into the
//! library, so that every front end runs a real site with no input at all.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use fairshare_base::write::atomic::create_private_dir;
use fairshare_base::{Error, Result};

/// The seed site's files.
const FILES: [(&str, &str); 6] = [
    ("site.toml", include_str!("../../../../examples/seed-site/site.toml")),
    ("slurm.conf", include_str!("../../../../examples/seed-site/slurm.conf")),
    ("qos.txt", include_str!("../../../../examples/seed-site/qos.txt")),
    ("tree.csv", crate::io::DEFAULT_TREE_CSV),
    ("jobs.csv", include_str!("../../../../examples/seed-site/jobs.csv")),
    ("pending.csv", include_str!("../../../../examples/seed-site/pending.csv")),
];

/// What outputs call the embedded site.
pub const EMBEDDED: &str = "<embedded default site>";

/// The directory the embedded site was written to in this process, for [`shown`].
static EMBEDDED_DIR: OnceLock<PathBuf> = OnceLock::new();

/// A temporary copy of the embedded site on disk (the readers take paths), removed when dropped.
#[derive(Debug)]
pub struct EmbeddedSite(PathBuf);

impl EmbeddedSite {
    /// Writes the files into a new private directory: a fixed name under the shared temporary
    /// directory could be planted (as a link to the user's files) by another local user.
    ///
    /// # Errors
    /// The temporary directory cannot be written.
    pub fn write() -> Result<Self> {
        let site = EmbeddedSite(create_private_dir(&std::env::temp_dir(), "fairshare-default-site-")?);
        for (name, body) in FILES {
            let path = site.0.join(name);
            std::fs::write(&path, body).map_err(|e| Error::io(&path, e))?;
        }
        let _ = EMBEDDED_DIR.set(site.0.clone());
        Ok(site)
    }

    /// Its site file.
    pub fn site_file(&self) -> PathBuf {
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
pub fn shown(path: &Path) -> String {
    match (EMBEDDED_DIR.get(), path.file_name()) {
        (Some(dir), Some(name)) if path.parent() == Some(dir.as_path()) => {
            format!("{EMBEDDED}/{}", name.to_string_lossy())
        }
        _ => path.display().to_string(),
    }
}
