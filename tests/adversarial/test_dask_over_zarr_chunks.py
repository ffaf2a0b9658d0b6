"""Adversarial (issue 22): a dask array over a zarr array with a deleted chunk is refused, never read as zeros.

A plain zarr array with an absent chunk was already refused, but the same array
wrapped by ``da.from_zarr`` or ``da.from_array`` went straight into the passes:
``fit`` (and ``predict``) silently used zeros for the missing block. Every zarr
array a dask graph reads from is now found (one walk of the graph, nothing
computed) and checked like a plain one, honouring ``wideml = {"missing_chunks": "fill"}``.
"""

from __future__ import annotations

import os
import time

import dask
import dask.array as da
import numpy as np
import pytest

import wideml
from wideml.exceptions import StoreError
from wideml.inputs.as_dask import as_dask_array
from wideml.inputs.zarr_chunks import zarr_arrays_in_graph

WRAPS = {
    "from_zarr": lambda a: da.from_zarr(a),
    "from_array": lambda a: da.from_array(a, chunks=(50, 100)),
    "from_array_inline": lambda a: da.from_array(a, chunks=(50, 100), inline_array=True),
    "from_zarr_locked": lambda a: da.from_array(a, chunks=(50, 100), lock=True),
}


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 400)).astype("f4")
    y = np.repeat([0, 1], 25)
    X[y == 1, :5] += 2
    return X, y


def _write(path, X, **kw):
    import zarr

    z = zarr.create_array(store=str(path), shape=X.shape, chunks=(50, 100), dtype=X.dtype, **kw)
    z[:] = X
    return z


def _holed(tmp_path, X, **kw):
    """An array at tmp_path/za.zarr with chunk (0, 2) deleted, opened read-only."""
    import zarr

    _write(tmp_path / "za.zarr", X, **kw)
    os.remove(tmp_path / "za.zarr" / ("0.2" if kw.get("zarr_format") == 2 else "c/0/2"))
    return zarr.open_array(str(tmp_path / "za.zarr"), mode="r")


def _one_sentence(info) -> str:
    text = str(info.value)
    assert text.count(". ") == 0 and "\n" not in text
    return text


@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_fit_on_a_dask_array_over_a_holed_zarr_array_is_refused(tmp_path, data, wrap):
    X, y = data
    a = _holed(tmp_path, X)
    with pytest.raises(StoreError) as info:
        wideml.EmbeddingClassifier(wideml.LOL(2), "lda").fit(WRAPS[wrap](a), y)
    text = _one_sentence(info)
    assert "chunk (0, 2) (rows 0:50, columns 200:300)" in text and str(tmp_path / "za.zarr") in text
    assert "missing_chunks" in text


@pytest.mark.parametrize("wrap", ["from_zarr", "from_array"])
def test_predict_and_transform_of_a_dask_array_over_a_holed_zarr_array_are_refused(tmp_path, data, wrap):
    X, y = data
    est = wideml.EmbeddingClassifier(wideml.LOL(2), "lda").fit(X, y)
    lol = wideml.LOL(2).fit(X, y)
    a = _holed(tmp_path, X)
    with pytest.raises(StoreError, match=r"chunk \(0, 2\)"):
        est.predict(WRAPS[wrap](a))
    with pytest.raises(StoreError, match=r"chunk \(0, 2\)"):
        lol.transform(WRAPS[wrap](a))


def test_slice_and_astype_on_top_are_still_refused(tmp_path, data):
    X, y = data
    a = _holed(tmp_path, X)
    with pytest.raises(StoreError, match=r"chunk \(0, 2\)"):
        wideml.EmbeddingClassifier(wideml.LOL(2), "lda").fit(da.from_zarr(a)[:, :300].astype("f8"), y)
    est = wideml.LOL(2).fit(X[:, :300], y)
    with pytest.raises(StoreError, match=r"chunk \(0, 2\)"):
        est.transform(da.from_zarr(a)[:, :300].astype("f8"))


def test_an_optimized_graph_is_still_refused(tmp_path, data):
    """After dask.optimize the zarr array sits inside fused tasks' arguments: still found."""
    X, y = data
    a = _holed(tmp_path, X)
    (opt,) = dask.optimize(da.from_zarr(a)[:, :300].astype("f8") * 1.0)
    with pytest.raises(StoreError, match=r"chunk \(0, 2\)"):
        wideml.LOL(2).fit(opt, y)


def test_zarr_v2_format_array_wrapped_by_dask_is_refused(tmp_path, data):
    X, y = data
    a = _holed(tmp_path, X, zarr_format=2)
    with pytest.raises(StoreError, match=r"chunk \(0, 2\)"):
        wideml.LOL(2).fit(da.from_zarr(a), y)


def test_two_zarr_sources_concatenated_are_each_checked(tmp_path, data):
    import zarr

    X, y = data
    good = _write(tmp_path / "good.zarr", X)
    bad = _holed(tmp_path, X)
    both = da.concatenate([da.from_zarr(good), da.from_zarr(bad)], axis=1)
    with pytest.raises(StoreError, match=r"chunk \(0, 2\).*za\.zarr"):
        wideml.LOL(2).fit(both, y)
    found = zarr_arrays_in_graph(da.concatenate([da.from_zarr(good), da.from_array(good, chunks=(50, 50)), bad[:, :100]], axis=1))
    assert len(found) == 1 and found[0] is good  # deduplicated by identity; a numpy slice read eagerly is no source
    found = zarr_arrays_in_graph(da.concatenate([da.from_zarr(good), da.from_array(bad, chunks=(50, 50))], axis=1))
    assert sorted(map(id, found)) == sorted([id(good), id(bad)])


def test_declared_fill_is_honoured_through_dask(tmp_path, data):
    import zarr

    X, y = data
    X = X.astype("f8")  # float64 throughout, so the fits can agree to 1e-10
    a = _holed(tmp_path, X)
    zarr.open_array(str(tmp_path / "za.zarr"), mode="r+").attrs["wideml"] = {"missing_chunks": "fill"}
    a = zarr.open_array(str(tmp_path / "za.zarr"), mode="r")
    Xz = X.copy()
    Xz[:, 200:300] = 0
    got = wideml.LOL(2).fit(da.from_zarr(a), y).transform(Xz)
    np.testing.assert_allclose(got, wideml.LOL(2).fit(Xz, y).transform(Xz), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("wrap", ["from_zarr", "from_array"])
def test_a_complete_array_through_dask_fits_like_numpy(tmp_path, data, wrap):
    import zarr

    X4, y = data
    X = X4.astype("f8")  # float64, so the fits can agree to 1e-10 (float32 fits differ in the 6th digit, numpy or not)
    _write(tmp_path / "ok.zarr", X)
    a = zarr.open_array(str(tmp_path / "ok.zarr"), mode="r")
    est = wideml.EmbeddingClassifier(wideml.LOL(2), "lda").fit(WRAPS[wrap](a), y)
    ref = wideml.EmbeddingClassifier(wideml.LOL(2), "lda").fit(X, y)
    np.testing.assert_allclose(est.transform(WRAPS[wrap](a)), ref.transform(X), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(est.predict(da.from_zarr(a).astype("f4")), ref.predict(X4))
    _write(tmp_path / "ok4.zarr", X4)  # the float32 array: equal to the float32 numpy fit at float32 precision
    a4 = zarr.open_array(str(tmp_path / "ok4.zarr"), mode="r")
    got = wideml.EmbeddingClassifier(wideml.LOL(2), "lda").fit(WRAPS[wrap](a4), y).transform(X)
    want = wideml.EmbeddingClassifier(wideml.LOL(2), "lda").fit(X4, y).transform(X)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_check_computes_nothing(tmp_path, data):
    X, y = data
    a = _holed(tmp_path, X)
    calls = []

    def spy(*args, **kwargs):
        calls.append(1)
        raise AssertionError("the check computed a dask graph")

    with dask.config.set(scheduler=spy):
        with pytest.raises(StoreError):
            as_dask_array(da.from_zarr(a).astype("f8"))
    assert not calls


def test_h5py_and_numpy_backed_dask_arrays_pass_untouched(tmp_path, data):
    h5py = pytest.importorskip("h5py")
    X, y = data
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f.create_dataset("X", data=X, chunks=(50, 100))
    with h5py.File(tmp_path / "x.h5", "r") as f:
        Xd = da.from_array(f["X"], chunks=(50, 100))
        assert zarr_arrays_in_graph(Xd) == []
        assert as_dask_array(Xd) is Xd
    assert zarr_arrays_in_graph(da.from_array(X, chunks=(50, 100))) == []


def test_a_feature_store_fit_holds_no_zarr_array_to_check_and_the_walk_is_cheap(tmp_path, data):
    """A FeatureStore's X reads through wideml's own reader (checked by open_store): the walk finds nothing, fast."""
    X, y = data
    wideml.write_store(tmp_path / "s.zarr", X, y)
    s = wideml.open_store(tmp_path / "s.zarr")
    assert zarr_arrays_in_graph(s.X) == []
    np.testing.assert_allclose(wideml.LOL(2).fit(s).transform(X), wideml.LOL(2).fit(X, y).transform(X), rtol=1e-10, atol=1e-10)
    from wideml.storage.reader import ZarrReader

    reader = ZarrReader(str(tmp_path / "s.zarr"), "X", (50, 10_000 * 8), np.dtype("f4"), (50, 8))
    big = da.from_array(reader, chunks=(50, 8), lock=False, asarray=True, meta=np.empty((0, 0), dtype="f4"), name="store-like")
    big = big[:, 8:].astype("f8")
    assert big.numblocks[1] >= 9_999
    t0 = time.perf_counter()
    assert zarr_arrays_in_graph(big) == []
    assert time.perf_counter() - t0 < 0.5
