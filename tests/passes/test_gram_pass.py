"""The one-pass Gram / class statistics graph against in-memory numpy, across chunkings and schedulers."""

import dask
import dask.array as da
import numpy as np
import pytest

from wideml.passes.blocks import NonFiniteError
from wideml.passes.chunkmath import float32_centring_vector
from wideml.passes.gram import gram_pass
from wideml.passes.loadings import emit_pass, project_pass

CHUNKINGS = [
    (60, 500),  # one chunk
    (60, 77),  # irregular last chunk
    (60, 1),  # one feature per chunk
    (25, 120),  # chunked along samples too: stripes are stitched
]


def _data(dtype=np.float64, offset=0.0, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(60, 500)) + offset * rng.random(500)).astype(dtype)
    codes = rng.integers(0, 3, 60)
    return X, codes


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gram_and_medians_match_numpy(chunks, dtype):
    X, codes = _data(dtype, offset=1e3)
    sub = np.arange(0, 60, 2)
    with dask.config.set(scheduler="threads"):
        (st,) = dask.compute(gram_pass(da.from_array(X, chunks=chunks), codes, 3, median_subsets=[np.arange(60), sub],
                                       precision="float64"))
    X64 = X.astype(np.float64)
    m = X64.mean(0)
    Xc = X64 - m
    np.testing.assert_allclose(st.G, Xc @ Xc.T, rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(st.raw_gram(), X64 @ X64.T, rtol=1e-12)
    np.testing.assert_allclose(st.sq_norms(), (X64**2).sum(1), rtol=1e-12)
    for idx, ms in zip([np.arange(60), sub], st.medians):
        M = np.stack([np.median(X64[idx][codes[idx] == k], axis=0) for k in range(3)]) - m
        np.testing.assert_allclose(ms.P, Xc @ M.T, rtol=1e-9, atol=1e-7)
        np.testing.assert_allclose(ms.Q, M @ M.T, rtol=1e-9, atol=1e-7)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_float32_products_of_float32_data(chunks):
    """precision="auto" on float32 data: centred by float32 means, products in float32, sums in float64."""
    X, codes = _data(np.float32, offset=1e3)
    (st,) = dask.compute(gram_pass(da.from_array(X, chunks=chunks), codes, 3, median_subsets=[np.arange(60)]), scheduler="sync")
    X64 = X.astype(np.float64)
    c = float32_centring_vector(X).astype(np.float64)  # the centring vector actually used (per column: any chunking)
    assert np.abs(c - X64.mean(0)).max() <= 1e-6 * np.abs(X64.mean(0)).max()  # float32 sums: a few ulps
    Xc = X64 - c
    scale = np.abs(Xc @ Xc.T).max()
    np.testing.assert_allclose(st.G, Xc @ Xc.T, atol=1e-6 * scale)
    np.testing.assert_allclose(st.r, Xc @ c, rtol=1e-5, atol=1e-6 * np.abs(Xc @ c).max())
    np.testing.assert_allclose(st.raw_gram(), X64 @ X64.T, rtol=1e-9)
    J = np.eye(60) - 1 / 60
    np.testing.assert_allclose(J @ st.G @ J, J @ X64 @ X64.T @ J, atol=1e-6 * scale)
    M = np.stack([np.median(X64[codes == k], axis=0) for k in range(3)]) - c
    np.testing.assert_allclose(st.medians[0].P, Xc @ M.T, atol=1e-6 * np.abs(Xc @ M.T).max())


@pytest.mark.parametrize("scheduler", ["sync", "threads", "processes"])
def test_same_result_on_every_local_scheduler(scheduler):
    X, codes = _data()
    with dask.config.set(scheduler=scheduler):
        (st,) = dask.compute(gram_pass(da.from_array(X, chunks=(60, 90)), codes, 3, median_subsets=[np.arange(60)]))
    Xc = X - X.mean(0)
    np.testing.assert_allclose(st.G, Xc @ Xc.T, rtol=1e-10, atol=1e-9)


def test_gram_of_a_store_on_a_local_cluster(tmp_path):
    """Store chunks read inside the tasks, added into lane accumulators on worker processes: the same Gram as numpy."""
    from wideml.runtime import compute, use_scheduler
    from wideml.storage import open_store, write_store

    X, codes = _data(np.float32, offset=100.0)
    write_store(tmp_path / "s.zarr", X, codes, feature_chunk=37)
    store = open_store(tmp_path / "s.zarr")
    with use_scheduler("local:2"):
        (st,) = compute(gram_pass(store.X, codes, 3, median_subsets=[np.arange(60)]))
    X64 = X.astype(np.float64)
    np.testing.assert_allclose(st.raw_gram(), X64 @ X64.T, rtol=1e-6)
    Xc = X64 - X64.mean(0)
    np.testing.assert_allclose(st.G - st.G.mean(0) - st.G.mean(1)[:, None] + st.G.mean(), Xc @ Xc.T, atol=1e-3)


def test_nan_is_reported_with_its_feature_index():
    X, codes = _data()
    X[7, 321] = np.nan
    with pytest.raises(NonFiniteError, match="feature index 321"):
        dask.compute(gram_pass(da.from_array(X, chunks=(60, 100)), codes, 3), scheduler="sync")


def test_inf_in_new_data_is_reported_by_projection():
    X, _ = _data()
    X[0, 5] = np.inf
    with pytest.raises(NonFiniteError, match="feature index 5"):
        dask.compute(project_pass(da.from_array(X, chunks=(60, 100)), np.ones((500, 2))), scheduler="sync")


@pytest.mark.parametrize("chunks", [(60, 500), (60, 33)])
def test_emit_and_project_match_numpy(chunks):
    X, codes = _data()
    B = np.random.default_rng(1).normal(size=(60, 4))
    (out,) = dask.compute(emit_pass(da.from_array(X, chunks=chunks), B), scheduler="threads")
    shift, A, _, _ = out
    np.testing.assert_allclose(A, X.T @ B, rtol=1e-10)
    np.testing.assert_allclose(shift, X.mean(0) @ A, rtol=1e-10)
    (Z,) = dask.compute(project_pass(da.from_array(X, chunks=chunks), A), scheduler="threads")
    np.testing.assert_allclose(Z, X @ A, rtol=1e-10)


def test_tiny_memory_budget_gives_the_same_gram(monkeypatch):
    """A budget small enough to force 3-feature sub-stripes inside each chunk changes nothing."""
    monkeypatch.setenv("WIDEML_TEST_MEMORY_FLOOR", "1")  # test hook: a budget far below what users may set
    X, codes = _data()
    ref = dask.compute(gram_pass(da.from_array(X, chunks=(60, 100)), codes, 3, median_subsets=[np.arange(60)]), scheduler="sync")[0]
    with dask.config.set({"wideml.memory-limit": 60 * 8 * 5 * 4 * 3}):
        from wideml.passes.blocks import sub_stripe_width

        assert sub_stripe_width(60, copies=5) < 10
        small = dask.compute(gram_pass(da.from_array(X, chunks=(60, 100)), codes, 3, median_subsets=[np.arange(60)]), scheduler="sync")[0]
    np.testing.assert_allclose(small.G, ref.G, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(small.medians[0].P, ref.medians[0].P, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_project_pass_float32_keeps_centred_coordinates(chunks):
    """Float32 products on chunks centred by their own means: X A exact to float32 round-off of the centred data."""
    X, _ = _data(np.float32, offset=1e3)
    A = np.random.default_rng(5).normal(size=(500, 4))
    (got,) = dask.compute(project_pass(da.from_array(X, chunks=chunks), A), scheduler="sync")
    ref = X.astype(np.float64) @ A
    centred_ref = ref - ref.mean(0)
    np.testing.assert_allclose(got - got.mean(0), centred_ref, atol=1e-5 * np.abs(centred_ref).max())
    np.testing.assert_allclose(got, ref, rtol=1e-7)
    (exact,) = dask.compute(project_pass(da.from_array(X, chunks=chunks), A, precision="float64"), scheduler="sync")
    np.testing.assert_allclose(exact, ref, rtol=1e-12)
