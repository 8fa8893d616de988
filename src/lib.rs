//! `fairshare`: offline, exact HPC fair-share for large association trees.
//!
//! The engine reads a site's association tree ([`io`]), lays it out as Arrow arrays in
//! breadth-first order ([`tree::AssocTree`]), runs one of three fair-share passes exactly as the
//! reference system computes it ([`pass`]: Slurm classic, Slurm Fair Tree, flux-accounting's
//! weighted tree), and writes sshare-compatible text and Parquet ([`output`]).
//!
//! ```
//! use fairshare::pass::{compute, Algorithm, Params};
//! use fairshare::output::sshare::{write_sshare, SshareOptions, Parsable};
//!
//! let tree = fairshare::io::default_tree()?;
//! let result = compute(&tree, &Params::new(Algorithm::FairTree))?;
//! let mut text = Vec::new();
//! let opts = SshareOptions { parsable: Parsable::NoEnding, ..Default::default() };
//! write_sshare(&mut text, &tree, &result, &opts)?;
//! assert!(String::from_utf8(text).unwrap().starts_with("Account|User|RawShares|"));
//! # Ok::<(), fairshare::Error>(())
//! ```

pub mod compare;
pub mod config;
pub mod entitlement;
pub mod error;
pub mod explain;
pub mod fairness;
pub mod forecast;
#[cfg(feature = "polars")]
pub mod frame;
pub mod io;
pub mod jobs;
pub mod memory;
pub mod output;
mod parallel;
pub mod pass;
pub mod pipeline;
pub mod plot;
pub mod priority;
pub mod report;
pub mod shares;
pub mod tree;
pub mod usage;

pub use error::{Error, Result};
