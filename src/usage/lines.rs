//! Line-oriented job-record files (canonical CSV, `sacct -P`) read in blocks of whole lines.
//!
//! A format supplies a [`LineParser`] built from its header; the file is then cut into blocks of
//! about [`BLOCK`] bytes at line breaks. Reading a file into a sink goes block by block; charging
//! parses the blocks of a wave in parallel, one worker per block, and merges the workers in file
//! order. Blocks are cut by size alone, so the merged sums are the same for any thread count.

use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

use rayon::prelude::*;

use super::{ChargeContext, JobSink, UsageCharger};
use crate::error::{Error, Result};

/// Bytes per block (whole lines are added to reach the next line break).
const BLOCK: usize = 64 << 20;

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

/// The first non-blank line of `path` without its line break, the byte offset after it and its
/// 1-based number; `None` for a file of blank lines.
///
/// # Errors
/// The file cannot be read or the line is not UTF-8.
pub(crate) fn read_header(path: &Path) -> Result<Option<(String, u64, u64)>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = std::io::BufReader::new(file);
    let (mut offset, mut line_no) = (0u64, 0u64);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Ok(None);
        }
        offset += n as u64;
        line_no += 1;
        let text = std::str::from_utf8(&buf).map_err(|_| Error::input(path, line_no, "not valid UTF-8 text"))?;
        let line = text.trim_end_matches(['\r', '\n']);
        if !line.trim().is_empty() {
            return Ok(Some((line.to_string(), offset, line_no)));
        }
    }
}

/// Blocks of whole lines from `offset` on, each with the number of its first line.
struct Blocks<'p> {
    path: &'p Path,
    file: std::fs::File,
    carry: Vec<u8>,
    next_line: u64,
    done: bool,
}

impl<'p> Blocks<'p> {
    fn new(path: &'p Path, offset: u64, first_line: u64) -> Result<Self> {
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        file.seek(SeekFrom::Start(offset)).map_err(|e| Error::io(path, e))?;
        Ok(Blocks { path, file, carry: Vec::new(), next_line: first_line, done: false })
    }

    fn next_block(&mut self) -> Result<Option<(Vec<u8>, u64)>> {
        let mut block = std::mem::take(&mut self.carry);
        loop {
            if self.done {
                break;
            }
            let have = block.len();
            block.resize(have + BLOCK, 0);
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
            // Keep the partial last line for the next block; a line longer than a block reads on.
            if let Some(cut) = memchr::memrchr(b'\n', &block[have..]) {
                self.carry = block.split_off(have + cut + 1);
                break;
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
    for (line_no, raw) in (first_line..).zip(block.split(|&b| b == b'\n')) {
        let text = std::str::from_utf8(raw).map_err(|_| Error::input(path, line_no, "not valid UTF-8 text"))?;
        let line = text.strip_suffix('\r').unwrap_or(text);
        if !line.trim().is_empty() {
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
    let mut blocks = Blocks::new(path, offset, first_line)?;
    let mut scratch = P::Scratch::default();
    while let Some((block, first)) = blocks.next_block()? {
        parse_block(path, parser, &block, first, &mut scratch, sink)?;
    }
    Ok(())
}

/// Charges the data lines after the header with one worker per block, in parallel waves, merged
/// in file order.
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
    let mut blocks = Blocks::new(path, offset, first_line)?;
    let wave = rayon::current_num_threads().max(1);
    let mut total = ctx.charger();
    loop {
        let mut batch = Vec::with_capacity(wave);
        while batch.len() < wave {
            match blocks.next_block()? {
                Some(b) => batch.push(b),
                None => break,
            }
        }
        if batch.is_empty() {
            return Ok(total);
        }
        let workers: Vec<Result<UsageCharger<'c, 'a>>> = batch
            .par_iter()
            .map(|(block, first)| {
                let mut charger = ctx.charger();
                let mut scratch = P::Scratch::default();
                parse_block(path, parser, block, *first, &mut scratch, &mut |job| charger.charge(job, path))?;
                Ok(charger)
            })
            .collect();
        for worker in workers {
            total.absorb(worker?);
        }
    }
}
