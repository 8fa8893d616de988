"""fairshare: offline, exact HPC fair-share (Slurm Fair Tree and classic, flux's weighted tree).

The engine is the same Rust crate as the ``fairshare`` command; this package only converts
arguments and hands results over. Inputs are paths (every format the command line reads) or, for
trees, tables in memory (polars, pyarrow, pandas: anything with ``__arrow_c_stream__``). Results
are polars DataFrames built from the engine's Arrow arrays through the Arrow C stream interface,
without copying the columns; ``df.to_arrow()`` gives pyarrow the same buffers. Computations run
with the GIL released. A refused input raises :class:`FairshareError` with the command line's
message (file, line, problem).
"""

from __future__ import annotations

import polars as pl

from . import _fairshare
from ._fairshare import FairshareError, Table

__all__ = ["FairshareError", "Table", "read_tree", "compute", "usage", "score", "run", "explain"]
__version__ = _fairshare.__version__


def _frame(table: Table) -> pl.DataFrame:
    # polars takes the engine's batch through the C stream: its buffers, not a copy.
    return pl.DataFrame(table)


def read_tree(source, format=None) -> pl.DataFrame:
    """The association tree in ``source`` (a path or a table) as its canonical columns:
    ``id, parent_id, account, user, partition, shares, parent_shares, usage, priority``, the
    columns ``fairshare usage --out`` writes. Edit it in polars and pass it to :func:`compute`."""
    return _frame(_fairshare.read_tree(source, format))


def compute(tree, algorithm="fair-tree", dampening=1, *, depth_oblivious=False, flux_exact_sums=False,
            set_shares=None, format=None) -> pl.DataFrame:
    """The fair-share of ``tree`` (a path or a table) with ``algorithm`` (``fair-tree``,
    ``classic`` or ``flux``): the columns of ``fairshare compute --out``. ``set_shares`` is a what-if,
    ``{"ACCOUNT" or "USER@ACCOUNT": shares or "parent"}``, for a tree file."""
    return _frame(_fairshare.compute(tree, algorithm, dampening, depth_oblivious=depth_oblivious,
                                     flux_exact_sums=flux_exact_sums, set_shares=_pairs(set_shares),
                                     format=format))


def usage(tree, jobs, *, now, decay="slurm", half_life=None, slurm_conf=None, qos=None, **options) -> pl.DataFrame:
    """The tree with the usage charged from the job records ``jobs`` at ``now``: the columns of
    ``fairshare usage --out``. ``tree`` may be None for an SWF trace (the tree it implies).
    Further options, as the command line's flags: ``jobs_format``, ``swf_tree``, ``first_pass``,
    ``calc_period``, ``reset_period``, ``timezone``, ``billing`` ({partition: weights}),
    ``algorithm``, ``set_shares``, ``format`` (the tree's)."""
    options = _options(options)
    return _frame(_fairshare.usage(tree, jobs, now=now, decay=decay, half_life=half_life,
                                   slurm_conf=slurm_conf, qos=qos, **options))


def score(tree, pending, *, slurm_conf, now=None, qos=None, jobs=None, **options) -> pl.DataFrame:
    """The pending queue ``pending`` scored with Slurm's multifactor formula against the fair-share
    of ``tree`` (usage charged from ``jobs`` when given): the columns of ``fairshare score --out``,
    one row per job, partition and QOS, with the weighted ``prio_*`` factors."""
    options = _options(options)
    return _frame(_fairshare.score(tree, pending, slurm_conf=slurm_conf, now=now, qos=qos, jobs=jobs, **options))


def run(site=None, **options) -> dict:
    """The nightly run of a site, as ``fairshare run``: ``site`` is a site TOML file (None, with no
    other input: the embedded seed site); keyword arguments override it (``tree``, ``jobs``,
    ``pending``, ``slurm_conf``, ``qos``, ``now``, ``algorithm``, ``dampening``, ``decay``,
    ``half_life``, ``set_shares``, ``billing``). Returns ``{"associations": DataFrame, "jobs":
    DataFrame or None, "parameters": {name: value}}``."""
    result = _fairshare.run(site, **_options(options))
    result["associations"] = _frame(result["associations"])
    if result["jobs"] is not None:
        result["jobs"] = _frame(result["jobs"])
    return result


def _pairs(mapping):
    """A what-if mapping as the (name, value) text pairs the engine takes."""
    if mapping is None:
        return None
    return [(str(k), str(v)) for k, v in dict(mapping).items()]


def _options(options: dict) -> dict:
    for key in ("set_shares", "billing"):
        if key in options:
            options[key] = _pairs(options[key])
    return options


def explain(who, site=None, *, vs=None, **options) -> str:
    """What ``fairshare explain WHO [--vs OTHER]`` prints for the site (as :func:`run` takes it):
    why the factor of ``who`` (``USER``, ``USER@ACCOUNT`` or an account) is what it is, level by
    level, or with ``vs``, where two associations' paths part and what decided their order."""
    return _fairshare.explain(who, site, vs=vs, **_options(options))
