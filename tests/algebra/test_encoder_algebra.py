"""Encoder algebra against direct numpy computations (no passes)."""

import numpy as np
import pytest
import scipy.stats

from wideml.algebra import encoder as alg
from wideml.exceptions import WidemlError


def _data(seed=0, n=30, p=50, K=3):
    rng = np.random.default_rng(seed)
    codes = np.arange(n) % K
    X = rng.standard_normal((n, p)) + codes[:, None]
    U = np.stack([X[codes == k].mean(0) for k in range(K)])
    return X, codes, U


def test_resolve_kernels_names_aliases_and_strings():
    assert alg.resolve_kernels("inner, Euclidean,spearman") == ("linear", "euclidean", "spearman")
    assert alg.resolve_kernels(["linear", "inner"]) == ("linear",)


def test_unknown_kernel_lists_the_valid_ones():
    with pytest.raises(WidemlError, match="unknown kernel 'gaussian'; valid kernels are linear, euclidean, spearman"):
        alg.resolve_kernels("linear,gaussian")


def test_pearson_from_sums_is_the_correlation():
    rng = np.random.default_rng(1)
    R, S = rng.standard_normal((6, 40)), rng.standard_normal((3, 40))
    got = alg.pearson_from_sums(R @ S.T, R.sum(1), (R**2).sum(1), S.sum(1), (S**2).sum(1), 40)
    want = np.corrcoef(np.vstack([R, S]))[:6, 6:]
    np.testing.assert_allclose(got, want, atol=1e-12)
    # a constant row correlates 0 with everything
    R[0] = 2.0
    got = alg.pearson_from_sums(R @ S.T, R.sum(1), (R**2).sum(1), S.sum(1), (S**2).sum(1), 40)
    assert np.all(got[0] == 0)


def test_kernels_from_additive_statistics():
    X, codes, U = _data()
    stats = alg.AnchorStats(X @ U.T, (X**2).sum(1), (U**2).sum(1), X.shape[1])
    np.testing.assert_allclose(alg.embed("linear", stats)[0], X @ U.T)
    D = np.linalg.norm(X[:, None] - U[None], axis=2)
    Z, off = alg.embed("euclidean", stats)
    assert off == pytest.approx(D.max())
    np.testing.assert_allclose(Z, D.max() - D, atol=1e-10)


def test_leave_one_out_embeddings_match_direct_means():
    X, codes, U = _data(2)
    K = U.shape[0]
    counts = np.bincount(codes)
    stats = alg.AnchorStats(X @ U.T, (X**2).sum(1), (U**2).sum(1), X.shape[1])
    lin = alg.loo_embed("linear", stats, codes, counts, 0.0)
    off = 10.0
    euc = alg.loo_embed("euclidean", stats, codes, counts, off)
    for i in range(len(X)):
        Ul = U.copy()
        c = codes[i]
        Ul[c] = np.delete(X[codes == c], np.flatnonzero(np.flatnonzero(codes == c) == i), axis=0).mean(0)
        np.testing.assert_allclose(lin[i], X[i] @ Ul.T, atol=1e-10)
        np.testing.assert_allclose(euc[i], off - np.linalg.norm(X[i] - Ul, axis=1), atol=1e-10)
    # full-kernel form: dropping A(i, i) from the own-class mean
    A = X @ X.T
    W = np.zeros((len(X), K))
    W[np.arange(len(X)), codes] = 1 / counts[codes]
    np.testing.assert_allclose(alg.loo_full(A @ W, np.diag(A), codes, counts), lin, atol=1e-10)


def test_selection_rule_switches_only_at_thirty_percent():
    assert alg.select_kernel({"linear": 100.0, "euclidean": 71.0, "spearman": 90.0}) == "linear"
    assert alg.select_kernel({"linear": 100.0, "euclidean": 70.0, "spearman": 90.0}) == "euclidean"
    assert alg.select_kernel({"linear": 100.0, "euclidean": 95.0}, baseline=None) == "euclidean"
    assert alg.select_kernel({"euclidean": 5.0, "spearman": 3.0}) == "spearman"  # no baseline present: arg-min


def test_cross_entropy_clips_zero_probabilities():
    P = np.array([[0.5, 0.5], [1.0, 0.0]])
    assert alg.cross_entropy(P, np.array([0, 1])) == pytest.approx(np.log(2) - np.log(alg.PROBA_FLOOR))


def test_rank_table_with_every_feature_gives_exact_mid_ranks():
    rng = np.random.default_rng(3)
    X = np.round(rng.standard_normal((5, 60)), 1)  # many ties
    X[0] = rng.integers(0, 2, 60)  # binary row
    tables = alg.rank_tables(X)
    np.testing.assert_allclose(alg.approx_ranks(X, tables, 60), scipy.stats.rankdata(X, axis=1), atol=1e-10)


def test_estimated_ranks_are_close_and_chunking_free():
    rng = np.random.default_rng(4)
    x = rng.standard_normal(20000)
    idx = alg.sketch_features(20000, 2000, seed=7)
    np.testing.assert_array_equal(idx, alg.sketch_features(20000, 2000, seed=7))
    table = alg.rank_table(x[idx])
    err = np.abs(table.rank(x, 20000) - scipy.stats.rankdata(x)) / 20000
    assert err.max() < 0.05 and err.mean() < 0.01


def test_row_ranks_equal_scipy_average_ranks():
    rng = np.random.default_rng(5)
    X = np.round(rng.standard_normal((40, 70)), 1)
    X[3] = 1.0  # a constant row
    np.testing.assert_array_equal(alg.row_ranks(X), scipy.stats.rankdata(X, axis=1))


@pytest.mark.parametrize("X", [
    np.random.default_rng(1).integers(0, 256, (30, 64)).astype(float),  # pixels: ranked by counting
    np.random.default_rng(2).integers(-3, 4, (12, 9)),  # integers with many ties
    np.random.default_rng(3).integers(0, 9, (20, 40)).astype(np.float32)[:, ::2],  # float32, not contiguous
    np.random.default_rng(4).integers(0, 10**6, (10, 30)).astype(float),  # integers of a wide range: sorted
    np.vstack([np.arange(50.0), np.random.default_rng(5).standard_normal((4, 50))]),  # first row integral only
])
def test_row_ranks_by_counting_or_sorting_equal_scipy(X):
    np.testing.assert_array_equal(alg.row_ranks(X), scipy.stats.rankdata(X, axis=1))


@pytest.mark.parametrize("K", [2, 3, 7])
def test_lda_svd_matches_scikit_learn(K):
    import warnings

    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    rng = np.random.default_rng(K)
    codes = rng.permutation(np.arange(300) % K)
    Z = rng.standard_normal((300, 6)) @ rng.standard_normal((6, 6)) + codes[:, None] * 0.7
    Z[:, 5] = Z[:, 4] * 2  # collinear columns, as encoder embeddings often have
    Znew = rng.standard_normal((40, 6)) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LinearDiscriminantAnalysis().fit(Z, codes)
    fit = alg.lda_svd(Z, codes, K)
    np.testing.assert_allclose(fit.means, ref.means_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fit.coef, ref.coef_, rtol=1e-9, atol=1e-9 * np.abs(ref.coef_).max())
    np.testing.assert_allclose(fit.intercept, ref.intercept_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fit.explained_variance_ratio, ref.explained_variance_ratio_, atol=1e-12)
    np.testing.assert_allclose(alg.lda_proba(fit.coef, fit.intercept, Znew), ref.predict_proba(Znew), atol=1e-10)


def test_lda_svd_declines_what_it_does_not_handle():
    Z = np.random.default_rng(0).standard_normal((10, 3))
    assert alg.lda_svd(Z, np.array([0] * 5 + [2] * 5), 3) is None  # a class without rows
    assert alg.lda_svd(Z[:3], np.array([0, 1, 2]), 3) is None  # no more rows than classes
    Z[0, 0] = np.nan
    assert alg.lda_svd(Z, np.arange(10) % 2, 2) is None
    assert alg.lda_svd(np.ones((10, 2)), np.arange(10) % 2, 2) is None  # no within-class spread
