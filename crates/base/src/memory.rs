//! Refusing inputs that cannot fit in memory, with a message, before reading them.
//!
//! A tree or a queue is held in memory whole; past what the machine has, the kernel would kill the
//! process part-way (no message, no output). The readers estimate what an input needs from its
//! size (or its Parquet row count) and stop early with an error instead. The estimates are the
//! measured costs per row, rounded up (docs/performance-log.md, "Peak memory per stage").
//! [`tune_allocator`] sets how mimalloc, the binary's allocator, returns memory, and turns off
//! transparent huge pages; `huge_vec` and `prefetch` serve tables read or written at random.

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
pub fn file_size(path: &Path) -> u64 {
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
/// set) but where `advise_huge_pages` asks for them: the passes reuse their memory, so huge
/// pages saved no measurable time there, while a fresh huge page costs far more to fault in than
/// its small pages when the host has taken the memory back (a VM after a few idle seconds;
/// docs/performance-log.md has the figures). Tables read or written at random all through a long charge are the
/// exception (a miss per access, each also a miss in the TLB with small pages); on kernels before
/// Linux 6.18, which cannot keep advised ranges out of the process-wide switch, they go without.
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
        // mimalloc reads this option when it starts, before `main`: what it maps from now on is
        // not advised for huge pages, and what it already mapped is taken back below.
        // SAFETY: sets an option in mimalloc's table.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0) };
        #[cfg(target_os = "linux")]
        thp_only_where_advised();
    }
}

/// Turns transparent huge pages off for the process but for the ranges [`advise_huge_pages`]
/// advises from now on (Linux 6.18's `PR_THP_DISABLE_EXCEPT_ADVISED`), or off altogether on an
/// older kernel.
#[cfg(target_os = "linux")]
fn thp_only_where_advised() {
    // `<linux/prctl.h>`'s flag for `PR_SET_THP_DISABLE`'s third argument; not in `libc` yet.
    const EXCEPT_ADVISED: libc::c_ulong = 1 << 1;
    let disable = |flags: libc::c_ulong| {
        // SAFETY: `prctl(PR_SET_THP_DISABLE)` only changes this process's page policy.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1 as libc::c_ulong, flags, 0 as libc::c_ulong, 0 as libc::c_ulong)
        }
    };
    if disable(EXCEPT_ADVISED) != 0 {
        // An older kernel refuses the flag; a failure of this one too leaves the default.
        disable(0);
        return;
    }
    // mimalloc advised its first arena for huge pages when it mapped it, before `main` (its
    // `allow_thp` is on until set above): the whole heap would be advised. Take that back.
    for (from, to) in huge_page_advised_mappings() {
        // SAFETY: the range is a whole mapping of this process; `MADV_NOHUGEPAGE` only sets how
        // its pages are backed, never what they hold.
        unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_NOHUGEPAGE) };
    }
}

/// The address ranges of this process's mappings advised for huge pages (`hg` in their
/// `/proc/self/smaps` flags); none where the file cannot be read.
#[cfg(target_os = "linux")]
fn huge_page_advised_mappings() -> Vec<(usize, usize)> {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else { return Vec::new() };
    let mut advised = Vec::new();
    let mut range = None;
    for line in smaps.lines() {
        if let Some(flags) = line.strip_prefix("VmFlags:") {
            advised.extend(range.take().filter(|_| flags.split_whitespace().any(|f| f == "hg")));
        } else if let Some(r) = mapping_range(line) {
            range = Some(r);
        }
    }
    advised
}

/// The address range of a mapping on its first line of `/proc/self/smaps` (`from-to perms ...`,
/// in hexadecimal); `None` for the lines of its fields.
#[cfg(target_os = "linux")]
fn mapping_range(line: &str) -> Option<(usize, usize)> {
    let (from, to) = line.split_whitespace().next()?.split_once('-')?;
    usize::from_str_radix(from, 16).ok().zip(usize::from_str_radix(to, 16).ok())
}

/// Asks for transparent huge pages under the whole 2 MiB pages of `buf`'s spare capacity, before
/// they are filled ([`tune_allocator`] keeps them off elsewhere). For a table that a long
/// charge writes at random: with 4 KiB pages each write there also misses the TLB. Only advice:
/// nothing changes where the system has no huge pages or refuses it.
///
/// The pages past `buf`'s values are dropped first: memory the allocator hands out again keeps
/// the small pages it was first touched on, and advice alone does not change pages already
/// there (the two 32 MB sums of a 10^6-association charge were on small pages).
pub fn advise_huge_pages<T>(buf: &Vec<T>) {
    const HUGE: usize = 2 << 20;
    let start = buf.as_ptr() as usize;
    // Past the values `buf` holds: only pages that hold none are dropped.
    let filled = start + buf.len() * size_of::<T>();
    let (from, to) = (filled.next_multiple_of(HUGE), (start + buf.capacity() * size_of::<T>()) / HUGE * HUGE);
    #[cfg(target_os = "linux")]
    if from < to {
        // SAFETY: the range lies within `buf`'s allocation, past its values: dropping its pages
        // loses nothing; `MADV_HUGEPAGE` only sets how they are backed.
        unsafe {
            libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_DONTNEED);
            libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (from, to);
}

/// Asks the CPU to bring the line of `p` into cache; a hint, never a fault.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it does not fault whatever the address, and reads nothing.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// An empty vector with room for `capacity` values on transparent huge pages where the system
/// gives them ([`advise_huge_pages`]), for a table filled next and then looked up or added to at
/// random all through a charge.
pub fn huge_capacity<T>(capacity: usize) -> Vec<T> {
    let v = Vec::with_capacity(capacity);
    advise_huge_pages(&v);
    v
}

/// `len` copies of `value` on huge pages ([`huge_capacity`]), written across the cores: the
/// kernel zeroes each fresh page as it is first touched, which was most of the time of making
/// a 10^6-pair lookup table (128 MB) on one core.
pub fn huge_vec<T: Clone + Send + Sync>(len: usize, value: T) -> Vec<T> {
    let mut v = huge_capacity(len);
    crate::parallel::extend_column(&mut v, len, |_| value.clone());
    v
}

#[cfg(test)]
mod tests {
    /// The advice lands on the buffer's whole 2 MiB pages (the test binary keeps the system's
    /// allocator, which advises nothing itself).
    #[cfg(target_os = "linux")]
    #[test]
    fn huge_pages_are_advised_for_the_buffer() {
        let buf: Vec<u64> = Vec::with_capacity(3 << 20);
        let (start, end) = (buf.as_ptr() as usize, buf.as_ptr() as usize + 3 * (8 << 20));
        let (first, last) = (start.next_multiple_of(2 << 20), end / (2 << 20) * (2 << 20) - 1);
        let covered = |at: usize| super::huge_page_advised_mappings().iter().any(|&(f, t)| (f..t).contains(&at));
        assert!(!covered(first), "not advised before");
        super::advise_huge_pages(&buf);
        assert!(covered(first) && covered(last), "the first and the last whole huge page are advised");
    }

    /// A table made for random access holds its values on advised pages.
    #[cfg(target_os = "linux")]
    #[test]
    fn huge_vecs_hold_their_values_on_advised_pages() {
        let table = super::huge_vec(3 << 20, 7u64);
        assert_eq!((table.len(), table[0], table[(3 << 20) - 1]), (3 << 20, 7, 7));
        let middle = table.as_ptr() as usize + (12 << 20);
        assert!(super::huge_page_advised_mappings().iter().any(|&(f, t)| (f..t).contains(&middle)));
    }

    /// Spare capacity touched before the advice (memory the allocator hands out again) is still
    /// filled on huge pages, and the values before it are kept. Skipped where the system gives
    /// no huge pages.
    #[cfg(target_os = "linux")]
    #[test]
    fn pages_touched_before_the_advice_become_huge() {
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        if !thp.contains("[always]") && !thp.contains("[madvise]") {
            // Not a pass: the system gives no huge pages, so nothing here was observed.
            eprintln!(
                "SKIPPED pages_touched_before_the_advice_become_huge: transparent huge pages are off \
                 (/sys/kernel/mm/transparent_hugepage/enabled: {:?})",
                thp.trim()
            );
            return;
        }
        let mut buf: Vec<u64> = Vec::with_capacity(8 << 20);
        // SAFETY: within the capacity; every byte pattern is a u64.
        unsafe { std::ptr::write_bytes(buf.as_mut_ptr(), 1, buf.capacity()) };
        buf.extend(0..1000);
        super::advise_huge_pages(&buf);
        buf.resize(buf.capacity(), 7);
        assert!(buf[..1000].iter().copied().eq(0..1000) && buf[1000..].iter().all(|&v| v == 7));
        let at = buf.as_ptr() as usize + (32 << 20);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        let mut huge_kb = None;
        for line in smaps.lines() {
            if let Some((from, to)) = super::mapping_range(line) {
                inside = (from..to).contains(&at);
            } else if inside && let Some(kb) = line.strip_prefix("AnonHugePages:") {
                huge_kb = kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok();
            }
        }
        assert!(huge_kb.is_some_and(|kb| kb >= 2048), "{huge_kb:?} kB of huge pages");
    }
}
