//! Benchmarks of the fair-share engine on generated, site-shaped trees.
//!
//! | group | what is timed | sizes (associations) |
//! |---|---|---|
//! | `fair_tree`, `classic`, `flux` | one pass, [`compute`] on a built [`AssocTree`] | 10^3, 10^4, 10^5, 10^6 |
//! | `build` | [`AssocTree::build`] from generated records (cloning them is not timed) | 10^5, 10^6 |
//! | `tree_names` | [`fairshare_engine::jobs::TreeNames::new`]: a tree's user, account and partition names interned and its (user, account) pairs indexed, as `score` and `run` do before a queue is read | 10^5, 10^6 |
//! | `parquet_roundtrip` | tree Parquet in → Fair Tree → results Parquet out, as `fairshare compute` does | 10^5, 10^6 |
//! | `score` | the multifactor kernel alone ([`fairshare_engine::priority::PreparedQueue::score_jobs`] over the whole queue, output memory reused) on a data-gen queue, 10^5 associations | 10^5, 10^6 jobs |
//! | `score_prepare` | what precedes it once per queue ([`SlurmPriority::prepare`]: partitions and QOS checked, associations indexed) | 10^5, 10^6 jobs |
//! | `copy` | a plain copy of the bytes `score` reads and writes per job, for the ratio | 10^5, 10^6 jobs |
//! | `exact_sum` | [`fairshare_engine::usage::exact_sum::ExactSum::add`]: charge-like values (a record's decayed seconds times a TRES count) added to 4096 sums in cache, in a scattered order, as a charge adds them | 2^20 adds |
//! | `sprio` | the scored queue as sprio's default text ([`fairshare_engine::output::sprio::write_sprio`], into a sink), per job | 10^5, 10^6 jobs |
//!
//! With `FAIRSHARE_BENCH_10M=1` the pass and Parquet groups also run 10^7 associations (several GB of
//! memory, minutes per benchmark).
//!
//! Trees come from [`data_gen::generate_tree`] with seed 42, generated (and, for the Parquet group,
//! written to a temporary directory) once per size and only when a selected benchmark needs them,
//! never inside the timed loop. flux-accounting has no `FairShare=parent`, so `flux` runs on trees
//! generated without it. Throughput is reported in associations per second.
//!
//! ```text
//! cargo bench --bench fairshare -- fair_tree              # one group
//! cargo bench --bench fairshare -- 'fair_tree/1000000' --sample-size 10
//! cargo bench --bench fairshare -- --quick                # short runs of everything
//! FAIRSHARE_BENCH_10M=1 cargo bench --bench fairshare -- '/10000000'
//! ```
//!
//! The end-to-end figure at 10^7 (process start, Parquet in, Fair Tree, results Parquet out, wall
//! time and peak memory) comes from the release binaries rather than from criterion:
//!
//! ```text
//! cargo build --release --workspace
//! target/release/data-gen tree --associations 10000000 --format parquet --out /tmp/t10m.parquet
//! /usr/bin/time -v target/release/fairshare compute --tree /tmp/t10m.parquet --out /tmp/out.parquet
//! ```
//!
//! (`Elapsed (wall clock) time` and `Maximum resident set size` in the report; `/usr/bin/time` is
//! GNU time, `apt-get install time`.)

use std::cell::LazyCell;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group};
use data_gen::site::QueueSpec;
use data_gen::{TreeSpec, generate_tree};
use fairshare_base::write::parquet::write_parquet;
use fairshare_engine::io::{TreeFormat, parquet_tree, read_tree};
use fairshare_engine::jobs::PendingJobs;
use fairshare_engine::output::parquet::{association_batch, metadata};
use fairshare_engine::output::sprio::{Format, SprioOptions, write_sprio};
use fairshare_engine::pass::{Algorithm, Params, compute};
use fairshare_engine::priority::SlurmPriority;
use fairshare_engine::tree::AssocTree;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Seed of every generated tree.
const SEED: u64 = 42;

/// The pass groups and the algorithm each measures.
const PASSES: [(&str, Algorithm); 3] =
    [("fair_tree", Algorithm::FairTree), ("classic", Algorithm::Classic), ("flux", Algorithm::Flux)];

/// `sizes`, plus 10^7 when `FAIRSHARE_BENCH_10M=1`.
fn with_10m(mut sizes: Vec<usize>) -> Vec<usize> {
    if std::env::var_os("FAIRSHARE_BENCH_10M").is_some_and(|v| v == "1") {
        sizes.push(10_000_000);
    }
    sizes
}

/// Throughput and sampling for the next benchmark of `group`: the default 100 samples over 5 s
/// below 10^6 associations, 10 longer samples from there on.
fn configure(group: &mut BenchmarkGroup<'_, WallTime>, n: usize) {
    let (samples, seconds) = match n {
        ..1_000_000 => (100, 5),
        1_000_000..10_000_000 => (10, 20),
        10_000_000.. => (10, 120),
    };
    group.throughput(Throughput::Elements(n as u64));
    group.sample_size(samples).measurement_time(Duration::from_secs(seconds));
}

/// The generated tree of `n` associations that `algorithm` accepts.
fn spec(n: usize, algorithm: Algorithm) -> TreeSpec {
    let spec = TreeSpec::new(n, SEED);
    match algorithm {
        Algorithm::Flux => TreeSpec { parent_share_fraction: 0.0, ..spec },
        Algorithm::FairTree | Algorithm::Classic => spec,
    }
}

fn build_tree(spec: &TreeSpec) -> AssocTree {
    AssocTree::build(generate_tree(spec)).expect("generated trees are valid")
}

/// `fair_tree`, `classic`, `flux`: one pass over a built tree.
fn passes(c: &mut Criterion) {
    for (name, algorithm) in PASSES {
        let mut group = c.benchmark_group(name);
        let params = Params::new(algorithm);
        for n in with_10m(vec![1_000, 10_000, 100_000, 1_000_000]) {
            configure(&mut group, n);
            let tree = LazyCell::new(|| build_tree(&spec(n, algorithm)));
            group.bench_function(BenchmarkId::from_parameter(n), |b| {
                let tree = &*tree;
                b.iter(|| compute(black_box(tree), black_box(&params)).expect("the pass accepts the tree"));
            });
        }
        group.finish();
    }
}

/// `build`: validation and breadth-first layout of generated records.
fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("build");
    for n in [100_000, 1_000_000] {
        configure(&mut group, n);
        let input = LazyCell::new(|| generate_tree(&TreeSpec::new(n, SEED)));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            let input = &*input;
            b.iter_batched(
                || input.clone(),
                |input| AssocTree::build(black_box(input)).expect("generated trees are valid"),
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

/// `tree_names`: the names a queue is read against, made from a built tree.
fn tree_names(c: &mut Criterion) {
    let mut group = c.benchmark_group("tree_names");
    for n in [100_000, 1_000_000] {
        configure(&mut group, n);
        let tree = LazyCell::new(|| build_tree(&TreeSpec::new(n, SEED)));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            let tree = &*tree;
            b.iter(|| fairshare_engine::jobs::TreeNames::new(black_box(tree)));
        });
    }
    group.finish();
}

/// `exact_sum`: the exact adds a charge makes per record (usage, and per TRES under `limits`),
/// into sums that stay in cache, so the add itself is timed rather than the memory behind it.
fn exact_sum(c: &mut Criterion) {
    use fairshare_engine::usage::exact_sum::ExactSum;
    const SUMS: usize = 4096;
    let mut group = c.benchmark_group("exact_sum");
    let n = 1 << 20;
    group.throughput(Throughput::Elements(n as u64));
    let mut state = SEED;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        state >> 11
    };
    // Decayed seconds of up to a few days times counts of 1 to 2^20 (CPUs to memory in MB), and
    // the sum each goes to.
    let adds: Vec<(usize, f64)> = (0..n)
        .map(|_| {
            let seconds = (next() % 300_000) as f64 * (next() as f64 / (1u64 << 53) as f64);
            ((next() as usize) % SUMS, seconds * (1u64 << (next() % 21)) as f64)
        })
        .collect();
    let mut sums = vec![ExactSum::default(); SUMS];
    group.bench_function(BenchmarkId::from_parameter(n), |b| {
        b.iter(|| {
            for &(i, x) in black_box(&adds) {
                sums[i].add(x).expect("charges are in range");
            }
        });
    });
    black_box(&sums);
    group.finish();
}

/// `parquet_roundtrip`: what `fairshare compute --tree in.parquet --out out.parquet` does.
fn parquet_roundtrip(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut group = c.benchmark_group("parquet_roundtrip");
    let params = Params::new(Algorithm::FairTree);
    for n in with_10m(vec![100_000, 1_000_000]) {
        configure(&mut group, n);
        let tree_file = dir.path().join(format!("tree-{n}.parquet"));
        let out_file = dir.path().join(format!("out-{n}.parquet"));
        let written = LazyCell::new(|| {
            parquet_tree::write(&tree_file, &generate_tree(&TreeSpec::new(n, SEED)).records, Vec::new())
                .expect("tree written")
        });
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            LazyCell::force(&written);
            b.iter(|| roundtrip(&tree_file, &out_file, &params));
        });
    }
    group.finish();
}

/// Reads the tree in `tree_file`, runs `params` and writes the association results to `out_file`.
fn roundtrip(tree_file: &Path, out_file: &Path, params: &Params) {
    let tree = read_tree(tree_file, Some(TreeFormat::Parquet)).expect("tree read");
    let result = compute(&tree, params).expect("the pass accepts the tree");
    let source = tree_file.display().to_string();
    write_parquet(out_file, &association_batch(&tree, &result), metadata(&result, &source)).expect("results written");
}

/// A scored site: the data-gen site's tree (10^5 associations, classic fair-share) and a queue of `n`
/// jobs, read from Parquet once.
struct Site {
    dir: tempfile::TempDir,
    tree: AssocTree,
    fs: fairshare_engine::pass::FairShare,
    jobs: PendingJobs,
}

fn site(n: usize) -> Site {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = generate_tree(&TreeSpec::new(100_000, SEED));
    let spec = QueueSpec { jobs: n, seed: SEED, now: NOW };
    data_gen::site::write_pending_parquet(&dir.path().join("pending.parquet"), &input, &spec).expect("queue");
    std::fs::write(dir.path().join("slurm.conf"), data_gen::site::SLURM_CONF).expect("conf");
    let tree = AssocTree::build(input).expect("tree");
    let fs = compute(&tree, &Params::new(Algorithm::Classic)).expect("pass");
    let conf = fairshare_engine::config::read_slurm_conf(&dir.path().join("slurm.conf"), None).expect("conf");
    let keys = fairshare_engine::priority::Weights::from_conf(&conf).tres_keys();
    let jobs = PendingJobs::read(&dir.path().join("pending.parquet"), None, &keys).expect("queue");
    Site { dir, tree, fs, jobs }
}

/// The queue's observation time.
const NOW: i64 = 1_767_830_400;

/// `score`: every factor of every (job, partition, QOS) row; `copy`: the same bytes moved plainly.
fn score(c: &mut Criterion) {
    for n in with_10m(vec![100_000, 1_000_000]) {
        let site = LazyCell::new(|| site(n));
        let mut group = c.benchmark_group("score");
        configure(&mut group, n);
        let conf = LazyCell::new(|| {
            fairshare_engine::config::read_slurm_conf(&site.dir.path().join("slurm.conf"), None).expect("conf")
        });
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            let site = &*site;
            let prio = SlurmPriority::new(&conf, None, NOW);
            let queue = prio.prepare(&site.jobs, &site.tree, &site.fs).expect("a valid queue");
            let mut scores = fairshare_engine::priority::Scores::default();
            b.iter(|| queue.score_jobs(black_box(0..site.jobs.len()), &mut scores));
        });
        group.finish();
        let mut group = c.benchmark_group("score_prepare");
        configure(&mut group, n);
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            let site = &*site;
            let prio = SlurmPriority::new(&conf, None, NOW);
            b.iter(|| {
                prio.prepare(black_box(&site.jobs), &site.tree, &site.fs)
                    .map(|q| q.score_jobs(0..0, &mut Default::default()))
            });
        });
        group.finish();
        let mut group = c.benchmark_group("copy");
        configure(&mut group, n);
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            let jobs = &site.jobs;
            let mut to = jobs.clone();
            // Per row `score` writes nine f64 columns and one u32 column.
            let mut out = vec![0.0f64; 10 * jobs.part_ids.len()];
            b.iter(|| {
                to.user.copy_from_slice(&jobs.user);
                to.account.copy_from_slice(&jobs.account);
                to.part_ids.copy_from_slice(&jobs.part_ids);
                to.qos_ids.copy_from_slice(&jobs.qos_ids);
                to.submit_time.copy_from_slice(&jobs.submit_time);
                to.accrue_time.copy_from_slice(&jobs.accrue_time);
                to.min_nodes.copy_from_slice(&jobs.min_nodes);
                to.cpus.copy_from_slice(&jobs.cpus);
                to.time_limit.copy_from_slice(&jobs.time_limit);
                to.nice.copy_from_slice(&jobs.nice);
                to.site_factor.copy_from_slice(&jobs.site_factor);
                for (t, f) in to.tres_req.iter_mut().zip(&jobs.tres_req) {
                    t.copy_from_slice(f);
                }
                out.fill(black_box(1.0));
                black_box((&to, &out));
            });
        });
        group.finish();
        let mut group = c.benchmark_group("sprio");
        configure(&mut group, n);
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            let site = &*site;
            let prio = SlurmPriority::new(&conf, None, NOW);
            let mut scores = fairshare_engine::priority::Scores::default();
            prio.prepare(&site.jobs, &site.tree, &site.fs).expect("a valid queue").score_jobs(0..n, &mut scores);
            let format = Format::default_for(&prio.weights, false, false, false);
            let opts = SprioOptions::default();
            b.iter(|| write_sprio(&mut std::io::sink(), &scores, &site.jobs, &prio.weights, &format, &opts));
        });
        group.finish();
    }
}

criterion_group!(benches, passes, build, tree_names, exact_sum, parquet_roundtrip, score);
fn main() {
    fairshare_base::memory::tune_allocator();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
