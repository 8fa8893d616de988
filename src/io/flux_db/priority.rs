//! The tables flux-accounting's priority plugin reads besides the fair-share values, into
//! [`FluxPriorityTables`].

use std::path::Path;

use super::open_read;
use crate::error::Result;
use crate::priority::flux::FluxPriorityTables;

/// Reads the priority weights, queue priorities and bank priorities of a flux-accounting database.
/// Tables or columns an older schema lacks leave the plugin's defaults.
///
/// # Errors
/// The file is `-` or a stream, or not a readable SQLite database.
pub fn read_priority_tables(path: &Path) -> Result<FluxPriorityTables> {
    let conn = open_read(path)?;
    let mut tables = FluxPriorityTables::default();
    // A missing table is an older schema, not an error.
    let rows = |sql: &str| -> Vec<(String, f64)> {
        conn.prepare(sql)
            .and_then(|mut q| q.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))?.collect())
            .unwrap_or_default()
    };
    for (factor, weight) in rows("SELECT factor, weight FROM priority_factor_weight_table") {
        let w = weight as i32;
        match factor.as_str() {
            "fairshare" => tables.weights.fairshare = w,
            "queue" => tables.weights.queue = w,
            "bank" => tables.weights.bank = w,
            "urgency" => tables.weights.urgency = w,
            _ => {}
        }
    }
    tables.queues = rows("SELECT queue, priority FROM queue_table").into_iter().map(|(q, p)| (q, p as i32)).collect();
    tables.banks = rows("SELECT bank, priority FROM bank_table").into_iter().collect();
    Ok(tables)
}
