//! The `fairshare` command. All the work is in the library; this resolves arguments, runs, and maps
//! the outcome to an exit status.

mod cli;

use std::process::ExitCode;

use clap::Parser;
use std::io::Write;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    fairshare_base::memory::tune_allocator();
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !fairshare_engine::io::is_guarded_reader_panic(info) {
            default_hook(info);
        }
    }));
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(e) => return clap_exit(&e),
    };
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if cli::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fairshare: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints clap's help, version or usage error. Unlike `clap::Error::exit`, a failed write (help
/// into a full disk) is a failure; a closed pipe is not.
fn clap_exit(e: &clap::Error) -> ExitCode {
    let printed = e.print().and_then(|()| std::io::stdout().flush());
    match printed {
        Err(w) if w.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("fairshare: error: <stdout>: {w}");
            ExitCode::FAILURE
        }
        _ => ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(1)),
    }
}
