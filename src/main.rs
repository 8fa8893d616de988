//! The `fairshare` command. All the work is in the library; this resolves arguments, runs, and maps
//! the outcome to an exit status.

mod cli;

use std::process::ExitCode;

use clap::Parser;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    fairshare::memory::tune_allocator();
    match cli::run(cli::Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if cli::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fairshare: error: {e}");
            ExitCode::FAILURE
        }
    }
}
