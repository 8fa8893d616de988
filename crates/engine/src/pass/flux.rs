//! flux-accounting's weighted tree (`weighted_walk_t`), quirks included.
//!
//! Each node's weight is `(shares / Σ sibling shares) / (usage / Σ sibling usage)`, computed with
//! exactly flux-accounting's operations: the sibling usage sum is accumulated into an integer
//! (each partial sum truncated, `--flux-exact-sums` turns that off), zero usage weighs 2^64, zero
//! shares weigh 0. Siblings are sorted by weight descending, users first among tolerance-equal
//! weights. The walk goes depth-first; users take `rank / N` with competition ranking among
//! tolerance-tied adjacent users; tolerance-tied adjacent banks are merged into one virtual bank
//! whose children are re-sorted by their existing weights (recursively). A user never ties a bank.
//!
//! Weights and sorts are per-group kernels run in parallel. The walk's ranks follow from visit
//! positions, worked out a level at a time with the banks of a level in parallel; only the subtrees
//! whose lists merge tied banks are walked as flux-accounting does, with a stack of their own.
//!
//! flux-accounting has no `FairShare=parent`. On a Slurm tree with it the weighted tree runs as
//! Fair Tree groups the tree: a `parent` account is left out and its children compete among its
//! fair-share parent's (`AssocTree::without_parent_accounts`), and a `parent` user weighs 2^64,
//! so it ranks first among its fair-share parent's children (with its idle siblings), as Fair
//! Tree's `+inf` ranks it. Its factor is then the top of its fair-share parent's block of ranks.

use super::{FairShare, Params, norm_usage, norm_usage_at};
use crate::tree::AssocTree;
use fairshare_base::parallel;
use fairshare_base::parallel::runs::split_runs;

/// Weight of a zero-usage sibling: `(double)UINT64_MAX + 1`.
pub const MAX_WEIGHT: f64 = 18_446_744_073_709_551_616.0;

/// `weighted_tree_node_t::is_equal`.
fn is_equal(a: f64, b: f64) -> bool {
    (a - b).abs() < f64::EPSILON * a.abs().max(b.abs()).max(1.0)
}

pub(super) fn flux(tree: &AssocTree, params: Params) -> FairShare {
    if !tree.has_parent_shares() {
        return weighted_tree(tree, params);
    }
    let (lifted, rows) = tree.without_parent_accounts();
    on_slurm_tree(tree, &lifted, &rows, weighted_tree(&lifted, params))
}

/// The weighted tree over a tree without `parent` accounts; a `parent` user weighs [`MAX_WEIGHT`].
fn weighted_tree(tree: &AssocTree, params: Params) -> FairShare {
    let n = tree.len();
    let usage = tree.raw_usage();
    let shares = tree.raw_shares();
    let users = tree.fs_groups().user_flags();
    let parents = tree.parents();

    // Per-parent sibling sums, in child order, as flux-accounting accumulates them, for the rows
    // that can be parents.
    let (starts, counts) = (tree.child_starts(), tree.child_counts());
    let parent_rows = tree.parent_rows();
    let sums = parallel::column(parent_rows, |p| sibling_sums(tree, p, params.flux_exact_sums));
    // A `parent` user ranks as Fair Tree ranks it: first among its siblings (its 0 shares aside).
    let parent_users = tree.has_parent_shares().then(|| tree.parent_share_flags());

    // One pass over the rows for the output columns; level_fs is the weight, shown as inf where it
    // is MAX_WEIGHT (and only there: a computed weight never reaches inf).
    let mut norm_shares = vec![0.0; n];
    let mut effective_usage = vec![0.0; n];
    let mut level_fs = vec![0.0; n];
    let mut norm_usage = vec![0.0; n];
    parallel::fill_rows([&mut norm_shares, &mut effective_usage, &mut level_fs, &mut norm_usage], |c| {
        if c == 0 {
            return [f64::NAN, 1.0, f64::NAN, norm_usage_at(usage, 0)];
        }
        let (s_sum, u_sum) = sums[parents[c] as usize];
        let w = if parent_users.as_ref().is_some_and(|p| p[c]) {
            MAX_WEIGHT
        } else {
            weight(shares[c], s_sum, usage[c], u_sum)
        };
        [
            shares[c] as f64 / s_sum as f64,
            if u_sum == 0.0 { 0.0 } else { usage[c] / u_sum },
            if w == MAX_WEIGHT { f64::INFINITY } else { w },
            norm_usage_at(usage, c),
        ]
    });

    // Rows 1.. are the child ranges in parent order: sort each in place, a task taking consecutive
    // parents until it holds a chunk of rows.
    let weight_of = |r: usize| if level_fs[r] == f64::INFINITY { MAX_WEIGHT } else { level_fs[r] };
    let mut sorted: Vec<Sibling> =
        parallel::column(n - 1, |i| Sibling { weight: weight_of(i + 1), user: users[i + 1], row: i as u32 + 1 });
    {
        // `sorted` holds rows 1..: the children of `p` start at its first child's row minus one
        // (a row of the deepest level, `parent_rows` included, has its child start at `n`).
        let runs = parallel::task_runs(0..parent_rows, |p| starts[p] as usize - 1);
        let mut tasks: Vec<_> =
            runs.iter().map(|(parents, _)| parents.clone()).zip(split_runs(&mut sorted, &runs)).collect();
        parallel::for_each_task(&mut tasks, |(parents, rows)| {
            let mut at = 0;
            for p in parents.clone() {
                let len = counts[p] as usize;
                sort_siblings(&mut rows[at..at + len]);
                at += len;
            }
        });
    }

    let n_users = tree.user_count();
    let ranks = rank_users(tree, &sorted, n_users);
    let fs_factor = parallel::column(n, |i| if users[i] { f64::from(ranks[i]) / n_users as f64 } else { f64::NAN });
    FairShare { params, norm_shares, norm_usage, effective_usage, level_fs, rank: ranks, fs_factor }
}

/// The shares and usage sums of the children of `p`, in child order, as flux-accounting
/// accumulates them (`exact`: usage summed without truncation).
fn sibling_sums(tree: &AssocTree, p: usize, exact: bool) -> (u64, f64) {
    let kids = tree.children(p);
    let s = tree.raw_shares()[kids.clone()].iter().fold(0u64, |acc, &c| acc.wrapping_add(c));
    let usage = &tree.raw_usage()[kids];
    let u =
        if exact { usage.iter().sum::<f64>() } else { usage.iter().fold(0u64, |acc, &c| add_truncated(acc, c)) as f64 };
    (s, u)
}

/// The weighted tree of a Slurm tree with `parent` shares (`tree`) from its result on `lifted`,
/// `tree` without its `parent` accounts (`rows`: the row of `tree` each row of `lifted` is).
///
/// Its rows keep their values, except that `parent` associations show what Fair Tree shows for
/// them: no weight, and their fair-share parent's S. A `parent` account, which ranks no one, has
/// as U its usage over that of the group its children were lifted into.
fn on_slurm_tree(tree: &AssocTree, lifted: &AssocTree, rows: &[u32], inner: FairShare) -> FairShare {
    let n = tree.len();
    let mut at = vec![u32::MAX; n];
    for (k, &r) in rows.iter().enumerate() {
        at[r as usize] = k as u32;
    }
    let lifted_row = |r: usize| (at[r] != u32::MAX).then_some(at[r] as usize);
    let groups = tree.fs_groups();
    let fs_parents = groups.fs_parents();
    let usage = tree.raw_usage();
    let mut out = FairShare {
        params: inner.params,
        norm_shares: vec![f64::NAN; n],
        norm_usage: norm_usage(tree),
        effective_usage: vec![0.0; n],
        level_fs: vec![f64::NAN; n],
        rank: vec![0; n],
        fs_factor: vec![f64::NAN; n],
    };
    for r in 0..n {
        if let Some(k) = lifted_row(r) {
            out.norm_shares[r] = inner.norm_shares[k];
            out.effective_usage[r] = inner.effective_usage[k];
            out.level_fs[r] = inner.level_fs[k];
            out.rank[r] = inner.rank[k];
            out.fs_factor[r] = inner.fs_factor[k];
        }
    }
    for r in (1..n).filter(|&r| tree.is_parent_shares(r)) {
        let f = fs_parents[r] as usize;
        out.level_fs[r] = f64::NAN;
        out.norm_shares[r] = out.norm_shares[f];
        if lifted_row(r).is_none() {
            // A fair-share parent has real shares (or is the root): it is in `lifted`.
            let (_, u_sum) = sibling_sums(lifted, at[f] as usize, inner.params.flux_exact_sums);
            out.effective_usage[r] = if u_sum == 0.0 { 0.0 } else { usage[r] / u_sum };
        }
    }
    out
}

/// flux-accounting's `(uint64_t)(sum + usage)`, without the float conversions on the chain where
/// integers give the same value.
///
/// With `low = sum + ⌊usage⌋` below 2^53, the exact sum `low + frac` (`frac` the fraction of
/// `usage`) lies in `[low, low + 1)`; the f64 addition rounds it to `low + 1` only when `frac` is
/// within half an ulp of 1, and otherwise to something that truncates to `low`. The sum then needs
/// one integer addition per sibling; the rare near-1 fractions take the float path.
fn add_truncated(sum: u64, usage: f64) -> u64 {
    const EXACT: u64 = 1 << 53;
    if (0.0..EXACT as f64).contains(&usage) {
        // Through i64, each conversion is one instruction (u64's are not); the range fits.
        let whole = usage as i64 as u64;
        if sum < EXACT - whole {
            let low = sum + whole;
            let frac = usage - whole as i64 as f64; // exact: `whole` and `usage` share their leading bits
            if frac == 0.0 || low == 0 || frac < 1.0 - half_ulp(low) {
                return low;
            }
        }
    }
    (sum as f64 + usage) as u64
}

/// Half the spacing of f64 values around `low` (`1 <= low < 2^53`): `2^(e - 53)` for
/// `2^e <= low < 2^(e + 1)`. `1.0 - half_ulp(low)` is exact, the midpoint below 1.
fn half_ulp(low: u64) -> f64 {
    let e = u64::from(63 - low.leading_zeros());
    f64::from_bits((e + 1023 - 53) << 52)
}

/// A sibling as the sort and the walk see it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Sibling {
    weight: f64,
    user: bool,
    row: u32,
}

/// A node's weight among its siblings (`weighted_tree_node_t::calc_set_weight`): its shares over
/// the siblings' shares, divided by its usage over the siblings' usage. No shares weigh 0 (idle or
/// not); otherwise usage below 10^-9 weighs [`MAX_WEIGHT`].
fn weight(shares: u64, shares_sum: u64, usage: f64, usage_sum: f64) -> f64 {
    if shares == 0 {
        0.0
    } else if usage.abs() < 1e-9 {
        MAX_WEIGHT
    } else {
        (shares as f64 / shares_sum as f64) / (usage / usage_sum)
    }
}

/// Sorts siblings as `sort_weighted_children` does: libstdc++'s `std::sort` with flux-accounting's
/// comparator (users first among tolerance-equal weights, otherwise weight descending). The
/// comparator is not transitive on chains of near-equal weights, so the algorithm itself matters.
fn sort_weighted(rows: &mut [Sibling]) {
    super::stdsort::sort(rows, |a, b| {
        if is_equal(a.weight, b.weight) && a.user != b.user {
            return a.user;
        }
        a.weight > b.weight
    });
}

/// Sorts a child list (in tree order) into an order the ranks cannot tell from [`sort_weighted`]'s.
///
/// Most lists have no weights that are tolerance-equal without being equal (idle users tie at
/// exactly 2^64, copied shares and usage tie exactly). On such a list flux-accounting's comparator
/// is a strict weak order: weight descending, users first among equal weights. Any sort by that
/// order then gives `std::sort`'s list up to the order of members of equal weight and kind, which
/// the ranks do not see as long as those members are users (they tie and share a rank). A list
/// where tolerance-equality is not equality, or where two banks tie (their children are merged in
/// list order), is put back in tree order and sorted as flux-accounting does.
fn sort_siblings(rows: &mut [Sibling]) {
    // The bits of non-negative weights (sign bit clear, not NaN) order them; the low bit puts users
    // first. Anything else (negative usage) takes the exact path.
    let key = |s: &Sibling| std::cmp::Reverse((s.weight.to_bits() << 1) | u64::from(s.user));
    let strict = rows.iter().all(|s| s.weight.to_bits() <= f64::INFINITY.to_bits()) && {
        rows.sort_unstable_by_key(key);
        rows.windows(2).all(|w| !is_equal(w[0].weight, w[1].weight) || (w[0].weight == w[1].weight && w[1].user))
    };
    if !strict {
        sort_from_tree_order(rows);
    }
}

/// Puts `rows` back in tree order and sorts them as flux-accounting does: with a comparator that
/// is not a strict weak order, where equal members end up depends on where they started.
fn sort_from_tree_order(rows: &mut [Sibling]) {
    rows.sort_unstable_by_key(|s| s.row);
    sort_weighted(rows);
}

/// The user rows of a flux tree in the order flux-accounting's update-fshare writes their
/// fair-share (`data_writer_db_t`): depth-first, each bank's children in the order the walk's sort
/// left them in the tree (tied banks are merged for ranking only; the writer walks the banks
/// themselves). A user whose bank the database lists under two parents is in the tree twice and
/// written twice: the value written last is the one the database keeps.
pub fn update_fshare_order(tree: &AssocTree, fs: &FairShare) -> Vec<usize> {
    let weight_of = |r: usize| if fs.level_fs[r] == f64::INFINITY { MAX_WEIGHT } else { fs.level_fs[r] };
    let mut order = Vec::with_capacity(tree.user_count());
    let mut stack = vec![0usize];
    let mut kids = Vec::new();
    while let Some(r) = stack.pop() {
        if tree.is_user(r) {
            order.push(r);
            continue;
        }
        kids.clear();
        kids.extend(tree.children(r).map(|c| Sibling { weight: weight_of(c), user: tree.is_user(c), row: c as u32 }));
        sort_from_tree_order(&mut kids);
        stack.extend(kids.iter().rev().map(|k| k.row as usize));
    }
    order
}

/// A bank whose subtree the sequential [`Walk`] ranks, in [`rank_users`]'s positions.
const WALKED: u32 = u32::MAX;

/// Ranks every user. A user's rank is `N - p`, `p` its position in the depth-first walk, and a
/// chain of tied users takes the rank of its first: so positions are worked out a level at a time,
/// the banks of a level in parallel, each placing its sorted children after its own position
/// (a bank's children take as many positions as it has users below it). A bank whose list has tied
/// banks to merge hands its whole subtree to the sequential [`Walk`], started at its position.
fn rank_users(tree: &AssocTree, sorted: &[Sibling], n_users: usize) -> Vec<u32> {
    let n = tree.len();
    let users_below = tree.fs_groups().users_below();
    let starts = tree.child_starts();
    let mut ranks = vec![0u32; n];
    // The position of the first user below each bank (WALKED: the sequential walk's).
    let mut start = vec![0u32; n];
    let mut walks: Vec<(usize, u32)> = Vec::new();
    for k in 0..tree.levels() {
        let level = tree.level(k);
        let (lo, hi) = (tree.children(level.start).start, tree.children(level.end - 1).end);
        if lo == hi {
            break;
        }
        let (above, below) = start.split_at_mut(lo);
        let above = &*above;
        // The children of `x`, counted from the level's first child; `level.end` is past the last.
        let runs = parallel::task_runs(level.clone(), |x| starts[x] as usize);
        let mut tasks: Vec<_> = runs
            .iter()
            .map(|(banks, _)| banks.clone())
            .zip(split_runs(&mut below[..hi - lo], &runs))
            .zip(split_runs(&mut ranks[lo..hi], &runs))
            .map(|((banks, s), r)| (banks, s, r))
            .collect();
        let place = |(banks, start_out, ranks_out): &mut (std::ops::Range<usize>, &mut [u32], &mut [u32])| {
            let base = tree.children(banks.start).start;
            let mut handed = Vec::new();
            for x in banks.clone() {
                let kids = tree.children(x);
                if kids.is_empty() {
                    continue;
                }
                let (from, to) = (kids.start - base, kids.end - base);
                let list = &sorted[kids.start - 1..kids.end - 1];
                if above[x] == WALKED || has_tied_banks(list) {
                    if above[x] != WALKED {
                        handed.push((x, above[x]));
                    }
                    start_out[from..to].fill(WALKED);
                    continue;
                }
                let mut p = above[x];
                let mut chain = None;
                for (i, c) in list.iter().enumerate() {
                    let row = c.row as usize - base;
                    if c.user {
                        let rank = chain.unwrap_or(n_users as u32 - p);
                        ranks_out[row] = rank;
                        chain = equal_next(list, i).then_some(rank);
                        p += 1;
                    } else {
                        start_out[row] = p;
                        p += users_below[c.row as usize];
                        chain = None;
                    }
                }
            }
            handed
        };
        walks.extend(parallel::map_tasks(&mut tasks, place).into_iter().flatten());
    }
    for (bank, p) in walks {
        Walk { tree, sorted, rank: n_users as u32 - p, stride: 0, ranks: &mut ranks }.run(bank);
    }
    ranks
}

/// Whether some bank of a sorted list ties with the bank after it (the two are then merged).
fn has_tied_banks(list: &[Sibling]) -> bool {
    (0..list.len()).any(|i| !list[i].user && equal_next(list, i))
}

/// flux-accounting's depth-first walk, for the subtrees whose lists merge tied banks.
struct Walk<'a, 'r> {
    tree: &'a AssocTree,
    /// Rows 1.. with each child range sorted: row `r` is at `r - 1` before sorting.
    sorted: &'a [Sibling],
    rank: u32,
    stride: u32,
    ranks: &'r mut [u32],
}

/// A child list being walked (`handle_internal`), and the position of its next member.
struct Frame<'a> {
    list: List<'a>,
    next: usize,
}

/// A sorted child list: a bank's own, a virtual bank's, or one with tied banks merged into entries.
enum List<'a> {
    Bank(&'a [Sibling]),
    Virtual(Vec<Sibling>),
    Merged(Vec<(Entry, bool)>),
}

enum Entry {
    Node(Sibling),
    Virtual(Vec<Sibling>),
}

/// Whether `list[i]` ties with the member after it (same kind, tolerance-equal weights).
fn equal_next(list: &[Sibling], i: usize) -> bool {
    i + 1 < list.len() && list[i].user == list[i + 1].user && is_equal(list[i].weight, list[i + 1].weight)
}

impl<'a> Walk<'a, '_> {
    fn children(&self, row: usize) -> &'a [Sibling] {
        let kids = self.tree.children(row);
        &self.sorted[kids.start - 1..kids.end - 1]
    }

    /// The children of `row` in exactly the order flux-accounting's sort leaves them, for merging:
    /// [`sort_siblings`] may have ordered members of equal weight differently.
    fn exact_children(&self, row: usize) -> Vec<Sibling> {
        let mut kids = self.children(row).to_vec();
        sort_from_tree_order(&mut kids);
        kids
    }

    /// Competition ranking: a user tied with the next shares its rank, and the ranks skipped.
    fn place_user(&mut self, row: u32, tie_with_next: bool) {
        self.ranks[row as usize] = self.rank;
        if tie_with_next {
            self.stride += 1;
        } else {
            self.rank = self.rank.saturating_sub(1 + self.stride);
            self.stride = 0;
        }
    }

    /// The frame that walks `list`: as it is when no banks in it tie (most lists), else with each
    /// run of tied banks merged into one virtual bank whose children are sorted again.
    fn frame(&self, list: List<'a>) -> Frame<'a> {
        let members = match &list {
            List::Bank(l) => *l,
            List::Virtual(v) => v.as_slice(),
            List::Merged(_) => return Frame { list, next: 0 },
        };
        if !has_tied_banks(members) {
            return Frame { list, next: 0 };
        }
        let mut entries = Vec::with_capacity(members.len());
        let mut merged: Option<Vec<Sibling>> = None;
        for (i, &c) in members.iter().enumerate() {
            let tied = equal_next(members, i);
            if c.user {
                entries.push((Entry::Node(c), tied));
            } else if tied {
                merged.get_or_insert_with(Vec::new).extend(self.exact_children(c.row as usize));
            } else if let Some(mut v) = merged.take() {
                v.extend(self.exact_children(c.row as usize));
                sort_weighted(&mut v);
                entries.push((Entry::Virtual(v), false));
            } else {
                entries.push((Entry::Node(c), false));
            }
        }
        Frame { list: List::Merged(entries), next: 0 }
    }

    /// Places the users of `list` from `*next` on, up to its next bank, and moves past that bank;
    /// returns the bank's child list, or `None` at the end of `list`.
    fn place_users(&mut self, list: &[Sibling], next: &mut usize) -> Option<List<'a>> {
        while let Some(&c) = list.get(*next) {
            *next += 1;
            if !c.user {
                return Some(List::Bank(self.children(c.row as usize)));
            }
            self.place_user(c.row, equal_next(list, *next - 1));
        }
        None
    }

    /// The depth-first walk from `root` (flux-accounting recurses; this keeps its own stack, so a
    /// tree of any depth walks).
    fn run(&mut self, root: usize) {
        let mut stack = vec![self.frame(List::Bank(self.children(root)))];
        while let Some(Frame { list, next }) = stack.last_mut() {
            let descend = match list {
                List::Bank(l) => self.place_users(l, next),
                List::Virtual(v) => self.place_users(v, next),
                List::Merged(entries) => loop {
                    let Some(entry) = entries.get_mut(*next) else { break None };
                    *next += 1;
                    match entry {
                        (Entry::Node(c), tied) if c.user => self.place_user(c.row, *tied),
                        (Entry::Node(c), _) => break Some(List::Bank(self.children(c.row as usize))),
                        (Entry::Virtual(v), _) => break Some(List::Virtual(std::mem::take(v))),
                    }
                },
            };
            match descend {
                Some(list) => stack.push(self.frame(list)),
                None => {
                    stack.pop();
                }
            }
        }
    }
}

/// The tree of `parent_shares_rank_as_fair_tree_groups_them`: a `parent` account P among A's
/// children, `parent` users in P and B (also the tree of explain's flux range test).
#[cfg(test)]
fn parent_shares_tree() -> AssocTree {
    let text = "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,A,,3,0\n3,2,A,a1,1,40\n\
                4,2,P,,parent,0\n5,4,P,p1,2,20\n6,4,P,p2,parent,10\n7,1,B,,1,0\n8,7,B,b1,1,10\n\
                9,7,B,b2,parent,30\n";
    AssocTree::build(crate::io::assoc_csv::parse(std::path::Path::new("parent.csv"), text).unwrap()).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_sums_take_the_integer_path_only_where_it_is_exact() {
        let float = |sum: u64, usage: f64| (sum as f64 + usage) as u64;
        let exact = 1u64 << 53;
        let sums = [0, 1, 7, 1 << 40, exact - 3, exact - 1, exact, exact + 1, exact + 2, 1 << 60, u64::MAX - 1];
        let usages = [
            0.0,
            0.5,
            1.0,
            2.5,
            3.0,
            1.0 / 3.0,
            1e15 + 0.5,
            (exact - 1) as f64,
            exact as f64,
            (exact + 2) as f64,
            1e19,
            1e300,
            f64::MIN_POSITIVE,
        ];
        for sum in sums {
            for usage in usages {
                assert_eq!(add_truncated(sum, usage), float(sum, usage), "{sum} + {usage}");
            }
        }
    }

    #[test]
    fn truncated_sums_of_fractions_round_up_exactly_where_floats_do() {
        let float = |sum: u64, usage: f64| (sum as f64 + usage) as u64;
        let below = |x: f64| f64::from_bits(x.to_bits() - 1);
        let above = |x: f64| f64::from_bits(x.to_bits() + 1);
        for e in 0..53u32 {
            let half = f64::from_bits(u64::from(e + 1023 - 53) << 52);
            // The midpoint below 1 at this magnitude (a tie, rounded to even), and its neighbours.
            let fracs = [1.0 - half, below(1.0 - half), above(1.0 - half), below(1.0), 0.5, 0.25, 1e-9];
            for low in [1u64 << e, (1u64 << e) + 1, (2u64 << e) - 2, (2u64 << e) - 1] {
                for whole in [0, 1, 5] {
                    let Some(sum) = low.checked_sub(whole) else { continue };
                    for frac in fracs {
                        let usage = whole as f64 + frac;
                        assert_eq!(add_truncated(sum, usage), float(sum, usage), "{sum} + {usage:e} (2^{e})");
                    }
                }
            }
        }
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut sum = 0u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let usage = (x >> 11) as f64 / (1u64 << (x % 40)) as f64;
            let next = add_truncated(sum, usage);
            assert_eq!(next, float(sum, usage), "{sum} + {usage:e}");
            sum = if next > 1 << 60 { 0 } else { next };
        }
    }

    #[test]
    fn weights_are_share_over_usage_fractions() {
        assert_eq!(weight(1, 4, 10.0, 20.0), 0.5);
        assert_eq!(weight(0, 4, 10.0, 20.0), 0.0);
        assert_eq!(weight(0, 4, 0.0, 20.0), 0.0);
        assert_eq!(weight(1, 4, 1e-10, 20.0), MAX_WEIGHT);
        assert_eq!(weight(1, 4, -1e-10, 20.0), MAX_WEIGHT);
    }

    #[test]
    fn tolerance_ties_put_users_first() {
        let weight = [0.0, 0.998_498_498_498_498_6, 0.998_498_498_498_498_5, 2.0];
        let users = [false, false, true, true];
        let mut rows: Vec<Sibling> =
            (1..4).map(|r| Sibling { weight: weight[r], user: users[r], row: r as u32 }).collect();
        sort_weighted(&mut rows);
        assert_eq!(rows.iter().map(|s| s.row).collect::<Vec<_>>(), vec![3, 2, 1]);
        assert!(is_equal(weight[1], weight[2]));
        assert!(!is_equal(1.0, 1.0 + 1e-12));
    }

    /// flux-accounting's walk recurses once per level; this one keeps its own stack, so a chain
    /// deeper than any thread's stack ranks as a shallow tree would.
    #[test]
    fn a_chain_deeper_than_a_stack_walks() {
        let depth = 200_000;
        let mut text = String::from("id,parent_id,account,user,shares,usage\n1,,root,,1,0\n");
        for i in 2..=depth {
            text += &format!("{i},{},a{i},,1,0\n", i - 1);
        }
        text += &format!("{},{depth},a{depth},u1,1,10\n{},{depth},a{depth},u2,1,20\n", depth + 1, depth + 2);
        let input = crate::io::assoc_csv::parse(std::path::Path::new("chain.csv"), &text).unwrap();
        let tree = AssocTree::build(input).unwrap();
        let fs = flux(&tree, Params::new(super::super::Algorithm::Flux));
        let n = tree.len();
        // u1 (less usage) ranks first.
        assert_eq!((fs.rank[n - 2], fs.rank[n - 1]), (2, 1));
        assert_eq!((fs.fs_factor[n - 2], fs.fs_factor[n - 1]), (1.0, 0.5));
    }

    /// A Slurm tree with `parent` shares, by hand. Root: A (3 shares; a1 40, and the `parent`
    /// account P with p1 (2 shares, 20) and the `parent` user p2 (10)) and B (1 share; b1 10 and
    /// the `parent` user b2 30). N = 5 users.
    ///
    /// Root: S = 4, U = 70 + 40 = 110; A weighs (3/4)/(70/110) = 1.178571, B (1/4)/(40/110) =
    /// 0.6875: A's users take ranks 5..3, B's 2..1. P is left out and its children compete in A's
    /// group, next to a1: S = 1 + 2 (p2's `parent` shares count 0), U = 40 + 20 + 10 = 70. p2 weighs
    /// 2^64, p1 (2/3)/(20/70) = 2.333333, a1 (1/3)/(40/70) = 0.583333: p2 5/5 = 1, p1 4/5, a1 3/5.
    /// In B, b2 weighs 2^64 and b1 (1/1)/(10/40) = 4: b2 2/5, b1 1/5. A `parent` user so takes the
    /// top of its fair-share parent's block.
    #[test]
    fn parent_shares_rank_as_fair_tree_groups_them() {
        let tree = parent_shares_tree();
        let fs = flux(&tree, Params::new(super::super::Algorithm::Flux));
        let row = |name: &str| (0..tree.len()).find(|&r| tree.user_name(r).unwrap_or(tree.account(r)) == name).unwrap();
        let factors: Vec<f64> = ["p2", "p1", "a1", "b2", "b1"].map(|u| fs.fs_factor[row(u)]).to_vec();
        assert_eq!(factors, [1.0, 0.8, 0.6, 0.4, 0.2]);
        assert_eq!(["p2", "p1", "a1", "b2", "b1"].map(|u| fs.rank[row(u)]), [5, 4, 3, 2, 1]);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(fs.level_fs[row("A")], 0.75 / (70.0 / 110.0)));
        assert!(close(fs.level_fs[row("p1")], (2.0 / 3.0) / (20.0 / 70.0)));
        assert!(close(fs.level_fs[row("b1")], 4.0));
        // `parent` associations: no weight and their fair-share parent's S, as Fair Tree shows them;
        // P's usage is over that of the group its children were lifted into.
        for r in ["P", "p2", "b2"] {
            assert!(fs.level_fs[row(r)].is_nan(), "{r}");
        }
        assert_eq!((fs.norm_shares[row("P")], fs.norm_shares[row("p2")]), (0.75, 0.75));
        assert_eq!(fs.norm_shares[row("b2")], 0.25);
        assert!(close(fs.effective_usage[row("P")], 30.0 / 70.0));
        assert!(close(fs.effective_usage[row("p2")], 10.0 / 70.0));
        assert!(fs.fs_factor[row("P")].is_nan());
        assert_eq!(fs.rank[row("P")], 0);
    }
}
