//! A flux-accounting database's `jobs` table as job records.
//!
//! Every row of `jobs` is an inactive (completed, failed or cancelled) job. Its user is the
//! association whose `userid` matches (the first by rowid when several usernames share one id),
//! its account the job's `bank`, its allocation the node, core and GPU counts of its `R`, as
//! `cpu=N,node=M[,gres/gpu=G]`. Jobs whose `R` cannot be read are skipped, as flux-accounting
//! skips them.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::types::ValueRef;

use crate::io::flux_db::{db_err, open_read};
use crate::usage::flux::parse_r;
use crate::usage::{JobRef, JobSink};
use fairshare_base::error::Result;

/// Streams the `jobs` table of a flux-accounting database, in rowid order.
///
/// # Errors
/// `-` or a stream, not a readable SQLite database, no `jobs` table, or the sink's error.
pub fn read(path: &Path, sink: &mut JobSink<'_>) -> Result<()> {
    let err = db_err(path);
    let conn = open_read(path)?;
    let mut names: HashMap<i64, String> = HashMap::new();
    {
        let mut q = conn.prepare("SELECT userid, username FROM association_table ORDER BY rowid").map_err(&err)?;
        let mut rows = q.query([]).map_err(&err)?;
        while let Some(r) = rows.next().map_err(&err)? {
            if let (Ok(id), Ok(name)) = (r.get::<_, i64>(0), r.get::<_, String>(1)) {
                names.entry(id).or_insert(name);
            }
        }
    }
    let mut q =
        conn.prepare("SELECT rowid, id, userid, bank, t_run, t_inactive, R FROM jobs ORDER BY rowid").map_err(&err)?;
    let mut rows = q.query([]).map_err(&err)?;
    let mut tres = String::new();
    let seconds = |v: ValueRef<'_>| match v {
        ValueRef::Integer(i) => Some(i),
        ValueRef::Real(f) if f.is_finite() => Some(f as i64),
        _ => None,
    };
    while let Some(r) = rows.next().map_err(&err)? {
        let row: i64 = r.get(0).map_err(&err)?;
        let user = match r.get_ref(2).map_err(&err)? {
            ValueRef::Integer(id) => names.get(&id).map_or("", String::as_str),
            _ => "",
        };
        let bank = match r.get_ref(3).map_err(&err)? {
            ValueRef::Text(t) => std::str::from_utf8(t).unwrap_or(""),
            _ => "",
        };
        let resources = match r.get_ref(6).map_err(&err)? {
            ValueRef::Text(t) | ValueRef::Blob(t) => parse_r(t),
            _ => None,
        };
        let (Some(res), Some(start), Some(end)) =
            (resources, seconds(r.get_ref(4).map_err(&err)?), seconds(r.get_ref(5).map_err(&err)?))
        else {
            continue;
        };
        tres.clear();
        tres.push_str(&format!("cpu={},node={}", res.ncores, res.nnodes));
        if res.ngpus > 0 {
            tres.push_str(&format!(",gres/gpu={}", res.ngpus));
        }
        let job_id = r.get::<_, i64>(1).ok().and_then(|i| u64::try_from(i).ok()).unwrap_or(row as u64);
        sink(&JobRef {
            job_id,
            user,
            account: bank,
            partition: "",
            qos: "",
            start: Some(start),
            end: Some(end),
            tres_alloc: &tres,
            time_limit: None,
            line: row as u64,
            skip: None,
            started_at_submit: false,
        })?;
    }
    Ok(())
}
