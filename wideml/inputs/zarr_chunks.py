"""Every chunk of a zarr array handed to the API must be stored: an absent chunk is refused, never read as the fill value.

zarr reads a chunk that has no stored data as the array's fill value. For a
feature store that is always an error (wideml writes every chunk, and
:func:`wideml.open_store` lists them). A plain zarr array made by the user is
ambiguous: zarr 3 skips writing a chunk equal to the fill value by default
(``write_empty_chunks=False``), so an absent chunk is either a block that really
is all fill value or data that was deleted or never written, and nothing in
the array tells the two apart. Guessing "fill" could fit silently on zeros;
guessing "missing" at worst refuses a valid array with one sentence that says
how to proceed. So an absent chunk is refused unless the array says that
absent chunks mean the fill value (attribute ``wideml = {"missing_chunks":
"fill"}``, the same key a feature store uses).

The check is one listing: of the array's folder on a local filesystem (with
each shard's index for a sharded array, :mod:`wideml.storage.integrity`), else
of the store's keys through zarr. A store that cannot list its keys is refused.

A dask array handed in is checked the same way for every zarr array its graph
reads from (:func:`check_dask_zarr_chunks`): ``da.from_zarr`` and
``da.from_array(zarr_array)`` put the array in the graph as a value of its own
("original-..." layer), or, with ``inline_array=True``, as a literal argument
of the getter's blockwise layer; after ``dask.optimize`` it sits inside fused
tasks' arguments. The graph is walked once without computing or materialising
anything (a blockwise layer is read through its task template and literal
arguments, not expanded per chunk); arrays are deduplicated by identity.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import sys
from typing import Any

from dask.blockwise import Blockwise
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from wideml.exceptions import StoreError
from wideml.runtime.cluster_check import zarr_location
from wideml.storage.integrity import _empty_inner_chunk, chunk_layout, describe_chunk, expected_chunk_keys, missing_chunk_keys


def declares_fill(X: Any) -> bool:
    """Whether the zarr array says absent chunks mean its fill value (attribute ``wideml`` with ``missing_chunks: "fill"``)."""
    try:
        marks = X.attrs.get("wideml")
    except Exception:  # noqa: BLE001 - unreadable attributes declare nothing
        return False
    return isinstance(marks, dict) and marks.get("missing_chunks") == "fill"


def _where(X: Any) -> str:
    """``at /abs/path`` of a local array, else ``in a MemoryStore (path 'x')``."""
    location = zarr_location(X)
    if location is not None:
        return "at " + os.path.normpath(os.path.join(os.path.abspath(location[0]), location[1] or ""))
    store = getattr(getattr(X, "store_path", None), "store", None)
    path = getattr(getattr(X, "store_path", None), "path", "")
    return f"in a {type(store).__name__}" + (f" (path {path!r})" if path else "")


def _missing_error(X: Any, key: tuple, grid: tuple, more: int, unit: str = "chunk") -> StoreError:

    fill = getattr(getattr(X, "metadata", None), "fill_value", None)
    fill = getattr(fill, "item", lambda: fill)() if fill is not None else 0
    extra = f" and {more} more" if more > 0 else ""
    return StoreError(
        f"{describe_chunk(key, X.shape, grid, unit)}{extra} of the zarr array {_where(X)} has no stored data, so zarr would "
        f"read it as the fill value {fill!r}; if that block really is all {fill!r}, write it explicitly (zarr skips chunks equal to "
        "the fill value unless write_empty_chunks=True) or set the array's attribute wideml = {'missing_chunks': 'fill'}, "
        "otherwise restore the array from a copy."
    )


def _local_layout(X: Any):
    """The chunk-file layout of a zarr array on a local folder, or None (not local, or a layout wideml does not list)."""
    location = zarr_location(X)
    if location is None:
        return None
    array_dir = os.path.join(os.path.abspath(location[0]), location[1] or "")
    for name in ("zarr.json", ".zarray"):
        try:
            with open(os.path.join(array_dir, name)) as f:
                return chunk_layout(array_dir, json.load(f))
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return None
    return None


def _listed_keys(X: Any) -> set[str]:
    """The store keys under the array's path (one listing through zarr); refuses a store that cannot list."""
    from zarr.core.sync import sync

    store = X.store_path.store
    if not getattr(store, "supports_listing", False):
        raise StoreError(f"the zarr array {_where(X)} is on a store that cannot list its chunks, so a missing "
                         "chunk could not be told from stored data; copy it to a local folder or pass a numpy array.")
    prefix = X.store_path.path.rstrip("/") + "/" if X.store_path.path else ""

    async def listing():
        return [key async for key in store.list_prefix(prefix)]

    return {key[len(prefix):] for key in sync(listing())}


def check_zarr_chunks(X: Any) -> None:
    """Raise StoreError naming the first chunk of the zarr array ``X`` that has no stored data (see the module docstring).

    Parameters
    ----------
    X : zarr.Array
        An array handed to the API (after :func:`~wideml.inputs.external.absolute_zarr`).

    Raises
    ------
    StoreError
        A chunk (or shard, or a sharded array's inner chunk) is absent and the
        array does not declare that absent chunks mean the fill value, or the
        store cannot list its keys.
    """
    if not all(int(n) for n in X.shape) or declares_fill(X):
        return

    layout = _local_layout(X)
    if layout is not None:
        missing = missing_chunk_keys(layout)
        if missing:
            raise _missing_error(X, missing[0], layout.grid, len(missing) - 1, layout.unit)
        if layout.inner is not None:
            for key in sorted(expected_chunk_keys(layout.shape, layout.grid)):
                inner = _empty_inner_chunk(layout, key)
                if inner is not None:
                    raise _missing_error(X, inner, layout.inner, 0)
        return
    grid = tuple(int(c) for c in (getattr(X, "shards", None) or X.chunks))
    present = _listed_keys(X)
    counts = [-(-int(n) // g) for n, g in zip(X.shape, grid)]
    missing = [key for key in itertools.product(*(range(k) for k in counts)) if X.metadata.encode_chunk_key(key) not in present]
    if missing:
        raise _missing_error(X, missing[0], grid, len(missing) - 1, "shard" if getattr(X, "shards", None) else "chunk")


#: How deep the walk looks into nested task arguments (a getter's arguments, a fused subgraph's tasks).
_MAX_DEPTH = 12


_SKIP, _ZARR, _TASK, _DATA, _ITEMS, _VALUES, _PARTIAL = range(7)


class _Never:
    """A type no graph value has."""

class _Walk:
    """One walk over a graph's values: the zarr arrays found (by id), and each value type's kind, decided once per type."""
    def __init__(self, zarr_types: tuple) -> None:
        try:
            from dask._task_spec import DataNode, Task
        except ImportError:  # dask before the task spec (2024.12): tasks are tuples
            DataNode = Task = _Never  # noqa: N806
        self.found: dict[int, Any] = {}
        self._rules = ((zarr_types, _ZARR), (Task, _TASK), (DataNode, _DATA), ((tuple, list, set, frozenset), _ITEMS),
                       (dict, _VALUES), (functools.partial, _PARTIAL))
        self._kinds: dict[type, int] = {}

    def _kind(self, typ: type) -> int:
        kind = self._kinds.get(typ)
        if kind is None:
            kind = next((k for types, k in self._rules if issubclass(typ, types)), _SKIP)
            self._kinds[typ] = kind
        return kind

    def collect(self, value: Any, depth: int = 0) -> None:
        """Add every zarr array in ``value``: itself, or inside task arguments (a Task's func, args, kwargs) and containers."""
        kind = self._kind(type(value))
        if kind == _SKIP:
            return
        if kind == _ZARR:
            self.found.setdefault(id(value), value)
            return
        if depth >= _MAX_DEPTH:
            return
        depth += 1
        if kind == _TASK:  # also List/Tuple/Dict/Set containers, and fused subgraphs (a dict in args)
            self.collect(value.func, depth)
            items = itertools.chain(value.args, value.kwargs.values())
        elif kind == _DATA:
            items = (value.value,)
        elif kind == _ITEMS:  # also legacy (func, *args) tasks
            items = value
        elif kind == _VALUES:
            items = value.values()
        else:
            items = (value.args, value.keywords)
        for item in items:
            self.collect(item, depth)


def _zarr_types() -> tuple:
    """The zarr array classes, or () when zarr was never imported (then no graph can hold a zarr array)."""
    zarr = sys.modules.get("zarr")
    if zarr is None:
        return ()
    return tuple(t for t in (getattr(zarr, "Array", None), getattr(zarr, "AsyncArray", None)) if isinstance(t, type))


def zarr_arrays_in_graph(X: Any) -> list:
    """Every distinct zarr array (by identity) that the dask collection ``X``'s graph reads from; nothing is computed.

    Parameters
    ----------
    X : dask.array.Array
        Any dask collection.

    Returns
    -------
    list of zarr.Array
        In the order found; empty for a graph over numpy, h5py or wideml's own readers.
    """
    zarr_types = _zarr_types()
    if not zarr_types:
        return []
    walk = _Walk(zarr_types)
    graph = X.__dask_graph__()
    layers = graph.layers.values() if isinstance(graph, HighLevelGraph) else [graph]
    for layer in layers:
        if isinstance(layer, Blockwise):  # never expanded: its template and its literal (non-indexed) arguments
            walk.collect(getattr(layer, "task", None))
            walk.collect(getattr(layer, "dsk", None))  # the template of dask before the task spec
            for value, index in layer.indices:
                if index is None:
                    walk.collect(value)
            continue
        mapping = layer.mapping if isinstance(layer, MaterializedLayer) else layer
        for value in mapping.values():
            walk.collect(value)
    return list(walk.found.values())


def check_dask_zarr_chunks(X: Any) -> None:
    """Run :func:`check_zarr_chunks` on every zarr array the dask array ``X`` reads from (see the module docstring).

    Parameters
    ----------
    X : dask.array.Array
        A dask array handed to the API; walked once, nothing computed. A
        FeatureStore's ``X`` reads through wideml's own reader (its chunks
        were checked by ``open_store``), so its walk finds nothing to check.

    Raises
    ------
    StoreError
        As :func:`check_zarr_chunks`, for the first such array with an absent chunk.
    """
    for array in zarr_arrays_in_graph(X):
        check_zarr_chunks(array)


__all__ = ["check_dask_zarr_chunks", "check_zarr_chunks", "declares_fill", "zarr_arrays_in_graph"]
