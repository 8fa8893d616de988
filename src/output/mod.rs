//! Writers, one module per output format.

pub mod atomic;
pub mod parquet;
pub mod sprio;
pub mod sshare;
