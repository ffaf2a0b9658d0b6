"""The six simulations of the encoder-embedding paper (Section 5.1): K = 5 classes, p = 5000.

The coordinate equal to the label carries the signal: with 0-based labels
y ∈ {0, ..., K-1}, feature y (0-based) of a class-y sample is the signal feature.

- ``enc-uniform``: X_y ~ Uniform(1, 3), X_i ~ Uniform(0, 1) for i != y.
- ``enc-uniform-noise``: as above, plus 0.5·Uniform(0, 1) on every entry.
- ``enc-uniform-transformed``: the noisy version, then X ← X Q.
- ``enc-normal``: X_y ~ Normal(8, 1), X_i ~ Normal(1, 1) for i != y.
- ``enc-normal-noise``: as above, plus 2·Uniform(0, 1) on every entry.
- ``enc-normal-transformed``: the noisy version, then X ← X Q.

Q is p x p with i.i.d. Uniform(0, 1) entries, redrawn per seed. The paper's
"same as above" for the transformed settings is read as the *noisy* version
(the previous row of its table). The three settings of a family share their
labels and base draws for a given seed, so ``enc-uniform-noise`` is exactly
``enc-uniform`` plus the noise, and ``enc-uniform-transformed`` is exactly
``enc-uniform-noise @ Q``.
"""

from __future__ import annotations

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sims import rng
from wideml.sims.linear_maps import LinearMapSetting
from wideml.sims.setting import DiagonalMixture, SimContext


class EncoderSignal(DiagonalMixture):
    """Independent features with one signal coordinate per class (see the module docstring).

    Uniform family: ``loc`` is 0 (1 on the signal feature) and ``scale`` the width,
    1 (2 on the signal feature). Normal family: ``loc`` is ``base_mean`` = 1
    (``signal_mean`` = 8 on the signal feature), ``scale`` 1. ``noise`` adds
    noise·Uniform(0, 1) to every entry (0 in the plain settings).
    """

    default_n_features = 5000
    reference = "Encoder paper Section 5.1 (Fig. 1)"

    def __init__(self, name: str, family: str, distribution: str, noise: float, description: str):
        self.name, self.family, self.distribution = name, family, distribution
        self.title = name
        self.description = description
        if distribution == "uniform":
            self.defaults = {"n_classes": 5, "priors": None, "noise": noise}
        else:
            self.defaults = {"n_classes": 5, "priors": None, "signal_mean": 8.0, "base_mean": 1.0, "noise": noise}

    def check_params(self, params):
        if params["noise"] < 0:
            raise WidemlError(f"{self.name}: noise={params['noise']} must be >= 0.")

    def check_shape(self, n_samples, n_features, params):
        super().check_shape(n_samples, n_features, params)
        if n_features < self.n_classes(params):
            raise WidemlError(
                f"{self.name}: {n_features} features cannot hold {self.n_classes(params)} signal coordinates; "
                f"use at least {self.n_classes(params)} features."
            )

    def _signal(self, j: np.ndarray, ctx: SimContext) -> np.ndarray:
        k = self.n_classes(ctx.params)
        return j[None, :] == np.arange(k)[:, None]

    def loc(self, j, ctx):
        signal = self._signal(j, ctx)
        if self.distribution == "uniform":
            return signal.astype(np.float64)
        return np.where(signal, ctx.params["signal_mean"], ctx.params["base_mean"])

    def scale(self, j, ctx):
        signal = self._signal(j, ctx)
        if self.distribution == "uniform":
            return np.where(signal, 2.0, 1.0)
        return np.ones(signal.shape)


class EncoderTransformed(LinearMapSetting):
    """X ← X Q with Q p x p i.i.d. Uniform(0, 1), on top of the noisy encoder setting.

    - p <= dense_max (default 16384; the paper uses p = 5000): exact. Block (s, t)
      of Q is drawn from (seed, s, t), so Q is the same i.i.d. matrix whatever the
      chunking; each chunk streams over all input tiles (time O(n p²), p² uniforms
      in total; memory one chunk plus a 1024 x 1024 block).
    - p > dense_max: structured equivalent, Q block diagonal with the same i.i.d.
      Uniform(0, 1) 1024 x 1024 diagonal blocks (the last one smaller), time O(n p ·
      1024) and 1024 uniforms per feature. Within a tile it is exactly the paper's
      transform of that tile; across tiles nothing is mixed, so the signal
      coordinates (features 0..K-1) only reach the first tile's outputs.
    """

    map_defaults = {"dense_max": 16384}
    default_n_features = 5000
    reference = "Encoder paper Section 5.1 (Fig. 1)"

    def __init__(self, name: str, base: EncoderSignal, description: str):
        self.name, self.base, self.title, self.description = name, base, name, description

    def dense_block(self, s: int, t: int, ctx: SimContext) -> np.ndarray:
        s0, s1 = rng.tile_bounds(s, ctx.p)
        t0, t1 = rng.tile_bounds(t, ctx.p)
        return rng.generator(ctx.seed, self.code, rng.TRANSFORM, s, t).random((s1 - s0, t1 - t0))

    def diagonal_apply(self, t: int, x: np.ndarray, ctx: SimContext) -> np.ndarray:
        return x @ self.dense_block(t, t, ctx)


def encoder_settings() -> list:
    """The six encoder-paper settings, in registry order."""
    uniform_noise = EncoderSignal(
        "enc-uniform-noise", "enc-uniform", "uniform", 0.5,
        "Encoder Uniform + Noise: enc-uniform plus 0.5*Uniform(0,1) on every entry",
    )
    normal_noise = EncoderSignal(
        "enc-normal-noise", "enc-normal", "normal", 2.0,
        "Encoder Normal + Noise: enc-normal plus 2*Uniform(0,1) on every entry",
    )
    return [
        EncoderSignal("enc-uniform", "enc-uniform", "uniform", 0.0,
                      "Encoder High-Dimensional Uniform: X_y ~ U(1,3), other features U(0,1); K=5"),
        uniform_noise,
        EncoderTransformed("enc-uniform-transformed", uniform_noise,
                           "Encoder Uniform Transformed: enc-uniform-noise times Q (p x p, i.i.d. U(0,1))"),
        EncoderSignal("enc-normal", "enc-normal", "normal", 0.0,
                      "Encoder High-Dimensional Normal: X_y ~ N(8,1), other features N(1,1); K=5"),
        normal_noise,
        EncoderTransformed("enc-normal-transformed", normal_noise,
                           "Encoder Normal Transformed: enc-normal-noise times Q (p x p, i.i.d. U(0,1))"),
    ]
