//! Validation and breadth-first layout of a tree given as columns ([`TreeColumns`]).
//!
//! Every reader's records become columns (readers of columnar files produce them directly), so one
//! build serves all formats: ids are mapped with a dense table when they are compact (a hash map
//! otherwise), children are linked in one counting pass (no per-row vectors), and the output
//! columns are gathered from the input columns with Arrow's `take`.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use arrow::array::{Array, ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow::compute::take;
use arrow::datatypes::{Field, Schema};
use rayon::prelude::*;

use super::{AccountUsage, AssocRecord, AssocTree, AssocTres, Shares, SiblingOrder, TreeInput};
use crate::config::tres::parse_tres_counts;
use fairshare_base::error::{Error, Result};

/// The canonical tree columns of one input, in file order, before validation.
///
/// `user` and `partition` are null where absent (never empty strings); `shares` holds 0 where
/// `parent_shares` is set.
#[derive(Clone, Debug)]
pub struct TreeColumns {
    /// The file the rows came from (for error messages).
    pub source: PathBuf,
    /// Association ids, unique.
    pub id: UInt64Array,
    /// The parent's id; null for the root.
    pub parent_id: UInt64Array,
    /// Account name (for a user row, its account).
    pub account: StringArray,
    /// User name; null for an account row.
    pub user: StringArray,
    /// Partition of a per-partition user association.
    pub partition: StringArray,
    /// Raw shares (0 where `parent_shares`).
    pub shares: UInt64Array,
    /// Slurm's `FairShare=parent`.
    pub parent_shares: BooleanArray,
    /// Raw usage (see [`AccountUsage`] for account rows).
    pub usage: Float64Array,
    /// Association priority, where given.
    pub priority: UInt32Array,
    /// `GrpTRESMins`, where given.
    pub grp_tres_mins: StringArray,
    /// Per-TRES usage charged into the rows, when kept.
    pub tres: Option<AssocTres>,
    /// The line or row of each row in its file; `None` when row `i` is line `i + 1`.
    pub lines: Option<Vec<u64>>,
    /// Sibling order to build.
    pub sibling_order: SiblingOrder,
    /// Where account usage comes from.
    pub account_usage: AccountUsage,
}

impl TreeColumns {
    /// The columns of `input`'s records.
    pub fn from_input(input: TreeInput) -> Self {
        let TreeInput { source, records, sibling_order, account_usage, tres } = input;
        let batch = records_batch(&records);
        let col = |i: usize| batch.column(i).clone();
        TreeColumns {
            source,
            id: downcast(col(0)),
            parent_id: downcast(col(1)),
            account: downcast(col(2)),
            user: downcast(col(3)),
            partition: downcast(col(4)),
            shares: downcast(col(5)),
            parent_shares: downcast(col(6)),
            usage: downcast(col(7)),
            priority: downcast(col(8)),
            grp_tres_mins: downcast(col(9)),
            tres,
            lines: Some(records.iter().map(|r| r.line).collect()),
            sibling_order,
            account_usage,
        }
    }

    /// The rows as records, for the paths that edit them (what-if shares, charged usage).
    pub fn into_input(self) -> TreeInput {
        let records = (0..self.len())
            .map(|i| AssocRecord {
                id: self.id.value(i),
                parent_id: self.parent_id.is_valid(i).then(|| self.parent_id.value(i)),
                account: self.account.value(i).to_string(),
                user: self.user(i).map(str::to_string),
                partition: self.partition.is_valid(i).then(|| self.partition.value(i).to_string()),
                shares: if self.parent_shares.value(i) { Shares::Parent } else { Shares::Value(self.shares.value(i)) },
                usage: self.usage.value(i),
                priority: self.priority.is_valid(i).then(|| self.priority.value(i)),
                grp_tres_mins: self.grp_tres_mins.is_valid(i).then(|| self.grp_tres_mins.value(i).to_string()),
                line: self.line(i),
            })
            .collect();
        TreeInput {
            source: self.source,
            records,
            sibling_order: self.sibling_order,
            account_usage: self.account_usage,
            tres: self.tres,
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.id.len()
    }

    /// True without rows.
    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }

    /// The line (or row) of row `i`, for messages.
    pub fn line(&self, i: usize) -> u64 {
        self.lines.as_ref().map_or(i as u64 + 1, |l| l[i])
    }

    fn user(&self, i: usize) -> Option<&str> {
        self.user.is_valid(i).then(|| self.user.value(i))
    }

    fn is_user(&self, i: usize) -> bool {
        self.user.is_valid(i)
    }

    /// Compares two rows by Slurm lineage segment: `0-<user>/[<partition>/]` for users,
    /// `<account>/` for accounts, as bytes, without building the strings.
    fn lineage_cmp(&self, a: usize, b: usize) -> Ordering {
        cmp_pieces(&self.lineage_segment(a), &self.lineage_segment(b))
    }

    /// The pieces of row `r`'s lineage segment, in order (empty pieces where absent).
    fn lineage_segment(&self, r: usize) -> [&[u8]; 5] {
        match self.user(r) {
            Some(u) if self.partition.is_valid(r) && !self.partition.value(r).is_empty() => {
                [b"0-", u.as_bytes(), b"/", self.partition.value(r).as_bytes(), b"/"]
            }
            Some(u) => [b"0-", u.as_bytes(), b"/", b"", b""],
            None => [b"", self.account.value(r).as_bytes(), b"/", b"", b""],
        }
    }

    /// The canonical columns as one record batch (names as the Parquet tree format has them).
    pub fn to_record_batch(&self) -> RecordBatch {
        canonical_batch([
            Arc::new(self.id.clone()),
            Arc::new(self.parent_id.clone()),
            Arc::new(self.account.clone()),
            Arc::new(self.user.clone()),
            Arc::new(self.partition.clone()),
            Arc::new(self.shares.clone()),
            Arc::new(self.parent_shares.clone()),
            Arc::new(self.usage.clone()),
            Arc::new(self.priority.clone()),
            Arc::new(self.grp_tres_mins.clone()),
        ])
    }
}

/// Compares the concatenations of two lists of byte strings, a common run at a time.
fn cmp_pieces(a: &[&[u8]], b: &[&[u8]]) -> Ordering {
    let (mut a, mut b) = (a.iter().copied().filter(|p| !p.is_empty()), b.iter().copied().filter(|p| !p.is_empty()));
    let (mut x, mut y): (&[u8], &[u8]) = (&[], &[]);
    loop {
        if x.is_empty() {
            x = a.next().unwrap_or_default();
        }
        if y.is_empty() {
            y = b.next().unwrap_or_default();
        }
        if x.is_empty() || y.is_empty() {
            return x.len().cmp(&y.len());
        }
        let common = x.len().min(y.len());
        match x[..common].cmp(&y[..common]) {
            Ordering::Equal => (x, y) = (&x[common..], &y[common..]),
            unequal => return unequal,
        }
    }
}

/// Names and nullability of the canonical columns, in [`TreeColumns::to_record_batch`] order.
const CANONICAL: [(&str, bool); 10] = [
    ("id", false),
    ("parent_id", true),
    ("account", false),
    ("user", true),
    ("partition", true),
    ("shares", false),
    ("parent_shares", false),
    ("usage", false),
    ("priority", true),
    ("grp_tres_mins", true),
];

fn canonical_batch(columns: [ArrayRef; 10]) -> RecordBatch {
    let fields: Vec<Field> = CANONICAL
        .iter()
        .zip(&columns)
        .map(|((name, nullable), a)| Field::new(*name, a.data_type().clone(), *nullable))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns.to_vec())
        .expect("columns match their schema by construction")
}

/// The canonical columns of `records` as one record batch.
pub(crate) fn records_batch(records: &[AssocRecord]) -> RecordBatch {
    let shares = |r: &AssocRecord| match r.shares {
        Shares::Value(v) => v,
        Shares::Parent => 0,
    };
    fn text(s: Option<&str>) -> Option<&str> {
        s.filter(|s| !s.is_empty())
    }
    canonical_batch([
        Arc::new(UInt64Array::from_iter_values(records.iter().map(|r| r.id))),
        Arc::new(records.iter().map(|r| r.parent_id).collect::<UInt64Array>()),
        Arc::new(StringArray::from_iter_values(records.iter().map(|r| r.account.as_str()))),
        Arc::new(records.iter().map(|r| text(r.user.as_deref())).collect::<StringArray>()),
        Arc::new(records.iter().map(|r| text(r.partition.as_deref())).collect::<StringArray>()),
        Arc::new(UInt64Array::from_iter_values(records.iter().map(shares))),
        Arc::new(records.iter().map(|r| Some(r.shares == Shares::Parent)).collect::<BooleanArray>()),
        Arc::new(Float64Array::from_iter_values(records.iter().map(|r| r.usage))),
        Arc::new(records.iter().map(|r| r.priority).collect::<UInt32Array>()),
        Arc::new(records.iter().map(|r| text(r.grp_tres_mins.as_deref())).collect::<StringArray>()),
    ])
}

fn downcast<T: Array + Clone + 'static>(a: ArrayRef) -> T {
    a.as_any().downcast_ref::<T>().expect("canonical column types by construction").clone()
}

/// Row of every id: a table indexed by id when ids are compact (as most files number them), a
/// hash map otherwise.
enum IdIndex {
    Dense(Vec<u32>),
    Sparse(hashbrown::HashMap<u64, u32, fairshare_base::hash::FixedState>),
}

impl IdIndex {
    /// Maps `ids`; on a repeated id, returns the rows of its first and second occurrence.
    fn new(ids: &[u64]) -> std::result::Result<Self, (usize, usize)> {
        const NONE: u32 = u32::MAX;
        let max = ids.iter().copied().max().unwrap_or(0);
        if max < 2 * ids.len() as u64 + 1024 {
            let mut rows = vec![NONE; max as usize + 1];
            for (i, &id) in ids.iter().enumerate() {
                let slot = &mut rows[id as usize];
                if *slot != NONE {
                    return Err((*slot as usize, i));
                }
                *slot = i as u32;
            }
            Ok(IdIndex::Dense(rows))
        } else {
            let mut rows = hashbrown::HashMap::with_capacity_and_hasher(ids.len(), Default::default());
            for (i, &id) in ids.iter().enumerate() {
                if let Some(first) = rows.insert(id, i as u32) {
                    return Err((first as usize, i));
                }
            }
            Ok(IdIndex::Sparse(rows))
        }
    }

    fn get(&self, id: u64) -> Option<usize> {
        match self {
            IdIndex::Dense(rows) => rows.get(id as usize).filter(|&&r| r != u32::MAX).map(|&r| r as usize),
            IdIndex::Sparse(rows) => rows.get(&id).map(|&r| r as usize),
        }
    }
}

impl AssocTree {
    /// Validates `cols` and lays them out breadth-first; [`AssocTree::build`] for columns.
    ///
    /// # Errors
    /// As [`AssocTree::build`].
    pub fn from_columns(cols: TreeColumns) -> Result<Self> {
        let n = cols.len();
        let source = &cols.source;
        if n == 0 {
            return Err(Error::input(source, None, "no associations in the input"));
        }
        if n > u32::MAX as usize - 1 {
            return Err(Error::input(source, None, format!("{n} associations exceed the supported 2^32-2")));
        }
        let usage_in = cols.usage.values();
        if let Some(i) = usage_in.iter().position(|u| !u.is_finite() || *u < 0.0) {
            return Err(Error::input(
                source,
                cols.line(i),
                format!("usage {} is not a non-negative number", usage_in[i]),
            ));
        }
        if let Some(i) = cols.shares.values().iter().position(|&s| s > super::MAX_SHARES) {
            return Err(Error::input(
                source,
                cols.line(i),
                format!("association {}: {}", cols.id.value(i), super::shares_too_large(cols.shares.value(i))),
            ));
        }
        let (child_off, mut child_rows) = link_children(&cols)?;
        let root = find_root(&cols)?;
        order_children(&cols, &child_off, &mut child_rows)?;
        let Layout { order, parent, depth, child_start, child_count, level_offsets } =
            breadth_first(n, root, |p| &child_rows[child_off[p] as usize..child_off[p + 1] as usize]);
        if order.len() != n {
            // Rows not reached from the root hang off a cycle.
            let mut reached = vec![false; n];
            for &o in &order {
                reached[o as usize] = true;
            }
            let first = (0..n).filter(|&i| !reached[i]).min_by_key(|&i| cols.line(i)).unwrap_or(0);
            return Err(Error::input(
                source,
                cols.line(first),
                format!(
                    "association {} is not reachable from the root: its parent chain forms a cycle",
                    cols.id.value(first)
                ),
            ));
        }

        let is_user: Vec<bool> = order.iter().map(|&old| cols.is_user(old as usize)).collect();
        let mut usage: Vec<f64> = order
            .iter()
            .zip(&is_user)
            .map(|(&old, &u)| if u || cols.account_usage == AccountUsage::Given { usage_in[old as usize] } else { 0.0 })
            .collect();
        match cols.account_usage {
            AccountUsage::SumOfUsers => {
                // Bottom-up: a parent always sits at a lower row than its children.
                for i in (1..n).rev() {
                    let p = parent[i] as usize;
                    usage[p] += usage[i];
                }
                // Usage is not negative, so an overflow anywhere reaches the root; the deepest
                // account that overflowed is the one to name (its children's sums are finite).
                if !usage[0].is_finite()
                    && let Some(r) = usage.iter().rposition(|u| !u.is_finite())
                {
                    return Err(overflow(&cols, order[r] as usize, "the users below it", usage[r]));
                }
            }
            AccountUsage::Given => {
                // Algorithms sum siblings' given usage (flux's weights): each sum must be finite.
                let mut sums = vec![0.0; n];
                for i in 1..n {
                    sums[parent[i] as usize] += usage[i];
                }
                if let Some(r) = sums.iter().position(|u| !u.is_finite()) {
                    return Err(overflow(&cols, order[r] as usize, "its children", sums[r]));
                }
            }
        }
        let usage_is_integral =
            order.iter().zip(&is_user).all(|(&old, &u)| !u || usage_in[old as usize].fract() == 0.0)
                && usage[0] < 9_007_199_254_740_992.0;

        let indices = UInt32Array::from(order);
        let mut parent_shares: Vec<bool> =
            indices.values().iter().map(|&old| cols.parent_shares.value(old as usize)).collect();
        parent_shares[0] = false;
        // Gathered into breadth-first order a string column and a number column at a time, each
        // input freed as soon as it is gathered: the next gather reuses its memory, so the input
        // and the tree are never both whole in memory.
        let grp_tres_mins = grp_tres_mins_in_order(&cols, &indices)?;
        let tres = cols.tres.as_ref().map(|t| Arc::new(t.gather(indices.values())));
        let TreeColumns { id, account, user, partition, shares, priority, .. } = cols;
        let gather_pair = |a: ArrayRef, b: ArrayRef| -> (ArrayRef, ArrayRef) {
            let gather = |c: ArrayRef| take(&c, &indices, None).expect("indices are rows of the input");
            rayon::join(|| gather(a), || gather(b))
        };
        let (account, id) = gather_pair(Arc::new(account), Arc::new(id));
        let (user, raw_shares) = gather_pair(Arc::new(user), Arc::new(shares));
        let (partition, priority) = gather_pair(Arc::new(partition), Arc::new(priority));
        Ok(AssocTree {
            id: downcast(id),
            parent: UInt32Array::from_iter((0..n).map(|i| (i > 0).then_some(parent[i]))),
            depth: UInt32Array::from(depth),
            child_start: UInt32Array::from(child_start),
            child_count: UInt32Array::from(child_count),
            user_count: is_user.iter().filter(|&&u| u).count(),
            is_user: BooleanArray::from(is_user),
            account: downcast(account),
            user: downcast(user),
            partition: downcast(partition),
            raw_shares: downcast(raw_shares),
            parent_shares: BooleanArray::from(parent_shares),
            raw_usage: Float64Array::from(usage),
            priority: downcast(priority),
            grp_tres_mins,
            tres,
            level_offsets,
            usage_is_integral,
            fs_groups: OnceLock::new(),
        })
    }
}

/// The `GrpTRESMins` of the rows `indices`, in that order, each rewritten in Slurm's TRES order as
/// sshare prints it (`GRES/gpu=600,cpu=60000` is `cpu=60000,gres/gpu=600`).
///
/// # Errors
/// A value that is not a TRES count list, naming its line.
fn grp_tres_mins_in_order(cols: &TreeColumns, indices: &UInt32Array) -> Result<StringArray> {
    let given = &cols.grp_tres_mins;
    if given.null_count() == given.len() {
        return Ok(StringArray::new_null(indices.len()));
    }
    indices
        .values()
        .iter()
        .map(|&old| {
            let old = old as usize;
            if !given.is_valid(old) || given.value(old).trim().is_empty() {
                return Ok(None);
            }
            parse_tres_counts(given.value(old))
                .map(|c| Some(c.to_string()))
                .map_err(|m| Error::input(&cols.source, cols.line(old), format!("GrpTRESMins: {m}")))
        })
        .collect()
}

impl AssocTree {
    /// The tree with its `parent` accounts left out and every account's fair-share group
    /// ([`FsGroups`](super::FsGroups), in its order) as its children: the children of a `parent`
    /// account sit among those of its fair-share parent, as Slurm's Fair Tree ranks them, for a
    /// pass that has no `parent` accounts. `parent` users stay, flagged. With the row of `self`
    /// each row is.
    ///
    /// Accounts keep their usage: a `parent` account's users are below its fair-share parent
    /// either way.
    pub(crate) fn without_parent_accounts(&self) -> (AssocTree, Vec<u32>) {
        let n = self.len();
        let groups = self.fs_groups();
        let (users, parent_flags) = (groups.user_flags(), groups.parent_flags());
        let mut offsets = Vec::with_capacity(n + 1);
        let mut members = Vec::with_capacity(groups.members().len());
        for x in 0..n {
            offsets.push(members.len() as u32);
            members.extend(groups.group(x).iter().filter(|&&m| users[m as usize] || !parent_flags[m as usize]));
        }
        offsets.push(members.len() as u32);
        let Layout { order, parent, depth, child_start, child_count, level_offsets } =
            breadth_first(n, 0, |x| &members[offsets[x] as usize..offsets[x + 1] as usize]);
        let indices = UInt32Array::from(order.clone());
        fn gather<T: Array + Clone + 'static>(column: &T, indices: &UInt32Array) -> T {
            downcast(take(column, indices, None).expect("indices are rows of the tree"))
        }
        let lifted = AssocTree {
            id: gather(&self.id, &indices),
            parent: UInt32Array::from_iter((0..order.len()).map(|i| (i > 0).then_some(parent[i]))),
            depth: UInt32Array::from(depth),
            child_start: UInt32Array::from(child_start),
            child_count: UInt32Array::from(child_count),
            is_user: gather(&self.is_user, &indices),
            account: gather(&self.account, &indices),
            user: gather(&self.user, &indices),
            partition: gather(&self.partition, &indices),
            raw_shares: gather(&self.raw_shares, &indices),
            parent_shares: gather(&self.parent_shares, &indices),
            raw_usage: gather(&self.raw_usage, &indices),
            priority: gather(&self.priority, &indices),
            grp_tres_mins: gather(&self.grp_tres_mins, &indices),
            tres: self.tres.as_ref().map(|t| Arc::new(t.gather(&order))),
            level_offsets,
            user_count: self.user_count,
            usage_is_integral: self.usage_is_integral,
            fs_groups: OnceLock::new(),
        };
        (lifted, order)
    }
}

/// A breadth-first layout: `order[k]` is the input row laid out at row `k`; the other columns
/// are per laid-out row.
struct Layout {
    order: Vec<u32>,
    parent: Vec<u32>,
    depth: Vec<u32>,
    child_start: Vec<u32>,
    child_count: Vec<u32>,
    level_offsets: Vec<u32>,
}

/// Lays out the rows reached from input row `root` (of `n`) breadth-first, the children of each
/// (`children(row)`, input rows) in the order given.
fn breadth_first<'a>(n: usize, root: usize, children: impl Fn(usize) -> &'a [u32]) -> Layout {
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let mut child_start = vec![0u32; n];
    let mut child_count = vec![0u32; n];
    let mut depth = vec![0u32; n];
    let mut parent = vec![0u32; n];
    let mut level_offsets = vec![0u32];
    order.push(root as u32);
    let mut head = 0usize;
    let mut level_end = 1usize;
    while head < order.len() {
        let kids = children(order[head] as usize);
        child_start[head] = order.len() as u32;
        child_count[head] = kids.len() as u32;
        for &k in kids {
            parent[order.len()] = head as u32;
            depth[order.len()] = depth[head] + 1;
            order.push(k);
        }
        head += 1;
        if head == level_end && head < order.len() {
            level_offsets.push(head as u32);
            level_end = order.len();
        }
    }
    level_offsets.push(order.len() as u32);
    let m = order.len();
    for column in [&mut child_start, &mut child_count, &mut depth, &mut parent] {
        column.truncate(m);
    }
    Layout { order, parent, depth, child_start, child_count, level_offsets }
}

/// The error for an account (input row `row`) whose `what` sum to `sum`, which is not finite.
fn overflow(cols: &TreeColumns, row: usize, what: &str, sum: f64) -> Error {
    Error::input(
        &cols.source,
        cols.line(row),
        format!("account {:?}: the usage of {what} sums to {sum}, not a finite number", cols.account.value(row)),
    )
}

/// Children per parent in a task of [`order_children`], about.
const ORDER_BLOCK: usize = 1 << 16;

/// Puts every row's children (`child_rows[child_off[p]..child_off[p + 1]]`) in the order of the
/// emulated system, across cores, and fails on two user associations with the same user and
/// partition under one account (the one under the lowest input row, whatever the thread count).
fn order_children(cols: &TreeColumns, child_off: &[u32], child_rows: &mut [u32]) -> Result<()> {
    // Consecutive parents own consecutive runs of `child_rows`.
    let runs =
        fairshare_base::parallel::runs::owner_runs(0..child_off.len() - 1, ORDER_BLOCK, |p| child_off[p] as usize);
    let blocks: Vec<(usize, &mut [u32])> = runs
        .iter()
        .map(|(parents, _)| parents.start)
        .zip(fairshare_base::parallel::runs::split_runs(child_rows, &runs))
        .collect();
    let failures: Vec<Result<()>> = blocks
        .into_par_iter()
        .map_init(Vec::new, |by_name, (first, block)| {
            let base = child_off[first] as usize;
            let mut p = first;
            while p + 1 < child_off.len() && (child_off[p] as usize) < base + block.len() {
                let kids = &mut block[child_off[p] as usize - base..child_off[p + 1] as usize - base];
                if kids.len() > 1 {
                    let sorted: &[u32] = if cols.sibling_order == SiblingOrder::Lineage {
                        sort_by_lineage(cols, kids);
                        kids
                    } else {
                        by_name.clear();
                        by_name.extend_from_slice(kids);
                        sort_by_lineage(cols, by_name);
                        by_name
                    };
                    check_duplicate_users(cols, sorted)?;
                }
                p += 1;
            }
            Ok(())
        })
        .collect();
    failures.into_iter().collect()
}

fn sort_by_lineage(cols: &TreeColumns, rows: &mut [u32]) {
    if !rows.is_sorted_by(|&a, &b| cols.lineage_cmp(a as usize, b as usize) != Ordering::Greater) {
        rows.sort_by(|&a, &b| cols.lineage_cmp(a as usize, b as usize));
    }
}

/// Fails on two user associations with the same user and partition among lineage-sorted siblings.
fn check_duplicate_users(cols: &TreeColumns, sorted: &[u32]) -> Result<()> {
    for w in sorted.windows(2) {
        let (a, b) = (w[0] as usize, w[1] as usize);
        if cols.is_user(a) && cols.lineage_cmp(a, b) == Ordering::Equal {
            let (first, second) = if cols.line(a) <= cols.line(b) { (a, b) } else { (b, a) };
            return Err(Error::input(
                &cols.source,
                cols.line(second),
                format!(
                    "duplicate association: user {} in account {} (first on line {})",
                    cols.user(second).unwrap_or(""),
                    cols.account.value(second),
                    cols.line(first)
                ),
            ));
        }
    }
    Ok(())
}

/// Children (input rows) of every input row, as offsets into one array, in input order; with the
/// structural checks that need the id map.
fn link_children(cols: &TreeColumns) -> Result<(Vec<u32>, Vec<u32>)> {
    let source = &cols.source;
    let n = cols.len();
    let index = IdIndex::new(cols.id.values()).map_err(|(first, second)| {
        Error::input(
            source,
            cols.line(second),
            format!("duplicate id {} (first on line {})", cols.id.value(second), cols.line(first)),
        )
    })?;
    // The parent row of row `i`, `NONE` for the root.
    const NONE: u32 = u32::MAX;
    let parent_of = |i: usize| -> Result<u32> {
        if cols.parent_id.is_null(i) {
            return Ok(NONE);
        }
        let pid = cols.parent_id.value(i);
        let Some(p) = index.get(pid) else {
            return Err(Error::input(
                source,
                cols.line(i),
                format!("parent {pid} of association {} does not exist", cols.id.value(i)),
            ));
        };
        if cols.is_user(p) {
            return Err(Error::input(
                source,
                cols.line(i),
                format!("parent {pid} is a user association (line {}); only accounts have children", cols.line(p)),
            ));
        }
        if let Some(user) = cols.user(i)
            && cols.account.value(i) != cols.account.value(p)
        {
            return Err(Error::input(
                source,
                cols.line(i),
                format!(
                    "user {user} is in account {:?} but its parent {pid} is account {:?}",
                    cols.account.value(i),
                    cols.account.value(p)
                ),
            ));
        }
        Ok(p as u32)
    };
    // Rows are linked across cores; a bad one is then looked for in order, so the first is named.
    const BAD: u32 = u32::MAX - 1;
    let (parent_row, accounts) = rayon::join(
        || (0..n).into_par_iter().map(|i| parent_of(i).unwrap_or(BAD)).collect::<Vec<u32>>(),
        || unique_accounts(cols),
    );
    if parent_row.contains(&BAD) {
        for i in 0..n {
            parent_of(i)?;
        }
    }
    accounts?;
    // Counting sort of the rows by parent keeps input order among siblings.
    let mut child_off = vec![0u32; n + 1];
    for &p in parent_row.iter().filter(|&&p| p != NONE) {
        child_off[p as usize + 1] += 1;
    }
    for i in 0..n {
        child_off[i + 1] += child_off[i];
    }
    let mut fill = child_off.clone();
    let mut child_rows = vec![0u32; child_off[n] as usize];
    for (i, &p) in parent_row.iter().enumerate().filter(|&(_, &p)| p != NONE) {
        child_rows[fill[p as usize] as usize] = i as u32;
        fill[p as usize] += 1;
    }
    Ok((child_off, child_rows))
}

/// Fails on an account name given twice in a Slurm tree: account names are unique in a cluster
/// (duplicate users can only be siblings, and are checked in the layout). flux-accounting's readers
/// place a bank by its position (CSV) or under every parent its name has (database), so in a flux
/// tree ([`SiblingOrder::Input`]) a bank name may repeat.
fn unique_accounts(cols: &TreeColumns) -> Result<()> {
    if cols.sibling_order == SiblingOrder::Input {
        return Ok(());
    }
    let mut accounts: hashbrown::HashMap<&str, u64, fairshare_base::hash::FixedState> = Default::default();
    for i in (0..cols.len()).filter(|&i| !cols.is_user(i)) {
        if let Some(first) = accounts.insert(cols.account.value(i), cols.line(i)) {
            return Err(Error::input(
                &cols.source,
                cols.line(i),
                format!("duplicate association: account {} (first on line {first})", cols.account.value(i)),
            ));
        }
    }
    Ok(())
}

fn find_root(cols: &TreeColumns) -> Result<usize> {
    let mut roots = (0..cols.len()).filter(|&i| cols.parent_id.is_null(i));
    let Some(root) = roots.next() else {
        return Err(Error::input(&cols.source, None, "no root association (a row with an empty parent)"));
    };
    if let Some(second) = roots.next() {
        return Err(Error::input(
            &cols.source,
            cols.line(second),
            format!("a second root (the first is on line {})", cols.line(root)),
        ));
    }
    if cols.is_user(root) {
        return Err(Error::input(&cols.source, cols.line(root), "the root must be an account, not a user"));
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Piecewise comparison orders as comparing the joined strings does, over pieces drawn
        /// from a small alphabet (so prefixes and equal runs are common).
        #[test]
        fn pieces_compare_as_their_concatenation(
            a in proptest::collection::vec("[/0-]{0,3}", 0..5),
            b in proptest::collection::vec("[/0-]{0,3}", 0..5),
        ) {
            let (pa, pb): (Vec<&[u8]>, Vec<&[u8]>) =
                (a.iter().map(|s| s.as_bytes()).collect(), b.iter().map(|s| s.as_bytes()).collect());
            prop_assert_eq!(cmp_pieces(&pa, &pb), a.concat().cmp(&b.concat()));
        }
    }

    /// Whatever reader made the records, a share count past Slurm's uint32 is refused with the
    /// record's line, and the largest one builds.
    #[test]
    fn shares_past_a_uint32_are_refused_for_every_reader() {
        let record = |id, parent_id, user: Option<&str>, shares, line| AssocRecord {
            id,
            parent_id,
            account: "a".into(),
            user: user.map(String::from),
            partition: None,
            shares: Shares::Value(shares),
            usage: 0.0,
            priority: None,
            grp_tres_mins: None,
            line,
        };
        let tree = |shares| {
            let records = vec![record(1, None, None, 1, 2), record(2, Some(1), Some("u"), shares, 3)];
            AssocTree::build(TreeInput::slurm("t.db", records))
        };
        assert!(tree(crate::tree::MAX_SHARES).is_ok());
        let e = tree(1 << 32).unwrap_err().to_string();
        assert_eq!(
            e,
            "t.db:3: association 2: shares 4294967296 is too large: expected a whole number in 0..=4294967294 or `parent`"
        );
    }
}
