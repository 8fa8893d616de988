"""Charging job records against DuckDB: the same aggregation, timed side by side in one run.

The aggregation: every job's CPU-seconds under an exact half-life decay to ``--now``, summed per
(user, account). DuckDB runs it as SQL over ``read_parquet`` (a regexp for the CPU count of the
TRES string, ``exp``, ``GROUP BY``); ``fairshare usage --decay exact`` charges the same file into
data-gen's tree (no slurm.conf: a job bills its CPUs; no QOS dump: every usage factor is 1). The
script makes the data with data-gen when it is missing (never committed), checks that the two
agree on every association to a relative 1e-12, and prints both times and their ratio. Runs are
interleaved (DuckDB, fairshare, DuckDB, ...) so that a busy machine slows both alike; the best of
each is reported, and the ratio is what to compare across machines.

Beside them it times the floor under any charge of the file (``examples/page_floor.rs``): the pages
of the columns the charge reads, decompressed and nothing more, on the same threads. DuckDB's time
over that floor is the largest ratio any charge of this file could reach.

    python3 benches/vs_duckdb.py                      # 10^6 associations, 10^7 records, 2 runs each
    python3 benches/vs_duckdb.py --records 100000000  # issue 20's size (1.7 GB of Parquet)
    python3 benches/vs_duckdb.py --baseline /tmp/old/fairshare   # and another build, interleaved

``--baseline`` times a second ``fairshare`` binary (an earlier commit's, built elsewhere) in the same
interleaved runs, so a change is measured against what it changes in one sitting.

Run it with the project's venv (``~/.cache/fairshare-venv/bin/python``, which ``tests/run.py``
makes; it has duckdb and pyarrow).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "fairshare-target"))
NOW = 1767830400  # data-gen's histories end here (2026-01-08)
HALF_LIFE = 7 * 86400


def build() -> tuple[Path, Path, Path]:
    env = dict(os.environ, CARGO_TARGET_DIR=str(TARGET))
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "fairshare", "--example", "page_floor", "-p",
                    "fairshare-cli", "-p", "data-gen"], cwd=ROOT, env=env, check=True)
    release = TARGET / "release"
    return release / "fairshare", release / "data-gen", release / "examples" / "page_floor"


def make_site(data_gen: Path, associations: int, records: int) -> Path:
    site = TARGET / "bench-data" / f"site-{associations}-{records}"
    if not (site / "jobs.parquet").exists():
        print(f"making {site} with data-gen ...", file=sys.stderr)
        subprocess.run([data_gen, "site", "--associations", str(associations), "--jobs", "1", "--records", str(records),
                        "--out-dir", site], check=True)
    return site


SQL = """
WITH jobs AS (
    SELECT "user", account,
           CAST(regexp_extract(tres_alloc, 'cpu=([0-9]+)', 1) AS DOUBLE) AS cpus,
           start, least(coalesce("end", {now}), {now}) AS stop
    FROM read_parquet('{path}')
    WHERE start IS NOT NULL
)
SELECT "user", account,
       -- 1 - e^(-x) for x = rate * run: DuckDB has no expm1, and the difference of two exps loses
       -- the digits of a short job; four terms of the series are exact to 1e-16 under 1e-3.
       sum(cpus / {rate} * exp(-{rate} * ({now} - stop)) *
           CASE WHEN {rate} * (stop - start) < 1e-3
                THEN {rate} * (stop - start) * (1 - {rate} * (stop - start) / 2
                     * (1 - {rate} * (stop - start) / 3 * (1 - {rate} * (stop - start) / 4)))
                ELSE 1 - exp(-{rate} * (stop - start)) END) AS usage
FROM jobs
WHERE stop > start
GROUP BY "user", account
"""


def run_duckdb(jobs: Path, threads: int) -> tuple[float, dict[tuple[str, str], float]]:
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    rate = math.log(2) / HALF_LIFE
    began = time.perf_counter()
    rows = con.execute(SQL.format(now=NOW, rate=repr(rate), path=jobs)).fetchall()
    took = time.perf_counter() - began
    return took, {(u, a): v for u, a, v in rows}


def run_fairshare(binary: Path, site: Path, threads: int, out: Path) -> tuple[float, dict[tuple[str, str], float]]:
    args = [binary, "--threads", str(threads), "usage", "--tree", site / "tree.parquet", "--jobs",
            site / "jobs.parquet", "--decay", "exact", "--half-life", str(HALF_LIFE // 86400) + "-0", "--now",
            str(NOW), "--out", out]
    began = time.perf_counter()
    subprocess.run(args, check=True, stderr=subprocess.DEVNULL)
    took = time.perf_counter() - began
    table = pq.read_table(out, columns=["user", "account", "usage"]).to_pydict()
    usage = {(u, a): v for u, a, v in zip(table["user"], table["account"], table["usage"]) if u}
    return took, usage


def run_floor(page_floor: Path, jobs: Path, threads: int) -> float:
    """Decompresses the pages of every column the charge reads (all but ``job_id``, which it skips
    when the footer shows the ids valid, as data-gen's are)."""
    began = time.perf_counter()
    subprocess.run([page_floor, jobs, "job_id"], check=True, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, RAYON_NUM_THREADS=str(threads)))
    return time.perf_counter() - began


def agree(ours: dict, theirs: dict) -> float:
    """The largest relative difference over the associations; raises if a charged pair is
    missing from either side."""
    charged = {k for k, v in ours.items() if v != 0.0}
    missing = (charged ^ set(theirs)) - {k for k, v in theirs.items() if v == 0.0}
    if missing:
        raise SystemExit(f"the two disagree on which associations are charged: {sorted(missing)[:5]} ...")
    worst = 0.0
    for k, v in theirs.items():
        mine = ours.get(k, 0.0)
        worst = max(worst, abs(mine - v) / max(abs(v), abs(mine), 1.0))
    return worst


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--associations", type=int, default=1_000_000)
    p.add_argument("--records", type=int, default=10_000_000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--baseline", type=Path, help="another fairshare binary to time beside this build's")
    a = p.parse_args()

    binary, data_gen, page_floor = build()
    site = make_site(data_gen, a.associations, a.records)
    jobs = site / "jobs.parquet"
    size = jobs.stat().st_size
    duck, ours, floor, base = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "usage.parquet"
        for _ in range(a.runs):
            t, theirs = run_duckdb(jobs, a.threads)
            duck.append(t)
            t, mine = run_fairshare(binary, site, a.threads, out)
            ours.append(t)
            if a.baseline:
                t, before = run_fairshare(a.baseline, site, a.threads, out)
                base.append(t)
                if before != mine:
                    raise SystemExit(f"{a.baseline} charged different usage from this build")
            floor.append(run_floor(page_floor, jobs, a.threads))
    worst = agree(mine, theirs)
    if worst > 1e-12:
        raise SystemExit(f"fairshare and DuckDB differ by {worst:.3g} (relative) on some association")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}")
    print(f"data: {a.records} records of {a.associations} associations, {size / 1e9:.2f} GB of Parquet; "
          f"{a.threads} threads each; agree to {worst:.1e}")
    print(f"DuckDB {duckdb.__version__} SQL      {min(duck):7.2f} s  (runs: {', '.join(f'{t:.2f}' for t in duck)})")
    print(f"fairshare usage --decay exact {min(ours):7.2f} s  (runs: {', '.join(f'{t:.2f}' for t in ours)})")
    print(f"ratio (DuckDB / fairshare)    {min(duck) / min(ours):7.2f}")
    if base:
        print(f"baseline {a.baseline}  {min(base):7.2f} s  (runs: {', '.join(f'{t:.2f}' for t in base)}); "
              f"baseline / this build {min(base) / min(ours):.2f}; the same usage, bit for bit")
    print(f"floor: the pages decompressed {min(floor):7.2f} s  (runs: {', '.join(f'{t:.2f}' for t in floor)}); "
          f"DuckDB / floor {min(duck) / min(floor):.2f}")


if __name__ == "__main__":
    main()
