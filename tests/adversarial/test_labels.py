"""Labels of any kind round-trip: fit, save, load, predict, transform and cv give back the labels given.

The oracle of every case is the same estimator fitted on integer codes of the
labels (in memory), mapped back through the class list: the label kind must
change nothing but the names of the classes.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from adversarial.harness import assert_api_refused, assert_no_debris, assert_refused, run_cli

import wideml
from wideml import LFL, LOL, PCA, EmbeddingClassifier, EncoderClassifier, KPCATrick, load_model, save_model
from wideml.storage.labels import normalise_labels

TEXT = np.array(["control", "patient", "relative"])


def _codes_oracle(make, X, codes, Xt):
    """Predictions of ``make()`` fitted on integer codes 0..K-1 (the label-free oracle)."""
    return make().fit(X, codes).predict(Xt)


def _write_csv(path, X, labels, ids=None):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow((["id"] if ids is not None else []) + ["diagnosis"] + [f"f{j}" for j in range(X.shape[1])])
        for i in range(X.shape[0]):
            w.writerow(([ids[i]] if ids is not None else []) + [labels[i]] + [repr(float(v)) for v in X[i]])


def _read_predictions(path):
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return rows[0], [r[1] for r in rows[1:]]


def test_text_labels_end_to_end_cli(tmp_path, adv_data):
    """CSV with text labels -> ingest -> fit -> predict -o -> transform -> cv: the text labels, equal to the API oracle."""
    X, y, Xt, yt = adv_data
    X, Xt = X[:, :120], Xt[:, :120]
    _write_csv(tmp_path / "train.csv", X, TEXT[y])
    _write_csv(tmp_path / "test.csv", Xt, TEXT[yt])
    for name in ("train", "test"):
        proc = run_cli("ingest", tmp_path / f"{name}.csv", "-o", tmp_path / f"{name}.zarr", "--label-column", "diagnosis",
                       "--dtype", "float64", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("fit", "lol", tmp_path / "train.zarr", "-o", tmp_path / "model.zarr", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("predict", tmp_path / "model.zarr", tmp_path / "test.zarr", "-o", tmp_path / "preds.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    header, preds = _read_predictions(tmp_path / "preds.csv")
    assert header[2:] == [f"p_{c}" for c in TEXT]
    oracle = TEXT[_codes_oracle(lambda: EmbeddingClassifier(LOL()), X.astype(np.float64), y, Xt.astype(np.float64))]
    assert preds == oracle.tolist()
    assert np.mean(np.array(preds) == TEXT[yt]) > 0.9
    proc = run_cli("transform", tmp_path / "model.zarr", tmp_path / "test.zarr", "-o", tmp_path / "Z.npy", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    Z = np.load(tmp_path / "Z.npy")
    np.testing.assert_allclose(Z, EmbeddingClassifier(LOL()).fit(X.astype(np.float64), y).transform(Xt.astype(np.float64)),
                               rtol=1e-6, atol=1e-6)
    proc = run_cli("cv", tmp_path / "train.zarr", "--methods", "lol,lfl", "--folds", "3", "--max-dim", "4",
                   "-o", tmp_path / "cv.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "cv.json").read_text())
    codes_report = wideml.cross_validate_dims({"lol": LOL(4)}, X.astype(np.float64), y, cv=3, random_state=0)
    assert report["results"]["lol"]["errors"] == pytest.approx(codes_report.results["lol"].errors, abs=1e-12)
    assert_no_debris(tmp_path)


KINDS = {
    "python_ints": lambda c: [int(v) * 7 - 3 for v in c],
    "numpy_uint8": lambda c: (c * 5).astype(np.uint8),
    "str_array": lambda c: TEXT[c],
    "object_str": lambda c: TEXT[c].astype(object),
    "string_dtype": lambda c: TEXT[c].astype(np.dtypes.StringDType()),
    "bytes": lambda c: TEXT[c].astype("S"),
    "spaces_unicode": lambda c: np.array(["  Patient, type 2", "état stable", "ñandú 🐦"])[c],
    "integral_floats": lambda c: c.astype(np.float64) + 10.0,
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_label_kind_round_trips_through_save_and_load(kind, tmp_path, adv_data):
    """Each label kind: fit, save, load, predict equal the integer-code oracle mapped back; classes_ keep their kind."""
    X, y, Xt, _ = adv_data
    labels = KINDS[kind](y)  # every mapping keeps the codes' order, so classes_[k] is code k's label
    model = EmbeddingClassifier(LOL(3)).fit(X, labels)
    expected_classes = np.unique(normalise_labels(labels))
    save_model(model, tmp_path / "m.zarr")
    loaded = load_model(tmp_path / "m.zarr")
    oracle = expected_classes[_codes_oracle(lambda: EmbeddingClassifier(LOL(3)), X, y, Xt)]
    for est in (model, loaded):
        pred = est.predict(Xt)
        assert pred.dtype.kind == expected_classes.dtype.kind
        np.testing.assert_array_equal(pred, oracle)
        np.testing.assert_array_equal(est.classes_, expected_classes)
        np.testing.assert_allclose(est.predict_proba(Xt).sum(axis=1), 1.0)
    if expected_classes.dtype.kind in "U":
        assert isinstance(loaded.predict(Xt[:1])[0].item(), str)
    elif expected_classes.dtype.kind in "iu":
        assert isinstance(loaded.predict(Xt[:1])[0].item(), int)


def test_bool_labels_round_trip(tmp_path, adv_data):
    """Two classes as bools: predictions are bools, equal to the 0/1 oracle."""
    X, y, Xt, yt = adv_data
    keep, keep_t = y < 2, yt < 2
    labels = y[keep] == 1
    model = LOL(2).fit(X[keep], labels)
    clf = EmbeddingClassifier(LOL(2)).fit(X[keep], labels)
    save_model(clf, tmp_path / "m.zarr")
    loaded = load_model(tmp_path / "m.zarr")
    oracle = _codes_oracle(lambda: EmbeddingClassifier(LOL(2)), X[keep], y[keep], Xt[keep_t]).astype(bool)
    assert loaded.predict(Xt[keep_t]).dtype == bool
    np.testing.assert_array_equal(loaded.predict(Xt[keep_t]), oracle)
    np.testing.assert_array_equal(model.classes_, [False, True])


@pytest.mark.parametrize("categories", [["control", "patient", "relative"], [10, 20, 30]], ids=["str", "int"])
def test_pandas_categorical_labels(categories, tmp_path, adv_data):
    """pandas categoricals (strings or ints) through the encoder and the KPCA trick, saved and loaded."""
    pd = pytest.importorskip("pandas")
    X, y, Xt, _ = adv_data
    labels = pd.Series(pd.Categorical.from_codes(y, categories=categories))
    cats = np.asarray(categories)
    for make in (lambda: EncoderClassifier(kernels="linear"), lambda: KPCATrick(learner="none", kernel="linear")):
        model = make().fit(X, labels)
        save_model(model, tmp_path / "m.zarr", overwrite=True)
        loaded = load_model(tmp_path / "m.zarr")
        pred = loaded.predict(Xt)
        np.testing.assert_array_equal(pred, cats[_codes_oracle(make, X, y, Xt)])
        assert pred.dtype.kind == cats.dtype.kind


def test_text_labels_lfl_and_pca_transform_after_load(tmp_path, adv_data):
    """Embeddings fitted on text labels: transform after load equals transform before (no StringDType crash)."""
    X, y, Xt, _ = adv_data
    for est in (LFL(3), PCA(3), LOL(3)):
        est.fit(X, TEXT[y].astype(np.dtypes.StringDType()))
        save_model(est, tmp_path / "m.zarr", overwrite=True)
        loaded = load_model(tmp_path / "m.zarr")
        np.testing.assert_allclose(loaded.transform(Xt), est.transform(Xt), rtol=1e-6, atol=1e-8)
        assert loaded.classes_.dtype.kind == "U"


def test_class_with_a_single_sample(adv_data):
    """Two classes, one of them a single sample: LOL + LDA predicts as the integer-code oracle."""
    X, y, Xt, _ = adv_data
    rows = np.r_[np.flatnonzero(y == 0), np.flatnonzero(y == 1)[:1]]
    labels = np.where(y[rows] == 0, "common", "rare")
    pred = EmbeddingClassifier(LOL(2)).fit(X[rows], labels).predict(Xt)
    oracle = np.array(["common", "rare"])[_codes_oracle(lambda: EmbeddingClassifier(LOL(2)), X[rows], y[rows], Xt)]
    np.testing.assert_array_equal(pred, oracle)


def test_one_class_only_refused(adv_data):
    X, _, _, _ = adv_data
    with pytest.raises(wideml.exceptions.WidemlError) as excinfo:
        LOL(2).fit(X, np.array(["control"] * X.shape[0]))
    assert_api_refused(excinfo, "only 1 class", "control")


@pytest.mark.parametrize("bad, words", [
    (lambda n: np.array([None] + ["a", "b"] * ((n - 1) // 2) + ["a"] * ((n - 1) % 2), dtype=object), ("missing", "sample 0")),
    (lambda n: np.array([np.nan] + [1.0, 2.0] * ((n - 1) // 2) + [1.0] * ((n - 1) % 2)), ("nan",)),
    (lambda n: np.array(["a", 1] * (n // 2), dtype=object), ("mix text",)),
    (lambda n: np.linspace(0, 1, n), ("continuous",)),
], ids=["none", "nan", "mixed", "continuous"])
def test_bad_labels_refused_before_any_pass(bad, words, adv_stores):
    """Missing, mixed or continuous labels: one sentence before X is read (a class named 'nan' would be a silent wrong answer)."""
    from wideml.storage.reader import READ_COUNTER

    store = wideml.open_store(adv_stores[0])
    before = sum(READ_COUNTER.values())
    with pytest.raises(wideml.exceptions.WidemlError) as excinfo:
        EmbeddingClassifier(LOL(2)).fit(store.X, bad(store.n_samples))
    assert_api_refused(excinfo, *words)
    assert sum(READ_COUNTER.values()) == before


def test_one_class_store_refused_by_cli(tmp_path, adv_data):
    X, _, _, _ = adv_data
    _write_csv(tmp_path / "one.csv", X[:20, :50], ["control"] * 20)
    proc = run_cli("ingest", tmp_path / "one.csv", "-o", tmp_path / "one.zarr", "--label-column", "diagnosis", cwd=tmp_path)
    assert_refused(proc, "one class", "control")
    assert not (tmp_path / "one.zarr").exists()
    assert_no_debris(tmp_path)


def test_unicode_labels_with_commas_through_cli_predict(tmp_path, adv_data):
    """Labels with spaces, commas, quotes and non-ASCII: `wideml predict -o` writes a CSV whose cells parse back to them."""
    X, y, Xt, yt = adv_data
    names = np.array(['  Patient, "type 2"', "état stable", "ñandú 🐦"])
    wideml.write_store(tmp_path / "train.zarr", X, names[y], feature_chunk=128)
    wideml.write_store(tmp_path / "test.zarr", Xt, names[yt], feature_chunk=128)
    proc = run_cli("fit", "lol", tmp_path / "train.zarr", "-o", tmp_path / "model.zarr", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("predict", tmp_path / "model.zarr", tmp_path / "test.zarr", "-o", tmp_path / "preds.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    header, preds = _read_predictions(tmp_path / "preds.csv")
    assert header[2:] == [f"p_{c}" for c in names]
    oracle = names[_codes_oracle(lambda: EmbeddingClassifier(LOL()), X, y, Xt)]
    assert preds == oracle.tolist()
