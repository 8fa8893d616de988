#!/usr/bin/env python3
"""Every test, Rust and Python, from a clone with only the Rust toolchain and python3.

    python3 tests/run.py

1. `cargo test --release --workspace --locked` (the crate, data-gen, doc tests);
2. a venv (`$FAIRSHARE_VENV`, default `~/.cache/fairshare-venv`, created or reused) with maturin,
   pytest, polars, pyarrow, pandas, DuckDB, mypy, matplotlib, prometheus-client, PyYAML and Dask from PyPI;
3. the CLI binary and the Python package (`maturin develop --release`), both built in
   `$CARGO_TARGET_DIR` (default `~/.cache/fairshare-target`), so the wheel reuses the crate's build;
4. the package's pytest suite (`python/tests`, which compares it with the CLI), and the run directory
   check (`tests/python/check_run.py`: `fairshare run --out-dir` read by pyarrow, polars and DuckDB);
5. the web report in headless Chromium (`tests/python/check_report.py`: search, numbers, no console
   error, no request outside the report; screenshots into `$FAIRSHARE_SCREENSHOTS`, default
   `$CARGO_TARGET_DIR/report-screenshots`). Without Chromium it is skipped with a loud message,
   unless `FAIRSHARE_REQUIRE_BROWSER` is set (CI sets it), which makes a missing browser a failure.

Stops at the first failure with its exit status.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [
    "maturin>=1.5,<2",
    "pytest>=7",
    "polars>=1.3",
    "pyarrow>=16",
    "pandas>=2.2",
    "duckdb>=1.0",
    "mypy>=1.15",  # the package's type stub (stubtest)
    "matplotlib>=3.7",  # examples/analyst.py's plot
    "prometheus-client>=0.20",  # its parser reads `run --prometheus`'s textfile
    "pyyaml>=6",  # reads `sshare --yaml`
    "dask[distributed]>=2024.1",  # fairshare.dask on a LocalCluster
]


def step(*args, env=None, cwd=ROOT):
    print("tests/run.py:", " ".join(str(a) for a in args), flush=True)
    done = subprocess.run([str(a) for a in args], env=env, cwd=cwd)
    if done.returncode != 0:
        sys.exit(f"tests/run.py: failed ({done.returncode}): {' '.join(str(a) for a in args)}")


def venv_python(venv: Path) -> Path:
    python = venv / "bin" / "python"
    works = python.exists() and subprocess.run([str(python), "-c", ""], capture_output=True).returncode == 0
    if not works:
        if venv.exists() and not (venv / "pyvenv.cfg").is_file():
            sys.exit(f"tests/run.py: {venv} exists and is not a Python venv")
        step(sys.executable, "-m", "venv", "--clear", venv)
    return python


def main() -> None:
    env = dict(os.environ)
    target = Path(env.setdefault("CARGO_TARGET_DIR", str(Path.home() / ".cache" / "fairshare-target")))
    step("cargo", "test", "--release", "--workspace", "--locked", env=env)

    venv = Path(env.get("FAIRSHARE_VENV", Path.home() / ".cache" / "fairshare-venv"))
    python = venv_python(venv)
    step(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input", *PACKAGES)

    step("cargo", "build", "--release", "--locked", "--bin", "fairshare", env=env)
    # maturin installs into the venv it is told of; its bin directory first finds the venv's tools.
    venv_env = dict(env, VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    step(venv / "bin" / "maturin", "develop", "--release", "--locked", "--quiet", env=venv_env, cwd=ROOT / "python")

    binary = target / "release" / "fairshare"
    venv_env["FAIRSHARE_BIN"] = str(binary)
    # Tests whose optional packages the venv was given fail, rather than skip, when one is missing.
    venv_env["FAIRSHARE_TEST_RUNNER"] = "1"
    step(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", ROOT / "python" / "tests", env=venv_env)
    with tempfile.TemporaryDirectory() as tmp:
        step(binary, "run", "--out-dir", Path(tmp) / "run", env=env)
        step(python, ROOT / "tests" / "python" / "check_run.py", Path(tmp) / "run", env=venv_env)
    browser_check(binary, env)
    print("tests/run.py: all tests passed", flush=True)


def browser_check(binary: Path, env: dict) -> None:
    """The web report in headless Chromium, or a loud skip when there is none and none is required."""
    found = any(shutil.which(n) for n in (env.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome") if n)
    if not found:
        if env.get("FAIRSHARE_REQUIRE_BROWSER"):
            sys.exit("tests/run.py: failed: FAIRSHARE_REQUIRE_BROWSER is set and no Chromium is installed")
        banner = "#" * 78
        print(f"{banner}\n# tests/run.py: SKIPPED the browser test of the web report: no Chromium found.\n"
              f"# Install it (apt-get install chromium) or set FAIRSHARE_REQUIRE_BROWSER=1 to make this fail.\n{banner}",
              flush=True)
        return
    shots = env.get("FAIRSHARE_SCREENSHOTS", str(Path(env["CARGO_TARGET_DIR"]) / "report-screenshots"))
    step(sys.executable, ROOT / "tests" / "python" / "check_report.py", binary, shots, env=env)


if __name__ == "__main__":
    main()
