//! The tables flux-accounting's priority plugin reads besides the fair-share values, into
//! [`FluxPriorityTables`].

use std::collections::HashMap;
use std::path::Path;

use super::open_read;
use fairshare_base::error::Result;

/// `priority_factor_weight_table`; the defaults are the plugin's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FluxWeights {
    /// Fair-share weight (default 100000).
    pub fairshare: i32,
    /// Queue weight (default 10000).
    pub queue: i32,
    /// Bank weight (default 0).
    pub bank: i32,
    /// Urgency weight (default 1000).
    pub urgency: i32,
}

impl Default for FluxWeights {
    fn default() -> Self {
        FluxWeights { fairshare: 100_000, queue: 10_000, bank: 0, urgency: 1000 }
    }
}

/// The tables flux-accounting's priority plugin reads besides the fair-share values (filled by
/// [`read_priority_tables`]).
#[derive(Clone, Debug, Default)]
pub struct FluxPriorityTables {
    /// `priority_factor_weight_table` (defaults where a row is missing).
    pub weights: FluxWeights,
    /// `queue_table.priority` by queue name.
    pub queues: HashMap<String, i32>,
    /// `bank_table.priority` by bank name.
    pub banks: HashMap<String, f64>,
}

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
