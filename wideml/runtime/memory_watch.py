"""Wall time and peak resident memory of one step of a run (a pass over X), for the run's record.

:func:`watch` samples this process's resident set size (RSS) from a daemon
thread every ``interval`` seconds while its block runs, and keeps the largest
value seen; Linux's own high-water mark (``VmHWM``) cannot be reset per step
without disturbing the whole-process peak other parts of a run report, so the
per-step peak is a sampled one (a spike shorter than ``interval`` may be
missed). Memory of dask.distributed workers in other processes is not seen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psutil


@dataclass
class StepUsage:
    """What :func:`watch` measured: ``seconds`` of wall time and ``peak_rss_bytes`` (sampled)."""

    seconds: float = 0.0
    peak_rss_bytes: int = 0


@contextmanager
def watch(interval: float = 0.05) -> Iterator[StepUsage]:
    """Measure the block's wall time and sampled peak RSS; the result is filled in when the block ends.

    Parameters
    ----------
    interval : float, default 0.05
        Seconds between RSS samples.

    Yields
    ------
    StepUsage
    """
    usage = StepUsage()
    proc = psutil.Process()
    stop = threading.Event()

    def sample() -> None:
        while True:
            try:
                usage.peak_rss_bytes = max(usage.peak_rss_bytes, int(proc.memory_info().rss))
            except psutil.Error:  # pragma: no cover - the process's own /proc entry is always readable
                return
            if stop.wait(interval):
                return

    sampler = threading.Thread(target=sample, name="wideml-memory-watch", daemon=True)
    start = time.perf_counter()
    sampler.start()
    try:
        yield usage
    finally:
        stop.set()
        sampler.join()
        usage.peak_rss_bytes = max(usage.peak_rss_bytes, int(proc.memory_info().rss))
        usage.seconds = time.perf_counter() - start
