"""Wall time and peak resident memory of one step of a run (a pass over X), for the run's record.

:func:`watch` keeps the largest resident set size (RSS) of this process seen
while its block runs. One daemon thread per process samples the RSS every
``INTERVAL`` seconds while at least one watch is open (it sleeps otherwise),
so opening a watch costs two RSS reads, not a thread start: a 6 ms in-memory
fit stays a 6 ms fit. Linux's own high-water mark (``VmHWM``) cannot be reset
per step without disturbing the whole-process peak other parts of a run
report, so the per-step peak is a sampled one (a spike shorter than
``INTERVAL`` may be missed). Memory of dask.distributed workers in other
processes is not seen.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psutil

#: Seconds between RSS samples while a watch is open.
INTERVAL = 0.05


@dataclass(eq=False)
class StepUsage:
    """What :func:`watch` measured: ``seconds`` of wall time and ``peak_rss_bytes`` (sampled)."""

    seconds: float = 0.0
    peak_rss_bytes: int = 0


class _Sampler:
    """The process's one sampling thread and the watches open now (restarted in a forked child)."""

    lock = threading.Condition()
    active: set[StepUsage] = set()
    pid: int | None = None
    proc: psutil.Process | None = None

    @classmethod
    def rss(cls) -> int:
        return int(cls.proc.memory_info().rss)

    @classmethod
    def ensure(cls) -> None:
        if cls.pid == os.getpid():
            return
        cls.pid, cls.proc, cls.active = os.getpid(), psutil.Process(), set()
        threading.Thread(target=cls.run, name="wideml-memory-watch", daemon=True).start()

    @classmethod
    def run(cls) -> None:
        me = os.getpid()
        while cls.pid == me:
            with cls.lock:
                while not cls.active:
                    cls.lock.wait()
                watching = list(cls.active)
            rss = cls.rss()
            for usage in watching:
                usage.peak_rss_bytes = max(usage.peak_rss_bytes, rss)
            time.sleep(INTERVAL)


@contextmanager
def watch() -> Iterator[StepUsage]:
    """Measure the block's wall time and sampled peak RSS; the result is filled in when the block ends.

    Yields
    ------
    StepUsage
    """
    with _Sampler.lock:
        _Sampler.ensure()
        usage = StepUsage(peak_rss_bytes=_Sampler.rss())
        _Sampler.active.add(usage)
        _Sampler.lock.notify()
    start = time.perf_counter()
    try:
        yield usage
    finally:
        usage.seconds = time.perf_counter() - start
        with _Sampler.lock:
            _Sampler.active.discard(usage)
        usage.peak_rss_bytes = max(usage.peak_rss_bytes, _Sampler.rss())
