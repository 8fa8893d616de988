//! Names interned to dense ids, so the per-job columns of a large queue hold integers and each
//! name is stored once.
//!
//! An interner may start from a shared, read-only base ([`Interner::seeded`]): names known before
//! the file is read (a tree's users, accounts and partitions) keep the base's ids in every reader
//! thread, and only names the base lacks are added. At 9·10^5 users, reading a 10^7-job queue
//! without one interned every row group's names on its own and then again into the queue's,
//! one thread at a time.

use std::hash::BuildHasher;
use std::sync::Arc;

use crate::hash::FixedState;
use hashbrown::HashTable;

/// Names mapped to dense ids, so per-job columns hold integers.
///
/// The names are stored end to end in one string and the table holds only their ids (found by
/// the hash of the text): a tree's 10^6 names are two allocations, not two per name.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use fairshare_base::read::interner::Interner;
/// let mut tree = Interner::default();
/// tree.intern("alice");
/// let mut queue = Interner::seeded(Arc::new(tree));
/// assert_eq!((queue.intern("alice"), queue.intern("bob")), (0, 1));
/// assert_eq!((queue.name(1), queue.len()), ("bob", 2));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Interner {
    /// Names known before: ids `0..base.len()`.
    base: Option<Arc<Interner>>,
    /// The ids of the names added here (from `base.len()` on), by the hash of their text.
    ids: HashTable<u32>,
    /// The names added here, end to end: the `i`-th ends at `ends[i]`.
    text: String,
    ends: Vec<usize>,
}

impl Interner {
    /// An interner that gives the names of `base` their ids there, and new names the ids after.
    pub fn seeded(base: Arc<Interner>) -> Self {
        Interner { base: Some(base), ..Interner::default() }
    }

    /// `name(i)` for every `i < n` interned in that order (`None`: no name there): the interner
    /// and each name's id (`u32::MAX` where there is none), the ids [`Interner::intern`] gives one
    /// by one.
    ///
    /// A tree's 2·10^6 user and account names interned one by one took 0.4 s on one core, most
    /// lookups missing the caches and the TLB. Here the names are hashed across the threads and
    /// their (hash, position) pairs split by hash into shards of some 16 Ki names; each shard
    /// finds every name's first occurrence by its hash alone, in a table that stays in the
    /// cache, the shards across the threads. Every repeat is then checked against its first
    /// occurrence (both nearby in the sequence for a tree's accounts), and should two names
    /// share a 64-bit hash, the sequence is interned one name at a time instead. Numbering the
    /// first occurrences in order and filling the table are the sequential part. The shards
    /// decide nothing about the ids, so the ids do not depend on their number.
    ///
    /// # Panics
    /// If `n` is 2^32 or more (ids and positions are 32-bit).
    ///
    /// # Example
    /// ```
    /// use fairshare_base::read::interner::Interner;
    /// let names = [Some("ann"), Some("phys"), None, Some("bob"), Some("phys")];
    /// let (interner, ids) = Interner::of_sequence(names.len(), |i| names[i]);
    /// assert_eq!(ids, [0, 1, u32::MAX, 2, 1]);
    /// assert_eq!((interner.get("bob"), interner.name(1)), (Some(2), "phys"));
    /// ```
    pub fn of_sequence<'n>(n: usize, name: impl Fn(usize) -> Option<&'n str> + Sync + Send) -> (Interner, Vec<u32>) {
        of_sequence_by(n, name, name_hash)
    }

    /// Ids of the base: `0..base_len()`.
    fn base_len(&self) -> u32 {
        self.base.as_ref().map_or(0, |b| b.len() as u32)
    }

    /// True when `self` and `other` start from the same base (or neither has one), so the base's
    /// ids mean the same names in both.
    fn same_base(&self, other: &Interner) -> bool {
        match (&self.base, &other.base) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// The base this interner started from.
    pub fn base(&self) -> Option<&Arc<Interner>> {
        self.base.as_ref()
    }

    /// The id of `name`, adding it when new.
    #[inline]
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.base.as_ref().and_then(|b| b.get(name)) {
            return id;
        }
        let hash = name_hash(name);
        if let Some(id) = self.find_local(hash, name) {
            return id;
        }
        let base = self.base_len();
        let Interner { ids, text, ends, .. } = self;
        let id = base + ends.len() as u32;
        ids.insert_unique(hash, id, |&id| name_hash(local_name(text, ends, id - base)));
        text.push_str(name);
        ends.push(text.len());
        id
    }

    /// The id of `name`, if known.
    #[inline]
    pub fn get(&self, name: &str) -> Option<u32> {
        self.base.as_ref().and_then(|b| b.get(name)).or_else(|| self.find_local(name_hash(name), name))
    }

    /// The id of `name` (hashing to `hash`) among the names added here.
    fn find_local(&self, hash: u64, name: &str) -> Option<u32> {
        let base = self.base_len();
        self.ids.find(hash, |&id| self.local(id - base) == name).copied()
    }

    /// The name of `id`.
    #[inline]
    pub fn name(&self, id: u32) -> &str {
        let base = self.base_len();
        match &self.base {
            Some(b) if id < base => b.name(id),
            _ => self.local(id - base),
        }
    }

    /// The `i`-th name added here.
    fn local(&self, i: u32) -> &str {
        local_name(&self.text, &self.ends, i)
    }

    /// Number of names, the base's included.
    #[inline]
    pub fn len(&self) -> usize {
        self.base_len() as usize + self.ends.len()
    }

    /// True when no name is known.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids in `self` of `other`'s names (by `other`'s id): the base's ids are kept when both
    /// share it, the other names are interned.
    pub fn absorb(&mut self, other: &Interner) -> Vec<u32> {
        let shared = if self.same_base(other) { other.base_len() } else { 0 };
        (0..other.len() as u32).map(|i| if i < shared { i } else { self.intern(other.name(i)) }).collect()
    }
}

/// The hash of [`of_sequence_by`] for no name.
const ABSENT: u64 = u64::MAX;

/// [`Interner::of_sequence`], its shards and first occurrences found by `hash` (tests give one
/// that collides).
fn of_sequence_by<'n>(
    n: usize,
    name: impl Fn(usize) -> Option<&'n str> + Sync + Send,
    hash: impl Fn(&str) -> u64 + Sync + Send,
) -> (Interner, Vec<u32>) {
    assert!(u32::try_from(n).is_ok_and(|n| n < u32::MAX), "{n} names: ids are 32-bit");
    let hashes = crate::parallel::column(n, |i| name(i).map_or(ABSENT, |s| hash(s).min(ABSENT - 1)));
    let shard_bits = (n / crate::parallel::CHUNK).max(1).ilog2().min(8);
    let shard = |h: u64| if shard_bits == 0 { 0 } else { (h >> (64 - shard_bits)) as usize };
    // The named occurrences' (hash, position) by shard, in order within each: a counting sort.
    let mut starts = vec![0usize; (1 << shard_bits) + 1];
    for &h in hashes.iter().filter(|&&h| h != ABSENT) {
        starts[shard(h) + 1] += 1;
    }
    for s in 1..starts.len() {
        starts[s] += starts[s - 1];
    }
    let mut order = vec![(0u64, 0u32); starts[starts.len() - 1]];
    let mut at = starts.clone();
    for (i, &h) in hashes.iter().enumerate().filter(|(_, h)| **h != ABSENT) {
        order[at[shard(h)]] = (h, i as u32);
        at[shard(h)] += 1;
    }
    drop(hashes);
    // Each occurrence's first occurrence with its hash (`first[k]` of `order[k]`), a shard per task.
    let mut first = vec![0u32; order.len()];
    let mut tasks = Vec::new();
    let (mut occurrences, mut out) = (order.as_slice(), first.as_mut_slice());
    for w in starts.windows(2) {
        let (o, rest_o) = occurrences.split_at(w[1] - w[0]);
        let (f, rest_f) = std::mem::take(&mut out).split_at_mut(w[1] - w[0]);
        tasks.push((o, f));
        (occurrences, out) = (rest_o, rest_f);
    }
    crate::parallel::for_each_task(&mut tasks, |(occurrences, first)| {
        let mut seen: HashTable<(u64, u32)> = HashTable::with_capacity(occurrences.len());
        for (&(h, i), f) in occurrences.iter().zip(first.iter_mut()) {
            *f = seen.entry(h, |&(g, _)| g == h, |&(g, _)| g).or_insert((h, i)).get().1;
        }
    });
    let mut ids = vec![u32::MAX; n];
    for (&(_, i), &f) in order.iter().zip(&first) {
        ids[i as usize] = f;
    }
    drop((order, first));
    // A repeat whose name is not its first occurrence's: two names share a hash.
    let chunk = crate::parallel::CHUNK;
    let mut tasks: Vec<_> = (0..n).step_by(chunk).map(|start| start..(start + chunk).min(n)).collect();
    let collides = crate::parallel::map_tasks(&mut tasks, |rows| {
        rows.clone().any(|i| (ids[i] as usize) < i && name(i) != name(ids[i] as usize))
    });
    if collides.into_iter().any(|c| c) {
        let mut interner = Interner::default();
        let ids = (0..n).map(|i| name(i).map_or(u32::MAX, |s| interner.intern(s))).collect();
        return (interner, ids);
    }
    // Each occurrence's id: its first occurrence's, numbered in order.
    let mut interner = Interner::default();
    let mut distinct_hashes = Vec::new();
    for i in 0..n {
        let f = ids[i] as usize;
        if f == i {
            let text = name(i).expect("a first occurrence is named");
            ids[i] = interner.ends.len() as u32;
            interner.text.push_str(text);
            interner.ends.push(interner.text.len());
            distinct_hashes.push(name_hash(text));
        } else if f < i {
            ids[i] = ids[f];
        }
    }
    interner.ids = HashTable::with_capacity(distinct_hashes.len());
    for (id, &h) in distinct_hashes.iter().enumerate() {
        interner.ids.insert_unique(h, id as u32, |&id| distinct_hashes[id as usize]);
    }
    (interner, ids)
}

/// The one hashing of a name, fixed-seeded: the same table on every run.
fn name_hash(name: &str) -> u64 {
    FixedState::default().hash_one(name)
}

/// The `i`-th of the names stored end to end in `text`, ending at `ends`.
fn local_name<'t>(text: &'t str, ends: &[usize], i: u32) -> &'t str {
    let i = i as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &text[start..ends[i]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_interner_keeps_the_base_ids_and_adds_after_them() {
        let mut base = Interner::default();
        for n in ["root", "physics", "alice"] {
            base.intern(n);
        }
        let base = Arc::new(base);
        let mut a = Interner::seeded(base.clone());
        let mut b = Interner::seeded(base.clone());
        assert_eq!([a.intern("alice"), a.intern("zed"), a.intern("physics"), a.intern("zed")], [2, 3, 1, 3]);
        assert_eq!([b.intern("yan"), b.intern("zed"), b.intern("root")], [3, 4, 0]);
        assert_eq!((a.len(), a.name(3), b.name(4), a.get("yan")), (4, "zed", "zed", None));
        assert!(a.same_base(&b) && !a.same_base(&Interner::default()));
        // b's names in a: the base's by id, the others interned.
        assert_eq!(a.absorb(&b), [0, 1, 2, 4, 3]);
        assert_eq!((a.name(4), a.len()), ("yan", 5));
        // Without a shared base every name is interned.
        let mut plain = Interner::default();
        assert_eq!(plain.absorb(&b), [0, 1, 2, 3, 4]);
        assert_eq!(plain.name(3), "yan");
    }

    /// Interning a sequence across shards gives the ids, names and lookups of interning it one
    /// name at a time, with repeats far apart, absent names, and sizes of one shard and of many.
    #[test]
    fn a_sequence_interned_by_shards_is_interned_in_order() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for (n, distinct) in [(0, 1), (10, 3), (5_000, 4_000), (200_000, 50_000), (300_000, 290_000)] {
            let names: Vec<Option<String>> = (0..n)
                .map(|_| {
                    let r = next();
                    (r % 17 != 0).then(|| format!("n{}", (r >> 8) % distinct))
                })
                .collect();
            let (sharded, ids) = Interner::of_sequence(n, |i| names[i].as_deref());
            let mut one_by_one = Interner::default();
            let expected: Vec<u32> =
                names.iter().map(|s| s.as_deref().map_or(u32::MAX, |s| one_by_one.intern(s))).collect();
            assert_eq!(ids, expected, "n = {n}");
            assert_eq!(sharded.len(), one_by_one.len());
            for id in 0..sharded.len() as u32 {
                assert_eq!(sharded.get(one_by_one.name(id)), Some(id));
                assert_eq!(sharded.name(id), one_by_one.name(id));
            }
            assert_eq!(sharded.get("absent"), None);
            // Every name of the same length sharing a hash: interned one by one instead.
            let (colliding, ids_colliding) = of_sequence_by(n, |i| names[i].as_deref(), |s| s.len() as u64);
            assert_eq!(ids_colliding, expected, "n = {n}, colliding");
            assert_eq!(colliding.len(), one_by_one.len());
        }
    }
}
