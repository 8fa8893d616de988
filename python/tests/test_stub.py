"""The type stub against the module (mypy's stubtest) and against a user's code (mypy)."""

import os
import subprocess
import sys

from helpers import ROOT

USER_CODE = '''
import datetime
import fairshare
import fairshare.dask

fairshare.compute("tree.csv", algorithm="classic", jobs="jobs.csv", now=datetime.date(2026, 1, 8))
fairshare.usage("tree.csv", "jobs.csv", now=1_767_830_400, billing={"gpu": "CPU=1.0,GRES/gpu=8.0"})
fairshare.score("tree.csv", "pending.csv", priority="flux", now="2026-01-08")
fairshare.history("tree.csv", "jobs.csv", every="1d", start="2026-01-01", end="2026-01-08")
result = fairshare.run(half_life="14-0", set_shares={"chemistry": 500, "bob@physics": "parent"})
result["associations"].height
fairshare.dask.usage("records/", "tree.csv", now="2026-01-08", decay="exact", slurm_conf="slurm.conf")
'''


def mypy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", *args], capture_output=True, text=True,
                          cwd=ROOT / "python")


def test_the_stub_matches_the_module(tmp_path):
    env = {**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "cache")}  # not beside the sources
    done = subprocess.run([sys.executable, "-m", "mypy.stubtest", "fairshare"], capture_output=True, text=True,
                          cwd=ROOT / "python", env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_stub_types_a_users_calls_and_catches_a_misspelt_option(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(USER_CODE)
    done = mypy("--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(good))
    assert done.returncode == 0, done.stdout
    bad = tmp_path / "bad.py"
    bad.write_text('import fairshare\nfairshare.compute("tree.csv", half_lfe="14-0")\n')
    done = mypy("--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(bad))
    assert done.returncode == 1 and '"half_lfe"' in done.stdout, done.stdout
