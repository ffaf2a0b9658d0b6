"""Walking a wide array one feature stripe at a time (and a p-sized array beside it), and viewing any input as a feature-chunked dask array."""

from __future__ import annotations

import os
import signal
import uuid
from typing import Any

import dask
import dask.array as da
import numpy as np

from wideml.exceptions import WidemlError
from wideml.passes.timing import phase
from wideml.runtime.cluster_check import paths_of
from wideml.runtime.config import memory_limit_bytes, thread_count
from wideml.runtime.scratch import scratch
from wideml.storage.reader import DIRECT_READERS


class NonFiniteError(WidemlError):
    """X holds NaN or inf (found during a pass)."""


#: Chunks ahead of the one being read that a pass task asks the OS to start reading (off-disk overlap).
READ_AHEAD = 2


class ChunkRef:
    """A feature chunk of a registered store array, read by the task that uses it.

    A task handed a ChunkRef reads the chunk itself (:func:`materialise`), so
    the array it gets is its own: nobody else holds it and it may be centred
    in place, which saves a chunk-sized write per pass.
    """

    __slots__ = ("reader", "start", "stop", "n_rows", "ahead")

    def __init__(self, reader: Any, start: int, stop: int, n_rows: int, ahead: tuple = ()):
        self.reader, self.start, self.stop, self.n_rows = reader, int(start), int(stop), int(n_rows)
        self.ahead = tuple((int(a), int(b)) for a, b in ahead)  # the next chunks, hinted to the OS before this read

    def __getstate__(self):
        return (self.reader, self.start, self.stop, self.n_rows, self.ahead)

    def __dask_tokenize__(self):
        r = self.reader
        return ("wideml-chunkref", type(r).__name__, r.path, r.name, r.shape, str(r.dtype), self.start, self.stop, self.n_rows)

    def __setstate__(self, state):
        self.reader, self.start, self.stop, self.n_rows, self.ahead = state

    def __wideml_paths__(self) -> list:
        """The store this chunk is read from (for the cluster check of :mod:`wideml.runtime.cluster_check`)."""
        return paths_of(self.reader)


def materialise(stripe: Any) -> tuple[np.ndarray, bool]:
    """(the stripe as an ndarray, whether the caller owns it and may overwrite it).

    A :class:`ChunkRef` is read into the calling thread's "read" scratch
    buffer when its reader can (:mod:`wideml.runtime.scratch`): the block is
    then valid only until the thread's next read, so pass tasks must not
    return it or any view of it (they return products and statistics).
    """
    if isinstance(stripe, ChunkRef):
        with phase("read"):
            return _read_chunk(stripe)
    return np.asarray(stripe), False


def _read_chunk(stripe: ChunkRef) -> tuple[np.ndarray, bool]:
    """Read one chunk into this thread's read buffer (or a fresh array); (block, owned)."""
    hint = getattr(stripe.reader, "hint", None)
    if hint is not None:
        for a, b in stripe.ahead:
            hint(slice(a, b))
    rows, cols = slice(0, stripe.n_rows), slice(stripe.start, stripe.stop)
    read_into = getattr(stripe.reader, "read_into", None)
    if read_into is not None:  # into this thread's reused read buffer: no page faults per chunk
        block = np.asarray(read_into(rows, cols, lambda shape, dtype: scratch(shape, dtype, slot="read")))
    else:
        block = np.asarray(stripe.reader[rows, cols])
    _after_read()
    return block, bool(block.flags.writeable)  # the task's own buffer or a fresh array


#: Test-only hook: with WIDEML_TEST_KILL_AFTER_READS=N in the environment, the process SIGKILLs
#: itself right after its N-th chunk read (the fault tests kill a fit at a known point this way).
_KILL_AFTER = [None, 0]


def _after_read() -> None:
    if _KILL_AFTER[0] is None:
        text = os.environ.get("WIDEML_TEST_KILL_AFTER_READS", "")
        _KILL_AFTER[0] = int(text) if text.strip().isdigit() else 0
    if _KILL_AFTER[0]:
        _KILL_AFTER[1] += 1
        if _KILL_AFTER[1] >= _KILL_AFTER[0]:

            os.kill(os.getpid(), signal.SIGKILL)


def feature_stripes(X: da.Array, direct: bool = False) -> tuple[list, np.ndarray]:
    """Delayed full-height feature stripes of ``X`` and their global start offsets.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        If X is chunked along samples too, each stripe concatenates its row
        chunks (memory: one stripe, not the whole array).
    direct : bool, default False
        For a store's own array (registered in :data:`wideml.storage.reader.DIRECT_READERS`),
        return :class:`ChunkRef` objects instead of delayed reads: the task
        reads its chunk itself (use :func:`materialise`) and owns it. Other
        arrays give delayed stripes as usual.

    Returns
    -------
    stripes : list of dask.delayed.Delayed or ChunkRef
        One stripe of shape (n_samples, p_j) per feature chunk.
    offsets : ndarray of int64, shape (n_stripes,)
        Index of each stripe's first feature.
    """
    if X.ndim != 2:
        raise WidemlError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}; reshape it.")
    offsets = np.concatenate([[0], np.cumsum(X.chunks[1])[:-1]]).astype(np.int64)
    reader = DIRECT_READERS.get(X.name) if direct else None
    if reader is not None and X.numblocks[0] == 1:
        bounds = [(int(o), int(o + w)) for o, w in zip(offsets, X.chunks[1])]
        refs = [ChunkRef(reader, a, b, X.shape[0], ahead=bounds[i + 1 : i + 1 + READ_AHEAD]) for i, (a, b) in enumerate(bounds)]
        return refs, offsets
    if X.numblocks[0] > 1:
        X = X.rechunk({0: -1})
    stripes = list(X.to_delayed()[0])
    return stripes, offsets


def first_nonfinite(block: np.ndarray, offset: int) -> tuple[int, int, str] | None:
    """(feature index, sample, "NaN"/"inf"/"-inf") of the first non-finite entry of a chunk, or None."""
    if block.dtype.kind != "f" or np.isfinite(block).all():
        return None
    bad = ~np.isfinite(block)
    col = int(np.argmax(bad.any(axis=0)))
    row = int(np.argmax(bad[:, col]))
    value = "NaN" if np.isnan(block[row, col]) else ("inf" if block[row, col] > 0 else "-inf")
    return offset + col, row, value


def nonfinite_error(found: tuple[int, int, str]) -> NonFiniteError:
    feature, row, value = found
    return NonFiniteError(f"X holds {value} at feature index {feature} (sample {row}); remove or impute NaN/inf values first.")


def check_finite(block: np.ndarray, offset: int) -> None:
    """Raise :class:`NonFiniteError` naming the first feature index of this chunk holding NaN or inf."""
    found = first_nonfinite(block, offset)
    if found is not None:
        raise nonfinite_error(found)


def aligned_blocks(A, widths, offsets, axis: int) -> list:
    """Blocks of a p-sized array A (numpy, zarr or dask) along its feature ``axis``, one per feature chunk of X.

    ``widths`` and ``offsets`` are X's feature chunks (``X.chunks[1]`` and their starts): block j goes
    to the task of X's chunk j, as a slice (numpy) or one task of the rechunked array (zarr, dask).
    """
    if isinstance(A, np.ndarray):
        sl = (lambda o, w: A[:, o : o + w]) if axis == 1 else (lambda o, w: A[o : o + w])
        return [sl(o, w) for o, w in zip(offsets, widths)]
    A_d = A if isinstance(A, da.Array) else da.from_array(A, chunks=A.chunks)
    chunks = [(s,) for s in A_d.shape]
    chunks[axis] = tuple(widths)
    A_d = A_d.rechunk(tuple(chunks))
    blocks = A_d.to_delayed()
    return list(blocks[0, :]) if axis == 1 else list(blocks[:, 0])


def sub_stripe_width(n_samples: int, copies: int = 4, budget: int | None = None) -> int:
    """Widest feature sub-stripe whose float64 temporaries (``copies`` of n x w) fit one task's share of the budget.

    A task's share is the memory budget (config ``memory-limit``) divided by
    twice the number of tasks run at once (config ``threads``; half is left for the
    chunks being read and the n x n accumulators). Chunk tasks process their
    chunk in sub-stripes of this width, so the budget holds whatever the
    stored chunk size.
    """
    if budget is None:
        budget = memory_limit_bytes()
    share = budget // (2 * max(1, thread_count(), os.cpu_count() or 1))
    return max(1, int(share // (copies * 8 * max(1, n_samples))))


def shared(value: Any) -> Any:
    """``value`` as one graph node that every chunk task refers to by key.

    Passing an array straight to each of a pass's chunk tasks makes dask hash
    it once per task (and a distributed scheduler ship it once per task);
    wrapped once, it is hashed and sent once.
    """
    return dask.delayed(value, pure=True, traverse=False)


def graph_constant(value: Any, what: str = "constant") -> Any:
    """``value`` as one graph node named by a random token: :func:`shared` for values slow to hash (thousands of rank tables)."""

    return dask.delayed(value, name=f"wideml-{what}-{uuid.uuid4().hex}", traverse=False)


__all__ = ["NonFiniteError", "aligned_blocks", "check_finite", "feature_stripes", "graph_constant", "shared"]
