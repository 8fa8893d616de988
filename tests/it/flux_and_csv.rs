//! flux-accounting databases and CSV dialects (issue 16 B): a non-finite config value and a bank
//! cycle out of the root's reach are named, reading a WAL-mode database leaves its directory as it
//! was, and quoted headers (pyarrow's `write_csv`) and byte order marks read as plain CSV does.

use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray};
use rusqlite::Connection;

use super::{fairshare, stdout_of, write_file};

const FLUX_SCHEMA: &str = include_str!("../fixtures/flux_schema.sql");

/// A flux-accounting database in `dir`: root → physics (alice), with `config` as `config_table`
/// rows and `extra` SQL run last; in WAL mode when `wal`.
fn flux_db(dir: &Path, config: &str, extra: &str, wal: bool) -> PathBuf {
    let path = dir.join("FluxAccounting.db");
    let conn = Connection::open(&path).unwrap();
    if wal {
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    }
    conn.execute_batch(FLUX_SCHEMA).unwrap();
    conn.execute_batch(&format!(
        "INSERT INTO config_table VALUES ('priority_decay_half_life','1000'),
            ('priority_usage_reset_period','4000'), {config};
         INSERT INTO t_half_life_period_table VALUES ('cluster', 10000);
         INSERT INTO bank_table (bank, parent_bank, shares) VALUES ('root','',1), ('physics','root',3);
         INSERT INTO association_table (username, userid, bank, default_bank, shares, job_usage)
            VALUES ('alice', 1001, 'physics', 'physics', 1, 50);
         INSERT INTO job_usage_per_association_table VALUES ('alice', 1001, 'physics', 0, 50),
            ('alice', 1001, 'physics', 1, 0), ('alice', 1001, 'physics', 2, 0), ('alice', 1001, 'physics', 3, 0);
         INSERT INTO job_usage_factor_table VALUES ('alice', 1001, 'physics', 0);
         {extra}"
    ))
    .unwrap();
    path
}

/// Stderr of a failed run, asserting it failed cleanly.
fn failure(args: &[&str]) -> String {
    let out = fairshare(args);
    assert!(!out.status.success(), "accepted: {args:?}");
    String::from_utf8(out.stderr).unwrap()
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn a_non_finite_config_value_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let db = flux_db(tmp.path(), "('decay_factor','nan')", "", false);
    let db = db.to_str().unwrap();
    // A usage was blamed before ("usage NaN is not a non-negative number").
    assert_eq!(
        failure(&["run", "--flux-db", db, "--now", "20000"]),
        format!("fairshare: error: {db}: config_table: decay_factor = \"nan\" is not a finite number\n")
    );
}

#[test]
fn a_bank_cycle_out_of_the_roots_reach_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let cycle = "INSERT INTO bank_table (bank, parent_bank, shares) VALUES ('a','b',1), ('b','a',1);
        INSERT INTO association_table (username, userid, bank, default_bank) VALUES ('zed', 1009, 'a', 'a');";
    let db = flux_db(tmp.path(), "('decay_factor','0.5')", cycle, false);
    let db = db.to_str().unwrap();
    let expected = format!(
        "fairshare: error: {db}: bank_table: parent_bank cycle \"a\" → \"b\" → \"a\" (each bank's parent_bank is \
         the next) is not under the root bank \"root\": its banks and their users would be left out\n"
    );
    // zed was silently left out before.
    assert_eq!(failure(&["sshare", "--tree", db]), expected);
    assert_eq!(failure(&["run", "--flux-db", db, "--now", "20000"]), expected);
}

#[test]
fn reading_a_wal_database_leaves_its_directory_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    std::fs::create_dir(&dir).unwrap();
    let db = flux_db(&dir, "('decay_factor','0.5')", "", true);
    let before = (listing(&dir), std::fs::read(&db).unwrap());
    assert_eq!(before.0, ["FluxAccounting.db"]);
    let d = db.to_str().unwrap();
    let out_dir = tmp.path().join("run");
    let usage_out = tmp.path().join("usage.parquet");
    let reads: [&[&str]; 3] = [
        &["sshare", "--tree", d],
        &["run", "--flux-db", d, "--now", "20000", "--out-dir", out_dir.to_str().unwrap()],
        &["usage", "--tree", d, "--jobs", d, "--now", "20000", "--out", usage_out.to_str().unwrap()],
    ];
    for args in reads {
        stdout_of(&fairshare(args));
        assert_eq!((listing(&dir), std::fs::read(&db).unwrap()), before, "after {args:?}");
    }

    // Another process's -wal and -shm (here holding a user not yet checkpointed) are read and kept.
    let writer = Connection::open(&db).unwrap();
    writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    writer
        .execute_batch(
            "INSERT INTO association_table (username, userid, bank, default_bank, shares, job_usage)
             VALUES ('bob', 1002, 'physics', 'physics', 1, 0);",
        )
        .unwrap();
    let open = listing(&dir);
    assert_eq!(open, ["FluxAccounting.db", "FluxAccounting.db-shm", "FluxAccounting.db-wal"]);
    let text = stdout_of(&fairshare(["sshare", "--tree", d, "-P", "-n", "-o", "User"]));
    assert!(text.lines().any(|l| l.contains("bob")), "{text}");
    assert_eq!(listing(&dir), open);
    drop(writer);
}

#[test]
fn quoted_headers_read_as_plain_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let sshare = |tree: &Path| stdout_of(&fairshare(["sshare", "--tree", tree.to_str().unwrap(), "-a", "-P"]));
    // As pyarrow's `write_csv` writes a table read from the plain file: names and text quoted.
    let plain = write_file(
        tmp.path(),
        "plain.csv",
        "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,chem,,parent,0\n3,2,chem,ann,1,10.5\n4,2,chem,bob,2,0\n",
    );
    let quoted = write_file(
        tmp.path(),
        "quoted.csv",
        "\"id\",\"parent_id\",\"account\",\"user\",\"shares\",\"usage\"\n1,,\"root\",,\"1\",0\n\
         2,1,\"chem\",,\"parent\",0\n3,2,\"chem\",\"ann\",\"1\",10.5\n4,2,\"chem\",\"bob\",\"2\",0\n",
    );
    assert_eq!(sshare(&quoted), sshare(&plain));
    let plain = write_file(
        tmp.path(),
        "plain-flux.csv",
        "level,bank,user,shares,usage\n0,root,%^+_nouser,1,0\n1,chem,%^+_nouser,1,0\n2,chem,ann,1,5\n",
    );
    let quoted = write_file(
        tmp.path(),
        "quoted-flux.csv",
        "\"level\",\"bank\",\"user\",\"shares\",\"usage\"\n0,\"root\",\"%^+_nouser\",1,0\n\
         1,\"chem\",\"%^+_nouser\",1,0\n2,\"chem\",\"ann\",1,5\n",
    );
    assert_eq!(sshare(&quoted), sshare(&plain));
}

#[test]
fn job_records_with_a_byte_order_mark_or_quoted_header_read_as_plain_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = write_file(
        tmp.path(),
        "tree.csv",
        "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,chem,,1,0\n3,2,chem,ann,1,0\n4,2,chem,bob,1,0\n",
    );
    let sshare = |jobs: &Path| {
        let (tree, jobs) = (tree.to_str().unwrap(), jobs.to_str().unwrap());
        stdout_of(&fairshare(["sshare", "--tree", tree, "--jobs", jobs, "--now", "1000", "-a", "-P"]))
    };
    const ROWS: &str = "1,ann,chem,p,,100,200,cpu=2\n2,bob,chem,p,,100,400,cpu=1\n";
    let plain = sshare(&write_file(
        tmp.path(),
        "plain.csv",
        &format!("job_id,user,account,partition,qos,start,end,tres_alloc\n{ROWS}"),
    ));
    assert!(plain.contains("ann"), "{plain}");
    let bom = write_file(
        tmp.path(),
        "bom.csv",
        &format!("\u{feff}job_id,user,account,partition,qos,start,end,tres_alloc\n{ROWS}"),
    );
    assert_eq!(sshare(&bom), plain);
    let quoted = write_file(
        tmp.path(),
        "quoted.csv",
        "\u{feff}\"job_id\",\"user\",\"account\",\"partition\",\"qos\",\"start\",\"end\",\"tres_alloc\"\n\
         1,\"ann\",\"chem\",\"p\",,100,200,\"cpu=2\"\n2,\"bob\",\"chem\",\"p\",,100,400,\"cpu=1\"\n",
    );
    assert_eq!(sshare(&quoted), plain);
}

/// A flux DB can hold any name; one with a newline or NUL still prints as one line of sshare.txt
/// and of sshare's output (Parquet keeps the exact name).
#[test]
fn names_with_control_characters_keep_one_association_a_line() {
    let tmp = tempfile::tempdir().unwrap();
    let extra = "INSERT INTO association_table (username, userid, bank, default_bank, shares, job_usage)
            VALUES ('bo' || char(10) || 'b', 1002, 'physics', 'physics', 1, 10),
                   ('nu' || char(0) || 'l', 1003, 'physics', 'physics', 1, 10);";
    let db = flux_db(tmp.path(), "('decay_factor','0.5')", extra, false);
    let text = stdout_of(&fairshare(["sshare", "--tree", db.to_str().unwrap(), "-P"]));
    // Header, root, physics and three users.
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(text.contains("|bo?b|") && text.contains("|nu?l|"), "{text}");
    let run = tmp.path().join("run");
    stdout_of(&fairshare([
        "run",
        "--flux-db",
        db.to_str().unwrap(),
        "--now",
        "20000",
        "--out-dir",
        run.to_str().unwrap(),
    ]));
    let sshare_txt = std::fs::read_to_string(run.join("sshare.txt")).unwrap();
    assert_eq!(sshare_txt.lines().count(), 7, "{sshare_txt}");
}

/// A flux-accounting database whose bank X is listed under two parents, Q (its first row, 2
/// shares) and P (5 shares, never read: the C++ reader takes a bank's shares from the first row of
/// its name). P also holds Y (3 shares, y1 with 60). X holds x1 (10) and x2 (50), so each is in the
/// tree twice. x1 ran one job of 1 node × 10 s in X, at 10200–10210. P = 1000 s, 4 bins, D = 0.5;
/// the half-life period ends at 10000.
fn two_parent_db(path: &Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(FLUX_SCHEMA).unwrap();
    conn.execute_batch(
        "INSERT INTO config_table VALUES ('priority_decay_half_life','1000'),
            ('priority_usage_reset_period','4000'), ('decay_factor','0.5'), ('node_weight','1.0'),
            ('core_weight','0'), ('gpu_weight','0');
         INSERT INTO t_half_life_period_table VALUES ('cluster', 10000);
         INSERT INTO bank_table (bank, parent_bank, shares) VALUES ('root','',1), ('P','root',1),
            ('Q','root',1), ('X','Q',2), ('X','P',5), ('Y','P',3);",
    )
    .unwrap();
    for (user, uid, bank, usage) in [("x1", 1001, "X", 10.0), ("x2", 1002, "X", 50.0), ("y1", 1003, "Y", 60.0)] {
        conn.execute(
            "INSERT INTO association_table (username, userid, bank, default_bank, shares, job_usage)
             VALUES (?1, ?2, ?3, ?3, 1, ?4)",
            rusqlite::params![user, uid, bank, usage],
        )
        .unwrap();
        for (period, value) in [usage, 0.0, 0.0, 0.0].into_iter().enumerate() {
            conn.execute(
                "INSERT INTO job_usage_per_association_table VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![user, uid, bank, period as i64, value],
            )
            .unwrap();
        }
        conn.execute("INSERT INTO job_usage_factor_table VALUES (?1, ?2, ?3, 0)", rusqlite::params![user, uid, bank])
            .unwrap();
    }
    let r = r#"{"version":1,"execution":{"R_lite":[{"rank":"0","children":{"core":"0"}}]}}"#;
    conn.execute(
        "INSERT INTO jobs (id, userid, t_submit, t_run, t_inactive, ranks, R, jobspec, bank)
         VALUES ('j1', 1001, 10190, 10200, 10210, '', ?1, '{}', 'X')",
        rusqlite::params![r],
    )
    .unwrap();
}

/// `(account, user, RawShares, FairShare)` of the rows of `sshare --algo flux -P` on `db`.
fn flux_sshare(db: &Path) -> Vec<(String, String, String, String)> {
    let text = stdout_of(&fairshare(["sshare", "--tree", db.to_str().unwrap(), "--algo", "flux", "-P"]));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('|').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let cols = [col("Account"), col("User"), col("RawShares"), col("FairShare")];
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            let [a, u, s, fs] = cols.map(|c| f[c].trim().to_string());
            (a, u, s, fs)
        })
        .collect()
}

/// A bank under two parents is read under each, as flux-accounting's reader and update-fshare
/// read it (two `bank_table` rows named X, parents Q and P), and `run --write-back` stores what
/// update-usage and update-fshare would.
///
/// The tree (N = 5 users): root → P {X {x1, x2}, Y {y1}}, Q {X {x1, x2}}, each X with 2 shares.
/// As read (x1 10, x2 50, y1 60): X's usage is 60, P's 120, Q's 60; root: S = 2, U = 180, P weighs
/// (1/2)/(120/180) = 0.75, Q (1/2)/(60/180) = 1.5, so Q's users rank first. In either X, x1
/// weighs (1/2)/(10/60) = 3 and x2 (1/2)/(50/60) = 0.6: under Q, x1 5/5 = 1, x2 4/5 = 0.8. In P,
/// S = 2 + 3, U = 120: X weighs (2/5)/(60/120) = 0.8 and Y (3/5)/(60/120) = 1.2 (with X's 5
/// shares of its second row X would weigh 1.25 and come first): y1 3/5, then x1 2/5, x2 1/5.
///
/// The run: update-usage's job query joins `bank_table` on the bank name, so x1's job (10) counts
/// once per X row: x1 = 10 + 20 = 30 (the current period: 10210 − 10000 < 1000). Bank usage: X =
/// 80 (both rows), Y 60, P 140, Q 80, root 220. Ranks: root U = 220, P (1/2)/(140/220) = 0.786, Q
/// (1/2)/(80/220) = 1.375; x1 (1/2)/(30/80) = 1.33 before x2 (1/2)/(50/80) = 0.8; in P, X
/// (2/5)/(80/140) = 0.7 after Y (3/5)/(60/140) = 1.4: the same factors. update-fshare writes
/// depth-first in sorted order, Q's copies before P's, so x1 keeps 0.4 and x2 0.2.
#[test]
fn a_bank_under_two_parents_is_read_under_each() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("FluxAccounting.db");
    two_parent_db(&db);
    let row = |a: &str, u: &str, s: &str, fs: &str| (a.to_string(), u.to_string(), s.to_string(), fs.to_string());
    let expected = vec![
        row("root", "", "", ""),
        row("P", "", "1", ""),
        row("X", "", "2", ""),
        row("X", "x1", "1", "0.400000"),
        row("X", "x2", "1", "0.200000"),
        row("Y", "", "3", ""),
        row("Y", "y1", "1", "0.600000"),
        row("Q", "", "1", ""),
        row("X", "", "2", ""),
        row("X", "x1", "1", "1.000000"),
        row("X", "x2", "1", "0.800000"),
    ];
    assert_eq!(flux_sshare(&db), expected);
    // The priority plugin reads the value update-fshare stored: the one it wrote last.
    let pending = write_file(
        tmp.path(),
        "p.csv",
        "job_id,user,account,partition,qos,submit_time,accrue_time,min_nodes,cpus,time_limit,nice,site_factor,tres_req\n\
         1,x1,X,default,,0,0,1,1,,0,0,\n2,x2,X,default,,0,0,1,1,,0,0,\n",
    );
    let d = db.to_str().unwrap();
    let sprio =
        ["sprio", "--priority", "flux", "--tree", d, "--pending", pending.to_str().unwrap(), "-h", "-o", "%i %Y"];
    assert_eq!(stdout_of(&fairshare(sprio)), "1 40000\n2 20000\n");

    let (out_dir, prom) = (tmp.path().join("run"), tmp.path().join("fairshare.prom"));
    stdout_of(&fairshare([
        "run",
        "--flux-db",
        d,
        "--now",
        "10500",
        "--write-back",
        "--out-dir",
        out_dir.to_str().unwrap(),
        "--prometheus",
        prom.to_str().unwrap(),
    ]));
    // The textfile tells the two copies apart (one label set twice would make the collector
    // refuse the file); the others keep their four labels.
    let text = std::fs::read_to_string(&prom).unwrap();
    let factors: Vec<&str> = text.lines().filter(|l| l.starts_with("fairshare_factor{")).collect();
    let label = |a: &str, u: &str, lineage: &str| {
        let lineage = if lineage.is_empty() { String::new() } else { format!(",lineage=\"{lineage}\"") };
        format!("fairshare_factor{{cluster=\"\",account=\"{a}\",user=\"{u}\",partition=\"\"{lineage}}}")
    };
    assert_eq!(
        factors,
        [
            format!("{} 0.4", label("X", "x1", "/root/P/X/")),
            format!("{} 0.2", label("X", "x2", "/root/P/X/")),
            format!("{} 0.6", label("Y", "y1", "")),
            format!("{} 1", label("X", "x1", "/root/Q/X/")),
            format!("{} 0.8", label("X", "x2", "/root/Q/X/")),
        ],
        "{text}"
    );
    let conn = Connection::open(&db).unwrap();
    let stored: Vec<(String, f64, f64)> = conn
        .prepare("SELECT username, job_usage, fairshare FROM association_table ORDER BY username")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(stored, [("x1".into(), 30.0, 0.4), ("x2".into(), 50.0, 0.2), ("y1".into(), 60.0, 0.6)]);
    let banks: Vec<(String, String, f64)> = conn
        .prepare("SELECT bank, parent_bank, job_usage FROM bank_table ORDER BY bank_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let bank = |b: &str, p: &str, u: f64| (b.to_string(), p.to_string(), u);
    assert_eq!(
        banks,
        [
            bank("root", "", 220.0),
            bank("P", "root", 140.0),
            bank("Q", "root", 80.0),
            bank("X", "Q", 80.0),
            bank("X", "P", 80.0),
            bank("Y", "P", 60.0)
        ]
    );
    drop(conn);
    // The database read back: the same tree with x1's new usage, the same factors.
    let again: Vec<String> = flux_sshare(&db).into_iter().map(|(a, u, _, fs)| format!("{a}/{u} {fs}")).collect();
    assert_eq!(again[3..5], ["X/x1 0.400000", "X/x2 0.200000"]);
    assert_eq!(again[9..], ["X/x1 1.000000", "X/x2 0.800000"]);

    // Charged from the jobs table as plain records, x1's job (1 node × 10 s) is one
    // association's usage: both copies of x1 hold it.
    let text = stdout_of(&fairshare([
        "sshare",
        "--tree",
        d,
        "--jobs",
        d,
        "--decay",
        "flux-clean",
        "--now",
        "10500",
        "-P",
        "-n",
        "-o",
        "User,RawUsage",
    ]));
    let x1: Vec<&str> = text.lines().filter(|l| l.starts_with("x1|")).collect();
    assert_eq!(x1, ["x1|10", "x1|10"], "{text}");
    // So does a usage history.
    let hist = tmp.path().join("hist");
    let args =
        ["usage", "--tree", d, "--jobs", d, "--decay", "exact", "--at", "10500", "--out", hist.to_str().unwrap()];
    stdout_of(&fairshare(args));
    let file = std::fs::read_dir(hist.join("date=1970-01-01")).unwrap().next().unwrap().unwrap().path();
    let batch = fairshare_engine::io::read_parquet_whole(&file).unwrap();
    let (users, usage) = (batch.column_by_name("user").unwrap(), batch.column_by_name("raw_usage").unwrap());
    let (users, usage) = (users.as_string::<i32>(), usage.as_primitive::<arrow::datatypes::Float64Type>());
    let x1: Vec<f64> = (0..batch.num_rows())
        .filter(|&r| users.is_valid(r) && users.value(r) == "x1")
        .map(|r| usage.value(r))
        .collect();
    assert!(x1.len() == 2 && x1[0] > 0.0 && x1[0] == x1[1], "{x1:?}");
}

/// flux-accounting's CSV loader places a bank by its position, so a bank name may repeat: root →
/// a (u1, 10), a (u2, idle). The idle copy weighs 2^64 against the other's (1/2)/(10/10): u2 2/2,
/// u1 1/2.
#[test]
fn a_repeated_bank_name_in_flux_csv_is_two_banks() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = write_file(
        tmp.path(),
        "t.csv",
        "0,root,%^+_nouser,1,10\n1,a,%^+_nouser,1,10\n2,a,u1,1,10\n1,a,%^+_nouser,1,0\n2,a,u2,1,0\n",
    );
    let args = ["sshare", "--tree", csv.to_str().unwrap(), "--tree-format", "flux-csv", "--algo", "flux", "-P", "-n"];
    let text = stdout_of(&fairshare([&args[..], &["-o", "Account,User,FairShare"]].concat()));
    let rows: Vec<String> = text.lines().map(|l| l.split('|').map(str::trim).collect::<Vec<_>>().join("|")).collect();
    assert_eq!(rows, ["root||", "a||", "a|u1|0.500000", "a||", "a|u2|1.000000"], "{text}");
}
