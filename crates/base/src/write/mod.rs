//! The writing toolkit: files and directories that appear whole or not at all ([`atomic`]), large
//! files through `O_DIRECT` (`direct`), and the Parquet sink ([`parquet`]) with its column
//! chunks dictionary-encoded from keys the caller already has (`dictionary_chunk`).

pub mod atomic;
mod dictionary_chunk;
mod direct;
pub mod parquet;
