//! Refusing inputs that cannot fit in memory, with a message, before reading them.
//!
//! A tree or a queue is held in memory whole; past what the machine has, the kernel would kill the
//! process part-way (no message, no output). The readers estimate what an input needs from its
//! size (or its Parquet row count) and stop early with an error instead. The estimates are the
//! measured costs per row, rounded up (see the README's memory figures). [`tune_allocator`] sets
//! how mimalloc, the binary's allocator, returns memory, and turns off transparent huge pages.

use std::path::Path;

use crate::error::{Error, Result};

/// Bytes per association the tree stages hold at their peak (records, Arrow columns, results).
pub const BYTES_PER_ASSOCIATION: u64 = 400;
/// Bytes per pending job the scoring stages hold at their peak (columns, scores, output).
pub const BYTES_PER_PENDING_JOB: u64 = 320;

/// Memory this process may use: `FAIRSHARE_MEMORY_LIMIT` (bytes) when set, else the kernel's
/// `MemAvailable` plus free swap; `None` when neither is known.
pub fn available() -> Option<u64> {
    if let Some(limit) = std::env::var("FAIRSHARE_MEMORY_LIMIT").ok().and_then(|v| v.trim().parse().ok()) {
        return Some(limit);
    }
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = |key: &str| -> Option<u64> {
        info.lines().find_map(|l| l.strip_prefix(key))?.trim().trim_end_matches("kB").trim().parse().ok()
    };
    Some((kb("MemAvailable:")? + kb("SwapFree:").unwrap_or(0)) * 1024)
}

/// An error naming `path` when reading it as `what` would need more than [`available`] bytes.
///
/// # Errors
/// The estimate `need` exceeds what is available.
pub fn ensure_fits(path: &Path, what: &str, need: u64) -> Result<()> {
    match available() {
        Some(avail) if need > avail => Err(Error::input(
            path,
            None,
            format!(
                "{what} needs about {:.1} GB of memory and {:.1} GB is available: split the input, \
                 or run on a larger machine (FAIRSHARE_MEMORY_LIMIT=<bytes> overrides the available figure)",
                need as f64 / 1e9,
                avail as f64 / 1e9
            ),
        )),
        _ => Ok(()),
    }
}

/// The size of a file, 0 when it cannot be read (the reader then reports the real error).
pub(crate) fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// mimalloc's `mi_option_purge_delay` (mimalloc.h, v2 and v3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc's `mi_option_allow_thp` (mimalloc.h, v3).
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// A batch job allocates column after column of the same sizes: keep freed memory for ten seconds
/// before returning it to the kernel, which zeroes it again on the next first touch (on this
/// project's VMs that zeroing was up to half of all cycles, and a one-second delay still returned
/// 3 GB of a 10^7-job `score`). Long runs still give back what they stop using.
///
/// Ordinary pages, and no transparent huge pages for the process (unless `MIMALLOC_ALLOW_THP` is
/// set): the passes reuse their memory, so huge pages saved no measurable time there, while a
/// fresh huge page costs far more to fault in than its small pages when the host has taken the
/// memory back (a VM after a few idle seconds): a 10^7-association `compute` took 6.3-6.9 s with
/// them and 3.9-5.1 s without, a 10^7-job `score` 5.4 s and 4.0-4.3 s.
///
/// `MIMALLOC_*` environment variables still override these defaults. The binary and the benches
/// call this first, so the benches measure what the binary does; without mimalloc as the global
/// allocator only the huge-page setting applies.
pub fn tune_allocator() {
    // SAFETY: these calls only set defaults in mimalloc's option table.
    unsafe {
        libmimalloc_sys::mi_option_set_default(MI_OPTION_PURGE_DELAY, 10_000);
        libmimalloc_sys::mi_option_set_default(libmimalloc_sys::mi_option_large_os_pages, 0);
    }
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // mimalloc reads this option when it starts, before `main`: what it already mapped keeps
        // its huge-page advice, which the process-wide switch below overrides (as mimalloc itself
        // does for `MIMALLOC_ALLOW_THP=0`).
        // SAFETY: sets an option in mimalloc's table.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0) };
        // SAFETY: `prctl(PR_SET_THP_DISABLE)` only changes this process's page policy; its failure
        // (an old kernel) leaves the default.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
}
