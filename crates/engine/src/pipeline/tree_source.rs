//! Where a site's association tree comes from, and the what-if share edits made to it.

use std::path::PathBuf;

use parquet::file::metadata::KeyValue;

use super::embedded::{EMBEDDED, shown};
use crate::io::TreeFormat;
use crate::tree::{AssocTree, Shares, TreeColumns, TreeInput};
use fairshare_base::{Error, Result};

/// A tree input: a file (any format the readers take), a table in memory, or the embedded
/// default tree, with what-if share edits.
#[derive(Debug, Clone, Default)]
pub struct TreeSource {
    /// The file (`None`: the embedded default tree).
    pub path: Option<PathBuf>,
    /// A tree already in memory (a front end's table), read in place of `path`.
    pub table: Option<TreeColumns>,
    /// Its format (`None`: detected).
    pub format: Option<TreeFormat>,
    /// What-if shares: an account by name, or a user association by `USER@ACCOUNT`.
    pub set_shares: Vec<(String, Shares)>,
}

impl TreeSource {
    /// The tree of the file at `path`.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        TreeSource { path: Some(path.into()), ..TreeSource::default() }
    }

    /// The tree input as given (`None` for the embedded default), with the what-if edits.
    ///
    /// # Errors
    /// The file cannot be read, or an edit names no association.
    pub fn given_input(&self) -> Result<Option<TreeInput>> {
        let mut input = match (&self.table, &self.path) {
            (Some(table), _) => table.clone().into_input(),
            (None, Some(p)) => crate::io::read_tree_input(p, self.format)?,
            (None, None) => return Ok(None),
        };
        self.edit(&mut input)?;
        Ok(Some(input))
    }

    /// The embedded default tree, with the what-if edits.
    ///
    /// # Errors
    /// An edit names no association.
    pub fn default_input(&self) -> Result<TreeInput> {
        let mut input = crate::io::default_tree_input()?;
        self.edit(&mut input)?;
        Ok(input)
    }

    /// Applies the share edits: an account row by name, or a user row by `USER@ACCOUNT`.
    fn edit(&self, input: &mut TreeInput) -> Result<()> {
        for (name, shares) in &self.set_shares {
            let (user, account) = match name.split_once('@') {
                Some((u, a)) => (Some(u), a),
                None => (None, name.as_str()),
            };
            let mut found = false;
            for r in &mut input.records {
                if r.account == account && r.user.as_deref() == user {
                    r.shares = *shares;
                    found = true;
                }
            }
            if !found {
                return Err(Error::Usage(format!("--set-shares: no association {name:?} in the tree")));
            }
        }
        Ok(())
    }

    /// The share edits, recorded with the outputs so a what-if run differs from the real one in
    /// its parameters, not only in its numbers.
    pub fn what_if_metadata(&self) -> Vec<KeyValue> {
        if self.set_shares.is_empty() {
            return Vec::new();
        }
        let edits: Vec<String> = self
            .set_shares
            .iter()
            .map(|(name, shares)| match shares {
                Shares::Parent => format!("{name}=parent"),
                Shares::Value(n) => format!("{name}={n}"),
            })
            .collect();
        vec![KeyValue::new("fairshare.set_shares".to_string(), edits.join(","))]
    }

    /// What outputs call the tree.
    pub fn source(&self) -> String {
        match (&self.table, &self.path) {
            (Some(table), _) => shown(&table.source),
            (None, Some(p)) => shown(p),
            (None, None) => EMBEDDED.to_string(),
        }
    }

    /// The tree as given (edited), built.
    ///
    /// # Errors
    /// As [`TreeSource::given_input`] and [`AssocTree::build`].
    pub fn load(&self) -> Result<AssocTree> {
        match (&self.table, &self.path, self.set_shares.is_empty()) {
            // Columns straight into the tree, without a record per row.
            (Some(table), _, true) => AssocTree::from_columns(table.clone()),
            (None, Some(p), true) => crate::io::read_tree(p, self.format),
            (Some(_), _, false) | (None, Some(_), false) => {
                AssocTree::build(self.given_input()?.expect("a tree was given"))
            }
            (None, None, _) => AssocTree::build(self.default_input()?),
        }
    }
}
