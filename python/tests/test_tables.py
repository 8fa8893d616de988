"""Tables in memory as inputs, the types of what comes back, and the rest of the API against the
command line: histories, flux scores, compare, explain's numbers, interruption."""

import _thread
import datetime
import signal
import threading
import time

import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import fairshare

from helpers import NOW, SEED, cli, cli_parquet

SITE = dict(slurm_conf=SEED / "slurm.conf", qos=SEED / "qos.txt", now=NOW)


def test_job_records_in_memory_equal_the_file():
    jobs = pl.read_csv(SEED / "jobs.csv", infer_schema=False).with_columns(pl.col("job_id").cast(pl.UInt64))
    from_file = fairshare.usage(SEED / "tree.csv", SEED / "jobs.csv", **SITE)
    for table in [jobs, jobs.to_arrow(), jobs.to_pandas()]:
        assert_frame_equal(fairshare.usage(SEED / "tree.csv", table, **SITE), from_file)
    assert from_file["usage"].sum() > 0


def test_pending_queue_in_memory_equals_the_file():
    pending = pl.read_csv(SEED / "pending.csv", infer_schema=False)
    args = dict(slurm_conf=SEED / "slurm.conf", qos=SEED / "qos.txt", jobs=SEED / "jobs.csv", now=NOW)
    from_file = fairshare.score(SEED / "tree.csv", SEED / "pending.csv", **args)
    assert_frame_equal(fairshare.score(SEED / "tree.csv", pending, **args), from_file)


def test_a_bad_row_of_a_jobs_table_is_named_by_table_and_row():
    jobs = pl.read_csv(SEED / "jobs.csv", infer_schema=False).with_columns(
        pl.when(pl.int_range(pl.len()) == 2).then(pl.lit("yesterday")).otherwise(pl.col("start")).alias("start")
    )
    with pytest.raises(fairshare.FairshareError, match=r"^<jobs table>:3: ") as raised:
        fairshare.usage(SEED / "tree.csv", jobs, **SITE)
    assert "yesterday" in str(raised.value)
    assert "fairshare-table-" not in str(raised.value)


def test_set_shares_edits_a_tree_in_memory_as_a_file():
    tree = fairshare.read_tree(SEED / "tree.csv")
    edit = {"chemistry": 500}
    assert_frame_equal(fairshare.compute(tree, set_shares=edit), fairshare.compute(SEED / "tree.csv", set_shares=edit))
    assert not fairshare.compute(tree, set_shares=edit)["fs_factor"].equals(fairshare.compute(tree)["fs_factor"])


def test_names_join_across_results_and_files(tmp_path):
    """One Arrow type for names everywhere: the run's jobs join its associations, in memory and
    as the files `fairshare run` writes, without a cast."""
    result = fairshare.run()
    users = result["associations"].filter(pl.col("user").is_not_null())
    joined = result["jobs"].join(users, on=["user", "account"], how="left")
    assert joined["fs_factor"].null_count() < joined.height
    done = cli("run", "--out-dir", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    jobs, assocs = (pl.read_parquet(tmp_path / "run" / f) for f in ["jobs.parquet", "associations.parquet"])
    assert jobs.schema["user"] == assocs.schema["user"] == pl.String
    assert_frame_equal(jobs.join(assocs, on=["user", "account"], how="left"), joined, check_column_order=False,
                       check_row_order=False)
    for name, table in [("jobs", result["jobs"]), ("associations", result["associations"])]:
        arrow = pa.table(fairshare._fairshare.run(None, {})[name])
        assert arrow.schema.field("account").type == pa.string_view(), name


def test_history_equals_the_cli_history(tmp_path):
    args = ["--tree", SEED / "tree.csv", "--jobs", SEED / "jobs.csv", "--slurm-conf", SEED / "slurm.conf"]
    out = tmp_path / "history"
    done = cli("usage", *map(str, args), "--every", "1d", "--from", "2026-01-05", "--to", "2026-01-08",
               "--out", str(out))
    assert done.returncode == 0, done.stderr
    expected = pl.read_parquet(out / "**" / "*.parquet", hive_partitioning=False).sort("as_of", maintain_order=True)
    got = fairshare.history(SEED / "tree.csv", SEED / "jobs.csv", every="1d", start="2026-01-05",
                            end=datetime.datetime(2026, 1, 8), slurm_conf=SEED / "slurm.conf")
    assert got["as_of"].n_unique() == 4
    assert_frame_equal(got, expected)
    at = fairshare.history(SEED / "tree.csv", SEED / "jobs.csv", at=["2026-01-06"], slurm_conf=SEED / "slurm.conf")
    assert_frame_equal(at, expected.filter(pl.col("as_of") == datetime.datetime(2026, 1, 6, tzinfo=datetime.timezone.utc)))


def flux_tree(tmp_path):
    """The seed tree with shares for its `parent` associations: a tree of flux-accounting's kind."""
    tree = fairshare.read_tree(SEED / "tree.csv").with_columns(parent_shares=False,
                                                                shares=pl.col("shares").clip(lower_bound=1))
    path = tmp_path / "flux-tree.parquet"
    tree.write_parquet(path)
    return tree, path


def test_flux_scores_equal_the_cli(tmp_path):
    tree, path = flux_tree(tmp_path)
    expected = cli_parquet(tmp_path, "score", "--priority", "flux", "--tree", str(path),
                           "--pending", str(SEED / "pending.csv"), "--now", NOW)
    got = fairshare.score(tree, SEED / "pending.csv", priority="flux", now=NOW)
    assert_frame_equal(got, expected)
    assert got["prio_fairshare"].sum() > 0


def test_compare_equals_the_cli(tmp_path):
    variants = ["fair-tree", "classic", "classic:dampening=4"]
    expected = cli_parquet(tmp_path, "compare", "--variants", ",".join(variants))
    got = fairshare.compare(variants)
    assert_frame_equal(got, expected)
    assert got.columns[-2:] == ["fs_classic_dampening_4", "place_classic_dampening_4"]


def test_compare_takes_flux_on_the_seed_sites_parent_shares():
    got = fairshare.compare(["fair-tree", "flux"])
    assert got.columns[-2:] == ["fs_flux", "place_flux"]
    assert got["fs_flux"].null_count() == 0


def test_explain_path_holds_the_numbers_explain_prints():
    path = fairshare.explain_path("dana")
    text = fairshare.explain("dana")
    assert path["depth"].to_list() == list(range(1, path.height + 1))
    # The text's table: a title, a header, then one line per level.
    lines = text.splitlines()[2:2 + path.height]
    for row, line in zip(path.iter_rows(named=True), lines):
        cells = line.split()
        assert cells[0].endswith(row["user"] or row["account"]), line
        assert cells[2:] == [f"{row[c]:.6f}" if c != "raw_usage" else f"{row[c]:.0f}"
                             for c in ["norm_shares", "raw_usage", "norm_usage", "effective_usage"]], line
    last = path.row(-1, named=True)
    sshare = fairshare.run()["associations"].filter(pl.col("id") == last["path_of"])
    assert last["fs_factor"] == sshare["fs_factor"][0]
    assert f"= {last['fs_factor']:.6f}" in text


def test_options_are_checked():
    with pytest.raises(fairshare.FairshareError, match='unknown option "half_lfe"; the options are tree, format'):
        fairshare.compute(SEED / "tree.csv", half_lfe="14-0")
    with pytest.raises(fairshare.FairshareError, match="dampening: expected an integer"):
        fairshare.compute(SEED / "tree.csv", dampening="four")
    with pytest.raises(fairshare.FairshareError, match="priority: unknown \"lottery\""):
        fairshare.score(SEED / "tree.csv", SEED / "pending.csv", priority="lottery", slurm_conf=SEED / "slurm.conf")


def test_now_takes_a_datetime_or_epoch_seconds():
    text = fairshare.usage(SEED / "tree.csv", SEED / "jobs.csv", **SITE)
    as_datetime = fairshare.usage(SEED / "tree.csv", SEED / "jobs.csv", **{**SITE, "now": datetime.datetime(2026, 1, 8)})
    epoch = fairshare.usage(SEED / "tree.csv", SEED / "jobs.csv", **{**SITE, "now": 1_767_830_400})
    assert_frame_equal(as_datetime, text)
    assert_frame_equal(epoch, text)


def test_records_matching_no_association_warn():
    jobs = pl.read_csv(SEED / "jobs.csv", infer_schema=False).with_columns(pl.col("job_id").cast(pl.UInt64))
    stray = jobs.head(1).with_columns(user=pl.lit("nobody-here"))
    with pytest.warns(UserWarning, match=r"1 job record\(s\) match no association"):
        fairshare.usage(SEED / "tree.csv", pl.concat([jobs, stray]), **SITE)


def test_ctrl_c_stops_a_long_charge(tmp_path):
    """A KeyboardInterrupt arriving during a charge stops it between two row groups (the charge
    asks on the calling thread, Python's main one, where handlers run): the call raises it, saying
    what it stopped, rather than finishing the charge first."""
    jobs = pl.read_csv(SEED / "jobs.csv", infer_schema=False).with_columns(pl.col("job_id").cast(pl.UInt64))
    many = pl.concat([jobs] * (2_000_000 // jobs.height + 1))
    path = tmp_path / "many.parquet"
    many.write_parquet(path, row_group_size=20_000)
    # A suite started in the background inherits SIGINT ignored, and Python then leaves it so:
    # `interrupt_main` would do nothing, and the charges below would run on. Python's own handler
    # for the test's length, then whatever was there (None: a handler Python did not set, which it
    # cannot put back).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        said = _interrupted_charges(path)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    assert said and said[-1] == "interrupted while charging job records", said


def _interrupted_charges(path):
    """What the KeyboardInterrupts said that stopped charges of `path`, up to the engine's."""
    # An interrupt landing outside a charge (between two calls, or after its last row group) is
    # Python's own, without our words: try again; only the engine says what it stopped. An attempt
    # whose interrupt never comes ends at a deadline, so that a lost one fails the test rather
    # than hangs it.
    said = []
    for _ in range(20):
        timer = threading.Timer(0.2, _thread.interrupt_main)
        timer.start()
        deadline = time.monotonic() + 10
        try:
            while time.monotonic() < deadline:
                fairshare.usage(SEED / "tree.csv", path, **SITE)
        except KeyboardInterrupt as e:
            said.append(str(e))
            if str(e) == "interrupted while charging job records":
                break
        finally:
            timer.cancel()
    return said
