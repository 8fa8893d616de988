//! The database side of [`FluxDbUsage`]: what `flux account-update-usage` reads from a
//! flux-accounting database ([`FluxDbUsage::load`], [`FluxUsageConfig::read`]), and what it and
//! update-fshare write ([`FluxDbUsage::write_back`]). The run in between is
//! [`FluxDbUsage::update`], in memory.
//!
//! These are methods of the types of [`crate::usage::flux`], written here so that the usage model
//! holds no SQL.

use std::path::Path;

use fairshare_base::hash::FastMap;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, TransactionBehavior, params};

use crate::io::flux_db::tree::check_parent_cycles;
use crate::io::flux_db::{db_err, open_read, open_write};
use crate::usage::flux::{
    AssocUsage, ConfigRows, DbAssoc, DbJob, FactorRow, FluxDbUsage, FluxUsageConfig, job_usage, parse_config, parse_r,
    walk_banks,
};
use fairshare_base::error::{Error, Result};

impl FluxUsageConfig {
    /// Reads `config_table` of a flux-accounting database; a missing table means all defaults.
    ///
    /// # Errors
    /// The file is not a readable SQLite database, or a value is not a finite number.
    pub fn read(db_path: &Path) -> Result<Self> {
        let conn = open_read(db_path)?;
        Ok(read_config(db_path, &conn)?.cfg)
    }
}

fn read_config(path: &Path, conn: &Connection) -> Result<ConfigRows> {
    // An older schema without config_table runs on the defaults.
    let rows: Vec<(String, String)> = match conn.prepare("SELECT key, value FROM config_table") {
        Ok(mut q) => q
            .query_map([], |r| Ok((r.get::<_, String>(0)?, text_of(r.get_ref(1)?))))
            .map_err(db_err(path))?
            .collect::<std::result::Result<_, _>>()
            .map_err(db_err(path))?,
        Err(_) => Vec::new(),
    };
    parse_config(path, rows.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// A config value as the text Python's `float()` would see.
fn text_of(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(x) => x.to_string(),
        ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Null => String::new(),
    }
}

/// A numeric SQL value; `None` for NULL and non-numeric text, which never pass SQL comparisons.
fn real(v: ValueRef<'_>) -> Option<f64> {
    match v {
        ValueRef::Integer(i) => Some(i as f64),
        ValueRef::Real(x) => Some(x),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

impl FluxDbUsage {
    /// Loads a flux-accounting database: config, associations and their bins and last job
    /// timestamps, banks, the half-life period end, and the jobs that pass the new-jobs filter
    /// (`t_inactive` after the association's `last_job_timestamp`, the bank's `ignore_older_than`
    /// and `reconfigure_time`; jobs matched to `job_usage_factor_table` by `(userid, bank)`).
    /// Each job's usage is computed here; jobs whose `R` cannot be parsed are skipped.
    ///
    /// # Errors
    /// The file is not a readable flux-accounting database (a table is missing), a config value
    /// is not a finite number, `t_half_life_period_table` has no `cluster` row, there is no root bank,
    /// the bank tree has a cycle, or an association's `job_usage` or a bin value is NULL.
    pub fn load(db_path: &Path) -> Result<Self> {
        let path = db_path;
        let err = db_err(path);
        let conn = open_read(path)?;
        let ConfigRows { cfg, reconfigure_time } = read_config(path, &conn)?;

        let end_hl: Option<f64> = conn
            .query_row("SELECT end_half_life_period FROM t_half_life_period_table WHERE cluster='cluster'", [], |r| {
                Ok(real(r.get_ref(0)?))
            })
            .map_err(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => {
                    Error::input(path, None, "t_half_life_period_table: no row for cluster 'cluster'")
                }
                e => err(e),
            })?;
        let end_hl =
            end_hl.ok_or_else(|| Error::input(path, None, "t_half_life_period_table: end_half_life_period is NULL"))?;

        let banks: Vec<(String, Option<String>)> = conn
            .prepare("SELECT bank, parent_bank FROM bank_table ORDER BY rowid")
            .and_then(|mut q| q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .map_err(&err)?;
        if !banks.iter().any(|b| b.1.as_deref() == Some("")) {
            return Err(Error::input(path, None, "no root bank: no bank_table row has parent_bank=''"));
        }

        // job_usage_factor_table, with (userid, bank) job groups.
        let mut factors = Vec::new();
        let mut factor_index: FastMap<(String, String), usize> = FastMap::default();
        let mut group_index: FastMap<(i64, String), usize> = FastMap::default();
        {
            let mut q = conn
                .prepare("SELECT username, bank, userid, last_job_timestamp FROM job_usage_factor_table ORDER BY rowid")
                .map_err(&err)?;
            let mut rows = q.query([]).map_err(&err)?;
            while let Some(r) = rows.next().map_err(&err)? {
                let username: String = r.get(0).map_err(&err)?;
                let bank: String = r.get(1).map_err(&err)?;
                let userid = match r.get_ref(2).map_err(&err)? {
                    ValueRef::Integer(i) => Some(i),
                    _ => None,
                };
                let next = group_index.len();
                let group = userid.map(|u| *group_index.entry((u, bank.clone())).or_insert(next));
                let last = real(r.get_ref(3).map_err(&err)?);
                factor_index.insert((username.clone(), bank.clone()), factors.len());
                factors.push(FactorRow { username, bank, group, last, last_written: false });
            }
        }

        // Bins, grouped per association and ordered by period.
        let mut bins: FastMap<(String, String), (Vec<i64>, Vec<f64>)> = FastMap::default();
        {
            let mut q = conn
                .prepare(
                    "SELECT username, bank, period, value FROM job_usage_per_association_table \
                     ORDER BY username, bank, period",
                )
                .map_err(&err)?;
            let mut rows = q.query([]).map_err(&err)?;
            while let Some(r) = rows.next().map_err(&err)? {
                let username: String = r.get(0).map_err(&err)?;
                let bank: String = r.get(1).map_err(&err)?;
                let period: i64 = r.get(2).map_err(&err)?;
                let value = real(r.get_ref(3).map_err(&err)?).ok_or_else(|| {
                    Error::input(
                        path,
                        None,
                        format!("job_usage_per_association_table: {username} in {bank}, period {period}: value is not a number"),
                    )
                })?;
                let e = bins.entry((username, bank)).or_default();
                e.0.push(period);
                e.1.push(value);
            }
        }

        let mut assocs = Vec::new();
        {
            let mut q =
                conn.prepare("SELECT username, bank, job_usage FROM association_table ORDER BY rowid").map_err(&err)?;
            let mut rows = q.query([]).map_err(&err)?;
            while let Some(r) = rows.next().map_err(&err)? {
                let username: String = r.get(0).map_err(&err)?;
                let bank: String = r.get(1).map_err(&err)?;
                let job_usage = real(r.get_ref(2).map_err(&err)?).ok_or_else(|| {
                    Error::input(
                        path,
                        None,
                        format!("association_table: {username} in {bank}: job_usage is not a number"),
                    )
                })?;
                let key = (username, bank);
                let factor = factor_index.get(&key).copied();
                let (periods, values) = bins.remove(&key).unwrap_or_default();
                let last_job_timestamp = factor.and_then(|f| factors[f].last).unwrap_or(0.0);
                let (username, bank) = key;
                assocs.push(DbAssoc {
                    username,
                    bank,
                    factor,
                    periods,
                    state: AssocUsage { bins: values, last_job_timestamp, job_usage },
                    written: false,
                });
            }
        }

        // The new-jobs query of update-usage; later runs in memory only re-apply the
        // last_job_timestamp part, which only moves forward.
        let mut jobs = Vec::new();
        let mut skipped_jobs = 0u64;
        {
            let mut q = conn
                .prepare(
                    "SELECT j.username, j.bank, r.t_run, r.t_inactive, r.R \
                     FROM jobs r \
                     JOIN job_usage_factor_table j ON r.userid = j.userid AND r.bank = j.bank \
                     JOIN bank_table b ON r.bank = b.bank \
                     WHERE r.t_inactive > j.last_job_timestamp AND r.t_inactive > b.ignore_older_than \
                       AND r.t_inactive > ?1 \
                     ORDER BY r.rowid, j.rowid",
                )
                .map_err(&err)?;
            let mut rows = q.query(params![reconfigure_time]).map_err(&err)?;
            while let Some(r) = rows.next().map_err(&err)? {
                let username: String = r.get(0).map_err(&err)?;
                let bank: String = r.get(1).map_err(&err)?;
                let Some(&factor) = factor_index.get(&(username, bank)) else { continue };
                let t_run = real(r.get_ref(2).map_err(&err)?);
                let t_inactive = real(r.get_ref(3).map_err(&err)?);
                let res = match r.get_ref(4).map_err(&err)? {
                    ValueRef::Text(t) | ValueRef::Blob(t) => parse_r(t),
                    _ => None,
                };
                match (t_run, t_inactive, res) {
                    (Some(t_run), Some(t_inactive), Some(res)) => {
                        let usage = job_usage(res.nnodes, res.ncores, res.ngpus, t_inactive - t_run, &cfg);
                        jobs.push(DbJob { factor, t_inactive, usage });
                    }
                    _ => skipped_jobs += 1,
                }
            }
        }

        let usage = FluxDbUsage {
            cfg,
            reconfigure_time,
            end_hl,
            end_hl_written: false,
            assocs,
            factors,
            groups: group_index.len(),
            jobs,
            banks,
            bank_writes: Vec::new(),
            skipped_jobs,
        };
        let bank_rows: Vec<(&str, Option<&str>)> =
            usage.banks.iter().map(|(b, p)| (b.as_str(), p.as_deref())).collect();
        if walk_banks(&bank_rows, &[]).1 {
            return Err(Error::input(path, None, "bank_table: a bank is its own ancestor"));
        }
        let root = bank_rows.iter().find(|b| b.1 == Some("")).map_or("", |b| b.0);
        check_parent_cycles(path, root, &bank_rows)?;
        Ok(usage)
    }

    /// Writes, in one `BEGIN IMMEDIATE` transaction, everything update-usage writes:
    /// `association_table.job_usage` and the bins of every association that took branch 2–4,
    /// `last_job_timestamp` of those that had new jobs, `end_half_life_period` when it moved, and
    /// `bank_table.job_usage` of every bank under the root; and, as update-fshare does,
    /// `association_table.fairshare` of the given `(username, bank, fairshare)` rows, one UPDATE
    /// each in the order given (an association given twice keeps the later value).
    ///
    /// # Errors
    /// A fair-share value is not finite, the database cannot be opened for writing, or an UPDATE
    /// fails; nothing is written then.
    pub fn write_back(&self, db_path: &Path, fairshare: &[(String, String, f64)]) -> Result<()> {
        if let Some((u, b, fs)) = fairshare.iter().find(|v| !v.2.is_finite()) {
            return Err(Error::Usage(format!("fair-share of {u} in {b} is {fs}, not a finite number")));
        }
        let err = db_err(db_path);
        let mut conn = open_write(db_path)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(&err)?;
        {
            let mut set_usage =
                tx.prepare("UPDATE association_table SET job_usage=?1 WHERE username=?2 AND bank=?3").map_err(&err)?;
            let mut set_bin = tx
                .prepare(
                    "UPDATE job_usage_per_association_table SET value=?1 WHERE username=?2 AND bank=?3 AND period=?4",
                )
                .map_err(&err)?;
            for a in self.assocs.iter().filter(|a| a.written) {
                set_usage.execute(params![a.state.job_usage, a.username, a.bank]).map_err(&err)?;
                for (&period, &value) in a.periods.iter().zip(&a.state.bins) {
                    set_bin.execute(params![value, a.username, a.bank, period]).map_err(&err)?;
                }
            }
            let mut set_last = tx
                .prepare("UPDATE job_usage_factor_table SET last_job_timestamp=?1 WHERE username=?2 AND bank=?3")
                .map_err(&err)?;
            for f in self.factors.iter().filter(|f| f.last_written) {
                set_last.execute(params![f.last, f.username, f.bank]).map_err(&err)?;
            }
            let mut set_bank = tx.prepare("UPDATE bank_table SET job_usage=?1 WHERE bank=?2").map_err(&err)?;
            for (bank, usage) in &self.bank_writes {
                set_bank.execute(params![usage, bank]).map_err(&err)?;
            }
            if self.end_hl_written {
                tx.execute(
                    "UPDATE t_half_life_period_table SET end_half_life_period=?1 WHERE cluster='cluster'",
                    params![self.end_hl],
                )
                .map_err(&err)?;
            }
            // update-fshare's values, bound as `std::to_string`'s 6-decimal text as flux's writer
            // does; SQLite's REAL affinity converts it.
            let mut set_fs =
                tx.prepare("UPDATE association_table SET fairshare=?1 WHERE username=?2 AND bank=?3").map_err(&err)?;
            for (username, bank, fs) in fairshare {
                set_fs.execute(params![format!("{fs:.6}"), username, bank]).map_err(&err)?;
            }
        }
        tx.commit().map_err(&err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::flux::tests::r_json;

    /// flux-accounting's tables, shared with the integration tests.
    const SCHEMA: &str = include_str!("../../../../../tests/fixtures/flux_schema.sql");

    /// End to end through SQLite. P = 1000, D = 0.5, node 1 / core 0.5 / GPU 2, reconfigure_time
    /// 500, end_hl 10000, run at now = 11500: now − P = 10500 > end_hl, so associations without new
    /// jobs rotate (branch 2), and end_hl moves to 11000.
    #[test]
    fn db_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("FluxAccounting.db");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn.execute_batch(
            "INSERT INTO config_table VALUES ('priority_decay_half_life','1000'),
                ('priority_usage_reset_period','4000'), ('decay_factor','0.5'), ('node_weight','1.0'),
                ('core_weight','0.5'), ('gpu_weight','2'), ('reconfigure_time','500');
             INSERT INTO t_half_life_period_table VALUES ('cluster', 10000);
             INSERT INTO bank_table (bank, parent_bank, ignore_older_than, job_usage) VALUES
                ('root','',0,0), ('A','root',0,0), ('B','root',10300,0), ('A1','A',0,0), ('lost','nowhere',0,77);",
        )
        .unwrap();
        // (username, userid, bank, active, job_usage, bins, last_job_timestamp or no factor row)
        let assocs: [(&str, i64, &str, i64, f64, [f64; 4], Option<f64>); 6] = [
            ("alice", 1001, "A1", 1, 150.0, [100.0, 40.0, 20.0, 8.0], Some(9000.0)),
            ("bob", 1002, "A1", 1, 90.0, [50.0, 30.0, 10.0, 4.0], Some(9500.0)),
            ("carol", 1003, "B", 1, 19.0, [10.0, 6.0, 2.0, 1.0], Some(0.0)),
            ("dave", 1004, "A1", 0, 8.0, [8.0, 0.0, 0.0, 0.0], Some(0.0)),
            ("erin", 1005, "A", 1, 16.0, [16.0, 0.0, 0.0, 0.0], Some(0.0)),
            ("frank", 1006, "B", 1, 4.0, [2.0, 2.0, 0.0, 0.0], None),
        ];
        for (user, uid, bank, active, usage, bins, last) in assocs {
            conn.execute(
                "INSERT INTO association_table (username, userid, bank, default_bank, active, job_usage)
                 VALUES (?1, ?2, ?3, ?3, ?4, ?5)",
                params![user, uid, bank, active, usage],
            )
            .unwrap();
            for (k, v) in bins.iter().enumerate() {
                conn.execute(
                    "INSERT INTO job_usage_per_association_table VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![user, uid, bank, k as i64, v],
                )
                .unwrap();
            }
            if let Some(last) = last {
                conn.execute(
                    "INSERT INTO job_usage_factor_table VALUES (?1, ?2, ?3, ?4)",
                    params![user, uid, bank, last],
                )
                .unwrap();
            }
        }
        let jobs: [(&str, i64, &str, f64, f64, String); 10] = [
            // alice: 2 nodes × 4 cores, 200 s → (2 + 8·0.5)·200 = 1200
            ("a1", 1001, "A1", 10200.0, 10400.0, r_json("0-1", "0-3", None)),
            // alice: 1 node, 8 cores, 2 GPUs, 100 s → (1 + 4 + 4)·100 = 900
            ("a2", 1001, "A1", 10800.0, 10900.0, r_json("5", "0-7", Some("0-1"))),
            // alice: before her last_job_timestamp 9000
            ("a0", 1001, "A1", 7000.0, 8000.0, r_json("0", "0", None)),
            // alice: R unparsable → skipped
            ("a3", 1001, "A1", 10000.0, 10500.0, "not json".to_owned()),
            // carol: not after B's ignore_older_than 10300
            ("c1", 1003, "B", 10200.0, 10250.0, r_json("0", "0", None)),
            // carol: 4 nodes × 2 cores, 200 s → (4 + 4)·200 = 1600
            ("c2", 1003, "B", 11000.0, 11200.0, r_json("0-2,4", "0-1", None)),
            // dave: not after reconfigure_time 500
            ("d1", 1004, "A1", 100.0, 480.0, r_json("0", "0", None)),
            // dave: no association in B
            ("d2", 1004, "B", 11000.0, 11100.0, r_json("0", "0", None)),
            // erin: 1 node, 1 core, 100 s → 1.5·100 = 150
            ("e1", 1005, "A", 11000.0, 11100.0, r_json("3", "0", None)),
            // frank: no job_usage_factor_table row → never matched
            ("f1", 1006, "B", 11000.0, 11300.0, r_json("0", "0", None)),
        ];
        for (id, uid, bank, t_run, t_inactive, r) in &jobs {
            conn.execute(
                "INSERT INTO jobs (id, userid, t_submit, t_run, t_inactive, ranks, R, jobspec, bank)
                 VALUES (?1, ?2, ?3, ?3, ?4, '', ?5, '{}', ?6)",
                params![id, uid, t_run, t_inactive, r, bank],
            )
            .unwrap();
        }
        drop(conn);

        let mut usage = FluxDbUsage::load(&db).unwrap();
        assert_eq!(usage.reconfigure_time(), 500.0);
        assert_eq!(usage.config().bins, 4);
        assert_eq!(usage.skipped_jobs(), 1);
        usage.update(11_500.0);
        usage.write_back(&db, &[]).unwrap();

        // alice: 1200 + 900 = 2100, last 10900; 10900 − 10000 < 1000 → branch 3 (Q4: no rotation):
        //   bins [2200, 40, 20, 8], job_usage 2268.
        // bob: no jobs → branch 2: [0, 25, 15, 5], job_usage 45.
        // carol: 1600, last 11200; 1200 ≥ 1000 → branch 4: decay [10, 6, 2, 1] → [0, 5, 3, 1], past 9,
        //   bin 0 = job_usage = 1609.
        // dave (inactive): no jobs → [0, 4, 0, 0], 4.
        // erin (bank A, which has a sub-bank): 150, last 11100 → branch 4: [158, 8, 0, 0], 158.
        // frank: no factor row → no jobs → branch 2: [0, 1, 1, 0], 2.
        let expect: [(&str, &str, f64, [f64; 4], Option<f64>); 6] = [
            ("alice", "A1", 2268.0, [2200.0, 40.0, 20.0, 8.0], Some(10900.0)),
            ("bob", "A1", 45.0, [0.0, 25.0, 15.0, 5.0], Some(9500.0)),
            ("carol", "B", 1609.0, [1609.0, 5.0, 3.0, 1.0], Some(11200.0)),
            ("dave", "A1", 4.0, [0.0, 4.0, 0.0, 0.0], Some(0.0)),
            ("erin", "A", 158.0, [158.0, 8.0, 0.0, 0.0], Some(11100.0)),
            ("frank", "B", 2.0, [0.0, 1.0, 1.0, 0.0], None),
        ];
        // Bank sums: A1 = 2268 + 45 + 4 = 2317 (dave counts though inactive); A = A1 (erin ignored);
        // B = 1609 + 2 = 1611; root = 3928; "lost" is not under the root and keeps 77.
        let banks = [("root", 3928.0), ("A", 2317.0), ("B", 1611.0), ("A1", 2317.0), ("lost", 77.0)];

        let conn = Connection::open(&db).unwrap();
        for (user, bank, job_usage, bins, last) in expect {
            let got: f64 = conn
                .query_row("SELECT job_usage FROM association_table WHERE username=?1 AND bank=?2", [user, bank], |r| {
                    r.get(0)
                })
                .unwrap();
            assert_eq!(got, job_usage, "{user}");
            assert_eq!(usage.association(user, bank).unwrap().job_usage, job_usage);
            let got: Vec<f64> = conn
                .prepare(
                    "SELECT value FROM job_usage_per_association_table WHERE username=?1 AND bank=?2 ORDER BY period",
                )
                .unwrap()
                .query_map([user, bank], |r| r.get(0))
                .unwrap()
                .collect::<std::result::Result<_, _>>()
                .unwrap();
            assert_eq!(got, bins, "{user}");
            let got: Option<f64> = conn
                .query_row(
                    "SELECT last_job_timestamp FROM job_usage_factor_table WHERE username=?1 AND bank=?2",
                    [user, bank],
                    |r| r.get(0),
                )
                .ok();
            assert_eq!(got, last, "{user}");
        }
        for (bank, job_usage) in banks {
            let got: f64 =
                conn.query_row("SELECT job_usage FROM bank_table WHERE bank=?1", [bank], |r| r.get(0)).unwrap();
            assert_eq!(got, job_usage, "{bank}");
        }
        let end_hl: f64 =
            conn.query_row("SELECT end_half_life_period FROM t_half_life_period_table", [], |r| r.get(0)).unwrap();
        assert_eq!(end_hl, 11000.0);
        let listed: Vec<(&str, &str, f64)> = usage.job_usages().collect();
        assert_eq!(listed[0], ("alice", "A1", 2268.0));
        assert_eq!(usage.bank_usages().last(), Some(("root", 3928.0)));
        drop(conn);

        // Next run from the written DB at 12100 (now − P = 11100 > end_hl 11000): no new jobs,
        // alice rotates [2200, 40, 20, 8] → [0, 1100, 20, 10] = 1130.
        let mut again = FluxDbUsage::load(&db).unwrap();
        assert_eq!(again.skipped_jobs(), 0); // a3 (10500) is now before alice's 10900
        again.update(12_100.0);
        let alice = again.association("alice", "A1").unwrap();
        assert_eq!((alice.job_usage, alice.bins.as_slice()), (1130.0, &[0.0, 1100.0, 20.0, 10.0][..]));
        assert_eq!(again.end_half_life_period(), 12000.0);

        // Fair-share is stored as flux's 6-decimal text.
        again.write_back(&db, &[("alice".into(), "A1".into(), 6.0 / 7.0)]).unwrap();
        let conn = Connection::open(&db).unwrap();
        let (fs, ty): (f64, String) = conn
            .query_row("SELECT fairshare, typeof(fairshare) FROM association_table WHERE username='alice'", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((fs, ty.as_str()), (0.857143, "real"));
    }

    #[test]
    fn load_errors() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        drop(conn);
        let e = FluxDbUsage::load(&db).unwrap_err().to_string();
        assert!(e.contains("t_half_life_period_table"), "{e}");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch("INSERT INTO t_half_life_period_table VALUES ('cluster', 1)").unwrap();
        drop(conn);
        let e = FluxDbUsage::load(&db).unwrap_err().to_string();
        assert!(e.contains("no root bank"), "{e}");
    }
}
