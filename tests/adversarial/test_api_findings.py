"""Issue 23 user-world findings 2, 5, 6 and 8: what the Python API accepted that it must refuse (or answer right).

2. A kernel model fitted on a feature store re-reads the store's X at predict: a store replaced at that
   path by other data of the same shape silently changed its predictions (also after save/load).
5. The Python ``workdir`` (estimator ``workdir=``, ``wideml.config.set(workdir=...)``) skipped the CLI's
   checks: a work folder inside the input store was written into it, and a mistyped path whose parent
   does not exist was created.
6. ``wideml.config.set(scheduler="local:999")`` was accepted (the CLI refuses it).
8. ``wideml.config.set(checkpoint_interval=nan)`` said "nan is negative".
"""

from __future__ import annotations

import json
import math
import os
import shutil

import numpy as np
import pytest

import wideml
from adversarial.harness import assert_api_refused
from wideml.exceptions import ConfigError, StoreError, WidemlError
from wideml.runtime.worker_bound import usable_cores


def _data(seed: int = 0, n: int = 40, p: int = 60, shift: float = 1.5):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, p))
    X[:, :5] += shift * y[:, None]
    return X, y


KERNEL_MODELS = {
    "kpca": lambda: wideml.KernelPCA(3, sigma=10.0),
    "kernel-lol": lambda: wideml.KernelLOL(2, sigma=10.0),
    "kpca-trick": lambda: wideml.KPCATrick(sigma=10.0, n_components=2),
}


def _out(model, Xt):
    return model.transform(Xt) if isinstance(model, wideml.KernelPCA) else model.predict_proba(Xt)


# --------------------------------------------------------------------------- finding 2


@pytest.mark.parametrize("kind", sorted(KERNEL_MODELS))
def test_kernel_model_refuses_a_training_store_replaced_by_other_data(tmp_path, kind):
    X, y = _data()
    Xt = _data(seed=1)[0]
    train = tmp_path / "train.zarr"
    wideml.write_store(train, X, y)
    model = KERNEL_MODELS[kind]().fit(wideml.open_store(train))
    ref = _out(model, Xt)
    np.testing.assert_allclose(ref, _out(KERNEL_MODELS[kind]().fit(X, y), Xt), rtol=1e-6, atol=1e-8)
    wideml.save_model(model, tmp_path / "k.model")
    np.testing.assert_allclose(_out(wideml.load_model(tmp_path / "k.model"), Xt), ref, rtol=1e-9, atol=1e-12)
    # another store of the same shape (and layout) now sits at the training store's path
    wideml.write_store(tmp_path / "other.zarr", _data(seed=2)[0] * 3, y)
    shutil.rmtree(train)
    os.rename(tmp_path / "other.zarr", train)
    for fitted in (model, wideml.load_model(tmp_path / "k.model")):
        with pytest.raises(StoreError) as excinfo:
            _out(fitted, Xt)
        assert_api_refused(excinfo, f"the training store at {train}", "has changed since the model was fitted", "refit")


def test_kernel_model_refuses_a_training_store_rewritten_in_place(tmp_path):
    """The same store (same creation id), its X chunks rewritten with other values: refused too."""
    import zarr

    X, y = _data()
    Xt = _data(seed=1)[0]
    train = tmp_path / "train.zarr"
    wideml.write_store(train, X, y)
    model = wideml.KernelLOL(2, sigma=10.0).fit(wideml.open_store(train))
    ref = model.predict_proba(Xt)
    np.testing.assert_array_equal(model.predict_proba(Xt), ref)  # reading the store changes nothing
    z = zarr.open_array(str(train / "X"), mode="r+")
    z[:] = np.asarray(z[:])[::-1]
    with pytest.raises(StoreError) as excinfo:
        model.predict_proba(Xt)
    assert_api_refused(excinfo, "has changed since the model was fitted")


def test_kernel_model_of_an_untouched_or_moved_back_store_still_predicts(tmp_path):
    X, y = _data()
    Xt = _data(seed=1)[0]
    train = tmp_path / "train.zarr"
    wideml.write_store(train, X, y)
    model = wideml.KernelLOL(2, sigma=10.0).fit(wideml.open_store(train))
    ref = model.predict_proba(Xt)
    os.rename(train, tmp_path / "aside.zarr")  # moved away and back (a rename keeps every file as it was)
    os.rename(tmp_path / "aside.zarr", train)
    np.testing.assert_array_equal(model.predict_proba(Xt), ref)
    wideml.save_model(model, tmp_path / "k.model")
    np.testing.assert_array_equal(wideml.load_model(tmp_path / "k.model").predict_proba(Xt), ref)


def test_kernel_model_saved_before_the_store_identity_was_recorded_still_loads(tmp_path):
    """A model file without the identity is accepted as before (shape and layout checked only)."""
    X, y = _data()
    Xt = _data(seed=1)[0]
    train = tmp_path / "train.zarr"
    wideml.write_store(train, X, y)
    model = wideml.KernelPCA(3, sigma=10.0).fit(wideml.open_store(train))
    ref = model.transform(Xt)
    wideml.save_model(model, tmp_path / "k.model")
    meta_path = tmp_path / "k.model" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    training = meta["attributes"]["wideml"]["state"]["training"]
    assert training["identity"]["x_files"]  # recorded by this version
    del training["identity"]
    meta_path.write_text(json.dumps(meta))
    np.testing.assert_allclose(wideml.load_model(tmp_path / "k.model").transform(Xt), ref, rtol=1e-9, atol=1e-12)


def test_kernel_model_fitted_on_a_lazy_array_keeps_its_own_copy(tmp_path):
    """Non-store lazy input: the model reads the copy its fit wrote, whatever later happens to the source."""
    import zarr

    X, y = _data()
    Xt = _data(seed=1)[0]
    z = zarr.create_array(store=str(tmp_path / "plain.zarr"), shape=X.shape, chunks=(40, 20), dtype="f8", zarr_format=3)
    z[:] = X
    with wideml.config.set(workdir=str(tmp_path)):
        model = wideml.KernelLOL(2, sigma=10.0).fit(zarr.open_array(str(tmp_path / "plain.zarr"), mode="r"), y)
    ref = model.predict_proba(Xt)
    z[:] = X[::-1] * 3
    np.testing.assert_array_equal(model.predict_proba(Xt), ref)


# --------------------------------------------------------------------------- finding 5


def _store(tmp_path):
    X, y = _data(n=30, p=50)
    wideml.write_store(tmp_path / "s.zarr", X, y)
    return wideml.open_store(tmp_path / "s.zarr")


def _listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("where", ["store", "inside-store", "store-X"])
def test_work_folder_inside_the_input_store_is_refused(tmp_path, where):
    store = _store(tmp_path)
    workdir = {"store": store.path, "inside-store": store.path / "work", "store-X": store.path / "X"}[where]
    before = _listing(store.path)
    for fit in (lambda: wideml.LOL(2, workdir=workdir).fit(store),
                lambda: wideml.LOL(2, workdir=workdir).fit(store.X),
                lambda: wideml.EncoderClassifier(kernels=("linear",), workdir=workdir).fit(store)):
        with pytest.raises(ConfigError) as excinfo:
            fit()
        assert_api_refused(excinfo, "the work folder", "is or lies inside the input", "writing there would change that input")
    for fit in (lambda: wideml.LOL(2).fit(store), lambda: wideml.KernelLOL(2, sigma=10.0).fit(store.X)):
        with wideml.config.set(workdir=str(workdir)), pytest.raises(ConfigError) as excinfo:
            fit()
        assert_api_refused(excinfo, "is or lies inside the input")
    assert _listing(store.path) == before  # nothing was written into the store


def test_workdir_whose_parent_is_missing_is_refused_and_not_created(tmp_path):
    store = _store(tmp_path)
    typo = tmp_path / "typo" / "sub"
    with pytest.raises(ConfigError) as excinfo:
        wideml.LOL(2, workdir=typo).fit(store)
    assert_api_refused(excinfo, f"the work folder {typo} does not exist, nor does its parent", "a mistyped path is not created")
    with wideml.config.set(workdir=str(typo)), pytest.raises(ConfigError):
        wideml.LOL(2).fit(store)
    with wideml.config.set(workdir=str(typo)), pytest.raises(ConfigError):
        wideml.KPCATrick(sigma=10.0, n_components=2).fit(store)
    assert not (tmp_path / "typo").exists()
    with pytest.raises(ConfigError) as excinfo:  # in-memory input too: a mistyped workdir is refused, not remembered
        wideml.LOL(2, workdir=typo).fit(*_data(n=30, p=50))
    assert not (tmp_path / "typo").exists()


def test_workdir_that_is_a_file_is_refused(tmp_path):
    store = _store(tmp_path)
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(ConfigError) as excinfo:
        wideml.LOL(2, workdir=tmp_path / "f.txt").fit(store)
    assert_api_refused(excinfo, "is a file, not a folder")


def test_workdir_one_level_missing_is_made_and_a_good_workdir_still_works(tmp_path):
    store = _store(tmp_path)
    ref = wideml.LOL(2).fit(store).transform(store.X)
    model = wideml.LOL(2, workdir=tmp_path / "work").fit(store)  # its parent exists: made, as the CLI does
    np.testing.assert_allclose(np.asarray(model.transform(store.X)), np.asarray(ref), rtol=1e-9, atol=1e-12)
    assert (tmp_path / "work").is_dir()
    with wideml.config.set(workdir=str(tmp_path)):  # a workdir holding the store is not inside it: accepted
        wideml.LOL(2).fit(store)


# --------------------------------------------------------------------------- findings 6 and 8


def test_config_refuses_more_local_workers_than_the_cli_allows():
    bound = 4 * usable_cores()
    with pytest.raises(ConfigError) as excinfo:
        wideml.config.set(scheduler="local:999")
    assert_api_refused(excinfo, "'local:999'", "asks for 999 worker processes", f"at most {bound}")
    with pytest.raises(ConfigError):
        wideml.config.set(scheduler=f"local:{bound + 1}")
    with wideml.config.set(scheduler=f"local:{bound}"):
        assert wideml.config.get("scheduler") == f"local:{bound}"


@pytest.mark.parametrize("value", [float("nan"), "nan", float("inf"), "-inf", "inf"])
def test_checkpoint_interval_nan_or_infinite_is_one_true_sentence(value):
    with pytest.raises(ConfigError) as excinfo:
        wideml.config.set(checkpoint_interval=value)
    message = assert_api_refused(excinfo, "checkpoint-interval")
    assert "negative" not in message or str(value).startswith("-")
    number = float(value)
    if math.isnan(number):
        assert "is not a number" in message
    else:
        assert "infinite" in message or "negative" in message
    for good in (0, 30, "off", 2.5):
        with wideml.config.set(checkpoint_interval=good):
            pass


def test_checkpoint_interval_from_the_environment_is_read_with_the_same_rule(monkeypatch):
    from wideml.runtime.checkpoint import checkpoint_interval

    monkeypatch.setenv("DASK_WIDEML__CHECKPOINT_INTERVAL", "nan")
    import dask.config

    dask.config.refresh()
    try:
        with pytest.raises(ConfigError, match=r"is not a number \(NaN\)"):
            checkpoint_interval()
    finally:
        monkeypatch.delenv("DASK_WIDEML__CHECKPOINT_INTERVAL")
        dask.config.refresh()


def test_refusals_are_wideml_errors():
    assert issubclass(ConfigError, WidemlError) and issubclass(StoreError, WidemlError)
