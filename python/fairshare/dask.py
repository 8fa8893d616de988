"""Usage on Dask: a Parquet record set charged one task per file, the parts' exact sums
tree-reduced, the same bits as :func:`fairshare.usage` on the whole set on one machine.

Each task charges one file with the engine (``fairshare._fairshare.Charger``): the site's options,
the tree included, are scattered to the workers once, and each worker reads the tree once and
keeps it for all its tasks. A task returns the exact sums of its file (four 64-bit limbs per
association, a few tens of bytes per association); pairs of them are merged by further tasks
until one is left, which the client writes into the tree. Integer sums do not depend on how the
records were cut into files, on the order the tasks finish or merge, nor on the worker count.
"""

from __future__ import annotations

import glob as _glob
import os
import uuid
from pathlib import Path

import polars as pl
import pyarrow as pa

from . import _fairshare, _frame, _options

__all__ = ["usage", "score", "record_files"]

# Per worker process: the charger or scorer of each call's site (by the call's unique key), built
# on the call's first task there; the last few are kept, so a worker does not hold every tree.
_KEEP = 2
_CHARGERS: dict[str, _fairshare.Charger] = {}
_SCORERS: dict[str, _fairshare.Scorer] = {}


def _cached(cache: dict, key: str, make):
    if key not in cache:
        while len(cache) >= _KEEP:
            del cache[next(iter(cache))]
        cache[key] = make()
    return cache[key]


def record_files(records) -> list[str]:
    """The Parquet files of ``records``: a file, a glob, a directory (searched recursively, as a
    hive-partitioned dataset such as ``year=/month=/day=`` is laid out), or a list of those.
    Sorted, so the task list is the same on every run (the result does not depend on it)."""
    if isinstance(records, (list, tuple)):
        files = [f for r in records for f in record_files(r)]
    else:
        text = os.fspath(records)
        if os.path.isdir(text):
            files = [str(p) for p in Path(text).rglob("*.parquet") if p.is_file()]
        elif any(c in text for c in "*?["):
            files = [f for f in _glob.glob(text, recursive=True) if os.path.isfile(f)]
        else:
            files = [text]
    if not files:
        raise _fairshare.FairshareError(f"{records}: no Parquet files of job records")
    return sorted(set(files))


def _charger(site_key: str, options: dict) -> _fairshare.Charger:
    return _cached(_CHARGERS, site_key, lambda: _fairshare.Charger(options))


def _scatter(client, site: dict):
    """The site as the workers get it (paths as text, a tree in memory as a pyarrow Table), its
    key for the workers' caches (one per call: they never mix two calls' sites), and its future,
    sent to every worker once. The scatter takes a fresh key too: an equal site scattered by an
    earlier call may still be being released."""
    site = {k: (os.fspath(v) if isinstance(v, os.PathLike) else v) for k, v in site.items()}
    if hasattr(site.get("tree"), "__arrow_c_stream__"):
        site["tree"] = pa.table(site["tree"])  # picklable, shipped once
    [shared] = client.scatter([site], broadcast=True, hash=False)
    return site, f"fairshare-site-{uuid.uuid4()}", shared


def _charge(part, site_key: str, options: dict) -> pa.Table:
    # A file's path, or a dask.dataframe partition (pandas) as Arrow.
    if not isinstance(part, str):
        part = pa.Table.from_pandas(part, preserve_index=False)
    return pa.table(_charger(site_key, options).charge(part))


def _merge(*parts: pa.Table) -> pa.Table:
    return pa.table(_fairshare.merge_parts(list(parts)))


def usage(records, tree, *, client=None, now, fan_in: int = 8, **options) -> pl.DataFrame:
    """What :func:`fairshare.usage` returns for ``tree`` and the job records ``records`` (Parquet:
    a path, a glob, a hive-partitioned directory, a list; or a ``dask.dataframe`` of canonical
    records), charged one task per file (or partition) on ``client`` (default: the current Dask
    client), the parts merged ``fan_in`` at a time. ``options`` are :func:`fairshare.usage`'s (``decay``
    ``slurm`` or ``exact``, ``half_life``, ``slurm_conf``, ``qos``, ...); the files of
    ``slurm_conf`` and ``qos`` and a tree given as a path must be readable by the workers."""
    from dask.distributed import get_client

    client = client or get_client()
    frame = hasattr(records, "to_delayed") and hasattr(records, "npartitions")
    files = [] if frame else record_files(records)
    # The site's job records are Parquet; `jobs` only names them in messages.
    site = _options(options, tree=tree, now=now, jobs=files[0] if files else "<dask.dataframe>",
                    jobs_format="parquet")
    site, site_key, shared = _scatter(client, site)
    if frame:
        from dask import delayed

        tasks = [delayed(_charge)(p, site_key, shared) for p in records.to_delayed()]
        parts = client.compute(tasks)
    else:
        parts = client.map(_charge, files, site_key=site_key, options=shared, pure=False)
    held = list(parts)  # every level's futures stay referenced until the merge is done
    while len(parts) > 1:
        parts = [client.submit(_merge, *parts[i:i + fan_in], pure=False) for i in range(0, len(parts), fan_in)]
        held.extend(parts)
    merged = parts[0].result()
    del held
    return _frame(_charger(site_key, site).finish([merged]))


def _score(part: str, out: str, site_key: str, options: dict) -> str:
    _cached(_SCORERS, site_key, lambda: _fairshare.Scorer(options)).score_to(part, out)
    return out


def score(pending, tree, *, out, client=None, **options) -> list[str]:
    """Scores a partitioned pending queue (Parquet: a path, a glob, a hive-partitioned directory
    or a list) with Slurm's formula against the fair-share of ``tree``, one task per file, each
    writing ``out/part-NNNNN.parquet`` (the columns of ``fairshare score --out``), parts numbered
    in the sorted order of the input files: read in that order they are the rows the whole queue
    gives. ``tree`` carries the usage (the table :func:`usage` returns, or its file): every
    worker computes the factors from it once, and every worker's are the same bits. ``out`` must
    not exist yet (it is created; nothing of yours is overwritten). ``options`` are
    :func:`fairshare.score`'s (``slurm_conf`` required, ``qos``, ``now``, ``algorithm``, ...).
    Returns the files written."""
    from dask.distributed import get_client

    client = client or get_client()
    files = record_files(pending)
    out = Path(out)
    if os.path.lexists(out):
        raise _fairshare.FairshareError(f"{out}: already exists; give a new directory for the scored parts")
    out.mkdir(parents=True)
    site = _options(options, tree=tree, pending=files[0], pending_format="parquet")
    _, site_key, shared = _scatter(client, site)
    outs = [str(out / f"part-{k:05d}.parquet") for k in range(len(files))]
    tasks = client.map(_score, files, outs, site_key=site_key, options=shared, pure=False)
    return client.gather(tasks)
