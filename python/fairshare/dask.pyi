"""Type stub of fairshare.dask (see dask.py for the docs)."""

from os import PathLike
from typing import Any, Sequence, TypedDict, Union

import polars as pl
from typing_extensions import Unpack

from . import _Base, _Pass, _Path

class _ScoreDaskOptions(_Base, _Pass, total=False):
    now: Any
    slurm_conf: _Path
    qos: _Path

class _DaskOptions(_Base, _Pass, total=False):
    decay: str
    half_life: str
    slurm_conf: _Path
    qos: _Path

_Records = Union[str, PathLike[str], Sequence[Union[str, PathLike[str]]], Any]

__all__ = ["usage", "score", "record_files"]

def record_files(records: _Records) -> list[str]: ...
def usage(
    records: _Records,
    tree: Any,
    *,
    client: Any = None,
    now: Any,
    fan_in: int = 8,
    **options: Unpack[_DaskOptions],
) -> pl.DataFrame: ...
def score(
    pending: _Records,
    tree: Any,
    *,
    out: Union[str, PathLike[str]],
    client: Any = None,
    **options: Unpack[_ScoreDaskOptions],
) -> list[str]: ...
