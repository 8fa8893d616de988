"""Type stub of the fairshare package (see __init__.py for the docs)."""

from os import PathLike
from typing import Any, Mapping, Optional, Protocol, Union

import polars as pl

__version__: str

class _ArrowStream(Protocol):
    def __arrow_c_stream__(self, requested_schema: Any = ...) -> Any: ...

Path = Union[str, PathLike[str]]
TreeLike = Union[Path, _ArrowStream]
Time = Union[str, int]
Edits = Mapping[str, Union[int, str]]

class FairshareError(ValueError):
    """An input or option the engine refuses; the message is the command line's."""

class Table:
    """A result as the engine made it: an Arrow C stream (``__arrow_c_stream__``)."""
    @property
    def columns(self) -> list[str]: ...
    def __len__(self) -> int: ...
    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any: ...

def read_tree(source: TreeLike, format: Optional[str] = None) -> pl.DataFrame: ...
def compute(
    tree: TreeLike,
    algorithm: str = "fair-tree",
    dampening: int = 1,
    *,
    depth_oblivious: bool = False,
    flux_exact_sums: bool = False,
    set_shares: Optional[Edits] = None,
    format: Optional[str] = None,
) -> pl.DataFrame: ...
def usage(
    tree: Optional[TreeLike],
    jobs: Path,
    *,
    now: Time,
    decay: str = "slurm",
    half_life: Optional[str] = None,
    slurm_conf: Optional[Path] = None,
    qos: Optional[Path] = None,
    jobs_format: Optional[str] = None,
    swf_tree: Optional[str] = None,
    first_pass: Optional[Time] = None,
    calc_period: Optional[str] = None,
    reset_period: Optional[str] = None,
    timezone: Optional[str] = None,
    billing: Optional[Mapping[str, str]] = None,
    algorithm: Optional[str] = None,
    set_shares: Optional[Edits] = None,
    format: Optional[str] = None,
) -> pl.DataFrame: ...
def score(
    tree: TreeLike,
    pending: Path,
    *,
    slurm_conf: Path,
    now: Optional[Time] = None,
    qos: Optional[Path] = None,
    jobs: Optional[Path] = None,
    pending_format: Optional[str] = None,
    jobs_format: Optional[str] = None,
    decay: Optional[str] = None,
    half_life: Optional[str] = None,
    calc_period: Optional[str] = None,
    reset_period: Optional[str] = None,
    timezone: Optional[str] = None,
    billing: Optional[Mapping[str, str]] = None,
    algorithm: Optional[str] = None,
    dampening: Optional[int] = None,
    set_shares: Optional[Edits] = None,
    format: Optional[str] = None,
) -> pl.DataFrame: ...
def run(
    site: Optional[Path] = None,
    *,
    tree: Optional[Path] = None,
    jobs: Optional[Path] = None,
    pending: Optional[Path] = None,
    slurm_conf: Optional[Path] = None,
    qos: Optional[Path] = None,
    now: Optional[Time] = None,
    algorithm: Optional[str] = None,
    dampening: Optional[int] = None,
    decay: Optional[str] = None,
    half_life: Optional[str] = None,
    set_shares: Optional[Edits] = None,
    billing: Optional[Mapping[str, str]] = None,
) -> dict[str, Any]: ...
def explain(
    who: str,
    site: Optional[Path] = None,
    *,
    vs: Optional[str] = None,
    tree: Optional[Path] = None,
    jobs: Optional[Path] = None,
    slurm_conf: Optional[Path] = None,
    qos: Optional[Path] = None,
    now: Optional[Time] = None,
    algorithm: Optional[str] = None,
    dampening: Optional[int] = None,
    decay: Optional[str] = None,
    half_life: Optional[str] = None,
    set_shares: Optional[Edits] = None,
) -> str: ...
