//! The pending queue as a report shows it: one row per (job, partition, QOS) with its priority
//! terms, read from the batch `jobs.parquet` holds ([`fairshare_engine::output::parquet::jobs_batch`]), so a
//! report made with the run and one made from its directory show the same numbers.

use std::collections::HashMap;
use std::path::Path;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Float64Type, Int32Type, UInt32Type, UInt64Type};

use fairshare_analyses::compare::column_as;
use fairshare_base::Result;
use fairshare_engine::priority::Weights;
use fairshare_engine::tree::AssocTree;

/// One priority row of a pending job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    /// The job id.
    pub job_id: u64,
    /// Its user.
    pub user: String,
    /// Its account.
    pub account: String,
    /// The partition of this row.
    pub partition: String,
    /// The QOS of this row (`None`: no QOS).
    pub qos: Option<String>,
    /// Its user association's tree row (`None`: unknown, scored with fair-share 0).
    pub assoc: Option<usize>,
    /// The priority.
    pub priority: u32,
    /// The weighted terms, in [`Jobs::terms`]' order.
    pub terms: Vec<f64>,
    /// The job's site factor.
    pub site_factor: i32,
    /// Its nice value.
    pub nice: i32,
}

/// The pending queue's priority rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Jobs {
    /// The terms' names, as `explain --job` prints them (`age`, `fairshare`, `tres cpu`).
    pub terms: Vec<String>,
    /// The weight of each term, when known (a run directory does not record them).
    pub weights: Option<Vec<f64>>,
    /// The rows, in the queue's order.
    pub rows: Vec<JobRow>,
}

/// The name of a `prio_*` column's term.
fn term_name(column: &str) -> Option<String> {
    let rest = column.strip_prefix("prio_")?;
    Some(match rest {
        "age" => "age".into(),
        "assoc" => "association".into(),
        "fairshare" => "fairshare".into(),
        "jobsize" => "job size".into(),
        "partition" => "partition".into(),
        "qos" => "qos".into(),
        _ => format!("tres {}", rest.strip_prefix("tres_")?),
    })
}

impl Jobs {
    /// The rows of `batch` (read from `source`, for errors), matched to `tree`'s user
    /// associations by account and user (a partition's own association when there is one);
    /// `weights` as the queue was scored with, when known.
    ///
    /// # Errors
    /// A column is missing or of the wrong type.
    pub fn from_batch(batch: &RecordBatch, source: &Path, tree: &AssocTree, weights: Option<&Weights>) -> Result<Jobs> {
        let text = |n: &str| column_as(batch, source, n, DataType::Utf8);
        let (user, account, partition, qos) = (text("user")?, text("account")?, text("partition")?, text("qos")?);
        let (user, account, partition, qos) =
            (user.as_string::<i32>(), account.as_string::<i32>(), partition.as_string::<i32>(), qos.as_string::<i32>());
        let id = column_as(batch, source, "job_id", DataType::UInt64)?;
        let found = column_as(batch, source, "assoc_found", DataType::Boolean)?;
        let priority = column_as(batch, source, "priority", DataType::UInt32)?;
        let site = column_as(batch, source, "site_factor", DataType::Int32)?;
        let nice = column_as(batch, source, "nice", DataType::Int32)?;
        let names: Vec<(String, String)> =
            batch.schema().fields().iter().filter_map(|f| term_name(f.name()).map(|t| (f.name().clone(), t))).collect();
        let terms =
            names.iter().map(|(c, _)| column_as(batch, source, c, DataType::Float64)).collect::<Result<Vec<_>>>()?;
        let mut by_name: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
        for r in (0..tree.len()).filter(|&r| tree.is_user(r)) {
            by_name.entry((tree.account(r), tree.user_name(r).unwrap_or_default())).or_default().push(r);
        }
        fn value(a: &arrow::array::StringArray, i: usize) -> &str {
            if a.is_valid(i) { a.value(i) } else { "" }
        }
        let rows = (0..batch.num_rows())
            .map(|i| {
                let (u, a, p) = (value(user, i), value(account, i), value(partition, i));
                let assoc = found.as_boolean().value(i).then(|| by_name.get(&(a, u))).flatten().and_then(|rows| {
                    rows.iter()
                        .find(|&&r| tree.partition(r) == Some(p))
                        .or_else(|| rows.iter().find(|&&r| tree.partition(r).is_none()))
                        .or(rows.first())
                        .copied()
                });
                JobRow {
                    job_id: id.as_primitive::<UInt64Type>().value(i),
                    user: u.to_string(),
                    account: a.to_string(),
                    partition: p.to_string(),
                    qos: qos.is_valid(i).then(|| qos.value(i).to_string()),
                    assoc,
                    priority: priority.as_primitive::<UInt32Type>().value(i),
                    terms: terms.iter().map(|t| t.as_primitive::<Float64Type>().value(i)).collect(),
                    site_factor: site.as_primitive::<Int32Type>().value(i),
                    nice: nice.as_primitive::<Int32Type>().value(i),
                }
            })
            .collect();
        let weights = weights.map(|w| {
            [w.age, w.assoc, w.fairshare, w.job_size, w.partition, w.qos]
                .into_iter()
                .chain(w.tres.iter().map(|(_, x)| *x))
                .collect()
        });
        Ok(Jobs { terms: names.into_iter().map(|(_, t)| t).collect(), weights, rows })
    }
}
