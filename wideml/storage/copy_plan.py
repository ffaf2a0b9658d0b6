"""Planning of bounded-memory copies between chunkings, shared by ingest and rechunk.

A copy is cut into regions of whole destination chunks; :func:`plan_copy`
chooses the region shape (and whether to go through an intermediate store) by
the least I/O whose per-task memory, counted by :func:`task_cost`, fits the
budget. See :mod:`wideml.storage.rechunk` for the design.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import dask
import numpy as np

from wideml.exceptions import PerformanceWarning, WidemlError
from wideml.runtime.client import active_client
from wideml.runtime.config import memory_limit_bytes, parse_bytes


# --------------------------------------------------------------------------- budget


def resolve_budget(memory_limit: int | str | None) -> int:
    """The memory budget in bytes: ``memory_limit`` or config ``wideml.memory-limit``."""
    if memory_limit is None:
        return memory_limit_bytes()
    return parse_bytes(memory_limit, "memory_limit")


def concurrency(local: bool = False) -> int:
    """How many copy tasks run at once on the active scheduler (threads per worker on a cluster)."""
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
