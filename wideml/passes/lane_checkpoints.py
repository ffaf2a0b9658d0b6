"""The resumable form of :func:`wideml.passes.reduce.fold_in_lanes`.

A pass folds its chunks into a few lanes (chunk ``i`` into lane ``i % lanes``).
Here each lane carries a :class:`wideml.runtime.checkpoint.LaneState` (its
accumulator and the set of chunk indices it has folded) from task to task and
saves it into the pass's checkpoint folder at the checkpoint interval. Rebuilt
from saved lanes, the graph has no task for a chunk already folded, so a
resumed pass does not read it; and a task finding its chunk already in the
lane's set (dask retrying the task of a lost worker) adds nothing, so no chunk
is ever added twice. The chunk order within each lane and the lane count are
those of the interrupted run, so the resumed sums equal the uninterrupted ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask

from wideml.runtime.checkpoint import LaneState, PassCheckpoint


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


def fold_resumable(fn: Callable[..., Any], arg_lists: Sequence[tuple], add_into: Callable[[Any, Any], Any],
                   combine: Callable[..., Any], lanes: int, checkpoint: PassCheckpoint) -> Any:
    """:func:`~wideml.passes.reduce.fold_in_lanes` with lanes resumed from, and saved into, ``checkpoint``.

    Parameters
    ----------
    fn, arg_lists, add_into, combine
        As in :func:`wideml.passes.reduce.fold_in_lanes`.
    lanes : int
        Lanes of a fresh pass (a resumed pass keeps its recorded count).
    checkpoint : PassCheckpoint

    Returns
    -------
    dask.delayed.Delayed
        The sum over all chunks; computing it reads only the chunks no saved lane holds.
    """
    from wideml.passes.reduce import tree_reduce

    n = len(arg_lists)
    lanes = checkpoint.lanes(max(1, min(int(lanes), n)))
    states = checkpoint.load_lanes(lanes, n)
    step = dask.delayed(_step, pure=True)
    carry = [dask.delayed(state, pure=False, traverse=False) for state in states]
    for i, args in enumerate(arg_lists):
        k = i % lanes
        if i not in states[k].done:
            carry[k] = step(carry[k], checkpoint, i, add_into, fn, *args)
    total = dask.delayed(_lane_total, pure=True)
    accs = [total(c) for c in carry]
    return tree_reduce(accs, combine) if lanes > 1 else accs[0]


__all__ = ["fold_resumable"]
