//! What every reader shares, whatever it reads (trees, job records, the pending queue): opening an
//! input ([`source`]), Parquet a row group at a time and guarded ([`row_groups`]), strict Parquet
//! columns ([`parquet_columns`]), the fields of a text record (`fields`, `bars`), timestamps ([`time`])
//! and names interned to dense ids ([`interner`]).

pub mod bars;
pub mod fields;
pub mod interner;
pub mod parquet_columns;
pub mod row_groups;
pub mod source;
pub mod time;
