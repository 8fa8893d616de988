//! Fair-share passes over an [`AssocTree`]: Slurm classic, Slurm Fair Tree, flux-accounting's
//! weighted tree.
//!
//! Each pass is a sweep over the tree's levels. Per-row kernels (normalized shares, `U`, level FS,
//! weights) are independent and run in fixed chunks of rows; per-group sorts run in runs of
//! consecutive groups; the rank walk, being a prefix over the visit order, is one linear scan.
//! `fairshare_base::parallel` cuts the chunks and decides when they go to rayon (small inputs run
//! sequentially); results do not depend on the thread count.

mod classic;
mod fair_tree;
mod flux;
mod keysort;
pub mod stdsort;
pub mod x87;

pub use fair_tree::NEAR_ULPS;
pub use flux::update_fshare_order;

use crate::tree::AssocTree;
use fairshare_base::error::Result;
use fairshare_base::named::{Choice, Named};
use fairshare_base::parallel;

/// Slurm's `NO_VAL` (0xfffffffe), which Slurm stores as a `level_fs` and a `level_shares`.
pub const NO_VAL: f64 = 4_294_967_294.0;

/// The fair-share algorithm to emulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Slurm's Fair Tree (`PriorityFlags=FAIR_TREE`, Slurm's default).
    FairTree,
    /// Slurm's classic algorithm (`PriorityFlags=NO_FAIR_TREE`).
    Classic,
    /// flux-accounting's weighted tree.
    Flux,
}

/// The names used on the command line, in site files and in output metadata.
impl Named for Algorithm {
    const CHOICES: &'static [Choice<Self>] = &[
        Choice::new(Algorithm::FairTree, "fair-tree", "Slurm's Fair Tree (Slurm's default)"),
        Choice::new(Algorithm::Classic, "classic", "Slurm's classic algorithm (NO_FAIR_TREE)"),
        Choice::new(Algorithm::Flux, "flux", "flux-accounting's weighted tree"),
    ];
}

impl Algorithm {
    /// The name a person uses, for titles of pictures and reports.
    pub fn title(self) -> &'static str {
        match self {
            Algorithm::FairTree => "Fair Tree",
            Algorithm::Classic => "Slurm classic",
            Algorithm::Flux => "flux-accounting's weighted tree",
        }
    }
}

/// Parameters of a fair-share pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Which algorithm.
    pub algorithm: Algorithm,
    /// Classic `FairShareDampeningFactor` (>= 1).
    pub dampening: u16,
    /// Classic `PriorityFlags=DEPTH_OBLIVIOUS` (steady state).
    pub depth_oblivious: bool,
    /// flux: sum sibling usage exactly instead of truncating each partial sum to an integer as
    /// flux-accounting does.
    pub flux_exact_sums: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params { algorithm: Algorithm::FairTree, dampening: 1, depth_oblivious: false, flux_exact_sums: false }
    }
}

impl Params {
    /// Default parameters for `algorithm`.
    pub fn new(algorithm: Algorithm) -> Self {
        Params { algorithm, ..Params::default() }
    }
}

/// Per-association results of a pass, row-aligned with the tree. `NaN` marks a value the
/// emulated system leaves unset (printed blank by sshare, null in Parquet).
#[derive(Clone, Debug)]
pub struct FairShare {
    /// The parameters that produced this result.
    pub params: Params,
    /// Normalized shares (classic: down the direct parents; Fair Tree and flux: level-local).
    pub norm_shares: Vec<f64>,
    /// Usage over the root's usage, capped at 1 (unset for the root).
    pub norm_usage: Vec<f64>,
    /// Classic: effective usage. Fair Tree: usage over the fair-share parent's usage. flux: usage
    /// over the sibling usage sum.
    pub effective_usage: Vec<f64>,
    /// Fair Tree: S/U (`inf` for zero usage). flux: the sibling weight. Unset for classic, for the
    /// root and for `parent` associations.
    pub level_fs: Vec<f64>,
    /// Rank of each user (N for the best); 0 for accounts and for classic.
    pub rank: Vec<u32>,
    /// The fair-share factor of users in [0, 1]; unset for accounts.
    pub fs_factor: Vec<f64>,
}

/// Runs the pass selected by `params` over `tree`. flux-accounting has no `parent` shares: on a
/// Slurm tree with them flux ranks as Fair Tree groups them, a `parent` account's children among
/// its fair-share parent's and a `parent` user first among its fair-share parent's children.
///
/// # Errors
/// None of the passes refuses a tree today.
///
/// # Example
/// ```
/// use fairshare_engine::pass::{compute, Algorithm, Params};
/// let tree = fairshare_engine::io::default_tree()?;
/// let fs = compute(&tree, &Params::new(Algorithm::FairTree))?;
/// let best = (0..tree.len()).filter(|&r| tree.is_user(r)).map(|r| fs.fs_factor[r]).fold(0.0, f64::max);
/// assert_eq!(best, 1.0);
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn compute(tree: &AssocTree, params: &Params) -> Result<FairShare> {
    match params.algorithm {
        Algorithm::FairTree => Ok(fair_tree::fair_tree(tree, tree.fs_groups(), NEAR_ULPS, *params)),
        Algorithm::Classic => Ok(classic::classic(tree, tree.fs_groups(), *params, None)),
        Algorithm::Flux => Ok(flux::flux(tree, *params)),
    }
}

/// The pass of [`compute`] as Slurm holds it right after a decay pass, given `pass_start`, the
/// same tree with the user usage of the start of that pass (before its decay and charges). Only
/// classic depends on it: Slurm recomputes the accounts' normalized and effective usage at the
/// start of a pass and computes a user's values when asked, from its fresh usage and that parent
/// value (spec §4, §9 "Classic timing"). Fair Tree and flux give [`compute`]'s result.
///
/// # Errors
/// As [`compute`].
///
/// # Panics
/// If `pass_start` does not have the rows of `tree`.
pub fn compute_after_pass(tree: &AssocTree, pass_start: &AssocTree, params: &Params) -> Result<FairShare> {
    match params.algorithm {
        Algorithm::Classic => {
            assert_eq!(pass_start.len(), tree.len(), "one tree, at two instants");
            Ok(classic::classic(tree, tree.fs_groups(), *params, Some(pass_start.raw_usage())))
        }
        _ => compute(tree, params),
    }
}

/// Fair Tree with an explicit near-neighbour distance for the x87 re-check (`u64::MAX` recomputes
/// every finite value in x87). Exposed so tests can compare the fast path with full x87.
pub fn fair_tree_with_near_ulps(tree: &AssocTree, near_ulps: u64) -> FairShare {
    fair_tree::fair_tree(tree, tree.fs_groups(), near_ulps, Params::new(Algorithm::FairTree))
}

/// Usage over the root's usage, capped at 1; unset (NaN) for the root (`set_assoc_usage_norm`).
pub(crate) fn norm_usage_at(usage: &[f64], i: usize) -> f64 {
    let total = usage[0];
    if i == 0 {
        f64::NAN
    } else if total == 0.0 {
        0.0
    } else {
        (usage[i] / total).min(1.0)
    }
}

/// [`norm_usage_at`] for every row.
pub(crate) fn norm_usage(tree: &AssocTree) -> Vec<f64> {
    let usage = tree.raw_usage();
    parallel::column(tree.len(), |i| norm_usage_at(usage, i))
}
