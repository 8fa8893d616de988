//! Naive reference implementations of the three fair-share algorithms, written from the
//! specification text alone (Slurm classic and Fair Tree, flux-accounting's weighted tree).
//!
//! They are oracles for `properties`: plain recursive walks over a Vec-of-children copy of the
//! tree, one association at a time, in the order and with the arithmetic the specification gives,
//! and with no attention to speed. Only the public [`AssocTree`] accessors are read: structure,
//! user and `parent` flags, raw shares and raw usage.

use std::cmp::Ordering;

use fairshare_engine::tree::AssocTree;
use rustc_apfloat::ieee::{Double, X87DoubleExtended as X87};
use rustc_apfloat::{Float, FloatConvert};

/// Slurm's `NO_VAL` (0xfffffffe).
const NO_VAL: u32 = 4_294_967_294;

/// One association: its direct links and raw attributes.
struct Assoc {
    parent: Option<usize>,
    children: Vec<usize>,
    user: bool,
    parent_shares: bool,
    shares: u64,
    /// Raw usage as the tree holds it (for accounts, the tree's sum of its users).
    usage: f64,
}

/// Copies the tree into plain associations, row-aligned with it.
fn copy_tree(tree: &AssocTree) -> Vec<Assoc> {
    let parents = tree.parents();
    (0..tree.len())
        .map(|r| Assoc {
            parent: (r > 0).then(|| parents[r] as usize),
            children: tree.children(r).collect(),
            user: tree.is_user(r),
            parent_shares: tree.is_parent_shares(r),
            shares: tree.raw_shares()[r],
            usage: tree.raw_usage()[r],
        })
        .collect()
}

fn preorder(a: &[Assoc], x: usize, out: &mut Vec<usize>) {
    out.push(x);
    for &c in &a[x].children {
        preorder(a, c, out);
    }
}

/// Slurm's association links (slurm.md §2): fair-share parent, `children_list`, `level_shares`.
struct SlurmTree {
    a: Vec<Assoc>,
    /// `assoc_mgr_assoc_list` order: sorted by lineage, which is the pre-order of a tree whose
    /// siblings are in lineage order (users first, then accounts, by name).
    order: Vec<usize>,
    fs_parent: Vec<Option<usize>>,
    children_list: Vec<Vec<usize>>,
    /// `None` where Slurm leaves `NO_VAL` (the root).
    level_shares: Vec<Option<u64>>,
}

impl SlurmTree {
    fn new(tree: &AssocTree) -> Self {
        let a = copy_tree(tree);
        let n = a.len();
        let mut order = Vec::with_capacity(n);
        preorder(&a, 0, &mut order);

        // `_find_assoc_parent`: the first ancestor that is not PARENT (the root never is).
        let first_non_parent = |mut x: usize| {
            while a[x].parent_shares {
                x = a[x].parent.expect("the root never has parent shares");
            }
            x
        };
        let mut fs_parent = vec![None; n];
        let mut children_list: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &x in &order[1..] {
            let p = a[x].parent.expect("only the root has no parent");
            let fsp = if a[x].parent_shares {
                first_non_parent(p)
            } else if a[p].parent_shares {
                first_non_parent(a[p].parent.expect("a PARENT association is never the root"))
            } else {
                p
            };
            fs_parent[x] = Some(fsp);
            children_list[fsp].push(x);
        }

        let mut level_shares = vec![None; n];
        for x in 0..n {
            if !children_list[x].is_empty() {
                let ls = child_level_shares(&a, &children_list, x);
                for &c in &children_list[x] {
                    level_shares[c] = Some(ls);
                }
            }
        }
        SlurmTree { a, order, fs_parent, children_list, level_shares }
    }

    fn level_shares(&self, x: usize) -> u64 {
        self.level_shares[x].expect("every non-root association is in a children_list")
    }

    fn users(&self) -> usize {
        self.a.iter().filter(|x| x.user).count()
    }
}

/// `_get_children_level_shares`: PARENT children contribute their own (empty) list's sum, i.e. 0.
fn child_level_shares(a: &[Assoc], children_list: &[Vec<usize>], x: usize) -> u64 {
    children_list[x]
        .iter()
        .map(|&c| if a[c].parent_shares { child_level_shares(a, children_list, c) } else { a[c].shares })
        .sum()
}

/// Widens an f64 to x87 exactly.
fn x87(v: f64) -> X87 {
    let mut loses = false;
    let r: X87 = Double::from_bits(u128::from(v.to_bits())).convert(&mut loses).value;
    assert!(!loses, "f64 -> x87 is exact");
    r
}

/// Fair Tree reference results, row-aligned with the tree.
pub struct FairTreeRef {
    /// `rank / N` for users; NaN for accounts.
    pub fs_factor: Vec<f64>,
    /// The rank each user got; 0 for accounts.
    pub rank: Vec<u32>,
}

/// Slurm's Fair Tree (slurm.md §3.2, §6; fair-tree-ties.md): `U` and `level_fs` in x87, `S` in f64.
pub fn fair_tree(tree: &AssocTree) -> FairTreeRef {
    let t = SlurmTree::new(tree);
    let n = t.a.len();
    // Account usage_raw is zeroed, then every user's usage is added up its direct parent chain,
    // in association-list order, in long double.
    let mut usage = vec![X87::ZERO; n];
    for &x in &t.order {
        if t.a[x].user {
            let u = x87(t.a[x].usage);
            usage[x] = u;
            let mut p = t.a[x].parent;
            while let Some(q) = p {
                usage[q] = (usage[q] + u).value;
                p = t.a[q].parent;
            }
        }
    }
    let users = t.users();
    let mut walk = FairTreeWalk {
        t: &t,
        usage,
        level_fs: vec![X87::ZERO; n],
        rank: users,
        rnt: users,
        users,
        out: FairTreeRef { fs_factor: vec![f64::NAN; n], rank: vec![0; n] },
    };
    walk.calc_tree_fs(t.children_list[0].clone(), false);
    walk.out
}

struct FairTreeWalk<'a> {
    t: &'a SlurmTree,
    usage: Vec<X87>,
    level_fs: Vec<X87>,
    rank: usize,
    rnt: usize,
    users: usize,
    out: FairTreeRef,
}

impl FairTreeWalk<'_> {
    /// `_calc_assoc_fs`.
    fn calc_assoc_fs(&mut self, x: usize) {
        let a = &self.t.a[x];
        let p = self.t.fs_parent[x].expect("the root is never ranked");
        let u = if self.usage[p].is_zero() { X87::ZERO } else { (self.usage[x] / self.usage[p]).value };
        self.level_fs[x] = if a.parent_shares {
            if a.user { X87::INFINITY } else { X87::from_u128(u128::from(NO_VAL)).value }
        } else {
            // §3.2: S is level-local and computed in double.
            let ls = self.t.level_shares(x);
            let s = if ls == 0 { 0.0 } else { a.shares as f64 / ls as f64 };
            // x87 division by zero gives +inf, as Slurm's S/0 does.
            if s == 0.0 { X87::ZERO } else { (x87(s) / u).value }
        };
    }

    /// `_cmp_level_fs`: descending level_fs; on equal values users before accounts.
    fn cmp(&self, x: usize, y: usize) -> Ordering {
        let (lx, ly) = (self.level_fs[x], self.level_fs[y]);
        if lx != ly {
            return if lx < ly { Ordering::Greater } else { Ordering::Less };
        }
        match (self.t.a[x].user, self.t.a[y].user) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => Ordering::Equal,
        }
    }

    /// `_calc_tree_fs`.
    fn calc_tree_fs(&mut self, mut siblings: Vec<usize>, account_tied: bool) {
        for &x in &siblings {
            self.calc_assoc_fs(x);
        }
        // glibc qsort is a stable merge sort, and so is `sort_by`.
        siblings.sort_by(|&x, &y| self.cmp(x, y));
        let mut prev = X87::from_u128(u128::from(NO_VAL)).value;
        for (i, &x) in siblings.iter().enumerate() {
            let tied = if i == 0 && account_tied { true } else { prev == self.level_fs[x] };
            if self.t.a[x].user {
                if !tied {
                    self.rank = self.rnt;
                }
                self.out.fs_factor[x] = self.rank as f64 / self.users as f64;
                self.out.rank[x] = self.rank as u32;
                self.rnt -= 1;
            } else {
                // `_count_tied_accounts` stops at the first account, so tied accounts are never
                // merged (§6 note 4): each account is walked alone, passing on whether it tied.
                self.calc_tree_fs(self.t.children_list[x].clone(), tied);
            }
            prev = self.level_fs[x];
        }
    }
}

/// Classic reference results, row-aligned with the tree.
pub struct ClassicRef {
    /// §3.1 normalized shares (root 1.0).
    pub norm_shares: Vec<f64>,
    /// §5.1 / §5.3 effective usage (root 1.0).
    pub effective_usage: Vec<f64>,
    /// §5.2 factor for users; NaN for accounts.
    pub fs_factor: Vec<f64>,
}

/// Slurm's classic algorithm (slurm.md §3.1, §5), steady-state DEPTH_OBLIVIOUS. Computed in f64
/// where Slurm uses long double: the comparison with the implementation allows 1e-12 relative.
pub fn classic(tree: &AssocTree, dampening: u16, depth_oblivious: bool) -> ClassicRef {
    let t = SlurmTree::new(tree);
    let a = &t.a;
    let n = a.len();
    let mut usage = vec![0.0f64; n];
    for &x in &t.order {
        if a[x].user {
            usage[x] = a[x].usage;
            let mut p = a[x].parent;
            while let Some(q) = p {
                usage[q] += a[x].usage;
                p = a[q].parent;
            }
        }
    }
    let usage_norm: Vec<f64> =
        usage.iter().map(|&u| if usage[0] == 0.0 { 0.0 } else { (u / usage[0]).min(1.0) }).collect();

    // §3.1; pre-order, so a PARENT association's fs parent (an ancestor) is already set.
    let mut sn = vec![1.0f64; n];
    for &x in &t.order[1..] {
        sn[x] = if a[x].parent_shares {
            sn[t.fs_parent[x].expect("non-root")]
        } else {
            let mut s = 1.0f64;
            let mut y = x;
            while let Some(p) = a[y].parent {
                if !a[y].parent_shares {
                    let ls = t.level_shares(y);
                    if ls == 0 {
                        s = 0.0;
                    } else {
                        s *= a[y].shares as f64 / ls as f64;
                    }
                }
                y = p;
            }
            s
        };
    }

    let mut ue = vec![0.0f64; n];
    ue[0] = 1.0;
    let c = Classic { t: &t, usage_norm: &usage_norm, sn: &sn, depth_oblivious };
    c.set_children_usage_efctv(0, &mut ue);

    let fs_factor = (0..n)
        .map(|x| {
            if !a[x].user {
                return f64::NAN;
            }
            let f = if a[x].parent_shares { t.fs_parent[x].expect("non-root") } else { x };
            if sn[f] <= 0.0 { 0.0 } else { 2.0f64.powf(-((ue[f] / sn[f]) / f64::from(dampening))) }
        })
        .collect();
    ClassicRef { norm_shares: sn, effective_usage: ue, fs_factor }
}

struct Classic<'a> {
    t: &'a SlurmTree,
    usage_norm: &'a [f64],
    sn: &'a [f64],
    depth_oblivious: bool,
}

impl Classic<'_> {
    /// `_set_children_usage_efctv`, top-down over the fair-share tree (users included: Slurm
    /// computes them lazily with the same function).
    fn set_children_usage_efctv(&self, x: usize, ue: &mut [f64]) {
        for &c in &self.t.children_list[x] {
            ue[c] = self.usage_efctv(c, ue);
            self.set_children_usage_efctv(c, ue);
        }
    }

    /// `_set_usage_efctv` (§5.1) and `_depth_oblivious_set_usage_efctv` (§5.3).
    fn usage_efctv(&self, x: usize, ue: &[f64]) -> f64 {
        let a = &self.t.a[x];
        let p = self.t.fs_parent[x].expect("non-root");
        let ua = self.usage_norm[x];
        if p == 0 {
            ua
        } else if a.parent_shares {
            ue[p]
        } else if self.depth_oblivious {
            let (sa, sp) = (self.sn[x], self.sn[p]);
            if sa != 0.0 && sp != 0.0 && ue[p] != 0.0 && ua != 0.0 {
                let f = 5.0f64;
                let ratio_p = ue[p] / sp;
                let siblings: f64 = self.t.children_list[p]
                    .iter()
                    .filter(|&&c| !self.t.a[c].parent_shares)
                    .map(|&c| self.usage_norm[c])
                    .sum();
                let ratio_s = siblings / sp;
                let ratio_l = (ua / sa) / ratio_s;
                let k = if ratio_p == 0.0 || ratio_l == 0.0 || ratio_p.ln() * ratio_l.ln() >= 0.0 {
                    1.0
                } else {
                    1.0 / (1.0 + (f * ratio_p.ln()).powi(2))
                };
                ratio_p * ratio_l.powf(k) * sa
            } else {
                ua
            }
        } else {
            let ls = self.t.level_shares(x);
            if ls == 0 { ue[p] } else { ua + (ue[p] - ua) * (a.shares as f64 / ls as f64) }
        }
    }
}

/// flux's weight for a zero-usage sibling: `(double)UINT64_MAX + 1.0`.
const MAXW: f64 = u64::MAX as f64 + 1.0;

/// `weighted_tree_node_t::is_equal`.
fn is_equal(a: f64, b: f64) -> bool {
    (a - b).abs() < f64::EPSILON * a.abs().max(b.abs()).max(1.0)
}

/// One node of the weighted tree, real (row-aligned) or virtual (appended during the walk).
struct FluxNode {
    user: bool,
    shares: u64,
    usage: f64,
    weight: f64,
    tie_with_next: bool,
    children: Vec<usize>,
}

/// flux-accounting's weighted tree (flux.md §3.2) over the tree's sibling order and usage;
/// `exact_sums` replaces the truncated sibling usage sum by a plain f64 sum in the same order.
/// Returns `fshare` per row (NaN for banks).
pub fn flux(tree: &AssocTree, exact_sums: bool) -> Vec<f64> {
    let a = copy_tree(tree);
    let rows = a.len();
    let users = a.iter().filter(|x| x.user).count();
    let nodes = a
        .into_iter()
        .map(|x| FluxNode {
            user: x.user,
            shares: x.shares,
            usage: x.usage,
            weight: 0.0,
            tie_with_next: false,
            children: x.children,
        })
        .collect();
    let mut walk =
        FluxWalk { nodes, exact_sums, n: users as u64, rank: users as u64, stride: 0, fshare: vec![f64::NAN; rows] };
    walk.calc_and_sort(0);
    walk.visit(0);
    walk.fshare
}

struct FluxWalk {
    nodes: Vec<FluxNode>,
    exact_sums: bool,
    n: u64,
    rank: u64,
    stride: u64,
    fshare: Vec<f64>,
}

impl FluxWalk {
    /// `calc_set_weight`: exactly these operations in this order.
    fn weight(&self, c: usize, s: u64, u: f64) -> f64 {
        let c = &self.nodes[c];
        if c.shares == 0 {
            0.0
        } else if c.usage.abs() < 1e-9 {
            MAXW
        } else {
            (c.shares as f64 / s as f64) / (c.usage / u)
        }
    }

    /// `cmp_before`.
    fn before(&self, x: usize, y: usize) -> bool {
        let (a, b) = (&self.nodes[x], &self.nodes[y]);
        if is_equal(a.weight, b.weight) {
            if a.user && !b.user {
                return true;
            }
            if !a.user && b.user {
                return false;
            }
        }
        a.weight > b.weight
    }

    /// `std::sort` with `cmp_before`, as libstdc++ runs it on short ranges (insertion sort).
    /// Elements it may order either way (same kind, bit-equal weight) give the same shares.
    fn sort(&self, v: &mut [usize]) {
        for i in 1..v.len() {
            let val = v[i];
            if self.before(val, v[0]) {
                v.copy_within(0..i, 1);
                v[0] = val;
            } else {
                let mut j = i;
                while self.before(val, v[j - 1]) {
                    v[j] = v[j - 1];
                    j -= 1;
                }
                v[j] = val;
            }
        }
    }

    /// `calc_set_children_weight` then `sort_weighted_children`.
    fn calc_and_sort(&mut self, p: usize) {
        let mut kids = std::mem::take(&mut self.nodes[p].children);
        let s: u64 = kids.iter().map(|&c| self.nodes[c].shares).sum();
        let u = if self.exact_sums {
            kids.iter().fold(0.0f64, |acc, &c| acc + self.nodes[c].usage)
        } else {
            // std::accumulate into a uint64_t: every partial sum is truncated.
            kids.iter().fold(0u64, |acc, &c| (acc as f64 + self.nodes[c].usage) as u64) as f64
        };
        for &c in &kids {
            self.nodes[c].weight = self.weight(c, s, u);
        }
        self.sort(&mut kids);
        self.nodes[p].children = kids;
    }

    fn child_equal_next(&self, kids: &[usize], i: usize) -> bool {
        if i + 1 >= kids.len() {
            return false;
        }
        let (a, b) = (&self.nodes[kids[i]], &self.nodes[kids[i + 1]]);
        a.user == b.user && is_equal(a.weight, b.weight)
    }

    fn visit(&mut self, x: usize) {
        if self.nodes[x].children.is_empty() {
            // handle_leaf: an empty bank uses no rank.
            if self.nodes[x].user {
                self.fshare[x] = self.rank as f64 / self.n as f64;
                assert!(self.rank != 0, "rank underflow (ERANGE)");
                if self.nodes[x].tie_with_next {
                    self.stride += 1;
                    self.nodes[x].tie_with_next = false;
                } else {
                    self.rank = self.rank - 1 - self.stride;
                    self.stride = 0;
                }
            }
            return;
        }
        let kids = self.nodes[x].children.clone();
        for &c in &kids {
            self.calc_and_sort(c);
        }
        // build_tie_aware_children
        let mut ta = Vec::with_capacity(kids.len());
        let mut vc: Option<usize> = None;
        for (i, &c) in kids.iter().enumerate() {
            if self.nodes[c].user {
                if self.child_equal_next(&kids, i) {
                    self.nodes[c].tie_with_next = true;
                }
                ta.push(c);
                continue;
            }
            let grandkids = self.nodes[c].children.clone();
            if self.child_equal_next(&kids, i) {
                let v = *vc.get_or_insert_with(|| {
                    self.nodes.push(FluxNode {
                        user: false,
                        shares: 0,
                        usage: 0.0,
                        weight: 0.0,
                        tie_with_next: false,
                        children: Vec::new(),
                    });
                    self.nodes.len() - 1
                });
                self.nodes[v].children.extend(grandkids);
            } else if let Some(v) = vc.take() {
                // The last bank of a tied run: the merged children are re-sorted by the weights
                // they already have, each relative to its own former parent.
                let mut merged = std::mem::take(&mut self.nodes[v].children);
                merged.extend(grandkids);
                self.sort(&mut merged);
                self.nodes[v].children = merged;
                ta.push(v);
            } else {
                ta.push(c);
            }
        }
        for c in ta {
            self.visit(c);
        }
    }
}
