"""The model registry: every model class is registered with a schema; nothing else is saved or loaded."""

import importlib
import inspect
import json
import pkgutil

import numpy as np
import pytest

import wideml.estimators
from oracles import make_data
from wideml import LOL, EmbeddingClassifier, load_model, save_model
from wideml.models.persistence import MODEL_CLASSES, MODEL_SCHEMAS, decode_params
from wideml.exceptions import StoreError
from wideml.models.schema_checks import SchemaViolation
from wideml.models.store import qualified_name

ABSTRACT = {"GramProjector", "_EigenProjector", "KernelEmbeddingMixin", "FittedState"}


def _classes_with_model_state():
    for info in pkgutil.walk_packages(wideml.estimators.__path__, "wideml.estimators."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "_model_state" in dir(cls) and cls.__name__ not in ABSTRACT:
                yield cls


def test_every_model_class_is_registered_with_a_schema():
    found = set(_classes_with_model_state())
    assert found == set(MODEL_CLASSES.values())
    for cls in found - {EmbeddingClassifier}:
        assert cls in MODEL_SCHEMAS, cls


def test_registry_keys_are_the_names_models_hold():
    for name, cls in MODEL_CLASSES.items():
        # the names files hold are a format constant: where each class lived when files first named it
        assert name == qualified_name(cls) and name == f"wideml.estimators.{name.split('.')[2]}.{cls.__qualname__}"


def test_unregistered_class_cannot_be_saved(tmp_path):
    class MyLOL(LOL):
        pass

    X, y = make_data(n=30, p=40, K=2)
    with pytest.raises(StoreError, match="cannot be saved"):
        save_model(MyLOL(2).fit(X, y), tmp_path / "m.zarr")
    assert not (tmp_path / "m.zarr").exists()


def test_decode_params_rebuilds_registered_nested_estimators_only():
    params = decode_params(EmbeddingClassifier, {"embedding": {"__estimator__": "wideml.estimators.lol.LOL", "params": {"n_components": 2}}}, "params")
    assert isinstance(params["embedding"], LOL) and params["embedding"].n_components == 2
    with pytest.raises(SchemaViolation, match="builtins.eval"):
        decode_params(EmbeddingClassifier, {"embedding": {"__estimator__": "builtins.eval", "params": {}}}, "params")
    with pytest.raises(SchemaViolation, match="hides an estimator"):
        decode_params(LOL, {"workdir": [{"__estimator__": "os.system"}]}, "params")


def test_model_saved_before_layouts_still_loads(tmp_path):
    """A model of the current format without feature_layout / chunks_complete (written before they existed)."""
    X, y = make_data(n=40, p=60, K=3)
    est = EmbeddingClassifier(LOL(3)).fit(X, y)
    save_model(est, tmp_path / "m.zarr")
    meta = tmp_path / "m.zarr" / "zarr.json"
    doc = json.loads(meta.read_text())
    for key in ("feature_layout", "chunks_complete"):
        doc["attributes"]["wideml"].pop(key)
    meta.write_text(json.dumps(doc))
    loaded = load_model(tmp_path / "m.zarr")
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))


def test_all_zero_arrays_are_written_as_chunks(tmp_path):
    """zarr skips all-fill chunks by default; models write them so a missing chunk file always means damage."""
    X, y = make_data(n=40, p=60, K=3)
    X[:, :20] = 0.0  # a chunk of constant-zero features: its loadings rows are zero
    import dask.array as da

    est = LOL(3).fit(da.from_array(X, chunks=(40, 20)), y)
    save_model(est, tmp_path / "m.zarr")
    assert (tmp_path / "m.zarr" / "loadings" / "c" / "0" / "0").is_file()
    np.testing.assert_allclose(load_model(tmp_path / "m.zarr").transform(X), est.transform(X))
