//! `fairshare entitlement`: the water-filling against a brute-force reference on small random
//! trees, its invariants, and the command end to end on a tiny site whose numbers are worked out
//! by hand below.

use std::collections::HashMap;

use fairshare_analyses::entitlement::{deserved, water_fill};
use fairshare_engine::tree::{AccountUsage, AssocRecord, AssocTree, Shares, SiblingOrder, TreeInput};
use proptest::prelude::*;

use crate::{fairshare, stdout_of, write_file};

/// Share choices; `None` is `FairShare=parent`.
const SHARES: [Option<u64>; 7] = [Some(0), Some(1), Some(1), Some(2), Some(3), Some(10), None];
/// Demand choices: zero often, ties, and one far above any capacity.
const DEMAND: [f64; 8] = [0.0, 0.0, 1.0, 2.0, 2.0, 5.0, 17.0, 1e6];

/// One generated association: (parent pick, is a user, share index, demand index).
type Choice = (u16, bool, usize, usize);

/// Records of a random tree (accounts at depth 3 at most get no more children) and each user's
/// demand by record id.
fn gen_tree(choices: &[Choice]) -> (Vec<AssocRecord>, HashMap<u64, f64>) {
    let rec = |id: u64, parent_id: Option<u64>, account: String, user: Option<String>, shares| AssocRecord {
        user,
        ..AssocRecord::account(id, parent_id, account, shares, id)
    };
    let mut records = vec![rec(1, None, "root".into(), None, Shares::Value(1))];
    let mut accounts: Vec<(usize, u32)> = vec![(0, 0)];
    let mut demand = HashMap::new();
    for (i, &(pick, user, share, d)) in choices.iter().enumerate() {
        let id = i as u64 + 2;
        let (p, depth) = accounts[usize::from(pick) % accounts.len()];
        let (pid, account) = (records[p].id, records[p].account.clone());
        let shares = SHARES[share].map_or(Shares::Parent, Shares::Value);
        if user {
            records.push(rec(id, Some(pid), account, Some(format!("u{id}")), shares));
            demand.insert(id, DEMAND[d]);
        } else {
            records.push(rec(id, Some(pid), format!("a{id}"), None, shares));
            if depth < 3 {
                accounts.push((records.len() - 1, depth + 1));
            }
        }
    }
    (records, demand)
}

/// Brute-force weighted water-filling of one group: the fill level found by bisection (what
/// every unsaturated member gets per share), positive shares first, then zero shares equally with
/// what is left.
fn brute_fill(amount: f64, demand: &[f64], shares: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; demand.len()];
    let mut level_fill = |amount: f64, members: Vec<usize>, weight: &dyn Fn(usize) -> f64| -> f64 {
        let total: f64 = members.iter().map(|&i| demand[i]).sum();
        if total <= amount {
            for &i in &members {
                out[i] = demand[i];
            }
            return amount - total;
        }
        let given = |level: f64| members.iter().map(|&i| demand[i].min(level * weight(i))).sum::<f64>();
        let (mut lo, mut hi) = (0.0, members.iter().map(|&i| demand[i] / weight(i)).fold(0.0, f64::max));
        for _ in 0..300 {
            let mid = 0.5 * (lo + hi);
            if given(mid) < amount { lo = mid } else { hi = mid }
        }
        for &i in &members {
            out[i] = demand[i].min(hi * weight(i));
        }
        0.0
    };
    let positive = (0..demand.len()).filter(|&i| shares[i] > 0.0 && demand[i] > 0.0).collect();
    let left = level_fill(amount, positive, &|i| shares[i]);
    let zero = (0..demand.len()).filter(|&i| shares[i] == 0.0 && demand[i] > 0.0).collect();
    level_fill(left, zero, &|_| 1.0);
    out
}

/// The reference: recursive over the records, `parent` accounts replaced in their parent's group
/// by their children (recursively), and deserved as the sum of those.
fn reference(records: &[AssocRecord], user_demand: &HashMap<u64, f64>, capacity: f64) -> HashMap<u64, f64> {
    let by_id: HashMap<u64, &AssocRecord> = records.iter().map(|r| (r.id, r)).collect();
    let mut children: HashMap<u64, Vec<u64>> = HashMap::new();
    for r in records {
        if let Some(p) = r.parent_id {
            children.entry(p).or_default().push(r.id);
        }
    }
    fn demand_of(id: u64, children: &HashMap<u64, Vec<u64>>, users: &HashMap<u64, f64>) -> f64 {
        users.get(&id).copied().unwrap_or_else(|| {
            children.get(&id).map_or(0.0, |c| c.iter().map(|&k| demand_of(k, children, users)).sum())
        })
    }
    let lifted = |id: u64| by_id[&id].user.is_none() && by_id[&id].shares == Shares::Parent;
    fn competitors(id: u64, children: &HashMap<u64, Vec<u64>>, lifted: &dyn Fn(u64) -> bool, out: &mut Vec<u64>) {
        for &c in children.get(&id).map_or(&[][..], Vec::as_slice) {
            if lifted(c) {
                competitors(c, children, lifted, out);
            } else {
                out.push(c);
            }
        }
    }
    let mut out = HashMap::new();
    let mut todo = vec![(1u64, capacity.min(demand_of(1, &children, user_demand)))];
    while let Some((id, amount)) = todo.pop() {
        out.insert(id, amount);
        let mut group = Vec::new();
        competitors(id, &children, &lifted, &mut group);
        let d: Vec<f64> = group.iter().map(|&c| demand_of(c, &children, user_demand)).collect();
        let s: Vec<f64> = group
            .iter()
            .map(|&c| match by_id[&c].shares {
                Shares::Value(v) => v as f64,
                Shares::Parent => 0.0,
            })
            .collect();
        for (&c, g) in group.iter().zip(brute_fill(amount, &d, &s)) {
            todo.push((c, g));
        }
    }
    fn sum_lifted(id: u64, children: &HashMap<u64, Vec<u64>>, out: &HashMap<u64, f64>) -> f64 {
        out.get(&id)
            .copied()
            .unwrap_or_else(|| children.get(&id).map_or(0.0, |c| c.iter().map(|&k| sum_lifted(k, children, out)).sum()))
    }
    let all: Vec<u64> = records.iter().map(|r| r.id).collect();
    all.into_iter().map(|id| (id, sum_lifted(id, &children, &out))).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The tree of `records`, each row's demand (accounts summing their users') and what it deserves.
fn solve(records: &[AssocRecord], user_demand: &HashMap<u64, f64>, capacity: f64) -> (AssocTree, Vec<f64>, Vec<f64>) {
    let input = TreeInput {
        source: "generated".into(),
        records: records.to_vec(),
        sibling_order: SiblingOrder::Lineage,
        account_usage: AccountUsage::SumOfUsers,
        tres: None,
    };
    let tree = AssocTree::build(input).expect("a valid generated tree");
    let mut demand: Vec<f64> = tree.ids().iter().map(|id| user_demand.get(id).copied().unwrap_or(0.0)).collect();
    for r in (1..tree.len()).rev() {
        demand[tree.parents()[r] as usize] += demand[r];
    }
    let got = deserved(&tree, &demand, capacity);
    (tree, demand, got)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_sorted_solver_is_the_brute_force_water_filling(
        choices in prop::collection::vec((0u16..64, prop::bool::weighted(0.6), 0usize..7, 0usize..8), 1..40),
        capacity in prop::sample::select(vec![0.0, 1.0, 3.0, 10.0, 25.0, 100.0, 1e9]),
    ) {
        let (records, user_demand) = gen_tree(&choices);
        let (tree, demand, got) = solve(&records, &user_demand, capacity);
        let want = reference(&records, &user_demand, capacity);
        for r in 0..tree.len() {
            let id = tree.ids()[r];
            prop_assert!(close(got[r], want[&id]), "row {r} (id {id}): {} vs the reference's {}", got[r], want[&id]);
            // Never more than asked for.
            prop_assert!(got[r] <= demand[r] * (1.0 + 1e-12), "row {r} deserves {} > demand {}", got[r], demand[r]);
            // Children share exactly what their parent deserves.
            if tree.child_counts()[r] > 0 {
                let sum: f64 = tree.children(r).map(|c| got[c]).sum();
                prop_assert!(close(sum, got[r]), "row {r}: children sum to {sum}, it deserves {}", got[r]);
            }
        }
        prop_assert!(close(got[0], capacity.min(demand[0])));
    }

    #[test]
    fn a_member_asking_less_than_its_share_gets_what_it_asks(
        demand in prop::collection::vec(prop::sample::select(vec![0.0, 1.0, 2.0, 4.0, 7.5, 1e3]), 1..12),
        shares in prop::collection::vec(prop::sample::select(vec![0.0, 1.0, 1.0, 3.0, 8.0]), 12),
        amount in prop::sample::select(vec![0.0, 1.0, 5.0, 12.0, 1e4]),
    ) {
        let shares = &shares[..demand.len()];
        let mut out = vec![0.0; demand.len()];
        let left = water_fill(amount, &demand, shares, &mut out, &mut Vec::new());
        let total: f64 = demand.iter().sum();
        prop_assert!(close(out.iter().sum::<f64>() + left, amount));
        prop_assert!(close(left, (amount - total).max(0.0)));
        let weight: f64 = (0..demand.len()).filter(|&i| demand[i] > 0.0).map(|i| shares[i]).sum();
        for i in 0..demand.len() {
            prop_assert!(out[i] <= demand[i]);
            if shares[i] > 0.0 && demand[i] <= amount * shares[i] / weight {
                prop_assert_eq!(out[i], demand[i], "member {} is within its share", i);
            }
        }
    }
}

#[test]
fn brute_force_reference_agrees_with_a_hand_worked_group() {
    // 10 over shares 1:1:2 asking 1, 8, 8 (the first saturates, 9 split 1:2); zero shares idle.
    let got = brute_fill(10.0, &[1.0, 8.0, 8.0, 4.0], &[1.0, 1.0, 2.0, 0.0]);
    for (g, w) in got.iter().zip([1.0, 3.0, 6.0, 0.0]) {
        assert!(close(*g, w), "{got:?}");
    }
}

/// The tiny site: two nodes of 8 CPUs, 1 GB and 2 GPUs each (16 CPUs, 4 GPUs); accounts A (3
/// shares; users a1 and a2, one share each) and B (1 share; user b1 with `parent` shares).
const TREE: &str = "id,parent_id,account,user,shares,usage\n\
    1,,root,,1,0\n\
    10,1,A,,3,0\n\
    11,10,A,a1,1,0\n\
    12,10,A,a2,1,0\n\
    20,1,B,,1,0\n\
    21,20,B,b1,parent,0\n";
const SLURM_CONF: &str = "ClusterName=tiny\nGresTypes=gpu\n\
    NodeName=n[1-2] CPUs=8 RealMemory=1024 Gres=gpu:2\n\
    PartitionName=p1 Nodes=n[1-2] Default=YES\nPartitionName=p2 Nodes=n[1-2]\n";
/// At 1000: a1 holds 4 CPUs, b1 8 CPUs and a GPU; one job has ended and one starts later.
const JOBS: &str = "job_id,user,account,partition,qos,start,end,tres_alloc\n\
    1,a1,A,p1,,900,,\"cpu=4,mem=256M,node=1\"\n\
    2,b1,B,p1,,500,,\"cpu=8,mem=512M,node=1,gres/gpu=1\"\n\
    3,a2,A,p1,,100,1000,\"cpu=8,mem=512M,node=1\"\n\
    4,a2,A,p1,,1001,,\"cpu=8,mem=512M,node=1\"\n";
/// a1 asks 8 CPUs; a2 2 CPUs and 2 GPUs in two partitions (counted once); b1 4 CPUs and 4 GPUs;
/// a job of nobody's association is left out.
const PENDING: &str = "job_id,user,account,partition,qos,submit_time,accrue_time,min_nodes,cpus,time_limit,nice,site_factor,tres_req\n\
    10,a1,A,p1,,900,900,1,8,60,0,0,\"cpu=8,mem=128M,node=1\"\n\
    11,a2,A,\"p1,p2\",,900,900,1,2,60,0,0,\"cpu=2,mem=128M,node=1,gres/gpu=2\"\n\
    12,b1,B,p2,,900,900,1,4,60,0,0,\"cpu=4,mem=128M,node=1,gres/gpu=4\"\n\
    13,zed,Z,p1,,900,900,1,4,60,0,0,\"cpu=4,mem=128M,node=1\"\n";

#[test]
fn a_tiny_site_deserves_what_hand_water_filling_gives() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str, text: &str| write_file(dir.path(), name, text).to_string_lossy().into_owned();
    let (tree, conf, jobs, pending) =
        (p("tree.csv", TREE), p("slurm.conf", SLURM_CONF), p("jobs.csv", JOBS), p("pending.csv", PENDING));
    let (parquet, svg) = (dir.path().join("e.parquet"), dir.path().join("e.svg"));
    let base = ["entitlement", "--tree", &tree, "--slurm-conf", &conf, "--jobs", &jobs, "--now", "1000"];
    let args = [&base[..], &["--pending", &pending, "--json", "--plot", svg.to_str().unwrap()]].concat();
    let out = fairshare([&args[..], &["--out", parquet.to_str().unwrap()]].concat());
    let json: serde_json::Value = serde_json::from_str(&stdout_of(&out)).expect("JSON");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("1 running or pending job matches no association and is left out")
    );
    assert_eq!(json["capacity"]["cpu"], 16);
    assert_eq!(json["capacity"]["gres/gpu"], 4);
    let of = |who: &str, tres: &str| -> [f64; 4] {
        let a = json["associations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["user"].as_str().unwrap_or(a["account"].as_str().unwrap()) == who)
            .unwrap_or_else(|| panic!("{who} in the output"));
        let v = &a["tres"][tres];
        ["demand", "deserved", "allocated", "over"].map(|k| v[k].as_f64().unwrap())
    };
    // CPUs: demand a1 4+8, a2 2 (A 14), b1 8+4 (B 12), 26 above the 16 there are. A gets 3/4 (12),
    // B 1/4 (4); in A, a2's half (6) is more than its 2, so a1 gets 10; b1 alone takes B's 4.
    assert_eq!(of("root", "cpu"), [26.0, 16.0, 12.0, -4.0]);
    assert_eq!(of("A", "cpu"), [14.0, 12.0, 4.0, -8.0]);
    assert_eq!(of("a1", "cpu"), [12.0, 10.0, 4.0, -6.0]);
    assert_eq!(of("a2", "cpu"), [2.0, 2.0, 0.0, -2.0]);
    assert_eq!(of("B", "cpu"), [12.0, 4.0, 8.0, 4.0]);
    assert_eq!(of("b1", "cpu"), [12.0, 4.0, 8.0, 4.0]);
    // GPUs: A asks 2 of its 3, so B gets the other 2 of the 4.
    assert_eq!(of("A", "gres/gpu"), [2.0, 2.0, 0.0, -2.0]);
    assert_eq!(of("b1", "gres/gpu"), [5.0, 2.0, 1.0, -1.0]);

    // Parquet: one row per (association, TRES), the same numbers.
    let file = std::fs::File::open(&parquet).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    let batch = arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
    let tres_count = json["capacity"].as_object().unwrap().len();
    assert_eq!(batch.num_rows(), 6 * tres_count);
    use arrow::array::AsArray;
    let col = |name: &str| batch.column_by_name(name).unwrap().clone();
    let (users, tres, deserved) = (col("user"), col("tres"), col("deserved"));
    let row = (0..batch.num_rows())
        .find(|&i| users.as_string::<i32>().value(i) == "a1" && tres.as_string::<i32>().value(i) == "cpu")
        .unwrap();
    assert_eq!(deserved.as_primitive::<arrow::datatypes::Float64Type>().value(row), 10.0);
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));

    // The table: b1's CPU line, indented as sshare indents users.
    let text = stdout_of(&fairshare([&base[..], &["--pending", &pending]].concat()));
    let b1 = text.lines().find(|l| l.contains("b1")).expect("b1's row");
    let cells: Vec<&str> = b1.split_whitespace().collect();
    assert_eq!(&cells[..8], ["B", "b1", "|", "12", "4", "8", "+4", "|"], "{text}");
    assert!(b1.starts_with("  B "), "{text}");
}

#[test]
fn without_nodes_there_is_nothing_to_share() {
    let dir = tempfile::tempdir().unwrap();
    let tree = write_file(dir.path(), "tree.csv", TREE);
    let out = fairshare(["entitlement", "--tree", tree.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--slurm-conf"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_default_site_shares_its_gpus() {
    let text = stdout_of(&fairshare(["entitlement"]));
    // The seed site's eight GPU nodes hold 32 GPUs, fewer than its queue asks for: the root
    // deserves all of them; its CPUs are not scarce, so everyone deserves its demand.
    let root: Vec<&str> = text.lines().find(|l| l.starts_with("root")).unwrap().split_whitespace().collect();
    assert_eq!(root[2], root[3], "{text}");
    assert_eq!(root[8], "32", "{text}");
}
