"""Opt-in timing of what each chunk task of a pass spends its time on.

The chunk tasks of the passes mark their steps (reading the chunk, class
medians, centring, class sums, the random test matrix, matrix products, the
small corrections, writes of p-sized outputs and adding partial sums into the
accumulators) with :func:`phase`, and run their big products through
:func:`product`. Both cost one flag test when timing is off, which it is
unless a caller wraps a computation in :func:`collect`::

    with collect() as times:
        LOL(50).fit(store)
    times.table()   # seconds, calls and share per phase; GFLOP/s of the products

Timing is per process: it sees the tasks of the local threaded and
synchronous schedulers, not those of dask.distributed workers. The seconds
of a phase are summed over the tasks that ran at once, so with two threads
the phases add up to about twice the wall time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

_ON = [False]
_LOCK = threading.Lock()
_CURRENT: list = [None]


@dataclass
class PhaseTimes:
    """Seconds, calls and floating-point operations per phase, and the product shapes seen.

    Attributes
    ----------
    seconds, calls, flops : dict of str to float/int
        Keyed by phase name.
    shapes : dict of tuple to list
        For each product signature ``(m, k, n, dtype, a_order, b_order)``:
        [calls, seconds, flops].
    """

    seconds: dict = field(default_factory=dict)
    calls: dict = field(default_factory=dict)
    flops: dict = field(default_factory=dict)
    shapes: dict = field(default_factory=dict)

    def add(self, name: str, seconds: float, flops: float = 0.0, shape: tuple | None = None) -> None:
        with _LOCK:
            self.seconds[name] = self.seconds.get(name, 0.0) + seconds
            self.calls[name] = self.calls.get(name, 0) + 1
            self.flops[name] = self.flops.get(name, 0.0) + flops
            if shape is not None:
                entry = self.shapes.setdefault(shape, [0, 0.0, 0.0])
                entry[0] += 1
                entry[1] += seconds
                entry[2] += flops

    def total(self) -> float:
        """Seconds summed over every phase."""
        return float(sum(self.seconds.values()))

    def table(self) -> list[dict]:
        """One row per phase, longest first: name, seconds, calls, share of the total, GFLOP/s (products)."""
        total = self.total() or 1.0
        rows = []
        for name, sec in sorted(self.seconds.items(), key=lambda kv: -kv[1]):
            row = {"phase": name, "seconds": sec, "calls": self.calls[name], "share": sec / total}
            if self.flops.get(name):
                row["gflop_per_s"] = self.flops[name] / sec / 1e9 if sec > 0 else float("nan")
                row["gflop"] = self.flops[name] / 1e9
            rows.append(row)
        return rows


class _Timer:
    __slots__ = ("name", "flops", "t0")

    def __init__(self, name: str, flops: float):
        self.name, self.flops = name, flops

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        times = _CURRENT[0]
        if times is not None:
            times.add(self.name, time.perf_counter() - self.t0, self.flops)
        return False


_OFF = contextlib.nullcontext()


def phase(name: str, flops: float = 0.0):
    """Context manager timing one step of a chunk task under ``name`` (a no-op unless :func:`collect` is active)."""
    if not _ON[0]:
        return _OFF
    return _Timer(name, flops)


def product(a: np.ndarray, b: np.ndarray, *, flops: float | None = None, name: str = "products") -> np.ndarray:
    """``a @ b``, timed with its shape and flop count when :func:`collect` is active.

    Parameters
    ----------
    a : ndarray of shape (m, k)
    b : ndarray of shape (k, n) or (k,)
    flops : float, optional
        Floating-point operations the product makes; default 2 m k n
        (pass m k m for a Gram ``x @ x.T``, which numpy computes as a SYRK).
    name : str
        Phase the time is booked under.
    """
    if not _ON[0]:
        return a @ b
    t0 = time.perf_counter()
    out = a @ b
    seconds = time.perf_counter() - t0
    m, k = a.shape
    n = 1 if b.ndim == 1 else b.shape[1]
    work = 2.0 * m * k * n if flops is None else float(flops)
    shape = (m, k, n, str(np.result_type(a, b)), _order(a), _order(b))
    times = _CURRENT[0]
    if times is not None:
        times.add(name, seconds, work, shape)
    return out


def _order(a: np.ndarray) -> str:
    if a.flags.c_contiguous:
        return "C"
    if a.flags.f_contiguous:
        return "F"
    return "strided"


@contextlib.contextmanager
def collect() -> Iterator[PhaseTimes]:
    """Time the phases of every pass computed inside the block; yields the :class:`PhaseTimes` being filled."""
    times = PhaseTimes()
    previous = (_ON[0], _CURRENT[0])
    _ON[0], _CURRENT[0] = True, times
    try:
        yield times
    finally:
        _ON[0], _CURRENT[0] = previous


__all__ = ["PhaseTimes", "collect", "phase", "product"]
