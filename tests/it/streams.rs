//! Streams: pipes, FIFOs, standard input (`-`) and endless inputs such as /dev/zero.
//!
//! Every run here has a deadline: a reader that waits on a stream forever, or reads an endless
//! one, is killed and fails its test instead of hanging the suite.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::{fairshare, stdout_of, write_file};

/// Longer than any of these runs takes (well under a second each), short enough that an endless
/// read cannot fill the machine's memory first.
const DEADLINE: Duration = Duration::from_secs(20);

/// The seed site's file `name`.
fn seed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-site").join(name)
}

/// The seed site's `now`.
const NOW: &str = "2026-01-08T00:00:00";

/// Command-line words.
fn words(parts: &[&dyn AsRef<OsStr>]) -> Vec<OsString> {
    parts.iter().map(|p| p.as_ref().to_os_string()).collect()
}

/// Runs the binary with `args`, `stdin` written to its standard input (closed when `None`); killed
/// and failed after [`DEADLINE`].
fn run(args: &[OsString], stdin: Option<Vec<u8>>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fairshare"))
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the fairshare binary runs");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("piped stdin");
        // A reader that stops early closes the pipe: not this test's failure.
        std::thread::spawn(move || pipe.write_all(&bytes));
    }
    let pid = child.id();
    let (done, waited) = mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match waited.recv_timeout(DEADLINE) {
        Ok(out) => out.expect("the run's output"),
        Err(_) => {
            // SAFETY: kill(2) of the child, which has not been waited for.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("fairshare {args:?} did not end within {DEADLINE:?}");
        }
    }
}

/// Stderr of a run that must fail.
fn failure(out: &Output) -> String {
    assert!(!out.status.success(), "expected a failure, got: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `sshare` on the seed tree, as the reference output.
fn seed_sshare() -> String {
    stdout_of(&run(&words(&[&"sshare", &"--tree", &seed("tree.csv")]), None))
}

/// A FIFO at `path` whose writer, on a thread of its own, sends `bytes` once a reader opens it.
fn fifo(path: &Path, bytes: Vec<u8>) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
    let path = path.to_path_buf();
    // Not joined: without a reader the open would wait forever, and the run's deadline decides.
    std::thread::spawn(move || std::fs::OpenOptions::new().write(true).open(&path)?.write_all(&bytes));
}

#[test]
fn a_tree_piped_from_shares_is_read_from_standard_input() {
    // The README's what-if: `fairshare shares --format tree-csv | fairshare sshare --tree -`.
    let tree =
        stdout_of(&fairshare(words(&[&"shares", &"--hardware", &seed("hardware.toml"), &"--format", &"tree-csv"])));
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(dir.path(), "tree.csv", &tree);
    let from_file = stdout_of(&fairshare(words(&[&"sshare", &"--tree", &file])));
    assert!(from_file.contains("astro_lab"), "{from_file}");
    assert_eq!(stdout_of(&run(&words(&[&"sshare", &"--tree", &"-"]), Some(tree.into_bytes()))), from_file);
}

#[test]
fn every_single_input_can_be_standard_input() {
    let inputs = [("--tree", "tree.csv"), ("--jobs", "jobs.csv"), ("--slurm-conf", "slurm.conf"), ("--qos", "qos.txt")];
    let sshare = |from_stdin: &str| -> Vec<OsString> {
        let mut args = words(&[&"sshare", &"--now", &NOW]);
        for (flag, name) in inputs {
            args.push(flag.into());
            args.push(if flag == from_stdin { "-".into() } else { seed(name).into() });
        }
        args
    };
    let expected = stdout_of(&run(&sshare(""), None));
    for (flag, name) in inputs {
        let out = run(&sshare(flag), Some(std::fs::read(seed(name)).unwrap()));
        assert_eq!(stdout_of(&out), expected, "{flag} -");
    }

    let sprio = |pending: &Path| {
        let (tree, conf, qos) = (seed("tree.csv"), seed("slurm.conf"), seed("qos.txt"));
        words(&[
            &"sprio",
            &"--tree",
            &tree,
            &"--pending",
            &pending,
            &"--slurm-conf",
            &conf,
            &"--qos",
            &qos,
            &"--now",
            &NOW,
        ])
    };
    let expected = stdout_of(&run(&sprio(&seed("pending.csv")), None));
    let piped = run(&sprio(Path::new("-")), Some(std::fs::read(seed("pending.csv")).unwrap()));
    assert_eq!(stdout_of(&piped), expected, "--pending -");

    // A site file, with absolute paths so that it means the same from a file and from stdin.
    let dir = tempfile::tempdir().unwrap();
    let mut site = format!("now = \"{NOW}\"\n");
    for (key, name) in [("slurm_conf", "slurm.conf"), ("qos", "qos.txt"), ("tree", "tree.csv"), ("jobs", "jobs.csv")] {
        site += &format!("{key} = {:?}\n", seed(name).display().to_string());
    }
    let site_file = write_file(dir.path(), "site.toml", &site);
    let fair_run = |site: &Path, out: &str| words(&[&"run", &"--site", &site, &"--out-dir", &dir.path().join(out)]);
    stdout_of(&run(&fair_run(&site_file, "a"), None));
    stdout_of(&run(&fair_run(Path::new("-"), "b"), Some(site.into_bytes())));
    let table = |d: &str| std::fs::read_to_string(dir.path().join(d).join("sshare.txt")).unwrap();
    assert_eq!(table("a"), table("b"));
    let run_json = std::fs::read_to_string(dir.path().join("b/run.json")).unwrap();
    assert!(run_json.contains("\"path\": \"-\""), "{run_json}");
}

#[test]
fn only_one_input_can_be_standard_input() {
    let out = run(&words(&[&"sshare", &"--tree", &"-", &"--jobs", &"-", &"--now", &NOW]), Some(b"x\n".to_vec()));
    let e = failure(&out);
    assert!(e.contains("standard input (`-`) is given to --tree and --jobs: only one input can read it"), "{e}");
}

#[test]
fn a_parquet_tree_can_come_from_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("tree.parquet");
    stdout_of(&fairshare(words(&[&"compute", &"--tree", &seed("tree.csv"), &"--out", &parquet])));
    let out = run(&words(&[&"sshare", &"--tree", &"-"]), Some(std::fs::read(&parquet).unwrap()));
    assert_eq!(stdout_of(&out), seed_sshare());
}

#[test]
fn a_fifo_is_read_once_whatever_the_readers_need() {
    let dir = tempfile::tempdir().unwrap();
    // The tree: sniffed for its format, then read.
    let tree = dir.path().join("tree.fifo");
    fifo(&tree, std::fs::read(seed("tree.csv")).unwrap());
    assert_eq!(stdout_of(&run(&words(&[&"sshare", &"--tree", &tree]), None)), seed_sshare());

    // Job records: sniffed, a header read, then blocks from the header's end (a seek).
    let jobs = dir.path().join("jobs.fifo");
    fifo(&jobs, std::fs::read(seed("jobs.csv")).unwrap());
    let sshare = |jobs: &Path| words(&[&"sshare", &"--tree", &seed("tree.csv"), &"--jobs", &jobs, &"--now", &NOW]);
    assert_eq!(stdout_of(&run(&sshare(&jobs), None)), stdout_of(&run(&sshare(&seed("jobs.csv")), None)));
}

#[test]
fn endless_inputs_stop_at_a_bound_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let (zero, tree, conf) = ("/dev/zero", seed("tree.csv"), seed("slurm.conf"));
    let include = write_file(dir.path(), "slurm.conf", "ClusterName=c\nInclude /dev/zero\n");
    let line = "/dev/zero:1: a line longer than 1 MiB";
    let config = "/dev/zero: larger than 64 MiB: this is not a configuration file";
    let cases = [
        (words(&[&"sshare", &"--tree", &zero]), "/dev/zero:1: cannot tell the tree format"),
        (words(&[&"sshare", &"--tree", &zero, &"--tree-format", &"assoc-csv"]), line),
        (words(&[&"sshare", &"--tree", &zero, &"--tree-format", &"parquet"]), "/dev/zero: not Parquet"),
        (words(&[&"sshare", &"--tree", &tree, &"--jobs", &zero, &"--now", &NOW]), line),
        (words(&[&"sshare", &"--tree", &tree, &"--slurm-conf", &zero]), config),
        (words(&[&"sshare", &"--tree", &tree, &"--slurm-conf", &include]), config),
        (words(&[&"sshare", &"--tree", &tree, &"--qos", &zero]), config),
        (words(&[&"sprio", &"--tree", &tree, &"--pending", &zero, &"--slurm-conf", &conf]), line),
    ];
    for (args, want) in cases {
        let e = failure(&run(&args, None));
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

#[test]
fn a_flux_database_from_a_pipe_is_refused_with_a_message() {
    let args = words(&[&"sshare", &"--tree", &"-", &"--tree-format", &"flux-db"]);
    let e = failure(&run(&args, Some(b"SQLite format 3\0".to_vec())));
    let want = "-: a flux-accounting database is read in place and cannot come from standard input or a pipe";
    assert!(e.contains(want), "{e}");
}
