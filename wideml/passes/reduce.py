"""The one accumulator of the passes' chunk results, and the reducers that sum it: a bounded tree, or sequential lanes.

A chunk task returns its partial sums as one :class:`Sums` (named float64
sums, or the first non-finite entry it met); every pass adds them with the
same :meth:`Sums.add_into` / :meth:`Sums.combine` and reads the total with
:meth:`Sums.finish`. A pass makes one task per feature chunk. Small partial
results (n-sized, n x K) are summed in a tree of bounded fan-in
(:func:`tree_reduce`, :func:`sum_chunk_results`); n x n partial sums are added
into a few sequential lanes, one accumulator per task the scheduler runs at
once (:func:`fold_in_lanes`), so they never pile up. Either can be made
resumable by a checkpoint: its lanes are then saved and resumed by
:mod:`wideml.passes.lane_checkpoints`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import dask
import numpy as np

from wideml.passes.blocks import nonfinite_error
from wideml.passes.lane_checkpoints import fold_resumable
from wideml.passes.timing import phase
from wideml.runtime.config import config_value, thread_count
from wideml.runtime import scheduler


def _copy(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    if isinstance(value, list):
        return list(value)
    return value


def _add(acc: Any, part: Any) -> Any:
    """``acc`` + ``part``: arrays added in place into ``acc``, numbers added, tuples element by element, lists concatenated."""
    if acc is None:
        return None
    if isinstance(acc, np.ndarray):
        acc += part
        return acc
    if isinstance(acc, tuple):
        return tuple(_add(a, p) for a, p in zip(acc, part))
    if isinstance(acc, list):  # pieces (per-chunk values kept apart), in chunk order
        return acc + list(part)
    return acc + part


@dataclass
class Sums:
    """Partial sums of one pass over some of its chunks: named float64 sums, or the first non-finite entry met.

    Attributes
    ----------
    values : dict
        Name -> sum. An ndarray or a number is added; a tuple is added element
        by element (e.g. one (P, Q) pair per median set); a list holds pieces
        kept per chunk (concatenated in chunk order); None stays None (a sum
        the pass was not asked for).
    error : tuple or None
        (feature index, sample, value) of the first NaN/inf met, or None. Sums
        holding an error carry no values; adding them keeps the lowest feature
        index, which :meth:`finish` reports.
    """

    values: dict[str, Any] = field(default_factory=dict)
    error: tuple | None = None

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def add_into(self, part: Sums) -> Sums:
        """Add ``part`` into these sums (their arrays in place) and return them: a lane's step (timed as "reductions")."""
        with phase("reductions"):
            return self._add(part)

    def _add(self, part: Sums) -> Sums:
        if self.error is not None or part.error is not None:
            return Sums(error=min(e for e in (self.error, part.error) if e is not None))
        for name, value in self.values.items():
            self.values[name] = _add(value, part.values[name])
        return self

    @staticmethod
    def combine(*parts: Sums) -> Sums:
        """The sum of ``parts``, touching none of them (a copy of the first, then the others added into it)."""
        first = parts[0]
        acc = first if first.error is not None else Sums({name: _copy(v) for name, v in first.values.items()})
        for part in parts[1:]:
            acc = acc._add(part)
        return acc

    def finish(self) -> dict[str, Any]:
        """The named sums; raises :class:`~wideml.exceptions.NonFiniteError` naming the lowest bad feature index."""
        if self.error is not None:
            raise nonfinite_error(self.error)
        return self.values

    def to_state(self) -> tuple:
        """The sums as a checkpointable nesting (:func:`wideml.runtime.checkpoint.save_state`)."""
        return (self.values, self.error)

    @classmethod
    def from_state(cls, state: tuple) -> Sums:
        """Sums saved by :meth:`to_state`."""
        values, error = state
        return cls(dict(values), None if error is None else tuple(error))


def tree_reduce(parts: Sequence[Any], combine: Callable[..., Any] = Sums.combine, width: int | None = None) -> Any:
    """Reduce delayed partial results in a tree of fan-in ``width``.

    A tree (rather than one task summing everything) lets each level free its
    inputs, so no more than about ``width x depth`` n x n partial sums are alive
    at once on any worker.
    """
    if width is None:
        width = int(config_value("tree-width"))
    width = max(2, int(width))
    level = list(parts)
    if not level:
        raise ValueError("nothing to reduce")
    combine_d = dask.delayed(combine, pure=True)
    while len(level) > 1:
        level = [combine_d(*level[i : i + width]) if len(level[i : i + width]) > 1 else level[i] for i in range(0, len(level), width)]
    return level[0]


def sum_chunk_results(fn: Callable[..., Sums], arg_lists: Sequence[tuple], checkpoint: Any = None) -> Any:
    """Sum ``fn(*args)`` (one :class:`Sums` per chunk): independent chunk tasks in a bounded tree, or, resumable, folded in lanes.

    For passes whose partial results are small (n-sized, n x K): one task per
    entry of ``arg_lists``, reduced by :func:`tree_reduce`. With a
    ``checkpoint`` the chunks are folded in lanes saved into it
    (:func:`fold_in_lanes`), so a resumed pass does not read a chunk a saved
    lane holds.

    Returns
    -------
    dask.delayed.Delayed
        Computes to the total :class:`Sums`.
    """
    if checkpoint is not None:
        return fold_in_lanes(fn, arg_lists, checkpoint=checkpoint)
    task = dask.delayed(fn, pure=True)
    return tree_reduce([task(*args) for args in arg_lists])


def parallel_slots() -> int:
    """How many tasks the active scheduler runs at once.

    The threaded scheduler's thread count (config ``threads``), the workers'
    threads of a dask.distributed client, the cores for the process pool,
    and 1 for the synchronous scheduler.
    """
    client = scheduler.active_client()
    if client is not None:
        try:
            return max(1, sum(client.nthreads().values()))
        except Exception:  # a client that cannot answer (closing): one lane per core is a safe guess
            return os.cpu_count() or 1
    name = dask.config.get("scheduler", "threads")
    if name in ("sync", "synchronous", "single-threaded"):
        return 1
    if name in ("threads", "threading", None):
        return thread_count()
    return os.cpu_count() or 1


def _fold_step(acc: Any, add_into: Callable[[Any, Any], Any], fn: Callable[..., Any], *args: Any) -> Any:
    part = fn(*args)
    return part if acc is None else add_into(acc, part)


def fold_in_lanes(fn: Callable[..., Any], arg_lists: Sequence[tuple], add_into: Callable[[Any, Any], Any] = Sums.add_into,
                  combine: Callable[..., Any] = Sums.combine, lanes: int | None = None, checkpoint: Any = None) -> Any:
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
        A :class:`Sums` unless ``add_into`` and ``combine`` say otherwise.
    arg_lists : sequence of tuple
        Arguments of ``fn`` for each chunk (delayed objects allowed).
    add_into : callable, default :meth:`Sums.add_into`
        ``add_into(acc, part)`` adds ``part`` into ``acc`` and returns it.
    combine : callable, default :meth:`Sums.combine`
        ``combine(*accs)`` sums lane accumulators (as for :func:`tree_reduce`).
    lanes : int, optional
        Default :func:`parallel_slots`.
    checkpoint : wideml.runtime.checkpoint.PassCheckpoint, optional
        Makes the pass resumable (:mod:`wideml.passes.lane_checkpoints`; the
        accumulators must be :class:`Sums`): chunks a saved lane has folded
        get no task (they are not read) and each lane saves its accumulator at
        the checkpoint interval.

    Returns
    -------
    dask.delayed.Delayed
    """
    if not arg_lists:
        raise ValueError("nothing to reduce")
    if checkpoint is not None:
        accs = fold_resumable(fn, arg_lists, add_into, lanes or parallel_slots(), checkpoint,
                              encode=Sums.to_state, decode=Sums.from_state)
    else:
        lanes = max(1, min(int(lanes or parallel_slots()), len(arg_lists)))
        step = dask.delayed(_fold_step, pure=True)
        accs = [None] * lanes
        for i, args in enumerate(arg_lists):
            accs[i % lanes] = step(accs[i % lanes], add_into, fn, *args)
    return tree_reduce(accs, combine) if len(accs) > 1 else accs[0]


__all__ = ["Sums", "fold_in_lanes", "parallel_slots", "sum_chunk_results", "tree_reduce"]
