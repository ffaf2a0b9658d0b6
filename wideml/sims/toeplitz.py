"""Toeplitz (lolR ``lol.sims.toep``): AR(1) covariance rho^|i-j| sampled by a chunk-local recursion."""

from __future__ import annotations

import math

import numpy as np
from scipy.signal import lfilter

from wideml.exceptions import WidemlError
from wideml.sims import rng
from wideml.sims.setting import Setting, SimContext

#: Covariance error bound of the truncated look-back (far below float64 resolution of O(1) values).
LOOKBACK_EPS = 2.0**-60


def ar1_matrix_sum(m: int, rho: float) -> float:
    """Sum of all entries of the m x m matrix with entries rho^|i-j| (closed form, no m x m array)."""
    if rho == 1.0:
        return float(m) * m
    return m * (1 + rho) / (1 - rho) - 2 * rho * (1 - rho**m) / (1 - rho) ** 2


def toeplitz_mean_shift(p: int, d1: int, b: float, rho: float) -> float:
    """lolR's ``mudelt = sqrt(K1 b² / Ksum) / 2`` with K1, Ksum the sums of the D1- and p-sized AR(1) matrices."""
    return math.sqrt(ar1_matrix_sum(d1, rho) * b * b / ar1_matrix_sum(p, rho)) / 2


def lookback_tiles(rho: float) -> int:
    """Number of preceding tiles replayed so that |rho|^(L·TILE) <= LOOKBACK_EPS."""
    if rho == 0.0:
        return 0
    return max(1, math.ceil(math.log(LOOKBACK_EPS) / (rng.TILE * math.log(abs(rho)))))


class Toeplitz(Setting):
    """Toeplitz (lolR ``lol.sims.toep``; the LOL paper's testing/regression Toeplitz family).

    Σ_0 = Σ_1 = A with A_ij = rho^|i-j| (rho = 0.5); μ_0 = δ·(1, -1, 1, -1, ...),
    μ_1 = -μ_0 with δ = sqrt(K1 b² / Ksum) / 2, where K1 and Ksum are the sums of the
    entries of the D1 x D1 and p x p matrices of the same form (closed form, so no
    p x p matrix is built); D1 = 10, b = 0.4.

    Sampling (exact for every p, no p x p matrix): a Gaussian vector with covariance
    rho^|i-j| is the stationary AR(1) process
    ``x_1 = e_1, x_j = rho x_{j-1} + sqrt(1 - rho²) e_j`` with e i.i.d. N(0, 1) — the
    recursion *is* the Cholesky factor of A, so no dense Cholesky is needed even for
    small p. The innovations e are drawn per generation tile from (seed, tile), and
    tile t is produced by replaying the recursion over the L = ceil(log(2^-60) /
    (TILE·log|rho|)) preceding tiles (L = 1 for rho = 0.5) starting from state 0, or
    from the exact stationary start x_1 = e_1 when that window reaches feature 1.
    Every tile is therefore computed the same way whatever the chunking, the
    variances are exactly 1 and the covariances are rho^|i-j| up to an error of at
    most |rho|^(L·TILE) <= 2^-60 (exactly, with no truncation, on the first L tiles).
    The cost is (L + 1) tiles of noise per tile; rho close to 1 makes L large
    (rho = 0.99 → L = 5).
    """

    name = "toeplitz"
    title = "Toeplitz"
    description = "Toeplitz (lolR toep): AR(1) covariance rho^|i-j|, alternating mean difference"
    reference = "lolR lol.sims.toep; LOL App. C hypothesis-testing Toeplitz"
    defaults = {"rho": 0.5, "b": 0.4, "d1": 10, "priors": None}

    def check_params(self, params):
        if not -1.0 < params["rho"] < 1.0:
            raise WidemlError(f"toeplitz: rho={params['rho']} must satisfy |rho| < 1 for a valid covariance.")
        if params["d1"] < 1:
            raise WidemlError(f"toeplitz: d1={params['d1']} must be at least 1.")

    def innovations(self, s: int, ctx: SimContext) -> np.ndarray:
        t0, t1 = rng.tile_bounds(s, ctx.p)
        return rng.generator(ctx.seed, self.code, rng.NOISE, s).standard_normal((ctx.n, t1 - t0))

    def ar1_tile(self, t: int, ctx: SimContext) -> np.ndarray:
        """Zero-mean AR(1) values of tile ``t``, shape (n, tile width)."""
        rho = float(ctx.params["rho"])
        c = math.sqrt(1.0 - rho * rho)
        first = max(0, t - lookback_tiles(rho))
        state = np.zeros((ctx.n, 1))
        for s in range(first, t + 1):
            e = self.innovations(s, ctx)
            x = np.empty_like(e)
            if s == 0:  # exact stationary start x_1 = e_1
                x[:, :1] = e[:, :1]
                state = rho * x[:, :1]
                e = e[:, 1:]
                out = x[:, 1:]
            else:
                out = x
            if e.shape[1]:
                out[...], state = lfilter([c], [1.0, -rho], e, axis=1, zi=state)
        return x

    def tile(self, t, ctx):
        t0, t1 = rng.tile_bounds(t, ctx.p)
        j = np.arange(t0, t1)
        p = ctx.params
        delta = toeplitz_mean_shift(ctx.p, p["d1"], p["b"], p["rho"])
        mu0 = delta * np.where(j % 2 == 0, 1.0, -1.0)
        x = self.ar1_tile(t, ctx)
        x += np.stack([mu0, -mu0])[ctx.samples.y]
        return x
