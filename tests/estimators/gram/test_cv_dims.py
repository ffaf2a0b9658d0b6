"""cross_validate_dims equals naive refitting, with one pass over X for all folds, dims and methods."""

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from oracles import make_data
from wideml import LOL, PCA, RRLDA, EmbeddingClassifier, cross_validate_dims, open_store, write_store
from wideml.storage.reader import READ_COUNTER


def _naive(make, X, y, dims, folds, classifier):
    errors = []
    for d in dims:
        fold_err = []
        for tr, te in folds:
            clf = EmbeddingClassifier(make(d), classifier).fit(X[tr], y[tr])
            fold_err.append(np.mean(clf.predict(X[te]) != y[te]))
        errors.append(np.mean(fold_err))
    return np.array(errors)


@pytest.mark.parametrize(
    "name,make,classifier",
    [
        ("lol", lambda d: LOL(d), "lda"),
        ("lol-means", lambda d: LOL(d, robust_first=False), "lda"),
        ("qoq", lambda d: LOL(d, second_moment="quadratic"), "qda"),
        ("pca", lambda d: PCA(d), "lda"),
        ("rrlda", lambda d: RRLDA(d), "lda"),
    ],
)
def test_cv_equals_naive_refitting(name, make, classifier):
    X, y = make_data(n=75, p=120, K=3, signal=0.3, seed=3)
    dims = list(range(1, 7))
    report = cross_validate_dims({name: make(6)}, X, y, cv=5, classifier=classifier, random_state=1)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=1).split(X, y))
    naive = _naive(make, X, y, dims, folds, classifier)
    np.testing.assert_allclose(report.results[name].errors, naive, atol=1e-12)
    assert report.results[name].best_dim == dims[int(np.argmin(naive))]


def test_cv_makes_one_pass_for_all_methods(tmp_path):
    X, y = make_data(n=60, p=400, K=3)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=50)
    store = open_store(tmp_path / "s.zarr")
    key = str(store.path)
    before = READ_COUNTER[key]
    report = cross_validate_dims({"lol": LOL(5), "pca": PCA(5), "rrlda": RRLDA(5)}, store, cv=4)
    assert READ_COUNTER[key] - before == 8  # 8 chunks, read once
    assert report.n_passes == 1


def test_fit_makes_two_passes_and_transform_one(tmp_path):
    X, y = make_data(n=60, p=400, K=3)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=50)
    store = open_store(tmp_path / "s.zarr")
    key = str(store.path)
    before = READ_COUNTER[key]
    est = LOL(4).fit(store)
    assert READ_COUNTER[key] - before == 2 * 8 == est.n_fit_passes * 8
    before = READ_COUNTER[key]
    est.transform(store)
    assert READ_COUNTER[key] - before == 8


def test_cv_rejects_too_many_folds():
    X, y = make_data(n=30, p=50, K=3)
    with pytest.raises(ValueError, match="smallest class has 10"):
        cross_validate_dims(LOL(3), X, y, cv=11)
