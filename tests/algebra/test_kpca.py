"""Exact KPCA (digest §1b): scikit-learn oracle, Proposition 3, the test mapping, bad input."""

import warnings

import numpy as np
import pytest
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.metrics.pairwise import rbf_kernel

from wideml.algebra.kernels import gram_sq_distances
from wideml.algebra.kpca import NotPSDWarning, fit_kpca
from wideml.exceptions import WidemlError


@pytest.fixture
def kernels():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 6))
    Xt = rng.normal(size=(9, 6))
    g = 1 / (2 * 6 * 0.8**2)
    return X, Xt, rbf_kernel(X, gamma=g), rbf_kernel(Xt, X, gamma=g), rbf_kernel(Xt, gamma=g)


def _match_signs(A, B):
    signs = np.sign(np.sum(A * B, axis=0))
    return A * signs


@pytest.mark.parametrize("r", [5, 20])
def test_coordinates_match_sklearn_precomputed(kernels, r):
    _, _, K, Kt, _ = kernels
    fit = fit_kpca(K, r)
    sk = SkKernelPCA(n_components=r, kernel="precomputed").fit(K)
    F_sk = sk.transform(K)
    np.testing.assert_allclose(_match_signs(fit.train_coordinates(), F_sk), F_sk, atol=1e-9)
    T_sk = sk.transform(Kt)
    signs = np.sign(np.sum(fit.train_coordinates() * F_sk, axis=0))
    np.testing.assert_allclose(fit.transform(Kt) * signs, T_sk, atol=1e-9)
    np.testing.assert_allclose(fit.eigenvalues, sk.eigenvalues_, rtol=1e-9)


def test_proposition3_isometry_and_train_through_test_path(kernels):
    _, _, K, Kt, Ktt = kernels
    fit = fit_kpca(K)
    assert fit.n_components == fit.n_nonzero == 39  # rank n - 1 after centring
    F = fit.train_coordinates()
    feature_d2 = np.diag(K)[:, None] + np.diag(K)[None, :] - 2 * K
    np.testing.assert_allclose(gram_sq_distances(F @ F.T), feature_d2, atol=1e-12)
    np.testing.assert_allclose(fit.transform(K), F, atol=1e-12)  # training rows through the test path
    # A test point's distances to the training points differ from the feature-space ones by a constant per point.
    T = fit.transform(Kt)
    kpca_d2 = (T**2).sum(1)[:, None] + (F**2).sum(1)[None, :] - 2 * T @ F.T
    feat = np.diag(Ktt)[:, None] + np.diag(K)[None, :] - 2 * Kt
    gap = feat - kpca_d2
    np.testing.assert_allclose(gap - gap[:, :1], 0, atol=1e-10)
    assert np.all(gap > -1e-10)


def test_linear_kernel_is_pca():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 5)) @ rng.normal(size=(5, 5)) + 10
    Xc = X - X.mean(0)
    fit = fit_kpca(X @ X.T)
    assert fit.n_components == 5
    U, s, _ = np.linalg.svd(Xc, full_matrices=False)
    np.testing.assert_allclose(np.abs(fit.train_coordinates()), np.abs(U * s), atol=1e-9)


def test_not_psd_is_clipped_with_a_warning(kernels):
    _, _, K, _, _ = kernels
    vals, vecs = np.linalg.eigh(K)
    vals[0] = -0.05
    bad = (vecs * vals) @ vecs.T
    with pytest.warns(NotPSDWarning, match=r"most negative -0\.0\d+"):
        fit = fit_kpca(bad)
    assert np.all(fit.eigenvalues > 0) and fit.clipped < -0.04
    # round-off negatives (a wide RBF: K close to 1 1^T) are not reported
    D2 = gram_sq_distances(K)
    wide = np.exp(-D2 / 2e6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit_kpca(wide)


def test_bad_input(kernels):
    X, _, K, _, _ = kernels
    with pytest.raises(WidemlError, match="more than the 39 non-zero eigenvalues"):
        fit_kpca(K, 45)
    lin = X[:, :3] @ X[:, :3].T
    with pytest.raises(WidemlError, match="n_components=4 is more than the 3 non-zero"):
        fit_kpca(lin, 4)
    with pytest.raises(WidemlError, match="at least 1"):
        fit_kpca(K, 0)
    with pytest.raises(WidemlError, match="square"):
        fit_kpca(K[:, :5])
    with pytest.raises(WidemlError, match="NaN"):
        fit_kpca(np.full((3, 3), np.nan))
    with pytest.raises(WidemlError, match="symmetric"):
        fit_kpca(K + np.triu(np.ones_like(K), 1))
    with pytest.raises(WidemlError, match="one column per training sample"):
        fit_kpca(K).transform(K[:, :3])


def test_at_most_caps_components_for_grid_scans():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 3))
    lin = X @ X.T
    assert fit_kpca(lin, 10, at_most=True).n_components == 3
