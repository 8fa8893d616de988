//! The base layer of `fairshare`: what every layer above uses and nothing here knows of trees,
//! usage or fair-share.
//!
//! - [`error`]: the one error type, naming the input, the line or row, and what is wrong;
//! - [`hash`]: hash maps under one fixed, fast hasher;
//! - [`memory`]: the memory budget, huge pages and the allocator's settings;
//! - [`named`]: choices spelled by name, one table each;
//! - [`parallel`]: the one parallel driver and its determinism contract;
//! - [`read`]: the reading toolkit (sources, row groups, fields, times, interned names);
//! - [`write`](mod@write): the writing toolkit (atomic files and directories, `O_DIRECT`, the Parquet sink);
//! - [`time_format`]: the named formats instants are printed in.

pub mod error;
pub mod hash;
pub mod memory;
pub mod named;
pub mod parallel;
pub mod read;
pub mod time_format;
pub mod write;

pub use error::{Error, Result};
