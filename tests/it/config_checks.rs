//! Issue 16 B: configuration values that used to be read silently as something else. A bad
//! slurm.conf value is refused whatever line follows it, an unknown `PriorityFlags` word is
//! refused instead of switching the algorithm, the knobs both slurm.conf and the command line set
//! accept the same values and refuse them in the same words, and squeue JSON jobs with missing
//! or mistyped fields are refused instead of being dropped.

use std::path::{Path, PathBuf};
use std::process::Output;

use super::{fairshare, stdout_of, write_file};

/// root → a → u.
const TREE: &str = "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,a,,1,0\n3,2,a,u,1,5\n";
const NODES: &str = "NodeName=n[1-4] CPUs=4 RealMemory=1000\nPartitionName=p Nodes=ALL Default=YES\n";
const JOBS: &str = "job_id,user,account,partition,qos,start,end,tres_alloc\n1,u,a,p,,0,3600,cpu=1\n";

/// A directory with the tree, job records and a valid slurm.conf.
struct Site {
    dir: tempfile::TempDir,
}

impl Site {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        write_file(dir.path(), "tree.csv", TREE);
        write_file(dir.path(), "jobs.csv", JOBS);
        write_file(dir.path(), "good.conf", &format!("PriorityWeightFairshare=1000\n{NODES}"));
        Site { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        write_file(self.dir.path(), name, text)
    }

    /// `usage` over the job records with `extra` arguments.
    fn usage(&self, extra: &[&str]) -> Output {
        let (tree, jobs, out) = (self.path("tree.csv"), self.path("jobs.csv"), self.path("usage.parquet"));
        let args = ["usage", "--tree", s(&tree), "--jobs", s(&jobs), "--now", "7200", "--out", s(&out)];
        fairshare(args.iter().chain(extra))
    }

    /// `sshare` on the tree with `extra` arguments.
    fn sshare(&self, extra: &[&str]) -> Output {
        let tree = self.path("tree.csv");
        fairshare(["sshare", "--tree", s(&tree)].iter().chain(extra))
    }

    /// `score` of a squeue JSON queue.
    fn score_json(&self, json: &str) -> Output {
        let (tree, conf) = (self.path("tree.csv"), self.path("good.conf"));
        let (queue, out) = (self.file("q.json", json), self.path("out.parquet"));
        fairshare([
            "score",
            "--tree",
            s(&tree),
            "--slurm-conf",
            s(&conf),
            "--pending",
            s(&queue),
            "--pending-format",
            "squeue-json",
            "--now",
            "100",
            "--out",
            s(&out),
        ])
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The whole stderr of a run that must fail with `code`.
fn failure(out: &Output, code: i32) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    stderr
}

const ALL_FLAGS: &str = "ACCRUE_ALWAYS, CALCULATE_RUNNING, DEPTH_OBLIVIOUS, FAIR_TREE, INCR_ONLY, MAX_TRES, \
                         MAX_TRES_GRES, NO_FAIR_TREE, NO_NORMAL_ALL, NO_NORMAL_ASSOC, NO_NORMAL_PART, \
                         NO_NORMAL_QOS, NO_NORMAL_TRES, SMALL_RELATIVE_TO_TIME";

#[test]
fn a_bad_number_is_refused_even_when_a_later_line_sets_the_key() {
    let site = Site::new();
    for text in
        ["PriorityWeightAge=zz\nPriorityWeightAge=5\n", "ClusterName=c\nPriorityWeightAge=zz\nPriorityWeightAge=5\n"]
    {
        let conf = site.file("slurm.conf", text);
        let line = text.lines().position(|l| l.ends_with("zz")).unwrap() + 1;
        assert_eq!(
            failure(&site.sshare(&["--slurm-conf", s(&conf)]), 1),
            format!("fairshare: error: {}:{line}: PriorityWeightAge=zz: not a valid number\n", conf.display())
        );
    }
}

#[test]
fn an_unknown_priority_flag_is_refused_and_every_documented_one_accepted() {
    let site = Site::new();
    // A typo of NO_FAIR_TREE silently meant Fair Tree.
    let conf = site.file("slurm.conf", "ClusterName=c\nPriorityFlags=MAX_TRES,NO_FAIR_TRE\n");
    assert_eq!(
        failure(&site.sshare(&["--slurm-conf", s(&conf)]), 1),
        format!(
            "fairshare: error: {}:2: PriorityFlags=MAX_TRES,NO_FAIR_TRE: unknown flag \"NO_FAIR_TRE\" \
             (the flags are {ALL_FLAGS})\n",
            conf.display()
        )
    );
    // Every flag slurm.conf(5) lists, and the old FAIR_TREE, in several spellings.
    let conf = site.file(
        "slurm.conf",
        "PriorityFlags=\"accrue_always, CALCULATE_RUNNING,DEPTH_OBLIVIOUS,NO_FAIR_TREE,fair_tree,MAX_TRES,\
         MAX_TRES_GRES,NO_NORMAL_ALL,NO_NORMAL_ASSOC,NO_NORMAL_PART,NO_NORMAL_QOS,NO_NORMAL_TRES,\
         SMALL_RELATIVE_TO_TIME\"\n",
    );
    let out = site.sshare(&["--slurm-conf", s(&conf)]);
    stdout_of(&out);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn a_slurm_flag_that_is_not_modelled_is_named_in_a_warning() {
    let site = Site::new();
    let conf = site.file("slurm.conf", "PriorityFlags=INCR_ONLY,MAX_TRES\n");
    let out = site.sshare(&["--slurm-conf", s(&conf)]);
    stdout_of(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "fairshare: warning: {}:1: PriorityFlags=INCR_ONLY,MAX_TRES: INCR_ONLY not modelled here, and ignored\n",
            conf.display()
        )
    );
}

/// A knob refused in slurm.conf and on the command line with the same reason.
struct Knob {
    conf_line: &'static str,
    flag: &'static [&'static str],
    /// How the command line names the value.
    named: &'static str,
    reason: &'static str,
}

#[test]
fn slurm_conf_and_the_command_line_refuse_the_same_knob_values_in_the_same_words() {
    const CALC: &str = "must be at least one minute, and not UNLIMITED";
    let knobs = [
        // Both used to be accepted on the command line: every usage came out 0.
        Knob {
            conf_line: "PriorityCalcPeriod=0",
            flag: &["--calc-period", "0"],
            named: "--calc-period 0",
            reason: CALC,
        },
        Knob {
            conf_line: "PriorityCalcPeriod=-1",
            flag: &["--calc-period=-1"],
            named: "--calc-period -1",
            reason: CALC,
        },
        Knob {
            conf_line: "PriorityDecayHalfLife=2x",
            flag: &["--half-life", "2x"],
            named: "--half-life 2x",
            reason: "\"2x\" is not a Slurm time (minutes, min:sec, h:m:s, days-h[:m[:s]] or UNLIMITED)",
        },
        Knob {
            conf_line: "PriorityUsageResetPeriod=often",
            flag: &["--reset-period", "often"],
            named: "--reset-period often",
            reason: "expected NONE, NOW, DAILY, WEEKLY, MONTHLY, QUARTERLY or YEARLY",
        },
    ];
    let site = Site::new();
    for k in &knobs {
        let conf = site.file("slurm.conf", &format!("ClusterName=c\n{}\n{NODES}", k.conf_line));
        assert_eq!(
            failure(&site.usage(&["--slurm-conf", s(&conf)]), 1),
            format!("fairshare: error: {}:2: {}: {}\n", conf.display(), k.conf_line, k.reason)
        );
        assert_eq!(failure(&site.usage(k.flag), 1), format!("fairshare: error: {}: {}\n", k.named, k.reason));
    }

    // FairShareDampeningFactor=0 used to be accepted (classic then divides by 0); --dampening is
    // checked while the command line is parsed.
    let reason = "must be at least 1 (1 is no dampening)";
    let conf = site.file("slurm.conf", "FairShareDampeningFactor=0\n");
    assert_eq!(
        failure(&site.sshare(&["--slurm-conf", s(&conf)]), 1),
        format!("fairshare: error: {}:1: FairShareDampeningFactor=0: {reason}\n", conf.display())
    );
    let flag = failure(&site.sshare(&["--dampening", "0"]), 2);
    assert!(flag.starts_with(&format!("error: invalid value '0' for '--dampening <D>': {reason}\n")), "{flag}");
}

#[test]
fn slurm_conf_and_the_command_line_accept_the_same_knob_values() {
    let site = Site::new();
    // Half-life 0 is no decay; slurm.conf also needs a reset period then, as slurmctld does.
    let conf = site.file("slurm.conf", &format!("PriorityDecayHalfLife=0\nPriorityUsageResetPeriod=NONE\n{NODES}"));
    stdout_of(&site.usage(&["--slurm-conf", s(&conf)]));
    stdout_of(&site.usage(&["--half-life", "0", "--calc-period", "0:30", "--reset-period", "weekly"]));
    // strtoul's hexadecimal, as slurm.conf reads it, on both routes.
    let conf = site.file("slurm.conf", "FairShareDampeningFactor=0x2\nPriorityFlags=NO_FAIR_TREE\n");
    let by_conf = stdout_of(&site.sshare(&["--slurm-conf", s(&conf)]));
    assert_eq!(by_conf, stdout_of(&site.sshare(&["--algo", "classic", "--dampening", "0x2"])));
}

/// A pending job in `squeue --json` with `extra` fields after the required ones (later keys win).
fn squeue(extra: &str) -> String {
    format!(
        "{{\"jobs\":[{{\"job_id\":17,\"user_name\":\"u\",\"account\":\"a\",\"partition\":\"p\",\
         \"job_state\":[\"PENDING\"],\"submit_time\":1{extra}}}]}}"
    )
}

#[test]
fn squeue_json_jobs_that_are_not_jobs_are_refused() {
    let site = Site::new();
    let q = site.path("q.json");
    let cases = [
        // These gave an empty queue and exit 0.
        ("{\"jobs\":[1,2,3]}".to_string(), "jobs[0]: expected an object, found 1"),
        ("{\"jobs\":[null]}".to_string(), "jobs[0]: expected an object, found null"),
        ("{\"jobs\":[{}]}".to_string(), "jobs[0]: no job_state: expected a string or a list of strings"),
        (
            "{\"jobs\":[{\"job_state\":[\"PENDING\",3]}]}".to_string(),
            "jobs[0]: job_state [\"PENDING\",3]: expected a string or a list of strings",
        ),
        ("{\"jobs\":[{\"job_state\":\"PENDING\"}]}".to_string(), "jobs[0]: no job_id: expected a whole number"),
        // This said "no submit_time".
        (squeue(",\"submit_time\":1.5"), "jobs[0] (job 17): submit_time 1.5: expected whole seconds"),
        (
            squeue(",\"submit_time\":{\"set\":false,\"infinite\":false,\"number\":0}"),
            "jobs[0] (job 17): submit_time {\"infinite\":false,\"number\":0,\"set\":false}: expected whole seconds",
        ),
        (squeue(",\"user_name\":5"), "jobs[0] (job 17): user_name 5: expected a string"),
        (squeue(",\"cpus\":\"4\""), "jobs[0] (job 17): cpus \"4\": expected a whole number"),
        (
            squeue(",\"node_count\":{\"set\":true,\"number\":\"2\"}"),
            "jobs[0] (job 17): node_count {\"number\":\"2\",\"set\":true}: expected a whole number",
        ),
        (squeue(",\"time_limit\":0.5"), "jobs[0] (job 17): time_limit 0.5: expected whole minutes"),
    ];
    for (json, want) in cases {
        assert_eq!(
            failure(&site.score_json(&json), 1),
            format!("fairshare: error: {}: {want}\n", q.display()),
            "{json}"
        );
    }
    let no_account = "{\"jobs\":[{\"job_id\":17,\"user_name\":\"u\",\"partition\":\"p\",\"job_state\":\"PENDING\",\"submit_time\":1}]}";
    assert_eq!(
        failure(&site.score_json(no_account), 1),
        format!("fairshare: error: {}: jobs[0] (job 17): no account: expected a string\n", q.display())
    );
}

#[test]
fn squeue_json_numbers_plain_wrapped_or_unset_all_read() {
    let site = Site::new();
    let read = |json: &str| {
        stdout_of(&site.score_json(json));
        let file = std::fs::File::open(site.path("out.parquet")).unwrap();
        let reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
        reader.map(|b| b.unwrap().num_rows()).sum::<usize>()
    };
    // Slurm's data_parser struct, a plain number, whole floats (a job_id of 17.0 was "no job_id"),
    // an unset struct, an infinite time limit and null (complex mode's NO_VAL) are all numbers or
    // their absence.
    let wrapped = squeue(
        ",\"job_id\":17.0,\"submit_time\":{\"set\":true,\"infinite\":false,\"number\":1},\"cpus\":{\"set\":true,\"number\":4},\
         \"node_count\":1.0,\"accrue_time\":{\"set\":false,\"infinite\":false,\"number\":0},\
         \"time_limit\":{\"set\":false,\"infinite\":true,\"number\":0},\"nice\":null",
    );
    assert_eq!(read(&wrapped), 1);
    assert_eq!(read(&squeue(",\"cpus\":4,\"time_limit\":30")), 1);
    // Jobs in other states are still skipped.
    assert_eq!(read("{\"jobs\":[{\"job_state\":[\"RUNNING\"],\"job_id\":\"x\"}]}"), 0);
}
