//! The floor under any charge of a Parquet file of job records: the pages of the columns read,
//! decompressed, and nothing more (no value decoded, no record charged).
//!
//! `fairshare usage` cannot take less time than this on the same threads: every page of the
//! columns it reads must be decompressed. `benches/vs_duckdb.py` runs it beside DuckDB and
//! `fairshare usage` to show how far the charge is from its input's own cost.
//!
//! ```sh
//! cargo run --release --example page_floor -- jobs.parquet job_id   # skip job_id, as the charge does
//! ```
//!
//! Row groups are read on rayon's threads (`RAYON_NUM_THREADS` to choose how many), each opening
//! the file itself, as the charge's workers do.

use std::fs::File;
use std::process::ExitCode;
use std::time::Instant;

use parquet::errors::Result;
use parquet::file::reader::{FileReader, SerializedFileReader};
use rayon::prelude::*;

/// The decompressed bytes of the pages of row group `g` of `path`, skipping the columns `skip`.
fn row_group_pages(path: &str, g: usize, skip: &[String]) -> Result<u64> {
    let reader = SerializedFileReader::new(File::open(path)?)?;
    let group = reader.get_row_group(g)?;
    let mut bytes = 0;
    for c in 0..group.num_columns() {
        if skip.contains(&group.metadata().column(c).column_path().string()) {
            continue;
        }
        let mut pages = group.get_column_page_reader(c)?;
        while let Some(page) = pages.get_next_page()? {
            bytes += page.buffer().len() as u64;
        }
    }
    Ok(bytes)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: page_floor FILE.parquet [SKIPPED_COLUMN]...");
        return ExitCode::from(2);
    };
    let skip: Vec<String> = args.collect();
    let groups = match File::open(&path).map_err(Into::into).and_then(SerializedFileReader::new) {
        Ok(r) => r.metadata().num_row_groups(),
        Err(e) => {
            eprintln!("page_floor: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let began = Instant::now();
    let bytes: Result<u64> = (0..groups).into_par_iter().map(|g| row_group_pages(&path, g, &skip)).sum();
    let took = began.elapsed().as_secs_f64();
    match bytes {
        Ok(bytes) => {
            println!(
                "{bytes} bytes of pages in {groups} row groups decompressed in {took:.3} s on {} threads",
                rayon::current_num_threads()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("page_floor: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}
