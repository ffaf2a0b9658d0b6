"""Feature identity: a model refuses data whose feature layout differs from the one it was trained on.

Each case ends in exactly one outcome: predictions equal to the in-memory
oracle (the same estimator fitted and applied on numpy arrays, where no layout
exists), or one sentence saying what differs (exit 2 in the CLI).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from adversarial.harness import assert_api_refused, assert_no_debris, assert_refused, run_cli
from wideml import LFL, LOL, EmbeddingClassifier, EncoderClassifier, KPCATrick, ignore_feature_layout, ingest, load_model, open_store, save_model, write_store
from wideml.exceptions import WidemlError

SHAPE = (10, 20, 3)  # p = 600, as adv_data


@pytest.fixture(scope="module")
def oracle(adv_data):
    """Test-set predictions of EmbeddingClassifier(LOL(3)) fitted and applied in memory (no layout at all)."""
    X, y, Xt, _ = adv_data
    return EmbeddingClassifier(LOL(3)).fit(X, y).predict(Xt)


@pytest.fixture(scope="module")
def volumes(tmp_path_factory, adv_data):
    """Stores with feature_shape and feature_ids: train, test in the same layout, test with the shape transposed,
    test with the ids reordered (columns moved with them), and a model fitted on train."""
    X, y, Xt, yt = adv_data
    folder = tmp_path_factory.mktemp("volumes")
    ids = np.array([f"v{i:04d}" for i in range(X.shape[1])])
    perm = np.random.default_rng(3).permutation(X.shape[1])
    write_store(folder / "train.zarr", X, y, feature_chunk=128, feature_shape=SHAPE, feature_ids=ids)
    write_store(folder / "same.zarr", Xt, yt, feature_chunk=128, feature_shape=SHAPE, feature_ids=ids)
    write_store(folder / "transposed.zarr", Xt, yt, feature_chunk=128, feature_shape=(20, 10, 3), feature_ids=ids)
    write_store(folder / "reordered.zarr", Xt[:, perm], yt, feature_chunk=128, feature_shape=SHAPE, feature_ids=ids[perm])
    write_store(folder / "other_ids.zarr", Xt, yt, feature_chunk=128, feature_shape=SHAPE, feature_ids=np.char.add("w", ids))
    model = folder / "model.zarr"
    save_model(EmbeddingClassifier(LOL(3)).fit(open_store(folder / "train.zarr")), model)
    return folder, model


def test_same_layout_predicts_as_the_oracle_cli(volumes, oracle, tmp_path):
    folder, model = volumes
    out = tmp_path / "pred.csv"
    proc = run_cli("predict", model, folder / "same.zarr", "-o", out)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.genfromtxt(out, delimiter=",", skip_header=1)[:, 1].astype(int), oracle)


def test_transposed_feature_shape_is_refused_cli(volumes, tmp_path):
    folder, model = volumes
    out = tmp_path / "pred.csv"
    msg = assert_refused(run_cli("predict", model, folder / "transposed.zarr", "-o", out), "feature_shape", "(20, 10, 3)", "(10, 20, 3)")
    assert "--ignore-feature-layout" in msg
    assert not out.exists()
    assert_no_debris(tmp_path)


def test_transposed_feature_shape_is_refused_by_transform_cli(volumes, tmp_path):
    folder, model = volumes
    out = tmp_path / "z.npy"
    assert_refused(run_cli("transform", model, folder / "transposed.zarr", "-o", out), "feature_shape")
    assert not out.exists()


def test_override_runs_and_gives_the_oracle_cli(volumes, oracle, tmp_path):
    """The transposed store holds the training features in the training order (only its shape attr differs)."""
    folder, model = volumes
    out = tmp_path / "pred.csv"
    proc = run_cli("predict", model, folder / "transposed.zarr", "-o", out, "--ignore-feature-layout")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.genfromtxt(out, delimiter=",", skip_header=1)[:, 1].astype(int), oracle)


def test_reordered_feature_ids_are_refused_api(volumes):
    folder, model = volumes
    with pytest.raises(WidemlError) as excinfo:
        load_model(model).predict(open_store(folder / "reordered.zarr"))
    assert_api_refused(excinfo, "feature_ids", "another order")


def test_other_feature_ids_are_refused_api(volumes):
    folder, model = volumes
    with pytest.raises(WidemlError) as excinfo:
        load_model(model).predict_proba(open_store(folder / "other_ids.zarr"))
    assert_api_refused(excinfo, "feature_ids", "other ids")


def test_api_override_runs(volumes, oracle):
    folder, model = volumes
    with ignore_feature_layout():
        pred = load_model(model).predict(open_store(folder / "transposed.zarr"))
    np.testing.assert_array_equal(pred, oracle)
    with pytest.raises(WidemlError):  # the check is back outside the context
        load_model(model).predict(open_store(folder / "transposed.zarr"))


def test_override_never_skips_the_feature_count(volumes, adv_data):
    folder, model = volumes
    with ignore_feature_layout(), pytest.raises(WidemlError) as excinfo:
        load_model(model).predict(adv_data[2][:, :599])
    assert_api_refused(excinfo, "599 features")


def test_numpy_input_checks_only_the_count(volumes, adv_data, oracle):
    """Plain arrays carry no ids or shape: only n_features is compared, and the answer is right."""
    _, model = volumes
    np.testing.assert_array_equal(load_model(model).predict(adv_data[2]), oracle)


def test_csv_with_reordered_columns_is_refused_cli(adv_data, tmp_path):
    X, y, Xt, yt = adv_data
    p = 40
    names = [f"gene{i}" for i in range(p)]
    train = pd.DataFrame(X[:, :p], columns=names).assign(label=y)
    test = pd.DataFrame(Xt[:, :p], columns=names).assign(label=yt)
    train.to_csv(tmp_path / "train.csv", index=False)
    test[names[::-1] + ["label"]].to_csv(tmp_path / "test.csv", index=False)  # same columns, another order
    ingest(tmp_path / "train.csv", tmp_path / "train.zarr", label_column="label")
    ingest(tmp_path / "test.csv", tmp_path / "test.zarr", label_column="label")
    save_model(EmbeddingClassifier(LOL(3)).fit(open_store(tmp_path / "train.zarr")), tmp_path / "m.zarr")
    proc = run_cli("predict", tmp_path / "m.zarr", tmp_path / "test.zarr", "-o", tmp_path / "pred.csv")
    assert_refused(proc, "feature_ids", "another order")
    assert not (tmp_path / "pred.csv").exists()


def test_dataframe_columns_count_as_feature_ids(adv_data):
    X, y, Xt, _ = adv_data
    cols = [f"f{i}" for i in range(X.shape[1])]
    est = LFL(3).fit(pd.DataFrame(X, columns=cols), y)
    oracle = LFL(3).fit(X, y).transform(Xt)
    np.testing.assert_allclose(est.transform(pd.DataFrame(Xt, columns=cols)), oracle, rtol=1e-6, atol=1e-6)
    with pytest.raises(WidemlError) as excinfo:
        est.transform(pd.DataFrame(Xt, columns=cols)[cols[::-1]])
    assert_api_refused(excinfo, "feature_ids", "another order")


def test_spatial_reference_differs_is_refused(adv_data, tmp_path):
    X, y, Xt, yt = adv_data
    for name, data, labels, affine in (("train", X, y, np.eye(4)), ("test", Xt, yt, np.diag([2.0, 2.0, 2.0, 1.0]))):
        write_store(tmp_path / f"{name}.zarr", data, labels, feature_chunk=128, feature_shape=SHAPE)
        meta = tmp_path / f"{name}.zarr" / "zarr.json"
        doc = json.loads(meta.read_text())
        doc["attributes"]["wideml"]["affine"] = affine.tolist()
        meta.write_text(json.dumps(doc))
    est = EncoderClassifier(kernels=("linear",)).fit(open_store(tmp_path / "train.zarr"))
    save_model(est, tmp_path / "m.zarr")
    with pytest.raises(WidemlError) as excinfo:
        load_model(tmp_path / "m.zarr").predict(open_store(tmp_path / "test.zarr"))
    assert_api_refused(excinfo, "spatial reference", "affine")


def test_kernel_model_refuses_a_transposed_store(volumes, adv_data):
    folder, _ = volumes
    X, y, Xt, _ = adv_data
    train = open_store(folder / "train.zarr")
    est = KPCATrick(learner="none", n_components=5).fit(train, train.y)
    oracle = KPCATrick(learner="none", n_components=5).fit(X, y).predict(Xt)
    np.testing.assert_array_equal(est.predict(open_store(folder / "same.zarr")), oracle)
    with pytest.raises(WidemlError) as excinfo:
        est.predict(open_store(folder / "transposed.zarr"))
    assert_api_refused(excinfo, "feature_shape")


def test_config_key_switches_the_check_off_cli(volumes, oracle, tmp_path):
    folder, model = volumes
    out = tmp_path / "pred.csv"
    proc = run_cli("predict", model, folder / "transposed.zarr", "-o", out, env={"DASK_WIDEML__CHECK_FEATURE_LAYOUT": "false"})
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.genfromtxt(out, delimiter=",", skip_header=1)[:, 1].astype(int), oracle)


def test_model_records_the_layout(volumes):
    folder, model = volumes
    attrs = json.loads((Path(model) / "zarr.json").read_text())["attributes"]["wideml"]["feature_layout"]
    assert attrs["n_features"] == 600 and attrs["feature_shape"] == list(SHAPE)
    assert len(attrs["ids_sha256"]) == 64 and len(attrs["ids_sorted_sha256"]) == 64
