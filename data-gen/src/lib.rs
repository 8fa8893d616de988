//! Seeded generator of synthetic association trees for fairshare tests and benchmarks.
//!
//! [`generate_tree`] builds a site-shaped tree: a root, up to [`TreeSpec::max_depth`] levels of
//! accounts whose fan-out shrinks with depth (colleges, departments, labs, ...), and users as the
//! leaves (about 90% of the rows), spread over the accounts with a heavy tail. It covers the cases
//! the passes treat specially: `FairShare=parent`, zero shares, zero usage, fractional usage, exact
//! ties between siblings, and users with associations in two accounts.
//!
//! The output depends only on the [`TreeSpec`] (a splitmix64 stream seeded with
//! [`TreeSpec::seed`]), and the work per row is constant, so 10^7 associations take seconds.
//!
//! ```
//! use data_gen::{TreeSpec, generate_tree};
//! let input = generate_tree(&TreeSpec::new(1000, 7));
//! assert_eq!(input.records.len(), 1000);
//! let tree = fairshare_engine::tree::AssocTree::build(input)?;
//! assert!(tree.user_count() > 800);
//! # Ok::<(), fairshare_base::Error>(())
//! ```

mod batch_writer;
pub mod history;
pub mod site;

use std::io::{self, Write};
use std::path::PathBuf;

use fairshare_engine::tree::{AccountUsage, AssocRecord, Shares, SiblingOrder, TreeInput};

/// Fraction of the associations that are users when the tree has account levels.
const USER_FRACTION: f64 = 0.9;
/// Fan-out of account level `k + 1` relative to level `k`.
const FANOUT_DECAY: f64 = 0.7;
/// Fraction of non-root accounts with sub-accounts that also hold users directly.
const INNER_ACCOUNT_USERS_FRACTION: f64 = 0.2;
/// Pareto exponent of the per-account user-count weights, and the cap on a weight.
const ACCOUNT_SIZE_ALPHA: f64 = 1.2;
const ACCOUNT_SIZE_MAX_WEIGHT: f64 = 1000.0;
/// Fraction of users and non-root accounts with zero shares.
const ZERO_SHARES_FRACTION: f64 = 0.01;
/// Fraction of (numeric-share) users with exactly one share, the common site default.
const UNIT_USER_SHARES_FRACTION: f64 = 0.6;
/// Log-normal usage in billing-seconds: median, log-space sigma, cap.
const USAGE_MEDIAN: f64 = 360_000.0;
const USAGE_SIGMA: f64 = 2.5;
const USAGE_MAX: f64 = 1e12;
/// Fraction of non-zero usages left fractional (the rest are whole billing-seconds).
const FRACTIONAL_USAGE_FRACTION: f64 = 0.1;
/// Fraction of users that take the name of a user of an earlier account (at most one per account).
const SECOND_ACCOUNT_FRACTION: f64 = 0.01;

/// What to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeSpec {
    /// Total associations, root included (at least 2).
    pub associations: usize,
    /// Seed of the generator: equal specs give equal trees.
    pub seed: u64,
    /// Account levels below the root (0: every other association is a user of the root).
    pub max_depth: usize,
    /// Fraction of users and of non-root accounts with `FairShare=parent`.
    pub parent_share_fraction: f64,
    /// Fraction of users with zero usage.
    pub zero_usage_fraction: f64,
    /// Fraction of users that copy the shares and usage of the previous user in their account, so
    /// that both have the same S/U.
    pub tie_fraction: f64,
}

impl Default for TreeSpec {
    fn default() -> Self {
        TreeSpec {
            associations: 1000,
            seed: 42,
            max_depth: 4,
            parent_share_fraction: 0.05,
            zero_usage_fraction: 0.1,
            tie_fraction: 0.05,
        }
    }
}

impl TreeSpec {
    /// The default shape with `associations` rows and `seed`.
    pub fn new(associations: usize, seed: u64) -> Self {
        TreeSpec { associations, seed, ..TreeSpec::default() }
    }
}

/// Generates the tree described by `spec`, as a reader would return it: lineage sibling order,
/// account usage summed from the users, source `<data-gen>`.
///
/// Ids are `1..=associations` (the root is 1), each record's `line` is its id, accounts come
/// before users.
///
/// # Panics
/// If `spec.associations < 2`.
pub fn generate_tree(spec: &TreeSpec) -> TreeInput {
    let mut records = Vec::with_capacity(spec.associations);
    generate(spec, |r| records.push(r));
    TreeInput {
        source: PathBuf::from("<data-gen>"),
        records,
        sibling_order: SiblingOrder::Lineage,
        account_usage: AccountUsage::SumOfUsers,
        tres: None,
    }
}

/// Writes `input` as assoc-csv: the header `id,parent_id,account,user,shares,usage,priority` (plus
/// `partition` when some record has one), then one row per record in order; `parent` shares are
/// written as `parent`. Text fields holding a comma or a quote are quoted.
///
/// Rows are staged in an internal buffer, so `out` need not be buffered.
///
/// # Errors
/// Any error of `out`.
pub fn write_assoc_csv(out: &mut dyn Write, input: &TreeInput) -> io::Result<()> {
    const FLUSH_AT: usize = 64 * 1024;
    let partitions = input.records.iter().any(|r| r.partition.is_some());
    let mut buf = Vec::with_capacity(FLUSH_AT + 256);
    buf.extend_from_slice(b"id,parent_id,account,user,shares,usage,priority");
    buf.extend_from_slice(if partitions { b",partition\n" } else { b"\n" });
    for r in &input.records {
        write_csv_row(&mut buf, r, partitions)?;
        if buf.len() >= FLUSH_AT {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

fn write_csv_row(buf: &mut Vec<u8>, r: &AssocRecord, partition: bool) -> io::Result<()> {
    write!(buf, "{},", r.id)?;
    if let Some(p) = r.parent_id {
        write!(buf, "{p}")?;
    }
    buf.push(b',');
    write_csv_text(buf, &r.account);
    buf.push(b',');
    write_csv_text(buf, r.user.as_deref().unwrap_or(""));
    match r.shares {
        Shares::Value(v) => write!(buf, ",{v},{},", r.usage)?,
        Shares::Parent => write!(buf, ",parent,{},", r.usage)?,
    }
    if let Some(p) = r.priority {
        write!(buf, "{p}")?;
    }
    if partition {
        buf.push(b',');
        write_csv_text(buf, r.partition.as_deref().unwrap_or(""));
    }
    buf.push(b'\n');
    Ok(())
}

/// Appends `text` as one CSV field, quoted (with `""` for a quote) when it holds a comma or quote.
fn write_csv_text(buf: &mut Vec<u8>, text: &str) {
    if !text.contains([',', '"']) {
        buf.extend_from_slice(text.as_bytes());
        return;
    }
    buf.push(b'"');
    for b in text.bytes() {
        if b == b'"' {
            buf.push(b'"');
        }
        buf.push(b);
    }
    buf.push(b'"');
}

/// splitmix64 (Steele, Lea and Flood, 2014): tiny, fast and good enough for synthetic data.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Uniform in `0..n` (multiply-shift; the bias is far below what synthetic data cares about).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Standard normal (Box-Muller, one of the pair).
    fn normal(&mut self) -> f64 {
        let r = (-2.0 * (1.0 - self.unit()).ln()).sqrt();
        r * (std::f64::consts::TAU * self.unit()).cos()
    }

    /// `round(max^u)` for uniform `u`: log-uniform in `1..=max`.
    fn log_uniform(&mut self, max: f64) -> u64 {
        max.powf(self.unit()).round() as u64
    }
}

/// One account of the generated tree; index 0 is the root.
struct Account {
    name: String,
    parent: usize,
    shares: Shares,
    has_subaccounts: bool,
}

/// Emits the records of `spec`: accounts first, then the users account by account.
fn generate(spec: &TreeSpec, mut emit: impl FnMut(AssocRecord)) {
    assert!(spec.associations >= 2, "a tree needs at least 2 associations, not {}", spec.associations);
    let mut rng = SplitMix64(spec.seed);
    let accounts = accounts(spec, &mut rng);
    let counts = user_counts(&accounts, (spec.associations - accounts.len()) as u64, &mut rng);
    for (i, a) in accounts.iter().enumerate() {
        let id = i as u64 + 1;
        let parent_id = (i > 0).then(|| a.parent as u64 + 1);
        emit(record(id, parent_id, a.name.clone(), None, a.shares, 0.0));
    }
    let mut users = UserGen { spec, rng, next_id: accounts.len() as u64 + 1, next_name: 0 };
    for (i, (a, &count)) in accounts.iter().zip(&counts).enumerate() {
        users.account(i as u64 + 1, &a.name, count, &mut emit);
    }
}

fn record(
    id: u64,
    parent_id: Option<u64>,
    account: String,
    user: Option<String>,
    shares: Shares,
    usage: f64,
) -> AssocRecord {
    AssocRecord {
        id,
        parent_id,
        account,
        user,
        partition: None,
        shares,
        usage,
        priority: None,
        grp_tres_mins: None,
        line: id,
    }
}

/// Number of accounts, root included: about 10% of the associations, at least the root, and
/// leaving at least one user.
fn account_count(spec: &TreeSpec) -> usize {
    if spec.max_depth == 0 {
        return 1;
    }
    let wanted = (spec.associations as f64 * (1.0 - USER_FRACTION)).round() as usize;
    wanted.clamp(1, spec.associations - 1)
}

/// The account table: the root, then the account levels in order, each account named after its
/// parent (`a01`, `a01_03`, `a01_03_07`, ...), parents spread evenly over the level above.
fn accounts(spec: &TreeSpec, rng: &mut SplitMix64) -> Vec<Account> {
    let total = account_count(spec);
    let mut table = Vec::with_capacity(total);
    table.push(Account { name: "root".into(), parent: 0, shares: Shares::Value(1), has_subaccounts: false });
    let (mut above_start, mut above_len) = (0, 1);
    for size in level_sizes(total - 1, spec.max_depth) {
        let start = table.len();
        let (mut last_parent, mut child_no) = (usize::MAX, 0);
        for i in 0..size {
            let parent = above_start + i * above_len / size;
            child_no = if parent == last_parent { child_no + 1 } else { 1 };
            last_parent = parent;
            let name =
                if parent == 0 { format!("a{child_no:02}") } else { format!("{}_{child_no:02}", table[parent].name) };
            table[parent].has_subaccounts = true;
            let shares = account_shares(spec, rng);
            table.push(Account { name, parent, shares, has_subaccounts: false });
        }
        (above_start, above_len) = (start, size);
    }
    table
}

/// Accounts per level below the root (level 1 first), `accounts` in all, at most `max_depth`
/// levels. Level `k` has fan-out `b * FANOUT_DECAY^(k-1)` (at least 1), with `b` the smallest that
/// fits `accounts`; the deepest level takes what rounding leaves.
fn level_sizes(accounts: usize, max_depth: usize) -> Vec<usize> {
    let cumulative = |b: f64| -> Vec<f64> {
        let mut width = 1.0;
        (0..max_depth)
            .map(|k| {
                width *= (b * FANOUT_DECAY.powi(k as i32)).max(1.0);
                width
            })
            .collect()
    };
    let (mut lo, mut hi) = (1.0, accounts.max(1) as f64);
    for _ in 0..64 {
        let mid = (lo + hi) / 2.0;
        if cumulative(mid).iter().sum::<f64>() >= accounts as f64 { hi = mid } else { lo = mid }
    }
    let mut left = accounts;
    let mut sizes = Vec::with_capacity(max_depth);
    for (k, width) in cumulative(hi).into_iter().enumerate() {
        if left == 0 {
            break;
        }
        let size = if k + 1 == max_depth { left } else { (width.round() as usize).max(1).min(left) };
        sizes.push(size);
        left -= size;
    }
    sizes
}

/// `parent`, zero, or log-uniform in 1..=1000 shares for a non-root account.
fn account_shares(spec: &TreeSpec, rng: &mut SplitMix64) -> Shares {
    special_shares(spec, rng).unwrap_or_else(|| Shares::Value(rng.log_uniform(1000.0)))
}

/// `parent`, zero, mostly 1, else log-uniform in 1..=100 shares for a user.
fn user_shares(spec: &TreeSpec, rng: &mut SplitMix64) -> Shares {
    special_shares(spec, rng).unwrap_or_else(|| {
        Shares::Value(if rng.chance(UNIT_USER_SHARES_FRACTION) { 1 } else { rng.log_uniform(100.0) })
    })
}

/// `parent` or zero shares with their probabilities, else `None`.
fn special_shares(spec: &TreeSpec, rng: &mut SplitMix64) -> Option<Shares> {
    let u = rng.unit();
    if u < spec.parent_share_fraction {
        Some(Shares::Parent)
    } else if u < spec.parent_share_fraction + ZERO_SHARES_FRACTION {
        Some(Shares::Value(0))
    } else {
        None
    }
}

/// Users per account, `users` in all: leaf accounts (and a few inner ones; the root only when it
/// is alone) draw a capped Pareto weight and get their share of `users`, rounding down, the
/// remainder going one each to the first holders.
fn user_counts(accounts: &[Account], users: u64, rng: &mut SplitMix64) -> Vec<u64> {
    let weights: Vec<u64> = accounts
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let holds_users = if i == 0 {
                accounts.len() == 1
            } else {
                !a.has_subaccounts || rng.chance(INNER_ACCOUNT_USERS_FRACTION)
            };
            if !holds_users {
                return 0;
            }
            let w = (1.0 - rng.unit()).powf(-1.0 / ACCOUNT_SIZE_ALPHA).min(ACCOUNT_SIZE_MAX_WEIGHT);
            (w * 1000.0) as u64
        })
        .collect();
    let total: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    let mut counts: Vec<u64> = weights.iter().map(|&w| (u128::from(users) * u128::from(w) / total) as u64).collect();
    let mut left = users - counts.iter().sum::<u64>();
    for (c, _) in counts.iter_mut().zip(&weights).filter(|(_, w)| **w > 0) {
        if left == 0 {
            break;
        }
        *c += 1;
        left -= 1;
    }
    counts
}

/// The user rows, account by account.
struct UserGen<'a> {
    spec: &'a TreeSpec,
    rng: SplitMix64,
    next_id: u64,
    next_name: u64,
}

impl UserGen<'_> {
    /// Emits `count` users of the account `account_id` named `account`.
    fn account(&mut self, account_id: u64, account: &str, count: u64, emit: &mut impl FnMut(AssocRecord)) {
        let first_name = self.next_name;
        let mut borrowed_name = false;
        let mut previous: Option<(Shares, f64)> = None;
        for _ in 0..count {
            // A user of an earlier account (so never one of this account's) has a second association.
            let name = if !borrowed_name && first_name > 0 && self.rng.chance(SECOND_ACCOUNT_FRACTION) {
                borrowed_name = true;
                self.rng.below(first_name)
            } else {
                self.next_name += 1;
                self.next_name - 1
            };
            let (shares, usage) = match previous {
                Some(p) if self.rng.chance(self.spec.tie_fraction) => p,
                _ => (user_shares(self.spec, &mut self.rng), self.usage()),
            };
            previous = Some((shares, usage));
            emit(record(
                self.next_id,
                Some(account_id),
                account.to_owned(),
                Some(format!("u{name:06}")),
                shares,
                usage,
            ));
            self.next_id += 1;
        }
    }

    /// Zero, or log-normal billing-seconds, whole for most users.
    fn usage(&mut self) -> f64 {
        if self.rng.chance(self.spec.zero_usage_fraction) {
            return 0.0;
        }
        let v = (USAGE_MEDIAN.ln() + USAGE_SIGMA * self.rng.normal()).exp().min(USAGE_MAX);
        if self.rng.chance(FRACTIONAL_USAGE_FRACTION) { v } else { v.round().max(1.0) }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};
    use std::path::Path;

    use fairshare_engine::tree::AssocTree;

    use super::*;

    #[test]
    fn same_seed_same_records_other_seed_other_records() {
        let spec = TreeSpec::new(5000, 9);
        assert_eq!(generate_tree(&spec).records, generate_tree(&spec).records);
        assert_ne!(generate_tree(&spec).records, generate_tree(&TreeSpec::new(5000, 10)).records);
    }

    #[test]
    fn exact_count_and_valid_tree_for_any_size() {
        for n in [2, 3, 7, 10, 11, 15, 99, 1000, 12_345] {
            for max_depth in [0, 1, 4, 8] {
                let spec = TreeSpec { max_depth, ..TreeSpec::new(n, n as u64) };
                let input = generate_tree(&spec);
                assert_eq!(input.records.len(), n, "{spec:?}");
                let tree = AssocTree::build(input).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
                assert!(tree.levels() <= max_depth + 2, "{spec:?}");
                assert!(tree.user_count() >= 1, "{spec:?}");
            }
        }
    }

    #[test]
    fn tree_has_the_special_cases() {
        let tree = AssocTree::build(generate_tree(&TreeSpec::new(10_000, 42))).unwrap();
        let users: Vec<usize> = (0..tree.len()).filter(|&r| tree.is_user(r)).collect();
        let (shares, usage) = (tree.raw_shares(), tree.raw_usage());
        assert!(users.len() * 10 >= tree.len() * 8, "mostly users");
        assert!(tree.levels() >= 4, "several account levels");
        assert!(users.iter().any(|&r| tree.is_parent_shares(r)));
        assert!((1..tree.len()).any(|r| !tree.is_user(r) && tree.is_parent_shares(r)));
        assert!(users.iter().any(|&r| usage[r] == 0.0));
        assert!(users.iter().any(|&r| usage[r].fract() != 0.0));
        assert!(users.iter().any(|&r| shares[r] == 0 && !tree.is_parent_shares(r)));
        let mut seen = HashSet::new();
        let tie = users.iter().any(|&r| {
            shares[r] > 0 && usage[r] > 0.0 && !seen.insert((tree.parents()[r], shares[r], usage[r].to_bits()))
        });
        assert!(tie, "two sibling users with equal shares and usage");
        let mut accounts_of: HashMap<&str, usize> = HashMap::new();
        for &r in &users {
            *accounts_of.entry(tree.user_name(r).unwrap()).or_default() += 1;
        }
        assert!(accounts_of.values().any(|&n| n > 1), "a user in two accounts");
    }

    #[test]
    fn assoc_csv_reads_back_as_the_same_records() {
        let mut input = generate_tree(&TreeSpec::new(3000, 5));
        input.records[7].user = Some("o'brien, \"jr\"".into());
        input.records[9].partition = Some("gpu".into());
        input.records[11].priority = Some(7);
        let mut text = Vec::new();
        write_assoc_csv(&mut text, &input).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with("id,parent_id,account,user,shares,usage,priority,partition\n"));
        let back = fairshare_engine::io::assoc_csv::parse(Path::new("t.csv"), &text).unwrap();
        for (row, r) in input.records.iter_mut().enumerate() {
            r.line = row as u64 + 2;
        }
        assert_eq!(back.records, input.records);
    }
}
