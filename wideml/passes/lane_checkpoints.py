"""The resumable lanes of :func:`wideml.passes.reduce.fold_in_lanes`.

A pass folds its chunks into a few lanes (chunk ``i`` into lane ``i % lanes``).
Here each lane carries a :class:`wideml.runtime.checkpoint.LaneState` (its
accumulator, a :class:`~wideml.passes.reduce.Sums`, and the set of chunk
indices it has folded) from task to task and saves it into the pass's
checkpoint folder at the checkpoint interval, as the accumulator's
checkpointable state. Rebuilt from saved lanes, the graph has no task for a
chunk already folded, so a resumed pass does not read it; and a task finding
its chunk already in the lane's set (dask retrying the task of a lost worker)
adds nothing, so no chunk is ever added twice. The chunk order within each
lane and the lane count are those of the interrupted run, so the resumed sums
equal the uninterrupted ones. :func:`wideml.passes.reduce.fold_in_lanes` sums
the lanes this module returns; this module imports no other pass module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask

from wideml.runtime.checkpoint import LaneState, PassCheckpoint


def _same(value: Any) -> Any:
    return value


def _step(state: LaneState, checkpoint: PassCheckpoint, index: int, add_into: Callable, fn: Callable, *args: Any) -> LaneState:
    """Fold chunk ``index`` into the lane (once), saving the lane when a checkpoint is due."""
    if index in state.done:
        return state
    part = fn(*args)
    state.acc = part if state.acc is None else add_into(state.acc, part)
    state.done.add(int(index))
    if checkpoint.due(state):
        checkpoint.save_lane(state)
    return state


def _lane_total(state: LaneState) -> Any:
    return state.acc


def fold_resumable(fn: Callable[..., Any], arg_lists: Sequence[tuple], add_into: Callable[[Any, Any], Any], lanes: int,
                   checkpoint: PassCheckpoint, encode: Callable[[Any], Any] = _same, decode: Callable[[Any], Any] = _same) -> list:
    """The lanes of :func:`~wideml.passes.reduce.fold_in_lanes`, resumed from, and saved into, ``checkpoint``.

    Parameters
    ----------
    fn, arg_lists, add_into
        As in :func:`wideml.passes.reduce.fold_in_lanes`.
    lanes : int
        Lanes of a fresh pass (a resumed pass keeps its recorded count).
    checkpoint : PassCheckpoint
    encode, decode : callable
        The accumulator to and from its checkpointable state
        (:meth:`wideml.passes.reduce.Sums.to_state` / ``from_state``).

    Returns
    -------
    list of dask.delayed.Delayed
        Each lane's total; computing them reads only the chunks no saved lane holds.
    """
    n = len(arg_lists)
    lanes = checkpoint.lanes(max(1, min(int(lanes), n)))
    states = checkpoint.load_lanes(lanes, n, encode=encode, decode=decode)
    step = dask.delayed(_step, pure=True)
    carry = [dask.delayed(state, pure=False, traverse=False) for state in states]
    for i, args in enumerate(arg_lists):
        k = i % lanes
        if i not in states[k].done:
            carry[k] = step(carry[k], checkpoint, i, add_into, fn, *args)
    total = dask.delayed(_lane_total, pure=True)
    return [total(c) for c in carry]


__all__ = ["fold_resumable"]
