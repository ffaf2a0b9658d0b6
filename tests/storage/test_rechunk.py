"""Rechunking: the copy planner, round trips between chunkings and formats, and bounded memory."""

from __future__ import annotations

import tracemalloc
import warnings

import dask
import numpy as np
import pytest

from conftest import store_name
from wideml.exceptions import PerformanceWarning, StoreError, WidemlError
from wideml.storage import open_store
from wideml.storage.rechunk import Stage, plan_copy, read_factor, rechunk, regions, task_cost


def test_regions_tile_the_array_exactly():
    boxes = regions((10, 23), (4, 6))
    seen = np.zeros((10, 23), dtype=int)
    for r0, r1, c0, c1 in boxes:
        seen[r0:r1, c0:c1] += 1
    assert (seen == 1).all()


def test_read_factor_counts_rereads():
    assert read_factor((8, 100), (8, 10), (8, 20)) == 1.0
    assert read_factor((8, 90), (8, 30), (8, 10)) == pytest.approx(3.0)  # each 30-wide chunk read by 3 regions
    assert read_factor((8, 100), (1, 1), (8, 7)) == 1.0


@pytest.mark.parametrize(
    "src_chunks, budget",
    [((64, 100), 2**18), ((8, 100), 2**18), ((8, 10_000), 2**20), ((1, 10_000), 2**20), ((1, 1), 2**16)],
)
def test_plans_fit_the_budget_and_align_to_output_chunks(src_chunks, budget):
    shape, itemsize = (64, 10_000), 4
    dst = (64, 128)
    stages = plan_copy(shape, itemsize, src_chunks, dst, budget)
    assert stages[-1].dst_chunks == dst
    source = src_chunks
    for stage in stages:
        h, c = stage.dst_chunks
        assert stage.region[0] % h == 0 or stage.region[0] >= shape[0]
        assert stage.region[1] % c == 0
        assert task_cost(shape, stage.region, source, itemsize) <= budget
        source = stage.dst_chunks


def test_wide_sample_chunks_take_two_stages():
    # chunks of 8 whole rows: a direct full-height copy would decode every row block once per output chunk
    stages = plan_copy((64, 10_000), 4, (8, 10_000), (64, 128), 2**20)
    assert len(stages) == 2
    assert stages[0].dst_chunks[0] % 8 == 0 and stages[0].dst_chunks[1] == 128
    assert read_factor((64, 10_000), (8, 10_000), stages[0].region) <= 2
    # already full-height chunks: one stage
    assert len(plan_copy((64, 10_000), 4, (64, 100), (64, 128), 2**20)) == 1


def test_plan_refuses_an_output_chunk_larger_than_the_budget():
    with pytest.raises(WidemlError, match="feature chunk"):
        plan_copy((1000, 1000), 8, (1, 1), (1000, 1000), 2**20)


def test_plan_warns_when_source_chunks_exceed_the_budget():
    with pytest.warns(PerformanceWarning, match="memory limit"):
        stages = plan_copy((64, 10_000), 4, (64, 10_000), (64, 128), 2**17)
    assert stages[-1] == Stage((64, 128), stages[-1].region)


@pytest.mark.parametrize("src_fmt", ["zarr", "hdf5"])
def test_rechunk_round_trip(tmp_path, make_store, src_fmt, fmt, no_leftovers):
    src, X, y = make_store(n=24, p=300, fmt=src_fmt, name="src", sample_chunk=5, feature_chunk=300,
                           sample_ids=[f"s{i}" for i in range(24)], feature_ids=[f"f{j}" for j in range(300)],
                           feature_shape=(10, 30), source="unit-test")
    out = tmp_path / store_name(fmt, "out")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)  # rechunk itself must not warn about the input it fixes
        rechunk(src, out, memory_limit="64KiB")
        store = open_store(out)
    np.testing.assert_array_equal(store.X.compute(), X)
    np.testing.assert_array_equal(store.y, y)
    np.testing.assert_array_equal(store.sample_ids, [f"s{i}" for i in range(24)])
    np.testing.assert_array_equal(store.feature_ids, [f"f{j}" for j in range(300)])
    assert store.feature_shape == (10, 30)
    assert store.attrs["source"] == "unit-test"
    assert store.stored_chunks[0] == 24 and store.stored_chunks[1] < 300
    assert [len(c) for c in store.X.chunks] == [1, -(-300 // store.stored_chunks[1])]
    no_leftovers(out)


def test_rechunk_feature_and_sample_chunk_options(tmp_path, make_store):
    src, X, _ = make_store(n=20, p=50, feature_chunk=7)
    rechunk(src, tmp_path / "a.zarr", feature_chunk=16)
    assert open_store(tmp_path / "a.zarr").stored_chunks == (20, 16)
    with pytest.warns(PerformanceWarning):
        rechunk(src, tmp_path / "b.zarr", feature_chunk=16, sample_chunk=4)
        store = open_store(tmp_path / "b.zarr")
    assert store.stored_chunks == (4, 16)
    np.testing.assert_array_equal(store.X.compute(), X)


def test_rechunk_unlabelled_store(tmp_path, make_store, quiet_performance):
    src, X, _ = make_store(labelled=False, sample_chunk=6)
    rechunk(src, tmp_path / "out.zarr")
    store = open_store(tmp_path / "out.zarr")
    assert store.y is None
    np.testing.assert_array_equal(store.X.compute(), X)


def test_rechunk_in_place_with_overwrite(tmp_path, make_store, no_leftovers, quiet_performance):
    src, X, y = make_store(sample_chunk=6)
    with pytest.raises(StoreError, match="--overwrite"):
        rechunk(src, src)
    rechunk(src, src, overwrite=True)
    store = open_store(src)
    assert store.stored_chunks[0] == 24
    np.testing.assert_array_equal(store.X.compute(), X)
    no_leftovers(src)


def test_rechunk_memory_is_bounded(tmp_path, rng):
    """A 7 MB store chunked along samples is rechunked within a 2 MiB budget; values identical."""
    from wideml.storage import write_store

    budget = 2 * 2**20
    warm = rng.standard_normal((32, 500)).astype(np.float32)
    write_store(tmp_path / "warm.zarr", warm, sample_chunk=8, feature_chunk=250)
    rechunk(tmp_path / "warm.zarr", tmp_path / "warm2.zarr", memory_limit=budget)  # imports and caches
    X = rng.standard_normal((32, 56_000)).astype(np.float32)
    write_store(tmp_path / "src.zarr", X, np.arange(32) % 2, sample_chunk=8, feature_chunk=1024)
    tracemalloc.start()
    try:
        with dask.config.set(num_workers=2):  # the budget is shared by the tasks that run at once
            rechunk(tmp_path / "src.zarr", tmp_path / "out.zarr", memory_limit=budget)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"peak {peak} bytes for a budget of {budget}")
    assert peak < budget < X.nbytes / 3, f"peak {peak} bytes for a budget of {budget}"
    store = open_store(tmp_path / "out.zarr")
    assert store.stored_chunks[0] == 32
    np.testing.assert_array_equal(store.X.compute(), X)
