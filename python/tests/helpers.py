"""What the package's tests share: the seed site, and the command line to compare with."""

import os
import subprocess
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seed-site"
NOW = "2026-01-08T00:00:00"
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "fairshare-target"))
CLI = Path(os.environ.get("FAIRSHARE_BIN", TARGET / "release" / "fairshare"))


def cli(*args: str) -> subprocess.CompletedProcess:
    assert CLI.is_file(), f"no fairshare binary at {CLI}: cargo build --release first"
    return subprocess.run([str(CLI), *args], capture_output=True, text=True)


def cli_parquet(tmp_path: Path, *args: str) -> pl.DataFrame:
    out = tmp_path / "out.parquet"
    done = cli(*args, "--out", str(out))
    assert done.returncode == 0, done.stderr
    return pl.read_parquet(out)
