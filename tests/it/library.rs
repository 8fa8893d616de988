//! What the command line prints and writes is what the library's front-end calls give: the
//! comparison of variants, and a queue scored with flux-accounting's formula.

use std::path::{Path, PathBuf};

use fairshare_analyses::compare::{Variant, compare_variants};
use fairshare_base::write::parquet::write_parquet;
use fairshare_engine::output::parquet::{jobs_batch, jobs_metadata};
use fairshare_engine::pipeline::{Silent, SiteOptions};
use fairshare_engine::tree::Shares;

use super::{fairshare, stdout_of, write_file};

fn seed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-site").join(name)
}

/// The seed site's options, as `--site examples/seed-site/site.toml` gives them.
fn seed_site() -> SiteOptions {
    let mut options = SiteOptions::default();
    options.under_site_file(&seed("site.toml")).unwrap();
    options
}

#[test]
fn compare_variants_is_what_compare_prints_and_writes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.parquet");
    let variants = "fair-tree,classic,fair-tree:dampening=2,flux,classic:depth-oblivious";
    let site_toml = seed("site.toml");
    let run = fairshare([
        "compare",
        "--site",
        site_toml.to_str().unwrap(),
        "--variants",
        variants,
        "--all",
        "--top",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    let printed = stdout_of(&run);

    let parsed: Vec<Variant> = variants.split(',').map(|v| Variant::parse(v).unwrap()).collect();
    let site = seed_site().resolve().unwrap();
    let c = compare_variants(&site, &parsed, &Silent).unwrap();
    assert_eq!(printed, c.text(true, 5));
    // flux takes the seed tree's `parent` shares as Fair Tree groups them: nothing left out.
    assert!(c.left_out.is_empty());
    assert_eq!(c.results.len(), 5);
    assert!(!String::from_utf8_lossy(&run.stderr).contains("left out"), "{}", String::from_utf8_lossy(&run.stderr));

    let ours = c.batch().unwrap();
    let written = fairshare_engine::io::read_parquet_whole(&out).unwrap();
    let names = |b: &arrow::array::RecordBatch| -> Vec<String> {
        b.schema().fields().iter().map(|f| f.name().clone()).collect()
    };
    assert_eq!(names(&written), names(&ours));
    assert_eq!(names(&ours)[4..6], ["fs_fair_tree", "place_fair_tree"]);
    assert_eq!(names(&ours).last().unwrap(), "place_classic_depth_oblivious");
    for (k, name) in names(&ours).iter().enumerate() {
        assert_eq!(written.column(k).as_ref(), ours.column(k).as_ref(), "{name}");
    }
    assert_eq!(ours.num_rows(), c.users.len());

    let flux = compare_variants(&site, &[Variant::parse("flux").unwrap()], &Silent).unwrap();
    assert_eq!(flux.factors[0], c.factors[3]);
    assert!(Variant::parse("classic:dampening=0").is_err() && Variant::parse("fifo").is_err());
}

/// `score --priority flux` writes the file of [`fairshare_engine::pipeline::Site::score_flux`]'s queue,
/// byte for byte; slurm.conf, the QOS table and the job records of the site play no part.
#[test]
fn score_flux_is_what_score_priority_flux_writes() {
    let dir = tempfile::tempdir().unwrap();
    let now = "2026-01-08T00:00:00";
    // Every `parent` association of the seed tree given shares: a what-if the library applies as
    // the command line does.
    let tree = std::fs::read_to_string(seed("tree.csv")).unwrap();
    let parents: Vec<String> = tree
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f.get(4) == Some(&"parent"))
        .map(|f| if f[3].is_empty() { f[2].to_string() } else { format!("{}@{}", f[3], f[2]) })
        .collect();
    let cli = dir.path().join("cli.parquet");
    let site_toml = seed("site.toml");
    let mut args = vec!["score", "--priority", "flux", "--site", site_toml.to_str().unwrap(), "--now", now];
    let set: Vec<String> = parents.iter().map(|p| format!("{p}=1")).collect();
    for s in &set {
        args.extend(["--set-shares", s]);
    }
    // Not read by flux's formula, as before it was scored through the library.
    args.extend(["--slurm-conf", "/nonexistent/slurm.conf", "--out", cli.to_str().unwrap()]);
    stdout_of(&fairshare(&args));

    let mut options = seed_site();
    options.now = Some(now.into());
    options.set_shares = parents.iter().map(|p| (p.clone(), Shares::Value(1))).collect();
    let site = options.resolve().unwrap();
    let queue = site.score_flux(&Silent).unwrap().expect("the seed site has a pending queue");
    assert_eq!((queue.formula, queue.now), ("flux", site.now));
    let ours = dir.path().join("lib.parquet");
    let meta = jobs_metadata(queue.formula, queue.algorithm, queue.now);
    write_parquet(&ours, &jobs_batch(queue.scores, &queue.jobs, &queue.weights).unwrap(), meta).unwrap();
    assert_eq!(std::fs::read(&cli).unwrap(), std::fs::read(&ours).unwrap());

    // Without a queue there is nothing to score.
    let mut no_queue = seed_site();
    no_queue.pending = None;
    no_queue.set_shares = options.set_shares.clone();
    assert!(no_queue.resolve().unwrap().score_flux(&Silent).unwrap().is_none());
    let flux_tree = write_file(dir.path(), "f.csv", "0,root,%^+_nouser,1,10\n1,a,%^+_nouser,1,10\n2,a,u1,1,4\n");
    let out = fairshare(["sprio", "--priority", "flux", "--tree", flux_tree.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no pending queue: give --pending"));
}
