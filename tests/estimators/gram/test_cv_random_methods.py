"""LFL and RP inside cross_validate_dims (one pass) equal per-fold refits of the estimators; kappa, rounds, failures, rank."""

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedKFold

from wideml import LFL, LOL, RP, WidemlError, cross_validate_dims, open_store, write_store
from wideml.estimators.classifier import make_classifier
from wideml.estimators.gram.cv_methods import lfl_embedding, rp_embedding, training_rank
from wideml.passes.cv_sweep import RandomColumns, sweep_pass
from wideml.passes.keyed_random import lfl_density
from wideml.storage.reader import READ_COUNTER


def _data(n=72, p=600, K=3, seed=0, offset=3.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, p)) + 0.4 * y[:, None] * (np.arange(p) < 25) + offset
    return X, y


METHODS = {
    "lfl": lambda: LFL(7, random_state=3),
    "lfl-robust": lambda: LFL(6, robust_first=True, random_state=1),
    "lfl-small": lambda: LFL(1, random_state=2),  # d < K - 1: a prefix of the centroid differences
    "rp": lambda: RP(7, random_state=5),
}


@pytest.mark.parametrize("chunk", [64, 600])
def test_lfl_and_rp_in_the_sweep_equal_per_fold_refits(tmp_path, chunk):
    X, y = _data()
    store = open_store(write_store(tmp_path / "s.zarr", X, y, feature_chunk=chunk))
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    key, before = str(store.path), READ_COUNTER[str(store.path)]
    report = cross_validate_dims({k: make() for k, make in METHODS.items()} | {"lol": LOL(5, solver="gram")}, store, cv=cv)
    assert report.n_passes == 1 and READ_COUNTER[key] - before == -(-600 // chunk)  # LOL, LFL, RP: each chunk read once
    folds = list(cv.split(X, y))
    for name, make in METHODS.items():
        r = report.results[name]
        assert r.error is None and r.dims == list(range(1, make().n_components + 1))
        for f, (tr, te) in enumerate(folds):
            E = make().fit(X[tr], y[tr]).transform(X)
            for j, d in enumerate(r.dims):
                pred = make_classifier("lda").fit(E[tr, :d], y[tr]).predict(E[te, :d])
                assert r.fold_errors[f][j] == np.mean(pred != y[te]), (name, f, d)
                np.testing.assert_array_equal(r.predictions[0, j, te], pred)


def test_sweep_embeddings_allclose_to_refitted_transforms():
    import dask.array as da

    X, y = _data(n=45, p=300)
    lfl, rp = LFL(6, random_state=4), RP(5, random_state=9)
    k = 6 - 2
    mats = [RandomColumns("lfl", "sparse", 4, k, lfl_density(300)), RandomColumns("rp", "gaussian", 9, 5)]
    st = sweep_pass(da.from_array(X, chunks=(45, 70)), y, 3, mats).compute()
    for tr, _ in StratifiedKFold(3, shuffle=True, random_state=1).split(X, y):
        np.testing.assert_allclose(lfl_embedding(st.gram.G, st.products["lfl"], tr, y[tr], 3, 6),
                                   LFL(6, random_state=4).fit(X[tr], y[tr]).transform(X), atol=1e-9, rtol=1e-9)
        np.testing.assert_allclose(rp_embedding(st.products["rp"], tr, 5), RP(5, random_state=9).fit(X[tr], y[tr]).transform(X),
                                   atol=1e-9, rtol=1e-9)


def test_kappa_equals_sklearn_and_repeated_cv_is_named_per_round():
    X, y = _data(n=60)
    cv = RepeatedStratifiedKFold(n_splits=4, n_repeats=3, random_state=2)
    report = cross_validate_dims({"rp": RP(4), "lol": LOL(4, solver="gram")}, X, y, cv=cv)
    assert report.cv_name == "4-fold CV repeated 3 times" and report.n_folds == 4 and report.n_repeats == 3 and report.n_splits == 12
    assert "4-fold CV repeated 3 times" in report.table() and "30-fold" not in report.table()
    out = json.loads(json.dumps(report.to_dict()))
    assert out["cv"] == "4-fold CV repeated 3 times" and out["n_folds"] == 4 and out["n_repeats"] == 3
    for name, r in report.results.items():
        assert r.predictions.shape == (3, len(r.dims), len(y)) and (r.predictions >= 0).all()  # every round tests every sample
        for rd in range(3):
            for j in range(len(r.dims)):
                assert r.kappa_rounds[rd][j] == pytest.approx(cohen_kappa_score(y, r.predictions[rd, j]), abs=1e-12)
        np.testing.assert_allclose(r.kappa, np.mean(r.kappa_rounds, axis=0))
        assert len(out["results"][name]["predictions"]) == 3 and out["results"][name]["kappa"] == pytest.approx(r.kappa)
        # the errors are those of the predictions
        tests = [te for _, te in cv.split(X, y)]
        for f, te in enumerate(tests):
            np.testing.assert_allclose(r.fold_errors[f], np.mean(r.predictions[f // 4][:, te] != y[te], axis=1))


def test_integer_cv_above_the_smallest_class_names_the_largest_k():
    X, y = _data(n=40, K=2)
    y[:5], y[5:] = 1, 0  # class 1 has 5 samples
    with pytest.raises(WidemlError, match=r"the smallest class has 5 \(class 1\); use cv=5 or fewer\.$"):
        cross_validate_dims(RP(2), X, y, cv=6)
    assert cross_validate_dims(RP(2), X, y, cv=5).n_folds == 5


def test_a_failing_method_is_reported_and_the_others_scored():
    X, y = _data(n=30, p=40)
    report = cross_validate_dims({"lol": LOL(35, solver="gram"), "rp": RP(3)}, X, y, cv=3)
    bad, good = report.results["lol"], report.results["rp"]
    assert "allows at most" in bad.error and np.isnan(bad.errors).all() and bad.best_dim == 0
    assert good.error is None and np.isfinite(good.errors).all()
    assert "failed: method 'lol'" in report.table()
    assert json.loads(json.dumps(report.to_dict()))["results"]["lol"]["errors"][0] is None  # NaN as null: valid JSON
    with pytest.raises(WidemlError, match="allows at most"):  # every method failing: the one sentence, no pass
        cross_validate_dims({"lol": LOL(35, solver="gram")}, X, y, cv=3)


def test_max_dim_rank_caps_d_at_the_training_folds_rank():
    rng = np.random.default_rng(3)
    n, r = 48, 6
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, r)) @ rng.normal(size=(r, 200)) + 5  # centred rank <= 7 with the label column below
    X[:, 0] += y
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    report = cross_validate_dims({"rp": RP(20), "lfl": LFL(20)}, X, y, cv=cv, max_dim="rank")
    for res in report.results.values():
        expected = [np.linalg.matrix_rank(X[tr] - X[tr].mean(axis=0)) for tr, _ in cv.split(X, y)]
        assert res.fold_ranks == expected and max(res.dims) == min(expected) <= r + 1
    G = (X - X.mean(0)) @ (X - X.mean(0)).T
    assert training_rank(G, np.arange(n), np.finfo(np.float64).eps) == np.linalg.matrix_rank(X - X.mean(0))


def test_class_centred_training_rank_and_within_class_spread_against_numpy():
    """rrLDA's rank cap is the class-centred fold's rank (numpy's matrix_rank, default tolerance); an embedding whose
    classes are single points (up to rounding) is said not to vary, one with any real spread is said to vary."""
    from wideml.estimators.gram.cv_methods import varies_within_classes

    X, y = _data(n=30, p=80, K=3)
    Xc = X - X.mean(axis=0)
    G = Xc @ Xc.T
    within = X - np.stack([X[y == c].mean(axis=0) for c in range(3)])[y]
    eps = np.finfo(np.float64).eps
    assert training_rank(G, np.arange(30), eps, y) == np.linalg.matrix_rank(within) == 27
    assert training_rank(G, np.arange(30), eps) == np.linalg.matrix_rank(Xc) == 29
    Z = np.eye(3)[y] * 5.0 + 1e-17 * np.random.default_rng(0).normal(size=(30, 3))
    assert not varies_within_classes(Z, y, eps)
    Z[:, 0] += 1e-6 * np.random.default_rng(1).normal(size=30)
    assert varies_within_classes(Z, y, eps)
