//! scontrol's output in place of a slurm.conf: every command prints the same with either file,
//! the format is detected or named (flag or site file), and a malformed line is an error at its
//! line.

use std::path::{Path, PathBuf};

use super::{fairshare, stdout_of, write_file};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// `command` on the `slurm_jobs` tree, queue and QOS dump and the `scontrol` fixture's job
/// records, with `conf` as the site's slurm.conf, then `extra`.
fn run_with(command: &str, conf: &Path, extra: &[&str]) -> std::process::Output {
    let now = std::fs::read_to_string(fixture("slurm_jobs/now")).unwrap();
    let jobs_flag = if command == "sprio" { "--job-records" } else { "--jobs" };
    let mut args: Vec<String> = vec![command.into()];
    for (flag, path) in [
        ("--tree", fixture("slurm_jobs/tree.csv")),
        ("--qos", fixture("slurm_jobs/qos.txt")),
        (jobs_flag, fixture("scontrol/jobs.csv")),
        ("--slurm-conf", conf.to_path_buf()),
    ] {
        args.extend([flag.to_string(), path.display().to_string()]);
    }
    if command == "sprio" {
        args.extend(["--pending".to_string(), fixture("slurm_jobs/pending.csv").display().to_string()]);
    }
    args.extend(["--now".to_string(), now.trim().to_string()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    fairshare(&args)
}

#[test]
fn scontrol_output_gives_what_its_slurm_conf_gives() {
    let (conf, scontrol) = (fixture("scontrol/slurm.conf"), fixture("scontrol/scontrol.txt"));
    for (command, extra) in [("sprio", &["-l"][..]), ("sprio", &["-n"]), ("sprio", &["-w"]), ("sshare", &["-l", "-P"])]
    {
        let from_conf = stdout_of(&run_with(command, &conf, extra));
        assert!(from_conf.lines().count() > 1, "{command} {extra:?}: {from_conf}");
        assert_eq!(stdout_of(&run_with(command, &scontrol, extra)), from_conf, "{command} {extra:?}");
    }

    // The usage stage (half-life, calc period, enforcement, billing weights): the same Parquet bytes.
    let dir = tempfile::tempdir().unwrap();
    let usage = |conf: &Path, out: &str| {
        let out = dir.path().join(out);
        stdout_of(&run_with("usage", conf, &["--out", out.to_str().unwrap()]));
        std::fs::read(out).unwrap()
    };
    assert_eq!(usage(&scontrol, "scontrol.parquet"), usage(&conf, "conf.parquet"));

    // `none` in both: no charge at job end, another usage, still the same from either file.
    let conf_none = write_file(
        dir.path(),
        "slurm.conf",
        &std::fs::read_to_string(&conf).unwrap().replace("=associations,limits,qos", "=none"),
    );
    let scontrol_none = write_file(
        dir.path(),
        "scontrol.txt",
        &std::fs::read_to_string(&scontrol).unwrap().replace("= associations,limits,qos", "= none"),
    );
    let none = usage(&conf_none, "conf_none.parquet");
    assert_ne!(none, usage(&conf, "conf_again.parquet"), "AccountingStorageEnforce=none changes the usage");
    assert_eq!(usage(&scontrol_none, "scontrol_none.parquet"), none);
}

#[test]
fn the_format_can_be_named_by_flag_or_site_file() {
    let (conf, scontrol) = (fixture("scontrol/slurm.conf"), fixture("scontrol/scontrol.txt"));
    let expected = stdout_of(&run_with("sprio", &conf, &["-l"]));
    let named = run_with("sprio", &scontrol, &["-l", "--slurm-conf-format", "scontrol"]);
    assert_eq!(stdout_of(&named), expected);
    let as_conf = run_with("sprio", &scontrol, &["-l", "--slurm-conf-format", "slurm-conf"]);
    assert!(!as_conf.status.success());
    assert_eq!(
        String::from_utf8_lossy(&as_conf.stderr).trim_end(),
        format!(
            "fairshare: error: {}:1: cannot parse \"Configuration data as of 2026-01-08T00:00:00\": expected Key=Value",
            scontrol.display()
        )
    );

    let dir = tempfile::tempdir().unwrap();
    let site = write_file(
        dir.path(),
        "site.toml",
        &format!(
            "slurm_conf = {:?}\nslurm_conf_format = \"scontrol\"\ntree = {:?}\nqos = {:?}\npending = {:?}\n",
            scontrol.display().to_string(),
            fixture("slurm_jobs/tree.csv").display().to_string(),
            fixture("slurm_jobs/qos.txt").display().to_string(),
            fixture("slurm_jobs/pending.csv").display().to_string(),
        ),
    );
    let now = std::fs::read_to_string(fixture("slurm_jobs/now")).unwrap();
    let by_site = fairshare(["sprio", "--site", site.to_str().unwrap(), "--now", now.trim(), "-l"]);
    let by_flags = fairshare([
        "sprio",
        "--tree",
        fixture("slurm_jobs/tree.csv").to_str().unwrap(),
        "--qos",
        fixture("slurm_jobs/qos.txt").to_str().unwrap(),
        "--pending",
        fixture("slurm_jobs/pending.csv").to_str().unwrap(),
        "--slurm-conf",
        conf.to_str().unwrap(),
        "--now",
        now.trim(),
        "-l",
    ]);
    assert_eq!(stdout_of(&by_site), stdout_of(&by_flags));
}

#[test]
fn a_malformed_line_is_an_error_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("scontrol/scontrol.txt")).unwrap();
    let broken =
        write_file(dir.path(), "site.txt", &text.replace("PriorityWeightQOS       = 1500", "PriorityWeightQOS 1500"));
    let line = text.lines().position(|l| l.starts_with("PriorityWeightQOS")).unwrap() + 1;
    let out = run_with("sshare", &broken, &[]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        format!(
            "fairshare: error: {}:{line}: cannot parse \"PriorityWeightQOS 1500\": expected `Key = Value`, as `scontrol \
             show config` prints it",
            broken.display()
        )
    );
    let bad_tres = write_file(dir.path(), "tres.txt", &text.replace("mem=1000G", "mem=1000Q"));
    let line = text.lines().position(|l| l.contains("mem=1000G")).unwrap() + 1;
    let out = run_with("sshare", &bad_tres, &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        format!(
            "fairshare: error: {}:{line}: TRES=cpu=256,mem=1000Q,node=4,billing=762,gres/gpu=32,license/lic=20: TRES count \
             \"mem=1000Q\": unknown unit 'Q' (K, M, G, T or P)",
            bad_tres.display()
        )
    );
}
