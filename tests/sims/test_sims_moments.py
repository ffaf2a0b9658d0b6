"""Class means and variances of every setting match the papers' specification (small p, large n).

Expected values are written out here from the papers' formulas, independently of
the simulator code. Tolerances are 5 standard errors per entry.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.linalg import toeplitz

from wideml.sims import sample_info, simulate

N = 4000
Z = 5.0


def draw(name, p, n=N, seed=7, **params):
    X, y = simulate(name, n, p, seed=seed, **params)
    return X.compute(), y


def check_class_moments(X, y, means, variances, kurtosis_excess=0.0):
    """means, variances: (K, p) expected per class; asserts every entry within Z standard errors."""
    for k in range(means.shape[0]):
        xk = X[y == k]
        nk = xk.shape[0]
        assert nk > 100, f"class {k} has only {nk} samples"
        se_mean = np.sqrt(variances[k] / nk)
        np.testing.assert_array_less(np.abs(xk.mean(0) - means[k]), Z * se_mean + 1e-12)
        se_var = variances[k] * np.sqrt((2.0 + kurtosis_excess) / (nk - 1))
        np.testing.assert_array_less(np.abs(xk.var(0, ddof=1) - variances[k]), Z * se_var + 1e-12)


def test_cigars():
    p, a, b = 10, 0.15, 4.0
    X, y = draw("cigars", p)
    mu1 = np.full(p, a)
    mu1[1] = b
    var = np.ones(p)
    var[1] = b
    check_class_moments(X, y, np.stack([np.zeros(p), mu1]), np.stack([var, var]))


@pytest.mark.parametrize("name", ["trunk", "trunk3"])
def test_trunk_family(name):
    p = 12
    X, y = draw(name, p)
    mu0 = 4.0 / np.sqrt(np.arange(1, 2 * p, 2))  # b / sqrt(1, 3, ..., 2p-1)
    var = 100.0 / np.sqrt(np.arange(p, 0, -1))  # 100 / sqrt(p, ..., 1)
    means = [mu0, -mu0] + ([np.zeros(p)] if name == "trunk3" else [])
    check_class_moments(X, y, np.stack(means), np.stack([var] * len(means)))
    assert np.unique(y).size == len(means)


def test_robust_inliers_and_outliers():
    p, b = 12, 4.0
    X, y = draw("robust", p)
    out = sample_info("robust", N, seed=7)["outlier"]
    assert abs(out.mean() - 0.3) < Z * math.sqrt(0.3 * 0.7 / N)
    mu0 = np.where(np.arange(p) < p // 2, b / np.sqrt(np.arange(1, 2 * p, 2)), 0.0)
    var_in = b**3 / np.sqrt(np.arange(1, p + 1))
    check_class_moments(X[~out], y[~out], np.stack([mu0, -mu0]), np.stack([var_in, var_in]))
    var_out = b**6 / np.sqrt(np.arange(1, p + 1))
    check_class_moments(X[out], y[out], np.zeros((2, p)), np.stack([var_out, var_out]))


def test_cross_thirds():
    p = 12
    X, y = draw("cross", p)
    j = np.arange(p)
    var0 = np.where(j < 4, 1.0, 0.25)
    var1 = np.where((j >= 4) & (j < 8), 1.0, 0.25)
    check_class_moments(X, y, np.zeros((2, p)), np.stack([var0, var1]))


def hump_means_reference(K, p, b=4.0):
    """Hump-K means from lolR's endpoints, written out with plain loops."""
    lo = math.floor(-K / 2)
    hi = p - p / (K / 2)
    xl = [math.floor(lo + k * (hi - lo) / (K - 1)) for k in range(K)]
    xr = [p - xl[K - 1 - k] for k in range(K)]
    xm = [round((xl[k] + xr[k]) / 2) for k in range(K)]
    mu = np.zeros((K, p))
    for k in range(K):
        for j in range(1, p + 1):
            if max(xl[k], 1) <= j <= min(xr[k], p):
                # Lagrange parabola through (xl, 0), (xm, b), (xr, 0)
                mu[k, j - 1] = b * (j - xl[k]) * (j - xr[k]) / ((xm[k] - xl[k]) * (xm[k] - xr[k]))
        mu[k] *= 1 if k % 2 == 0 else -1  # alpha_k: + for odd 1-based k
    return mu


def test_hump():
    K, p = 4, 24
    X, y = draw("hump", p, n_classes=K)
    means = hump_means_reference(K, p)
    assert means[0].max() == pytest.approx(4.0) and means[1].min() == pytest.approx(-4.0)
    check_class_moments(X, y, means, np.full((K, p), 100.0 / K))


def test_toeplitz_means_and_covariance():
    p, rho, b, d1 = 16, 0.5, 0.4, 10
    X, y = draw("toeplitz", p)
    A = toeplitz(rho ** np.arange(p))
    delta = math.sqrt(toeplitz(rho ** np.arange(d1)).sum() * b * b / A.sum()) / 2
    mu0 = delta * np.resize([1.0, -1.0], p)
    check_class_moments(X, y, np.stack([mu0, -mu0]), np.ones((2, p)))
    Xc = X - np.where(y[:, None] == 0, mu0, -mu0)
    cov = Xc.T @ Xc / N
    se = np.sqrt((np.outer(np.diag(A), np.diag(A)) + A**2) / N)
    np.testing.assert_array_less(np.abs(cov - A), Z * se)


def test_xor():
    p = 10
    X, y = draw("xor", p)
    group = sample_info("xor", N, seed=7)["group"]
    assert (group == 0).sum() == N // 2
    even = (np.arange(p) % 2 == 0).astype(float)
    var = np.full(p, math.sqrt(p / 100))
    check_class_moments(X[group == 0], y[group == 0], np.stack([np.zeros(p), even]), np.stack([var, var]))
    check_class_moments(X[group == 1], y[group == 1], np.stack([np.ones(p), 1 - even]), np.stack([var, var]))


def test_fat_tails():
    p, s0, rho, f = 14, 10, 0.2, 15.0
    X, y = draw("fat-tails", p)
    heavy = sample_info("fat-tails", N, seed=7)["heavy"]
    assert heavy.sum() == N - round(0.8 * N)
    mu1 = (np.arange(p) < s0).astype(float)
    for mask, scale in ((~heavy, 1.0), (heavy, f)):
        check_class_moments(X[mask], y[mask], np.stack([np.zeros(p), mu1]), np.full((2, p), scale))
        xc = X[mask] - np.where(y[mask][:, None] == 1, mu1, 0.0)
        cov = xc.T @ xc / mask.sum()
        off = cov[~np.eye(p, dtype=bool)].mean()  # average of p(p-1) correlated estimates
        assert abs(off - rho * scale) < Z * scale * math.sqrt((1 + rho**2) / mask.sum())


ENC_EXPECTED = {
    # name: (signal mean, signal var, other mean, other var)
    "enc-uniform": (2.0, 4 / 12, 0.5, 1 / 12),
    "enc-uniform-noise": (2.25, 4 / 12 + 0.25 / 12, 0.75, 1 / 12 + 0.25 / 12),
    "enc-normal": (8.0, 1.0, 1.0, 1.0),
    "enc-normal-noise": (9.0, 1.0 + 4 / 12, 2.0, 1.0 + 4 / 12),
}


@pytest.mark.parametrize("name", sorted(ENC_EXPECTED))
def test_encoder_settings(name):
    K, p = 5, 8
    X, y = draw(name, p)
    sm, sv, om, ov = ENC_EXPECTED[name]
    signal = np.arange(p)[None, :] == np.arange(K)[:, None]
    # uniforms have negative excess kurtosis, so the Gaussian variance SE is conservative
    check_class_moments(X, y, np.where(signal, sm, om), np.where(signal, sv, ov))


@pytest.mark.parametrize("name", ["enc-uniform-transformed", "enc-normal-transformed"])
def test_encoder_transformed_is_noisy_times_uniform_matrix(name):
    """X_transformed = X_noisy Q exactly, with Q's entries i.i.d. Uniform(0, 1)."""
    p, n = 40, 400
    Xt, yt = draw(name, p, n=n)
    Xn, yn = draw(name.replace("transformed", "noise"), p, n=n)
    np.testing.assert_array_equal(yt, yn)
    Q, *_ = np.linalg.lstsq(Xn, Xt, rcond=None)
    np.testing.assert_allclose(Xn @ Q, Xt, rtol=1e-9, atol=1e-9)
    assert Q.min() > -1e-8 and Q.max() < 1 + 1e-8
    assert abs(Q.mean() - 0.5) < Z * math.sqrt(1 / 12 / Q.size)
    assert abs(Q.var() - 1 / 12) < Z * (1 / 12) * math.sqrt(0.8 / Q.size)
