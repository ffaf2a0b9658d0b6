"""The LOL paper's hypothesis-testing settings (Fig. 7A-B, App. C "Hypothesis Testing"): a unit mean shift against a
covariance whose eigenvalues decay at a chosen rate, with the identity (Diagonal) or random (Dense) eigenvectors.

Both groups are Gaussian with one covariance Σ:

- μ_0 = 0; μ_1 = g / ‖g‖ with g ~ N(0, I_p), a uniformly random unit vector (redrawn with the seed);
- Σ = V Λ Vᵀ with eigenvalues λ_j ∝ t_j^b, t = linspace(0.01, 1, p), scaled so that ‖Σ‖_F = 50;
  b ≥ 0 is the **decay rate** (the figures' x-axis): the larger b, the fewer eigenvalues carry
  the variance and the closer Σ is to low rank;
- ``decay-diagonal``: V = I (Fig. 7A); ``decay-dense``: V a Haar-random rotation (Fig. 7B).

The spectrum is the one of the authors' MATLAB code for the figure (``set_parameters.m``, cases
``diag_lopes`` and ``rand_lopes``, after Lopes, Jacob & Wainwright 2011), which the figure's
"decay rate" axis needs. The paper's Methods text instead names a Toeplitz matrix ρ^|i-j| rescaled
to Frobenius norm 50; a Toeplitz matrix has no decay-rate parameter, so we follow the code. The
authors' dense case also adds the upper triangle to its transpose, which doubles the diagonal of
Σ (an error we do not copy): we take exactly Q Λ Qᵀ.

Rotating a uniformly random unit vector gives a uniformly random unit vector independent of the
rotation, so the dense setting is the diagonal one's sample times Qᵀ (``x ↦ Q x``, as
:class:`~wideml.sims.rotations.RotatedTrunk` does: exact Haar up to ``dense_max`` features,
tile-wise Kronecker-Haar beyond).

Streams: the noise comes per generation tile (stream NOISE); g comes in blocks of
:data:`MEAN_BLOCK` features, each a Gaussian direction times a chi-distributed radius drawn
apart, so ‖g‖ is the root of the sum of the blocks' squared radii (one draw per block, no sweep
of p normals); the Frobenius scaling is a sum over p (Euler-Maclaurin for large p), cached per
(p, b). Nothing p-sized is held or swept.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sims import rng
from wideml.sims.rotations import RotatedTrunk
from wideml.sims.setting import DiagonalMixture, SimContext

#: Streams of the random mean direction g: its blocks' directions and radii (distinct from rng's streams and
#: rotations.DENSE_ROTATION).
MEAN, MEAN_RADIUS = 8, 9

#: Features per draw of the mean direction (a whole number of generation tiles).
MEAN_BLOCK = 64 * rng.TILE

#: Frobenius norm of Σ (the paper's 50).
FROBENIUS = 50.0

#: Smallest and largest t of the spectrum's t_j^b (``linspace(0.01, 1, p)``).
T_LOW, T_HIGH = 0.01, 1.0


def spectrum_base(j0: np.ndarray, p: int) -> np.ndarray:
    """t at 0-based feature indices: ``linspace(0.01, 1, p)[j0]``."""
    return T_LOW + (T_HIGH - T_LOW) * np.asarray(j0, dtype=np.float64) / max(p - 1, 1)


#: Largest p whose sum of t_j^(2b) is summed term by term (beyond, Euler-Maclaurin where that is exact in float64).
EXACT_SUM_MAX = 1 << 20


@functools.lru_cache(maxsize=64)
def _sum_of_squares(p: int, b: float) -> float:
    """Σ_j t_j^(2b) over the p features.

    Term by term (in blocks) up to :data:`EXACT_SUM_MAX` features; beyond, by the Euler-Maclaurin formula for
    f(x) = (0.01 + c x)^k, k = 2b, c = 0.99 / (p - 1): ∫f + (f(0) + f(p-1)) / 2 + (f⁽¹⁾(p-1) - f⁽¹⁾(0)) / 12
    - (f⁽³⁾(p-1) - f⁽³⁾(0)) / 720, whose next term is below (k c)^5 / 30240 relative (used only when
    k c <= 1e-3, so below 1e-20: exact in float64). That keeps p = 10^8 instant.
    """
    k = 2.0 * b
    c = (T_HIGH - T_LOW) / max(p - 1, 1)
    if p <= EXACT_SUM_MAX or k * c > 1e-3:
        total, step = 0.0, 1 << 22
        for start in range(0, p, step):
            total += float(np.sum(spectrum_base(np.arange(start, min(p, start + step)), p) ** k))
        return total
    a = T_LOW

    def d1(t):
        return k * c * t ** (k - 1)

    def d3(t):
        return k * (k - 1) * (k - 2) * c**3 * t ** (k - 3)

    integral = (T_HIGH ** (k + 1) - a ** (k + 1)) / (c * (k + 1))
    return float(integral + (a**k + T_HIGH**k) / 2 + (d1(T_HIGH) - d1(a)) / 12 - (d3(T_HIGH) - d3(a)) / 720)


def eigenvalues(j0: np.ndarray, p: int, b: float) -> np.ndarray:
    """Λ at 0-based indices: λ_j = 50 t_j^b / sqrt(Σ_k t_k^(2b)), so that sqrt(Σ λ_j²) = ‖Σ‖_F = 50."""
    return FROBENIUS * spectrum_base(j0, p) ** b / math.sqrt(_sum_of_squares(p, float(b)))


@functools.lru_cache(maxsize=4)
def _mean_block(seed: int, code: int, block: int, p: int) -> np.ndarray:
    """Block ``block`` of g: its direction h / ‖h‖ (h Gaussian, stream MEAN) times its radius."""
    start = block * MEAN_BLOCK
    h = rng.generator(seed, code, MEAN, block).standard_normal(min(p, start + MEAN_BLOCK) - start)
    values = h * (_block_radius(seed, code, block, p) / np.linalg.norm(h))
    values.flags.writeable = False
    return values


@functools.lru_cache(maxsize=1 << 12)
def _block_radius(seed: int, code: int, block: int, p: int) -> float:
    """‖g‖ over one block: the root of a chi-square draw with the block's width as degrees of freedom.

    A Gaussian vector's norm is independent of its direction and its square is chi-square, so drawing
    the radius apart (stream MEAN_RADIUS) gives g ~ N(0, I) exactly, and ‖g‖ over all p features needs
    one draw per block instead of p normals.
    """
    width = min(p, (block + 1) * MEAN_BLOCK) - block * MEAN_BLOCK
    return math.sqrt(rng.generator(seed, code, MEAN_RADIUS, block).chisquare(width))


@functools.lru_cache(maxsize=16)
def _mean_norm(seed: int, code: int, p: int) -> float:
    """‖g‖ over all p features, from the blocks' radii alone (no sweep of p normals)."""
    return math.sqrt(sum(_block_radius(seed, code, block, p) ** 2 for block in range(-(-p // MEAN_BLOCK))))


def mean_direction(j0: np.ndarray, seed: int, code: int, p: int) -> np.ndarray:
    """μ_1 at 0-based indices ``j0`` (consecutive): g_j / ‖g‖."""
    j0 = np.asarray(j0, dtype=np.int64)
    out = np.empty(j0.shape)
    if j0.size == 0:
        return out
    for block in range(int(j0[0]) // MEAN_BLOCK, int(j0[-1]) // MEAN_BLOCK + 1):
        inside = (j0 // MEAN_BLOCK) == block
        out[inside] = _mean_block(seed, code, block, p)[j0[inside] - block * MEAN_BLOCK]
    return out / _mean_norm(seed, code, p)


class DiagonalDecay(DiagonalMixture):
    """Diagonal (LOL Fig. 7A): μ_0 = 0, μ_1 a random unit vector, Σ = diag(λ), λ_j ∝ linspace(0.01, 1, p)_j^b, ‖Σ‖_F = 50.

    Parameters (``defaults``): ``b`` the eigenvalue decay rate (default 5, the authors' code's
    default), ``priors`` (default 1/2 each; group sizes are random, as in the authors' code).
    See the module docstring for where this follows the authors' code rather than the Methods text.
    """

    name = "decay-diagonal"
    title = "Diagonal (testing)"
    description = "Diagonal (LOL Fig 7A): unit random mean shift, diagonal covariance with eigenvalue decay rate b"
    reference = "LOL App. C 'Hypothesis Testing' (Diagonal); authors' set_parameters.m 'diag_lopes'"
    defaults = {"b": 5.0, "priors": None}
    default_n_features = 200
    min_features = 2

    def check_params(self, params):
        if not params["b"] >= 0.0:
            raise WidemlError(f"{self.name}: b={params['b']} is negative; the decay rate must be 0 or more.")

    def loc(self, j, ctx: SimContext):
        mu1 = mean_direction(j, ctx.seed, self.code, ctx.p)
        return np.stack([np.zeros(j.shape), mu1])

    def scale(self, j, ctx: SimContext):
        sd = np.sqrt(eigenvalues(j, ctx.p, float(ctx.params["b"])))
        return np.stack([sd, sd])


class DenseDecay(RotatedTrunk):
    """Dense (LOL Fig. 7B): the Diagonal setting under a Haar rotation Q, i.e. μ_1 ← Q μ_1, Σ ← Q Λ Qᵀ.

    The underlying sample is the ``decay-diagonal`` one for the same seed, so
    ``dense = diagonal @ Qᵀ``; Q is exact Haar up to ``dense_max`` features (default 4096) and
    tile-wise Kronecker-Haar beyond (see :class:`~wideml.sims.rotations.RotatedTrunk`).
    """

    name = "decay-dense"
    title = "Dense (testing)"
    description = "Dense (LOL Fig 7B): the Diagonal testing setting under a random rotation (dense eigenvectors)"
    reference = "LOL App. C 'Hypothesis Testing' (Dense); authors' set_parameters.m 'rand_lopes'"
    base = DiagonalDecay()
    map_defaults = {"dense_max": 4096}
    default_n_features = 200


__all__ = ["DenseDecay", "DiagonalDecay", "eigenvalues", "mean_direction", "spectrum_base"]
