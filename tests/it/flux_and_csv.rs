//! flux-accounting databases and CSV dialects (issue 16 B): a non-finite config value and a bank
//! cycle out of the root's reach are named, reading a WAL-mode database leaves its directory as it
//! was, and quoted headers (pyarrow's `write_csv`) and byte order marks read as plain CSV does.

use std::path::{Path, PathBuf};

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
