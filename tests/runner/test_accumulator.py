"""The one accumulator of the passes (passes/reduce.Sums) and its resumable lanes (passes/lane_checkpoints.py)."""

from __future__ import annotations

import dask
import numpy as np
import pytest

from wideml.passes.blocks import NonFiniteError
from wideml.passes.reduce import Sums, fold_in_lanes, sum_chunk_results
from wideml.runtime.checkpoint import PassCheckpoint, load_state, save_state


def _part(seed: int) -> Sums:
    rng = np.random.default_rng(seed)
    return Sums({"G": rng.normal(size=(4, 4)), "s": float(rng.normal()), "pairs": (rng.normal(size=3), rng.normal(size=(2, 2))),
                 "pieces": [seed], "unused": None})


def _assert_equal(a: Sums, b: Sums) -> None:
    assert a.error == b.error
    assert a.values.keys() == b.values.keys()
    np.testing.assert_allclose(a["G"], b["G"], rtol=1e-14)
    np.testing.assert_allclose(a["s"], b["s"], rtol=1e-14)
    for x, y in zip(a["pairs"], b["pairs"]):
        np.testing.assert_allclose(x, y, rtol=1e-14)
    assert a["pieces"] == b["pieces"] and a["unused"] is None and b["unused"] is None


def test_combine_equals_the_numpy_sum_and_touches_no_part():
    parts = [_part(i) for i in range(5)]
    copies = [_part(i) for i in range(5)]
    total = Sums.combine(*parts)
    np.testing.assert_allclose(total["G"], np.sum([p["G"] for p in copies], axis=0), rtol=1e-14)
    assert total["s"] == pytest.approx(sum(p["s"] for p in copies), rel=1e-14)
    np.testing.assert_allclose(total["pairs"][1], np.sum([p["pairs"][1] for p in copies], axis=0), rtol=1e-14)
    assert total["pieces"] == [0, 1, 2, 3, 4]  # pieces kept apart, in chunk order
    for part, copy in zip(parts, copies):  # combine copies the first part and adds into the copy
        _assert_equal(part, copy)


def test_combine_is_associative():
    a, b, c = (_part(i) for i in range(3))
    left = Sums.combine(Sums.combine(a, b), c)
    right = Sums.combine(a, Sums.combine(b, c))
    _assert_equal(left, right)
    _assert_equal(left, Sums.combine(a, b, c))


def test_add_into_adds_in_place():
    acc, part = _part(1), _part(2)
    G = acc["G"]
    expected = _part(1)["G"] + _part(2)["G"]
    out = acc.add_into(part)
    assert out is acc and out["G"] is G  # the lane's accumulator is reused, no new n x n matrix
    np.testing.assert_allclose(out["G"], expected, rtol=1e-14)


def test_the_lowest_bad_feature_index_wins_and_finish_names_it():
    good = _part(0)
    high, low = Sums(error=(30, 1, "nan")), Sums(error=(7, 2, "inf"))
    total = Sums.combine(good, high, _part(1), low)
    assert total.error == (7, 2, "inf") and total.values == {}
    assert Sums.combine(low, high).error == (7, 2, "inf")
    with pytest.raises(NonFiniteError, match="feature index 7"):
        total.finish()
    assert _part(3).finish()["pieces"] == [3]


def test_state_survives_a_checkpoint_file(tmp_path):
    total = Sums.combine(*(_part(i) for i in range(3)))
    save_state(str(tmp_path / "lane.npz"), total.to_state())
    _assert_equal(Sums.from_state(load_state(str(tmp_path / "lane.npz"))), total)
    bad = Sums(error=(4, 0, "nan"))
    save_state(str(tmp_path / "bad.npz"), bad.to_state())
    assert Sums.from_state(load_state(str(tmp_path / "bad.npz"))).error == (4, 0, "nan")


def _chunk(i: int) -> Sums:
    return Sums({"v": np.full(3, float(i)), "n": 1})


@pytest.mark.parametrize("lanes", [1, 3])
def test_lanes_and_tree_give_the_numpy_sum(lanes):
    args = [(i,) for i in range(11)]
    (folded, tree) = dask.compute(fold_in_lanes(_chunk, args, lanes=lanes), sum_chunk_results(_chunk, args), scheduler="threads")
    for total in (folded, tree):
        np.testing.assert_array_equal(total["v"], np.full(3, float(sum(range(11)))))
        assert total["n"] == 11


class _Stop(Exception):
    pass


def test_an_interrupted_resumable_fold_resumes_from_its_saved_lanes(tmp_path):
    """Lanes saved after every chunk (interval 0): the rerun computes only the chunks no lane saved, and sums exactly."""
    calls: list[int] = []
    stop_at = [6]

    def chunk(i):
        if stop_at[0] is not None and i == stop_at[0]:
            raise _Stop
        calls.append(i)
        return _chunk(i)

    ck = PassCheckpoint(str(tmp_path), 0.0, "pass 1/1", quiet=True)
    args = [(i,) for i in range(12)]
    with pytest.raises(_Stop):
        dask.compute(fold_in_lanes(chunk, args, lanes=2, checkpoint=ck), scheduler="sync")
    first = set(calls)
    assert first and 6 not in first
    calls.clear()
    stop_at[0] = None
    (total,) = dask.compute(fold_in_lanes(chunk, args, lanes=5, checkpoint=ck), scheduler="sync")  # keeps its 2 recorded lanes
    assert set(calls).isdisjoint(first) and set(calls) | first == set(range(12))
    np.testing.assert_array_equal(total["v"], np.full(3, float(sum(range(12)))))
    assert total["n"] == 12
