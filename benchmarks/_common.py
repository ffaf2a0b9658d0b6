"""Shared helpers for benchmarks: read-pass yardsticks, timing, peak memory, JSON results.

Timings on this shared 2-core machine are noisy: every figure is the median of
``repeats`` runs, and ratios are computed from figures measured in the same run.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def median_time(fn, repeats: int = 3) -> tuple[float, list[float]]:
    """Median wall time of ``fn()`` over ``repeats`` runs (and all the runs)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def chunk_files(store_path: str | os.PathLike, name: str = "X") -> list[Path]:
    root = Path(store_path) / name / "c"
    return sorted((p for p in root.rglob("*") if p.is_file()), key=lambda p: tuple(int(x) for x in p.relative_to(root).parts))


def raw_read(store_path, threads: int = 1) -> int:
    """Read every chunk file of an uncompressed zarr store into memory (the floor of a read pass)."""
    files = chunk_files(store_path)
    buffers = threading.local()  # one reused buffer per thread: no fresh pages to fault in on every file

    def read(f):
        with open(f, "rb", buffering=0) as fh:
            size = os.fstat(fh.fileno()).st_size
            buf = getattr(buffers, "buf", None)
            if buf is None or len(buf) < size:
                buf = buffers.buf = bytearray(size)
            return fh.readinto(memoryview(buf)[:size])

    if threads == 1:
        return sum(read(f) for f in files)
    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(read, files))


def evict_from_page_cache(store_path) -> bool:
    """Drop a store's files from the OS page cache (posix_fadvise DONTNEED), so the next read comes off disk.

    Returns False where the platform cannot do it (then "cold" timings are not cold).
    """
    if not hasattr(os, "posix_fadvise"):
        return False
    for f in Path(store_path).rglob("*"):
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return True


def cold_median_time(fn, store_path, repeats: int = 3) -> tuple[float, list[float]]:
    """Median wall time of ``fn()`` with the store evicted from the page cache before every run."""
    times = []
    for _ in range(repeats):
        evict_from_page_cache(store_path)
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def zarr_read(store_path, max_workers: int | None = 1) -> float:
    """Read X chunk column by chunk column through zarr's own API."""
    import zarr

    cfg = {"threading.max_workers": max_workers} if max_workers else {}
    with zarr.config.set(cfg):
        arr = zarr.open_array(f"{store_path}/X", mode="r")
        step = arr.chunks[1]
        total = 0.0
        for start in range(0, arr.shape[1], step):
            total += float(arr[:, start : start + step][0, 0])
    return total


def dask_read(store) -> float:
    """Read every block of a store's X through wideml's dask array (threaded scheduler)."""
    import dask

    blocks = store.X.to_delayed().ravel()
    first = [dask.delayed(lambda b: float(b[0, 0]))(b) for b in blocks]
    return sum(dask.compute(*first, scheduler="threads"))


def read_pass_yardsticks(store_path, store, repeats: int = 3) -> dict:
    """Time the ways of reading the store once; 'read_pass' is the fastest of them (DESIGN.md §5)."""
    out = {}
    out["raw_read_1thread"], _ = median_time(lambda: raw_read(store_path, 1), repeats)
    out["raw_read_2threads"], _ = median_time(lambda: raw_read(store_path, 2), repeats)
    out["zarr_read_max_workers_1"], _ = median_time(lambda: zarr_read(store_path, 1), repeats)
    out["zarr_read_default"], _ = median_time(lambda: zarr_read(store_path, None), repeats)
    out["wideml_dask_read"], _ = median_time(lambda: dask_read(store), repeats)
    out["read_pass"] = min(out.values())
    # off disk: the same raw read with the store's pages evicted first (what a bigger-than-RAM store always pays)
    out["raw_read_cold_1thread"], _ = cold_median_time(lambda: raw_read(store_path, 1), store_path, repeats)
    out["raw_read_cold_2threads"], _ = cold_median_time(lambda: raw_read(store_path, 2), store_path, repeats)
    out["read_pass_cold"] = min(out["raw_read_cold_1thread"], out["raw_read_cold_2threads"])
    out["page_cache_eviction"] = evict_from_page_cache(store_path)
    return out


#: Python snippet printing the process's own peak RSS. VmHWM is reset by exec, unlike ru_maxrss,
#: which a child started from a large parent inherits.
PEAK_RSS_SNIPPET = (
    "def _peak_rss():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            return int(line.split()[1]) * 1024\n"
)


def peak_rss_of(code: str) -> dict:
    """Run ``code`` in a fresh Python process; return its peak RSS (bytes, VmHWM) and wall time."""
    prog = PEAK_RSS_SNIPPET + code + "\nimport json\nprint(json.dumps({'peak': _peak_rss()}))\n"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    last = proc.stdout.strip().splitlines()[-1]
    return {"peak_rss_bytes": json.loads(last)["peak"], "wall_s": wall}


def machine() -> dict:
    import dask
    import zarr

    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "dask": dask.__version__,
        "zarr": zarr.__version__,
        "load_avg_at_start": os.getloadavg(),
    }


def save(name: str, result: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    result = {"benchmark": name, "when": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine(), **result}
    path.write_text(json.dumps(result, indent=2, default=float))
    return path


def self_peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
