"""The Python package against the command line: the same inputs give the same tables.

The CLI binary is `$FAIRSHARE_BIN`, else `$CARGO_TARGET_DIR/release/fairshare` (tests/run.py builds
it). Every comparison reads the CLI's Parquet back with polars.
"""

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import fairshare

from helpers import CLI, NOW, ROOT, SEED, cli, cli_parquet


@pytest.mark.parametrize("algorithm,dampening", [("fair-tree", 1), ("classic", 1), ("classic", 4)])
def test_compute_equals_cli(tmp_path, algorithm, dampening):
    tree = SEED / "tree.csv"
    expected = cli_parquet(
        tmp_path, "compute", "--tree", str(tree), "--algo", algorithm, "--dampening", str(dampening)
    )
    got = fairshare.compute(tree, algorithm=algorithm, dampening=dampening)
    assert_frame_equal(got, expected)


def test_usage_equals_cli(tmp_path):
    files = ["--tree", SEED / "tree.csv", "--jobs", SEED / "jobs.csv", "--slurm-conf", SEED / "slurm.conf"]
    expected = cli_parquet(tmp_path, "usage", *map(str, files), "--qos", str(SEED / "qos.txt"), "--now", NOW,
                           "--half-life", "14-0")
    got = fairshare.usage(SEED / "tree.csv", SEED / "jobs.csv", now=NOW, half_life="14-0",
                          slurm_conf=SEED / "slurm.conf", qos=SEED / "qos.txt")
    assert_frame_equal(got, expected)
    assert got["usage"].sum() > 0


def test_score_equals_cli(tmp_path):
    expected = cli_parquet(
        tmp_path, "score", "--tree", str(SEED / "tree.csv"), "--pending", str(SEED / "pending.csv"),
        "--slurm-conf", str(SEED / "slurm.conf"), "--qos", str(SEED / "qos.txt"),
        "--jobs", str(SEED / "jobs.csv"), "--now", NOW,
    )
    got = fairshare.score(SEED / "tree.csv", SEED / "pending.csv", slurm_conf=SEED / "slurm.conf",
                          qos=SEED / "qos.txt", jobs=SEED / "jobs.csv", now=NOW)
    assert_frame_equal(got, expected)


def test_run_equals_cli_run(tmp_path):
    done = cli("run", "--out-dir", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    got = fairshare.run()
    assert_frame_equal(got["associations"], pl.read_parquet(tmp_path / "run" / "associations.parquet"))
    assert_frame_equal(got["jobs"], pl.read_parquet(tmp_path / "run" / "jobs.parquet"))
    assert got["parameters"]["fairshare.source"] == "<embedded default site>"


def test_site_file_run_with_a_what_if():
    base = fairshare.run(SEED / "site.toml")
    longer = fairshare.run(SEED / "site.toml", half_life="28-0")
    assert longer["parameters"]["fairshare.half_life"] == str(28 * 86400)
    assert not base["associations"]["raw_usage"].equals(longer["associations"]["raw_usage"])


@pytest.mark.parametrize("kind", ["polars", "pyarrow", "pandas", "reader"])
def test_tree_in_memory_equals_tree_file(kind):
    path = SEED / "tree.csv"
    tree = fairshare.read_tree(path)
    table = {
        "polars": lambda: tree,
        "pyarrow": lambda: tree.to_arrow(),
        "pandas": lambda: tree.to_pandas(),
        "reader": lambda: pa.RecordBatchReader.from_batches(tree.to_arrow().schema, tree.to_arrow().to_batches()),
    }[kind]()
    assert_frame_equal(fairshare.compute(table, algorithm="classic"), fairshare.compute(path, algorithm="classic"))


def test_polars_edited_tree_computes_as_the_edited_file(tmp_path):
    tree = fairshare.read_tree(SEED / "tree.csv")
    edited = tree.with_columns(
        pl.when(pl.col("account") == "chemistry", pl.col("user").is_null())
        .then(pl.lit(500, pl.UInt64))
        .otherwise(pl.col("shares"))
        .alias("shares")
    )
    file = tmp_path / "edited.parquet"
    edited.write_parquet(file)
    expected = cli_parquet(tmp_path, "compute", "--tree", str(file))
    got = fairshare.compute(edited)
    assert_frame_equal(got, expected)
    assert not got["fs_factor"].equals(fairshare.compute(tree)["fs_factor"])
    # The same what-if as an edit of the file.
    assert_frame_equal(fairshare.compute(SEED / "tree.csv", set_shares={"chemistry": 500}), expected)


def test_errors_carry_the_cli_message(tmp_path):
    bad = tmp_path / "tree.csv"
    lines = (SEED / "tree.csv").read_text().splitlines()
    lines[2] = lines[2].rsplit(",", 1)[0] + ",lots"
    bad.write_text("\n".join(lines) + "\n")
    done = cli("compute", "--tree", str(bad), "--out", str(tmp_path / "x.parquet"))
    assert done.returncode != 0
    with pytest.raises(fairshare.FairshareError) as raised:
        fairshare.compute(bad)
    message = str(raised.value)
    assert done.stderr.strip() == f"fairshare: error: {message}"
    assert message.startswith(f"{bad}:3"), message
    assert isinstance(raised.value, ValueError)


def test_table_errors_name_the_row():
    tree = fairshare.read_tree(SEED / "tree.csv").with_columns(
        pl.when(pl.int_range(pl.len()) == 4).then(None).otherwise(pl.col("account")).alias("account")
    )
    with pytest.raises(fairshare.FairshareError, match=r"^<table>:5: row 5: account is null$"):
        fairshare.compute(tree)


def test_result_columns_are_the_engines_buffers():
    """Two consumers of one result (pyarrow through the C stream, polars and back to pyarrow) see
    the same memory: nobody copied the numbers."""
    table = fairshare._fairshare.compute({"tree": str(SEED / "tree.csv"), "algorithm": "classic"})
    via_pyarrow = pa.RecordBatchReader.from_stream(table).read_all()
    via_polars = pl.DataFrame(table).to_arrow(compat_level=pl.CompatLevel.newest())
    for name in ["fs_factor", "norm_usage", "raw_usage", "id"]:
        a = via_pyarrow.column(name).chunks[0].buffers()[1]
        b = via_polars.column(name).chunks[0].buffers()[1]
        assert a.address == b.address, name
    # Names are string views, polars' own layout: polars keeps the views and the bytes they point to.
    assert via_pyarrow.schema.field("account").type == pa.string_view()
    a, b = (t.column("account").chunks[0].buffers() for t in (via_pyarrow, via_polars))
    assert [x.address for x in a[1:]] == [x.address for x in b[1:]]


def test_unknown_choice_is_refused():
    with pytest.raises(fairshare.FairshareError, match="algorithm: unknown \"fairtree\"; one of fair-tree"):
        fairshare.compute(SEED / "tree.csv", algorithm="fairtree")


def test_readme_and_analyst_examples_run(tmp_path):
    """The README's Python example and examples/analyst.py run as written (from the clone's root)."""
    readme = (ROOT / "README.md").read_text()
    example = readme.split("## Analysts: the Python package", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "readme_example.py"
    script.write_text(example)
    plot = tmp_path / "movers.png"
    for args in [[script], [ROOT / "examples" / "analyst.py", plot]]:
        done = subprocess.run([sys.executable, *map(str, args)], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip(), args
    assert plot.read_bytes().startswith(b"\x89PNG"), "the analyst's plot"
    assert len((ROOT / "examples" / "analyst.py").read_text().splitlines()) <= 40


@pytest.mark.parametrize("args", [["dana"], ["dana", "--vs", "alice"]])
def test_explain_equals_cli(args):
    done = cli("explain", *args)
    assert done.returncode == 0, done.stderr
    vs = args[2] if len(args) > 2 else None
    assert fairshare.explain(args[0], vs=vs) == done.stdout


def test_diff_equals_cli(tmp_path):
    # Two runs of the seed site a week apart: usage decays, factors and priorities move.
    runs = [tmp_path / "a", tmp_path / "b"]
    for run, now in zip(runs, [NOW, "2026-01-15T00:00:00"]):
        done = cli("run", "--site", str(SEED / "site.toml"), "--now", now, "--out-dir", str(run))
        assert done.returncode == 0, done.stderr
    done = cli("diff", str(runs[0]), str(runs[1]), "--top", "3")
    assert done.returncode == 0, done.stderr
    text = fairshare.diff(runs[0], runs[1], top=3)
    assert text == done.stdout
    assert "usage changes" in text and "\n0 usage changes" not in text
    with pytest.raises(fairshare.FairshareError, match="no-such-run"):
        fairshare.diff(runs[0], tmp_path / "no-such-run")


def test_explain_names_no_one():
    done = cli("explain", "nobody-here")
    with pytest.raises(fairshare.FairshareError) as raised:
        fairshare.explain("nobody-here")
    # The command first says what it charged, then fails with the library's message.
    assert done.stderr.strip().splitlines()[-1] == f"fairshare: error: {raised.value}"


@pytest.mark.parametrize("flags,kwargs", [
    ([], {}),
    (["-l"], {"long": True}),
    (["-l", "-P"], {"long": True, "parsable": True}),
    (["-o", "Account,User,RawShares,FairShare", "-A", "huttenhower_lab"],
     {"fields": "Account,User,RawShares,FairShare", "accounts": ["huttenhower_lab"]}),
])
def test_sshare_text_equals_cli(flags, kwargs):
    done = cli("sshare", "-a", *flags)
    assert done.returncode == 0, done.stderr
    assert fairshare.sshare(**kwargs) == done.stdout


def test_sshare_text_holds_the_computed_factors():
    import io
    text = fairshare.sshare(parsable=True, fields="Account,User,FairShare")
    printed = (pl.read_csv(io.StringIO(text), separator="|").filter(pl.col("User").is_not_null())
               .with_columns(pl.col("Account").str.strip_chars()))  # sshare indents accounts by depth
    computed = fairshare.run()["associations"].filter(pl.col("user").is_not_null())
    both = printed.join(computed, left_on=["Account", "User"], right_on=["account", "user"], how="full")
    assert both.height == computed.height == printed.height
    assert (both["FairShare"] - both["fs_factor"]).abs().max() <= 5e-7


def test_scontrol_output_is_a_slurm_conf():
    """`scontrol show config; scontrol show partition` output scores the queue as the slurm.conf it
    was printed from does, detected or named; naming the wrong format is an error."""
    fixtures = ROOT / "tests" / "fixtures"
    now = (fixtures / "slurm_jobs" / "now").read_text().strip()
    scored = lambda conf, **kw: fairshare.score(  # noqa: E731
        fixtures / "slurm_jobs" / "tree.csv",
        fixtures / "slurm_jobs" / "pending.csv",
        slurm_conf=conf,
        qos=fixtures / "slurm_jobs" / "qos.txt",
        jobs=fixtures / "scontrol" / "jobs.csv",
        now=now,
        **kw,
    )
    expected = scored(fixtures / "scontrol" / "slurm.conf")
    assert_frame_equal(scored(fixtures / "scontrol" / "scontrol.txt"), expected)
    assert_frame_equal(scored(fixtures / "scontrol" / "scontrol.txt", slurm_conf_format="scontrol"), expected)
    with pytest.raises(fairshare.FairshareError):
        scored(fixtures / "scontrol" / "scontrol.txt", slurm_conf_format="slurm-conf")
    with pytest.raises(fairshare.FairshareError, match="slurm_conf_format"):
        scored(fixtures / "scontrol" / "slurm.conf", slurm_conf_format="yaml")


@pytest.mark.parametrize("assume", ["idle", "steady"])
def test_forecast_equals_cli(assume):
    """The dict holds what ``fairshare forecast --json`` prints and ``--out`` writes."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = f"{d}/t.parquet"
        done = cli("forecast", "ivan", "--assume", assume, "--steps", "6", "--target", "0.6", "--floor", "0.55",
                   "--json", "--out", out)
        assert done.returncode == 0, done.stderr
        printed = json.loads(done.stdout)
        written = pl.read_parquet(out)
    f = fairshare.forecast("ivan", assume=assume, steps=6, target=0.6, floor=0.55)
    assert f["association"] == printed["association"] == "ivan@chem_aspuru"
    assert f["reached_at"] == printed["reached_at"]
    assert f["trajectory"]["fs_factor"].to_list() == [p["fs_factor"] for p in printed["trajectory"]]
    assert f["trajectory"]["rank"].to_list() == [p["rank"] for p in printed["trajectory"]]
    assert f["trajectory"].equals(written)
    assert f["assume"] == assume
    assert f["budget"] in ("amount", "below", "unlimited")
    assert (f["budget_billing_secs"] is not None) == (f["budget"] == "amount")


def test_forecast_refuses_an_account():
    with pytest.raises(fairshare.FairshareError, match="is an account"):
        fairshare.forecast("chemistry")
