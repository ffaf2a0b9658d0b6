"""fold_in_lanes: sums equal a plain sum, and the number of live partial results does not grow with the chunk count."""

from __future__ import annotations

import threading

import dask
import numpy as np
import pytest

from wideml.passes.reduce import fold_in_lanes, parallel_slots, tree_reduce


class _Live:
    """Counts partial-sum objects alive at once (created by a chunk task, dropped when folded away)."""

    lock = threading.Lock()
    alive = 0
    peak = 0

    def __init__(self, value):
        self.value = np.array(value, dtype=np.float64)
        with _Live.lock:
            _Live.alive += 1
            _Live.peak = max(_Live.peak, _Live.alive)

    def __del__(self):
        with _Live.lock:
            _Live.alive -= 1

    @classmethod
    def reset(cls):
        cls.alive = cls.peak = 0


def _part(i, size):
    return _Live(np.full(size, float(i)))


def _add_into(acc, part):
    acc.value += part.value
    return acc


def _combine(*accs):
    return _Live(sum(a.value for a in accs))


@pytest.mark.parametrize("lanes", [1, 2, 3, 7])
@pytest.mark.parametrize("n_chunks", [1, 5, 64])
def test_fold_equals_sum(lanes, n_chunks):
    total = fold_in_lanes(_part, [(i, 3) for i in range(n_chunks)], _add_into, _combine, lanes=lanes)
    (out,) = dask.compute(total, scheduler="threads", num_workers=3)
    np.testing.assert_array_equal(out.value, np.full(3, sum(range(n_chunks)), dtype=float))


@pytest.mark.parametrize("n_chunks", [40, 400])
def test_live_partials_bounded_whatever_the_chunk_count(n_chunks):
    """At most two objects per lane (its accumulator and the chunk being added) plus the final combine."""
    _Live.reset()
    total = fold_in_lanes(_part, [(i, 10) for i in range(n_chunks)], _add_into, _combine, lanes=3)
    (out,) = dask.compute(total, scheduler="threads", num_workers=3)
    assert out.value[0] == sum(range(n_chunks))
    assert _Live.peak <= 2 * 3 + 1, _Live.peak


def test_sync_scheduler_runs_one_lane():
    with dask.config.set(scheduler="sync"):
        assert parallel_slots() == 1


def test_threaded_lanes_follow_the_thread_setting():
    with dask.config.set({"scheduler": "threads", "wideml.threads": 5}):
        assert parallel_slots() == 5


def test_tree_reduce_still_sums():
    parts = [dask.delayed(lambda i: np.array([float(i)]))(i) for i in range(9)]
    (out,) = dask.compute(tree_reduce(parts, lambda *a: sum(a), width=2))
    assert out[0] == 36.0


def test_gram_lanes_follow_the_memory_budget():
    """A Gram pass runs as many lanes as tasks run at once, fewer when half the budget cannot hold them, never none."""
    from wideml.passes.gram import LANE_MATRICES, gram_lanes

    n = 1000
    per_lane = LANE_MATRICES * 8 * n * n
    with dask.config.set({"scheduler": "threads", "wideml.threads": 4}):
        assert gram_lanes(n, budget=100 * per_lane) == 4
        assert gram_lanes(n, budget=2 * 2 * per_lane) == 2
        assert gram_lanes(n, budget=per_lane // 10) == 1
