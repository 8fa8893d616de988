//! Job-record files (canonical CSV, sacct, SWF) and pending queues (CSV, squeue JSON), through the
//! streaming readers: errors, never panics.
#![no_main]

use fairshare_engine::jobs::{PendingFormat, PendingJobs};
use fairshare_engine::usage::swf::SwfOptions;
use fairshare_engine::usage::{JobFormat, for_each_job};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("input");
    std::fs::write(&path, rest).expect("write input");
    match which % 5 {
        0 => drop(for_each_job(&path, JobFormat::Csv, &mut |_| Ok(()))),
        1 => drop(for_each_job(&path, JobFormat::Sacct, &mut |_| Ok(()))),
        2 => drop(for_each_job(&path, JobFormat::Swf(SwfOptions::default()), &mut |_| Ok(()))),
        3 => drop(PendingJobs::read(&path, Some(PendingFormat::Csv), &[])),
        _ => drop(PendingJobs::read(&path, Some(PendingFormat::SqueueJson), &[])),
    }
});
