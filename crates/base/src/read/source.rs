//! Opening an input path: `-` for standard input, a regular file in place, and anything else (a
//! pipe from `<(…)`, a FIFO, a character device such as /dev/zero) read once, as far as a reader
//! asks, and kept.
//!
//! Readers open an input more than once: format detection sniffs the first bytes, a CSV reader
//! reads its header and then its blocks, Parquet reads the footer and then each row group, `run`
//! hashes its inputs for run.json. A regular file allows that; a stream gives its bytes once (a
//! second open of a FIFO even waits for another writer). So the first open of a stream registers
//! it, and every byte read from it is appended to an anonymous temporary file (the spool); each
//! open reads the spool first and the stream where the spool ends. The stream is read no further
//! than a reader asks, so the readers' bounds stop an endless input early: a line longer than
//! [`MAX_LINE_BYTES`], a configuration file larger than [`MAX_CONFIG_BYTES`], a Parquet stream
//! without Parquet's magic bytes.

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::parallel::lock;

/// The path that means standard input.
pub const STDIN: &str = "-";

/// The largest configuration file read (slurm.conf and each file it includes, a QOS dump, a site
/// or hardware TOML): real ones are kilobytes, and each is held whole in memory.
pub const MAX_CONFIG_BYTES: u64 = 64 << 20;

/// The longest line of a line-oriented input (job records, pending jobs, text trees): real lines
/// are under a kilobyte, and a line is held whole while it is parsed.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Bytes read from a stream at a time when it is drained.
const CHUNK: usize = 1 << 20;

/// A stream and the spool of what has been read from it.
struct Stream {
    source: Box<dyn Read + Send>,
    spool: File,
    /// Bytes in the spool.
    len: u64,
    /// The stream has ended: the spool holds all of it.
    ended: bool,
}

impl Stream {
    /// Reads from byte `pos` into `buf`: from the spool, or else from the stream (spooling it).
    fn read_at(&mut self, pos: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.extend_to(pos)?;
        if pos < self.len {
            let n = usize::try_from(self.len - pos).map_or(buf.len(), |left| left.min(buf.len()));
            self.spool.seek(SeekFrom::Start(pos))?;
            return self.spool.read(&mut buf[..n]);
        }
        self.pull(buf)
    }

    /// Reads more of the stream into `buf` and appends it to the spool; 0 at its end.
    fn pull(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ended || buf.is_empty() {
            return Ok(0);
        }
        let n = loop {
            match self.source.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => break other?,
            }
        };
        if n == 0 {
            self.ended = true;
            return Ok(0);
        }
        self.spool.seek(SeekFrom::End(0))?;
        self.spool
            .write_all(&buf[..n])
            .map_err(|e| io::Error::new(e.kind(), format!("spooling the stream to a temporary file (TMPDIR): {e}")))?;
        self.len += n as u64;
        Ok(n)
    }

    /// Spools the stream until it holds `pos` bytes (`u64::MAX`: all of it) or ends.
    fn extend_to(&mut self, pos: u64) -> io::Result<()> {
        let mut buf = Vec::new();
        while self.len < pos && !self.ended {
            buf.resize(CHUNK, 0);
            self.pull(&mut buf)?;
        }
        Ok(())
    }
}

type Shared = Arc<Mutex<Stream>>;

/// Whether `path` is read as a stream: `-`, or an existing path that is neither a regular file
/// nor a directory.
pub fn is_stream(path: &Path) -> bool {
    path.as_os_str() == STDIN || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The registered stream of `path`, registering it on its first open; `None` when `path` is not
/// a stream (then `File::open` reads it, or reports why it cannot).
fn stream(path: &Path) -> Result<Option<Shared>> {
    static STREAMS: OnceLock<Mutex<Vec<(PathBuf, Shared)>>> = OnceLock::new();
    let mut streams = lock(STREAMS.get_or_init(Mutex::default));
    if let Some((_, s)) = streams.iter().find(|(p, _)| p == path) {
        return Ok(Some(s.clone()));
    }
    if !is_stream(path) {
        return Ok(None);
    }
    let source: Box<dyn Read + Send> = if path.as_os_str() == STDIN {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(path).map_err(|e| Error::io(path, e))?)
    };
    let spool = tempfile::tempfile().map_err(|e| {
        Error::io(path, io::Error::new(e.kind(), format!("cannot create a temporary file to hold the stream: {e}")))
    })?;
    let s = Arc::new(Mutex::new(Stream { source, spool, len: 0, ended: false }));
    streams.push((path.to_path_buf(), s.clone()));
    Ok(Some(s))
}

/// An open input: a regular file, or a reader of a stream's spool and then the stream.
pub struct Input {
    inner: Inner,
}

enum Inner {
    File(File),
    Stream { stream: Shared, pos: u64 },
}

impl Input {
    /// The input's size in bytes when known: a regular file's, or a stream's once it has ended.
    pub fn size(&self) -> Option<u64> {
        match &self.inner {
            Inner::File(f) => f.metadata().ok().map(|m| m.len()),
            Inner::Stream { stream, .. } => {
                let s = lock(stream);
                s.ended.then_some(s.len)
            }
        }
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.inner {
            Inner::File(f) => f.read(buf),
            Inner::Stream { stream, pos } => {
                let n = lock(stream).read_at(*pos, buf)?;
                *pos += n as u64;
                Ok(n)
            }
        }
    }
}

impl Seek for Input {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match &mut self.inner {
            Inner::File(f) => f.seek(to),
            Inner::Stream { stream, pos } => {
                let base = match to {
                    SeekFrom::Start(p) => Some(p),
                    SeekFrom::Current(d) => pos.checked_add_signed(d),
                    SeekFrom::End(d) => {
                        let mut s = lock(stream);
                        s.extend_to(u64::MAX)?;
                        s.len.checked_add_signed(d)
                    }
                };
                *pos = base.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
                Ok(*pos)
            }
        }
    }
}

/// Opens `path` for reading from its first byte; `-` is standard input.
///
/// # Errors
/// The file cannot be opened, or a stream's spool cannot be created.
pub fn open(path: &Path) -> Result<Input> {
    let inner = match stream(path)? {
        Some(stream) => Inner::Stream { stream, pos: 0 },
        None => Inner::File(File::open(path).map_err(|e| Error::io(path, e))?),
    };
    Ok(Input { inner })
}

/// The first `n` bytes of `path` (fewer if it is shorter), for format detection: a pipe may give
/// them a few at a time.
///
/// # Errors
/// As [`open`], or a read error.
pub fn head(path: &Path, n: usize) -> Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    open(path)?.take(n as u64).read_to_end(&mut head).map_err(|e| Error::io(path, e))?;
    Ok(head)
}

/// A file handle of its own (its own position, for readers on several threads) on all the bytes of
/// `path`, for formats read out of order (Parquet). A stream must begin with `magic`, the magic
/// bytes of the `format`, checked before the rest is read, so that an endless stream of anything
/// else stops at once.
///
/// # Errors
/// As [`open`]; a stream that does not begin with `magic`, or whose spool cannot be reopened.
pub fn file(path: &Path, format: &str, magic: &[u8]) -> Result<File> {
    let Some(stream) = stream(path)? else {
        return File::open(path).map_err(|e| Error::io(path, e));
    };
    if !head(path, magic.len())?.starts_with(magic) {
        return Err(Error::input(path, None, format!("not {format}: it does not begin with {format}'s magic bytes")));
    }
    let mut s = lock(&stream);
    s.extend_to(u64::MAX).map_err(|e| Error::io(path, e))?;
    reopen(&s.spool).map_err(|e| Error::io(path, e))
}

/// A new open file description of the spool, with its own position (a `try_clone` would share it).
#[cfg(target_os = "linux")]
fn reopen(spool: &File) -> io::Result<File> {
    use std::os::fd::AsRawFd;
    File::open(format!("/proc/self/fd/{}", spool.as_raw_fd()))
}

#[cfg(not(target_os = "linux"))]
fn reopen(_: &File) -> io::Result<File> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "this format is read from a stream only on Linux: save it to a file",
    ))
}

/// An error unless `path` is a regular file, for inputs a library reads in place by name: `what`
/// says which.
///
/// # Errors
/// `path` is `-` or a stream.
pub fn require_file(path: &Path, what: &str) -> Result<()> {
    if is_stream(path) {
        return Err(Error::input(
            path,
            None,
            format!("{what} is read in place and cannot come from standard input or a pipe: save it to a file"),
        ));
    }
    Ok(())
}

/// The error for a line longer than [`MAX_LINE_BYTES`].
pub fn line_too_long(path: &Path, line: u64) -> Error {
    Error::input(
        path,
        line,
        format!("a line longer than {} MiB: this is not a text input of the expected format", MAX_LINE_BYTES >> 20),
    )
}

/// Reads one line, with its line break, into `buf` (cleared first); 0 at the end of the input.
///
/// # Errors
/// A read error, or a line longer than [`MAX_LINE_BYTES`] (line `line_no`).
pub fn read_line_bytes(reader: &mut impl BufRead, buf: &mut Vec<u8>, path: &Path, line_no: u64) -> Result<usize> {
    buf.clear();
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        let (used, ended) = match memchr::memchr(b'\n', available) {
            Some(i) => (i + 1, true),
            None => (available.len(), available.is_empty()),
        };
        buf.extend_from_slice(&available[..used]);
        reader.consume(used);
        if buf.len() - usize::from(buf.last() == Some(&b'\n')) > MAX_LINE_BYTES {
            return Err(line_too_long(path, line_no));
        }
        if ended {
            return Ok(buf.len());
        }
    }
}

/// [`read_line_bytes`] into a `String`.
///
/// # Errors
/// As [`read_line_bytes`], or a line that is not UTF-8.
pub fn read_line(reader: &mut impl BufRead, buf: &mut String, path: &Path, line_no: u64) -> Result<usize> {
    let mut bytes = std::mem::take(buf).into_bytes();
    let n = read_line_bytes(reader, &mut bytes, path, line_no)?;
    *buf = String::from_utf8(bytes).map_err(|_| Error::input(path, line_no, "not valid UTF-8 text"))?;
    Ok(n)
}

/// Reads all of `path` as text, with no line longer than `max_line` bytes when given (checked as
/// it is read, so an endless input without line breaks stops early).
///
/// # Errors
/// As [`open`]; a read error, a line too long, or text that is not UTF-8, naming the line.
pub fn read_text(path: &Path, max_line: Option<usize>) -> Result<String> {
    let mut input = open(path)?;
    let mut bytes = Vec::new();
    if let Some(size) = input.size() {
        bytes.reserve(usize::try_from(size).unwrap_or(0).saturating_add(1));
    }
    // Bytes since the last line break.
    let mut open_line = 0usize;
    loop {
        let start = bytes.len();
        let n = input.by_ref().take(CHUNK as u64).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        let Some(max) = max_line else { continue };
        // A chunk is no longer than `max`, so only a line that crosses chunks can exceed it.
        let chunk = &bytes[start..];
        if let (Some(first), Some(last)) = (memchr::memchr(b'\n', chunk), memchr::memrchr(b'\n', chunk)) {
            if open_line + first > max {
                return Err(line_too_long(path, 1 + memchr::memchr_iter(b'\n', &bytes[..start]).count() as u64));
            }
            open_line = chunk.len() - last - 1;
        } else {
            open_line += chunk.len();
        }
        if open_line > max {
            return Err(line_too_long(path, 1 + memchr::memchr_iter(b'\n', &bytes).count() as u64));
        }
    }
    text(path, bytes)
}

/// Reads a whole line-oriented text input (a file, `-` or a pipe), naming it in the error.
pub fn read_to_string(path: &Path) -> Result<String> {
    read_text(path, Some(MAX_LINE_BYTES))
}

/// Reads all of the configuration file `path` as text.
///
/// # Errors
/// As [`open`]; a read error, a file larger than [`MAX_CONFIG_BYTES`], or text that is not UTF-8.
pub fn read_config(path: &Path) -> Result<String> {
    let input = open(path)?;
    let mut bytes = Vec::new();
    if let Some(size) = input.size() {
        bytes.reserve(usize::try_from(size.min(MAX_CONFIG_BYTES)).unwrap_or(0) + 1);
    }
    input.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(Error::input(
            path,
            None,
            format!("larger than {} MiB: this is not a configuration file", MAX_CONFIG_BYTES >> 20),
        ));
    }
    text(path, bytes)
}

/// `bytes` as a `String`, or an error naming the line of the first bad byte.
fn text(path: &Path, bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + memchr::memchr_iter(b'\n', &e.as_bytes()[..e.utf8_error().valid_up_to()]).count() as u64;
        Error::input(path, line, "not valid UTF-8 text")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream whose bytes come `step` at a time, as a pipe's may.
    fn stream_of(bytes: &'static [u8], step: usize) -> Shared {
        struct Trickle(&'static [u8], usize);
        impl Read for Trickle {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let spool = tempfile::tempfile().unwrap();
        Arc::new(Mutex::new(Stream { source: Box::new(Trickle(bytes, step)), spool, len: 0, ended: false }))
    }

    #[test]
    fn every_open_of_a_stream_reads_it_from_the_start() {
        let stream = stream_of(b"header\nline 2\nline 3\n", 3);
        let open = || Input { inner: Inner::Stream { stream: stream.clone(), pos: 0 } };
        let mut first = [0u8; 4];
        open().read_exact(&mut first).unwrap();
        assert_eq!(&first, b"head");
        assert_eq!(open().size(), None, "unknown until the stream ends");
        let mut skipped = open();
        skipped.seek(SeekFrom::Start(7)).unwrap();
        let mut rest = String::new();
        skipped.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "line 2\nline 3\n");
        let mut all = String::new();
        open().read_to_string(&mut all).unwrap();
        assert_eq!(all, "header\nline 2\nline 3\n");
        assert_eq!(open().size(), Some(21));
        assert_eq!(open().seek(SeekFrom::End(-2)).unwrap(), 19);
    }

    #[test]
    fn lines_are_bounded() {
        let path = Path::new("in.txt");
        let long = vec![b'x'; MAX_LINE_BYTES + 1];
        let mut buf = Vec::new();
        let text = [b"ok\n".as_slice(), &long, b"\n"].concat();
        let mut reader = io::BufReader::with_capacity(1000, text.as_slice());
        assert_eq!(read_line_bytes(&mut reader, &mut buf, path, 1).unwrap(), 3);
        let e = read_line_bytes(&mut reader, &mut buf, path, 2).unwrap_err().to_string();
        assert!(e.starts_with("in.txt:2: a line longer than 1 MiB"), "{e}");
        let exact = [vec![b'x'; MAX_LINE_BYTES], b"\r".to_vec()].concat();
        let mut reader = io::BufReader::new(&exact[1..]);
        assert_eq!(read_line_bytes(&mut reader, &mut buf, path, 1).unwrap(), MAX_LINE_BYTES);
        assert_eq!(read_line_bytes(&mut reader, &mut buf, path, 2).unwrap(), 0);
    }

    #[test]
    fn whole_texts_are_bounded_by_line_or_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let long = "y".repeat(MAX_LINE_BYTES + 1);
        for (text, line) in [
            (format!("a\nb\n{long}\nc\n"), 3),
            (format!("a\n{long}"), 2),
            (format!("{}\n{long}", "z\n".repeat(CHUNK)), CHUNK as u64 + 2),
        ] {
            std::fs::write(&path, &text).unwrap();
            let e = read_text(&path, Some(MAX_LINE_BYTES)).unwrap_err().to_string();
            assert!(e.contains(&format!("t.csv:{line}: a line longer than 1 MiB")), "{e}");
            assert_eq!(read_text(&path, None).unwrap(), text);
        }
        std::fs::write(&path, format!("a\n{}\nb", "y".repeat(MAX_LINE_BYTES))).unwrap();
        assert!(read_text(&path, Some(MAX_LINE_BYTES)).is_ok());
        std::fs::write(&path, b"a\nb\xff\n").unwrap();
        assert!(read_text(&path, None).unwrap_err().to_string().ends_with("t.csv:2: not valid UTF-8 text"));

        std::fs::File::create(&path).unwrap().set_len(MAX_CONFIG_BYTES + 1).unwrap();
        let e = read_config(&path).unwrap_err().to_string();
        assert!(e.ends_with("t.csv: larger than 64 MiB: this is not a configuration file"), "{e}");
    }
}
