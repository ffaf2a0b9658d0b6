"""wideml.LOLRegressor: LOL on percentile classes of y, then least squares; equal to a numpy reference across chunkings."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from oracles import reference_lol
from wideml import LOLRegressor, load_model, open_store, save_model, write_store
from wideml.estimators.regression import quantile_bins
from wideml.exceptions import WidemlError
from wideml.storage.reader import READ_COUNTER


def _data(n=60, p=120, seed=0):
    rng = np.random.default_rng(seed)
    scales = np.linspace(2.0, 0.5, p)
    X = rng.standard_normal((n, p)) * scales
    y = 2.0 * X[:, 0] - X[:, 1] + 0.1 * rng.standard_normal(n)  # the paper's sparse linear target
    return X, y


def _reference_predict(X, y, X_new, d, n_bins, robust):
    """numpy: quantile bins, the paper's LOL on them (tests/oracles.py), least squares with an intercept."""
    edges = np.quantile(y, np.linspace(0, 1, n_bins + 1))
    codes = np.searchsorted(edges[1:-1], y, side="right")
    A = reference_lol(X, codes, d, robust=robust)
    mean = X.mean(0)
    Z = (X - mean) @ A
    coef = np.linalg.lstsq(np.hstack([np.ones((len(y), 1)), Z]), y, rcond=None)[0]
    return coef[0] + (X_new - mean) @ A @ coef[1:]


@pytest.mark.parametrize("robust", [True, False], ids=["medians", "means"])
def test_equals_the_numpy_reference_in_memory_and_across_chunkings(tmp_path, robust):
    X, y = _data()
    X_new = _data(n=15, seed=1)[0]
    expected = _reference_predict(X, y, X_new, 4, 10, robust)
    model = LOLRegressor(4, robust_first=robust, solver="gram", precision="float64").fit(X, y)
    np.testing.assert_allclose(model.predict(X_new), expected, rtol=1e-8, atol=1e-8)
    assert model.n_bins_ == 10 and model.n_fit_passes_ == 2
    for chunk in (7, 120):
        store = open_store(write_store(tmp_path / f"s{chunk}.zarr", X, y, feature_chunk=chunk))
        before = READ_COUNTER[str(store.path)]
        fitted = LOLRegressor(4, robust_first=robust, solver="gram", precision="float64").fit(store)  # y from the store
        assert READ_COUNTER[str(store.path)] - before == 2 * store.X.numblocks[1]  # LOL's two passes
        np.testing.assert_allclose(fitted.predict(X_new), expected, rtol=1e-8, atol=1e-8)


def test_predicts_a_linear_target_well():
    X, y = _data(n=200, p=60, seed=3)
    X_new, y_new = _data(n=100, p=60, seed=4)
    assert LOLRegressor(6).fit(X, y).score(X_new, y_new) > 0.5  # R² on new data (0 for the mean)


def test_ties_share_a_bin_and_empty_bins_are_dropped():
    y = np.array([0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4, 5], dtype=float)
    codes, edges = quantile_bins(y, 4)
    assert len(edges) == 5
    for value in np.unique(y):
        assert len(set(codes[y == value])) == 1  # equal values, one bin
    assert np.all(np.diff(codes[np.argsort(y, kind="stable")]) >= 0)  # bins follow the order of y
    X = np.random.default_rng(0).standard_normal((12, 30))
    model = LOLRegressor(2, n_bins=4).fit(X, y)
    assert model.n_bins_ == len(np.unique(codes)) < 4


def test_save_and_load_give_the_same_predictions(tmp_path):
    X, y = _data()
    store = open_store(write_store(tmp_path / "s.zarr", X, y, feature_chunk=32))
    model = LOLRegressor(3).fit(store)
    path = save_model(model, tmp_path / "m.zarr")
    loaded = load_model(path)
    assert type(loaded) is LOLRegressor and loaded.n_bins_ == model.n_bins_
    np.testing.assert_allclose(loaded.predict(X), model.predict(X), rtol=1e-10)
    np.testing.assert_array_equal(loaded.bin_edges_, model.bin_edges_)


@pytest.mark.parametrize("y, words", [
    (np.full(30, 2.5), "single value"),
    (np.where(np.arange(30) == 3, np.nan, np.arange(30.0)), "NaN"),
    (np.array(["a", "b"] * 15), "not numbers"),
    (np.array(["a", 1.0] * 15, dtype=object), "not numbers"),
])
def test_bad_targets_are_one_sentence(y, words):
    X = np.random.default_rng(0).standard_normal((30, 12))
    with pytest.raises(WidemlError, match=words) as info:
        LOLRegressor(2).fit(X, y)
    assert str(info.value).endswith(".")


@pytest.mark.parametrize("n_bins", [1, 2.5, True])
def test_bad_n_bins_is_refused_before_any_pass(n_bins):
    with pytest.raises(WidemlError, match="n_bins"):
        LOLRegressor(2, n_bins=n_bins).fit(np.zeros((10, 4)), np.arange(10.0))


@parametrize_with_checks([LOLRegressor()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_a_value_holding_the_tied_quantile_edges_gets_its_own_bin():
    """39 zeros and a one: every inner edge ties at 0; the zeros get bin 0 and the one the top bin (not one class)."""
    y = np.r_[np.zeros(39), 1.0]
    codes, edges = quantile_bins(y, 10)
    np.testing.assert_array_equal(edges, np.quantile(y, np.linspace(0, 1, 11)))
    assert set(codes[y == 0]) == {0} and set(codes[y == 1]) == {9}
    y = np.r_[0.0, 1.0, 1.0, np.full(7, 2.0), 3.0]  # ties in the middle: the tied value alone, the values above it above
    codes, edges = quantile_bins(y, 4)
    tied = np.flatnonzero(edges[:-1] == edges[1:])
    assert len(tied) and set(codes[y == 2.0]) == {int(tied[0])} and set(codes[y == 3.0]) == {3}
