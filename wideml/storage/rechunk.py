"""Rechunk feature stores with bounded memory (``wideml rechunk``), and the copy engine ingest shares.

Memory design
-------------
A copy from a source array (chunks ``(a, b)``) to a new store (chunks ``(h, c)``,
by default ``h = n_samples``: full-height feature chunks) is cut into *regions*
of the destination, each a whole number of destination chunks. Every task reads
its region from the source and writes it, so tasks write disjoint chunks and
run in parallel on any scheduler (threads, processes, a dask.distributed
cluster sharing the filesystem) with no locks.

The memory budget (``memory_limit`` or config ``wideml.memory-limit``) is shared
by the tasks that run at once: a task may use ``budget // (2 * concurrent
tasks)`` bytes (the other half is headroom), counted by :func:`task_cost` as
the block read, its encoded copy on write and the whole source chunks zarr or
HDF5 decode to cut it out. Peak memory therefore depends on the chunk sizes
and the budget, never on the number of features.

A region reads every source chunk it touches; zarr and HDF5 decode whole
chunks, so a source chunk shared by two regions is read twice.
:func:`plan_copy` weighs that I/O against memory: a direct copy with wider
regions re-reads less but holds more. When the source chunks are so wide that
a full-height stripe covering them does not fit (e.g. a store chunked as
``(10, n_features)``: each chunk is a block of whole rows), the copy runs in
**two stages** through an intermediate store chunked ``(h1, c)``: stage 1
reads blocks of ``h1`` whole rows (each source chunk once) and writes them as
``(h1, c)`` chunks; stage 2 stitches ``n / h1`` of those into each full-height
``(n, c)`` chunk. Each byte is then read twice and written twice instead of
being re-read ``b / c`` times. If even one source chunk does not fit the
budget, the plan that needs the least memory runs, with a PerformanceWarning.

Where the output is HDF5 (a single-writer format) or the source is an
in-memory array, the tasks run on local threads (h5py serialises the writes);
otherwise they run on the active scheduler through :func:`wideml.runtime.compute`.
"""

from __future__ import annotations

import os
import sys
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dask
import numpy as np
from dask.diagnostics import ProgressBar

from wideml.exceptions import PerformanceWarning, WidemlError
from wideml.runtime import compute
from wideml.runtime.owned_names import aside_name
from wideml.runtime.progress import progress_enabled
from wideml.storage import schema
from wideml.storage.atomic import check_output, remove_path
from wideml.storage.remote_write import is_remote, staging_parent
from wideml.storage.copy_plan import (
    Stage,
    concurrency,
    plan_copy,
    read_factor,
    regions,
    resolve_budget,
    task_budget,
    task_cost,
)
from wideml.storage.featurestore import open_store
from wideml.storage.reader import HDF5Reader, ZarrReader
from wideml.storage.writer import create_store, default_feature_chunk, open_x_for_write


# --------------------------------------------------------------------------- execution


#: Tasks per copy stage (each copies a run of regions one after the other), unless there are more workers.
MAX_TASKS = 64


def _open_target(target):
    if isinstance(target, str):
        return open_x_for_write(target)
    return target


def copy_region(reader, target, r0: int, r1: int, c0: int, c1: int, dtype, cast=None) -> int:
    """Read ``reader[r0:r1, c0:c1]`` and write it at the same place of ``target``; returns the bytes copied.

    ``target`` is a zarr array path (opened in the worker that runs the task) or
    an array object (h5py dataset, zarr array) on local threads. ``cast``
    (a :class:`~wideml.storage.casts.CastCheck`) turns the block into
    ``dtype``, refusing values the cast would change; without it the block is
    cast as is (a copy between equal dtypes).
    """
    block = np.asarray(reader[slice(r0, r1), slice(c0, c1)])
    block = cast(block, r0, c0) if cast is not None else block.astype(dtype, copy=False)
    _open_target(target)[r0:r1, c0:c1] = block
    return int(block.nbytes)


def run_tasks(tasks: Sequence[Any], *, label: str, local: bool) -> list:
    """Compute delayed tasks with a progress bar: on local threads, or on the active scheduler.

    Local threads are for work that cannot leave this process (an h5py output
    handle, an in-memory source); everything else goes through
    :func:`wideml.runtime.compute` and so runs on threads, processes or a cluster.
    """
    if not tasks:
        return []
    if not local:
        return list(compute(*tasks, label=label))
    if progress_enabled():
        print(f"[wideml] {label}", file=sys.stderr)
        with ProgressBar(out=sys.stderr, dt=0.5):
            return list(dask.compute(*tasks, scheduler="threads"))
    return list(dask.compute(*tasks, scheduler="threads"))


def copy_regions(reader, target, boxes: Sequence[tuple[int, int, int, int]], dtype, cast=None) -> int:
    """Task: copy several regions one after the other (memory of one region); returns the bytes copied."""
    target = _open_target(target)
    return sum(copy_region(reader, target, *box, dtype, cast) for box in boxes)


def task_groups(boxes: list, local: bool) -> list[list]:
    """Split regions into at most ``max(MAX_TASKS, 4 * concurrency)`` contiguous groups (one task each).

    Grouping keeps the task graph — and so the scheduler's memory — small
    however many features there are, while leaving many tasks per worker.
    """
    k = min(len(boxes), max(MAX_TASKS, 4 * concurrency(local)))
    size = -(-len(boxes) // max(1, k))
    return [boxes[i : i + size] for i in range(0, len(boxes), size)]


def copy_stage(reader, target, shape, region, dtype, *, label: str, local: bool, cast=None) -> None:
    """Copy all of ``reader`` (shape ``shape``) into ``target``, tiled by ``region``, in at most ``MAX_TASKS`` tasks."""
    dtype = np.dtype(dtype)
    token = uuid.uuid4().hex[:8]
    tasks = [
        dask.delayed(copy_regions, pure=False)(reader, target, group, dtype, cast, dask_key_name=f"wideml-copy-{token}-{i}")
        for i, group in enumerate(task_groups(regions(shape, region), local))
    ]
    run_tasks(tasks, label=label, local=local)


def writer_target(writer):
    """What copy tasks write into: the zarr X path of a writer (any process), or its h5py dataset (local only)."""
    return writer.x_target()


def choose_feature_chunk(n: int, p: int, itemsize: int, rows: int, budget: int, feature_chunk: int | None) -> int:
    """Features per output chunk: ``feature_chunk``, else config ``chunk-size`` capped so a chunk fits ``budget``."""
    if feature_chunk is not None:
        fc = int(feature_chunk)
        if fc < 1:
            raise WidemlError(f"feature chunk must be a positive number of features, got {feature_chunk}; pass e.g. --feature-chunk 4096.")
        return min(fc, p)
    fc = default_feature_chunk(n, p, itemsize)
    return int(max(1, min(fc, budget // max(1, 4 * rows * itemsize))))


def temp_sibling(out: str | os.PathLike, tag: str) -> Path:
    """A hidden temporary store path beside ``out`` (removed by the caller); for an object-store ``out``, in the local staging folder."""
    if is_remote(out):
        return Path(staging_parent()) / aside_name(str(out).rstrip("/").rsplit("/", 1)[-1], "partial", tag)
    out = Path(out)
    return out.with_name(aside_name(out.name, "partial", tag))


def copy_to_store(
    reader,
    shape: tuple[int, int],
    src_chunks: tuple[int, int],
    out: str | os.PathLike,
    *,
    dtype,
    feature_chunk: int | None = None,
    sample_chunk: int | None = None,
    memory_limit: int | str | None = None,
    local: bool = False,
    label: str = "copy",
    overwrite: bool = False,
    cast=None,
    **create_kwargs,
) -> Path:
    """Copy a 2-D source into a new feature store with bounded memory (one or two stages).

    Parameters
    ----------
    reader : object with ``reader[rows, cols] -> ndarray``
        Picklable (opens its file by path) unless ``local``.
    shape : (n_samples, n_features)
    src_chunks : (int, int)
        The source's chunk shape, ``(1, 1)`` when any block reads cheaply.
    out : path-like
        New store (zarr directory or ``.h5`` file).
    dtype : dtype
        Stored dtype of X.
    feature_chunk, sample_chunk : int, optional
        Output chunk shape (default: full-height chunks of about config ``chunk-size``).
    memory_limit : int or str, optional
        Budget for the whole copy (default config ``wideml.memory-limit``).
    local : bool
        Run on local threads (in-memory sources).
    label : str
        Progress-bar label.
    overwrite : bool
    cast : CastCheck, optional
        Casts source blocks to ``dtype``, refusing values the cast would change
        (:mod:`wideml.storage.casts`); checked in the first stage.
    **create_kwargs
        ``y``, ``sample_ids``, ``feature_ids``, ``feature_shape``, ``source``,
        ``compressor``, ``checksum``, ``missing_chunks_are_fill``,
        ``min_classes`` for :func:`wideml.storage.writer.create_store`.

    Returns
    -------
    Path
    """
    check_output(out, overwrite)
    n, p = int(shape[0]), int(shape[1])
    dtype = np.dtype(dtype)
    src_local, dst_local = local, schema.store_format(out) == "hdf5"
    local = src_local or dst_local
    itemsize = max(dtype.itemsize, np.dtype(getattr(reader, "dtype", dtype)).itemsize)
    budget = task_budget(resolve_budget(memory_limit), local)
    h = int(max(1, min(sample_chunk or n, n)))
    c = choose_feature_chunk(n, p, itemsize, h, budget, feature_chunk)
    stages = plan_copy((n, p), itemsize, src_chunks, (h, c), budget)
    writer = create_store(out, n_samples=n, n_features=p, dtype=dtype, feature_chunk=c, sample_chunk=h,
                          overwrite=overwrite, **create_kwargs)
    with writer:
        if len(stages) == 1:
            copy_stage(reader, writer_target(writer), (n, p), stages[0].region, dtype, label=label, local=local, cast=cast)
            return out if is_remote(out) else Path(out)
        tmp = temp_sibling(out, "stage1")
        try:
            h1, c1 = stages[0].dst_chunks
            with create_store(tmp, n_samples=n, n_features=p, dtype=dtype, feature_chunk=c1, sample_chunk=h1,
                              compressor="none", checksum=False) as mid:
                copy_stage(reader, writer_target(mid), (n, p), stages[0].region, dtype,
                           label=f"{label} (stage 1 of 2)", local=src_local, cast=cast)
            mid_reader = ZarrReader(str(tmp), schema.X_NAME, (n, p), dtype, (h1, c1))
            copy_stage(mid_reader, writer_target(writer), (n, p), stages[1].region, dtype,
                       label=f"{label} (stage 2 of 2)", local=dst_local)
        finally:
            remove_path(tmp)
    return out if is_remote(out) else Path(out)


def store_reader(store):
    """A picklable block reader over the X of an open :class:`~wideml.storage.featurestore.FeatureStore`."""
    if store.remote is not None:  # on an object store: its own reader, with the storage options it was opened with
        return store.reader
    if store.format == "zarr":
        return ZarrReader(str(store.path), schema.X_NAME, store.X.shape, store.dtype, store.stored_chunks,
                          missing=store.missing_chunks)
    return HDF5Reader(str(store.path), schema.X_NAME, store.X.shape, store.dtype, store.stored_chunks)


# --------------------------------------------------------------------------- public API


def rechunk(
    src: str | os.PathLike,
    dst: str | os.PathLike,
    *,
    feature_chunk: int | None = None,
    sample_chunk: int | None = None,
    memory_limit: int | str | None = None,
    compressor: str | None = None,
    checksum: bool | None = None,
    overwrite: bool = False,
) -> Path:
    """Copy a feature store into a new one with full-height feature chunks, in bounded memory.

    Parameters
    ----------
    src : path-like
        Existing feature store (zarr v3 directory or HDF5 file), chunked any way,
        e.g. along samples as written row block by row block.
    dst : path-like
        New store; ``.h5``/``.hdf5`` makes an HDF5 file, anything else zarr v3.
        May equal ``src`` with ``overwrite=True`` (the new store replaces the old
        one only once it is complete).
    feature_chunk : int, optional
        Features per output chunk (default: about config ``chunk-size`` bytes per
        chunk, capped to fit the memory budget).
    sample_chunk : int, optional
        Rows per output chunk (default all samples: full-height chunks).
    memory_limit : int or str, optional
        Budget such as ``"2GiB"`` (default config ``wideml.memory-limit``).
    compressor : {"none", "zstd", "lz4"}, optional
        Default config ``compressor``.
    checksum : bool, optional
        crc32c per chunk of the new store (default config ``checksum``).
    overwrite : bool, default False
        Replace an existing ``dst``.

    Returns
    -------
    Path
        ``dst``. Labels, sample and feature ids, ``feature_shape`` and the
        source provenance are copied; X values are identical.

    Notes
    -----
    See the module docstring for the memory design: one pass when a full-height
    stripe covering whole source chunks fits the budget, else two passes via an
    intermediate store beside ``dst``.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)  # rechunking is the fix the warning asks for
        store = open_store(src)
    return copy_to_store(
        store_reader(store), store.X.shape, store.stored_chunks, dst,
        dtype=store.dtype, feature_chunk=feature_chunk, sample_chunk=sample_chunk, memory_limit=memory_limit,
        label=f"rechunk {Path(src).name}", overwrite=overwrite,
        y=store.y, min_classes=1, sample_ids=store.sample_ids, feature_ids=store.feature_ids,
        feature_shape=store.feature_shape, spatial=store.spatial, feature_table=store.feature_table, source=store.attrs.get("source") or f"rechunk of {store.path}",
        compressor=compressor, checksum=checksum,
    )


__all__ = ["Stage", "copy_to_store", "plan_copy", "read_factor", "rechunk", "regions", "task_budget", "task_cost"]
