"""Type stub of the fairshare package (see __init__.py for the docs)."""

import datetime
from os import PathLike
from typing import Any, Iterable, Literal, Mapping, Optional, Protocol, TypedDict, Union

import polars as pl
from typing_extensions import Unpack, final

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
__version__: str

class _ArrowStream(Protocol):
    def __arrow_c_stream__(self, requested_schema: Any = ...) -> Any: ...

_Path = Union[str, PathLike[str]]
_TableLike = Union[_Path, _ArrowStream]
_Time = Union[str, int, datetime.datetime, datetime.date]

# The site's options (the command line's flags; see the package docs), grouped so that no
# function's own parameters repeat in its keyword options.
class _Base(TypedDict, total=False):
    format: str
    jobs_format: str
    swf_tree: str
    swf_unknown_wait: str
    slurm_conf_format: str
    pending_format: str
    first_pass: _Time
    calc_period: str
    reset_period: str
    timezone: str
    flux_interval: str
    billing: Mapping[str, str]
    depth_oblivious: bool
    flux_exact_sums: bool
    set_shares: Mapping[str, Union[int, str]]

class _Pass(TypedDict, total=False):
    algorithm: str
    dampening: int

class _Decay(TypedDict, total=False):
    now: _Time
    decay: str
    half_life: str
    qos: _Path

class _ComputeOptions(_Base, _Decay, total=False):
    jobs: _TableLike
    pending: _TableLike
    slurm_conf: _Path

class _UsageOptions(_Base, _Pass, total=False):
    pending: _TableLike

class _HistoryOptions(_Base, _Pass, _Decay, total=False):
    pending: _TableLike
    slurm_conf: _Path

class _ScoreOptions(_Base, _Pass, _Decay, total=False):
    jobs: _TableLike

class _Options(_Base, _Pass, _Decay, total=False):
    """Every option: what the whole-site functions (run, explain, compare) take."""

    tree: _TableLike
    jobs: _TableLike
    pending: _TableLike
    slurm_conf: _Path

class FairshareError(ValueError):
    """An input or option the engine refuses; the message is the command line's."""

@final
class Table:
    """A result as the engine made it: an Arrow C stream (``__arrow_c_stream__``)."""
    @property
    def columns(self) -> list[str]: ...
    def __len__(self) -> int: ...
    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any: ...

class _RunResult(TypedDict):
    associations: pl.DataFrame
    jobs: Optional[pl.DataFrame]
    parameters: dict[str, str]
    stages: dict[str, float]
    charge: Optional[dict[str, int]]

def read_tree(source: _TableLike, format: Optional[str] = None) -> pl.DataFrame: ...
def compute(
    tree: _TableLike, algorithm: str = "fair-tree", dampening: int = 1, **options: Unpack[_ComputeOptions]
) -> pl.DataFrame: ...
def usage(
    tree: Optional[_TableLike],
    jobs: _TableLike,
    *,
    now: _Time,
    decay: str = "slurm",
    half_life: Optional[str] = None,
    slurm_conf: Optional[_Path] = None,
    qos: Optional[_Path] = None,
    **options: Unpack[_UsageOptions],
) -> pl.DataFrame: ...
def history(
    tree: Optional[_TableLike],
    jobs: _TableLike,
    *,
    at: Optional[Iterable[_Time]] = None,
    every: Optional[str] = None,
    start: Optional[_Time] = None,
    end: Optional[_Time] = None,
    **options: Unpack[_HistoryOptions],
) -> pl.DataFrame: ...
def score(
    tree: _TableLike,
    pending: _TableLike,
    *,
    priority: str = "slurm",
    slurm_conf: Optional[_Path] = None,
    **options: Unpack[_ScoreOptions],
) -> pl.DataFrame: ...
def run(site: Optional[_Path] = None, **options: Unpack[_Options]) -> _RunResult: ...
def explain(who: str, site: Optional[_Path] = None, *, vs: Optional[str] = None, **options: Unpack[_Options]) -> str: ...
def sshare(
    site: Optional[_Path] = None,
    *,
    long: bool = False,
    parsable: bool = False,
    fields: Optional[str] = None,
    accounts: Optional[Iterable[str]] = None,
    users: Optional[Iterable[str]] = None,
    **options: Unpack[_Options],
) -> str: ...
def explain_path(who: str, site: Optional[_Path] = None, **options: Unpack[_Options]) -> pl.DataFrame: ...
def compare(variants: Iterable[str], site: Optional[_Path] = None, **options: Unpack[_Options]) -> pl.DataFrame: ...
def diff(run_a: _Path, run_b: _Path, *, top: int = 10) -> str: ...
def forecast(
    who: str,
    site: Optional[_Path] = None,
    *,
    assume: Literal["idle", "steady"] = "idle",
    window: Optional[str] = None,
    horizon: Optional[str] = None,
    steps: int = 48,
    target: float = 0.5,
    floor: float = 0.5,
    budget_over: Optional[str] = None,
    partition: Optional[str] = None,
    **options: Unpack[_Options],
) -> dict[str, Any]: ...
