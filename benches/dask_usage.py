#!/usr/bin/env python3
"""`fairshare.dask.usage` on a LocalCluster against the command's `usage` on the unsplit file: the
same bits, and the time of each, for Slurm's and the exact decay.

    python3 tests/run.py            # once: builds the package into the venv
    ~/.cache/fairshare-venv/bin/python benches/dask_usage.py [--records 100000000] [--files 40]

The records are data-gen's `site` (seed 42, 10^5 associations), made in --data when missing, and
split into --files Parquet files beside them.
"""

import argparse
import os
import subprocess
import time
from pathlib import Path

import distributed
import polars as pl

import fairshare
import fairshare.dask

NOW = "1767830400"
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "fairshare-target")) / "release"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/tmp/fairshare-dask-bench"))
    parser.add_argument("--records", type=int, default=100_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    whole, parts = args.data / "jobs.parquet", args.data / "parts"
    if not whole.is_file():
        subprocess.run([str(TARGET / "data-gen"), "site", "--associations", "100000", "--jobs", "1",
                        "--records", str(args.records), "--out-dir", str(args.data)], check=True)
    if not parts.is_dir():
        parts.mkdir()
        step = -(-args.records // args.files)
        for k in range(args.files):
            pl.scan_parquet(whole).slice(k * step, step).sink_parquet(parts / f"part-{k:03d}.parquet")
    site = dict(slurm_conf=args.data / "slurm.conf", qos=args.data / "qos.txt")
    tree = args.data / "tree.parquet"
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        for decay in ["exact", "slurm"]:
            out = args.data / "cli.parquet"
            start = time.perf_counter()
            subprocess.run([str(TARGET / "fairshare"), "usage", "--tree", str(tree), "--jobs", str(whole),
                            "--slurm-conf", str(site["slurm_conf"]), "--qos", str(site["qos"]), "--now", NOW,
                            "--decay", decay, "--out", str(out)], check=True)
            cli = time.perf_counter() - start
            start = time.perf_counter()
            got = fairshare.dask.usage(parts, tree, client=client, now=NOW, decay=decay, **site)
            dask = time.perf_counter() - start
            same = pl.read_parquet(out).equals(got)
            rate = args.records / dask / args.workers / 1e6
            print(f"{decay}: command {cli:.2f} s, Dask ({args.workers} workers, {args.files} files) {dask:.2f} s "
                  f"= {dask / cli:.2f}x, {rate:.2f} M records/s per worker; same bits: {same}")
            out.unlink()


if __name__ == "__main__":
    main()
