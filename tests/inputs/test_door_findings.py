"""The input door against a user-world tester's findings (issue 23): replaced HDF5 files, relative zarr paths, malformed X.

Oracles: the data the user's handle reads (``dataset[:]``), fits on the
in-memory array, and "one WidemlError sentence" (no newline, no array dump).
"""

from __future__ import annotations

import os

import dask
import dask.array as da
import h5py
import numpy as np
import pytest
import zarr

import wideml
from wideml.exceptions import StoreError, WidemlError
from wideml.inputs.as_dask import as_dask_array


def _one_sentence(excinfo, *words: str) -> str:
    message = str(excinfo.value)
    assert isinstance(excinfo.value, WidemlError), repr(excinfo.value)
    assert "\n" not in message.strip() and len(message) < 400, message
    for word in words:
        assert word.lower() in message.lower(), f"{word!r} not in: {message}"
    return message


def _data(n=40, p=120, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, p))
    X[:, :5] += 1.5 * y[:, None]
    return X, y


# ----------------------------------------------------------------------------- finding 1: HDF5 file replaced on disk
def _write_h5(path, A, how):
    kw = {"chunked": {"chunks": (A.shape[0], 16)}, "contiguous": {}, "gzip": {"chunks": (A.shape[0], 16), "compression": "gzip"}}
    with h5py.File(path, "w") as f:
        f.create_dataset("X", data=A, **kw[how])


def _replace(path, A, how, same_stamp=True):
    """Replace the file at ``path`` by another with the same layout (and, by default, the same size and mtime)."""
    old = os.stat(path)
    tmp = str(path) + ".tmp"
    _write_h5(tmp, A, how)
    os.replace(tmp, path)
    if same_stamp:
        os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert os.stat(path).st_ino != old.st_ino


@pytest.mark.parametrize("how", ["chunked", "contiguous", "gzip"])
def test_h5py_file_replaced_before_the_view_reads_the_handles_data(tmp_path, how):
    """The file is replaced after the user opened it: the view reads what the handle reads, never the new file."""
    X, _ = _data()
    path = tmp_path / "new.h5"
    _write_h5(path, X, how)
    with h5py.File(path, "r") as f:
        d = f["X"]
        _replace(path, X[::-1] * 2, how)
        assert np.array_equal(d[:], X)
        np.testing.assert_array_equal(as_dask_array(d).compute(), X)


@pytest.mark.parametrize("how", ["chunked", "contiguous"])
def test_h5py_file_replaced_between_view_and_compute_is_refused(tmp_path, how):
    """Same size and mtime, another file at the path: the raw reader refuses in one sentence naming the file."""
    X, _ = _data()
    path = tmp_path / "new.h5"
    _write_h5(path, X, how)
    with h5py.File(path, "r") as f:
        Xd = as_dask_array(f["X"])
        _replace(path, X[::-1] * 2, how)
        with pytest.raises(StoreError) as excinfo:
            Xd.compute()
    _one_sentence(excinfo, str(path), "replaced", "open it again")


@pytest.mark.parametrize("when", ["before_view", "before_compute"])
def test_h5py_reader_of_other_processes_refuses_a_replaced_file(tmp_path, when):
    """A compressed dataset off the threaded scheduler is re-opened by path: a replaced file is refused."""
    X, _ = _data()
    path = tmp_path / "new.h5"
    _write_h5(path, X, "gzip")
    with h5py.File(path, "r") as f, dask.config.set(scheduler="processes"):
        if when == "before_view":
            _replace(path, X[::-1] * 2, "gzip")
            with pytest.raises(StoreError) as excinfo:
                as_dask_array(f["X"])
        else:
            Xd = as_dask_array(f["X"])
            _replace(path, X[::-1] * 2, "gzip")
            with pytest.raises(StoreError) as excinfo:
                Xd.compute(scheduler="sync")
    _one_sentence(excinfo, str(path), "replaced", "open it again")


def test_h5py_processes_scheduler_unchanged_file_still_reads(tmp_path):
    X, _ = _data()
    path = tmp_path / "same.h5"
    _write_h5(path, X, "gzip")
    with h5py.File(path, "r") as f, dask.config.set(scheduler="processes"):
        Xd = as_dask_array(f["X"])
        np.testing.assert_array_equal(Xd.compute(scheduler="sync"), X)


@pytest.mark.parametrize("make", [lambda: wideml.EmbeddingClassifier(wideml.LOL(3)), lambda: wideml.KernelPCA(3),
                                  lambda: wideml.EncoderClassifier(kernels=("linear",))],
                         ids=["EmbeddingClassifier", "KernelPCA", "EncoderClassifier"])
def test_tester_repro_predict_on_a_replaced_h5py_file(tmp_path, monkeypatch, make):
    """Finding 1's repro: predictions on the handle equal predictions on the handle's data (or one refusal)."""
    monkeypatch.chdir(tmp_path)
    X, y = _data()
    Xt, _ = _data(20, seed=1)
    model = make().fit(X, y)
    out = (lambda m, A: m.predict(A)) if hasattr(model, "predict") else (lambda m, A: m.transform(A))
    with h5py.File("new.h5", "w") as f:
        f.create_dataset("X", data=Xt)
    with h5py.File("new.h5", "r") as f:
        d = f["X"]
        with h5py.File("tmp.h5", "w") as g:
            g.create_dataset("X", data=Xt[::-1] * 2)
        os.replace("tmp.h5", "new.h5")
        assert np.array_equal(d[:], Xt)
        np.testing.assert_array_equal(np.asarray(out(model, d)), np.asarray(out(model, d[:])))


# ----------------------------------------------------------------------------- findings 3 and 4: relative zarr paths
def _zarr(path, A, fmt=3):
    zarr.create_array(store=str(path), shape=A.shape, chunks=(A.shape[0], 40), dtype="f8", zarr_format=fmt,
                      overwrite=True)[:] = A


def test_tester_repro_relative_zarr_then_chdir_reads_what_the_handle_reads_now(tmp_path, monkeypatch):
    """Finding 3: zarr resolves a relative root at every read, so after a cd the handle reads the array there now;
    wideml reads exactly that (the in-memory oracle is the handle's own read), pinned by absolute path for the whole
    fit, so a further cd during or after the fit changes nothing."""
    X, y = _data()
    monkeypatch.chdir(tmp_path)
    _zarr("rel.zarr", X)
    z = zarr.open_array("rel.zarr", mode="r")
    os.makedirs("other")
    decoy = X[:, ::-1].copy()
    _zarr("other/rel.zarr", decoy)
    monkeypatch.chdir(tmp_path / "other")
    np.testing.assert_array_equal(z[...], decoy)  # what the user's own handle reads now
    model = wideml.LOL(3).fit(z, y)
    oracle = wideml.LOL(3).fit(decoy, y)
    monkeypatch.chdir(tmp_path)  # back: the fitted model holds no link to the relative path
    np.testing.assert_allclose(model.transform(X), oracle.transform(X), atol=1e-8)
    np.testing.assert_allclose(wideml.LOL(3).fit(da.from_array(z), y).transform(X), wideml.LOL(3).fit(X, y).transform(X),
                               atol=1e-8)


def test_relative_zarr_that_leads_nowhere_now_is_one_true_sentence(tmp_path, monkeypatch):
    """After a cd to a folder without the array, the handle reads nothing: refused, naming the current directory."""
    X, y = _data()
    monkeypatch.chdir(tmp_path)
    _zarr("rel.zarr", X)
    z = zarr.open_array("rel.zarr", mode="r")
    os.makedirs("empty")
    monkeypatch.chdir(tmp_path / "empty")
    model = wideml.LOL(3).fit(X, y)
    for use in (lambda: wideml.LOL(3).fit(z, y), lambda: model.transform(z), lambda: wideml.LOL(3).fit(da.from_array(z), y)):
        with pytest.raises(WidemlError) as excinfo:
            use()
        _one_sentence(excinfo, "relative path", "'rel.zarr'", "absolute path", str(tmp_path / "empty"))


def test_relative_zarr_without_chdir_fits_as_in_memory(tmp_path, monkeypatch):
    X, y = _data()
    monkeypatch.chdir(tmp_path)
    _zarr("rel.zarr", X)
    z = zarr.open_array("rel.zarr", mode="r")
    np.testing.assert_allclose(wideml.LOL(3).fit(z, y).transform(z), wideml.LOL(3).fit(X, y).transform(X), atol=1e-8)


def test_dask_from_zarr_relative_then_chdir_reads_the_array_opened(tmp_path, monkeypatch):
    """da.from_zarr("rel.zarr") makes the path absolute when called: correct after a cd."""
    X, y = _data()
    monkeypatch.chdir(tmp_path)
    _zarr("rel.zarr", X)
    Xd = da.from_zarr("rel.zarr")
    os.makedirs("other")
    _zarr("other/rel.zarr", X[:, ::-1].copy())
    monkeypatch.chdir(tmp_path / "other")
    np.testing.assert_allclose(wideml.LOL(3).fit(Xd, y).transform(X), wideml.LOL(3).fit(X, y).transform(X), atol=1e-8)


@pytest.mark.parametrize("fmt", [2, 3])
def test_absolute_zarr_arrays_of_both_formats_fit_as_in_memory(tmp_path, fmt):
    X, y = _data()
    _zarr(tmp_path / "a.zarr", X, fmt)
    z = zarr.open_array(str(tmp_path / "a.zarr"), mode="r")
    model = wideml.LOL(2).fit(z, y)
    np.testing.assert_allclose(model.transform(z), wideml.LOL(2).fit(X, y).transform(X), atol=1e-8)


def test_tester_repro_relative_zarr_v2_fits_as_in_memory(tmp_path, monkeypatch):
    """Finding 4: a v2 array opened relatively, working directory unchanged, is read (no false "directory changed")."""
    X, y = _data()
    monkeypatch.chdir(tmp_path)
    _zarr("v2.zarr", X, fmt=2)
    z = zarr.open_array("v2.zarr", mode="r")
    np.testing.assert_allclose(wideml.LOL(2).fit(z, y).transform(z), wideml.LOL(2).fit(X, y).transform(X), atol=1e-8)


def _malformed():
    X, _ = _data()
    return {
        "1-D": (X[0], "Reshape your data"),
        "3-D": (X.reshape(40, 10, 12), "2-D"),
        "complex": (X + 1j, "Complex data not supported"),
        "0 samples": (np.empty((0, X.shape[1])), "0 sample(s)"),
        "0 features": (np.empty((X.shape[0], 0)), "0 feature(s)"),
        "object": (X.astype(object), None),
        "strings": (np.full(X.shape, "a"), "numeric"),
    }


ESTIMATORS = {
    "LOL": lambda: wideml.LOL(2), "PCA": lambda: wideml.PCA(2), "LFL": lambda: wideml.LFL(), "RRLDA": lambda: wideml.RRLDA(),
    "KernelPCA": lambda: wideml.KernelPCA(2), "KernelLOL": lambda: wideml.KernelLOL(2), "KPCATrick": lambda: wideml.KPCATrick(n_components=2),
    "EmbeddingClassifier": lambda: wideml.EmbeddingClassifier(wideml.LOL(2)),
    "EncoderClassifier": lambda: wideml.EncoderClassifier(kernels=("linear",)),
}


@pytest.mark.parametrize("kind", list(_malformed()))
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_malformed_x_in_fit_is_one_sentence(name, kind):
    bad, phrase = _malformed()[kind]
    y = np.repeat([0, 1], max(len(bad), 2) // 2) if bad.ndim > 1 else np.repeat([0, 1], 60)
    if kind == "object":
        bad = np.full((40, 5), None, dtype=object)
        y = np.repeat([0, 1], 20)
    with pytest.raises(WidemlError) as excinfo:
        ESTIMATORS[name]().fit(bad, y)
    _one_sentence(excinfo, *([phrase] if phrase else []))


@pytest.mark.parametrize("kind", list(_malformed()))
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_malformed_x_in_predict_and_transform_is_one_sentence(name, kind):
    X, y = _data()
    model = ESTIMATORS[name]().fit(X, y)
    bad, phrase = _malformed()[kind]
    if kind == "object":
        bad = np.full((3, X.shape[1]), None, dtype=object)
    if kind == "0 features":
        phrase = None  # a 0-feature X is also the wrong number of features: either sentence is right
    for method in ("predict", "transform", "predict_proba", "decision_function"):
        if not hasattr(model, method):
            continue
        with pytest.raises(WidemlError) as excinfo:
            getattr(model, method)(bad)
        _one_sentence(excinfo, *([phrase] if phrase else []))


@pytest.mark.parametrize("bad", ["1-D", "3-D", "complex"])
def test_malformed_dask_x_is_one_sentence(bad):
    X, y = _data()
    arrays = {"1-D": da.from_array(X[0]), "3-D": da.from_array(X.reshape(40, 10, 12)), "complex": da.from_array(X + 1j)}
    with pytest.raises(WidemlError) as excinfo:
        wideml.LOL(2).fit(arrays[bad], y if bad != "1-D" else np.repeat([0, 1], 60))
    _one_sentence(excinfo)
    model = wideml.LOL(2).fit(X, y)
    with pytest.raises(WidemlError) as excinfo:
        model.transform(arrays[bad])
    _one_sentence(excinfo)


def test_numbers_as_objects_are_read_and_a_non_number_is_one_sentence_and_a_type_error():
    """Objects that are numbers fit as floats; a dict among them is one sentence, a TypeError as scikit-learn's."""
    X, y = _data()
    objects = X.astype(object)
    np.testing.assert_allclose(wideml.LOL(2).fit(objects, y).transform(objects), wideml.LOL(2).fit(X, y).transform(X))
    objects[0, 0] = {"foo": "bar"}
    with pytest.raises(TypeError) as excinfo:
        wideml.LOL(2).fit(objects, y)
    _one_sentence(excinfo, "not a 2-D matrix of numbers", "argument must be a string or a real number")


def test_h5py_driver_that_hides_its_file_reads_through_the_handle_or_is_refused_off_the_threads(tmp_path):
    """The stdio driver shows no descriptor: the threads read the handle; other processes cannot be sure, refused."""
    X, _ = _data()
    path = tmp_path / "s.h5"
    _write_h5(path, X, "gzip")
    with h5py.File(path, "r", driver="stdio") as f:
        np.testing.assert_array_equal(as_dask_array(f["X"]).compute(), X)
        with dask.config.set(scheduler="processes"), pytest.raises(StoreError) as excinfo:
            as_dask_array(f["X"])
    _one_sentence(excinfo, str(path), "'stdio' driver", "default driver")
