"""Tampered models: a model file is data, so loading one never runs what it names, and anything else is refused.

Every case either loads a model whose predictions equal the untampered
model's, or is refused with one StoreError sentence (exit 2 in the CLI), with
nothing the tampered file asked for having happened (the directory it targets
still exists; the marker file a shell command would create is absent).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from adversarial.harness import assert_api_refused, assert_no_debris, assert_refused, run_cli
from wideml import LOL, EmbeddingClassifier, KPCATrick, load_model, open_store, save_model
from wideml.exceptions import StoreError


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, adv_stores):
    """An EmbeddingClassifier(LOL(3)) fitted on the adversarial train store, its model dir and its test predictions."""
    train, test = adv_stores
    est = EmbeddingClassifier(LOL(3)).fit(open_store(train))
    path = tmp_path_factory.mktemp("model") / "lol.zarr"
    save_model(est, path)
    return est, path, est.predict(open_store(test)), est.predict_proba(open_store(test))


def _attrs_file(model: Path) -> Path:
    return model / "zarr.json"


def edit_attrs(model: Path, change) -> None:
    """Apply ``change(attrs)`` to the model's ``wideml`` attributes, in place."""
    doc = json.loads(_attrs_file(model).read_text())
    change(doc["attributes"]["wideml"])
    _attrs_file(model).write_text(json.dumps(doc))


def replace_array(model: Path, name: str, values: np.ndarray) -> None:
    import zarr

    group = zarr.open_group(str(model), mode="r+")
    del group[name]
    group.create_array(name, shape=values.shape, dtype=values.dtype, chunks=values.shape)[...] = values


@pytest.fixture
def victim(tmp_path):
    """A directory a tampered model tries to delete, and the marker file a tampered shell command tries to create."""
    folder = tmp_path / "precious"
    folder.mkdir()
    (folder / "data.txt").write_text("keep me")
    return folder, tmp_path / "pwned"


def _untouched(victim) -> None:
    folder, marker = victim
    assert (folder / "data.txt").read_text() == "keep me", "the tampered model deleted a directory"
    assert not marker.exists(), "the tampered model ran a shell command"


# ------------------------------------------------------------------ class names at the top level


@pytest.mark.parametrize("name, params", [
    ("os.system", lambda v: {"command": f"touch {v[1]}"}),
    ("subprocess.run", lambda v: {"args": ["touch", str(v[1])]}),
    ("wideml.storage.atomic.remove_path", lambda v: {"path": str(v[0])}),
    ("sklearn.pipeline.Pipeline", lambda v: {"steps": []}),
])
def test_top_level_class_name_is_refused_api(fitted, fresh_copy, victim, name, params):
    model = fresh_copy(fitted[1])

    def change(attrs):
        attrs["estimator"] = name
        attrs["params"] = params(victim)

    edit_attrs(model, change)
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, str(model), name, "not one of")
    _untouched(victim)


def test_top_level_shell_command_is_refused_cli(fitted, fresh_copy, victim, adv_stores, tmp_path):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a.update(estimator="subprocess.run", params={"args": ["touch", str(victim[1])], "shell": False}))
    proc = run_cli("predict", model, adv_stores[1], "-o", tmp_path / "pred.csv")
    assert_refused(proc, "subprocess.run", "cannot be loaded")
    assert not (tmp_path / "pred.csv").exists()
    _untouched(victim)
    assert_no_debris(tmp_path)


# ------------------------------------------------------------------ class names in nested entries


def test_nested_estimator_deleting_a_directory_is_refused_cli(fitted, fresh_copy, victim, adv_stores, tmp_path):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a["params"].update(
        embedding={"__estimator__": "wideml.storage.atomic.remove_path", "params": {"path": str(victim[0])}}))
    proc = run_cli("predict", model, adv_stores[1])
    assert_refused(proc, "remove_path", "params.embedding")
    _untouched(victim)


def test_nested_shell_command_is_refused_api(fitted, fresh_copy, victim):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a["params"].update(embedding={"__estimator__": "os.system", "params": {"command": f"touch {victim[1]}"}}))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "os.system")
    _untouched(victim)


@pytest.mark.parametrize("name", ["wideml.storage.atomic.remove_path", "subprocess.run", "sklearn.pipeline.Pipeline",
                                  "wideml.estimators.encoder.EncoderClassifier"])
def test_embedding_class_in_state_is_refused(fitted, fresh_copy, victim, name):
    model = fresh_copy(fitted[1])

    def change(attrs):
        attrs["state"]["embedding_class"] = name
        attrs["state"]["embedding_params"] = {"path": str(victim[0])} if "remove" in name else {}

    edit_attrs(model, change)
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "state.embedding_class", name)
    _untouched(victim)


def test_estimator_hidden_in_a_plain_parameter_is_refused(fitted, fresh_copy, victim):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a["state"]["embedding_params"].update(
        workdir={"__estimator__": "wideml.storage.atomic.remove_path", "params": {"path": str(victim[0])}}))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "workdir", "takes none")
    _untouched(victim)


def test_kpca_learner_entry_outside_the_registry_is_refused(adv_data, tmp_path, victim):
    X, y, _, _ = adv_data
    path = tmp_path / "kpca.zarr"
    save_model(KPCATrick(learner="none", n_components=5).fit(X[:, :50], y), path)
    edit_attrs(path, lambda a: a["params"].update(learner={"__estimator__": "sklearn.pipeline.Pipeline", "params": {"steps": []}}))
    with pytest.raises(StoreError) as excinfo:
        load_model(path)
    assert_api_refused(excinfo, "params.learner", "Pipeline")


# ------------------------------------------------------------------ parameters


def test_unknown_parameter_is_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a["params"].update(shell_hook="rm -rf /"))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "shell_hook", "not a parameter of EmbeddingClassifier")


@pytest.mark.parametrize("key, value, word", [("second_moment", "cubic", "second_moment"), ("robust_first", "yes", "robust_first"),
                                              ("n_components", "three", "n_components")])
def test_edited_parameter_value_is_refused(fitted, fresh_copy, key, value, word):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a["state"]["embedding_params"].update({key: value}))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, word, "not valid")


def test_classifier_of_wrong_type_is_refused_cli(fitted, fresh_copy, adv_stores):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a["params"].update(classifier=["lda"]))
    assert_refused(run_cli("predict", model, adv_stores[1]), "classifier")


# ------------------------------------------------------------------ state and arrays


def test_missing_array_is_refused_cli(fitted, fresh_copy, adv_stores):
    model = fresh_copy(fitted[1])
    shutil.rmtree(model / "loadings")
    assert_refused(run_cli("predict", model, adv_stores[1]), "'loadings'", "missing")


def test_array_of_wrong_shape_is_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    replace_array(model, "offset", np.zeros(5))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "'offset'", "length 5")


def test_array_of_wrong_dtype_is_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    replace_array(model, "embedding", np.zeros((90, 3), dtype=np.int32))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "'embedding'", "dtype int32")


def test_unknown_array_is_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    replace_array(model, "payload", np.zeros(3))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "unknown array 'payload'")


def test_edited_n_components_is_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a["state"]["embedding_state"].update(n_components=5))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "n_components")


def test_edited_classes_count_is_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    replace_array(model, "classes", np.arange(4))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "n_classes")


def test_train_codes_out_of_range_are_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    replace_array(model, "train_codes", np.full(90, 7, dtype=np.int64))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "'train_codes'", "outside")


def test_nan_in_a_small_array_is_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    replace_array(model, "offset", np.array([0.0, np.nan, 1.0]))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "'offset'", "NaN")


def test_newer_schema_version_is_refused_cli(fitted, fresh_copy, adv_stores):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a.update(version=2))
    assert_refused(run_cli("predict", model, adv_stores[1]), "schema version 2", "upgrade wideml")


@pytest.mark.parametrize("state", [[1, 2, 3], "LOL", None])
def test_state_not_an_object_is_refused(fitted, fresh_copy, state):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a.update(state=state))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "state", "not a JSON object")


def test_attrs_not_an_object_are_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    doc = json.loads(_attrs_file(model).read_text())
    doc["attributes"]["wideml"] = ["wideml.model"]
    _attrs_file(model).write_text(json.dumps(doc))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "not a JSON object")


def test_deleted_loadings_chunk_is_refused_cli(fitted, fresh_copy, adv_stores, tmp_path):
    model = fresh_copy(fitted[1])
    chunks = sorted((model / "loadings" / "c").rglob("*"))
    chunk_files = [c for c in chunks if c.is_file()]
    assert len(chunk_files) > 1, "the loadings should be chunked like X"
    chunk_files[1].unlink()
    out = tmp_path / "pred.csv"
    assert_refused(run_cli("predict", model, adv_stores[1], "-o", out), "chunk", "'loadings'", "missing")
    assert not out.exists()


def test_truncated_loadings_chunk_is_refused_cli(fitted, fresh_copy, adv_stores, tmp_path):
    """A truncated p-sized chunk would otherwise fail deep inside the projection pass with a traceback."""
    model = fresh_copy(fitted[1])
    chunk = sorted(f for f in (model / "loadings" / "c").rglob("*") if f.is_file())[0]
    chunk.write_bytes(chunk.read_bytes()[:100])
    out = tmp_path / "pred.csv"
    assert_refused(run_cli("predict", model, adv_stores[1], "-o", out), "'loadings'", "100 bytes", "truncated")
    assert not out.exists()
    assert_no_debris(tmp_path)


def test_deleted_chunk_of_a_small_array_is_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    for f in (model / "offset" / "c").rglob("*"):
        if f.is_file():
            f.unlink()
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "'offset'", "missing")


def test_malformed_feature_layout_is_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a.update(feature_layout={"n_features": "600"}))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "feature_layout")


def test_feature_count_edited_against_the_arrays_is_refused(fitted, fresh_copy):
    model = fresh_copy(fitted[1])
    edit_attrs(model, lambda a: a["feature_layout"].update(n_features=599))
    with pytest.raises(StoreError) as excinfo:
        load_model(model)
    assert_api_refused(excinfo, "n_features")


# ------------------------------------------------------------------ the untampered model


def test_untampered_model_predicts_as_before_api(fitted, adv_stores, adv_data):
    est, path, pred, proba = fitted
    loaded = load_model(path)
    test = open_store(adv_stores[1])
    np.testing.assert_array_equal(loaded.predict(test), pred)
    np.testing.assert_allclose(loaded.predict_proba(test), proba, rtol=1e-10, atol=1e-12)
    # and the predictions are right: the classes are well separated
    assert np.mean(pred == adv_data[3]) > 0.9


def test_untampered_model_predicts_as_before_cli(fitted, adv_stores, tmp_path):
    out = tmp_path / "pred.csv"
    proc = run_cli("predict", fitted[1], adv_stores[1], "-o", out)
    assert proc.returncode == 0, proc.stderr
    rows = np.genfromtxt(out, delimiter=",", skip_header=1)
    np.testing.assert_array_equal(rows[:, 1].astype(int), fitted[2])
