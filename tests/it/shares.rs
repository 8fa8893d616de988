//! `fairshare shares`: RawShares from the hardware, on the seed site's `hardware.toml`, checked
//! against numbers the tests compute from `slurm.conf`, `tree.csv` and `hardware.toml` themselves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{fairshare, stdout_of, write_file};

fn seed_site() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-site")
}

fn hardware() -> String {
    seed_site().join("hardware.toml").display().to_string()
}

/// One row of the table.
#[derive(Debug)]
struct Row {
    account: String,
    gratis: f64,
    lab: f64,
    communal: f64,
    total: f64,
    raw: u64,
}

/// The account rows of the table (not the header, the rules or the total row).
fn table_rows(table: &str) -> Vec<Row> {
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["Account", "Gratis", "Lab", "Communal", "Total", "RawShares"]);
    lines
        .filter(|l| !l.starts_with('-') && !l.starts_with("(total)"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 6, "{l}");
            let n = |i: usize| f[i].parse::<f64>().unwrap();
            Row {
                account: f[0].into(),
                gratis: n(1),
                lab: n(2),
                communal: n(3),
                total: n(4),
                raw: f[5].parse().unwrap(),
            }
        })
        .collect()
}

/// `prefix[lo-hi]` (zero-padded to `lo`'s width) or a plain name: what the seed site's files use.
fn expand(list: &str) -> Vec<String> {
    let Some((prefix, rest)) = list.split_once('[') else { return vec![list.to_string()] };
    let (lo, hi) = rest.trim_end_matches(']').split_once('-').unwrap();
    let (a, b): (u32, u32) = (lo.parse().unwrap(), hi.parse().unwrap());
    (a..=b).map(|i| format!("{prefix}{i:0w$}", w = lo.len())).collect()
}

/// `Key=Value` of a slurm.conf line.
fn value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace().find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')).map(|v| v.trim_matches('"'))
}

#[test]
fn table_totals_are_the_sum_of_the_parts() {
    let rows = table_rows(&stdout_of(&fairshare(["shares", "--hardware", &hardware()])));
    assert_eq!(rows.len(), 7);
    let names: Vec<&str> = rows.iter().map(|r| r.account.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "rows by account name");
    for r in &rows {
        // Each printed value is within 0.0005 of the exact one.
        assert!((r.total - (r.gratis + r.lab + r.communal)).abs() <= 0.002, "{r:?}");
        assert!((r.raw as f64 - r.total).abs() <= 0.5005, "RawShares is the total rounded: {r:?}");
    }
}

#[test]
fn gratis_is_the_public_pool_over_the_accounts() {
    let site = seed_site();
    let hw: toml::Table = std::fs::read_to_string(site.join("hardware.toml")).unwrap().parse().unwrap();
    let strings = |v: &toml::Value| -> Vec<String> {
        v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
    };

    // CPUs of each node and the CPU weight and nodes of each partition, read from slurm.conf here.
    let conf = std::fs::read_to_string(site.join("slurm.conf")).unwrap();
    let mut cpus = BTreeMap::new();
    let mut partitions = BTreeMap::new();
    for line in conf.lines() {
        if let Some(names) = value(line, "NodeName").filter(|n| *n != "DEFAULT") {
            let n: u32 = value(line, "Sockets").unwrap().parse::<u32>().unwrap()
                * value(line, "CoresPerSocket").unwrap().parse::<u32>().unwrap();
            cpus.extend(expand(names).into_iter().map(|name| (name, n)));
        }
        if let Some(name) = value(line, "PartitionName").filter(|n| *n != "DEFAULT") {
            let weight = value(line, "TRESBillingWeights")
                .and_then(|w| w.split(',').find_map(|t| t.strip_prefix("CPU=")))
                .map(|w| w.parse::<f64>().unwrap());
            partitions.insert(name.to_string(), (expand(value(line, "Nodes").unwrap()), weight));
        }
    }

    // Nodes bought by labs or together leave the pool, as the command documents.
    let mut bought = BTreeSet::new();
    for entry in hw["lab"].as_array().unwrap().iter().chain(hw["communal"].as_array().unwrap()) {
        match (entry.get("nodes"), entry.get("partition")) {
            (Some(n), _) => bought.extend(expand(n.as_str().unwrap())),
            (None, Some(p)) => bought.extend(partitions[p.as_str().unwrap()].0.iter().cloned()),
            (None, None) => unreachable!(),
        }
    }
    let public = strings(&hw["public"]);
    assert!(strings(&hw["requeue"]).iter().all(|r| !public.contains(r)));
    let mut pool = 0.0;
    let mut counted = BTreeSet::new();
    for p in &public {
        let (nodes, weight) = &partitions[p];
        for node in nodes.iter().filter(|n| !bought.contains(*n)) {
            if counted.insert(node.clone()) {
                pool += f64::from(cpus[node]) * weight.unwrap();
            }
        }
    }
    // By hand: Abu Dhabi 16 × 64 × 0.25 = 256; Ivy Bridge 24 × 16 × 0.5 = 192; Broadwell
    // 56 × 32 × 1.0 = 1792; Skylake 40 × 48 × 1.2 = 2304.
    assert!((pool - 4544.0).abs() < 1e-9, "{pool}");

    // The accounts: every non-root account row of the tree, less the excluded ones.
    let tree = std::fs::read_to_string(site.join("tree.csv")).unwrap();
    let exclude = strings(&hw["exclude"]);
    let accounts: BTreeSet<&str> = tree
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| !f[1].is_empty() && f[3].is_empty())
        .map(|f| f[2])
        .filter(|a| !exclude.iter().any(|x| x == a))
        .collect();
    assert_eq!(accounts.len(), 7);
    let gratis = pool / accounts.len() as f64;

    let rows = table_rows(&stdout_of(&fairshare(["shares", "--hardware", &hardware()])));
    assert_eq!(rows.iter().map(|r| r.account.as_str()).collect::<BTreeSet<_>>(), accounts);
    for r in &rows {
        assert!((r.gratis - gratis).abs() <= 0.0005, "{} gratis {} != {gratis}", r.account, r.gratis);
    }
    // Nothing is counted twice: the totals are the CPU TRES of the whole cluster (every node is
    // public or bought here), 256 + 256 + 2048 + 2764.8 + 460.8.
    let total: f64 = rows.iter().map(|r| r.total).sum();
    assert!((total - 5785.6).abs() < 0.005, "{total}");
}

/// RawShares of the seed site, by hand: gratis 4544 / 7 = 649.142857; huttenhower_lab and astro_lab
/// add 460.8 (8 Skylake nodes; the gpu partition); chem_jacobsen and chem_aspuru 128 (half of 8
/// Broadwell nodes); test_lab and econ_lab 32 (half of 8 Ivy Bridge nodes).
const SEED_SHARES: [(&str, u64); 7] = [
    ("astro_lab", 1110),
    ("chem_aspuru", 777),
    ("chem_jacobsen", 777),
    ("chemistry", 649),
    ("econ_lab", 681),
    ("huttenhower_lab", 1110),
    ("test_lab", 681),
];

#[test]
fn sacctmgr_lines() {
    let out = stdout_of(&fairshare(["shares", "--hardware", &hardware(), "--format", "sacctmgr"]));
    let expected: String = SEED_SHARES
        .iter()
        .map(|(a, n)| format!("sacctmgr -i modify account where name={a} set fairshare={n}\n"))
        .collect();
    assert_eq!(out, expected);
    let rows = table_rows(&stdout_of(&fairshare(["shares", "--hardware", &hardware()])));
    let from_table: Vec<(&str, u64)> = rows.iter().map(|r| (r.account.as_str(), r.raw)).collect();
    assert_eq!(from_table, SEED_SHARES);
}

/// `sshare -a -P` rows as (account, user, RawShares).
fn sshare_shares(tree: &Path) -> Vec<(String, String, String)> {
    let out = stdout_of(&fairshare(["sshare", "--tree", tree.to_str().unwrap(), "-a", "-P"]));
    let mut lines = out.lines();
    assert!(lines.next().unwrap().starts_with("Account|User|RawShares|"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (f[0].trim().to_string(), f[1].to_string(), f[2].to_string())
        })
        .collect()
}

#[test]
fn tree_csv_reads_back_in_sshare() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tree.csv");
    let run = fairshare(["shares", "--hardware", &hardware(), "--format", "tree-csv", "--out", out.to_str().unwrap()]);
    assert_eq!(stdout_of(&run), "", "--out writes the file, not stdout");
    // Written atomically: only the target is left.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("id,parent_id,account,user,shares,usage"), "{text}");

    let before: Vec<_> = sshare_shares(&seed_site().join("tree.csv"));
    let after: Vec<_> = sshare_shares(&out);
    assert_eq!(before.len(), after.len(), "every association is kept");
    let new: BTreeMap<&str, u64> = SEED_SHARES.into_iter().collect();
    for ((account, user, old), (a2, u2, shares)) in before.iter().zip(&after) {
        assert_eq!((account, user), (a2, u2), "same rows in the same order");
        match new.get(account.as_str()).filter(|_| user.is_empty()) {
            Some(n) => assert_eq!(shares, &n.to_string(), "{account}"),
            // Users, root, and the excluded accounts keep their shares.
            None => assert_eq!(shares, old, "{account} {user}"),
        }
    }
    assert!(after.contains(&("rc_staff".into(), String::new(), "0".into())));
    assert!(after.contains(&("chem_shared".into(), String::new(), "parent".into())));

    // The same tree on stdout.
    let printed = stdout_of(&fairshare(["shares", "--hardware", &hardware(), "--format", "tree-csv"]));
    assert_eq!(printed, text);
}

#[test]
fn without_a_tree_the_accounts_are_listed_and_get_a_flat_tree() {
    let dir = tempfile::tempdir().unwrap();
    let conf = seed_site().join("slurm.conf");
    let toml = format!(
        "slurm_conf = {:?}\naccounts = [\"b_lab\", \"a_lab\"]\npublic = [\"abudhabi\"]\n\
         requeue = [\"serial_requeue\", \"gpu_requeue\"]\n\n[[lab]]\naccount = \"b_lab\"\nnodes = \"bdw[001-002]\"\n",
        conf.display().to_string()
    );
    let file = write_file(dir.path(), "hw.toml", &toml);
    let f = file.to_str().unwrap();
    // Abu Dhabi: 16 × 64 × 0.25 = 256, 128 each; b_lab adds two Broadwell nodes, 64.
    let rows = table_rows(&stdout_of(&fairshare(["shares", "--hardware", f])));
    let got: Vec<(&str, f64, f64, u64)> = rows.iter().map(|r| (r.account.as_str(), r.gratis, r.lab, r.raw)).collect();
    assert_eq!(got, [("a_lab", 128.0, 0.0, 128), ("b_lab", 128.0, 64.0, 192)]);
    let out = dir.path().join("flat.csv");
    stdout_of(&fairshare(["shares", "--hardware", f, "--format", "tree-csv", "--out", out.to_str().unwrap()]));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n2,1,a_lab,,128,0\n3,1,b_lab,,192,0\n"
    );
    let shares = sshare_shares(&out);
    assert_eq!(
        shares[1..],
        [("a_lab".into(), String::new(), "128".into()), ("b_lab".into(), String::new(), "192".into())]
    );
}

#[test]
fn errors_name_the_hardware_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let conf = seed_site().join("slurm.conf");
    let head =
        format!("slurm_conf = {:?}\naccounts = [\"a\", \"b\"]\npublic = [\"shared\"]\n", conf.display().to_string());
    let error = |body: &str| {
        let file = write_file(dir.path(), "hw.toml", &format!("{head}{body}"));
        let out = fairshare(["shares", "--hardware", file.to_str().unwrap()]);
        assert!(!out.status.success());
        assert!(out.stdout.is_empty());
        let err = String::from_utf8(out.stderr).unwrap();
        err.trim_end().strip_prefix("fairshare: error: ").unwrap().replace(&file.display().to_string(), "hw.toml")
    };
    assert_eq!(
        error("\n[[communal]]\nname = \"c\"\nnodes = \"skl001\"\nlabs = { a = 0.5, b = 0.6 }\n"),
        "hw.toml:5: communal c: the fractions sum to 1.1, not 1"
    );
    assert_eq!(
        error(
            "requeue = [\"serial_requeue\"]\n[[lab]]\naccount = \"a\"\nnodes = \"skl[001-002]\"\n\
             [[lab]]\naccount = \"b\"\npartition = \"skylake\"\n"
        ),
        "hw.toml:8: node skl001 is bought twice: by lab a (line 5) and by lab b"
    );
    assert_eq!(
        error("[[lab]]\naccount = \"c\"\npartition = \"gpu\"\n"),
        "hw.toml:4: lab c: account \"c\" is not one of the accounts sharing the gratis pool"
    );
    assert_eq!(error("requeue = [\"serial\"]\n"), "hw.toml:4: requeue partition \"serial\" is not in slurm.conf");
    assert!(error("[[lab]]\naccount = \"a\"\nnodes = \"skl[9-\"\n").starts_with("hw.toml:6: nodes = \"skl[9-\": "));
    assert!(error("colour = 1\n").starts_with("hw.toml:4: unknown field `colour`"));
    let file = write_file(dir.path(), "hw.toml", "public = []\naccounts = []\nslurm_conf = \"nowhere.conf\"\n");
    let out = fairshare(["shares", "--hardware", file.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("nowhere.conf"));
}
