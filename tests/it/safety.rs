//! Data safety (issue 16 A): an output replaces only what the engine wrote before, a user's file
//! or directory in the way is refused before any work, a history run adds to an existing history,
//! a failed write leaves no temporary behind, and a replaced output keeps its permissions.

use std::path::{Path, PathBuf};

use super::{fairshare, stdout_of};

const SITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-site");

fn site(name: &str) -> PathBuf {
    Path::new(SITE).join(name)
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn failure(out: &std::process::Output) -> String {
    assert!(!out.status.success(), "expected a refusal, got success");
    assert!(out.stdout.is_empty());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn run_into(dir: &Path) -> std::process::Output {
    fairshare(["run".as_ref(), "--out-dir".as_ref(), dir.as_os_str()])
}

#[test]
fn run_refuses_a_users_directory_and_file_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let user_dir = tmp.path().join("u");
    std::fs::create_dir(&user_dir).unwrap();
    std::fs::write(user_dir.join("notes.txt"), "x").unwrap();
    let err = failure(&run_into(&user_dir));
    assert!(err.contains("u: is not empty and was not written by fairshare (it has no .fairshare-output)"), "{err}");
    assert_eq!(names(&user_dir), ["notes.txt"]);

    let file = tmp.path().join("f");
    std::fs::write(&file, "mine").unwrap();
    let err = failure(&run_into(&file));
    assert!(err.contains("f: exists and is not a directory; refusing to replace it"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    // Nothing was moved aside, so nothing is left for a later run to delete.
    assert_eq!(names(tmp.path()), ["f", "u"]);
}

#[test]
fn run_replaces_its_own_run_but_not_a_file_added_to_it() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    stdout_of(&run_into(&run));
    let first = names(&run);
    assert!(first.contains(&".fairshare-output".to_string()) && first.contains(&"run.json".to_string()));
    stdout_of(&run_into(&run));
    assert_eq!(names(&run), first);
    std::fs::write(run.join("notes.txt"), "x").unwrap();
    let err = failure(&run_into(&run));
    assert!(err.contains("run: holds notes.txt, which fairshare did not write; refusing to replace the directory"));
    assert_eq!(std::fs::read_to_string(run.join("notes.txt")).unwrap(), "x");
    assert_eq!(names(tmp.path()), ["run"]);
}

#[cfg(unix)]
#[test]
fn a_rewritten_output_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    stdout_of(&run_into(&run));
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    stdout_of(&run_into(&run));
    assert_eq!(std::fs::metadata(&run).unwrap().permissions().mode() & 0o777, 0o700);

    let out = tmp.path().join("fs.parquet");
    let compute = || {
        let tree = site("tree.csv");
        fairshare(["compute".as_ref(), "--tree".as_ref(), tree.as_os_str(), "--out".as_ref(), out.as_os_str()])
    };
    stdout_of(&compute());
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o600)).unwrap();
    stdout_of(&compute());
    assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn a_failed_single_file_write_leaves_no_temporary() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("existing_dir");
    std::fs::create_dir(&out).unwrap();
    let tree = site("tree.csv");
    let err = failure(&fairshare([
        "compute".as_ref(),
        "--tree".as_ref(),
        tree.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]));
    assert!(err.contains("existing_dir: is a directory; refusing to replace it with a file"), "{err}");
    assert_eq!(names(tmp.path()), ["existing_dir"]);
    assert!(names(&out).is_empty());
}

/// `usage --at` over the seed site into `out`.
fn history(out: &Path, at: &str) -> std::process::Output {
    let mut args: Vec<std::ffi::OsString> = vec!["usage".into()];
    for (flag, file) in
        [("--tree", "tree.csv"), ("--jobs", "jobs.csv"), ("--slurm-conf", "slurm.conf"), ("--qos", "qos.txt")]
    {
        args.push(flag.into());
        args.push(site(file).into());
    }
    args.extend(["--at".into(), at.into(), "--out".into(), out.as_os_str().to_owned()]);
    fairshare(args)
}

/// The Parquet files of a history, relative to it.
fn instants(hist: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for part in names(hist).into_iter().filter(|n| n.starts_with("date=")) {
        v.extend(names(&hist.join(&part)).into_iter().map(|f| format!("{part}/{f}")));
    }
    v
}

#[test]
fn a_history_run_adds_instants_and_refuses_a_users_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let hist = tmp.path().join("hist");
    stdout_of(&history(&hist, "2026-01-05T00:00:00,2026-01-06T00:00:00"));
    let day6 = hist.join("date=2026-01-06/000000.parquet");
    #[cfg(unix)]
    let before = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&day6).unwrap());
    let out = history(&hist, "2026-01-06T00:00:00,2026-01-07T00:00:00");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    stdout_of(&out);
    assert!(said.contains("added 2 instant(s) to the history in"), "{said}");
    assert!(said.contains("(1 earlier instant(s) kept, 1 replaced)"), "{said}");
    assert_eq!(
        instants(&hist),
        ["date=2026-01-05/000000.parquet", "date=2026-01-06/000000.parquet", "date=2026-01-07/000000.parquet"]
    );
    // The instant computed again was written again (a new file, not the carried one).
    #[cfg(unix)]
    assert_ne!(std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&day6).unwrap()), before);
    // The instant is a UTC timestamp that SQL can name without quoting.
    let file = std::fs::File::open(&day6).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
    let batch = reader.into_iter().next().unwrap().unwrap();
    let as_of = batch.column_by_name("as_of").expect("an as_of column");
    assert_eq!(
        as_of.data_type(),
        &arrow::datatypes::DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("UTC".into()))
    );
    let micros = as_of.as_any().downcast_ref::<arrow::array::TimestampMicrosecondArray>().unwrap().value(0);
    assert_eq!(micros, 1_767_657_600 * 1_000_000);

    // A run directory is not a history, and a history is not a run directory.
    let run = tmp.path().join("run");
    stdout_of(&run_into(&run));
    let err = failure(&history(&run, "2026-01-05T00:00:00"));
    assert!(err.contains("run: is a fairshare run directory; refusing to replace it with a fairshare usage history"));
    let err = failure(&run_into(&hist));
    assert!(err.contains("hist: is a fairshare usage history; refusing to replace it with a fairshare run directory"));

    let user_dir = tmp.path().join("u");
    std::fs::create_dir(&user_dir).unwrap();
    std::fs::write(user_dir.join("notes.txt"), "x").unwrap();
    let err = failure(&history(&user_dir, "2026-01-05T00:00:00"));
    assert!(err.contains("u: is not empty and was not written by fairshare"), "{err}");
    assert_eq!(names(&user_dir), ["notes.txt"]);
}

#[cfg(target_os = "linux")]
#[test]
fn help_into_a_full_disk_is_a_failure() {
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let status = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_fairshare"))
            .args(args)
            .stdout(full())
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap()
    };
    let out = status(&["--help"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdout>: No space left on device"));
    assert!(!status(&["sshare", "--help"]).status.success());
    // Help into a working stdout still succeeds.
    assert!(fairshare(["--help"]).status.success());
}

#[test]
fn parquet_outputs_refuse_stdout_and_other_formats_and_create_parents() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = site("tree.csv");
    let compute = |out: &Path| {
        fairshare(["compute".as_ref(), "--tree".as_ref(), tree.as_os_str(), "--out".as_ref(), out.as_os_str()])
    };
    let err = failure(&compute(Path::new("-")));
    assert!(err.contains("Parquet cannot be written to standard output; give a file name"), "{err}");
    let csv = tmp.path().join("out.csv");
    let err = failure(&compute(&csv));
    assert!(err.contains("names a .csv file, but this output is Parquet; use a .parquet name"), "{err}");
    assert!(names(tmp.path()).is_empty());
    // Missing parents are created, as `run --out-dir` creates them.
    let nested = tmp.path().join("a/b/fs.parquet");
    stdout_of(&compute(&nested));
    assert!(nested.is_file());
    assert_eq!(names(&tmp.path().join("a/b")), ["fs.parquet"]);
}

#[test]
fn a_history_of_too_many_instants_is_refused_before_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("hist");
    let tree = site("tree.csv");
    let jobs = site("jobs.csv");
    let every = |interval: &str, extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["usage".as_ref(), "--tree".as_ref(), tree.as_os_str()];
        args.extend(["--jobs".as_ref(), jobs.as_os_str()]);
        args.extend(
            ["--every", interval, "--from", "2025-01-01T00:00:00", "--to", "2026-01-01T00:00:00"]
                .map(std::ffi::OsStr::new),
        );
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        args.extend(["--out".as_ref(), out.as_os_str()]);
        fairshare(args)
    };
    let err = failure(&every("1m", &[]));
    assert!(
        err.contains(
            "--every 1m from --from to --to is 525601 instants (one Parquet file each), more than --max-instants 10000"
        ),
        "{err}"
    );
    assert!(names(tmp.path()).is_empty());
    let ok = every("1w", &["--max-instants", "60"]);
    assert!(
        String::from_utf8_lossy(&ok.stderr)
            .contains("fairshare: 53 instant(s), 2025-01-01T00:00:00Z to 2025-12-31T00:00:00Z")
    );
    stdout_of(&ok);
}
