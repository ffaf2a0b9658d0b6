"""Random rotations: exact Haar for small p, tile-wise Kronecker-Haar rotations for large p (Rotated Trunk)."""

from __future__ import annotations

import functools
import math
import threading

import numpy as np
from scipy.linalg import lapack

from wideml.sims import rng
from wideml.sims.linear_maps import LinearMapSetting
from wideml.sims.lol_settings import Trunk
from wideml.sims.setting import SimContext

#: Side of the two Haar factors of a full tile's Kronecker rotation (KRON_SIDE² == TILE).
KRON_SIDE = math.isqrt(rng.TILE)
assert KRON_SIDE * KRON_SIDE == rng.TILE

#: Stream of the dense p x p rotation (distinct from the per-tile ROTATION stream).
DENSE_ROTATION = 7


def haar_rotation(m: int, gen: np.random.Generator) -> np.ndarray:
    """A Haar-distributed rotation of R^m (uniform on SO(m)), shape (m, m).

    QR of an m x m standard normal matrix with the signs of R's diagonal moved
    into Q (Mezzadri 2007, which makes Q Haar on O(m)); then, if det Q = -1, the
    first column is negated, which maps Haar on O(m) to Haar on SO(m). lolR's
    ``lol.sims.rotation`` does the determinant flip but not the sign fix. The sign
    of det Q is read off the Householder factorisation (each reflector with
    tau != 0 has determinant -1), so no extra O(m³) determinant is computed.
    """
    z = gen.standard_normal((m, m))
    lwork = max(1, 64 * m)  # room for the blocked algorithms (the default is the slow unblocked minimum)
    qr, tau, _, info = lapack.dgeqrf(np.asfortranarray(z), lwork=lwork)
    if info != 0:  # pragma: no cover - LAPACK argument error
        raise RuntimeError(f"dgeqrf failed with info={info}")
    signs = np.sign(np.diagonal(qr)).copy()
    signs[signs == 0] = 1.0
    q, _, info = lapack.dorgqr(qr, tau, lwork=lwork, overwrite_a=True)
    if info != 0:  # pragma: no cover
        raise RuntimeError(f"dorgqr failed with info={info}")
    q = np.ascontiguousarray(q) * signs
    n_reflections = int(np.count_nonzero(tau))
    if (-1) ** n_reflections * np.prod(signs) < 0:
        q[:, 0] = -q[:, 0]
    return q


_dense_lock = threading.Lock()


@functools.lru_cache(maxsize=2)
def _dense_rotation_cached(seed: int, code: int, p: int) -> np.ndarray:
    q = haar_rotation(p, rng.generator(seed, code, DENSE_ROTATION, p))
    q.flags.writeable = False
    return q


def dense_rotation(seed: int, code: int, p: int) -> np.ndarray:
    """The exact p x p Haar rotation of a seed (cached, at most two live; 8 p² bytes each)."""
    with _dense_lock:
        return _dense_rotation_cached(seed, code, p)


def kron_tile_rotation(seed: int, code: int, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The two independent Haar factors (A, B), each KRON_SIDE x KRON_SIDE, of tile t's rotation A ⊗ B."""
    gen = rng.generator(seed, code, rng.ROTATION, t)
    return haar_rotation(KRON_SIDE, gen), haar_rotation(KRON_SIDE, gen)


def apply_tile_rotation(x: np.ndarray, seed: int, code: int, t: int) -> np.ndarray:
    """Rotate one tile: rows x (n, width) ↦ x Qᵀ for the tile's rotation Q.

    A full tile (width TILE) uses Q = A ⊗ B with A, B independent Haar rotations of
    size sqrt(TILE) = 32, applied as A X Bᵀ on each row reshaped to 32 x 32 (cost
    2·32·TILE flops per row instead of TILE²). The last, partial tile uses a dense
    Haar rotation of its width.
    """
    n, width = x.shape
    if width == rng.TILE:
        a, b = kron_tile_rotation(seed, code, t)
        y = np.matmul(a, x.reshape(n, KRON_SIDE, KRON_SIDE)) @ b.T
        return y.reshape(n, width)
    q = haar_rotation(width, rng.generator(seed, code, rng.ROTATION, t))
    return x @ q.T


class RotatedTrunk(LinearMapSetting):
    """Rotated Trunk (LOL Fig. 2C, App. C): Trunk with μ_k ← Q μ_k and Σ ← Q Σ Qᵀ, i.e. x ← Q x.

    The underlying Trunk sample (labels and noise) is the ``trunk`` setting's for the
    same seed, so ``rotated = trunk @ Qᵀ``.

    - p <= dense_max (default 4096): Q is exactly Haar on SO(p) (:func:`haar_rotation`
      on a p x p Gaussian drawn from the seed), built once per process and cached
      (8 p² bytes, 128 MiB at p = 4096), applied as the dense map.
    - p > dense_max: Q is block diagonal over the fixed generation tiles of TILE = 1024
      features (aligned to global feature indices, no permutation), each block
      ``A_t ⊗ B_t`` with A_t, B_t independent 32 x 32 Haar rotations drawn from
      (seed, tile), and the last partial tile a dense Haar rotation of its width.
      Each block is a dense orthogonal matrix mixing all 1024 features of its tile.
      Memory and time per feature are independent of p (2 normals and 64 n flops
      per feature).

    What the structured Q preserves: Q is orthogonal, so the spectrum of Σ, the norm
    of the mean difference and its coordinates in Σ's eigenbasis — everything a
    rotation-equivariant method sees (LOL, PCA, rrLDA, LDA, ...) — are exactly those
    of the dense rotation; axis alignment, which coordinate-wise methods (ROAD,
    sparse, robust medians) exploit, is destroyed within every tile. What it does
    not reproduce: mixing across tiles (Qμ keeps Trunk's per-tile energy profile)
    and the exact Haar law within a tile (Kronecker products of Haar matrices are not
    Haar on SO(1024)). An exact Haar block per tile would cost 1024 normals and
    ~10^9 flops per tile — hours at p = 10^8.
    """

    name = "rotated-trunk"
    title = "Rotated Trunk"
    description = "Rotated Trunk (LOL Fig 2C): Trunk under a random rotation (exact Haar up to dense_max features)"
    reference = "LOL App. C 'Rotated Trunk'; lolR lol.sims.rtrunk(rotate=TRUE)"
    base = Trunk()
    map_defaults = {"dense_max": 4096}

    def dense_block(self, s: int, t: int, ctx: SimContext) -> np.ndarray:
        q = dense_rotation(ctx.seed, self.code, ctx.p)
        s0, s1 = rng.tile_bounds(s, ctx.p)
        t0, t1 = rng.tile_bounds(t, ctx.p)
        return q[t0:t1, s0:s1].T

    def diagonal_apply(self, t: int, x: np.ndarray, ctx: SimContext) -> np.ndarray:
        return apply_tile_rotation(x, ctx.seed, self.code, t)
