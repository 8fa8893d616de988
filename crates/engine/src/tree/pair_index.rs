//! The (user, account[, partition]) → association lookup of charging, looked up a batch at a time
//! (a pending queue read against a tree's names finds its jobs' name ids with it too:
//! `jobs::TreeNames`).
//!
//! Hand-written because a general hash map cannot be prefetched. At a million associations the
//! table is far bigger than the caches, so every lookup misses to memory; one record at a time,
//! each waits for the last. [`PairIndex::find_batch`] hashes a block of records first and
//! prefetches each one's home entry, so the misses of a block overlap instead of adding up. The
//! entries are the table itself (one line each, the key inside), so a lookup is one miss: a slot
//! array in front of them, half the size, made it two, the second waiting on the first; the price
//! is 128 bytes of table per pair instead of about 90. The table is on transparent huge pages
//! ([`fairshare_base::memory::huge_vec`]): on 4 KiB pages a lookup at 10^6 associations also
//! missed the TLB, waiting on the page walk. The measurements behind each choice are in
//! docs/performance-log.md.

use std::hash::{BuildHasher, Hasher};

use fairshare_base::memory::{huge_vec, prefetch};

/// No association: the record matches none.
pub(crate) const NONE: u32 = u32::MAX;

/// Key bytes kept in the entry itself; a longer (user, account) lives in `long_keys`.
const INLINE: usize = 48;

/// Records per block of [`PairIndex::find_batch`]: their homes stay in L1.
const BLOCK: usize = 256;

/// `Entry::len` of a free entry.
const FREE: u32 = u32::MAX;

/// One (user, account): its key and its associations; one cache line.
#[repr(C, align(64))]
#[derive(Clone)]
struct Entry {
    user_len: u32,
    /// The key's length ([`FREE`]: no key).
    len: u32,
    /// The partition-less association, or [`NONE`].
    any: u32,
    /// The per-partition associations' index in `by_partition`, or [`NONE`] when it has none.
    parts: u32,
    /// The user's bytes then the account's when `len <= INLINE`; else the first 4 bytes index
    /// `long_keys`.
    key: [u8; INLINE],
}

/// An entry holding no key.
const FREE_ENTRY: Entry = Entry { user_len: 0, len: FREE, any: NONE, parts: NONE, key: [0; INLINE] };

/// The associations of a tree's user records, by (user, account) and partition.
pub(crate) struct PairIndex {
    /// Open addressing with linear probing, at most half full. The entries themselves are the
    /// table, so that a lookup is one miss to memory (a slot array in front of them made it two,
    /// one waiting for the other).
    entries: Box<[Entry]>,
    long_keys: Vec<Box<[u8]>>,
    /// Per entry with any, its (partition, association) pairs.
    by_partition: Vec<Vec<(Box<str>, u32)>>,
}

/// The one hashing of a (user, account), fixed-seeded: the same slots on every run.
fn pair_hash(user: &[u8], account: &[u8]) -> u64 {
    let mut h = fairshare_base::hash::FixedState::default().build_hasher();
    h.write(user);
    h.write_u8(0xff);
    h.write(account);
    h.finish()
}

const _: () = assert!(size_of::<Entry>() == 64, "an entry is one cache line");

/// Whether `a` and `b` hold the same bytes, compared a word at a time in line: names are a
/// dozen bytes, and a slice comparison of a length known only at run time costs two calls of
/// libc's `memcmp` per lookup.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    // Words that overlap at the end cover a length that is not a multiple of theirs.
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    let half = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().expect("4 bytes"));
    match n {
        0..4 => a.iter().zip(b).all(|(x, y)| x == y),
        4..8 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        _ => (0..n - 8).step_by(8).all(|i| word(a, i) == word(b, i)) && word(a, n - 8) == word(b, n - 8),
    }
}

/// How many inserts ahead [`PairIndex::new`] prefetches a slot.
const INSERT_AHEAD: usize = 16;

impl PairIndex {
    /// The index of `rows`: `(row, user, account, partition)` of every user record, in row order
    /// (a repeated association keeps its last row, as a map insert would).
    pub(crate) fn new(rows: &[(u32, &str, &str, Option<&str>)]) -> Self {
        let hashes =
            fairshare_base::parallel::column(rows.len(), |i| pair_hash(rows[i].1.as_bytes(), rows[i].2.as_bytes()));
        // Exactly twice the pairs: a power of two would waste up to half the table again.
        let capacity = (rows.len() * 2).max(16);
        let mut index = PairIndex {
            entries: huge_vec(capacity, FREE_ENTRY).into_boxed_slice(),
            long_keys: Vec::new(),
            by_partition: Vec::new(),
        };
        for (i, (&(row, user, account, partition), &hash)) in rows.iter().zip(&hashes).enumerate() {
            if let Some(&ahead) = hashes.get(i + INSERT_AHEAD) {
                prefetch(&index.entries[index.home(ahead)]);
            }
            let e = match index.probe(hash, user, account) {
                Ok(e) => e,
                Err(free) => index.put(free, user, account),
            };
            match partition {
                None => index.entries[e].any = row,
                Some(p) => {
                    if index.entries[e].parts == NONE {
                        index.entries[e].parts = index.by_partition.len() as u32;
                        index.by_partition.push(Vec::new());
                    }
                    index.by_partition[index.entries[e].parts as usize].push((p.into(), row));
                }
            }
        }
        index
    }

    /// Where the probe for a pair hashing to `hash` starts: the hash scaled to the table (its high
    /// bits pick the entry).
    fn home(&self, hash: u64) -> usize {
        ((u128::from(hash) * self.entries.len() as u128) >> 64) as usize
    }

    /// Puts (user, account) in the free entry `e`; `e`.
    fn put(&mut self, e: usize, user: &str, account: &str) -> usize {
        let (user, account) = (user.as_bytes(), account.as_bytes());
        let len = user.len() + account.len();
        let mut key = [0u8; INLINE];
        if len <= INLINE {
            key[..user.len()].copy_from_slice(user);
            key[user.len()..len].copy_from_slice(account);
        } else {
            key[..4].copy_from_slice(&(self.long_keys.len() as u32).to_le_bytes());
            self.long_keys.push([user, account].concat().into());
        }
        self.entries[e] = Entry { user_len: user.len() as u32, len: len as u32, any: NONE, parts: NONE, key };
        e
    }

    /// The (user, account) bytes of `e`.
    fn key<'s>(&'s self, e: &'s Entry) -> &'s [u8] {
        let len = e.len as usize;
        if len <= INLINE {
            &e.key[..len]
        } else {
            let at = u32::from_le_bytes(e.key[..4].try_into().expect("4 bytes"));
            &self.long_keys[at as usize]
        }
    }

    fn is(&self, e: &Entry, user: &str, account: &str) -> bool {
        e.user_len as usize == user.len() && e.len as usize == user.len() + account.len() && {
            let (u, a) = self.key(e).split_at(user.len());
            same_bytes(u, user.as_bytes()) && same_bytes(a, account.as_bytes())
        }
    }

    /// The association for `partition` in entry `e`, falling back on the partition-less one, as
    /// slurmctld resolves a job; [`NONE`] when neither exists.
    fn in_partition(&self, e: &Entry, partition: &str) -> u32 {
        let parts = self.by_partition.get(e.parts as usize).map_or(&[][..], Vec::as_slice);
        parts.iter().find(|(p, _)| &**p == partition).map_or(e.any, |&(_, row)| row)
    }

    /// The entry of (user, account), whose hash is `hash`, or the free entry where it would go:
    /// probing from its home. (A key of [`FREE`] bytes cannot be: names are far shorter.)
    fn probe(&self, hash: u64, user: &str, account: &str) -> Result<usize, usize> {
        self.probe_from(self.home(hash), user, account)
    }

    /// [`PairIndex::probe`] from entry `e` on.
    fn probe_from(&self, mut e: usize, user: &str, account: &str) -> Result<usize, usize> {
        loop {
            let entry = &self.entries[e];
            if entry.len == FREE {
                return Err(e);
            }
            if self.is(entry, user, account) {
                return Ok(e);
            }
            e = self.next(e);
        }
    }

    /// The entry after `e`, wrapping.
    fn next(&self, e: usize) -> usize {
        if e + 1 == self.entries.len() { 0 } else { e + 1 }
    }

    /// The association of the record (user, account, partition) in entry `e` or past it, or
    /// [`NONE`].
    fn find_from(&self, e: usize, user: &str, account: &str, partition: &str) -> u32 {
        self.probe_from(e, user, account).map_or(NONE, |e| self.in_partition(&self.entries[e], partition))
    }

    /// The association of one record, or [`NONE`].
    pub(crate) fn find(&self, user: &str, account: &str, partition: &str) -> u32 {
        self.find_from(self.home(pair_hash(user.as_bytes(), account.as_bytes())), user, account, partition)
    }

    /// The association of each of `n` records, `key(i)` giving record `i`'s (user, account,
    /// partition), or [`NONE`]: appended to `out`, the same as [`PairIndex::find`] of each.
    ///
    /// A block of records is hashed and each one's home prefetched; the homes are then read, and
    /// a record whose home holds another pair (many do: the table is up to half full) has its
    /// next entry prefetched and is probed on after the others. Probed on at once, that
    /// entry was a miss nobody overlapped: `perf` put half the lookup's samples on it.
    pub(crate) fn find_batch<'k>(
        &self,
        n: usize,
        key: impl Fn(usize) -> (&'k str, &'k str, &'k str),
        out: &mut Vec<u32>,
    ) {
        let mut homes = [0usize; BLOCK];
        let mut further: Vec<(usize, usize)> = Vec::with_capacity(BLOCK);
        for start in (0..n).step_by(BLOCK) {
            let block = BLOCK.min(n - start);
            for (j, home) in homes[..block].iter_mut().enumerate() {
                let (user, account, _) = key(start + j);
                *home = self.home(pair_hash(user.as_bytes(), account.as_bytes()));
                prefetch(&self.entries[*home]);
            }
            let first = out.len();
            for (j, &home) in homes[..block].iter().enumerate() {
                let (user, account, partition) = key(start + j);
                let entry = &self.entries[home];
                out.push(if entry.len == FREE {
                    NONE
                } else if self.is(entry, user, account) {
                    self.in_partition(entry, partition)
                } else {
                    let next = self.next(home);
                    prefetch(&self.entries[next]);
                    further.push((j, next));
                    NONE
                });
            }
            for (j, e) in further.drain(..) {
                let (user, account, partition) = key(start + j);
                out[first + j] = self.find_from(e, user, account, partition);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_is_slice_equality() {
        let text = b"abcdefghijklmnopqrstuvwxyz0123456789";
        for n in 0..=text.len() {
            let a = &text[..n];
            assert!(same_bytes(a, a), "{n}");
            for i in 0..n {
                let mut b = a.to_vec();
                b[i] ^= 1;
                assert!(!same_bytes(a, &b), "{n}: byte {i}");
            }
            assert!(!same_bytes(a, &text[..n.saturating_sub(1)]) || n == 0);
        }
    }

    /// The index answers as a map of (user, account) → (any, per partition) does, one record at a
    /// time and a batch at a time, for present pairs, absent ones, long keys and crowded tables.
    #[test]
    fn finds_what_a_map_finds() {
        let long = "x".repeat(100);
        let mut rows: Vec<(u32, String, String, Option<String>)> = Vec::new();
        for i in 0..3000u32 {
            let user = if i % 97 == 0 { format!("{long}{i}") } else { format!("u{}", i / 3) };
            let account = format!("a{}", i % 3);
            let partition = (i % 5 == 0).then(|| format!("p{}", i % 2));
            rows.push((i, user, account, partition));
        }
        let refs: Vec<_> = rows.iter().map(|(r, u, a, p)| (*r, u.as_str(), a.as_str(), p.as_deref())).collect();
        let index = PairIndex::new(&refs);
        let mut map: std::collections::HashMap<(&str, &str), (u32, Vec<(&str, u32)>)> = Default::default();
        for (r, u, a, p) in &rows {
            let e = map.entry((u, a)).or_insert((NONE, Vec::new()));
            match p {
                Some(p) => e.1.push((p, *r)),
                None => e.0 = *r,
            }
        }
        let expected = |u: &str, a: &str, p: &str| {
            map.get(&(u, a)).map_or(NONE, |(any, parts)| parts.iter().find(|(q, _)| *q == p).map_or(*any, |x| x.1))
        };
        let mut queries: Vec<(String, String, String)> = Vec::new();
        for (_, u, a, _) in &rows {
            for p in ["p0", "p1", "p2"] {
                queries.push((u.clone(), a.clone(), p.into()));
            }
            queries.push((format!("{u}z"), a.clone(), "p0".into()));
            queries.push((u.clone(), "a9".into(), "p0".into()));
        }
        let mut got = Vec::new();
        index.find_batch(queries.len(), |i| (&queries[i].0, &queries[i].1, &queries[i].2), &mut got);
        let mut unmatched = 0;
        for (q, &g) in queries.iter().zip(&got) {
            let want = expected(&q.0, &q.1, &q.2);
            assert_eq!(g, want, "{q:?}");
            assert_eq!(index.find(&q.0, &q.1, &q.2), want, "{q:?}");
            unmatched += usize::from(want == NONE);
        }
        assert!(unmatched > 0 && unmatched < queries.len());
    }
}
