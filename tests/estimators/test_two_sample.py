"""wideml.two_sample_test: Hotelling's T² after a projection, valid at its level (split and permutation).

Oracles: T² against a direct numpy computation, the F conversion against
scipy.stats.f, the split statistic against the paper's LOL computed in numpy
on the learning half (in memory and on stores of several chunkings), the
size of both tests under the null over 200 simulations, their power under an
alternative, and the invalid naive test (projection learned on the tested
samples) for contrast.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from oracles import reference_lol, reference_pca
from wideml import LFL, LOL, RP, open_store, two_sample_test, write_store
from wideml.estimators.hotelling import hotelling_f, hotelling_t2
from wideml.estimators.two_sample import _half_split, gram_permutation_statistics, gram_split_embedding
from wideml.exceptions import WidemlError
from wideml.storage.reader import READ_COUNTER

ALPHA = 0.05
#: Simulations under the null: the split test's are cheap (no eigensolve per permutation), so it gets more.
SIMS = {"split": 1000, "permutation": 200}


def _size_bound(sims: int) -> float:
    """Rejection rate allowed under the null: the level plus two binomial standard errors over ``sims`` simulations."""
    return ALPHA + 2 * np.sqrt(ALPHA * (1 - ALPHA) / sims)


def _null_data(rng, n=40, p=200):
    """Two groups of Gaussian samples with a shared, non-spherical covariance and equal means."""
    scales = np.linspace(2.0, 0.3, p)
    return rng.standard_normal((n, p)) * scales, np.repeat([0, 1], n // 2)


def _shifted(rng, n=40, p=200, shift=0.9):
    X, y = _null_data(rng, n, p)
    X[y == 1, :10] += shift
    return X, y


# ----------------------------------------------------------------------------- the statistic and its F conversion
def test_t2_equals_a_direct_numpy_computation():
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((23, 4))
    codes = (np.arange(23) % 3 == 0).astype(int)
    a, b = Z[codes == 0], Z[codes == 1]
    S = ((len(a) - 1) * np.cov(a, rowvar=False) + (len(b) - 1) * np.cov(b, rowvar=False)) / (len(Z) - 2)
    diff = a.mean(0) - b.mean(0)
    expected = len(a) * len(b) / len(Z) * diff @ np.linalg.inv(S) @ diff
    assert hotelling_t2(Z, codes) == pytest.approx(expected, rel=1e-12)
    # affine invariance: any invertible map of the coordinates leaves T² unchanged
    M = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    assert hotelling_t2(Z @ M + 3.0, codes) == pytest.approx(expected, rel=1e-9)


def test_f_conversion_matches_scipy_and_its_null_distribution():
    t2, d, n0, n1 = 7.3, 3, 11, 9
    F, df1, df2, p = hotelling_f(t2, d, n0, n1)
    assert (df1, df2) == (3, 16)
    assert F == pytest.approx((n0 + n1 - d - 1) / (d * (n0 + n1 - 2)) * t2)
    assert p == pytest.approx(scipy.stats.f.sf(F, 3, 16), rel=1e-12)
    # under Gaussian equal means, the converted statistic is F(d, n - d - 1) distributed
    rng = np.random.default_rng(2)
    codes = np.repeat([0, 1], [n0, n1])
    Fs = [hotelling_f(hotelling_t2(rng.standard_normal((n0 + n1, d)), codes), d, n0, n1)[0] for _ in range(2000)]
    assert scipy.stats.kstest(Fs, scipy.stats.f(d, df2).cdf).pvalue > 1e-3


def test_degenerate_inputs_are_one_sentence():
    codes = np.array([0, 0, 1, 1])
    with pytest.raises(WidemlError, match="at least 5 tested samples"):
        hotelling_t2(np.ones((4, 3)), codes)
    Z = np.random.default_rng(0).standard_normal((10, 2))
    with pytest.raises(WidemlError, match="linearly dependent"):
        hotelling_t2(np.hstack([Z, Z[:, :1]]), np.arange(10) % 2)


# ----------------------------------------------------------------------------- oracle: the split test equals numpy
def _split_oracle(X, y, d, seed, reference):
    learn, test = _half_split(np.asarray(y), np.random.default_rng(seed))
    A = reference(X[learn], y[learn], d)
    Z = X[test] @ A
    t2 = hotelling_t2(Z, y[test])
    return t2, hotelling_f(t2, d, int(np.sum(y[test] == 0)), int(np.sum(y[test] == 1)))[3]


@pytest.mark.parametrize("name, reference", [
    ("lol", lambda X, y, d: reference_lol(X, y, d)),
    ("pca", lambda X, y, d: reference_pca(X, d)),
])
def test_split_statistic_equals_the_in_memory_reference_across_chunkings(tmp_path, name, reference):
    rng = np.random.default_rng(1)
    X, y = _shifted(rng, n=34, p=90, shift=0.5)
    t2, p = _split_oracle(X, y, 3, 7, reference)
    got = two_sample_test(X, y, projection=name, n_components=3, random_state=7)
    assert got.statistic == pytest.approx(t2, rel=1e-8) and got.p_value == pytest.approx(p, rel=1e-6)
    assert got.n_learn == 16 and got.n_per_group == {"0": 9, "1": 9} and got.df == [3, 14] and got.n_passes == 1
    for chunk in (7, 90):
        path = write_store(tmp_path / f"s{chunk}.zarr", X, y, feature_chunk=chunk)
        store = open_store(path)
        before = READ_COUNTER[str(store.path)]
        on_store = two_sample_test(store, projection=name, n_components=3, random_state=7)
        assert READ_COUNTER[str(store.path)] - before == store.X.numblocks[1]  # one pass over X
        assert on_store.statistic == pytest.approx(t2, rel=1e-8)


def test_robust_lol_split_uses_the_learning_half_medians_in_one_pass(tmp_path):
    rng = np.random.default_rng(4)
    X, y = _shifted(rng, n=30, p=60)
    t2, _ = _split_oracle(X, y, 2, 5, lambda A, b, d: reference_lol(A, b, d, robust=True))
    store = open_store(write_store(tmp_path / "s.zarr", X, y, feature_chunk=16))
    got = two_sample_test(store, projection=LOL(robust_first=True), n_components=2, random_state=5)
    assert got.statistic == pytest.approx(t2, rel=1e-8) and got.n_passes == 1 and got.projection == "LOL (medians)"


@pytest.mark.parametrize("make", [lambda: LFL(3, random_state=2), lambda: RP(3, random_state=2)], ids=["lfl", "rp"])
def test_other_embeddings_split_is_a_fit_on_one_half_and_a_transform_of_the_other(make):
    rng = np.random.default_rng(5)
    X, y = _shifted(rng, n=30, p=50)
    learn, test = _half_split(y, np.random.default_rng(9))
    Z = make().fit(X[learn], y[learn]).transform(X[test])
    got = two_sample_test(X, y, projection=make(), random_state=9)
    assert got.statistic == pytest.approx(hotelling_t2(Z, y[test]), rel=1e-8)
    assert got.n_passes == 2


# ----------------------------------------------------------------------------- validity and power
# The simulations run the Gram-based path two_sample_test runs after its one pass (gram_split_embedding,
# gram_permutation_statistics) on G = X_c X_c^T computed in numpy, so 200 simulations take seconds;
# test_public_function_is_the_gram_path below checks that two_sample_test computes exactly this.
def _split_p(X, y, seed, d=2):
    G = (X - X.mean(0)) @ (X - X.mean(0)).T
    learn, test = _half_split(y, np.random.default_rng(seed))
    Z = gram_split_embedding(LOL(d, robust_first=False), G, y, learn, test, d, X.shape[1])
    return hotelling_f(hotelling_t2(Z, y[test]), d, int(np.sum(y[test] == 0)), int(np.sum(y[test] == 1)))[3]


def _permutation_p(X, y, seed, d=2, n_permutations=19):
    G = (X - X.mean(0)) @ (X - X.mean(0)).T
    rng = np.random.default_rng(seed)
    relabellings = [y[rng.permutation(len(y))] for _ in range(n_permutations)]
    observed, permuted = gram_permutation_statistics(LOL(d, robust_first=False), G, y, relabellings, d, X.shape[1])
    return (1 + np.sum(permuted >= observed * (1 - 1e-12))) / (1 + n_permutations)


def test_public_function_is_the_gram_path():
    X, y = _shifted(np.random.default_rng(13), shift=0.4)
    assert two_sample_test(X, y, n_components=2, random_state=4).p_value == pytest.approx(_split_p(X, y, 4), rel=1e-8)
    got = two_sample_test(X, y, n_components=2, random_state=4, method="permutation", n_permutations=19)
    assert got.p_value == _permutation_p(X, y, 4) and got.n_passes == 1


def _rejections(p_value, make_data, sims):
    rng = np.random.default_rng(1)
    rejected = 0
    for s in range(sims):
        X, y = make_data(rng)
        rejected += p_value(X, y, s) <= ALPHA
    return rejected / sims


def _permuted_labels(rng):
    """Data with a real group difference, tested with labels drawn independently of it (a null too)."""
    X, y = _shifted(rng, shift=1.5)
    return X, rng.permutation(y)


@pytest.mark.parametrize("make_data", [_null_data, _permuted_labels], ids=["equal-means", "permuted-labels"])
def test_split_test_holds_its_level(make_data):
    assert _rejections(_split_p, make_data, SIMS["split"]) <= _size_bound(SIMS["split"])


@pytest.mark.parametrize("make_data", [_null_data, _permuted_labels], ids=["equal-means", "permuted-labels"])
def test_permutation_test_holds_its_level(make_data):
    # 19 relabellings: p <= 0.05 only when the observed T² is the largest of 20, probability exactly 1/20 under the null
    assert _rejections(_permutation_p, make_data, SIMS["permutation"]) <= _size_bound(SIMS["permutation"])


@pytest.mark.parametrize("p_value", [_split_p, _permutation_p], ids=["split", "permutation"])
def test_power_under_an_alternative(p_value):
    power = _rejections(p_value, lambda rng: _shifted(rng, shift=2.0), sims=40)
    assert power >= 0.4, power  # the level is 0.05


def test_the_naive_same_sample_test_would_not_hold_its_level():
    """Why the projection must not be learned from the tested samples: LOL fitted on all samples, then the F-test, rejects far too often."""
    rng = np.random.default_rng(12)
    rejected = 0
    for _ in range(50):
        X, y = _null_data(rng)
        Z = LOL(2, robust_first=False).fit(X, y).embedding_
        rejected += hotelling_f(hotelling_t2(Z, y), 2, 20, 20)[3] <= ALPHA
    assert rejected / 50 > 0.5


def test_unsupervised_projection_is_fitted_once_under_permutations():
    rng = np.random.default_rng(6)
    X, y = _null_data(rng, n=30, p=40)
    result = two_sample_test(X, y, projection=RP(2), method="permutation", n_permutations=9)
    assert result.n_passes == 1 and result.n_permutations == 9
    pca = two_sample_test(X, y, projection="pca", n_components=2, method="permutation", n_permutations=9)
    Z = (X - X.mean(0)) @ reference_pca(X, 2)
    assert pca.statistic == pytest.approx(hotelling_t2(Z, y), rel=1e-8) and pca.n_passes == 1


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, words", [
    (dict(method="bootstrap"), "method"),
    (dict(projection="qda"), "projection"),
    (dict(n_components=0), "n_components"),
    (dict(n_components=19), "n_components"),
    (dict(n_permutations=0, method="permutation"), "n_permutations"),
])
def test_bad_arguments_are_one_sentence(kwargs, words):
    X, y = _null_data(np.random.default_rng(0), n=40, p=30)
    with pytest.raises(WidemlError) as info:
        two_sample_test(X, y, **kwargs)
    message = str(info.value)
    assert words in message and message.endswith(".") and message.count(". ") == 0, message


def test_three_groups_are_refused():
    X = np.random.default_rng(0).standard_normal((30, 10))
    with pytest.raises(WidemlError, match="exactly two classes"):
        two_sample_test(X, np.arange(30) % 3)
