"""Plain zarr arrays on local disk read by the raw chunk reader feature stores use, at the store's speed.

A zarr v3 array handed to the API (``zarr.open_array(...)``, or a dask array
that is only ``da.from_zarr`` / ``da.from_array`` of one) whose chunk files
hold the chunk's bytes raw or compressed once by zstd, gzip or blosc
(:func:`wideml.storage.chunkfiles.chunk_decoder`) is read by
:class:`wideml.storage.reader.ZarrReader` straight from its chunk files, each
into the task's reused buffer, instead of through zarr's own read. Its chunks
need not be full-height: a full-height block is put together from them.
Anything else (sharding, transposes, filters, zarr v2, other stores) keeps
zarr's read. The array's safety checks run first, as before (opened by an
absolute path, every chunk stored or the array declares "fill", no in-memory array on a
cluster: :mod:`wideml.inputs.external`).
"""

from __future__ import annotations

import os
from typing import Any

import dask.array as da
import numpy as np
from dask.array.core import getter, getter_inline, getter_nofancy
from dask.base import tokenize
from dask.blockwise import Blockwise
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from wideml.inputs.zarr_chunks import declares_fill, zarr_arrays_in_graph
from wideml.runtime.cluster_check import zarr_location
from wideml.storage.reader import DIRECT_READERS, ZarrReader


class PlainZarrReader(ZarrReader):
    """A :class:`~wideml.storage.reader.ZarrReader` of a user's zarr array (not a feature store's X)."""

    of_store = False

    def _what(self) -> str:
        return f"the zarr array at {os.path.join(self.path, self.name) if self.name else self.path}"


def _native(dtype: Any) -> np.dtype:
    return np.dtype(dtype.to_native_dtype() if hasattr(dtype, "to_native_dtype") else dtype)


def plain_reader(X: Any) -> PlainZarrReader | None:
    """The raw reader of the zarr array ``X`` (already made absolute and checked), or None when zarr must read it."""
    location = zarr_location(X)
    if location is None or len(X.shape) != 2 or getattr(X, "shards", None):
        return None
    root, member = os.path.abspath(location[0]), location[1] or ""
    try:
        reader = PlainZarrReader(root, member, tuple(X.shape), _native(X.dtype), tuple(int(c) for c in X.chunks),
                                 missing="fill" if declares_fill(X) else "error")
    except Exception:  # noqa: BLE001 - metadata the raw reader does not understand: zarr reads it
        return None
    return reader if reader._raw is not None else None


def raw_view(X: Any, feature_chunk: int) -> da.Array | None:
    """A dask array of full-height blocks ``feature_chunk`` wide read by the raw reader, or None (see the module docstring).

    Its name is fixed by the array's path, shape, chunks and metadata time, and
    it is registered in :data:`~wideml.storage.reader.DIRECT_READERS`, so pass
    tasks read their chunks themselves, as they do a store's.
    """
    reader = plain_reader(X)
    if reader is None:
        return None
    meta = os.path.join(reader.path, reader.name, "zarr.json")
    try:
        stamp = os.stat(meta).st_mtime_ns
    except OSError:
        return None
    n = reader.shape[0]
    name = "wideml-zarr-" + tokenize(reader.path, reader.name, reader.shape, str(reader.dtype), reader.chunks, stamp,
                                     int(feature_chunk), reader.missing)
    Xd = da.from_array(reader, chunks=(n, int(feature_chunk)), lock=False, asarray=True,
                       meta=np.empty((0, 0), dtype=reader.dtype), name=name)
    DIRECT_READERS[Xd.name] = reader
    return Xd


_GETTERS = (getter, getter_nofancy, getter_inline)


def only_zarr_read(X: da.Array) -> Any:
    """The zarr array whose plain read is all of the dask array ``X`` (``da.from_zarr(z)``, ``da.from_array(z)``), else None.

    The graph must be that read and nothing else: one getter layer named as
    ``X``, plus at most the layer holding the array itself; any slicing, cast,
    arithmetic or rechunking adds a layer and is left to dask. Nothing is computed.
    """
    graph = X.__dask_graph__()
    if not isinstance(graph, HighLevelGraph) or not 1 <= len(graph.layers) <= 2 or X.ndim != 2:
        return None
    main = graph.layers.get(X.name)
    task = getattr(main, "task", None)
    if not isinstance(main, Blockwise) or getattr(task, "func", None) not in _GETTERS:
        return None
    for key, layer in graph.layers.items():
        if key != X.name and not (isinstance(layer, MaterializedLayer) and len(layer.mapping) == 1):
            return None
    arrays = zarr_arrays_in_graph(X)
    if len(arrays) != 1:
        return None
    z = arrays[0]
    if tuple(z.shape) != tuple(X.shape) or _native(z.dtype) != np.dtype(X.dtype):
        return None
    return z


__all__ = ["PlainZarrReader", "only_zarr_read", "plain_reader", "raw_view"]
