//! Hash maps and sets with one fast hasher (foldhash) under a fixed seed: the same table layout in
//! every process and on every thread count, so nothing that iterates one can differ between runs.
//! foldhash also spreads short, similar names (`u000123`) that multiply-only hashes collide on.

/// The hasher's builder: foldhash's fast hash, fixed seed.
pub type FixedState = foldhash::fast::FixedState;

/// A [`std::collections::HashMap`] under [`FixedState`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, FixedState>;

/// A [`std::collections::HashSet`] under [`FixedState`].
pub type FastSet<T> = std::collections::HashSet<T, FixedState>;
