"""Walking a wide array one feature stripe at a time, and bounded tree reductions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np

from wideml.exceptions import WidemlError
from wideml.passes.timing import phase
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
        from wideml.runtime.cluster_check import paths_of

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
        from wideml.runtime.scratch import scratch

        block = np.asarray(read_into(rows, cols, lambda shape, dtype: scratch(shape, dtype, slot="read")))
    else:
        block = np.asarray(stripe.reader[rows, cols])
    _after_read()
    return block, bool(block.flags.writeable)  # the task's own buffer or a fresh array


#: Test-only hook: with WIDEML_TEST_KILL_AFTER_READS=N in the environment, the process SIGKILLs
#: itself right after its N-th chunk read (the fault tests kill a fit at a known point this way).
_KILL_AFTER = [None, 0]


def _after_read() -> None:
    import os

    if _KILL_AFTER[0] is None:
        text = os.environ.get("WIDEML_TEST_KILL_AFTER_READS", "")
        _KILL_AFTER[0] = int(text) if text.strip().isdigit() else 0
    if _KILL_AFTER[0]:
        _KILL_AFTER[1] += 1
        if _KILL_AFTER[1] >= _KILL_AFTER[0]:
            import signal

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


def sub_stripe_width(n_samples: int, copies: int = 4, budget: int | None = None) -> int:
    """Widest feature sub-stripe whose float64 temporaries (``copies`` of n x w) fit one task's share of the budget.

    A task's share is the memory budget (config ``memory-limit``) divided by
    twice the number of tasks run at once (config ``threads``; half is left for the
    chunks being read and the n x n accumulators). Chunk tasks process their
    chunk in sub-stripes of this width, so the budget holds whatever the
    stored chunk size.
    """
    import os

    if budget is None:
        from wideml.runtime.config import memory_limit_bytes

        budget = memory_limit_bytes()
    from wideml.runtime.config import thread_count

    share = budget // (2 * max(1, thread_count(), os.cpu_count() or 1))
    return max(1, int(share // (copies * 8 * max(1, n_samples))))


def tree_reduce(parts: Sequence[Any], combine: Callable[..., Any], width: int | None = None) -> Any:
    """Reduce delayed partial results in a tree of fan-in ``width``.

    A tree (rather than one task summing everything) lets each level free its
    inputs, so no more than about ``width x depth`` n x n partial sums are alive
    at once on any worker.
    """
    if width is None:
        from wideml.runtime.config import config_value

        width = int(config_value("tree-width"))
    width = max(2, int(width))
    level = list(parts)
    if not level:
        raise ValueError("nothing to reduce")
    combine_d = dask.delayed(combine, pure=True)
    while len(level) > 1:
        level = [combine_d(*level[i : i + width]) if len(level[i : i + width]) > 1 else level[i] for i in range(0, len(level), width)]
    return level[0]


def shared(value: Any) -> Any:
    """``value`` as one graph node that every chunk task refers to by key.

    Passing an array straight to each of a pass's chunk tasks makes dask hash
    it once per task (and a distributed scheduler ship it once per task);
    wrapped once, it is hashed and sent once.
    """
    return dask.delayed(value, pure=True, traverse=False)


def graph_constant(value: Any, what: str = "constant") -> Any:
    """``value`` as one graph node named by a random token: :func:`shared` for values slow to hash (thousands of rank tables)."""
    import uuid

    return dask.delayed(value, name=f"wideml-{what}-{uuid.uuid4().hex}", traverse=False)


def sum_keyed(*parts: dict) -> dict:
    """Sum dicts of chunk results key by key without touching them (arrays added, lists of pieces concatenated in order)."""
    out = {}
    for key, first in parts[0].items():
        if isinstance(first, (list, tuple)):
            out[key] = [item for part in parts for item in part[key]]
        else:
            out[key] = first.copy()
            for part in parts[1:]:
                out[key] += part[key]
    return out


def add_keyed_into(acc: dict, part: dict) -> dict:
    """:func:`sum_keyed` as :func:`fold_in_lanes`'s ``add_into``: one chunk's dict added into a lane's ``acc`` in place."""
    for key, value in part.items():
        if isinstance(value, (list, tuple)):
            acc[key] = list(acc[key]) + list(value)
        else:
            acc[key] += value
    return acc


def sum_chunk_results(fn: Callable[..., Any], arg_lists: Sequence[tuple], combine: Callable[..., Any],
                      add_into: Callable[[Any, Any], Any] | None = None, checkpoint: Any = None) -> Any:
    """Sum ``fn(*args)`` over chunks: independent chunk tasks in a bounded tree, or, resumable, folded in lanes.

    For passes whose partial results are small (n-sized, n x K): one task per
    entry of ``arg_lists``, reduced by :func:`tree_reduce` with ``combine``.
    With a ``checkpoint`` the chunks are folded by ``add_into`` in lanes saved
    into it (:func:`fold_in_lanes`), so a resumed pass does not read a chunk a
    saved lane holds.

    Returns
    -------
    dask.delayed.Delayed
    """
    if checkpoint is not None:
        return fold_in_lanes(fn, arg_lists, add_into, combine, checkpoint=checkpoint)
    task = dask.delayed(fn, pure=True)
    return tree_reduce([task(*args) for args in arg_lists], combine)


def parallel_slots() -> int:
    """How many tasks the active scheduler runs at once.

    The threaded scheduler's thread count (config ``threads``), the workers'
    threads of a dask.distributed client, the cores for the process pool,
    and 1 for the synchronous scheduler.
    """
    import os

    from wideml.runtime.scheduler import active_client

    client = active_client()
    if client is not None:
        try:
            return max(1, sum(client.nthreads().values()))
        except Exception:  # a client that cannot answer (closing): one lane per core is a safe guess
            return os.cpu_count() or 1
    scheduler = dask.config.get("scheduler", "threads")
    if scheduler in ("sync", "synchronous", "single-threaded"):
        return 1
    if scheduler in ("threads", "threading", None):
        from wideml.runtime.config import thread_count

        return thread_count()
    return os.cpu_count() or 1


def _fold_step(acc: Any, add_into: Callable[[Any, Any], Any], fn: Callable[..., Any], *args: Any) -> Any:
    part = fn(*args)
    return part if acc is None else add_into(acc, part)


def fold_in_lanes(fn: Callable[..., Any], arg_lists: Sequence[tuple], add_into: Callable[[Any, Any], Any],
                  combine: Callable[..., Any], lanes: int | None = None, checkpoint: Any = None) -> Any:
    """Sum ``fn(*args)`` over ``arg_lists`` in a few sequential lanes, each adding into its own accumulator.

    Chunk ``i`` goes to lane ``i % lanes``; a lane is a chain of tasks, each
    computing one chunk's partial result and adding it into the lane's
    accumulator (``add_into(acc, part)``, in place), so a lane holds one
    accumulator and one partial at a time. With as many lanes as the
    scheduler runs tasks at once (:func:`parallel_slots`) every core stays busy
    and the number of live partial sums is fixed: unlike independent chunk
    tasks reduced in a tree, nothing can pile up when chunk tasks run ahead
    of the reduction, so peak memory does not grow with the number of chunks.
    The lanes' accumulators are then summed with ``combine``.

    Parameters
    ----------
    fn : callable
        Computes one chunk's partial result from one entry of ``arg_lists``;
        the result must be a fresh object (the lane adds into it in place).
    arg_lists : sequence of tuple
        Arguments of ``fn`` for each chunk (delayed objects allowed).
    add_into : callable
        ``add_into(acc, part)`` adds ``part`` into ``acc`` and returns it.
    combine : callable
        ``combine(*accs)`` sums lane accumulators (as for :func:`tree_reduce`).
    lanes : int, optional
        Default :func:`parallel_slots`.
    checkpoint : wideml.runtime.checkpoint.PassCheckpoint, optional
        Makes the pass resumable (:mod:`wideml.passes.lane_checkpoints`):
        chunks a saved lane has folded get no task (they are not read) and
        each lane saves its accumulator at the checkpoint interval.

    Returns
    -------
    dask.delayed.Delayed
    """
    if not arg_lists:
        raise ValueError("nothing to reduce")
    if checkpoint is not None:
        from wideml.passes.lane_checkpoints import fold_resumable

        return fold_resumable(fn, arg_lists, add_into, combine, lanes or parallel_slots(), checkpoint)
    lanes = max(1, min(int(lanes or parallel_slots()), len(arg_lists)))
    step = dask.delayed(_fold_step, pure=True)
    accs: list[Any] = [None] * lanes
    for i, args in enumerate(arg_lists):
        accs[i % lanes] = step(accs[i % lanes], add_into, fn, *args)
    return tree_reduce(accs, combine) if lanes > 1 else accs[0]


def as_dask_array(X, feature_chunk: int | None = None) -> da.Array:
    """View numpy, dask, zarr or h5py input (or a FeatureStore) as a feature-chunked dask array.

    numpy input gets full-height chunks of about the config ``chunk-size``;
    dask input keeps its chunks; zarr / h5py arrays are chunked like their
    storage (whole stored chunks per dask chunk). No graph built here carries
    a relative path: a zarr array opened relatively is re-opened through its
    absolute path, and an h5py dataset is read through its file's absolute
    path off the threaded scheduler (:mod:`wideml.passes.external_arrays`).

    Raises
    ------
    WidemlError
        For an in-memory zarr array (or HDF5 file) while a dask.distributed
        client is active, or a zarr array opened relatively from a directory
        that is no longer the working directory.
    """
    from wideml.storage.featurestore import FeatureStore

    if isinstance(X, FeatureStore):
        return X.X
    if isinstance(X, da.Array):
        return X
    shape = getattr(X, "shape", None)
    if shape is None or not hasattr(X, "dtype"):
        X = np.asarray(X)
        shape = X.shape
    if len(shape) != 2:
        raise WidemlError(f"X must be 2-D (n_samples, n_features), got {len(shape)}-D shape {tuple(shape)}; reshape it.")
    dtype = np.dtype(X.dtype) if not hasattr(X.dtype, "to_native_dtype") else X.dtype.to_native_dtype()
    if not (np.issubdtype(dtype, np.number) or dtype == bool):
        raise WidemlError(f"X has dtype {dtype}, which is not numeric; give floats or integers.")
    stored = getattr(X, "chunks", None)
    if feature_chunk is None:
        if isinstance(stored, tuple) and len(stored) == 2 and all(isinstance(c, int) for c in stored):
            feature_chunk = stored[1]
        else:
            from wideml.storage.writer import default_feature_chunk

            feature_chunk = default_feature_chunk(shape[0], shape[1], max(4, dtype.itemsize))
    if type(X).__module__.startswith("h5py"):
        from wideml.passes.external_arrays import h5py_as_dask

        return h5py_as_dask(X, int(feature_chunk))
    if type(X).__module__.startswith("zarr"):
        from wideml.passes.external_arrays import absolute_zarr

        X = absolute_zarr(X)
    return da.from_array(X, chunks=(shape[0], int(feature_chunk)), lock=False, asarray=True)


__all__ = [
    "NonFiniteError", "add_keyed_into", "as_dask_array", "check_finite", "feature_stripes", "fold_in_lanes", "graph_constant",
    "parallel_slots", "shared", "sum_chunk_results", "sum_keyed", "tree_reduce",
]
