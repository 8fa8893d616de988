//! Atomic outputs: write to a temporary file (or directory) beside the target, then rename.
//!
//! A crash, a kill or an error mid-write leaves the previous file intact and no partial file
//! under the target name. Nothing the engine did not write is ever replaced:
//!
//! - a file target that is a directory, a symbolic link's target, a device or a FIFO is refused;
//! - a directory target must be empty or one this engine wrote, recognised by its manifest
//!   ([`MANIFEST`]), which lists every file the engine put there; a stray file refuses the
//!   replacement instead of being deleted with it;
//! - temporaries get an unpredictable name and are created exclusively without following links,
//!   so a link planted at a guessable name cannot redirect a write;
//! - a replaced output keeps its permissions; a new one follows the umask.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::direct::DirectWriter;
use crate::error::{Error, Result};

/// The manifest of a directory output: its kind on the first line, then every file the engine
/// wrote there, one relative path a line.
pub const MANIFEST: &str = ".fairshare-output";

/// What a directory output holds; recorded in its manifest, so one kind never replaces the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirKind {
    /// `run --out-dir`: one nightly run.
    Run,
    /// `usage --every/--at --out`: one Parquet file per instant, partitioned by date.
    History,
    /// `report --out` and `run --report`: a static web site.
    Report,
}

impl DirKind {
    /// The word on the manifest's first line.
    fn word(self) -> &'static str {
        match self {
            DirKind::Run => "run",
            DirKind::History => "history",
            DirKind::Report => "report",
        }
    }

    fn described(self) -> &'static str {
        match self {
            DirKind::Run => "a fairshare run directory",
            DirKind::History => "a fairshare usage history",
            DirKind::Report => "a fairshare web report",
        }
    }
}

/// A file being written under a temporary name; [`AtomicFile::commit`] moves it into place.
/// Dropping it without a successful commit removes the temporary file. A large file is written
/// past the page cache where the file system allows it (`O_DIRECT`, in whole aligned chunks).
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    file: Option<DirectWriter>,
    committed: bool,
}

impl AtomicFile {
    /// Creates `.<name>.tmp-<host>-<pid>-<random>` beside `target` (and `target`'s parent if
    /// needed), exclusively and without following a link. A regular file already at `target`
    /// lends its permissions to the new one.
    ///
    /// # Errors
    /// `target` is a directory or another non-regular file (refused, untouched), or the directory
    /// cannot be created or written.
    pub fn create(target: &Path) -> Result<Self> {
        let name =
            target.file_name().ok_or_else(|| Error::Usage(format!("{} is not a file name", target.display())))?;
        let previous = check_file_target(target)?;
        let dir = parent_of(target);
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let prefix = temp_prefix(name);
        remove_abandoned(dir, &prefix);
        let (temp, file) = create_exclusive(dir, &prefix)?;
        if let Some(meta) = previous {
            file.set_permissions(meta.permissions()).map_err(|e| Error::io(&temp, e))?;
        }
        Ok(AtomicFile { target: target.to_path_buf(), temp, file: Some(DirectWriter::new(file)), committed: false })
    }

    /// Writes what is left, syncs and renames the file into place.
    ///
    /// # Errors
    /// Any I/O error; the target is then untouched and the temporary file removed.
    pub fn commit(mut self) -> Result<()> {
        let writer = self.file.take().expect("file is present until commit");
        let file = writer.finish().map_err(|e| Error::io(&self.target, e))?;
        file.sync_all().map_err(|e| Error::io(&self.target, e))?;
        std::fs::rename(&self.temp, &self.target).map_err(|e| Error::io(&self.target, e))?;
        self.committed = true;
        Ok(())
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
        if !self.committed {
            drop(self.file.take());
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// The metadata of a regular file at `target` (None when nothing is there).
///
/// A symbolic link is replaced by the new file, never followed; anything else that is not a
/// regular file is the user's and is refused.
fn check_file_target(target: &Path) -> Result<Option<std::fs::Metadata>> {
    match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(target, e)),
        Ok(m) if m.is_file() => Ok(Some(m)),
        Ok(m) if m.file_type().is_symlink() => Ok(None),
        Ok(m) if m.is_dir() => Err(Error::Usage(format!(
            "{}: is a directory; refusing to replace it with a file (give a file name)",
            target.display()
        ))),
        Ok(_) => Err(Error::Usage(format!(
            "{}: is not a regular file (a device, FIFO or socket); refusing to replace it",
            target.display()
        ))),
    }
}

/// A directory being filled under a temporary name; [`AtomicDir::commit`] puts it in place of the
/// target in one step. Dropping it without committing removes the temporary directory.
pub struct AtomicDir {
    target: PathBuf,
    temp: PathBuf,
    kind: DirKind,
    /// The files of the output being replaced (its manifest), when there is one.
    previous: Option<Vec<String>>,
    /// The permissions of the directory being replaced, given to the new one at commit.
    mode: Option<std::fs::Permissions>,
    committed: bool,
}

impl AtomicDir {
    /// Creates `.<name>.tmp-<host>-<pid>-<random>` beside `target` (and `target`'s parent if
    /// needed), after checking that `target` may be replaced ([`check_replaceable`]).
    ///
    /// # Errors
    /// `target` is not replaceable, or the parent cannot be created or is not writable.
    pub fn create(target: &Path, kind: DirKind) -> Result<Self> {
        let previous = check_replaceable(target, kind)?;
        let mode = match previous {
            Some(_) => Some(std::fs::symlink_metadata(target).map_err(|e| Error::io(target, e))?.permissions()),
            None => None,
        };
        let name =
            target.file_name().ok_or_else(|| Error::Usage(format!("{} is not a directory name", target.display())))?;
        let parent = parent_of(target);
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        let prefix = temp_prefix(name);
        remove_abandoned(parent, &prefix);
        let temp = create_dir_exclusive(parent, &prefix, None)?;
        Ok(AtomicDir { target: target.to_path_buf(), temp, kind, previous, mode, committed: false })
    }

    /// Where to write the files (each itself written atomically and synced).
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// Carries the files of the output being replaced over into the new one (hard links, or
    /// copies across devices), so that the commit adds to it; files written afterwards under the
    /// same names replace the carried ones. Returns the relative paths carried.
    ///
    /// # Errors
    /// A previous file cannot be linked or copied.
    pub fn keep_previous(&self) -> Result<Vec<String>> {
        let files = self.previous.as_deref().unwrap_or_default();
        for rel in files {
            let (from, to) = (self.target.join(rel), self.temp.join(rel));
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            }
            // Outputs are only ever replaced by rename, never rewritten in place, so a link
            // shared with the previous directory is never changed through the new one.
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).map_err(|e| Error::io(&from, e))?;
            }
        }
        Ok(files.to_vec())
    }

    /// Writes the manifest, syncs the directory and swaps it with the target: readers see the old
    /// output or the new one, never a mix. The previous output is then removed.
    ///
    /// # Errors
    /// Any I/O error, or the target changed since [`AtomicDir::create`] into something that may
    /// not be replaced; the target is then untouched.
    pub fn commit(mut self) -> Result<()> {
        let files = files_below(&self.temp).map_err(|e| Error::io(&self.temp, e))?;
        let manifest = self.temp.join(MANIFEST);
        let mut body = format!("fairshare {}\n", self.kind.word());
        for (rel, _) in files.iter().filter(|(rel, regular)| *regular && rel != MANIFEST) {
            body.push_str(rel);
            body.push('\n');
        }
        let mut f =
            OpenOptions::new().write(true).create_new(true).open(&manifest).map_err(|e| Error::io(&manifest, e))?;
        f.write_all(body.as_bytes()).and_then(|()| f.sync_all()).map_err(|e| Error::io(&manifest, e))?;
        File::open(&self.temp).and_then(|d| d.sync_all()).map_err(|e| Error::io(&self.temp, e))?;
        if let Some(mode) = self.mode.take() {
            std::fs::set_permissions(&self.temp, mode).map_err(|e| Error::io(&self.temp, e))?;
        }
        // Checked again: the target may have changed during a long run.
        if check_replaceable(&self.target, self.kind)?.is_some() {
            exchange(&self.temp, &self.target)?;
            self.committed = true;
            // `temp` now holds the previous output, which holds only what its manifest lists.
            std::fs::remove_dir_all(&self.temp).map_err(|e| Error::io(&self.temp, e))?;
        } else {
            std::fs::rename(&self.temp, &self.target).map_err(|e| Error::io(&self.target, e))?;
            self.committed = true;
        }
        Ok(())
    }
}

impl Drop for AtomicDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// Whether a directory output of `kind` may replace `target`: `None` when nothing is there,
/// the files of the previous output when it is an empty directory or one of this kind that
/// this engine wrote and nobody added to since.
///
/// # Errors
/// `target` is a link, a file, a directory without a manifest holding anything, an output of
/// the other kind, or holds a file its manifest does not list; the message says which.
pub fn check_replaceable(target: &Path, kind: DirKind) -> Result<Option<Vec<String>>> {
    let refuse = |why: String| Err(Error::Usage(format!("{}: {why}", target.display())));
    let what = kind.described();
    match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(target, e)),
        Ok(m) if m.file_type().is_symlink() => {
            return refuse(format!("is a symbolic link; refusing to replace it with {what} (give a new path)"));
        }
        Ok(m) if !m.is_dir() => {
            return refuse(format!("exists and is not a directory; refusing to replace it with {what}"));
        }
        Ok(_) => {}
    }
    let files = files_below(target).map_err(|e| Error::io(target, e))?;
    if files.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let manifest = target.join(MANIFEST);
    let listed = match std::fs::symlink_metadata(&manifest) {
        Ok(m) if m.is_file() => std::fs::read_to_string(&manifest).map_err(|e| Error::io(&manifest, e))?,
        _ => {
            return refuse(format!(
                "is not empty and was not written by fairshare (it has no {MANIFEST}); refusing to replace it \
                 with {what}: choose a new directory or move this one away"
            ));
        }
    };
    let mut lines = listed.lines();
    let first = lines.next().unwrap_or_default();
    if first != format!("fairshare {}", kind.word()) {
        let other = [DirKind::Run, DirKind::History, DirKind::Report]
            .into_iter()
            .find(|k| first == format!("fairshare {}", k.word()));
        return match other {
            Some(k) => refuse(format!("is {}; refusing to replace it with {what}", k.described())),
            None => refuse(format!("{MANIFEST} is not a fairshare manifest; refusing to replace the directory")),
        };
    }
    let listed: std::collections::HashSet<&str> = lines.collect();
    if let Some((stray, _)) =
        files.iter().find(|(rel, regular)| rel != MANIFEST && (!regular || !listed.contains(rel.as_str())))
    {
        return refuse(format!(
            "holds {stray}, which fairshare did not write; refusing to replace the directory (move {stray} away)"
        ));
    }
    Ok(Some(files.into_iter().map(|(rel, _)| rel).filter(|rel| rel != MANIFEST).collect()))
}

/// Every entry below `dir` that is not a directory, and every empty directory (as `NAME/`), as
/// (`/`-separated relative path, whether it is a regular file), sorted; links are listed, never
/// followed. An empty directory is listed because the engine never leaves one: it is the user's.
fn files_below(dir: &Path) -> std::io::Result<Vec<(String, bool)>> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, bool)>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                let before = out.len();
                walk(&entry.path(), &path, out)?;
                if out.len() == before {
                    out.push((format!("{path}/"), false));
                }
            } else {
                out.push((path, kind.is_file()));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, "", &mut out)?;
    out.sort_unstable();
    Ok(out)
}

/// Creates a new directory `<parent>/<prefix><random>` that nobody else can have planted, with
/// `mode` (Unix) or the umask's default.
///
/// # Errors
/// The parent is missing or not writable.
pub fn create_private_dir(parent: &Path, prefix: &str) -> Result<PathBuf> {
    create_dir_exclusive(parent, prefix, Some(0o700))
}

fn create_dir_exclusive(parent: &Path, prefix: &str, mode: Option<u32>) -> Result<PathBuf> {
    loop {
        let path = parent.join(format!("{prefix}{}", unique_suffix()));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        if let Some(mode) = mode {
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, mode);
        }
        #[cfg(not(unix))]
        let _ = mode;
        match builder.create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(&path, e)),
        }
    }
}

/// Opens a new file `<dir>/<prefix><random>` with `O_EXCL` and `O_NOFOLLOW`: an entry planted
/// under that name (a link above all) makes the open fail instead of redirecting the write.
fn create_exclusive(dir: &Path, prefix: &str) -> Result<(PathBuf, File)> {
    loop {
        let path = dir.join(format!("{prefix}{}", unique_suffix()));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW);
        match options.open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(&path, e)),
        }
    }
}

/// `<pid>-<16 hex digits>`: the pid lets a later run judge whether the owner still runs; the
/// rest is SipHash of a counter under std's randomly keyed `RandomState`, which is unpredictable
/// to other users without a random-number crate.
fn unique_suffix() -> String {
    use std::hash::BuildHasher;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let r = std::collections::hash_map::RandomState::new().hash_one((n, std::time::SystemTime::now()));
    format!("{}-{r:016x}", std::process::id())
}

/// The directory holding `target` (`.` for a bare name).
fn parent_of(target: &Path) -> &Path {
    target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
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

/// Removes `<prefix><pid>-<random>` entries of `dir` left by processes of this machine that no
/// longer run (a killed run's temporary directory or file). Entries of live processes are theirs
/// to finish; links and other users' entries are never touched.
fn remove_abandoned(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else { continue };
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if pid == std::process::id() as i32 || process_alive(pid) || !owned_by_me(&meta) {
            continue;
        }
        let _ = if meta.is_dir() {
            std::fs::remove_dir_all(&path)
        } else if meta.is_file() {
            std::fs::remove_file(&path)
        } else {
            Ok(())
        };
    }
}

/// Whether this process's user owns the entry (a leftover of another user is not ours to clean).
#[cfg(unix)]
fn owned_by_me(meta: &std::fs::Metadata) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    std::os::unix::fs::MetadataExt::uid(meta) == unsafe { libc::geteuid() }
}

#[cfg(not(unix))]
fn owned_by_me(_meta: &std::fs::Metadata) -> bool {
    true
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    fn message(r: Result<impl Sized>) -> String {
        match r {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

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
        assert_eq!(names(dir.path()), ["out.txt"]);
        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn a_file_never_replaces_a_directory_and_a_failed_commit_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.parquet");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep.txt"), "x").unwrap();
        let msg = message(AtomicFile::create(&target));
        assert!(msg.ends_with("out.parquet: is a directory; refusing to replace it with a file (give a file name)"));
        // The directory appears between create and commit: the rename fails, the temp goes.
        std::fs::remove_file(target.join("keep.txt")).unwrap();
        std::fs::remove_dir(&target).unwrap();
        let mut f = AtomicFile::create(&target).unwrap();
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep.txt"), "x").unwrap();
        f.write_all(b"new").unwrap();
        assert!(f.commit().is_err());
        assert_eq!(names(dir.path()), ["out.parquet"]);
        assert_eq!(std::fs::read_to_string(target.join("keep.txt")).unwrap(), "x");
    }

    #[cfg(unix)]
    #[test]
    fn temporaries_are_unpredictable_and_never_follow_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let target = dir.path().join("out");
        // The names an attacker could predict: the old scheme, and this process's prefix.
        let prefix = temp_prefix(std::ffi::OsStr::new("out"));
        for guess in [format!("{prefix}{}", std::process::id()), format!("{prefix}{}-0", std::process::id())] {
            std::os::unix::fs::symlink(&victim, dir.path().join(guess)).unwrap();
        }
        let a = AtomicFile::create(&target).unwrap();
        let b = AtomicFile::create(&dir.path().join("out")).unwrap();
        assert_ne!(a.temp, b.temp);
        drop(b);
        let mut a = a;
        a.write_all(b"written").unwrap();
        a.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "written");
        // An exclusive create fails on an existing link instead of opening its target.
        let link = dir.path().join("planted");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW);
        assert!(options.open(&link).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_output_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out.txt");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut f = AtomicFile::create(&file).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);

        let run = dir.path().join("run");
        AtomicDir::create(&run, DirKind::Run).unwrap().commit().unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        let d = AtomicDir::create(&run, DirKind::Run).unwrap();
        std::fs::write(d.path().join("a.txt"), "x").unwrap();
        d.commit().unwrap();
        assert_eq!(std::fs::metadata(&run).unwrap().permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_directory_replaces_the_previous_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("run");
        let fill = |body: &str, commit: bool| {
            let d = AtomicDir::create(&target, DirKind::Run).unwrap();
            std::fs::write(d.path().join("a.txt"), body).unwrap();
            if commit {
                d.commit().unwrap();
            }
        };
        fill("first", true);
        assert_eq!(std::fs::read_to_string(target.join("a.txt")).unwrap(), "first");
        assert_eq!(std::fs::read_to_string(target.join(MANIFEST)).unwrap(), "fairshare run\na.txt\n");
        fill("abandoned", false);
        assert_eq!(std::fs::read_to_string(target.join("a.txt")).unwrap(), "first");
        // A killed run's leftover (a pid that no longer runs) is cleaned by the next run.
        let stale = dir.path().join(format!("{}2147483646-00", temp_prefix(std::ffi::OsStr::new("run"))));
        std::fs::create_dir(&stale).unwrap();
        fill("second", true);
        assert!(!stale.exists());
        assert_eq!(std::fs::read_to_string(target.join("a.txt")).unwrap(), "second");
        // Only the run directory is left: no temporary or previous copies.
        assert_eq!(names(dir.path()), ["run"]);
    }

    #[test]
    fn only_what_the_engine_wrote_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let shown = target.display().to_string();
        // A user's directory.
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("notes.txt"), "mine").unwrap();
        assert_eq!(
            message(AtomicDir::create(&target, DirKind::Run)),
            format!(
                "{shown}: is not empty and was not written by fairshare (it has no .fairshare-output); refusing \
                 to replace it with a fairshare run directory: choose a new directory or move this one away"
            )
        );
        // An empty directory holds nothing to lose.
        std::fs::remove_file(target.join("notes.txt")).unwrap();
        let d = AtomicDir::create(&target, DirKind::Run).unwrap();
        std::fs::write(d.path().join("run.json"), "{}").unwrap();
        d.commit().unwrap();
        // An empty directory is the user's too, at the top or added to a run directory.
        let other = dir.path().join("other");
        std::fs::create_dir_all(other.join("sub")).unwrap();
        assert!(
            message(AtomicDir::create(&other, DirKind::Run))
                .contains("other: is not empty and was not written by fairshare")
        );
        std::fs::create_dir(target.join("mine")).unwrap();
        assert!(
            message(AtomicDir::create(&target, DirKind::Run)).contains("holds mine/, which fairshare did not write")
        );
        std::fs::remove_dir(target.join("mine")).unwrap();
        std::fs::remove_dir_all(&other).unwrap();
        // A file added to a run directory since.
        std::fs::write(target.join("notes.txt"), "mine").unwrap();
        assert_eq!(
            message(AtomicDir::create(&target, DirKind::Run)),
            format!(
                "{shown}: holds notes.txt, which fairshare did not write; refusing to replace the directory \
                 (move notes.txt away)"
            )
        );
        std::fs::remove_file(target.join("notes.txt")).unwrap();
        // The other kind.
        assert_eq!(
            message(AtomicDir::create(&target, DirKind::History)),
            format!("{shown}: is a fairshare run directory; refusing to replace it with a fairshare usage history")
        );
        // A regular file, before anything is touched.
        let file = dir.path().join("file");
        std::fs::write(&file, "mine").unwrap();
        assert_eq!(
            message(AtomicDir::create(&file, DirKind::Run)),
            format!(
                "{}: exists and is not a directory; refusing to replace it with a fairshare run directory",
                file.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&target, &link).unwrap();
            assert!(message(AtomicDir::create(&link, DirKind::Run)).ends_with(
                "link: is a symbolic link; refusing to replace it with a fairshare run directory (give a new path)"
            ));
        }
        assert_eq!(names(dir.path()).len(), if cfg!(unix) { 3 } else { 2 });
        assert_eq!(std::fs::read_to_string(target.join("run.json")).unwrap(), "{}");
    }

    #[test]
    fn a_history_adds_to_the_previous_one() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("hist");
        let write = |files: &[(&str, &str)], keep: bool| {
            let d = AtomicDir::create(&target, DirKind::History).unwrap();
            if keep {
                d.keep_previous().unwrap();
            }
            for (rel, body) in files {
                let path = d.path().join(rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                let mut f = AtomicFile::create(&path).unwrap();
                f.write_all(body.as_bytes()).unwrap();
                f.commit().unwrap();
            }
            d.commit().unwrap();
        };
        write(&[("date=2026-01-01/000000.parquet", "a"), ("date=2026-01-02/000000.parquet", "b")], true);
        write(&[("date=2026-01-02/000000.parquet", "B"), ("date=2026-01-03/000000.parquet", "c")], true);
        let read = |rel: &str| std::fs::read_to_string(target.join(rel)).unwrap();
        assert_eq!(read("date=2026-01-01/000000.parquet"), "a");
        assert_eq!(read("date=2026-01-02/000000.parquet"), "B");
        assert_eq!(read("date=2026-01-03/000000.parquet"), "c");
        assert_eq!(
            read(MANIFEST),
            "fairshare history\ndate=2026-01-01/000000.parquet\ndate=2026-01-02/000000.parquet\n\
             date=2026-01-03/000000.parquet\n"
        );
        write(&[("date=2026-01-04/000000.parquet", "d")], false);
        assert_eq!(read(MANIFEST), "fairshare history\ndate=2026-01-04/000000.parquet\n");
    }
}
