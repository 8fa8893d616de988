#!/usr/bin/env python3
"""What the Python package adds to the engine: the same fair-share (10^6 associations) and score
(10^7 pending jobs) from the command line and from Python, the wall time of a call minus the
engine's own stage times (measured inside the same call), and what handing a 10^7-row result to
polars costs.

    python3 tests/run.py            # once: builds the package into the venv
    ~/.cache/fairshare-venv/bin/python benches/python_overhead.py [--data DIR] [--repeat N]

The data is data-gen's `site` (seed 42), made in DIR (default /tmp/fairshare-py-bench) when missing.
"""

import argparse
import os
import subprocess
import time
from pathlib import Path

import polars as pl
import pyarrow as pa

import fairshare

NOW = "1767830400"


def data_gen(out: Path, associations: int, jobs: int) -> None:
    target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "fairshare-target"))
    binary = target / "release" / "data-gen"
    if not binary.is_file():
        raise SystemExit(f"no data-gen at {binary}: cargo build --release -p data-gen")
    subprocess.run([str(binary), "site", "--associations", str(associations), "--jobs", str(jobs),
                    "--out-dir", str(out)], check=True)


def timed_run(repeat: int, **options) -> list[tuple[float, dict]]:
    """(wall seconds, the engine's stage seconds) of `fairshare.run` per repeat."""
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fairshare.run(**options)
        out.append((time.perf_counter() - start, result["stages"]))
    return out


def report(what: str, runs: list[tuple[float, dict]]) -> None:
    for wall, stages in runs:
        engine = sum(stages.values())
        shown = ", ".join(f"{k} {v:.3f} s" for k, v in stages.items())
        print(f"{what}: call {wall:.3f} s, engine stages {engine:.3f} s ({shown}); "
              f"Python adds {wall - engine:.3f} s = {100 * (wall - engine) / engine:.1f}%")


def cli_seconds(args: list[str]) -> float:
    target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "fairshare-target"))
    start = time.perf_counter()
    subprocess.run([str(target / "release" / "fairshare"), *args], check=True)
    return time.perf_counter() - start


def call_seconds(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/tmp/fairshare-py-bench"))
    parser.add_argument("--associations", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not (args.data / "pending.parquet").is_file():
        data_gen(args.data, args.associations, args.jobs)
    site = {name: args.data / file for name, file in
            [("tree", "tree.parquet"), ("slurm_conf", "slurm.conf"), ("qos", "qos.txt")]}
    out = args.data / "out.parquet"

    # The same work from the command line (which also writes its Parquet) and from Python
    # (which hands a DataFrame back), interleaved.
    flags = ["--tree", str(site["tree"]), "--slurm-conf", str(site["slurm_conf"]), "--qos", str(site["qos"])]
    for _ in range(args.repeat):
        cli = cli_seconds(["compute", "--tree", str(site["tree"]), "--out", str(out)])
        py = call_seconds(lambda: fairshare.compute(site["tree"]))
        print(f"compute, {args.associations} associations: command {cli:.3f} s, Python {py:.3f} s")
    for _ in range(args.repeat):
        cli = cli_seconds(["score", *flags, "--pending", str(args.data / "pending.parquet"), "--now", NOW,
                           "--out", str(out)])
        py = call_seconds(lambda: fairshare.score(site["tree"], args.data / "pending.parquet", now=NOW,
                                                  slurm_conf=site["slurm_conf"], qos=site["qos"]))
        print(f"score, {args.jobs} pending jobs: command {cli:.3f} s, Python {py:.3f} s")
    out.unlink(missing_ok=True)

    # Inside one call: what Python adds to the engine's own stage times.
    report(f"run, {args.associations} associations", timed_run(args.repeat, tree=site["tree"]))

    # Handing over: the engine's table to polars, and whether polars kept the engine's buffers.
    tables = fairshare._fairshare.run(None, {"pending": str(args.data / "pending.parquet"), "now": NOW,
                                             **{k: str(v) for k, v in site.items()}})
    jobs = tables["jobs"]
    start = time.perf_counter()
    frame = pl.DataFrame(jobs)
    took = time.perf_counter() - start
    engine = pa.RecordBatchReader.from_stream(jobs).read_all()
    back = frame.to_arrow(compat_level=pl.CompatLevel.newest())
    shared = all(
        [b.address for b in engine.column(c).chunks[0].buffers() if b]
        == [b.address for b in back.column(c).chunks[0].buffers() if b]
        for c in ["priority", "prio_fairshare", "user", "account"]
    )
    print(f"{len(jobs)} rows to polars: {1000 * took:.1f} ms; polars holds the engine's buffers: {shared}")


if __name__ == "__main__":
    main()
