"""Kernel fits through the one fit runner: lazy training X is copied by the fit's one pass, so save_model makes no pass over it."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import zarr

from wideml import KernelLOL, KernelPCA, KPCATrick, load_model, open_store, save_model, write_store

N, P, CHUNK = 40, 600, 100

MODELS = [
    pytest.param(lambda: KernelPCA(n_components=4, sigma=2.0), id="kernel-pca"),
    pytest.param(lambda: KernelPCA(n_components=4, sigma=2.0, n_landmarks=15), id="kernel-pca-landmarks"),
    pytest.param(lambda: KPCATrick(learner="none", n_components=4, sigma=2.0), id="kpca-trick"),
    pytest.param(lambda: KPCATrick(learner="dne", n_components=6, sigma=2.0, n_landmarks=20), id="kpca-trick-landmarks"),
    pytest.param(lambda: KernelLOL(n_components=2, sigma=2.0), id="kernel-lol"),
]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    y = np.arange(N) % 2
    X = rng.standard_normal((N, P)) + 0.8 * y[:, None] * (np.arange(P) < 30)
    Xte = rng.standard_normal((10, P)) + 0.8 * (np.arange(10) % 2)[:, None] * (np.arange(P) < 30)
    return X, y, Xte


class Counted:
    """A dask array over ``X`` whose chunk computations are counted."""

    def __init__(self, X: np.ndarray):
        self.reads = 0

        def read(block):
            self.reads += 1
            return block

        self.array = da.from_array(X, chunks=(X.shape[0], CHUNK)).map_blocks(read, dtype=X.dtype, meta=np.empty((0, 0), X.dtype))


def _fit(est, X, y):
    return est.fit(X) if isinstance(est, KernelPCA) else est.fit(X, y)


def _out(est, X):
    return est.transform(X) if isinstance(est, KernelPCA) else est.predict_proba(X)


@pytest.mark.parametrize("make", MODELS)
def test_lazy_input_is_copied_by_the_fit_pass_and_saved_without_a_pass(data, make, tmp_path):
    X, y, Xte = data
    user = Counted(X)
    est = _fit(make(), user.array, y)
    assert user.reads == P // CHUNK and est.n_fit_passes_ == 1  # one pass, which also wrote the copy
    assert est.training_.path is None and not est.training_.in_memory
    np.testing.assert_array_equal(est.training_.array().compute(), X)  # the work group's copy, chunked like X
    assert est.training_.array().chunks == user.array.chunks
    fitted_out = _out(est, Xte)
    save_model(est, tmp_path / "m.zarr")
    assert user.reads == P // CHUNK, "save_model or transform computed the user's array"
    assert zarr.open_group(str(tmp_path / "m.zarr"), mode="r")["X_train"].shape == (N, P)
    loaded = load_model(tmp_path / "m.zarr")
    assert loaded.n_fit_passes_ == 1
    np.testing.assert_allclose(_out(loaded, Xte), fitted_out, rtol=0, atol=1e-12)
    oracle = _fit(make(), X, y)  # in-memory input: the same model
    np.testing.assert_allclose(est.embedding_, oracle.embedding_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fitted_out, _out(oracle, Xte), rtol=1e-9, atol=1e-9)
    if not isinstance(est, KernelPCA):
        np.testing.assert_array_equal(loaded.predict(Xte), oracle.predict(Xte))
    assert user.reads == P // CHUNK


def test_copy_keeps_the_dtype_and_outlives_the_users_array(data, tmp_path):
    X, y, Xte = data
    X32 = X.astype(np.float32)
    path = tmp_path / "x.zarr"
    z = zarr.create_array(str(path), shape=X32.shape, chunks=(N, CHUNK), dtype=np.float32)
    z[...] = X32
    est = KPCATrick(learner="none", n_components=4, sigma=2.0).fit(zarr.open_array(str(path), mode="r"), y)
    copy = est.training_.array()
    assert copy.dtype == np.float32
    before = est.predict(Xte)
    import shutil

    shutil.rmtree(path)  # the model no longer needs the user's array
    np.testing.assert_array_equal(est.predict(Xte), before)
    save_model(est, tmp_path / "m.zarr")
    np.testing.assert_array_equal(load_model(tmp_path / "m.zarr").predict(Xte), before)


def test_numpy_and_store_input_write_no_copy(data, tmp_path):
    X, y, Xte = data
    est = KernelPCA(n_components=3, sigma=2.0).fit(X)
    assert est.training_.in_memory and est.training_.path is None and not est.training_.needs_copy
    assert not est.training_.array().name.startswith("from-zarr")  # a view of X in memory, no work group
    store = open_store(write_store(tmp_path / "s.zarr", X, y, feature_chunk=CHUNK))
    for given in (store, store.X):
        est = KernelPCA(n_components=3, sigma=2.0).fit(given)
        assert est.training_.path == str((tmp_path / "s.zarr").resolve()) and not est.training_.needs_copy
        save_model(est, tmp_path / "k.zarr", overwrite=True)
        assert "X_train" not in zarr.open_group(str(tmp_path / "k.zarr"), mode="r")
    np.testing.assert_allclose(load_model(tmp_path / "k.zarr").transform(Xte), est.transform(Xte), rtol=0, atol=1e-12)


@pytest.mark.parametrize("make", MODELS)
def test_model_state_keys_are_unchanged(data, make):
    """The declared tables keep the keys the kernel models always saved (their schemas)."""
    X, y, _ = data
    est = _fit(make(), X, y)
    state, arrays = est._model_state()
    assert set(state) == {"basis", "training", "n_features_in", "n_fit_passes"}
    expected = {"kpca_eigenvalues", "kpca_vectors", "kpca_col_means", "kpca_offset", "X_train", "embedding"}
    if est.landmarks_ is not None:
        expected.add("landmarks")
    if not isinstance(est, KernelPCA):
        expected |= {"components", "codes", "classes"}
    if isinstance(est, KPCATrick) and est.selection_scores_ is not None:
        expected.add("selection_scores")
    assert set(arrays) == expected
