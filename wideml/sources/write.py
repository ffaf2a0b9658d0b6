"""The one writer loop of ingest: an opened :class:`~wideml.sources.base.Source` into a new feature store.

:func:`write_source` chooses the stored dtype (:func:`output_dtype`), refuses
a cast that always loses values before anything is written
(:mod:`wideml.storage.casts`), then copies X by the source's access:

* ``FEATURES`` (arrays): regions of whole full-height output chunks, one task
  per group of regions, each block cast and checked as it is copied
  (:func:`wideml.storage.rechunk.copy_to_store`; one or two stages);
* ``ROWS`` / ``STREAM`` (per-sample files, CSV rows): blocks of whole samples,
  turned into full-height chunks by :func:`wideml.sources.rows.write_rows_to_store`.

Both write the store aside and move it into place only when complete; the
labels (checked by the source against its samples, and by the store writer
for their kind), sample and feature ids, ``feature_shape`` and spatial
reference go into the same store. Memory is bounded by the budget, never by n
or p.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import FEATURES, ROWS, STREAM, Source, first
from wideml.sources.rows import write_rows_to_store
from wideml.storage.casts import CastCheck, check_cast_dtypes
from wideml.storage.rechunk import copy_to_store


def output_dtype(source_dtype, dtype=None) -> np.dtype:
    """Stored dtype: ``dtype`` if given, else floats kept (float16 → float32), small ints → float32, others → float64."""
    if dtype is not None:
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            raise WidemlError(f"unknown dtype {dtype!r}; use float32 or float64.") from None
        if not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)):
            raise WidemlError(f"dtype {dtype} is not a real number type; use float32 or float64.")
        return dtype
    src = np.dtype(source_dtype)
    if src.kind == "f":
        return np.dtype(np.float32) if src.itemsize < 4 else src
    return np.dtype(np.float32) if src.itemsize <= 2 else np.dtype(np.float64)


def write_source(
    src: Source,
    out: str | os.PathLike,
    *,
    dtype=None,
    allow_lossy_cast: bool = False,
    sample_ids=None,
    feature_ids=None,
    **common,
) -> Path:
    """Copy ``src`` into the new store ``out`` with full-height feature chunks, in bounded memory.

    Parameters
    ----------
    src : Source
        An opened source (shape ``(n, p)``); its labels and ids go into the store.
    out : path-like
        New store; ``.h5``/``.hdf5`` makes an HDF5 file, anything else zarr v3.
    dtype : dtype, optional
        Stored dtype (default from the source's, see :func:`output_dtype`).
    allow_lossy_cast : bool
        Cast even when values change (else refused naming the first such value).
    sample_ids, feature_ids : array-like, optional
        Override the source's ids.
    **common
        ``feature_chunk``, ``memory_limit``, ``overwrite``, ``compressor``,
        ``checksum``, ``missing_chunks_are_fill``.

    Returns
    -------
    Path
        ``out``.

    Notes
    -----
    One pass over the source: each value is read once, and written once
    (random-access sources whose chunks fit the budget) or twice (row
    sources too large for memory, and sources chunked along samples, go
    through a temporary store beside ``out``, removed at the end).
    """
    dt = output_dtype(src.dtype, dtype)
    check_cast_dtypes(src.dtype, dt, src.what, allow_lossy_cast)
    meta = {"y": src.labels, "source": src.description, "sample_ids": first(sample_ids, src.sample_ids),
                "feature_ids": first(feature_ids, src.feature_ids)}
    if src.feature_shape is not None:
        meta["feature_shape"] = src.feature_shape
    if src.spatial is not None:
        meta["spatial"] = src.spatial
    if src.feature_table is not None:
        meta["feature_table"] = src.feature_table
    if src.access == FEATURES:
        return copy_to_store(src.feature_reader(), src.shape, src.chunks, out, dtype=dt, local=src.local,
                             cast=CastCheck(dt, src.what, allow_lossy_cast), label=src.title, **meta, **common)
    n, p = src.shape
    if src.access == ROWS:
        return write_rows_to_store(out, n=n, p=p, dtype=dt, read_block=src.row_reader(dt, allow_lossy_cast),
                                   label=src.title, **meta, **common)
    if src.access == STREAM:
        return write_rows_to_store(out, n=n, p=p, dtype=dt, iter_blocks=lambda rows: src.row_stream(rows, dt, allow_lossy_cast),
                                   label=src.title, **meta, **common)
    raise ValueError(f"{type(src).__name__}.access is {src.access!r}; a source hands out {FEATURES!r}, {ROWS!r} or {STREAM!r} blocks")
