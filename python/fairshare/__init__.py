"""fairshare: offline, exact HPC fair-share (Slurm Fair Tree and classic, flux's weighted tree).

The engine is the same Rust crate as the ``fairshare`` command; this package only converts
arguments and hands results over. Results are polars DataFrames built from the engine's Arrow
arrays through the Arrow C stream interface, without copying the columns;
``df.to_arrow(compat_level=pl.CompatLevel.newest())`` gives pyarrow the same buffers (plain
``df.to_arrow()`` rewrites the names as ``large_string``). Names (accounts, users, partitions,
QOS) are one Arrow type in every table, ``string_view`` (polars' ``String``), so any two results
join without a cast.
Computations run with the GIL released, and Ctrl-C stops a long charge between two row groups
or blocks of records, and a score between two slices of the queue. A refused input raises
:class:`FairshareError` with the command line's message (file, line, problem).

Options
-------
Every function takes the site's options as keyword arguments, under the command line's flag
names in snake_case; what a function does not fix in its signature it takes from these:

- inputs: ``tree`` (a path in any tree format, or a table in memory: polars, pyarrow, pandas,
  anything with ``__arrow_c_stream__``; edit it and compute without writing a file), ``format``
  (the tree's, default detected), ``jobs`` (job records: a path, or a table with the columns of
  the canonical records ``job_id, user, account, partition, qos, start, end, tres_alloc``),
  ``jobs_format``, ``swf_tree``, ``swf_unknown_wait`` (``zero`` or ``skip``), ``pending`` (a
  pending queue: a path or a table),
  ``pending_format``, ``slurm_conf`` (a slurm.conf, or ``scontrol show config`` and ``show
  partition`` output), ``slurm_conf_format`` (``slurm-conf`` or ``scontrol``, default detected),
  ``qos`` (``sacctmgr show qos -P``);
- time and decay: ``now`` (text as the command line reads it, epoch seconds, or a
  ``datetime``; a naive one is UTC), ``first_pass``, ``decay`` (``slurm``, ``exact``, ``flux``,
  ``flux-clean``), ``half_life``, ``calc_period``, ``reset_period``, ``timezone``,
  ``flux_interval`` (durations as Slurm spells them: ``14-0``, ``7d``, ``300``);
- the pass: ``algorithm`` (``fair-tree``, ``classic``, ``flux``), ``dampening``,
  ``depth_oblivious``, ``flux_exact_sums``;
- what-if edits: ``set_shares`` (``{"ACCOUNT" or "USER@ACCOUNT": shares or "parent"}``),
  ``billing`` (``{partition: "CPU=1.0,Mem=0.25G,..."}``).

Tables in memory given as ``jobs`` or ``pending`` are spooled to a private temporary Parquet file
for the readers (which read row groups in parallel); errors name them ``<jobs table>`` and
``<pending table>`` with their row.
"""

from __future__ import annotations

import polars as pl

from . import _fairshare
from ._fairshare import FairshareError, Table

__all__ = [
    "FairshareError",
    "Table",
    "read_tree",
    "compute",
    "usage",
    "history",
    "score",
    "run",
    "explain",
    "sshare",
    "explain_path",
    "compare",
    "diff",
    "forecast",
]
__version__ = _fairshare.__version__


def _frame(table: Table) -> pl.DataFrame:
    # polars takes the engine's batches through the C stream: its buffers, not a copy.
    return pl.DataFrame(table)


def _options(options: dict, **fixed) -> dict:
    """The options dict the engine takes: the fixed arguments over the keyword options, None
    meaning unset."""
    merged = dict(options)
    merged.update(fixed)
    return {k: v for k, v in merged.items() if v is not None}


def read_tree(source, format=None) -> pl.DataFrame:
    """The association tree in ``source`` (a path in any tree format, or a table) as its
    canonical columns ``id, parent_id, account, user, partition, shares, parent_shares, usage,
    priority``: the columns ``fairshare usage --out`` writes. Edit it in polars and pass it as
    ``tree`` to any function."""
    return _frame(_fairshare.read_tree(source, format))


def compute(tree, algorithm="fair-tree", dampening=1, **options) -> pl.DataFrame:
    """The fair-share of ``tree`` (a path or a table) with ``algorithm`` (``fair-tree``,
    ``classic`` or ``flux``): the columns of ``fairshare compute --out``, one row per
    association in breadth-first order. With ``jobs`` (and ``now``) among the options, the usage
    is charged from them first, as Slurm holds it after its last decay pass."""
    return _frame(_fairshare.compute(_options(options, tree=tree, algorithm=algorithm, dampening=dampening)))


def usage(tree, jobs, *, now, decay="slurm", half_life=None, slurm_conf=None, qos=None, **options) -> pl.DataFrame:
    """The tree with the usage charged from the job records ``jobs`` (a path or a table) at
    ``now``: the columns of ``fairshare usage --out``. ``tree`` may be None for an SWF trace (the
    tree it implies). Billing weights come from ``slurm_conf``, usage factors from ``qos``."""
    fixed = dict(tree=tree, jobs=jobs, now=now, decay=decay, half_life=half_life, slurm_conf=slurm_conf, qos=qos)
    return _frame(_fairshare.usage(_options(options, **fixed)))


def history(tree, jobs, *, at=None, every=None, start=None, end=None, **options) -> pl.DataFrame:
    """The usage and fair-share of every association at many instants, the job records charged
    once: ``at`` (a list of times), or ``every`` (an interval such as ``"1d"``) from ``start`` to
    ``end``. The rows of ``fairshare usage --every``'s files, instant after instant, with their
    ``as_of`` (UTC) column: what a fair-share trajectory plot needs."""
    if at is not None:
        at = [str(t) if not hasattr(t, "isoformat") else t.isoformat() for t in at]
    start, end = (t.isoformat() if hasattr(t, "isoformat") else t for t in (start, end))
    return _frame(_fairshare.history(_options(options, tree=tree, jobs=jobs), at, every,
                                     None if start is None else str(start), None if end is None else str(end)))


def score(tree, pending, *, priority="slurm", slurm_conf=None, **options) -> pl.DataFrame:
    """The pending queue ``pending`` (a path or a table) scored against the fair-share of
    ``tree``: with Slurm's multifactor formula (``priority="slurm"``, weights from
    ``slurm_conf``; usage charged from ``jobs`` when given) or flux-accounting's
    (``priority="flux"``). The columns of ``fairshare score --out``: one row per job, partition
    and QOS, with the weighted ``prio_*`` factors that sum to ``priority``."""
    return _frame(_fairshare.score(_options(options, tree=tree, pending=pending, slurm_conf=slurm_conf), priority))


def run(site=None, **options) -> dict:
    """The nightly run of a site, as ``fairshare run``: ``site`` is a site TOML file (None, with
    no other input: the embedded seed site); the options override it. Returns a dict:
    ``associations`` and ``jobs`` (DataFrames; ``jobs`` None without a pending queue), the run's
    ``parameters`` (as ``run.json`` records them), ``stages`` (seconds per stage) and ``charge``
    (the job records read, charged and skipped per reason, under ``run.json``'s names:
    ``job_records``, ``job_records_charged``, ``job_records_unmatched``, ...; None without job
    records)."""
    result = _fairshare.run(site, _options(options))
    result["associations"] = _frame(result["associations"])
    if result["jobs"] is not None:
        result["jobs"] = _frame(result["jobs"])
    return result


def explain(who, site=None, *, vs=None, **options) -> str:
    """What ``fairshare explain WHO [--vs OTHER]`` prints for the site (as :func:`run` takes it):
    why the factor of ``who`` (``USER``, ``USER@ACCOUNT`` or an account) is what it is, level by
    level, or with ``vs``, where two associations' paths part and what decided their order."""
    return _fairshare.explain(who, site, vs, _options(options))


def sshare(site=None, *, long=False, parsable=False, fields=None, accounts=None, users=None, **options) -> str:
    """What ``fairshare sshare -a`` prints for the site (as :func:`run` takes it): Slurm's
    ``sshare`` text, with ``long`` (``-l``), ``parsable`` (``-P``), ``fields`` (``-o``, such as
    ``"Account,User,RawShares,FairShare"``), and only the ``accounts`` (``-A``) or ``users``
    (``-u``) given. ``pl.read_csv(io.StringIO(text), separator="|")`` reads the parsable form."""
    return _fairshare.sshare(site, long, parsable, fields, None if accounts is None else list(accounts),
                             None if users is None else list(users), _options(options))


def explain_path(who, site=None, **options) -> pl.DataFrame:
    """The numbers :func:`explain` prints, as a table: one row per level of the path from the
    root to each association ``who`` names (``path_of`` is that association's id): ``depth``,
    names, ``raw_shares``, ``norm_shares`` (S), ``raw_usage``, ``effective_usage`` (U),
    ``norm_usage``, ``level_fs``, ``place`` of ``siblings``, the ``range_lo``/``range_hi`` of the
    subtree's factors, and ``fs_factor``."""
    return _frame(_fairshare.explain_path(who, site, _options(options)))


def compare(variants, site=None, **options) -> pl.DataFrame:
    """The user associations' factors and places under each variant, on one site (as :func:`run`
    takes it): ``variants`` such as ``["fair-tree", "classic", "classic:dampening=4", "flux"]``.
    The columns of ``fairshare compare --out``: ``id, account, user, partition``, then
    ``fs_<variant>`` and ``place_<variant>`` (1 = highest factor) per variant. For what-ifs of
    shares, half-life or billing, call twice with different options and join on ``id``."""
    return _frame(_fairshare.compare(list(variants), site, _options(options)))


def diff(run_a, run_b, *, top=10) -> str:
    """What ``fairshare diff RUN_A RUN_B`` prints: what changed between two run directories
    (associations added and removed, run parameters, shares, usage, fair-share factors, job
    priorities), at most ``top`` of each, largest first."""
    return _fairshare.diff(run_a, run_b, top)


def forecast(who, site=None, *, assume="idle", window=None, horizon=None, steps=48, target=0.5, floor=0.5,
             budget_over=None, partition=None, **options) -> dict:
    """What ``fairshare forecast WHO`` answers for the site (as :func:`run` takes it): the factor
    of the user association ``who`` (``USER`` or ``USER@ACCOUNT``) from ``now`` over ``horizon``
    (default four half-lives) in ``steps`` intervals, under ``assume`` (``"idle"``: no new usage
    anywhere; ``"steady"``: everyone goes on at their rate of the last ``window``, default one
    half-life). A dict: ``association``, ``target``, ``reached_at`` (ISO 8601 UTC of the first
    instant at or above ``target``, or None), ``trajectory`` (a DataFrame: ``as_of``,
    ``fs_factor``, ``rank``, ``raw_usage``), the budget (``budget`` is ``"amount"``, ``"below"``
    or ``"unlimited"``; ``budget_billing_secs`` is the amount it can still run evenly over
    ``budget_over``, default 7 days, and end at or above ``floor``, and ``budget_cpu_hours`` the
    same at ``partition``'s CPU billing), and the parameters (``assume``, ``rate``,
    ``window_secs``, ``horizon_secs``, ...)."""
    result = _fairshare.forecast(who, site, assume, window, horizon, steps, target, floor, budget_over, partition,
                                 _options(options))
    result["trajectory"] = _frame(result["trajectory"])
    return result
