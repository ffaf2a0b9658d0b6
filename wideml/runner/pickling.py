"""Pickling a fitted estimator whose p-sized arrays live in a work folder.

A fit on a store (or any lazy input) keeps its p-sized fitted arrays
(loadings, class means, a kernel model's copy of X) in a ``wideml-fit-*``
work folder that is removed with the estimator, or when the process exits.
Pickled as they are, those arrays are graphs that read the folder by its
path, so in another process they would find nothing. scikit-learn users
pickle fitted estimators all the time (joblib, ``cross_validate(...,
return_estimator=True, n_jobs=2)``), so :func:`portable_state` replaces each
such array in the pickled state by its values (a dask array over an
in-memory copy, chunked as before) when they total at most
:data:`EMBED_LIMIT_BYTES`, and refuses with one sentence naming
``wideml.save_model`` above that. Nothing else of the state changes; the
model-group path an estimator keeps (``_group``) is dropped, since the
unpickled estimator does not own that folder.
"""

from __future__ import annotations

import copy
from typing import Any

import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator

from wideml import (
    runtime,  # runtime.compute, looked up when it runs (tests record the labels through it)
)
from wideml.exceptions import WidemlError
from wideml.runner.work_reads import SAVE_FIX, WORK_LAYER_PREFIX

#: Most bytes of work-folder arrays a pickled estimator carries as values (256 MiB).
EMBED_LIMIT_BYTES = 256 * 2**20


class NotPicklableError(WidemlError, TypeError):
    """A fitted estimator's work-folder arrays are too large to carry in a pickle."""


def reads_work_folder(arr: Any) -> bool:
    """Whether ``arr`` is a dask array whose graph reads a work folder (holds a folder handle's layer)."""
    if not isinstance(arr, da.Array):
        return False
    return any(str(name).startswith(WORK_LAYER_PREFIX) for name in arr.dask.layers)


def _walk(value: Any, found: list, seen: set) -> None:
    """Collect into ``found`` the work-folder dask arrays reachable from ``value`` (containers and wideml helper objects)."""
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, da.Array):
        if reads_work_folder(value):
            found.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _walk(v, found, seen)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _walk(v, found, seen)
    elif _is_helper(value):
        _walk(vars(value), found, seen)


def _is_helper(value: Any) -> bool:
    """A wideml object (not an estimator, which pickles through its own ``__getstate__``) whose attributes are walked."""

    return (type(value).__module__.startswith("wideml.") and hasattr(value, "__dict__") and not isinstance(value, (BaseEstimator, type)))


def _replace(value: Any, values: dict, memo: dict) -> Any:
    """``value`` with each work-folder array replaced by ``values[id(array)]`` (containers and helpers copied, not changed)."""
    if id(value) in memo:
        return memo[id(value)]
    out = value
    if isinstance(value, da.Array):
        out = values.get(id(value), value)
    elif isinstance(value, dict):
        out = type(value)((k, _replace(v, values, memo)) for k, v in value.items()) if type(value) is dict else value
    elif isinstance(value, list):
        out = [_replace(v, values, memo) for v in value]
    elif isinstance(value, tuple) and type(value) is tuple:
        out = tuple(_replace(v, values, memo) for v in value)
    elif _is_helper(value):
        out = copy.copy(value)
        out.__dict__.update({k: _replace(v, values, memo) for k, v in vars(value).items()})
    memo[id(value)] = out
    return out


def portable_state(state: dict, owner: str) -> dict:
    """``state`` (an estimator's ``__getstate__``) with its work-folder arrays carried as values.

    Parameters
    ----------
    state : dict
        The estimator's attributes, as pickle would save them.
    owner : str
        The estimator's class name, for the error message.

    Returns
    -------
    dict
        ``state`` itself when nothing reads a work folder, else a copy whose
        work-folder dask arrays are dask arrays over in-memory copies (same
        shape, chunks and dtype) and without ``_group``.

    Raises
    ------
    NotPicklableError
        When those arrays total more than :data:`EMBED_LIMIT_BYTES`.
    """
    found: list = []
    _walk(state, found, set())
    if not found:
        return state
    total = sum(int(np.prod(a.shape, dtype=np.int64)) * a.dtype.itemsize for a in found)
    if total > EMBED_LIMIT_BYTES:
        raise NotPicklableError(
            f"this fitted {owner} keeps {total / 2**20:.0f} MiB of fitted arrays in its work folder, more than the "
            f"{EMBED_LIMIT_BYTES / 2**20:.0f} MiB a pickle carries, and the folder is removed with the fitting process; "
            f"{SAVE_FIX} (a model folder), which any process can load."
        )
    computed = runtime.compute(*found, label=f"pickling {owner}: reading its fitted arrays from the work folder")
    values = {id(a): da.from_array(np.asarray(v), chunks=a.chunks, name=f"wideml-pickled-{a.name}") for a, v in zip(found, computed)}
    out = _replace(state, values, {})
    if out is state:
        out = dict(state)
    if "_group" in out:
        out["_group"] = None
    return out


__all__ = ["EMBED_LIMIT_BYTES", "NotPicklableError", "portable_state", "reads_work_folder"]
