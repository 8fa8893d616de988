//! Atomic outputs: write to a temporary file (or directory) beside the target, then rename.
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
    /// Creates `.<name>.tmp-<host>-<pid>` beside `target`.
    ///
    /// # Errors
    /// The directory does not exist or is not writable.
    pub fn create(target: &Path) -> Result<Self> {
        let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name =
            target.file_name().ok_or_else(|| Error::Usage(format!("{} is not a file name", target.display())))?;
        let prefix = temp_prefix(name);
        remove_abandoned(dir, &prefix);
        let temp = dir.join(format!("{prefix}{}", std::process::id()));
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

/// A directory being filled under a temporary name; [`AtomicDir::commit`] puts it in place of the
/// target in one step. Dropping it without committing removes the temporary directory.
pub struct AtomicDir {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
}

impl AtomicDir {
    /// Creates `.<name>.tmp-<host>-<pid>` beside `target` (and `target`'s parent if needed).
    ///
    /// # Errors
    /// The parent cannot be created or is not writable.
    pub fn create(target: &Path) -> Result<Self> {
        let parent = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        let name =
            target.file_name().ok_or_else(|| Error::Usage(format!("{} is not a directory name", target.display())))?;
        let prefix = temp_prefix(name);
        remove_abandoned(parent, &prefix);
        let temp = parent.join(format!("{prefix}{}", std::process::id()));
        if temp.exists() {
            std::fs::remove_dir_all(&temp).map_err(|e| Error::io(&temp, e))?;
        }
        std::fs::create_dir(&temp).map_err(|e| Error::io(&temp, e))?;
        Ok(AtomicDir { target: target.to_path_buf(), temp, committed: false })
    }

    /// Where to write the files (each itself written atomically and synced).
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// Syncs the directory and swaps it with the target: readers see the old run or the new one,
    /// never a mix. The previous run is then removed.
    ///
    /// # Errors
    /// Any I/O error; the target is then untouched.
    pub fn commit(mut self) -> Result<()> {
        File::open(&self.temp).and_then(|d| d.sync_all()).map_err(|e| Error::io(&self.temp, e))?;
        if self.target.exists() {
            exchange(&self.temp, &self.target)?;
            // `temp` now holds the previous run.
            std::fs::remove_dir_all(&self.temp).map_err(|e| Error::io(&self.temp, e))?;
        } else {
            std::fs::rename(&self.temp, &self.target).map_err(|e| Error::io(&self.target, e))?;
        }
        self.committed = true;
        Ok(())
    }
}

/// `.<name>.tmp-<host>-`: the host in the name keeps runs on other machines sharing a file system
/// (NFS, Lustre) apart, so a process only judges leftovers of its own machine.
fn temp_prefix(name: &std::ffi::OsStr) -> String {
    format!(".{}.tmp-{}-", name.to_string_lossy(), host_name())
}

/// This machine's host name (`localhost` when it cannot be read).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().replace(['/', '\0'], "_"))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Removes `<prefix><pid>` entries of `dir` left by processes of this machine that no longer run
/// (a killed run's temporary directory or file); entries of live processes are theirs to finish.
fn remove_abandoned(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(prefix)).and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if pid != std::process::id() as i32 && !process_alive(pid) {
            let path = entry.path();
            let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        }
    }
}

/// Whether a process with this id exists (signal 0 probes without sending anything).
#[cfg(unix)]
fn process_alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists and may be signalled.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_alive(_pid: i32) -> bool {
    true
}

/// Swaps two paths atomically (Linux `renameat2(RENAME_EXCHANGE)`).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes()).map_err(|_| Error::Usage(format!("{} has a NUL byte", p.display())))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: both are valid NUL-terminated paths; the call only reads them.
    let rc =
        unsafe { libc::renameat2(libc::AT_FDCWD, ca.as_ptr(), libc::AT_FDCWD, cb.as_ptr(), libc::RENAME_EXCHANGE) };
    if rc == 0 { Ok(()) } else { Err(Error::io(b, std::io::Error::last_os_error())) }
}

/// Elsewhere: move the old directory aside, then the new one in (a short window without either).
#[cfg(not(target_os = "linux"))]
fn exchange(a: &Path, b: &Path) -> Result<()> {
    let aside = a.with_extension("old");
    std::fs::rename(b, &aside).map_err(|e| Error::io(b, e))?;
    std::fs::rename(a, b).map_err(|e| Error::io(b, e))?;
    std::fs::rename(&aside, a).map_err(|e| Error::io(a, e))
}

impl Drop for AtomicDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.temp);
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

    #[test]
    fn a_directory_replaces_the_previous_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("run");
        let fill = |body: &str, commit: bool| {
            let d = AtomicDir::create(&target).unwrap();
            std::fs::write(d.path().join("a.txt"), body).unwrap();
            if commit {
                d.commit().unwrap();
            }
        };
        fill("first", true);
        assert_eq!(std::fs::read_to_string(target.join("a.txt")).unwrap(), "first");
        fill("abandoned", false);
        assert_eq!(std::fs::read_to_string(target.join("a.txt")).unwrap(), "first");
        // A killed run's leftover (a pid that no longer runs) is cleaned by the next run.
        let stale = dir.path().join(format!("{}2147483646", temp_prefix(std::ffi::OsStr::new("run"))));
        std::fs::create_dir(&stale).unwrap();
        fill("second", true);
        assert!(!stale.exists());
        assert_eq!(std::fs::read_to_string(target.join("a.txt")).unwrap(), "second");
        // Only the run directory is left: no temporary or previous copies.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
