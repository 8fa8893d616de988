//! Parquet inputs (tree, pending queue, job records): a damaged file is an error, never a crash
//! (the Parquet reader's own panics on damaged metadata are caught and reported).
//! The seeds are small valid files of each kind, so mutations reach the footer, the page headers
//! and the encoded values.
#![no_main]

use fairshare_engine::jobs::{PendingFormat, PendingJobs};
use fairshare_engine::usage::{JobFormat, for_each_job};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // libFuzzer's hook aborts on every panic, even one the reader turns into an error; this one
    // still aborts on any other.
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            if !fairshare_engine::io::is_guarded_reader_panic(info) {
                std::process::abort();
            }
        }))
    });
    let Some((&which, rest)) = data.split_first() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("input.parquet");
    std::fs::write(&path, rest).expect("write input");
    match which % 3 {
        0 => drop(fairshare_engine::io::read_tree(&path, Some(fairshare_engine::io::TreeFormat::Parquet))),
        1 => drop(PendingJobs::read(&path, Some(PendingFormat::Parquet), &[])),
        _ => drop(for_each_job(&path, JobFormat::Parquet, &mut |_| Ok(()))),
    }
});
