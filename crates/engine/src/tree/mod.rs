//! The association tree as Arrow arrays in breadth-first order.
//!
//! Readers (see [`crate::io`]) produce [`AssocRecord`]s, or for columnar files [`TreeColumns`]
//! directly, in whatever order their file has; [`AssocTree::from_columns`] (and [`AssocTree::build`]
//! for records) validates them (one root, known parents, no cycles, no duplicates, users only as
//! leaves) and lays them out breadth-first: level `k` is rows `level_offsets[k]..level_offsets[k+1]`, row 0 is the root,
//! and the children of any row are the contiguous rows `child_start..child_start + child_count`.
//! Every fair-share pass is then a sweep over a level.
//!
//! Siblings are ordered the way the emulated system orders them ([`SiblingOrder`]): Slurm sorts its
//! association list by lineage (`<parent lineage><account>/` for accounts, `<parent lineage>0-<user>/
//! [<partition>/]` for users, byte order), so an account's users come first by name, then its
//! sub-accounts by name. flux-accounting keeps the order its reader produced.

mod build;
mod fs_groups;
pub(crate) mod pair_index;

pub use build::TreeColumns;
pub(crate) use build::records_batch;
pub use fs_groups::FsGroups;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use arrow::array::{Array, ArrayRef, BooleanArray, Float64Array, StringArray, UInt32Array, UInt64Array};
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::RecordBatch;

use fairshare_base::error::Result;

/// Raw shares of an association: a number, or Slurm's `FairShare=parent`.
///
/// `parent` is kept apart from the numbers rather than encoded as Slurm's `0x7FFFFFFF`, so no share
/// count can be mistaken for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shares {
    /// A share count (Slurm: uint32; flux-accounting: uint64).
    Value(u64),
    /// `FairShare=parent`: the association competes with its parent's shares.
    Parent,
}

/// One association as a reader found it, before validation.
#[derive(Clone, Debug, PartialEq)]
pub struct AssocRecord {
    /// Identifier, unique in the input (formats without ids number their rows).
    pub id: u64,
    /// The parent's `id`; `None` for the root.
    pub parent_id: Option<u64>,
    /// Account name (for a user row, the account it belongs to).
    pub account: String,
    /// User name; `None` for an account row.
    pub user: Option<String>,
    /// Partition of a per-partition user association.
    pub partition: Option<String>,
    /// Raw shares.
    pub shares: Shares,
    /// Raw (decayed) usage in billing-seconds. Only user rows count unless the input says
    /// account usage is given ([`AccountUsage::Given`]).
    pub usage: f64,
    /// Association priority (Slurm `Priority=`), if any.
    pub priority: Option<u32>,
    /// `GrpTRESMins` as the input gives it (`cpu=60000,gres/gpu=600`); `None` without that limit.
    pub grp_tres_mins: Option<String>,
    /// 1-based line or row of the record in its file, for error messages.
    pub line: u64,
}

impl AssocRecord {
    /// An account row without usage, priority or partition.
    pub fn account(id: u64, parent_id: Option<u64>, account: impl Into<String>, shares: Shares, line: u64) -> Self {
        AssocRecord {
            id,
            parent_id,
            account: account.into(),
            user: None,
            partition: None,
            shares,
            usage: 0.0,
            priority: None,
            grp_tres_mins: None,
            line,
        }
    }

    /// True for a user association.
    pub fn is_user(&self) -> bool {
        self.user.is_some()
    }
}

/// How siblings are ordered in the built tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiblingOrder {
    /// Slurm's lineage order: users first (by user, then partition), then accounts by name, byte order.
    Lineage,
    /// The order of the input records (flux-accounting's readers already order by name). A bank
    /// name may repeat: flux-accounting reads a bank listed under two parents under each.
    Input,
}

/// Where an account's usage comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccountUsage {
    /// The sum of the users below it (Slurm, flux DB); usage given on account rows is ignored.
    SumOfUsers,
    /// As given on the account row (flux-accounting's weighted-tree CSV loader).
    Given,
}

/// The records of one tree input plus how to interpret them.
#[derive(Clone, Debug)]
pub struct TreeInput {
    /// The file the records came from (for error messages).
    pub source: PathBuf,
    /// The records, in file order.
    pub records: Vec<AssocRecord>,
    /// Sibling order to build.
    pub sibling_order: SiblingOrder,
    /// Where account usage comes from.
    pub account_usage: AccountUsage,
    /// Per-TRES usage charged into the records (rows in record order), when kept.
    pub tres: Option<AssocTres>,
}

/// Largest share count of an association: Slurm's `shares_raw` is a uint32 and `u32::MAX` is
/// reserved (`INFINITE`). Every reader refuses more, and [`AssocTree::build`] checks it again, so
/// the sums of siblings' shares (at most 2^32-2 of them) cannot wrap.
pub const MAX_SHARES: u64 = u32::MAX as u64 - 1;

/// What every reader says of a share count past [`MAX_SHARES`] (`shares` as the input spells it).
pub fn shares_too_large(shares: impl std::fmt::Display) -> String {
    format!("shares {shares} is too large: expected a whole number in 0..={MAX_SHARES} or `parent`")
}

impl TreeInput {
    /// A Slurm tree's records as read from `source`: siblings in lineage order, each account's
    /// usage the sum of its users', no per-TRES usage.
    pub fn slurm(source: impl Into<PathBuf>, records: Vec<AssocRecord>) -> Self {
        Self::ordered(source, records, SiblingOrder::Lineage, AccountUsage::SumOfUsers)
    }

    /// Records read from `source` with the sibling order and account usage given, no per-TRES
    /// usage.
    pub fn ordered(
        source: impl Into<PathBuf>,
        records: Vec<AssocRecord>,
        sibling_order: SiblingOrder,
        account_usage: AccountUsage,
    ) -> Self {
        TreeInput { source: source.into(), records, sibling_order, account_usage, tres: None }
    }
}

/// Slurm's per-TRES bookkeeping of each association, kept only with
/// `AccountingStorageEnforce=limits` as slurmctld keeps it: `usage_tres_raw` (the decayed
/// TRES-seconds of its jobs, sshare's `GrpTRESRaw` in minutes) and `grp_used_tres_run_secs` (the
/// TRES-seconds left in its running jobs' time limits, sshare's `TRESRunMins`). Accounts hold the
/// sums of their users. Values are row-major: row `r`'s TRES `i` is at `r * names.len() + i`;
/// without limits slurmctld keeps none of it, and the values are empty (all zero).
#[derive(Clone, Debug, PartialEq)]
pub struct AssocTres {
    /// The cluster's TRES, in Slurm's order.
    pub names: Vec<crate::config::Tres>,
    /// Decayed TRES-seconds per row and TRES.
    pub usage_raw: Vec<f64>,
    /// Running jobs' remaining TRES-seconds per row and TRES.
    pub run_secs: Vec<u64>,
}

impl AssocTres {
    /// The TRES of a cluster that keeps no per-TRES usage: every value zero.
    pub fn untracked(names: Vec<crate::config::Tres>) -> Self {
        AssocTres { names, usage_raw: Vec::new(), run_secs: Vec::new() }
    }

    /// Whether values are kept (else all are zero).
    pub fn is_tracked(&self) -> bool {
        !self.usage_raw.is_empty()
    }

    /// Row `row`'s decayed seconds of TRES `i`.
    pub fn usage(&self, row: usize, i: usize) -> f64 {
        self.usage_raw.get(row * self.names.len() + i).copied().unwrap_or(0.0)
    }

    /// Row `row`'s remaining running seconds of TRES `i`.
    pub fn run_secs(&self, row: usize, i: usize) -> u64 {
        self.run_secs.get(row * self.names.len() + i).copied().unwrap_or(0)
    }

    /// The rows `order` (old row of each new row), in that order.
    pub(crate) fn gather(&self, order: &[u32]) -> AssocTres {
        let k = self.names.len();
        // Untracked values are empty, and stay so.
        fn rows<T: Copy>(values: &[T], order: &[u32], k: usize) -> Vec<T> {
            if values.is_empty() {
                return Vec::new();
            }
            order.iter().flat_map(|&r| &values[r as usize * k..][..k]).copied().collect()
        }
        AssocTres {
            names: self.names.clone(),
            usage_raw: rows(&self.usage_raw, order, k),
            run_secs: rows(&self.run_secs, order, k),
        }
    }
}

/// The association tree: Arrow columns in breadth-first order plus level offsets.
#[derive(Clone, Debug)]
pub struct AssocTree {
    id: UInt64Array,
    parent: UInt32Array,
    depth: UInt32Array,
    child_start: UInt32Array,
    child_count: UInt32Array,
    is_user: BooleanArray,
    account: StringArray,
    user: StringArray,
    partition: StringArray,
    raw_shares: UInt64Array,
    parent_shares: BooleanArray,
    raw_usage: Float64Array,
    priority: UInt32Array,
    grp_tres_mins: StringArray,
    tres: Option<Arc<AssocTres>>,
    level_offsets: Vec<u32>,
    user_count: usize,
    usage_is_integral: bool,
    fs_groups: OnceLock<FsGroups>,
}

impl AssocTree {
    /// Validates `input` and lays it out breadth-first.
    ///
    /// # Errors
    /// An [`Error::Input`](fairshare_base::Error::Input) naming the file and line for: no root or two roots, an unknown parent,
    /// a user with children, a cycle, a duplicate id or association (an account name given twice counts
    /// only in a Slurm tree, [`SiblingOrder::Lineage`]), a user whose account differs from its parent
    /// account, or usage that is negative or not a number.
    ///
    /// # Example
    /// ```
    /// use fairshare_engine::tree::{AccountUsage, AssocRecord, AssocTree, Shares, SiblingOrder, TreeInput};
    /// let rec = |id, parent, account: &str, user: Option<&str>, usage| AssocRecord {
    ///     id, parent_id: parent, account: account.into(), user: user.map(Into::into),
    ///     partition: None, shares: Shares::Value(1), usage, priority: None, grp_tres_mins: None, line: id,
    /// };
    /// let input = TreeInput {
    ///     source: "example.csv".into(),
    ///     records: vec![rec(1, None, "root", None, 0.0), rec(2, Some(1), "root", Some("bob"), 5.0),
    ///                   rec(3, Some(1), "root", Some("alice"), 7.0)],
    ///     sibling_order: SiblingOrder::Lineage,
    ///     account_usage: AccountUsage::SumOfUsers,
    ///     tres: None,
    /// };
    /// let tree = AssocTree::build(input)?;
    /// assert_eq!(tree.user_name(1), Some("alice")); // lineage order: users by name
    /// assert_eq!(tree.raw_usage()[0], 12.0);        // accounts sum their users
    /// # Ok::<(), fairshare_base::Error>(())
    /// ```
    pub fn build(input: TreeInput) -> Result<Self> {
        Self::from_columns(TreeColumns::from_input(input))
    }

    /// Number of associations (rows).
    pub fn len(&self) -> usize {
        self.id.len()
    }

    /// Always false: a tree has at least its root.
    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }

    /// Number of user associations (every per-partition association counts).
    pub fn user_count(&self) -> usize {
        self.user_count
    }

    /// Level offsets: level `k` is rows `level_offsets()[k]..level_offsets()[k + 1]`.
    pub fn level_offsets(&self) -> &[u32] {
        &self.level_offsets
    }

    /// Number of levels (the root alone is one level).
    pub fn levels(&self) -> usize {
        self.level_offsets.len() - 1
    }

    /// The row range of level `k`.
    pub fn level(&self, k: usize) -> std::ops::Range<usize> {
        self.level_offsets[k] as usize..self.level_offsets[k + 1] as usize
    }

    /// The rows above the deepest level, `0..parent_rows()`: the only rows that can have children
    /// (in most trees, the accounts, a small part of the rows).
    pub fn parent_rows(&self) -> usize {
        self.level_offsets[self.levels().saturating_sub(1)] as usize
    }

    /// Input ids.
    pub fn ids(&self) -> &[u64] {
        self.id.values()
    }

    /// Parent row of every row; the root's slot holds 0 (and is null in [`Self::to_record_batch`]).
    pub fn parents(&self) -> &[u32] {
        self.parent.values()
    }

    /// Depth of every row (root 0).
    pub fn depths(&self) -> &[u32] {
        self.depth.values()
    }

    /// First child row of every row.
    pub fn child_starts(&self) -> &[u32] {
        self.child_start.values()
    }

    /// Number of children of every row.
    pub fn child_counts(&self) -> &[u32] {
        self.child_count.values()
    }

    /// Children rows of `row`.
    pub fn children(&self, row: usize) -> std::ops::Range<usize> {
        let s = self.child_start.value(row) as usize;
        s..s + self.child_count.value(row) as usize
    }

    /// True where the row is a user association.
    pub fn is_user(&self, row: usize) -> bool {
        self.is_user.value(row)
    }

    /// The user flags as a byte vector, for kernels that want a slice.
    pub fn user_flags(&self) -> Vec<bool> {
        self.is_user.values().iter().collect()
    }

    /// True where the association has `FairShare=parent` (never the root).
    pub fn is_parent_shares(&self, row: usize) -> bool {
        self.parent_shares.value(row)
    }

    /// True when some association has `FairShare=parent`.
    pub fn has_parent_shares(&self) -> bool {
        self.parent_shares.true_count() > 0
    }

    /// The `parent` flags as a byte vector.
    pub fn parent_share_flags(&self) -> Vec<bool> {
        self.parent_shares.values().iter().collect()
    }

    /// Raw shares (0 where the association has `parent` shares).
    pub fn raw_shares(&self) -> &[u64] {
        self.raw_shares.values()
    }

    /// Raw usage: as given for users; the sum of the users below for accounts (unless given).
    pub fn raw_usage(&self) -> &[f64] {
        self.raw_usage.values()
    }

    /// True when every user usage is an integer and the total is below 2^53, so that all account
    /// sums are exact in f64 (and therefore in any wider format).
    pub fn usage_is_integral(&self) -> bool {
        self.usage_is_integral
    }

    /// Account name of `row`.
    pub fn account(&self, row: usize) -> &str {
        self.account.value(row)
    }

    /// User name of `row`, `None` for accounts.
    pub fn user_name(&self, row: usize) -> Option<&str> {
        self.user.is_valid(row).then(|| self.user.value(row))
    }

    /// Partition of `row`, if any.
    pub fn partition(&self, row: usize) -> Option<&str> {
        self.partition.is_valid(row).then(|| self.partition.value(row))
    }

    /// Association priority of `row`, if given.
    pub fn priority(&self, row: usize) -> Option<u32> {
        self.priority.is_valid(row).then(|| self.priority.value(row))
    }

    /// The fair-share sibling groups (Slurm's `children_list` after `parent` lifting), computed on
    /// first use: they depend only on the structure, so every pass over this tree shares them.
    pub fn fs_groups(&self) -> &FsGroups {
        self.fs_groups.get_or_init(|| FsGroups::new(self))
    }

    /// Rows in depth-first pre-order (the order sshare prints), computed without recursion.
    pub fn preorder(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.len());
        let mut stack = vec![0u32];
        while let Some(r) = stack.pop() {
            out.push(r);
            stack.extend(self.children(r as usize).rev().map(|c| c as u32));
        }
        out
    }

    /// The canonical columns as one Arrow record batch (zero-copy).
    pub fn to_record_batch(&self) -> RecordBatch {
        let columns: Vec<(&str, ArrayRef, bool)> = vec![
            ("id", Arc::new(self.id.clone()), false),
            ("parent", Arc::new(self.parent.clone()), true),
            ("depth", Arc::new(self.depth.clone()), false),
            ("child_start", Arc::new(self.child_start.clone()), false),
            ("child_count", Arc::new(self.child_count.clone()), false),
            ("is_user", Arc::new(self.is_user.clone()), false),
            ("account", Arc::new(self.account.clone()), false),
            ("user", Arc::new(self.user.clone()), true),
            ("partition", Arc::new(self.partition.clone()), true),
            ("raw_shares", Arc::new(self.raw_shares.clone()), false),
            ("parent_shares", Arc::new(self.parent_shares.clone()), false),
            ("raw_usage", Arc::new(self.raw_usage.clone()), false),
            ("priority", Arc::new(self.priority.clone()), true),
        ];
        named_batch(columns)
    }

    /// The same tree with other user usage: `user_usage[row]` for every user row (account rows'
    /// values are ignored and recomputed as their users' sums, bottom-up as [`AssocTree::build`]
    /// does). Shares and layout are shared, so a history of instants reuses one build.
    ///
    /// # Panics
    /// If `user_usage` does not have one value per row.
    pub fn with_user_usage(&self, user_usage: &[f64]) -> AssocTree {
        let n = self.len();
        assert_eq!(user_usage.len(), n, "one usage value per row");
        let is_user = self.is_user.values();
        let mut usage: Vec<f64> = (0..n).map(|r| if is_user.value(r) { user_usage[r] } else { 0.0 }).collect();
        let parent = self.parent.values();
        for i in (1..n).rev() {
            usage[parent[i] as usize] += usage[i];
        }
        let usage_is_integral =
            (0..n).all(|r| !is_user.value(r) || usage[r].fract() == 0.0) && usage[0] < 9_007_199_254_740_992.0;
        AssocTree {
            raw_usage: Float64Array::from(usage),
            usage_is_integral,
            fs_groups: OnceLock::new(),
            // The per-TRES usage is the charge's at its own instant, not this usage's.
            tres: None,
            ..self.clone()
        }
    }

    /// Row `row`'s `GrpTRESMins`, in Slurm's TRES order (`cpu=60000,gres/gpu=600`); `None`
    /// without limits.
    pub fn grp_tres_mins(&self, row: usize) -> Option<&str> {
        self.grp_tres_mins.is_valid(row).then(|| self.grp_tres_mins.value(row))
    }

    /// The `GrpTRESMins` column ([`AssocTree::grp_tres_mins`] per row).
    pub fn grp_tres_mins_column(&self) -> &StringArray {
        &self.grp_tres_mins
    }

    /// The per-TRES usage charged into the tree, when kept (`AccountingStorageEnforce=limits`).
    pub fn tres(&self) -> Option<&AssocTres> {
        self.tres.as_deref()
    }

    /// The id of the parent row, as the input named it.
    pub fn parent_id(&self, row: usize) -> Option<u64> {
        (row > 0).then(|| self.id.value(self.parent.value(row) as usize))
    }
}

/// A record batch of `(name, column, nullable)` triples, its schema taken from the columns.
///
/// # Panics
/// If the columns differ in length: callers build them from one row count.
pub fn named_batch(columns: Vec<(&str, ArrayRef, bool)>) -> RecordBatch {
    let fields: Vec<Field> =
        columns.iter().map(|(name, a, nullable)| Field::new(*name, a.data_type().clone(), *nullable)).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns.into_iter().map(|(_, a, _)| a).collect())
        .expect("columns of one length match their schema by construction")
}
