//! Atomic output files: write to a temporary file beside the target, then rename.
//!
//! A crash, a kill or an error mid-write leaves the previous file intact and no partial file
//! under the target name.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A file being written under a temporary name; [`AtomicFile::commit`] moves it into place.
/// Dropping it without committing removes the temporary file.
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    file: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Creates `.<name>.tmp-<pid>` beside `target`.
    ///
    /// # Errors
    /// The directory does not exist or is not writable.
    pub fn create(target: &Path) -> Result<Self> {
        let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name =
            target.file_name().ok_or_else(|| Error::Usage(format!("{} is not a file name", target.display())))?;
        let temp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
        let file = File::create(&temp).map_err(|e| Error::io(&temp, e))?;
        Ok(AtomicFile { target: target.to_path_buf(), temp, file: Some(BufWriter::new(file)) })
    }

    /// Flushes, syncs and renames the file into place.
    ///
    /// # Errors
    /// Any I/O error; the target is then untouched.
    pub fn commit(mut self) -> Result<()> {
        let writer = self.file.take().expect("file is present until commit");
        let file = writer.into_inner().map_err(|e| Error::io(&self.temp, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&self.temp, e))?;
        std::fs::rename(&self.temp, &self.target).map_err(|e| Error::io(&self.target, e))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("file is present until commit").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("file is present until commit").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommitted_file_leaves_target_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.txt");
        std::fs::write(&target, "old").unwrap();
        {
            let mut f = AtomicFile::create(&target).unwrap();
            f.write_all(b"new").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }
}
