"""`fairshare.dask.usage` on a local cluster of two worker processes: a record set split into a
hive-partitioned dataset, in any file order and any grouping, gives the bits the command gives
for the unsplit file."""

import os
import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import fairshare
import fairshare.dask

from helpers import NOW, SEED, cli_parquet

try:
    import distributed
except ImportError:
    # tests/run.py installs Dask's distributed scheduler: missing there, the venv is broken, and
    # these tests would otherwise pass by not running.
    if os.environ.get("FAIRSHARE_TEST_RUNNER"):
        raise
    pytest.skip("SKIPPED: dask.distributed is not installed (pip install 'dask[distributed]')",
                allow_module_level=True)

SITE = dict(slurm_conf=SEED / "slurm.conf", qos=SEED / "qos.txt")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """The seed site's records as one Parquet file, and split into 32 files of a
    year=/month=/day= dataset (each file a slice of the whole history)."""
    root = tmp_path_factory.mktemp("records")
    jobs = pl.read_csv(SEED / "jobs.csv", infer_schema=False).with_columns(pl.col("job_id").cast(pl.UInt64))
    whole = root / "whole.parquet"
    jobs.write_parquet(whole)
    dataset = root / "dataset"
    for k in range(32):
        part = dataset / "year=2026" / f"month={1 + k // 16:02d}" / f"day={1 + k % 16:02d}"
        part.mkdir(parents=True)
        jobs.filter(pl.int_range(pl.len()) % 32 == k).write_parquet(part / "jobs.parquet")
    return whole, dataset


@pytest.mark.parametrize("decay", ["slurm", "exact"])
def test_a_split_dataset_gives_the_commands_bits(client, records, tmp_path, decay):
    whole, dataset = records
    expected = cli_parquet(tmp_path, "usage", "--tree", str(SEED / "tree.csv"), "--jobs", str(whole),
                           "--slurm-conf", str(SITE["slurm_conf"]), "--qos", str(SITE["qos"]), "--now", NOW,
                           "--decay", decay)
    assert expected["usage"].sum() > 0
    files = fairshare.dask.record_files(dataset)
    assert len(files) == 32
    shuffled = files[:]
    random.Random(7).shuffle(shuffled)
    for given in [dataset, str(dataset / "**" / "*.parquet"), shuffled]:
        got = fairshare.dask.usage(given, SEED / "tree.csv", client=client, now=NOW, decay=decay, **SITE)
        assert_frame_equal(got, expected)
    # And so the same fair-share: factors and ranks, for each algorithm.
    for algorithm in ["fair-tree", "classic"]:
        assert_frame_equal(fairshare.compute(got, algorithm=algorithm), fairshare.compute(expected, algorithm=algorithm))
    # The same on the whole file and on regroupings of the rows into 3 and 7 files.
    assert_frame_equal(fairshare.dask.usage(whole, SEED / "tree.csv", client=client, now=NOW, decay=decay, **SITE),
                       expected)
    jobs = pl.read_parquet(whole)
    for parts in [3, 7]:
        paths = []
        for k in range(parts):
            path = tmp_path / f"regrouped-{parts}-{k}.parquet"
            jobs.filter(pl.int_range(pl.len()) % parts == k).write_parquet(path)
            paths.append(path)
        got = fairshare.dask.usage(paths, SEED / "tree.csv", client=client, now=NOW, decay=decay, fan_in=2, **SITE)
        assert_frame_equal(got, expected)
    # And as the single machine's Python call.
    assert_frame_equal(fairshare.usage(SEED / "tree.csv", whole, now=NOW, decay=decay, **SITE), expected)


def test_a_dask_dataframe_and_a_tree_in_memory(client, records):
    import dask.dataframe as dd

    whole, _ = records
    expected = fairshare.usage(SEED / "tree.csv", whole, now=NOW, **SITE)
    frame = dd.from_pandas(pl.read_parquet(whole).to_pandas(), npartitions=5)
    tree = fairshare.read_tree(SEED / "tree.csv")
    assert_frame_equal(fairshare.dask.usage(frame, tree, client=client, now=NOW, **SITE), expected)


def test_a_bad_file_fails_the_job_naming_the_file_and_row(client, records, tmp_path):
    _, dataset = records
    files = fairshare.dask.record_files(dataset)
    bad = tmp_path / "bad.parquet"
    pl.read_parquet(files[5]).with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(pl.lit("never")).otherwise(pl.col("start")).alias("start")
    ).write_parquet(bad)
    with pytest.raises(fairshare.FairshareError, match=rf"^{bad}:4: "):
        fairshare.dask.usage(files[:5] + [bad], SEED / "tree.csv", client=client, now=NOW, **SITE)


def test_flux_decays_cannot_be_split(client, records):
    _, dataset = records
    with pytest.raises(fairshare.FairshareError, match="flux's decays replay the records in time order"):
        fairshare.dask.usage(dataset, SEED / "tree.csv", client=client, now=NOW, decay="flux-clean")


def test_a_partitioned_queue_scores_as_the_whole(client, tmp_path):
    """The queue split into files, scored a file per task against the tree with its usage: the
    parts, read in order, are the command's `score --out` rows."""
    args = dict(slurm_conf=SEED / "slurm.conf", qos=SEED / "qos.txt", now=NOW)
    tree = fairshare.usage(SEED / "tree.csv", SEED / "jobs.csv", **args)  # the factor table's source
    tree_file = tmp_path / "tree.parquet"
    tree.write_parquet(tree_file)
    pending = pl.read_csv(SEED / "pending.csv", infer_schema=False)
    queue = tmp_path / "queue"
    queue.mkdir()
    for k in range(5):
        pending.filter(pl.int_range(pl.len()) // 30 == k).write_parquet(queue / f"{k}.parquet")
    expected = cli_parquet(tmp_path, "score", "--tree", str(tree_file), "--pending", str(SEED / "pending.csv"),
                           "--slurm-conf", str(args["slurm_conf"]), "--qos", str(args["qos"]), "--now", NOW)
    out = tmp_path / "scored"
    written = fairshare.dask.score(queue, tree, out=out, client=client, **args)
    assert [p.rsplit("/", 1)[1] for p in written] == [f"part-{k:05d}.parquet" for k in range(5)]
    assert_frame_equal(pl.concat([pl.read_parquet(p) for p in written]), expected)
    # A directory already there is the user's: refused, untouched.
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("mine")
    with pytest.raises(fairshare.FairshareError, match="already exists"):
        fairshare.dask.score(queue, tree, out=tmp_path / "mine", client=client, **args)
    assert (tmp_path / "mine" / "keep.txt").read_text() == "mine"


def test_a_worker_killed_mid_run_changes_nothing(records, tmp_path):
    """One worker process killed while the parts are charged: Dask reruns what it held on the
    other worker (and on the restarted one, which reads the tree again), and the usage is the
    same bits."""
    import os
    import signal
    import threading
    import time

    whole, _ = records
    jobs = pl.read_parquet(whole)
    many = pl.concat([jobs] * 100)  # 1.5·10^5 records: long enough to kill a worker mid-run
    files = []
    for k in range(40):
        path = tmp_path / f"many-{k:02d}.parquet"
        many.filter(pl.int_range(pl.len()) % 40 == k).write_parquet(path)
        files.append(path)
    many_file = tmp_path / "many.parquet"
    many.write_parquet(many_file)
    expected = fairshare.usage(SEED / "tree.csv", many_file, now=NOW, **SITE)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        pids = list(client.run(os.getpid).values())
        killer = threading.Timer(0.3, os.kill, (pids[0], signal.SIGKILL))
        killer.start()
        started = time.perf_counter()
        got = fairshare.dask.usage(files, SEED / "tree.csv", client=client, now=NOW, **SITE)
        killer.join()
        took = time.perf_counter() - started
        assert pids[0] not in client.run(os.getpid).values(), "the worker was killed"
    assert_frame_equal(got, expected)
    print(f"charged in {took:.2f} s across a killed worker")


def test_the_readme_spark_partition_function_without_spark():
    """The README's Spark example, its `charge` taken from the README and fed Arrow batches as
    mapInArrow would: the parts, serialized and merged, give `usage`'s bits."""
    import pyarrow as pa

    from helpers import ROOT

    readme = (ROOT / "README.md").read_text()
    example = readme.split("- **Spark** can run the same partition function", 1)[1].split("```python\n", 1)[1]
    example = example.split("```", 1)[0]
    code = "\n".join(line[2:] for line in example.splitlines())  # the list item's indent
    charge_def = code.split("def charge(batches):", 1)[1].split("rows = ", 1)[0]
    site = {"tree": str(SEED / "tree.csv"), "now": NOW, "jobs": "spark", "jobs_format": "parquet",
            "slurm_conf": str(SEED / "slurm.conf")}
    scope = {"pa": pa, "fs": fairshare._fairshare, "site": site}
    exec("def charge(batches):" + charge_def, scope)
    jobs = pl.read_csv(SEED / "jobs.csv", infer_schema=False).with_columns(pl.col("job_id").cast(pl.UInt64))
    batches = jobs.to_arrow().to_batches(max_chunksize=100)
    rows = [b.column(0)[0].as_py() for b in scope["charge"](batches)]
    parts = [pa.ipc.open_stream(r).read_all() for r in rows]
    usage = fairshare._frame(fairshare._fairshare.Charger(site).finish(parts))
    assert len(parts) == len(batches) > 1  # one part per batch
    assert_frame_equal(usage, fairshare.usage(SEED / "tree.csv", SEED / "jobs.csv", now=NOW,
                                              slurm_conf=SEED / "slurm.conf"))


def test_calls_one_after_another_never_share_a_site(client, records):
    """Workers keep each call's site: the next call, with other options, gets its own."""
    _, dataset = records
    for _ in range(3):
        for decay, half_life in [("slurm", "7-0"), ("exact", "7-0"), ("exact", "28-0")]:
            got = fairshare.dask.usage(dataset, SEED / "tree.csv", client=client, now=NOW, decay=decay,
                                       half_life=half_life, **SITE)
            whole = fairshare.dask.record_files(dataset)
            expected = fairshare.usage(SEED / "tree.csv", pl.concat([pl.read_parquet(f) for f in whole]), now=NOW,
                                       decay=decay, half_life=half_life, **SITE)
            assert got["usage"].to_list() == expected["usage"].to_list(), (decay, half_life)
