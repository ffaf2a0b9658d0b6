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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wideml.exceptions import PerformanceWarning, WidemlError
from wideml.storage import schema
from wideml.storage.atomic import check_output, remove_path



# --------------------------------------------------------------------------- budget


def resolve_budget(memory_limit: int | str | None) -> int:
    """The memory budget in bytes: ``memory_limit`` or config ``wideml.memory-limit``."""
    from wideml.runtime.config import memory_limit_bytes, parse_bytes

    if memory_limit is None:
        return memory_limit_bytes()
    return parse_bytes(memory_limit, "memory_limit")


def concurrency(local: bool = False) -> int:
    """How many copy tasks run at once on the active scheduler (threads per worker on a cluster)."""
    import dask

    from wideml.runtime.scheduler import active_client

    client = None if local else active_client()
    if client is not None:
        try:
            threads = list(client.nthreads().values())
            return max(1, max(threads) if threads else 1)
        except Exception:  # noqa: BLE001 - a scheduler that cannot answer gets the local guess
            pass
    return max(1, int(dask.config.get("num_workers", None) or os.cpu_count() or 1))


def task_budget(budget: int, local: bool = False) -> int:
    """Bytes one copy task may use: half the budget, shared by the tasks that run at once."""
    return max(1, int(budget) // (2 * concurrency(local)))


# --------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class Stage:
    """One copy stage: destination chunks and the (rows, features) region each task copies."""

    dst_chunks: tuple[int, int]
    region: tuple[int, int]


def _axis_read(length: int, src: int, region: int) -> int:
    """Elements read along one axis when regions of ``region`` tile ``[0, length)`` over source chunks of ``src``."""
    if src <= 1 or region % src == 0:
        return length
    r0 = np.arange(0, length, region, dtype=np.int64)
    r1 = np.minimum(length, r0 + region)
    return int(np.sum(np.minimum(length, -(-r1 // src) * src) - (r0 // src) * src))


def read_factor(shape: tuple[int, int], src_chunks: tuple[int, int], region: tuple[int, int]) -> float:
    """Source bytes read / array bytes for a copy tiled by ``region``."""
    n, p = shape
    return _axis_read(n, src_chunks[0], region[0]) / n * _axis_read(p, src_chunks[1], region[1]) / p


def _max_span(length: int, src: int, region: int) -> int:
    """Most elements of source chunks (of ``src``) that one region (of ``region``, tiling from 0) touches on an axis."""
    if src <= 1:
        return min(region, length)
    r0 = np.arange(0, length, region, dtype=np.int64)
    r1 = np.minimum(length, r0 + region)
    return int(np.max(np.minimum(length, -(-r1 // src) * src) - (r0 // src) * src))


def task_cost(shape: tuple[int, int], region: tuple[int, int], src_chunks: tuple[int, int], itemsize: int) -> int:
    """Peak bytes of the largest task of a copy tiled by ``region``.

    The block read, its encoded copy on write, and the decoded source chunks
    it touches (zarr and HDF5 decode whole chunks before cutting the block
    out; memory maps and in-memory arrays, ``src_chunks == (1, 1)``, need none).
    """
    (n, p), (rows, cols), (a, b) = shape, region, src_chunks
    rows, cols = min(rows, n), min(cols, p)
    decoded = 0 if a <= 1 and b <= 1 else _max_span(n, a, rows) * _max_span(p, b, cols)
    return itemsize * (2 * rows * cols + decoded)


def _widths(p: int, b: int, c: int) -> list[int]:
    """Candidate region widths: multiples of ``c``, doubling from ``c`` and from one source chunk width."""
    top = -(-p // c) * c
    out = {top}
    for w in {c, -(-b // c) * c}:
        while w < top:
            out.add(w)
            w *= 2
    return sorted(out)


def plan_copy(
    shape: tuple[int, int],
    itemsize: int,
    src_chunks: tuple[int, int],
    dst_chunks: tuple[int, int],
    budget: int,
) -> list[Stage]:
    """Plan a bounded-memory copy between two chunkings.

    Candidates are a direct copy with regions ``(h, W)`` and, for full-height
    output from a source chunked along samples, two-stage copies through an
    intermediate store chunked ``(h1, c)`` (stage-1 regions ``(h1, W)``, stage-2
    regions one output chunk each), for ``W`` and ``h1`` on doubling grids.
    The plan with the least I/O (source reads including re-reads, plus
    writes) among those within ``budget`` wins, preferring smaller regions
    when the I/O is within 10%; if none fits, the least I/O among plans
    needing at most twice the least memory, with a PerformanceWarning.

    Parameters
    ----------
    shape : (n_samples, n_features)
    itemsize : int
        Bytes per element (of the larger of the source and destination dtypes).
    src_chunks : (int, int)
        Source chunk shape; ``(1, 1)`` for sources that read any block in place (numpy, memory maps).
    dst_chunks : (int, int)
        Destination chunk shape ``(h, c)``.
    budget : int
        Bytes one task may use (see :func:`task_budget` and :func:`task_cost`).

    Returns
    -------
    list of Stage
        One stage (direct copy) or two (the first writes the intermediate store
        chunked like its ``dst_chunks``).

    Raises
    ------
    WidemlError
        If one destination chunk alone cannot be held within ``budget``.
    """
    n, p = shape
    a, b = max(1, min(src_chunks[0], n)), max(1, min(src_chunks[1], p))
    if (a, b) != (1, 1) and a * b == 1:
        a, b = 1, 1
    h, c = dst_chunks
    if task_cost(shape, (h, c), (1, 1), itemsize) > budget:
        raise WidemlError(
            f"an output chunk of {h} x {c} values ({h * c * itemsize / 2**20:.1f} MiB) does not fit the memory budget of "
            f"{budget / 2**20:.1f} MiB per concurrent task; lower the feature chunk or raise the memory limit."
        )
    widths = _widths(p, b, c)
    options: list[tuple[list[Stage], int, float]] = []  # (stages, peak bytes per task, I/O in units of X)
    for w in widths:
        options.append(([Stage((h, c), (h, w))], task_cost(shape, (h, w), (a, b), itemsize), read_factor(shape, (a, b), (h, w)) + 1))
    if h == n and a < n and (a, b) != (1, 1):
        h1 = a
        while h1 < n:
            last = Stage((h, c), (h, c))
            mem2 = task_cost(shape, (h, c), (h1, c), itemsize)
            for w in widths:
                mem1 = task_cost(shape, (h1, w), (a, b), itemsize)
                io = read_factor(shape, (a, b), (h1, w)) + 3
                options.append(([Stage((h1, c), (h1, w)), last], max(mem1, mem2), io))
            h1 *= 2
    fitting = [o for o in options if o[1] <= budget]
    if fitting:
        best = min(o[2] for o in fitting)
        return min((o for o in fitting if o[2] <= 1.1 * best), key=lambda o: (o[1], o[2]))[0]
    least = min(o[1] for o in options)
    stages, mem, _ = min((o for o in options if o[1] <= 2 * least), key=lambda o: (o[2], o[1]))
    warnings.warn(
        f"source chunks of {a} x {b} values are too large for the memory budget of {budget / 2**20:.1f} MiB per task; "
        f"the copy will use about {mem / 2**20:.1f} MiB per task — raise the memory limit or store smaller chunks.",
        PerformanceWarning,
        stacklevel=3,
    )
    return stages


def regions(shape: tuple[int, int], region: tuple[int, int]) -> list[tuple[int, int, int, int]]:
    """Tile ``shape`` with ``region``: a list of ``(r0, r1, c0, c1)``."""
    n, p = shape
    return [(r0, min(n, r0 + region[0]), c0, min(p, c0 + region[1]))
            for c0 in range(0, p, region[1]) for r0 in range(0, n, region[0])]


# --------------------------------------------------------------------------- execution


#: Tasks per copy stage (each copies a run of regions one after the other), unless there are more workers.
MAX_TASKS = 64


def _open_target(target):
    if isinstance(target, str):
        import zarr

        return zarr.open_array(target, mode="r+")
    return target


def copy_region(reader, target, r0: int, r1: int, c0: int, c1: int, dtype) -> int:
    """Read ``reader[r0:r1, c0:c1]`` and write it at the same place of ``target``; returns the bytes copied.

    ``target`` is a zarr array path (opened in the worker that runs the task) or
    an array object (h5py dataset, zarr array) on local threads.
    """
    block = np.asarray(reader[slice(r0, r1), slice(c0, c1)])
    block = block.astype(dtype, copy=False)
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
        from wideml.runtime import compute

        return list(compute(*tasks, label=label))
    import dask

    from wideml.runtime.compute import _progress_enabled

    if _progress_enabled():
        from dask.diagnostics import ProgressBar

        print(f"[wideml] {label}", file=sys.stderr)
        with ProgressBar(out=sys.stderr, dt=0.5):
            return list(dask.compute(*tasks, scheduler="threads"))
    return list(dask.compute(*tasks, scheduler="threads"))


def copy_regions(reader, target, boxes: Sequence[tuple[int, int, int, int]], dtype) -> int:
    """Task: copy several regions one after the other (memory of one region); returns the bytes copied."""
    target = _open_target(target)
    return sum(copy_region(reader, target, *box, dtype) for box in boxes)


def task_groups(boxes: list, local: bool) -> list[list]:
    """Split regions into at most ``max(MAX_TASKS, 4 * concurrency)`` contiguous groups (one task each).

    Grouping keeps the task graph — and so the scheduler's memory — small
    however many features there are, while leaving many tasks per worker.
    """
    k = min(len(boxes), max(MAX_TASKS, 4 * concurrency(local)))
    size = -(-len(boxes) // max(1, k))
    return [boxes[i : i + size] for i in range(0, len(boxes), size)]


def copy_stage(reader, target, shape, region, dtype, *, label: str, local: bool) -> None:
    """Copy all of ``reader`` (shape ``shape``) into ``target``, tiled by ``region``, in at most ``MAX_TASKS`` tasks."""
    import dask

    dtype = np.dtype(dtype)
    token = uuid.uuid4().hex[:8]
    tasks = [
        dask.delayed(copy_regions, pure=False)(reader, target, group, dtype, dask_key_name=f"wideml-copy-{token}-{i}")
        for i, group in enumerate(task_groups(regions(shape, region), local))
    ]
    run_tasks(tasks, label=label, local=local)


def writer_target(writer):
    """What copy tasks write into: the zarr X path of a writer (any process), or its h5py dataset (local only)."""
    # The writer's temporary path is where the store lives until it is closed.
    if writer.format == "zarr":
        return str(Path(writer._tmp) / schema.X_NAME)
    return writer._x


def choose_feature_chunk(n: int, p: int, itemsize: int, rows: int, budget: int, feature_chunk: int | None) -> int:
    """Features per output chunk: ``feature_chunk``, else config ``chunk-size`` capped so a chunk fits ``budget``."""
    from wideml.storage.writer import default_feature_chunk

    if feature_chunk is not None:
        fc = int(feature_chunk)
        if fc < 1:
            raise WidemlError(f"feature chunk must be a positive number of features, got {feature_chunk}; pass e.g. --feature-chunk 4096.")
        return min(fc, p)
    fc = default_feature_chunk(n, p, itemsize)
    return int(max(1, min(fc, budget // max(1, 4 * rows * itemsize))))


def temp_sibling(out: str | os.PathLike, tag: str) -> Path:
    """A hidden temporary store path beside ``out`` (removed by the caller)."""
    out = Path(out)
    return out.with_name(f".{out.name}.partial-{uuid.uuid4().hex[:8]}-{tag}")


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
    **create_kwargs
        ``y``, ``sample_ids``, ``feature_ids``, ``feature_shape``, ``source``,
        ``compressor``, ``min_classes`` for :func:`wideml.storage.writer.create_store`.

    Returns
    -------
    Path
    """
    from wideml.storage.reader import ZarrReader
    from wideml.storage.writer import create_store

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
            copy_stage(reader, writer_target(writer), (n, p), stages[0].region, dtype, label=label, local=local)
            return Path(out)
        tmp = temp_sibling(out, "stage1")
        try:
            h1, c1 = stages[0].dst_chunks
            with create_store(tmp, n_samples=n, n_features=p, dtype=dtype, feature_chunk=c1, sample_chunk=h1,
                              compressor="none") as mid:
                copy_stage(reader, writer_target(mid), (n, p), stages[0].region, dtype,
                           label=f"{label} (stage 1 of 2)", local=src_local)
            mid_reader = ZarrReader(str(tmp), schema.X_NAME, (n, p), dtype, (h1, c1))
            copy_stage(mid_reader, writer_target(writer), (n, p), stages[1].region, dtype,
                       label=f"{label} (stage 2 of 2)", local=dst_local)
        finally:
            remove_path(tmp)
    return Path(out)


def store_reader(store):
    """A picklable block reader over the X of an open :class:`~wideml.storage.featurestore.FeatureStore`."""
    from wideml.storage.reader import HDF5Reader, ZarrReader

    cls = ZarrReader if store.format == "zarr" else HDF5Reader
    return cls(str(store.path), schema.X_NAME, store.X.shape, store.dtype, store.stored_chunks)


# --------------------------------------------------------------------------- public API


def rechunk(
    src: str | os.PathLike,
    dst: str | os.PathLike,
    *,
    feature_chunk: int | None = None,
    sample_chunk: int | None = None,
    memory_limit: int | str | None = None,
    compressor: str | None = None,
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
        Rows per output chunk (default all samples: full-height chunks, DESIGN.md §3).
    memory_limit : int or str, optional
        Budget such as ``"2GiB"`` (default config ``wideml.memory-limit``).
    compressor : {"none", "zstd", "lz4"}, optional
        Default config ``compressor``.
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
    from wideml.storage.featurestore import open_store

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)  # rechunking is the fix the warning asks for
        store = open_store(src)
    return copy_to_store(
        store_reader(store), store.X.shape, store.stored_chunks, dst,
        dtype=store.dtype, feature_chunk=feature_chunk, sample_chunk=sample_chunk, memory_limit=memory_limit,
        label=f"rechunk {Path(src).name}", overwrite=overwrite,
        y=store.y, min_classes=1, sample_ids=store.sample_ids, feature_ids=store.feature_ids,
        feature_shape=store.feature_shape, source=store.attrs.get("source") or f"rechunk of {store.path}",
        compressor=compressor,
    )


def describe_plan(stages: Sequence[Stage]) -> str:
    """One line per stage, for logs and tests."""
    return "; ".join(f"stage {i + 1}: chunks {s.dst_chunks}, regions {s.region}" for i, s in enumerate(stages))


__all__ = ["Stage", "copy_to_store", "plan_copy", "read_factor", "rechunk", "regions"]
