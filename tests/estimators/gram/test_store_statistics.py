"""Per-feature statistics the passes write, and fits on compressed stores, against numpy across chunkings."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from oracles import make_data, max_angle, reference_lol
from wideml import LOL, open_store, write_store
from wideml.passes.chunkmath import float32_centring_vector
from wideml.passes.gram import FEATURE_MEAN


@pytest.mark.parametrize("solver", ["gram", "randomized"])
@pytest.mark.parametrize("feature_chunk", [64, 113])
def test_class_means_and_feature_means_match_numpy(tmp_path, solver, feature_chunk):
    """Class means and feature means written by the first pass equal numpy's, on float32 data with offsets of 1e3."""
    X, y = make_data(n=90, p=500, K=3, offset=1e3, signal=1e-2, dtype=np.float32, seed=4)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=feature_chunk)
    est = LOL(6, solver=solver).fit(open_store(tmp_path / "s.zarr"))
    X64 = X.astype(np.float64)
    means = np.stack([X64[y == k].mean(axis=0) for k in range(3)])
    np.testing.assert_allclose(np.asarray(est.class_means_), means, rtol=0, atol=1e-4)
    # feature means written into the model group (now from the class sums, not a separate sweep): within a few
    # float32 ulps of 1e3, and closer to the exact means than the rounded centring vector alone
    m = np.asarray(zarr.open_array(f"{est._group}/{FEATURE_MEAN}", mode="r")[:])
    exact = X64.mean(axis=0)
    c = float32_centring_vector(X).astype(np.float64)
    assert np.abs(m - exact).max() < 1e-4
    assert np.abs(m - exact).mean() < 0.5 * np.abs(c - exact).mean()


@pytest.mark.parametrize("compressor", ["zstd", "lz4"])
@pytest.mark.parametrize("feature_chunk", [50, 97])
def test_fit_on_a_compressed_store_matches_numpy(tmp_path, compressor, feature_chunk):
    """Chunks decoded straight from their files feed the same passes: the LOL subspace equals the in-memory reference."""
    X, y = make_data(n=80, p=400, K=3, seed=5)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=feature_chunk, compressor=compressor)
    store = open_store(tmp_path / "s.zarr")
    assert "read straight from the chunk files" in store.codec
    est = LOL(5, solver="gram", precision="float64").fit(store)
    assert max_angle(np.asarray(est.components_).T, reference_lol(X, y, 5, robust=True)) < 1e-6
    np.testing.assert_allclose(est.transform(store), est.embedding_, rtol=1e-9, atol=1e-9)
