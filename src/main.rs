//! The `fairshare` command. All the work is in the library; this resolves arguments, runs, and maps
//! the outcome to an exit status.

mod cli;

use std::process::ExitCode;

use clap::Parser;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (mimalloc.h, v2 and v3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// A batch job allocates column after column of the same sizes: keep freed memory for ten seconds
/// before returning it to the kernel, which zeroes it again on the next first touch (on this
/// project's VMs that zeroing was up to half of all cycles, and a one-second delay still returned
/// 3 GB of a 10^7-job `score`). Long runs still give back what they stop using. Ordinary pages.
/// `MIMALLOC_*` environment variables still override both.
fn tune_allocator() {
    // SAFETY: these calls only set defaults in mimalloc's option table.
    unsafe {
        libmimalloc_sys::mi_option_set_default(MI_OPTION_PURGE_DELAY, 10_000);
        libmimalloc_sys::mi_option_set_default(libmimalloc_sys::mi_option_large_os_pages, 0);
    }
}

fn main() -> ExitCode {
    tune_allocator();
    match cli::run(cli::Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if cli::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fairshare: error: {e}");
            ExitCode::FAILURE
        }
    }
}
