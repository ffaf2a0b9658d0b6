"""The LOL paper's simulation settings with independent features (App. C) and lolR's Xor / Fat Tails.

Conventions shared by every setting here:

- Labels are 0..K-1, drawn i.i.d. from the priors (so class counts are random,
  as in lolR's ``sim_gmm``); the paper's μ_0, μ_1, ... are the means of classes 0, 1, ....
- Feature indices in the formulas are 1-based as in the paper (j = 1..p); the
  code uses 0-based ``j0 = j - 1``.
- "Σ = diag(d)" gives *variances* d; the standard deviation is sqrt(d).
- Means and variances are computed per tile from the global feature index, so
  nothing p-sized is ever held in memory.

Where the paper and lolR disagree the paper's text is followed unless it is
garbled; each class docstring says which was chosen.
"""

from __future__ import annotations

import math
import numpy as np

from wideml.exceptions import WidemlError
from wideml.sims import rng
from wideml.sims.setting import DiagonalMixture, Samples, SimContext


def trunk_mean(j0: np.ndarray, b: float) -> np.ndarray:
    """Trunk's μ_0 at 0-based indices: ``b / sqrt(2 j0 + 1)``, i.e. b/sqrt(1, 3, 5, ..., 2p-1)."""
    return b / np.sqrt(2.0 * j0 + 1.0)


def trunk_variance(j0: np.ndarray, p: int, maxvar: float) -> np.ndarray:
    """Trunk's variances at 0-based indices: ``maxvar / sqrt(p - j0)``, i.e. 100/sqrt(p, p-1, ..., 1)."""
    return maxvar / np.sqrt(float(p) - j0)


class Cigars(DiagonalMixture):
    """Stacked Cigars (LOL Fig. 2A, App. C).

    μ_0 = 0, μ_1 = (a, b, a, ..., a), Σ_0 = Σ_1 = diag(1, b, 1, ..., 1), a = 0.15, b = 4.

    The mean difference lies along the largest-variance direction (feature 2).
    Deviation from lolR: ``lol.sims.cigar`` gives class 0 the identity covariance
    and only class 1 diag(1, b, 1, ...); we follow the paper, where the two classes
    share Σ.
    """

    name = "cigars"
    title = "Stacked Cigars"
    description = "Stacked Cigars (LOL Fig 2A): mean difference along the top-variance feature 2"
    reference = "LOL App. C 'Stacked Cigars'; lolR lol.sims.cigar"
    defaults = {"a": 0.15, "b": 4.0, "priors": None}
    min_features = 2

    def loc(self, j, ctx):
        mu1 = np.full(j.shape, ctx.params["a"])
        mu1[j == 1] = ctx.params["b"]
        return np.stack([np.zeros(j.shape), mu1])

    def scale(self, j, ctx):
        sd = np.where(j == 1, math.sqrt(ctx.params["b"]), 1.0)
        return np.stack([sd, sd])


class Trunk(DiagonalMixture):
    """Trunk (LOL Fig. 2B, App. C).

    μ_0 = b / sqrt(1, 3, 5, ..., 2p-1), μ_1 = -μ_0, Σ = diag(maxvar / sqrt(p, p-1, ..., 1)),
    b = 4, maxvar = 100.

    The paper prints the denominators as (1, 3, 5, ..., 2p), which has p+1 entries;
    we use lolR's ``b/sqrt(0:(d-1)*2 + 1)``, i.e. the first p odd numbers.
    """

    name = "trunk"
    title = "Trunk"
    description = "Trunk (LOL Fig 2B): mean difference decays, variance grows with the feature index"
    reference = "LOL App. C 'Trunk'; lolR lol.sims.rtrunk"
    defaults = {"b": 4.0, "maxvar": 100.0, "priors": None}

    def loc(self, j, ctx):
        mu = trunk_mean(j, ctx.params["b"])
        return np.stack([mu, -mu])

    def scale(self, j, ctx):
        sd = np.sqrt(trunk_variance(j, ctx.p, ctx.params["maxvar"]))
        return np.stack([sd, sd])


class Trunk3(DiagonalMixture):
    """Trunk-3 / "3 Classes" (LOL Fig. 3A, App. C).

    As Trunk with a third class at the origin: μ_0 = b/sqrt(1, 3, ..., 2p-1),
    μ_1 = -μ_0, μ_2 = 0, Σ = diag(100/sqrt(p, ..., 1)), priors 1/3 each.
    The class order follows the paper (lolR's ``rtrunk(K=3)`` orders them μ, 0, -μ).
    """

    name = "trunk3"
    title = "Trunk-3 (3 Classes)"
    description = "Trunk-3 (LOL Fig 3A): Trunk plus a third class at the origin"
    reference = "LOL App. C '3 Classes'; lolR lol.sims.rtrunk(K=3)"
    defaults = {"b": 4.0, "maxvar": 100.0, "priors": None}

    def n_classes(self, params):
        return 3

    def loc(self, j, ctx):
        mu = trunk_mean(j, ctx.params["b"])
        return np.stack([mu, -mu, np.zeros(j.shape)])

    def scale(self, j, ctx):
        sd = np.sqrt(trunk_variance(j, ctx.p, ctx.params["maxvar"]))
        return np.stack([sd, sd, sd])


class Robust(DiagonalMixture):
    """Robust / outliers (LOL Fig. 3B, App. C), following the paper's text.

    Inliers (probability 1 - outlier_fraction = 0.7): μ_0 = b/sqrt(1, 3, 5, ...) on the
    first floor(p/2) features and 0 on the rest, μ_1 = -μ_0,
    Σ = diag(b³ / sqrt(1, 2, ..., p)). Outliers (probability 0.3): μ = 0,
    Σ = diag(b⁶ / sqrt(1, 2, ..., p)), assigned class 0 or 1 with equal probability.
    b = 4 (not restated for this setting in the paper; b = 4 everywhere else).

    Deviations from lolR's ``rev_rtrunk(robust=...)``, which uses outlier mean -μ,
    outlier variances b⁹/sqrt(p, ..., 1) and a fixed number of outliers: we follow the
    paper. Which samples are outliers is returned by
    :func:`wideml.sims.sample_info` (``"outlier"``), because the paper removes them
    when training and testing the classifier.
    """

    name = "robust"
    title = "Robust (outliers)"
    description = "Robust (LOL Fig 3B): reverse-trunk inliers plus 30% high-variance outliers"
    reference = "LOL App. C 'Robust'; lolR lol.sims.rev_rtrunk(robust=...)"
    defaults = {"b": 4.0, "outlier_fraction": 0.3, "priors": None}

    def check_params(self, params):
        if not 0.0 <= params["outlier_fraction"] <= 1.0:
            raise WidemlError(f"robust: outlier_fraction={params['outlier_fraction']} is not a probability; use a value in [0, 1].")

    def draw_samples(self, n, seed, params):
        inlier = super().draw_samples(n, seed, params)
        gen = rng.generator(seed, self.code, rng.SAMPLES)
        outlier = gen.random(n) < params["outlier_fraction"]
        coin = (gen.random(n) < 0.5).astype(np.int64)
        y = np.where(outlier, coin, inlier.y)
        component = np.where(outlier, 2, y)
        return Samples(y=y, component=component, extras={"outlier": outlier})

    def loc(self, j, ctx):
        mu = np.where(j < ctx.p // 2, trunk_mean(j, ctx.params["b"]), 0.0)
        return np.stack([mu, -mu, np.zeros(j.shape)])

    def scale(self, j, ctx):
        b = ctx.params["b"]
        root = np.sqrt(np.sqrt(j + 1.0))
        sd_in = math.sqrt(b**3) / root
        return np.stack([sd_in, sd_in, math.sqrt(b**6) / root])


class Cross(DiagonalMixture):
    """Cross (LOL Fig. 3C, App. C): equal means, crossing diagonal covariances.

    μ_0 = μ_1 = 0; Σ_0 has variance a on the first floor(p/3) features and b on the
    rest; Σ_1 has variance a on the middle floor(p/3) features and b elsewhere;
    a = 1, b = 1/4. The optimal boundary is quadratic.
    Deviation from lolR: ``lol.sims.cross`` splits the features in halves; the paper
    says thirds, which we follow.
    """

    name = "cross"
    title = "Cross"
    description = "Cross (LOL Fig 3C): equal means, covariances differ on the first vs middle third"
    reference = "LOL App. C 'Cross'; lolR lol.sims.cross"
    defaults = {"a": 1.0, "b": 0.25, "priors": None}
    min_features = 3

    def loc(self, j, ctx):
        return np.zeros((2, j.size))

    def scale(self, j, ctx):
        third = ctx.p // 3
        sa, sb = math.sqrt(ctx.params["a"]), math.sqrt(ctx.params["b"])
        sd0 = np.where(j < third, sa, sb)
        sd1 = np.where((j >= third) & (j < 2 * third), sa, sb)
        return np.stack([sd0, sd1])


def hump_endpoints(k_classes: int, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Left, middle and right 1-based endpoints of the K humps (lolR's ``khump``).

    x_l = floor(seq(floor(-K/2), p - p/(K/2), length.out=K)), x_r,k = p - x_l,K-k+1,
    x_m = round((x_l + x_r) / 2) (round half to even, as R does).
    """
    lo, hi = math.floor(-k_classes / 2), p - p / (k_classes / 2)
    xl = np.floor(lo + np.arange(k_classes) * (hi - lo) / (k_classes - 1))
    xr = p - xl[::-1]
    xm = np.round((xl + xr) / 2)
    return xl, xm, xr


class HumpK(DiagonalMixture):
    """Hump-K (LOL App. C and F, Fig. 6): K classes whose means are alternating humps.

    Class k (1-based) has mean α_k q_k(j) on features j in [x_l,k, x_r,k] and 0
    elsewhere, where q_k is the parabola through (x_l,k, 0), (x_m,k, b), (x_r,k, 0)
    and α_k = +1 for odd k, -1 for even k; Σ = diag(σ, ..., σ) with σ = maxvar/K = 100/K; b = 4;
    priors 1/K.

    The paper's endpoint formulas are garbled (x_l,k = floor(-K/2) does not depend on
    k, and its parabola passes through (x_r, b) instead of (x_m, b)); we use lolR's
    endpoints (:func:`hump_endpoints`) and the (x_l, 0), (x_m, b), (x_r, 0) parabola,
    clipped to features 1..p (lolR clips to 1..100). The variance follows the paper's
    text, σ = 100/K (lolR uses 100/sqrt(K)).
    """

    name = "hump"
    title = "Hump-K"
    description = "Hump-K (LOL Fig 6): K classes with alternating-sign parabolic mean humps"
    reference = "LOL App. C 'Hump-K'; lolR lol.sims.khump"
    defaults = {"n_classes": 4, "b": 4.0, "maxvar": 100.0, "priors": None}

    def variance(self, params) -> float:
        """σ = maxvar / K (the per-feature variance)."""
        return params["maxvar"] / self.n_classes(params)

    def check_shape(self, n_samples, n_features, params):
        super().check_shape(n_samples, n_features, params)
        xl, xm, xr = hump_endpoints(self.n_classes(params), n_features)
        empty = np.maximum(xl + 1, 1) > np.minimum(xr - 1, n_features)  # no feature strictly inside a hump
        if np.any(xm == xl) or np.any(xm == xr) or np.any(empty):
            raise WidemlError(
                f"hump: {n_features} features are too few for {self.n_classes(params)} humps "
                "(one has no feature inside it); use more features."
            )

    def loc(self, j, ctx):
        k_classes = self.n_classes(ctx.params)
        xl, xm, xr = hump_endpoints(k_classes, ctx.p)
        x = j + 1.0
        out = np.zeros((k_classes, j.size))
        for k in range(k_classes):
            inside = (x >= max(xl[k], 1.0)) & (x <= min(xr[k], float(ctx.p)))
            q = ctx.params["b"] * (x - xl[k]) * (x - xr[k]) / ((xm[k] - xl[k]) * (xm[k] - xr[k]))
            out[k] = np.where(inside, (1.0 if k % 2 == 0 else -1.0) * q, 0.0)
        return out

    def scale(self, j, ctx):
        return np.full((self.n_classes(ctx.params), j.size), math.sqrt(self.variance(ctx.params)))


class Xor(DiagonalMixture):
    """Xor (lolR ``lol.sims.xor2``; not in the paper).

    ceil(n/2) samples (chosen at random) form group A and the rest group B; labels are
    drawn from the priors in both. Group A: class 0 mean 0, class 1 mean (1, 0, 1, 0, ...);
    group B: class 0 mean (1, 1, ...), class 1 mean (0, 1, 0, 1, ...). Every class has
    covariance sqrt(p / fall) · I (a variance), fall = 100. The group is returned by
    :func:`wideml.sims.sample_info` (``"group"``).
    """

    name = "xor"
    title = "Xor"
    description = "Xor (lolR xor2): two groups whose class means swap, isotropic noise of variance sqrt(p/100)"
    reference = "lolR lol.sims.xor2"
    defaults = {"fall": 100.0, "priors": None}

    def check_params(self, params):
        if params["fall"] <= 0:
            raise WidemlError(f"xor: fall={params['fall']} must be positive.")

    def draw_samples(self, n, seed, params):
        base = super().draw_samples(n, seed, params)
        order = rng.generator(seed, self.code, rng.SAMPLES).permutation(n)
        group = np.ones(n, dtype=np.int64)
        group[order[: -(-n // 2)]] = 0
        return Samples(y=base.y, component=2 * group + base.y, extras={"group": group})

    def loc(self, j, ctx):
        even = (j % 2 == 0).astype(np.float64)
        return np.stack([np.zeros(j.shape), even, np.ones(j.shape), 1.0 - even])

    def scale(self, j, ctx):
        return np.full((4, j.size), (ctx.p / ctx.params["fall"]) ** 0.25)


class FatTails(DiagonalMixture):
    """Fat Tails (lolR ``lol.sims.fat_tails``; not in the paper).

    μ_0 = 0, μ_1 = (1 on the first s0 features, 0 after); S has 1 on the diagonal and
    rho off it. round(n·t) samples have covariance S and the other n - round(n·t)
    have f·S; labels are drawn from the priors. lolR stacks the narrow samples first;
    here which samples are heavy-tailed is a random subset (``"heavy"`` in
    :func:`wideml.sims.sample_info`). The equicorrelation is generated exactly and
    chunk-locally from one shared factor per sample:
    x_ij = μ_y,j + sqrt(s_i) (sqrt(rho) w_i + sqrt(1 - rho) z_ij), s_i ∈ {1, f}.
    """

    name = "fat-tails"
    title = "Fat Tails"
    description = "Fat Tails (lolR fat_tails): equicorrelated classes, 20% of samples with 15x covariance"
    reference = "lolR lol.sims.fat_tails"
    defaults = {"f": 15.0, "s0": 10, "rho": 0.2, "t": 0.8, "priors": None}

    def check_params(self, params):
        if not 0.0 <= params["rho"] < 1.0:
            raise WidemlError(f"fat-tails: rho={params['rho']} must be in [0, 1) for a valid covariance.")
        if not 0.0 <= params["t"] <= 1.0:
            raise WidemlError(f"fat-tails: t={params['t']} is not a fraction; use a value in [0, 1].")
        if params["f"] <= 0:
            raise WidemlError(f"fat-tails: f={params['f']} must be positive.")

    def check_shape(self, n_samples, n_features, params):
        super().check_shape(n_samples, n_features, params)
        if params["s0"] > n_features:
            raise WidemlError(f"fat-tails: s0={params['s0']} exceeds the {n_features} features; lower s0 or add features.")

    def draw_samples(self, n, seed, params):
        base = super().draw_samples(n, seed, params)
        gen = rng.generator(seed, self.code, rng.SAMPLES)
        n_narrow = int(np.round(n * params["t"]))
        heavy = np.zeros(n, dtype=bool)
        heavy[gen.permutation(n)[: max(0, n - n_narrow)]] = True
        factor = gen.standard_normal(n)
        return Samples(y=base.y, component=base.y, extras={"heavy": heavy, "factor": factor})

    def loc(self, j, ctx):
        return np.stack([np.zeros(j.shape), (j < ctx.params["s0"]).astype(np.float64)])

    def scale(self, j, ctx):
        return np.ones((2, j.size))

    def tile(self, t: int, ctx: SimContext) -> np.ndarray:
        t0, t1 = rng.tile_bounds(t, ctx.p)
        j = np.arange(t0, t1, dtype=np.int64)
        rho, extras = ctx.params["rho"], ctx.samples.extras
        x = self.standard_draws(t, t1 - t0, ctx)
        x *= math.sqrt(1.0 - rho)
        x += (math.sqrt(rho) * extras["factor"])[:, None]
        x *= np.where(extras["heavy"], math.sqrt(ctx.params["f"]), 1.0)[:, None]
        x += self.loc(j, ctx)[ctx.samples.y]
        return x


def lol_settings() -> list[DiagonalMixture]:
    """The independent-feature LOL settings, in registry order."""
    return [Cigars(), Trunk(), Trunk3(), Robust(), Cross(), HumpK(), Xor(), FatTails()]
