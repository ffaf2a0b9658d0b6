"""Settings that multiply another setting's data by a random p x p matrix, chunk by chunk.

A sample x (a row of the base setting) becomes ``x @ M`` for a random p x p
matrix M. Two ways to apply it, chosen from p alone (never from the chunking):

- **dense** (p <= ``dense_max``): the exact map. Output tile t is
  ``sum_s x_s @ M[s, t]`` over all generation tiles s of the input, accumulated
  in increasing s, where ``M[s, t]`` is the (tile s, tile t) block. A chunk
  regenerates every input tile once and its own output tiles' blocks, so the
  memory is one chunk plus one tile plus one block; the time is O(n p²).
- **block-diagonal** (p > ``dense_max``): only the diagonal blocks ``M[t, t]``
  are used, so every output tile depends on its own input tile (time O(n p ·
  TILE) or less, memory independent of p). Subclasses document what this
  structured equivalent preserves.

Every matrix product has the same shapes whatever the chunking, so the values
are bit-for-bit identical across chunkings.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sims import rng
from wideml.sims.setting import Samples, Setting, SimContext


class LinearMapSetting(Setting):
    """A base setting followed by a random linear map (see the module docstring).

    Subclasses set ``base``, ``map_defaults`` (must contain ``dense_max``) and
    implement :meth:`dense_block` and :meth:`diagonal_apply`.
    """

    base: Setting
    map_defaults: Mapping[str, Any] = {"dense_max": 4096}

    @property
    def defaults(self) -> dict[str, Any]:  # type: ignore[override]
        return {**self.base.defaults, **self.map_defaults}

    @property
    def min_features(self) -> int:  # type: ignore[override]
        return self.base.min_features

    def n_classes(self, params):
        return self.base.n_classes(params)

    def default_priors(self, params):
        return self.base.default_priors(params)

    def check_params(self, params):
        self.base.check_params(params)
        if params["dense_max"] < 0:
            raise WidemlError(f"{self.name}: dense_max={params['dense_max']} must be >= 0.")

    def check_shape(self, n_samples, n_features, params):
        self.base.check_shape(n_samples, n_features, params)

    def draw_samples(self, n: int, seed: int, params: Mapping[str, Any]) -> Samples:
        return self.base.draw_samples(n, seed, params)

    def is_dense(self, ctx: SimContext) -> bool:
        """True when the exact dense map is used (p <= dense_max)."""
        return ctx.p <= int(ctx.params["dense_max"])

    def dense_block(self, s: int, t: int, ctx: SimContext) -> np.ndarray:
        """Block (input tile s, output tile t) of M, shape (width_s, width_t)."""
        raise NotImplementedError

    def diagonal_apply(self, t: int, x: np.ndarray, ctx: SimContext) -> np.ndarray:
        """Output tile t of the block-diagonal map from input tile ``x`` (n, width_t)."""
        raise NotImplementedError

    def iter_tiles(self, tiles: Iterable[int], ctx: SimContext) -> Iterator[tuple[int, np.ndarray]]:
        tiles = list(tiles)
        if not self.is_dense(ctx):
            for t in tiles:
                yield t, self.diagonal_apply(t, self.base.tile(t, ctx), ctx)
            return
        acc: dict[int, np.ndarray] = {}
        for s in range(rng.n_tiles(ctx.p)):
            xs = self.base.tile(s, ctx)
            for t in tiles:
                term = xs @ self.dense_block(s, t, ctx)
                if t in acc:
                    acc[t] += term
                else:
                    acc[t] = term
        for t in tiles:
            yield t, acc.pop(t)

    def tile(self, t: int, ctx: SimContext) -> np.ndarray:
        return next(iter(self.iter_tiles([t], ctx)))[1]
