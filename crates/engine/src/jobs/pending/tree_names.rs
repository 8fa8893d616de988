//! A tree's names, given to a queue before it is read.
//!
//! At 10^6 associations a 10^7-job queue names 9·10^5 users. Interned row by row, every user and
//! account name was a lookup missing the caches three times (the table's control bytes, its
//! bucket, the name's bytes), and preparing each part of the queue for scoring looked every
//! association's names up again. Against a [`TreeNames`], a job's (user, account) is found with
//! one lookup in the prefetching pair table of charging ([`PairIndex`]), which hands back both
//! ids; the names keep one id across row groups, and the associations are indexed by those ids
//! once.

use std::sync::Arc;

use arrow::array::{Array, StringViewArray};

use crate::tree::AssocTree;
use crate::tree::pair_index::{NONE, PairIndex};
use fairshare_base::memory::prefetch;
use fairshare_base::read::interner::Interner;

/// How many jobs ahead [`TreeNames::push_pairs`] prefetches a pair's ids.
const PAIR_IDS_AHEAD: usize = 16;

/// The names of a tree's user associations (users, accounts, partitions) as a queue's first
/// name ids, its (user, account) pairs, and the associations by those ids: made once per tree.
/// A queue read against them ([`crate::jobs::PendingJobs::read_with`]) is indexed for scoring
/// by [`crate::priority::SlurmPriority::prepare_with`] without a lookup.
///
/// # Example
/// ```
/// use fairshare_engine::jobs::TreeNames;
/// let tree = fairshare_engine::io::default_tree()?;
/// let names = TreeNames::new(&tree);
/// let mut queue_names = names.interner();
/// let before = queue_names.len();
/// assert!(queue_names.get("dana").is_some());
/// assert_eq!(queue_names.intern("nobody") as usize, before);
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub struct TreeNames {
    names: Arc<Interner>,
    /// (user, account) → index into `pair_ids`.
    pairs: PairIndex,
    pair_ids: Vec<(u32, u32)>,
    by_user: Vec<(u32, u32, u32, u32)>,
    rows: usize,
}

impl std::fmt::Debug for TreeNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeNames").field("names", &self.names.len()).field("rows", &self.rows).finish()
    }
}

const _: () = assert!(NONE == u32::MAX, "of_sequence's id of no name");

impl TreeNames {
    /// The names of `tree`'s user associations, in row order.
    pub fn new(tree: &AssocTree) -> Self {
        let user_rows: Vec<usize> = (0..tree.len()).filter(|&r| tree.user_name(r).is_some()).collect();
        // Each user row's user, account and partition, in row order (the ids interning them one
        // by one gives); no partition has the id u32::MAX, NONE.
        let (names, ids) = Interner::of_sequence(3 * user_rows.len(), |i| {
            let r = user_rows[i / 3];
            match i % 3 {
                0 => tree.user_name(r),
                1 => Some(tree.account(r)),
                _ => tree.partition(r),
            }
        });
        let mut pair_ids = Vec::with_capacity(user_rows.len());
        let mut keys = Vec::with_capacity(user_rows.len());
        let mut by_user = Vec::with_capacity(user_rows.len());
        for (&r, ids) in user_rows.iter().zip(ids.chunks_exact(3)) {
            by_user.push((ids[0], ids[1], ids[2], r as u32));
            // A pair repeated with other partitions has the same ids: whichever index the
            // table keeps names them.
            keys.push((pair_ids.len() as u32, tree.user_name(r).unwrap_or_default(), tree.account(r), None));
            pair_ids.push((ids[0], ids[1]));
        }
        // As `user_associations` gives them.
        by_user.sort_unstable();
        TreeNames { pairs: PairIndex::new(&keys), names: Arc::new(names), pair_ids, by_user, rows: tree.len() }
    }

    /// An interner for a queue's names that starts from these.
    pub fn interner(&self) -> Interner {
        Interner::seeded(self.names.clone())
    }

    /// How many names the tree has: ids `0..names_len()` are its names in every queue read
    /// against them.
    pub(crate) fn names_len(&self) -> usize {
        self.names.len()
    }

    /// The user associations as (user, account, partition or NONE, row) by these ids, sorted.
    pub(crate) fn by_user(&self) -> &[(u32, u32, u32, u32)] {
        &self.by_user
    }

    /// True when `names` started from these and they are `tree`'s (of its size, at least).
    pub(crate) fn named(&self, tree: &AssocTree, names: &Interner) -> bool {
        self.rows == tree.len() && self.seed(names)
    }

    /// True when `names` started from these.
    fn seed(&self, names: &Interner) -> bool {
        names.base().is_some_and(|b| Arc::ptr_eq(b, &self.names))
    }

    /// Each row's (user, account) ids appended to `users` and `accounts`: a known pair from one
    /// lookup, others interned into `names` (which must start from these) name by name.
    pub(crate) fn push_pairs(
        &self,
        user: &StringViewArray,
        account: &StringViewArray,
        names: &mut Interner,
        users: &mut Vec<u32>,
        accounts: &mut Vec<u32>,
    ) {
        debug_assert!(self.seed(names), "a queue interner of these names");
        let mut found = Vec::with_capacity(user.len());
        self.pairs.find_batch(user.len(), |i| (user.value(i), account.value(i), ""), &mut found);
        for (i, &k) in found.iter().enumerate() {
            // The ids of a pair a few jobs ahead: a random read of a table of 7 MB at 10^6 pairs.
            if let Some(ids) = found.get(i + PAIR_IDS_AHEAD).and_then(|&k| self.pair_ids.get(k as usize)) {
                prefetch(ids);
            }
            let (u, a) = match self.pair_ids.get(k as usize) {
                Some(&ids) if k != NONE => ids,
                _ => (names.intern(user.value(i)), names.intern(account.value(i))),
            };
            users.push(u);
            accounts.push(a);
        }
    }
}

/// (user, account, partition or [`NONE`], row) of every user association of `tree` whose names
/// `names` knows (a job can only name known ones), sorted.
pub(crate) fn user_associations(tree: &AssocTree, names: &Interner) -> Vec<(u32, u32, u32, u32)> {
    let mut by_user: Vec<(u32, u32, u32, u32)> = Vec::new();
    for r in 0..tree.len() {
        let Some(user) = tree.user_name(r).and_then(|u| names.get(u)) else { continue };
        let Some(account) = names.get(tree.account(r)) else { continue };
        let part = match tree.partition(r) {
            None => NONE,
            Some(p) => match names.get(p) {
                Some(id) => id,
                None => continue,
            },
        };
        by_user.push((user, account, part, r as u32));
    }
    by_user.sort_unstable();
    by_user
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_give_the_ids_their_names_have() {
        let tree = crate::io::default_tree().unwrap();
        let names = TreeNames::new(&tree);
        let mut queue = names.interner();
        let (users, accounts): (Vec<&str>, Vec<&str>) = (0..tree.len())
            .filter_map(|r| tree.user_name(r).map(|u| (u, tree.account(r))))
            .chain([("dana", "no-such-account"), ("nobody", "no-such-account")])
            .unzip();
        let (mut u, mut a) = (Vec::new(), Vec::new());
        names.push_pairs(
            &StringViewArray::from(users.clone()),
            &StringViewArray::from(accounts.clone()),
            &mut queue,
            &mut u,
            &mut a,
        );
        // Every id names what the row named, known pairs or not.
        let names_of = |ids: &[u32]| ids.iter().map(|&i| queue.name(i).to_string()).collect::<Vec<_>>();
        assert_eq!(names_of(&u), users);
        assert_eq!(names_of(&a), accounts);
        // A known user in an unknown pair keeps its id; an unknown one gets the next.
        assert_eq!(queue.get("dana"), Some(u[u.len() - 2]));
        assert_eq!(queue.get("dana"), names.interner().get("dana"));
        assert_eq!(queue.get("nobody"), Some(u[u.len() - 1]));
        assert_eq!(names.interner().get("nobody"), None);
        assert_eq!(names.by_user(), user_associations(&tree, &names.interner()));
    }
}
