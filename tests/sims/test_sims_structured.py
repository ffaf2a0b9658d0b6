"""The p x p objects: exact Haar rotations, their large-p tile-wise equivalent, the AR(1) Toeplitz sampler
and the encoder's uniform transform (dense and block-diagonal)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wideml.sims import SETTINGS, simulate
from wideml.sims import rng as simrng
from wideml.sims.rotations import haar_rotation, kron_tile_rotation
from wideml.sims.toeplitz import lookback_tiles

TILE = simrng.TILE


def values(name, n, p, seed=3, chunks=None, **params):
    X, y = simulate(name, n, p, seed=seed, chunks=chunks, **params)
    return X.compute(), y


def test_haar_rotation_is_special_orthogonal_and_unbiased():
    gen = np.random.default_rng(0)
    draws = np.stack([haar_rotation(3, gen) for _ in range(3000)])
    np.testing.assert_allclose(draws @ draws.transpose(0, 2, 1), np.broadcast_to(np.eye(3), draws.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(draws), 1.0, atol=1e-12)
    # Haar: every entry has mean 0 and variance 1/m (plain Householder QR without the sign fix
    # gives Q[0, 0] < 0 always)
    se = math.sqrt(1 / 3 / len(draws))
    assert np.all(np.abs(draws.mean(0)) < 5 * se)
    np.testing.assert_allclose((draws**2).mean(0), 1 / 3, atol=5 * math.sqrt(2 / 9 / len(draws)))


def test_rotated_trunk_dense_is_trunk_times_haar():
    n, p = 300, 40
    Xr, yr = values("rotated-trunk", n, p)
    Xt, yt = values("trunk", n, p)
    np.testing.assert_array_equal(yr, yt)
    M, *_ = np.linalg.lstsq(Xt, Xr, rcond=None)  # Xr = Xt Qᵀ, so M = Qᵀ
    np.testing.assert_allclose(Xt @ M, Xr, atol=1e-9)
    np.testing.assert_allclose(M.T @ M, np.eye(p), atol=1e-9)
    assert np.linalg.det(M) == pytest.approx(1.0)
    assert np.count_nonzero(np.abs(M) > 1e-12) == p * p  # dense: every feature mixes into every other


def test_rotated_trunk_structured_rotates_each_tile():
    n, p = 40, TILE + 30
    Xr, yr = values("rotated-trunk", n, p, dense_max=0)
    Xt, _ = values("trunk", n, p)
    # per tile, the rotation preserves every sample's norm: orthogonal and tile-local
    for t0, t1 in ((0, TILE), (TILE, p)):
        np.testing.assert_allclose(np.linalg.norm(Xr[:, t0:t1], axis=1), np.linalg.norm(Xt[:, t0:t1], axis=1), rtol=1e-12)
    # the full tile is A ⊗ B with A, B Haar 32 x 32; dense within the tile
    a, b = kron_tile_rotation(3, SETTINGS["rotated-trunk"].code, 0)
    Q = np.kron(a, b)
    np.testing.assert_allclose(Xt[:, :TILE] @ Q.T, Xr[:, :TILE], atol=1e-9)
    assert np.count_nonzero(np.abs(Q) > 0) == TILE * TILE
    # the partial last tile is an exact Haar rotation of its width
    M, *_ = np.linalg.lstsq(Xt[:, TILE:], Xr[:, TILE:], rcond=None)
    np.testing.assert_allclose(M.T @ M, np.eye(p - TILE), atol=1e-9)
    assert np.linalg.det(M) == pytest.approx(1.0)


def test_rotated_trunk_structured_class_moments():
    """Large-p variant: per-tile mean-difference norm and total variance are Trunk's."""
    n, p = 4000, TILE + 8
    X, y = values("rotated-trunk", n, p, seed=11, dense_max=0)
    j = np.arange(p)
    mu = 4.0 / np.sqrt(2 * j + 1)
    var = 100.0 / np.sqrt(p - j)
    c = 1 / (y == 0).sum() + 1 / (y == 1).sum()
    for t0, t1 in ((0, TILE), (TILE, p)):
        m2, v = 4 * np.sum(mu[t0:t1] ** 2), var[t0:t1]  # |2 Q μ|² = |2 μ|² over the tile (Q orthogonal)
        diff = X[y == 0, t0:t1].mean(0) - X[y == 1, t0:t1].mean(0)  # ~ N(2 Q μ, c Q Σ Qᵀ)
        sd = math.sqrt(2 * c**2 * np.sum(v**2) + 4 * c * v.max() * m2)
        assert abs(np.sum(diff**2) - (m2 + c * v.sum())) < 5 * sd
        xc = X[:, t0:t1] - np.where(y[:, None] == 0, 1, -1) * diff / 2 - (X[y == 0, t0:t1].mean(0) + X[y == 1, t0:t1].mean(0)) / 2
        total = np.sum(xc**2) / n  # tr(Q Σ Qᵀ) = tr(Σ) over the tile
        assert abs(total - v.sum()) < 5 * math.sqrt(2 * np.sum(v**2) / n) + 0.01 * v.sum()


def ar1_reference(e_tiles, rho):
    """The exact stationary AR(1) recursion over all features, feature by feature."""
    e = np.concatenate(e_tiles, axis=1)
    x = np.empty_like(e)
    x[:, 0] = e[:, 0]
    c = math.sqrt(1 - rho * rho)
    for j in range(1, e.shape[1]):
        x[:, j] = rho * x[:, j - 1] + c * e[:, j]
    return x


@pytest.mark.parametrize("rho", [0.5, -0.7, 0.97])
def test_toeplitz_equals_sequential_ar1_recursion(rho):
    """Tiles computed with a truncated look-back equal the full sequential recursion to float64 precision."""
    n, p, seed = 3, 4 * TILE + 17, 5
    assert lookback_tiles(rho) < 4  # the last tiles really use the truncated start
    X, y = values("toeplitz", n, p, seed=seed, chunks=700, rho=rho)
    code = SETTINGS["toeplitz"].code
    e = [simrng.generator(seed, code, simrng.NOISE, s).standard_normal((n, b - a))
         for s, (a, b) in enumerate(simrng.tile_bounds(s, p) for s in range(simrng.n_tiles(p)))]
    X0, _ = values("toeplitz", n, p, seed=seed, rho=rho, b=0.0)  # zero mean shift
    np.testing.assert_allclose(X0, ar1_reference(e, rho), rtol=0, atol=1e-12)


def test_toeplitz_covariance_across_a_tile_boundary():
    n, p, rho = 4000, 2 * TILE + 4, 0.5
    X, _ = values("toeplitz", n, p, seed=2, b=0.0)
    window = X[:, TILE - 3 : TILE + 3]  # straddles the first boundary
    cov = window.T @ window / n
    expected = rho ** np.abs(np.subtract.outer(np.arange(6), np.arange(6)))
    np.testing.assert_array_less(np.abs(cov - expected), 5 * np.sqrt((1 + expected**2) / n))
    np.testing.assert_allclose(X.var(0).mean(), 1.0, atol=5 * math.sqrt(2 / n / p) * 3)


@pytest.mark.parametrize("name", ["enc-uniform-transformed", "enc-normal-transformed"])
def test_encoder_transform_block_diagonal_beyond_dense_max(name):
    n, p = 60, TILE + 30
    Xt, _ = values(name, n, p, dense_max=0)
    Xn, _ = values(name.replace("transformed", "noise"), n, p)
    # the last tile's outputs are an exact linear map of its own inputs only, with U(0, 1) entries
    Q, *_ = np.linalg.lstsq(Xn[:, TILE:], Xt[:, TILE:], rcond=None)
    np.testing.assert_allclose(Xn[:, TILE:] @ Q, Xt[:, TILE:], rtol=1e-9, atol=1e-8)
    assert Q.min() > -1e-8 and Q.max() < 1 + 1e-8
    # and the dense path agrees with the block path on the diagonal blocks: dense = block + off-diagonal terms
    Xd, _ = values(name, n, p)
    assert not np.allclose(Xd, Xt)
