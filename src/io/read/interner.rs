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

use foldhash::fast::FixedState;
use hashbrown::HashTable;

/// Names mapped to dense ids, so per-job columns hold integers.
///
/// The names are stored end to end in one string and the table holds only their ids (found by
/// the hash of the text): a tree's 10^6 names are two allocations, not two per name.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use fairshare::io::read::interner::Interner;
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
    /// An empty interner with room for `names` names without growing its table.
    pub fn with_capacity(names: usize) -> Self {
        Interner { ids: HashTable::with_capacity(names), ends: Vec::with_capacity(names), ..Interner::default() }
    }

    /// An interner that gives the names of `base` their ids there, and new names the ids after.
    pub fn seeded(base: Arc<Interner>) -> Self {
        Interner { base: Some(base), ..Interner::default() }
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
    pub fn get(&self, name: &str) -> Option<u32> {
        self.base.as_ref().and_then(|b| b.get(name)).or_else(|| self.find_local(name_hash(name), name))
    }

    /// The id of `name` (hashing to `hash`) among the names added here.
    fn find_local(&self, hash: u64, name: &str) -> Option<u32> {
        let base = self.base_len();
        self.ids.find(hash, |&id| self.local(id - base) == name).copied()
    }

    /// The name of `id`.
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
    pub fn len(&self) -> usize {
        self.base_len() as usize + self.ends.len()
    }

    /// True when no name is known.
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
}
