//! The engine of `fairshare`: offline, exact HPC fair-share for large association trees.
//!
//! It reads a site's association tree ([`io`]), lays it out as Arrow arrays in breadth-first
//! order ([`tree::AssocTree`]), charges job records as usage ([`usage`]), runs one of three
//! fair-share passes exactly as the reference system computes it ([`pass`]: Slurm classic, Slurm
//! Fair Tree, flux-accounting's weighted tree), scores the pending queue ([`priority`]), and writes
//! sshare/sprio-compatible text and Parquet ([`output`]). [`pipeline`] is the front door: a site's
//! options in, a run out.
//!
//! Its modules are layers, each using only those listed before it: [`config`] and [`tree`] (the
//! model), [`io`] and [`jobs`] (the inputs), [`usage`], [`pass`] and [`priority`] (the engine),
//! [`output`], then [`pipeline`]. Below them all is `fairshare_base`.
//!
//! ```
//! use fairshare_engine::pass::{compute, Algorithm, Params};
//! use fairshare_engine::output::sshare::{write_sshare, SshareOptions, Parsable};
//!
//! let tree = fairshare_engine::io::default_tree()?;
//! let result = compute(&tree, &Params::new(Algorithm::FairTree))?;
//! let mut text = Vec::new();
//! let opts = SshareOptions { parsable: Parsable::NoEnding, ..Default::default() };
//! write_sshare(&mut text, &tree, &result, &opts)?;
//! assert!(String::from_utf8(text).unwrap().starts_with("Account|User|RawShares|"));
//! # Ok::<(), fairshare_base::Error>(())
//! ```

pub mod config;
pub mod io;
pub mod jobs;
pub mod output;
pub mod pass;
pub mod pipeline;
pub mod priority;
pub mod tree;
pub mod usage;
