//! The one integration-test binary (so the dependency graph links once).
//!
//! - `conformance`: the published reference outputs of Slurm and flux-accounting, kept in the
//!   project's own fixture format under `tests/fixtures/*.case`, run through the CLI.
//! - `cli`: the command-line contract (formats, options, Parquet, atomic output, thread counts).
//! - `errors`: bad inputs give an error naming the file and line, never a panic or partial output.
//! - `reference` / `properties`: naive recursive references and property tests of the passes.

mod cli;
mod config_checks;
mod conformance;
mod entitlement;
mod errors;
mod fairness;
mod flux_and_csv;
mod forecast;
mod layout;
mod library;
mod limits;
mod old_slurm;
mod parquet_inputs;
mod plot;
mod priority;
mod prometheus;
mod reliability;
mod report;
mod run;
mod sacct_json;
mod safety;
mod scontrol;
mod shares;
mod sprio_check;
mod sshare_json;
mod streams;
mod tres;
mod usage;

use std::path::Path;
use std::process::{Command, Output};

/// Runs the release binary under test.
pub fn fairshare<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_fairshare")).args(args).output().expect("the fairshare binary runs")
}

/// Runs the release binary with its output captured in files; a run still going after a minute is
/// killed and fails the test (a reader that loops, or work in proportion to a time span, is a bug
/// of its own, not a slow machine).
pub fn fairshare_within_a_minute<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let capture = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (capture.path().join("stdout"), capture.path().join("stderr"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_fairshare"))
        .args(&args)
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{args:?} did not end within a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    Output { status, stdout: std::fs::read(&out_path).unwrap(), stderr: std::fs::read(&err_path).unwrap() }
}

/// Stdout of a successful run; fails the test with stderr otherwise.
pub fn stdout_of(out: &Output) -> String {
    assert!(out.status.success(), "fairshare failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).expect("utf-8 output")
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write test input");
    p
}

/// The fields of a CSV line whose quoted fields hold no quotes (as the example sites' files).
pub fn csv_fields(line: &str) -> Vec<String> {
    let (mut fields, mut field, mut quoted) = (Vec::new(), String::new(), false);
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// Writes `batch` as Parquet in row groups of `rows` rows, as another tool might.
pub fn write_row_groups(path: &Path, batch: &arrow::array::RecordBatch, rows: usize) {
    let props = parquet::file::properties::WriterProperties::builder().set_max_row_group_row_count(Some(rows)).build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}
mod properties;
mod reference;
