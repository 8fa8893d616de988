//! The `fairshare` command. All the work is in the library; this resolves arguments, runs, and maps
//! the outcome to an exit status.

mod cli;

use std::process::ExitCode;

use clap::Parser;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    fairshare::memory::tune_allocator();
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !fairshare::io::is_guarded_reader_panic(info) {
            default_hook(info);
        }
    }));
    match cli::run(cli::Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if cli::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fairshare: error: {e}");
            ExitCode::FAILURE
        }
    }
}
