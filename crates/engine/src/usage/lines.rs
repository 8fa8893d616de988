//! Line-oriented job-record files (canonical CSV, `sacct -P`) read in blocks of whole lines.
//!
//! A format supplies a [`LineParser`] built from its header; the file is then cut into blocks of
//! about [`BLOCK`] bytes at line breaks. Reading a file into a sink goes block by block; charging
//! parses a block per thread at a time, each thread taking the next block as it is done, into
//! exact sums: they are a sequential read's, for any thread count or block size.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::charge::{ChargeContext, UsageCharger};
use super::{JobRef, JobSink};
use fairshare_base::error::{Error, Result};
use fairshare_base::read::fields::trim_field;
use fairshare_base::read::source::{self, Input, MAX_LINE_BYTES};

/// Bytes per block (whole lines are added to reach the next line break). A block is gone over
/// four times (its lines counted, checked as UTF-8, cut at line breaks, split into fields): at
/// 4 MiB the blocks of both cores stay in the last-level cache between passes, and the
/// allocator keeps them for the next (64 MiB blocks were slower: docs/performance-log.md).
const BLOCK: usize = 4 << 20;

/// What a format does with one data line.
pub(crate) trait LineParser: Sync {
    /// Per-worker buffers reused from line to line.
    type Scratch: Default + Send;

    /// Parses one non-blank data line (without its line break) and passes the record to `sink`.
    fn parse(
        &self,
        path: &Path,
        line: &str,
        line_no: u64,
        scratch: &mut Self::Scratch,
        sink: &mut JobSink<'_>,
    ) -> Result<()>;
}

/// The first non-blank line of `path` without its line break or a leading UTF-8 byte order mark
/// (spreadsheets write one), the byte offset after it and its 1-based number; `None` for a file of
/// blank lines.
///
/// # Errors
/// The file cannot be read, or a line is too long or not UTF-8.
pub(crate) fn read_header(path: &Path) -> Result<Option<(String, u64, u64)>> {
    let mut reader = std::io::BufReader::new(source::open(path)?);
    let (mut offset, mut line_no) = (0u64, 0u64);
    let mut buf = Vec::new();
    loop {
        let n = source::read_line_bytes(&mut reader, &mut buf, path, line_no + 1)?;
        if n == 0 {
            return Ok(None);
        }
        offset += n as u64;
        line_no += 1;
        let text = std::str::from_utf8(&buf).map_err(|_| Error::input(path, line_no, "not valid UTF-8 text"))?;
        let line = text.trim_end_matches(['\r', '\n']);
        let line = if line_no == 1 { line.trim_start_matches('\u{feff}') } else { line };
        if !line.trim().is_empty() {
            return Ok(Some((line.to_string(), offset, line_no)));
        }
    }
}

/// Blocks of whole lines from `offset` on, each with the number of its first line.
struct Blocks<'p> {
    path: &'p Path,
    file: Input,
    size: usize,
    carry: Vec<u8>,
    next_line: u64,
    done: bool,
}

impl<'p> Blocks<'p> {
    fn new(path: &'p Path, offset: u64, first_line: u64, size: usize) -> Result<Self> {
        let mut file = source::open(path)?;
        file.seek(SeekFrom::Start(offset)).map_err(|e| Error::io(path, e))?;
        // A small file gets a small buffer (one more byte than it has, to see its end).
        let left = file.size().map_or(u64::MAX, |len| len.saturating_sub(offset));
        let size = size.min(usize::try_from(left.saturating_add(1)).unwrap_or(usize::MAX));
        Ok(Blocks { path, file, size, carry: Vec::new(), next_line: first_line, done: false })
    }

    fn next_block(&mut self) -> Result<Option<(Vec<u8>, u64)>> {
        let mut block = std::mem::take(&mut self.carry);
        loop {
            if self.done {
                break;
            }
            let have = block.len();
            block.resize(have + self.size, 0);
            let mut filled = have;
            while filled < block.len() {
                let n = self.file.read(&mut block[filled..]).map_err(|e| Error::io(self.path, e))?;
                if n == 0 {
                    self.done = true;
                    break;
                }
                filled += n;
            }
            block.truncate(filled);
            if self.done {
                break;
            }
            // Keep the partial last line for the next block; a line longer than a block reads on,
            // up to the bound (the block is that one line: earlier ones were returned).
            if let Some(cut) = memchr::memrchr(b'\n', &block[have..]) {
                self.carry = block.split_off(have + cut + 1);
                break;
            }
            if block.len() > MAX_LINE_BYTES {
                return Err(source::line_too_long(self.path, self.next_line));
            }
        }
        if block.is_empty() {
            return Ok(None);
        }
        let first = self.next_line;
        self.next_line += memchr::memchr_iter(b'\n', &block).count() as u64;
        Ok(Some((block, first)))
    }
}

/// Parses the lines of one block.
fn parse_block<P: LineParser>(
    path: &Path,
    parser: &P,
    block: &[u8],
    first_line: u64,
    scratch: &mut P::Scratch,
    sink: &mut JobSink<'_>,
) -> Result<()> {
    // Checked whole (one call instead of one per line); a block that is not UTF-8 is checked line
    // by line again to name the line.
    let whole = std::str::from_utf8(block).ok();
    let ends = memchr::memchr_iter(b'\n', block).chain([block.len()]);
    let lines = ends.scan(0, |from, end| {
        let line = *from..end;
        *from = end + 1;
        Some(line)
    });
    for (line_no, at) in (first_line..).zip(lines) {
        let raw = &block[at.clone()];
        // Checked per line, so the bound does not depend on where blocks are cut.
        if raw.len() - usize::from(raw.last() == Some(&b'\r')) > MAX_LINE_BYTES {
            return Err(source::line_too_long(path, line_no));
        }
        let text = match whole {
            Some(whole) => &whole[at],
            None => std::str::from_utf8(raw).map_err(|_| Error::input(path, line_no, "not valid UTF-8 text"))?,
        };
        let line = text.strip_suffix('\r').unwrap_or(text);
        if !trim_field(line).is_empty() {
            parser.parse(path, line, line_no, scratch, sink)?;
        }
    }
    Ok(())
}

/// Streams the data lines after the header (`offset`, `first_line`) into `sink`, in file order.
///
/// # Errors
/// I/O errors, non-UTF-8 lines and the parser's or sink's errors.
pub(crate) fn read_lines<P: LineParser>(
    path: &Path,
    parser: &P,
    offset: u64,
    first_line: u64,
    sink: &mut JobSink<'_>,
) -> Result<()> {
    let mut blocks = Blocks::new(path, offset, first_line, BLOCK)?;
    let mut scratch = P::Scratch::default();
    while let Some((block, first)) = blocks.next_block()? {
        parse_block(path, parser, &block, first, &mut scratch, sink)?;
    }
    Ok(())
}

/// Charges the data lines after the header a block per thread at a time
/// ([`ChargeContext::charge_parts`]).
///
/// # Errors
/// As [`read_lines`], or the charger's error, for the first failing block.
pub(crate) fn charge_lines<'c, 'a, P: LineParser>(
    path: &Path,
    parser: &P,
    offset: u64,
    first_line: u64,
    ctx: &'c ChargeContext<'a>,
) -> Result<UsageCharger<'c, 'a>> {
    let mut blocks = Blocks::new(path, offset, first_line, BLOCK)?;
    // The bytes of the lines, for progress; a stream's are not known, so its total is what has
    // been charged so far.
    let size = blocks.file.size().map(|s| s.saturating_sub(offset));
    let next = move || {
        let block = blocks.next_block()?;
        Ok(block.map(|(block, first)| {
            let len = block.len() as u64;
            ((block, first), len)
        }))
    };
    ctx.charge_parts(
        next,
        |done| size.unwrap_or(done),
        |(block, first), charger| {
            let mut scratch = P::Scratch::default();
            let mut batch = Batch::default();
            let parsed = parse_block(path, parser, &block, first, &mut scratch, &mut |job| {
                batch.push(job);
                if batch.jobs.len() < BATCH { Ok(()) } else { batch.charge(ctx, charger, path) }
            });
            // The records before a bad line are charged first, so that an error of theirs is the
            // one reported, as when each record was charged as it was parsed.
            batch.charge(ctx, charger, path)?;
            parsed
        },
    )
}

/// Records kept per [`Batch`].
const BATCH: usize = 256;

/// Parsed records kept until a batch of them is charged: their associations are then looked up
/// in one [`ChargeContext::find_batch`], so that the lookups' misses to memory overlap. One record
/// at a time, each lookup waited for the last: a quarter of the samples of a `sacct -P` charge at
/// 10^6 associations. A record's text is copied into `text` (the parser's own buffers are reused
/// from line to line).
#[derive(Default)]
struct Batch {
    text: String,
    jobs: Vec<KeptJob>,
    rows: Vec<u32>,
}

/// A [`JobRef`] whose text lives in its [`Batch`]: user, account, partition, QOS and TRES, in
/// that order, end to end, ending at `ends`.
struct KeptJob {
    job: JobRef<'static>,
    ends: [usize; 5],
}

impl Batch {
    fn push(&mut self, job: &JobRef<'_>) {
        let mut ends = [0; 5];
        for (end, field) in ends.iter_mut().zip([job.user, job.account, job.partition, job.qos, job.tres_alloc]) {
            self.text.push_str(field);
            *end = self.text.len();
        }
        let job = JobRef { user: "", account: "", partition: "", qos: "", tres_alloc: "", ..*job };
        self.jobs.push(KeptJob { job, ends });
    }

    /// Record `k` as it was pushed.
    fn job(&self, k: usize) -> JobRef<'_> {
        let KeptJob { job, ends } = &self.jobs[k];
        let start = self.jobs.get(k.wrapping_sub(1)).map_or(0, |j| j.ends[4]);
        let field = |i: usize| &self.text[if i == 0 { start } else { ends[i - 1] }..ends[i]];
        JobRef { user: field(0), account: field(1), partition: field(2), qos: field(3), tres_alloc: field(4), ..*job }
    }

    /// Charges the records kept, in order, and empties the batch (whatever the outcome).
    fn charge(&mut self, ctx: &ChargeContext<'_>, charger: &mut UsageCharger<'_, '_>, path: &Path) -> Result<()> {
        self.rows.clear();
        let mut rows = std::mem::take(&mut self.rows);
        ctx.find_batch(
            self.jobs.len(),
            |k| {
                let j = self.job(k);
                (j.user, j.account, j.partition)
            },
            &mut rows,
        );
        let charged = (0..self.jobs.len()).try_for_each(|k| charger.charge_at(&self.job(k), path, rows[k], None));
        self.rows = rows;
        self.text.clear();
        self.jobs.clear();
        charged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collects (line number, line) of every non-blank line.
    struct Echo;

    impl LineParser for Echo {
        type Scratch = ();

        fn parse(&self, _: &Path, line: &str, line_no: u64, _: &mut (), sink: &mut JobSink<'_>) -> Result<()> {
            let job = super::super::JobRef {
                job_id: line_no,
                user: line,
                account: "",
                partition: "",
                qos: "",
                start: None,
                end: None,
                tres_alloc: "",
                time_limit: None,
                line: line_no,
                skip: None,
                started_at_submit: false,
            };
            sink(&job)
        }
    }

    #[test]
    fn blocks_cut_at_line_breaks_and_number_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines.txt");
        let long = "x".repeat(40);
        let text = format!("header\na\r\n\nbb\n{long}\nccc\n\n\nd\nlast-without-break");
        std::fs::write(&path, &text).unwrap();
        let expected: Vec<(u64, String)> = text
            .split('\n')
            .enumerate()
            .skip(1)
            .map(|(i, l)| (i as u64 + 1, l.trim_end_matches('\r').to_string()))
            .filter(|(_, l)| !l.is_empty())
            .collect();
        let (header, offset, line_no) = read_header(&path).unwrap().unwrap();
        assert_eq!((header.as_str(), offset, line_no), ("header", 7, 1));
        for size in [1, 3, 7, 64, 1 << 20] {
            let mut blocks = Blocks::new(&path, offset, line_no + 1, size).unwrap();
            let mut got = Vec::new();
            while let Some((block, first)) = blocks.next_block().unwrap() {
                parse_block(&path, &Echo, &block, first, &mut (), &mut |j| {
                    got.push((j.line, j.user.to_string()));
                    Ok(())
                })
                .unwrap();
            }
            assert_eq!(got, expected, "block size {size}");
        }
    }

    #[test]
    fn a_bad_byte_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines.txt");
        std::fs::write(&path, b"h\nok\nbad \xff\n").unwrap();
        let e = read_lines(&path, &Echo, 2, 2, &mut |_| Ok(())).unwrap_err().to_string();
        assert!(e.ends_with("lines.txt:3: not valid UTF-8 text"), "{e}");
    }
}
