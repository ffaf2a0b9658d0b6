"""The LOL paper's Fig. 7 simulators against their formulas: decay-diagonal / decay-dense (testing), sparse Toeplitz regression."""

from __future__ import annotations

import numpy as np
import pytest

from wideml.exceptions import WidemlError
from wideml.sims import SETTINGS, simulate
from wideml.sims.rotations import dense_rotation
from wideml.sims.sparse_regression import sparse_coefficients, sparse_toeplitz_regression
from wideml.sims.spectral_decay import MEAN_BLOCK, eigenvalues, mean_direction, spectrum_base


@pytest.mark.parametrize("b", [0.0, 1.0, 5.0, 250.0])
def test_spectrum_is_linspace_to_the_b_with_frobenius_norm_50(b):
    p = 300
    t = np.linspace(0.01, 1.0, p)
    lam = eigenvalues(np.arange(p), p, b)
    np.testing.assert_allclose(spectrum_base(np.arange(p), p), t, rtol=0, atol=1e-15)
    np.testing.assert_allclose(lam, 50 * t**b / np.linalg.norm(t**b), rtol=1e-12)
    assert np.isclose(np.sqrt(np.sum(lam**2)), 50.0)


def test_mean_direction_is_a_unit_vector_across_mean_blocks():
    p = MEAN_BLOCK + 37
    code = SETTINGS["decay-diagonal"].code
    pieces = [mean_direction(np.arange(a, min(p, a + 5000)), 3, code, p) for a in range(0, p, 5000)]
    mu = np.concatenate(pieces)
    assert np.isclose(np.linalg.norm(mu), 1.0)
    straddling = mean_direction(np.arange(MEAN_BLOCK - 3, MEAN_BLOCK + 3), 3, code, p)
    np.testing.assert_array_equal(straddling, mu[MEAN_BLOCK - 3:MEAN_BLOCK + 3])
    assert not np.allclose(mu, mean_direction(np.arange(p), 4, code, p))  # another seed, another direction


def test_diagonal_setting_has_the_formula_moments():
    n, p, b = 40000, 6, 2.0
    X, y = simulate("decay-diagonal", n, p, seed=5, b=b)
    X = X.compute()
    mu1 = mean_direction(np.arange(p), 5, SETTINGS["decay-diagonal"].code, p)
    lam = eigenvalues(np.arange(p), p, b)
    assert abs(np.mean(y) - 0.5) < 0.02
    se = np.sqrt(lam / (n / 2))
    assert np.all(np.abs(X[y == 0].mean(axis=0)) < 5 * se)
    assert np.all(np.abs(X[y == 1].mean(axis=0) - mu1) < 5 * se)
    pooled = np.cov(np.vstack([X[y == 0] - X[y == 0].mean(0), X[y == 1] - X[y == 1].mean(0)]).T)
    np.testing.assert_allclose(np.diag(pooled), lam, rtol=0.05)
    off = pooled - np.diag(np.diag(pooled))
    assert np.max(np.abs(off)) < 0.05 * lam.max()


def test_dense_setting_is_the_diagonal_one_rotated():
    n, p = 30, 70
    Xd, yd = simulate("decay-diagonal", n, p, seed=9, b=10.0)
    Xr, yr = simulate("decay-dense", n, p, seed=9, b=10.0, chunks=25)
    Q = dense_rotation(9, SETTINGS["decay-dense"].code, p)
    np.testing.assert_array_equal(yd, yr)
    np.testing.assert_allclose(Xr.compute(), Xd.compute() @ Q.T, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(Q @ Q.T, np.eye(p), atol=1e-12)


def test_negative_decay_is_one_sentence():
    with pytest.raises(WidemlError, match="decay rate must be 0 or more"):
        simulate("decay-diagonal", 4, 10, b=-1.0)


def test_sparse_coefficients():
    beta = sparse_coefficients(500, 40, seed=2)
    assert np.count_nonzero(beta) == 40 and np.all((beta >= 0) & (beta < 1))
    np.testing.assert_array_equal(beta, sparse_coefficients(500, 40, seed=2))
    first = sparse_coefficients(500, 2, seed=2, support="first")
    assert np.count_nonzero(first[2:]) == 0 and np.all(first[:2] > 0)
    with pytest.raises(WidemlError, match="more than the 10 features"):
        sparse_coefficients(10, 11)
    with pytest.raises(WidemlError, match="support="):
        sparse_coefficients(10, 2, support="last")


def test_sparse_regression_target_and_features_follow_the_formula():
    n, p, rho, noise = 6000, 30, 0.9, 2.0
    X, y, beta = sparse_toeplitz_regression(n, p, seed=1, rho=rho, n_nonzero=5, noise=noise)
    X = X.compute()
    resid = y - X @ beta
    assert abs(resid.std() / noise - 1) < 0.05 and abs(resid.mean()) < 5 * noise / np.sqrt(n)
    sigma = rho ** np.abs(np.subtract.outer(np.arange(p), np.arange(p)))
    np.testing.assert_allclose(np.cov(X.T), sigma, atol=0.06)
    assert abs(y.var() / (beta @ sigma @ beta + noise**2) - 1) < 0.08
    X2, y2, beta2 = sparse_toeplitz_regression(n, p, seed=1, rho=rho, n_nonzero=5, noise=noise, chunks=7)
    np.testing.assert_array_equal(X2.compute(), X)
    np.testing.assert_array_equal(beta2, beta)
    np.testing.assert_allclose(y2, y, rtol=1e-12, atol=1e-12)


def test_sparse_regression_refuses_bad_noise():
    with pytest.raises(WidemlError, match="noise="):
        sparse_toeplitz_regression(5, 10, n_nonzero=2, noise=-1.0)


@pytest.mark.parametrize("b", [0.0, 1.0, 5.0, 1000.0])
def test_large_p_frobenius_sum_by_euler_maclaurin_equals_the_term_by_term_sum(b):
    from wideml.sims import spectral_decay

    p = spectral_decay.EXACT_SUM_MAX + 1001
    exact = float(np.sum(spectrum_base(np.arange(p), p) ** (2 * b)))
    assert np.isclose(spectral_decay._sum_of_squares(p, b), exact, rtol=1e-13, atol=0)


def test_mean_norm_is_the_norm_of_the_blocks():
    from wideml.sims import spectral_decay

    p, code = 2 * MEAN_BLOCK + 11, SETTINGS["decay-diagonal"].code
    g = np.concatenate([spectral_decay._mean_block(1, code, k, p) for k in range(3)])
    assert np.isclose(np.linalg.norm(g), spectral_decay._mean_norm(1, code, p), rtol=1e-13)
    assert abs(np.std(g) - 1) < 0.01  # N(0, 1) entries: a Gaussian direction times a chi radius
