//! Names interned to dense ids, so the per-job columns of a large queue hold integers and each
//! name is stored once.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

/// Names mapped to dense ids, so per-job columns hold integers.
#[derive(Clone, Debug, Default)]
pub struct Interner {
    ids: HashMap<Box<str>, u32, FxBuildHasher>,
    names: Vec<Box<str>>,
}

impl Interner {
    /// The id of `name`, adding it when new.
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        id
    }

    /// The id of `name`, if known.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The name of `id`.
    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when no name was interned.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}
