//! Fair-share sibling groups: Slurm's `children_list` after `FairShare=parent` lifting.
//!
//! An association's *fair-share parent* is its nearest proper ancestor without `parent` shares
//! (the root counts as such). A `parent` account therefore owns no group: its children compete in
//! the group of the first ancestor that has real shares, next to the `parent` account itself, in
//! lineage (depth-first pre-order) order. Without `parent` shares every group is exactly a child range.
//!
//! Groups are stored flat: the members of row `x` are `members[start[x]..start[x + 1]]`, and owners
//! appear in row order, so the groups owned by one level are contiguous.

use super::AssocTree;

/// Sibling groups in the fair-share sense, with each group's level shares.
#[derive(Clone, Debug)]
pub struct FsGroups {
    fs_parent: Vec<u32>,
    start: Vec<u32>,
    members: Vec<u32>,
    level_shares: Vec<u64>,
    users_below: Vec<u32>,
    is_user: Vec<bool>,
    parent_flags: Vec<bool>,
}

impl FsGroups {
    /// Computes the groups of `tree`.
    ///
    /// Level shares are summed in u64, so share counts up to 2^32-2 never wrap.
    pub fn new(tree: &AssocTree) -> Self {
        let n = tree.len();
        let parents = tree.parents();
        let parent_flags = tree.parent_share_flags();
        let shares = tree.raw_shares();

        // Parents sit at lower rows, so one forward sweep resolves the chain.
        let mut fs_parent = vec![0u32; n];
        for i in 1..n {
            let p = parents[i] as usize;
            fs_parent[i] = if p != 0 && parent_flags[p] { fs_parent[p] } else { p as u32 };
        }

        let is_user = tree.user_flags();
        let lifts = |c: usize| parent_flags[c] && !is_user[c];
        let mut start = Vec::with_capacity(n + 1);
        let mut members = Vec::with_capacity(n.saturating_sub(1));
        let mut level_shares = vec![0u64; n];
        let mut stack: Vec<std::ops::Range<usize>> = Vec::new();
        for x in 0..n {
            start.push(members.len() as u32);
            if x != 0 && parent_flags[x] {
                continue;
            }
            let kids = tree.children(x);
            if !kids.clone().any(lifts) {
                members.extend(kids.map(|c| c as u32));
            } else {
                stack.push(kids);
                while let Some(range) = stack.last_mut() {
                    let Some(c) = range.next() else {
                        stack.pop();
                        continue;
                    };
                    members.push(c as u32);
                    if lifts(c) {
                        stack.push(tree.children(c));
                    }
                }
            }
            let group = &members[start[x] as usize..];
            level_shares[x] = group.iter().filter(|&&m| !parent_flags[m as usize]).map(|&m| shares[m as usize]).sum();
        }
        start.push(members.len() as u32);

        // Bottom-up: every member of a group sits at a higher row than the group's owner.
        let mut users_below = vec![0u32; n];
        for x in (0..n).rev() {
            users_below[x] = if is_user[x] {
                1
            } else {
                members[start[x] as usize..start[x + 1] as usize].iter().map(|&m| users_below[m as usize]).sum()
            };
        }

        FsGroups { fs_parent, start, members, level_shares, users_below, is_user, parent_flags }
    }

    /// Fair-share parent of every row (the root's slot holds 0).
    pub fn fs_parents(&self) -> &[u32] {
        &self.fs_parent
    }

    /// Members of the group owned by `row`, in lineage order.
    pub fn group(&self, row: usize) -> &[u32] {
        &self.members[self.start[row] as usize..self.start[row + 1] as usize]
    }

    /// Group offsets: the group of row `x` is `members()[offsets()[x]..offsets()[x + 1]]`.
    pub fn offsets(&self) -> &[u32] {
        &self.start
    }

    /// All group members, groups concatenated in owner row order.
    pub fn members(&self) -> &[u32] {
        &self.members
    }

    /// Users visited below each row in a depth-first walk of the groups: 1 for a user, the sum over
    /// its group for an account (0 for a `parent` account, whose users sit in its owner's group).
    pub fn users_below(&self) -> &[u32] {
        &self.users_below
    }

    /// The tree's user flags, one byte per row, for kernels that index them per row.
    pub fn user_flags(&self) -> &[bool] {
        &self.is_user
    }

    /// The tree's `parent` share flags, one byte per row.
    pub fn parent_flags(&self) -> &[bool] {
        &self.parent_flags
    }

    /// The level shares an association competes with: those of its fair-share parent's group.
    pub fn level_shares(&self, row: usize) -> u64 {
        self.level_shares[self.fs_parent[row] as usize]
    }
}
