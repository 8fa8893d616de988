//! `fairshare entitlement`'s outputs: a text table in sshare's layout, tidy Parquet rows and JSON.
//!
//! The Parquet file is tidy: one row per (association, TRES), associations in the tree's
//! breadth-first order and TRES in Slurm's order within each, so the schema is the same for every
//! site whatever GRES its nodes declare. DuckDB reads a TRES with
//! `SELECT account, "user", deserved, allocated FROM 'e.parquet' WHERE tres = 'cpu'`, and
//! `PIVOT 'e.parquet' ON tres USING first(deserved) GROUP BY id` gives one row per association;
//! polars with `.filter(pl.col("tres") == "cpu")` or `.pivot(on="tres", index="id",
//! values="deserved")`. Columns: `id`, `parent_id` (null for the root), `depth`, `account`,
//! `user` and `partition` (null for accounts), `raw_shares` (null for `parent`),
//! `parent_shares`, `tres` (`cpu`, `mem`, `gres/gpu`, ...), `capacity`, `demand` = `running` +
//! `pending`, `allocated` (what running jobs hold, = `running`), `deserved` and `over` =
//! `allocated` − `deserved`. `mem` is in MB, as Slurm counts it.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use parquet::file::metadata::KeyValue;

use crate::entitlement::Entitlement;
use fairshare_base::error::{Error, Result};
use fairshare_engine::config::Tres;
use fairshare_engine::tree::AssocTree;

/// The TRES the text table shows, when present: `cpu`, `gres/gpu`, `mem`.
pub fn main_tres(e: &Entitlement) -> Vec<usize> {
    [Tres::CPU, Tres::gres("gpu"), Tres::MEM].iter().filter_map(|t| e.index(t)).collect()
}

/// Appends a value of TRES `tres` as the table prints it to `out`: memory in GB, the rest as
/// counts, one decimal where the value has a fraction (`+` before a positive value when `signed`,
/// and a bare `0` for what rounds to zero).
fn push_shown(out: &mut String, tres: &Tres, v: f64, signed: bool) {
    let v = if *tres == Tres::MEM { v / 1024.0 } else { v };
    let sign = if signed && v >= 0.05 { "+" } else { "" };
    // Writing to a String cannot fail.
    let _ = if v.abs() < 0.05 {
        write!(out, "0")
    } else if (v - v.round()).abs() < 0.05 {
        write!(out, "{sign}{:.0}", v.round())
    } else {
        write!(out, "{sign}{v:.1}")
    };
}

/// The table's heading of TRES `tres`.
fn heading(tres: &Tres) -> String {
    if *tres == Tres::MEM { "mem (GB)".into() } else { tres.to_string() }
}

const ACCOUNT: usize = 20;
const USER: usize = 10;
const COLUMN: usize = 10;
const COLUMNS: [&str; 4] = ["Demand", "Deserved", "Allocated", "Over"];

/// Writes the table: `Account` (indented by depth, as sshare does) and `User`, then for each of
/// the main TRES ([`main_tres`]) its Demand, Deserved, Allocated and Over; rows in sshare's order
/// (depth-first). Destination errors name `dest` (`<stdout>` when `None`).
///
/// # Errors
/// A failed write.
pub fn write_table(out: &mut dyn Write, tree: &AssocTree, e: &Entitlement, dest: Option<&Path>) -> Result<()> {
    let main = main_tres(e);
    let mut text = String::new();
    let block = COLUMNS.len() * (COLUMN + 1);
    text.push_str(&format!("{:ACCOUNT$} {:USER$}", "", ""));
    for &k in &main {
        text.push_str(&format!(" |{:^w$}", heading(&e.tres[k]), w = block - 1));
    }
    text.truncate(text.trim_end().len());
    text.push('\n');
    text.push_str(&format!("{:<ACCOUNT$} {:<USER$}", "Account", "User"));
    for _ in &main {
        text.push_str(" |");
        for c in COLUMNS {
            text.push_str(&format!("{c:>COLUMN$} "));
        }
        text.pop();
    }
    text.push('\n');
    text.push_str(&format!("{} {}", "-".repeat(ACCOUNT), "-".repeat(USER)));
    for _ in &main {
        text.push_str(&format!(" |{}", vec!["-".repeat(COLUMN); COLUMNS.len()].join(" ")));
    }
    text.push('\n');
    let dest = fairshare_engine::output::dest_name(dest);
    let mut flush = |text: &mut String| -> Result<()> {
        out.write_all(text.as_bytes()).map_err(|err| Error::io(dest, err))?;
        text.clear();
        Ok(())
    };
    let mut cell = String::new();
    for row in tree.preorder() {
        let row = row as usize;
        cell.clear();
        cell.extend(std::iter::repeat_n(' ', tree.depths()[row] as usize));
        cell.push_str(&fairshare_engine::output::printable(tree.account(row)));
        let user = tree.user_name(row).map(fairshare_engine::output::printable).unwrap_or_default();
        let _ = write!(text, "{cell:<ACCOUNT$} {user:<USER$}");
        for &k in &main {
            let t = &e.tres[k];
            text.push_str(" |");
            let values = [e.demand(k, row) as f64, e.deserved[k][row], e.running[k][row] as f64, e.over(k, row)];
            for (i, v) in values.into_iter().enumerate() {
                cell.clear();
                push_shown(&mut cell, t, v, i == 3);
                let _ = write!(text, "{}{cell:>COLUMN$}", if i == 0 { "" } else { " " });
            }
        }
        text.push('\n');
        if text.len() > 1 << 16 {
            flush(&mut text)?;
        }
    }
    flush(&mut text)?;
    out.flush().map_err(|err| Error::io(dest, err))
}

/// One row per (association, TRES), as the module documentation describes.
pub fn batch(tree: &AssocTree, e: &Entitlement) -> RecordBatch {
    let (n, t) = (tree.len(), e.tres.len());
    let rows = || (0..n).flat_map(move |r| std::iter::repeat_n(r, t));
    let per = |f: &dyn Fn(usize, usize) -> f64| -> Float64Array {
        Float64Array::from_iter_values((0..n).flat_map(|r| (0..t).map(move |k| (r, k))).map(|(r, k)| f(k, r)))
    };
    let per_u64 = |f: &dyn Fn(usize, usize) -> u64| -> UInt64Array {
        UInt64Array::from_iter_values((0..n).flat_map(|r| (0..t).map(move |k| (r, k))).map(|(r, k)| f(k, r)))
    };
    let columns: Vec<(&str, ArrayRef, bool)> = vec![
        ("id", Arc::new(UInt64Array::from_iter_values(rows().map(|r| tree.ids()[r]))), false),
        ("parent_id", Arc::new(rows().map(|r| tree.parent_id(r)).collect::<UInt64Array>()), true),
        ("depth", Arc::new(UInt32Array::from_iter_values(rows().map(|r| tree.depths()[r]))), false),
        ("account", Arc::new(rows().map(|r| Some(tree.account(r))).collect::<StringArray>()), false),
        ("user", Arc::new(rows().map(|r| tree.user_name(r)).collect::<StringArray>()), true),
        ("partition", Arc::new(rows().map(|r| tree.partition(r)).collect::<StringArray>()), true),
        (
            "raw_shares",
            Arc::new(
                rows().map(|r| (!tree.is_parent_shares(r)).then(|| tree.raw_shares()[r])).collect::<UInt64Array>(),
            ),
            true,
        ),
        ("parent_shares", Arc::new(rows().map(|r| Some(tree.is_parent_shares(r))).collect::<BooleanArray>()), false),
        (
            "tres",
            Arc::new(StringArray::from_iter_values((0..n).flat_map(|_| e.tres.iter().map(Tres::to_string)))),
            false,
        ),
        ("capacity", Arc::new(per_u64(&|k, _| e.capacity[k])), false),
        ("demand", Arc::new(per_u64(&|k, r| e.demand(k, r))), false),
        ("running", Arc::new(per_u64(&|k, r| e.running[k][r])), false),
        ("pending", Arc::new(per_u64(&|k, r| e.pending[k][r])), false),
        ("allocated", Arc::new(per_u64(&|k, r| e.running[k][r])), false),
        ("deserved", Arc::new(per(&|k, r| e.deserved[k][r])), false),
        ("over", Arc::new(per(&|k, r| e.over(k, r))), false),
    ];
    fairshare_engine::tree::named_batch(columns)
}

/// What the Parquet file's metadata records: the instant, the site and the capacity per TRES.
pub fn metadata(e: &Entitlement, source: &str) -> Vec<KeyValue> {
    let capacity: Vec<String> = e.tres.iter().zip(&e.capacity).map(|(t, c)| format!("{t}={c}")).collect();
    vec![
        KeyValue::new("fairshare.entitlement.now".to_string(), e.now.to_string()),
        KeyValue::new("fairshare.source".to_string(), source.to_string()),
        KeyValue::new("fairshare.entitlement.capacity".to_string(), capacity.join(",")),
    ]
}

/// The entitlement as one JSON object: `now`, `capacity` (per TRES) and `associations`, each with
/// its names and, per TRES, `demand`, `deserved`, `allocated` and `over`; associations in the
/// tree's order, written one at a time.
///
/// # Errors
/// A failed write.
pub fn write_json(out: &mut dyn Write, tree: &AssocTree, e: &Entitlement, dest: Option<&Path>) -> Result<()> {
    let dest = fairshare_engine::output::dest_name(dest);
    let io = |err| Error::io(dest, err);
    let capacity: serde_json::Map<String, serde_json::Value> =
        e.tres.iter().zip(&e.capacity).map(|(t, &c)| (t.to_string(), c.into())).collect();
    write!(out, "{{\"now\":{},\"capacity\":{},\"associations\":[", e.now, serde_json::Value::Object(capacity))
        .map_err(io)?;
    for r in 0..tree.len() {
        let tres: serde_json::Map<String, serde_json::Value> = (0..e.tres.len())
            .map(|k| {
                let v = serde_json::json!({
                    "demand": e.demand(k, r),
                    "deserved": e.deserved[k][r],
                    "allocated": e.running[k][r],
                    "over": e.over(k, r),
                });
                (e.tres[k].to_string(), v)
            })
            .collect();
        let assoc = serde_json::json!({
            "id": tree.ids()[r],
            "account": tree.account(r),
            "user": tree.user_name(r),
            "partition": tree.partition(r),
            "tres": tres,
        });
        write!(out, "{}{assoc}", if r == 0 { "" } else { "," }).map_err(io)?;
    }
    writeln!(out, "]}}").map_err(io)?;
    out.flush().map_err(io)
}
