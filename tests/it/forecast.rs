//! `fairshare forecast` against the engine itself: every instant of a trajectory, the instant a
//! target is reached and the edge of a budget are recomputed from job records that hold the
//! assumed usage (the running jobs ended at the next pass, one job per association at its rate,
//! the budget as one more job) at `--now` that instant.

use std::path::Path;

use fairshare_analyses::forecast::{Assume, Budget, Forecast, ForecastOptions, forecast};
use fairshare_engine::pass::Algorithm;
use fairshare_engine::pipeline::{Decay, Silent, SiteOptions};

use super::{fairshare, stdout_of, write_file};

const NOW: i64 = 1_000_000_123; // between two passes of 300 s
const HOUR: i64 = 3_600;
const DAY: i64 = 86_400;

const TREE: &str = "id,parent_id,account,user,shares,usage
1,,root,,1,0
2,1,a,,3,0
3,2,a,u1,2,0
4,2,a,u2,1,0
5,1,b,,1,0
6,5,b,u3,1,0
7,1,c,,2,0
8,7,c,u4,1,0
9,7,c,u5,3,0
";

/// (user, account, start, end, CPUs), relative to NOW. Over the last day (the window) u1 runs 4
/// CPUs, u2 2 CPUs for 12 hours, u3 1 CPU and u5 2 CPUs (a job due to end after now): rates 4, 1,
/// 1, 0 and 2. u4's job starts after now and is no part of the forecast.
const JOBS: [(&str, &str, i64, Option<i64>, u32); 9] = [
    ("u1", "a", -5 * DAY, Some(-4 * DAY), 16),
    ("u3", "b", -5 * DAY + 77, Some(-3 * DAY), 8),
    ("u4", "c", -4 * DAY, Some(-3 * DAY - 5 * HOUR), 12),
    ("u5", "c", -6 * DAY, Some(-5 * DAY), 3),
    ("u1", "a", -2 * DAY, None, 4),
    ("u2", "a", -20 * HOUR, Some(-8 * HOUR), 2),
    ("u3", "b", -30 * HOUR, None, 1),
    ("u5", "c", -3 * DAY, Some(1_000), 2),
    ("u4", "c", HOUR, None, 8),
];
const RATES: [(&str, &str, u32); 4] = [("u1", "a", 4), ("u2", "a", 1), ("u3", "b", 1), ("u5", "c", 2)];

const CONF: &str = "PriorityType=priority/multifactor
PriorityDecayHalfLife=1-0
PriorityCalcPeriod=5
NodeName=n[1-8] CPUs=16
PartitionName=p Nodes=ALL Default=YES
";

#[derive(Clone, Copy, Debug)]
struct Case {
    algorithm: Algorithm,
    decay: Decay,
    limits: bool,
}

impl Case {
    /// Where the running jobs end and the assumed ones start: the next pass (now, exact decay).
    fn start(self) -> i64 {
        match self.decay {
            Decay::Exact => NOW,
            _ => NOW.div_euclid(300) * 300 + 300,
        }
    }

    /// slurm.conf, with a partition billing `extra` per CPU for the budget's job.
    fn conf(self, extra: f64) -> String {
        let limits = if self.limits { "AccountingStorageEnforce=limits\n" } else { "" };
        format!("{CONF}{limits}PartitionName=extra Nodes=ALL TRESBillingWeights=CPU={extra:?}\n")
    }
}

fn job_line(id: usize, user: &str, account: &str, partition: &str, start: i64, end: Option<i64>, cpus: u32) -> String {
    let end = end.map(|e| e.to_string()).unwrap_or_default();
    format!("{id},{user},{account},{partition},,{start},{end},\"cpu={cpus},node=1\"\n")
}

/// The records as they are.
fn records() -> String {
    let mut s = String::from("job_id,user,account,partition,qos,start,end,tres_alloc\n");
    for (i, (u, a, start, end, cpus)) in JOBS.into_iter().enumerate() {
        s.push_str(&job_line(i, u, a, "p", NOW + start, end.map(|e| NOW + e), cpus));
    }
    s
}

/// The records holding what the forecast assumes: nothing after now, the running jobs ended at
/// the next pass, with `steady` one job per association at its rate from then, and `budget`
/// (billing per second, end) on `who`.
fn assumed(case: Case, steady: bool, budget: Option<(&str, &str, i64)>) -> String {
    let start = case.start();
    let mut s = String::from("job_id,user,account,partition,qos,start,end,tres_alloc\n");
    for (i, (u, a, from, end, cpus)) in JOBS.into_iter().enumerate() {
        if from > 0 {
            continue;
        }
        let end = match end {
            Some(e) if e <= 0 => NOW + e,
            _ => start,
        };
        s.push_str(&job_line(i, u, a, "p", NOW + from, Some(end), cpus));
    }
    if steady {
        for (k, (u, a, rate)) in RATES.into_iter().enumerate() {
            s.push_str(&job_line(100 + k, u, a, "p", start, None, rate));
        }
    }
    if let Some((u, a, end)) = budget {
        s.push_str(&job_line(200, u, a, "extra", start, Some(end), 1));
    }
    s
}

fn site(dir: &Path, case: Case, jobs: &str, now: i64, extra: f64) -> fairshare_engine::pipeline::Site {
    let tree = write_file(dir, "tree.csv", TREE);
    let conf = write_file(dir, "slurm.conf", &case.conf(extra));
    let jobs = write_file(dir, "jobs.csv", jobs);
    let options = SiteOptions {
        tree: Some(tree),
        slurm_conf: Some(conf),
        jobs: Some(jobs),
        now: Some(now.to_string()),
        decay: Some(case.decay),
        algorithm: Some(case.algorithm),
        ..Default::default()
    };
    options.resolve().unwrap()
}

/// The engine's factor and rank of `user@account` at `now` for these records.
fn engine(case: Case, jobs: &str, now: i64, who: (&str, &str), extra: f64) -> (f64, u32) {
    let dir = tempfile::tempdir().unwrap();
    let (tree, fs, _) = site(dir.path(), case, jobs, now, extra).fair_share(&Silent).unwrap();
    let row = (0..tree.len())
        .find(|&r| tree.user_name(r) == Some(who.0) && tree.account(r) == who.1)
        .expect("the association is in the tree");
    let own = fs.fs_factor[row];
    let above = (0..tree.len()).filter(|&r| tree.is_user(r) && fs.fs_factor[r] > own).count();
    (own, above as u32 + 1)
}

fn forecast_of(case: Case, who: &str, options: &ForecastOptions) -> Forecast {
    let dir = tempfile::tempdir().unwrap();
    forecast(&site(dir.path(), case, &records(), NOW, 1.0), who, options, &Silent).unwrap()
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for algorithm in [Algorithm::Classic, Algorithm::FairTree, Algorithm::Flux] {
        v.push(Case { algorithm, decay: Decay::Slurm, limits: false });
        v.push(Case { algorithm, decay: Decay::Slurm, limits: true });
        v.push(Case { algorithm, decay: Decay::Exact, limits: false });
    }
    v
}

const WHO: [(&str, &str); 3] = [("u2", "a"), ("u5", "c"), ("u3", "b")];

#[test]
fn every_instant_of_a_trajectory_is_the_engine_at_that_instant() {
    for case in cases() {
        for assume in [Assume::Idle, Assume::Steady] {
            for who in WHO {
                let options = ForecastOptions {
                    assume,
                    window: Some(DAY),
                    horizon: Some(3 * DAY),
                    // Instants 1 h 30 apart: the first few fall before the running jobs' last charges.
                    steps: 48,
                    ..Default::default()
                };
                let f = forecast_of(case, &format!("{}@{}", who.0, who.1), &options);
                assert_eq!(f.trajectory.len(), 49);
                let jobs = assumed(case, assume == Assume::Steady, None);
                for p in f.trajectory.iter().step_by(3).chain(f.trajectory.iter().take(4)) {
                    let (fs, rank) = engine(case, &jobs, p.at, who, 1.0);
                    assert!(
                        (p.fs_factor - fs).abs() <= 1e-9,
                        "{case:?} {assume:?} {who:?} at {}: forecast {} vs engine {fs}",
                        p.at - NOW,
                        p.fs_factor
                    );
                    assert_eq!(p.rank, rank, "{case:?} {assume:?} {who:?} at {}", p.at - NOW);
                }
                if assume == Assume::Steady {
                    let expected = RATES.iter().find(|r| (r.0, r.1) == who).map_or(0.0, |r| f64::from(r.2));
                    assert_eq!(f.rate, expected, "{case:?} {who:?}");
                    assert_eq!(f.total_rate, 8.0);
                }
            }
        }
    }
}

#[test]
fn the_target_is_reached_at_the_first_instant_the_engine_reaches_it() {
    let mut checked = 0;
    for case in cases() {
        for who in WHO {
            let name = format!("{}@{}", who.0, who.1);
            let base = ForecastOptions {
                assume: Assume::Steady,
                window: Some(DAY),
                horizon: Some(3 * DAY),
                steps: 12,
                ..Default::default()
            };
            let first = forecast_of(case, &name, &base);
            let f0 = first.trajectory[0].fs_factor;
            let best = first.trajectory.iter().map(|p| p.fs_factor).fold(f0, f64::max);
            if best - f0 < 1e-4 {
                continue;
            }
            let target = 0.5 * (f0 + best);
            let f = forecast_of(case, &name, &ForecastOptions { target, ..base });
            let at = f.reached_at.expect("a target below the trajectory's best is reached");
            let jobs = assumed(case, true, None);
            let (fs, _) = engine(case, &jobs, at, who, 1.0);
            assert!(fs >= target, "{case:?} {who:?}: {fs} at {} below {target}", at - NOW);
            let (before, _) = engine(case, &jobs, at - 1, who, 1.0);
            assert!(before < target, "{case:?} {who:?}: {before} a second before {} reaches {target}", at - NOW);
            checked += 1;
        }
    }
    assert!(checked >= 6, "only {checked} cases recover");
}

#[test]
fn the_budget_is_the_most_that_keeps_the_factor_at_the_floor() {
    let over = 2 * DAY;
    let mut amounts = 0;
    for case in cases() {
        for who in WHO {
            let name = format!("{}@{}", who.0, who.1);
            let now = forecast_of(case, &name, &ForecastOptions { steps: 1, ..Default::default() });
            let floor = 0.6 * now.trajectory[0].fs_factor;
            let options = ForecastOptions {
                assume: Assume::Steady,
                window: Some(DAY),
                steps: 1,
                floor,
                budget_over: Some(over),
                ..Default::default()
            };
            let f = forecast_of(case, &name, &options);
            let end = case.start() + over;
            // The budget as one more job billed amount/over per second.
            let at = |amount: f64| {
                let jobs = assumed(case, true, Some((who.0, who.1, end)));
                engine(case, &jobs, end, who, amount / over as f64).0
            };
            match f.budget {
                // A little less keeps the floor, a little more does not.
                Budget::Amount(x) => {
                    assert!(x > 0.0);
                    assert!(at(x * (1.0 - 1e-4)) >= floor, "{case:?} {who:?}: {x}");
                    assert!(at(x * (1.0 + 1e-4)) < floor, "{case:?} {who:?}: {x}");
                    amounts += 1;
                }
                // Fair Tree's lowest factor is 1/users: a floor under it is never crossed.
                Budget::Unlimited => assert!(at(1e15) >= floor, "{case:?} {who:?}"),
                Budget::Below => panic!("{case:?} {who:?}: below {floor} without running anything"),
            }
        }
    }
    assert!(amounts >= 12, "only {amounts} budgets are amounts");
}

#[test]
fn with_no_usage_anywhere_the_factor_holds_until_a_reset() {
    // Every job over before now: nothing is left to charge, and all usage decays alike.
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(dir.path(), "tree.csv", TREE);
    let mut jobs = String::from("job_id,user,account,partition,qos,start,end,tres_alloc\n");
    for (i, (u, a, start, end, cpus)) in JOBS.into_iter().enumerate() {
        if let Some(e) = end.filter(|&e| e <= 0) {
            jobs.push_str(&job_line(i, u, a, "p", NOW + start, Some(NOW + e), cpus));
        }
    }
    let jobs = write_file(dir.path(), "jobs.csv", &jobs);
    let run = |reset: Option<&str>| {
        let options = SiteOptions {
            tree: Some(tree.clone()),
            jobs: Some(jobs.clone()),
            now: Some(NOW.to_string()),
            decay: Some(Decay::Exact),
            half_life: Some("1-0".into()),
            reset_period: reset.map(str::to_string),
            algorithm: Some(Algorithm::Classic),
            ..Default::default()
        };
        let site = options.resolve().unwrap();
        let opts = ForecastOptions { horizon: Some(25 * DAY), steps: 25, target: 0.99, ..Default::default() };
        forecast(&site, "u1@a", &opts, &Silent).unwrap()
    };
    let f = run(None);
    let f0 = f.trajectory[0].fs_factor;
    assert!(f0 < 0.99);
    for p in &f.trajectory {
        assert!((p.fs_factor - f0).abs() < 1e-12, "{} at {}", p.fs_factor, p.at);
    }
    assert_eq!(f.reached_at, None);
    assert!(fairshare_analyses::forecast::render::text(&f).contains("fair-share is relative"));
    // A monthly reset clears everyone's usage: a user without usage has the top factor.
    let f = run(Some("MONTHLY"));
    let at = f.reached_at.expect("the reset gives the factor back");
    let at = chrono::DateTime::from_timestamp(at, 0).unwrap();
    assert_eq!(at.format("%Y-%m-%d %H:%M:%S").to_string(), "2001-10-01 00:00:00");
}

#[test]
fn the_command_prints_json_and_writes_the_trajectory_and_its_picture() {
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(dir.path(), "tree.csv", TREE);
    let conf = write_file(
        dir.path(),
        "slurm.conf",
        &Case { algorithm: Algorithm::Classic, decay: Decay::Slurm, limits: false }.conf(1.0),
    );
    let jobs = write_file(dir.path(), "jobs.csv", &records());
    let (out, plot) = (dir.path().join("t.parquet"), dir.path().join("t.svg"));
    let args = |extra: &[&str]| {
        let mut v: Vec<String> = [
            "forecast",
            "u5@c",
            "--tree",
            tree.to_str().unwrap(),
            "--slurm-conf",
            conf.to_str().unwrap(),
            "--jobs",
            jobs.to_str().unwrap(),
            "--now",
            &NOW.to_string(),
            "--assume",
            "steady",
            "--window",
            "1-0",
            "--horizon",
            "3-0",
            "--steps",
            "6",
            "--target",
            "0.9",
            "--algo",
            "classic",
        ]
        .map(String::from)
        .to_vec();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = fairshare(args(&["--json", "--out", out.to_str().unwrap(), "--plot", plot.to_str().unwrap()]));
    let json: serde_json::Value = serde_json::from_str(&stdout_of(&run)).unwrap();
    let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 4);
    for k in ["association", "target", "reached_at", "trajectory"] {
        assert!(keys.contains(&k), "{keys:?}");
    }
    assert_eq!(json["association"], "u5@c");
    assert_eq!(json["target"], 0.9);
    let points = json["trajectory"].as_array().unwrap();
    assert_eq!(points.len(), 7);
    assert_eq!(points[0]["at"], "2001-09-09T01:48:43Z");
    assert_eq!(points[6]["at"], "2001-09-12T01:48:43Z");
    for p in points {
        let mut k: Vec<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
        k.sort_unstable();
        assert_eq!(k, ["at", "fs_factor", "rank"]);
    }
    // The library gives the same numbers; the Parquet holds them.
    let case = Case { algorithm: Algorithm::Classic, decay: Decay::Slurm, limits: false };
    let options = ForecastOptions {
        assume: Assume::Steady,
        window: Some(DAY),
        horizon: Some(3 * DAY),
        steps: 6,
        target: 0.9,
        ..Default::default()
    };
    let f = forecast_of(case, "u5@c", &options);
    assert_eq!(json, fairshare_analyses::forecast::render::json(&f));
    let batch = fairshare_engine::io::read_parquet_whole(&out).unwrap();
    assert_eq!(batch.num_rows(), 7);
    let fs = batch.column_by_name("fs_factor").unwrap();
    let fs = fs.as_any().downcast_ref::<arrow::array::Float64Array>().unwrap();
    let ours: Vec<f64> = f.trajectory.iter().map(|p| p.fs_factor).collect();
    assert_eq!(fs.values().to_vec(), ours);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("u5@c"), "{}", &svg[..200.min(svg.len())]);

    // The text says what a user asks.
    let text = stdout_of(&fairshare(args(&[])));
    assert!(
        text.starts_with(
            "Forecast for u5@c (classic), assuming everyone goes on at their rate of the last 1-00:00:00\n"
        ),
        "{text}"
    );
    assert!(text.contains("its rate 2.000 billing/s of everyone's 8.000 (25.0%)"), "{text}");
}

#[test]
fn a_forecast_refuses_what_it_cannot_answer() {
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(dir.path(), "tree.csv", TREE);
    let jobs = write_file(dir.path(), "jobs.csv", &records());
    let err = |extra: &[&str]| {
        let mut args = vec!["forecast", "--tree", tree.to_str().unwrap(), "--now", "1000000123"];
        args.extend_from_slice(extra);
        let out = fairshare(&args);
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let jobs = jobs.to_str().unwrap();
    assert!(err(&["u1@a"]).contains("a forecast needs job records"), "{}", err(&["u1@a"]));
    assert!(err(&["a", "--jobs", jobs]).contains("\"a\" is an account"));
    assert!(err(&["nobody", "--jobs", jobs]).contains("no association \"nobody\""));
    assert!(
        err(&["u1@a", "--jobs", jobs, "--target", "1.5"])
            .contains("--target 1.5: a fair-share factor is between 0 and 1")
    );
    assert!(
        err(&["u1@a", "--jobs", jobs, "--decay", "flux"])
            .contains("flux-accounting's usage bins cannot be carried forward")
    );
    assert!(err(&["u1@a", "--jobs", jobs, "--horizon", "soon"]).contains("--horizon"));
    // Dates past year 9999 would reach the JSON and Parquet (pyarrow cannot read them back).
    let far = err(&["u1@a", "--jobs", jobs, "--horizon", "1000000w", "--json"]);
    assert!(far.contains("ends past 9999-12-31T23:59:59 UTC: give a shorter one"), "{far}");
}

#[test]
fn everyone_s_trajectories_are_each_one_s_forecast() {
    for case in cases() {
        let options = ForecastOptions {
            assume: Assume::Steady,
            window: Some(DAY),
            horizon: Some(3 * DAY),
            steps: 9,
            target: 0.3,
            ..Default::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let all = fairshare_analyses::forecast::trajectories(
            &site(dir.path(), case, &records(), NOW, 1.0),
            &options,
            &Silent,
        )
        .unwrap();
        assert_eq!(all.times.len(), 10);
        for row in (0..all.tree.len()).filter(|&r| all.tree.is_user(r)) {
            let name = format!("{}@{}", all.tree.user_name(row).unwrap(), all.tree.account(row));
            let one = forecast_of(case, &name, &options);
            for (k, p) in one.trajectory.iter().enumerate() {
                assert_eq!(p.at, all.times[k]);
                assert_eq!(p.fs_factor, all.fs_factor[k][row], "{case:?} {name} at {k}");
                assert_eq!(p.rank, all.rank[k][row], "{case:?} {name} at {k}");
            }
            let grid = one.trajectory.iter().find(|p| p.fs_factor >= 0.3).map(|p| p.at);
            assert_eq!(all.reached_at(row, 0.3), grid, "{case:?} {name}");
        }
    }
}
