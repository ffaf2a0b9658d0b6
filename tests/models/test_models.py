"""Model stores: save/load round trip, no pickle, atomic writes, schema checks."""

import json
from pathlib import Path

import numpy as np
import pytest

from oracles import make_data
from wideml import LOL, PCA, EmbeddingClassifier, load_model, open_store, save_model, write_store
from wideml.exceptions import StoreError, WidemlError


@pytest.fixture
def store(tmp_path):
    X, y = make_data(n=60, p=300, K=3)
    write_store(tmp_path / "train.zarr", X, y, feature_chunk=64)
    return open_store(tmp_path / "train.zarr")


@pytest.mark.parametrize("make", [lambda: EmbeddingClassifier(LOL(4)), lambda: EmbeddingClassifier(LOL(5, second_moment="quadratic"), "qda"), lambda: PCA(3)])
def test_round_trip_predicts_the_same(tmp_path, store, make):
    est = make().fit(store)
    save_model(est, tmp_path / "m.zarr")
    loaded = load_model(tmp_path / "m.zarr")
    np.testing.assert_allclose(loaded.transform(store), est.transform(store), rtol=1e-10, atol=1e-10)
    if hasattr(est, "predict"):
        np.testing.assert_array_equal(loaded.predict(store), est.predict(store))
        np.testing.assert_allclose(loaded.predict_proba(store), est.predict_proba(store), rtol=1e-8)


def test_numpy_fit_round_trip(tmp_path):
    X, y = make_data(n=60, p=300, K=3)
    est = EmbeddingClassifier(LOL(4)).fit(X, y)
    save_model(est, tmp_path / "m.zarr")
    np.testing.assert_array_equal(load_model(tmp_path / "m.zarr").predict(X), est.predict(X))


def test_model_files_hold_no_pickle(tmp_path, store):
    save_model(EmbeddingClassifier(LOL(4)).fit(store), tmp_path / "m.zarr")
    for f in Path(tmp_path / "m.zarr").rglob("*"):
        if f.is_file():
            assert b"\x80\x04\x95" not in f.read_bytes()[:64], f"{f} looks pickled"
    attrs = json.loads((tmp_path / "m.zarr" / "zarr.json").read_text())["attributes"]["wideml"]
    assert attrs["schema"] == "wideml.model" and attrs["estimator"].endswith("EmbeddingClassifier")


def test_newer_schema_is_refused(tmp_path, store):
    save_model(LOL(3).fit(store), tmp_path / "m.zarr")
    meta = tmp_path / "m.zarr" / "zarr.json"
    doc = json.loads(meta.read_text())
    doc["attributes"]["wideml"]["version"] = 99
    meta.write_text(json.dumps(doc))
    with pytest.raises(StoreError, match="schema version 99.*upgrade wideml"):
        load_model(tmp_path / "m.zarr")


def test_a_feature_store_is_not_a_model(store):
    with pytest.raises(StoreError, match="is a feature store"):
        load_model(store.path)


def test_missing_model(tmp_path):
    with pytest.raises(StoreError, match="no model at"):
        load_model(tmp_path / "nope.zarr")


def test_existing_model_needs_overwrite(tmp_path, store):
    est = LOL(3).fit(store)
    save_model(est, tmp_path / "m.zarr")
    with pytest.raises(WidemlError, match="already exists"):
        save_model(est, tmp_path / "m.zarr")
    save_model(est, tmp_path / "m.zarr", overwrite=True)
    assert not list(tmp_path.glob(".m.zarr.*")), "no temporary leftovers"
