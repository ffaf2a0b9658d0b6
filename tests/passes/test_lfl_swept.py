"""LFL's float32 fit task in row tiles (passes/lfl.py, _lfl_swept_chunk) against float64 numpy oracles.

Covers what the tiled path adds: several row tiles per chunk, a chunk the task
centres in place (a store's own chunk) or in a cache-sized buffer (anything
else), NaN/inf in rows the centring sample skips, and finite float32 values
whose sums overflow (the chunk is redone in float64, read again when it was
overwritten).
"""

import dask
import dask.array as da
import numpy as np
import pytest

import wideml.passes.lfl as lfl_mod
from wideml import open_store, write_store
from wideml.passes.blocks import NonFiniteError
from wideml.passes.keyed_random import sparse_sign_columns
from wideml.passes.lfl import lfl_fit_pass

SEED, K_RAND, DENSITY = 5, 4, 0.05


def _data(n=70, p=300, offset=1e3, seed=0):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 3, n)
    X = (rng.normal(size=(n, p)) + 2 * np.eye(3)[codes] @ rng.normal(size=(3, p)) + offset * rng.random(p)).astype(np.float32)
    return X, codes


def _oracle(X, codes, robust):
    X64 = X.astype(np.float64)
    m = X64.mean(0)
    C = np.stack([(np.median if robust else np.mean)(X64[codes == k], axis=0) for k in range(3)])
    R = sparse_sign_columns(SEED, 0, X.shape[1], K_RAND, DENSITY).toarray()
    return m, C, X64 @ C.T, X64 @ R, R


def _spy(monkeypatch):
    """Record (inplace, returned None) for every call of the tiled chunk task."""
    calls, real = [], lfl_mod._lfl_swept_chunk

    def spy(*args):
        out = real(*args)
        calls.append((args[9], out is None))  # (block, offset, codes, n_classes, robust, seed, k, density, out_group, inplace, scheme)
        return out

    monkeypatch.setattr(lfl_mod, "_lfl_swept_chunk", spy)
    return calls


def _fit(Xd, codes, robust, out_group=None):
    (st,) = dask.compute(lfl_fit_pass(Xd, codes, 3, n_random=K_RAND, seed=SEED, density=DENSITY, robust=robust,
                                      out_group=out_group), scheduler="sync")
    return st


def _check(st, X, codes, robust, tol=1e-5):
    m, C, XC, XR, R = _oracle(X, codes, robust)
    np.testing.assert_allclose(st["CC"], C @ C.T, rtol=1e-6)
    np.testing.assert_allclose(st["mC"], C @ m, rtol=1e-6)
    for got, raw, mean_row in ((st["XC"], XC, C @ m), (st["XR"], XR, R.T @ m)):
        centred = raw - mean_row  # what LFL uses: the products' centred coordinates, float32 round-off of the spread
        np.testing.assert_allclose(got - mean_row, centred, rtol=0, atol=tol * np.abs(centred).max())
    if "centroids" in st:
        np.testing.assert_allclose(st["centroids"], C, rtol=1e-6)


@pytest.mark.parametrize("robust", [False, True])
@pytest.mark.parametrize("tile_bytes", [1 << 19, 4 * 77 * 3])
def test_row_tiles_match_float64_oracle_with_large_offsets(monkeypatch, robust, tile_bytes):
    """One tile per chunk or 3-row tiles (the last one short): same sums as float64 numpy, offsets of 1e3 and all."""
    monkeypatch.setattr(lfl_mod, "_TILE_BYTES", tile_bytes)
    X, codes = _data()
    before = X.copy()
    calls = _spy(monkeypatch)
    st = _fit(da.from_array(X, chunks=(70, 77)), codes, robust)
    assert calls == [(False, False)] * 4  # every chunk through the tiled path, none redone
    _check(st, X, codes, robust)
    np.testing.assert_array_equal(X, before)  # a user's array is centred tile by tile in a buffer, never in place


@pytest.mark.parametrize("robust", [False, True])
def test_store_chunks_centred_in_place_match_the_buffered_path(tmp_path, monkeypatch, robust):
    """A store's chunk is the task's own: centred in place, with the same results as the buffered path, and the store untouched."""
    monkeypatch.setattr(lfl_mod, "_TILE_BYTES", 4 * 64 * 8)
    X, codes = _data()
    write_store(tmp_path / "s.zarr", X, codes, feature_chunk=64)
    store = open_store(tmp_path / "s.zarr")
    group = tmp_path / "model"
    import zarr

    g = zarr.open_group(str(group), mode="w")
    for name, rows in (("class_means", 3), ("feature_mean", None), ("class_medians", 3)):
        shape, chunks = ((rows, 300), (rows, 64)) if rows else ((300,), (64,))
        g.create_array(name, shape=shape, chunks=chunks, dtype="f8")
    calls = _spy(monkeypatch)
    in_place = _fit(store.X, codes, robust, out_group=str(group))
    assert calls[:4] == [(True, False)] * 4 and not calls[4][1]  # the full chunks are read into the task's own buffer
    monkeypatch.setattr(lfl_mod, "_CENTRE_IN_PLACE", False)
    buffered = _fit(store.X, codes, robust, out_group=str(group))
    assert calls[5:] == [(False, False)] * 5
    for key in ("XC", "XR", "CC", "mC", "mR"):
        np.testing.assert_array_equal(in_place[key], buffered[key])
    _check(in_place, X, codes, robust)
    means = np.stack([X.astype(np.float64)[codes == k].mean(0) for k in range(3)])
    np.testing.assert_allclose(zarr.open_array(str(group / "class_means"))[:], means, rtol=1e-6)
    np.testing.assert_allclose(zarr.open_array(str(group / "feature_mean"))[:], X.astype(np.float64).mean(0), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(store.X), X)


@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("row", [37, 36])
@pytest.mark.parametrize("source", ["store", "array"])
def test_nonfinite_is_named_by_feature_in_sampled_and_unsampled_rows(tmp_path, value, row, source):
    """The centring vector comes from every other row of 140: NaN/inf in a skipped row (37) is found by the
    sweep, in a sampled one (36) at once; either way the lowest feature index is named."""
    X, codes = _data(n=140)
    X[row, 200] = value
    X[row - 30, 250] = value
    if source == "store":
        write_store(tmp_path / "s.zarr", X, codes, feature_chunk=64)
        Xd = open_store(tmp_path / "s.zarr").X
    else:
        Xd = da.from_array(X, chunks=(140, 64))
    with pytest.raises(NonFiniteError, match="feature index 200"):
        _fit(Xd, codes, False)


@pytest.mark.parametrize("source", ["store", "array"])
def test_float32_overflow_is_redone_in_float64(tmp_path, monkeypatch, source):
    """Finite float32 values whose float32 sums overflow: the chunk is redone in float64 (a store chunk read
    again), and the result matches the float64 oracle instead of holding inf."""
    X, codes = _data(offset=0.0)
    X[:, 64:128] *= np.float32(1e37)  # every class sum of these features overflows float32
    if source == "store":
        write_store(tmp_path / "s.zarr", X, codes, feature_chunk=64)
        Xd = open_store(tmp_path / "s.zarr").X
    else:
        Xd = da.from_array(X, chunks=(70, 64))
    calls = _spy(monkeypatch)
    st = _fit(Xd, codes, False)
    assert sorted(redone for _, redone in calls) == [False] * 4 + [True]  # only the overflowing chunk is redone
    assert all(np.isfinite(st[k]).all() for k in ("XC", "XR", "CC", "mC", "mR"))
    m, C, XC, XR, R = _oracle(X, codes, False)
    np.testing.assert_allclose(st["XC"], XC, rtol=1e-5)
    np.testing.assert_allclose(st["CC"], C @ C.T, rtol=1e-5)
