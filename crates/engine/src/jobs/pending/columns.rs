//! The canonical columns the CSV and Parquet queues share: where each one is in a header or a
//! schema, and a row's cells read into a job, checked as the CSV reader checks its text.

use super::queue::{DEFAULT_URGENCY, NICE_RANGE, NO_VAL, Names, RawJob, TresReq};
use crate::config::time::{TimeLimit, parse_time};
use fairshare_base::read::fields::strip_zero_fraction;
use fairshare_base::read::time::parse_time_field;

/// One value of a job row: text (CSV, JSON, string columns) or an integer (typed Parquet columns).
#[derive(Clone, Copy)]
pub(super) enum Cell<'a> {
    Text(&'a str),
    Int(i64),
    /// A dictionary-encoded name column, already interned.
    Ids(&'a [u32]),
    /// A dictionary-encoded `tres_req`, already read.
    Tres(&'a std::result::Result<Vec<u64>, String>),
    Null,
}

/// Column positions of the canonical header.
pub(super) struct Columns {
    pub(super) width: usize,
    pub(super) job_id: usize,
    pub(super) user: usize,
    pub(super) account: usize,
    pub(super) partition: usize,
    pub(super) qos: usize,
    pub(super) submit: usize,
    pub(super) accrue: usize,
    pub(super) min_nodes: usize,
    pub(super) cpus: usize,
    pub(super) time_limit: usize,
    pub(super) nice: usize,
    pub(super) site_factor: usize,
    pub(super) tres_req: usize,
    pub(super) urgency: Option<usize>,
}

impl Columns {
    pub(super) fn resolve(names: &[String]) -> Result<Self, String> {
        let find = |n: &str| {
            names.iter().position(|h| h == n).ok_or_else(|| {
                format!(
                    "missing column {n:?}: the header must have job_id,user,account,partition,qos,submit_time,\
                     accrue_time,min_nodes,cpus,time_limit,nice,site_factor,tres_req"
                )
            })
        };
        Ok(Columns {
            width: names.len(),
            job_id: find("job_id")?,
            user: find("user")?,
            account: find("account")?,
            partition: find("partition")?,
            qos: find("qos")?,
            submit: find("submit_time")?,
            accrue: find("accrue_time")?,
            min_nodes: find("min_nodes")?,
            cpus: find("cpus")?,
            time_limit: find("time_limit")?,
            nice: find("nice")?,
            site_factor: find("site_factor")?,
            tres_req: find("tres_req")?,
            urgency: names.iter().position(|h| h == "urgency"),
        })
    }

    pub(super) fn raw<'a>(&self, cell: impl Fn(usize) -> Cell<'a>) -> Result<RawJob<'a>, String> {
        let text = |i: usize| match cell(i) {
            Cell::Text(t) => t.trim(),
            _ => "",
        };
        let names = |i: usize| match cell(i) {
            Cell::Ids(ids) => Names::Ids(ids),
            _ => Names::Text(text(i)),
        };
        let int = |i: usize, what: &str, default: i64, range: std::ops::RangeInclusive<i64>| -> Result<i64, String> {
            let v = match cell(i) {
                Cell::Null | Cell::Ids(_) | Cell::Tres(_) => return Ok(default),
                Cell::Int(v) => v,
                Cell::Text(t) if t.trim().is_empty() => return Ok(default),
                Cell::Text(t) => {
                    let digits = strip_zero_fraction(t.trim());
                    match digits.parse::<i64>() {
                        Ok(v) => v,
                        // Digits beyond 64 bits are out of range, not "not an integer".
                        Err(_) if digits.parse::<i128>().is_ok() => {
                            return Err(format!("{what} {digits} is not in {range:?}"));
                        }
                        Err(_) => return Err(format!("{what} {:?} is not an integer", t.trim())),
                    }
                }
            };
            if range.contains(&v) { Ok(v) } else { Err(format!("{what} {v} is not in {range:?}")) }
        };
        let time = |i: usize, what: &str| -> Result<Option<i64>, String> {
            match cell(i) {
                Cell::Null | Cell::Ids(_) | Cell::Tres(_) => Ok(None),
                Cell::Int(v) => Ok(Some(v)),
                Cell::Text(t) => parse_time_field(t).map_err(|m| format!("{what}: {m}")),
            }
        };
        let time_limit = match cell(self.time_limit) {
            Cell::Int(m) => u32::try_from(m).map_err(|_| format!("time_limit {m} is not a number of minutes"))?,
            Cell::Text(t) if !t.trim().is_empty() => {
                match parse_time(strip_zero_fraction(t.trim())).map_err(|m| format!("time_limit: {m}"))? {
                    TimeLimit::Unlimited => NO_VAL,
                    TimeLimit::Minutes(m) => m,
                }
            }
            _ => NO_VAL,
        };
        if matches!(cell(self.job_id), Cell::Null) || matches!(cell(self.job_id), Cell::Text(t) if t.trim().is_empty())
        {
            return Err("job_id is empty".into());
        }
        Ok(RawJob {
            job_id: int(self.job_id, "job_id", 0, 0..=i64::MAX)? as u64,
            user: names(self.user),
            account: names(self.account),
            partition: names(self.partition),
            qos: names(self.qos),
            submit: time(self.submit, "submit_time")?.ok_or("submit_time is empty")?,
            // Slurm's accrue time 0 means "not yet eligible".
            accrue: time(self.accrue, "accrue_time")?.filter(|&t| t != 0),
            min_nodes: int(self.min_nodes, "min_nodes", 1, 0..=u32::MAX as i64)? as u32,
            cpus: int(self.cpus, "cpus", 0, 0..=u32::MAX as i64)? as u32,
            time_limit,
            nice: int(self.nice, "nice", 0, NICE_RANGE)? as i32,
            site_factor: int(self.site_factor, "site_factor", 0, NICE_RANGE)? as i32,
            tres_req: match cell(self.tres_req) {
                Cell::Tres(counts) => TresReq::Read(counts),
                _ => TresReq::Text(text(self.tres_req)),
            },
            urgency: match self.urgency {
                Some(i) => int(i, "urgency", DEFAULT_URGENCY.into(), 0..=31)? as u8,
                None => DEFAULT_URGENCY,
            },
        })
    }
}
