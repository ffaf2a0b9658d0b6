"""The one reducer of the passes' chunk results: a bounded tree, or sequential lanes for n x n accumulators.

A pass makes one task per feature chunk. Small partial results (n-sized,
n x K) are summed in a tree of bounded fan-in (:func:`tree_reduce`,
:func:`sum_chunk_results`); n x n partial sums are added into a few
sequential lanes, one accumulator per task the scheduler runs at once
(:func:`fold_in_lanes`), so they never pile up. Either can be made
resumable by a checkpoint (:mod:`wideml.passes.lane_checkpoints`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask


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


__all__ = ["add_keyed_into", "fold_in_lanes", "parallel_slots", "sum_chunk_results", "sum_keyed", "tree_reduce"]
