"""Per-thread scratch buffers for chunk-sized temporaries.

A pass centres every chunk it reads into an n x p_j array that lives only
while that chunk's products run. Allocating it afresh costs more than the
subtraction itself: a 32 MB array is above glibc's mmap threshold, so every
allocation maps new pages and the first write to each page faults (measured:
6.4 ms for a fresh 2000 x 4096 float32 result against 2.1 ms into a reused
buffer). Each worker thread therefore keeps one flat buffer and hands out
contiguous views of it.

The same holds for reading: a chunk file read into a fresh 32 MB array pays
those page faults on every read (glibc maps allocations above 32 MiB afresh,
and the default chunk size is just under it once numpy adds its padding), so
tasks that own their chunk read it into their thread's "read" buffer.

Rules for callers: a view from :func:`scratch` is valid until the same thread
asks for scratch of the same slot again, so it must never be returned from a task, stored, or
held across a call that may itself take scratch. :func:`release` drops every
buffer of this process (the runtime calls it after each pass on the threaded
scheduler, so idle threads hold nothing). Worker *processes* (the processes
scheduler, a dask.distributed cluster) keep their buffers, at most one chunk
per slot per worker thread, until they exit.
"""

from __future__ import annotations

import threading

import numpy as np

_buffers: dict[tuple[int, str], np.ndarray] = {}
_lock = threading.Lock()


def scratch(shape: tuple[int, ...], dtype, slot: str = "work") -> np.ndarray:
    """A C-contiguous, uninitialised array of ``shape`` and ``dtype`` backed by this thread's buffer ``slot``.

    Different slots are different buffers (a chunk read into the "read" slot
    stays valid while the "work" slot is handed out).
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    key = (threading.get_ident(), slot)
    buf = _buffers.get(key)
    if buf is None or buf.nbytes < nbytes:
        buf = np.empty(nbytes, dtype=np.uint8)
        with _lock:
            _buffers[key] = buf
    return buf[:nbytes].view(dtype).reshape(shape)


def release() -> None:
    """Forget every thread's buffer (views still in use keep theirs alive until they are dropped)."""
    with _lock:
        _buffers.clear()


__all__ = ["release", "scratch"]
