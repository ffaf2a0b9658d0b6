"""The one pass of a cross-validation over dimensions: the Gram pass plus label-free random products.

:func:`wideml.estimators.gram.cv.cross_validate_dims` scores LOL, PCA, rrLDA
and QOQ from the n x n Gram (:mod:`wideml.passes.gram`), and LFL and RP from
the Gram too (their class-centroid part) plus X R, X A for the largest number
of random columns any of them asks for. Those random matrices are nested in
their column count and keyed on (seed, feature index, column)
(:mod:`wideml.passes.keyed_random`), and label-free, so one product per chunk
serves every fold and every d. Each chunk task reads the chunk once, computes
the random products (the chunk centred by its own means, offsets added back in
float64: raw X R), then the Gram statistics of the same block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import dask
import dask.array as da
import numpy as np

from wideml.passes.blocks import feature_stripes, materialise, shared, sub_stripe_width
from wideml.passes.chunkmath import work_dtype
from wideml.passes.gram import GramStats, MedianSet, chunk_stats, gram_lanes
from wideml.passes.keyed_random import gaussian_columns, sparse_sign_columns
from wideml.passes.lfl import _sparse_t_times, _times_sparse
from wideml.passes.loadings import centred_product
from wideml.passes.reduce import Sums, fold_in_lanes
from wideml.passes.spec import Pass, digest


@dataclass(frozen=True)
class RandomColumns:
    """A label-free random matrix whose product X M the sweep computes.

    Attributes
    ----------
    name : str
        Key of the product in :attr:`SweepStats.products`.
    kind : {"gaussian", "sparse"}
        RP's N(0, 1) matrix (:func:`~wideml.passes.keyed_random.gaussian_columns`)
        or LFL's very sparse one (:func:`~wideml.passes.keyed_random.sparse_sign_columns`).
    seed : int
    n_cols : int
    density : float
        Non-zero fraction (sparse only).
    """

    name: str
    kind: str
    seed: int
    n_cols: int
    density: float = 1.0


@dataclass
class SweepStats:
    """The Gram pass's statistics and the raw random products X M (n x n_cols, float64) by name."""

    gram: GramStats
    products: dict[str, np.ndarray]


def _random_products(block, offset: int, matrices, precision: str, width: int) -> tuple:
    """(X_j M_j for every matrix, float64) of one chunk, in sub-stripes of ``width`` features."""
    n = block.shape[0]
    out = [np.zeros((n, m.n_cols)) for m in matrices]
    for a in range(0, block.shape[1], width):
        stripe, start = block[:, a : a + width], offset + a
        stop = start + stripe.shape[1]
        for i, m in enumerate(matrices):
            if not m.n_cols:
                continue
            if m.kind == "gaussian":
                out[i] += centred_product(stripe, start, gaussian_columns(m.seed, start, stop, m.n_cols), precision)[0]
            else:
                R = sparse_sign_columns(m.seed, start, stop, m.n_cols, m.density)
                _, x, c = centred_product(stripe, start, np.zeros((stripe.shape[1], 0)), precision)
                out[i] += _times_sparse(x, R) + _sparse_t_times(R, c)  # X R = X_c R + 1 (R^T c)^T
    return tuple(out)


def _sweep_chunk(stripe, offset, codes, n_classes, median_sets, precision, width, matrices):
    """One chunk of the sweep: random products, then the Gram statistics (read once)."""
    block, _ = materialise(stripe)
    stats = chunk_stats(block, offset, codes, n_classes, median_sets, precision, None, width)  # centres a copy: block intact
    if stats.error is not None:
        return stats
    return Sums(dict(stats.values, products=_random_products(block, int(offset), matrices, precision, width)))


def sweep_pass(X: da.Array, codes: np.ndarray, n_classes: int, matrices: Sequence[RandomColumns], *,
               median_subsets: Sequence[np.ndarray] = (), precision: str = "auto", checkpoint=None):
    """Lazy Gram pass plus random products (**one pass** over X).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    codes, n_classes, median_subsets, precision, checkpoint
        As in :func:`wideml.passes.gram.gram_pass` (no p-sized outputs).
    matrices : sequence of RandomColumns

    Returns
    -------
    dask.delayed.Delayed
        Computes to a :class:`SweepStats`. Raises NonFiniteError on NaN/inf.
    """
    work_dtype(X.dtype, precision)
    stripes, offsets = feature_stripes(X, direct=True)
    n = X.shape[0]
    sets = []
    for idx in median_subsets:
        idx = np.asarray(idx, dtype=np.int64)
        sets.append((idx, codes[idx], len(idx) == n and np.array_equal(idx, np.arange(n))))
    extra = sum(m.n_cols for m in matrices) / max(n, 1)
    width = sub_stripe_width(n, copies=5 + len(sets) + int(np.ceil(extra)))
    codes_d, sets_d = shared(codes), shared(sets)
    args = [(s, int(o), codes_d, n_classes, sets_d, precision, width, tuple(matrices)) for s, o in zip(stripes, offsets)]
    total = fold_in_lanes(_sweep_chunk, args, lanes=gram_lanes(n), checkpoint=checkpoint)
    return dask.delayed(_finish, pure=True)(total, int(X.shape[1]), [m.name for m in matrices])


def _finish(total: Sums, n_features: int, names: list) -> SweepStats:
    sums = total.finish()
    G = (sums["G"] + sums["G"].T) / 2
    gram = GramStats(G=G, r=sums["r"], s=float(sums["s"]), n_features=n_features,
                     medians=[MedianSet(P, Q) for P, Q in sums["medians"]])
    return SweepStats(gram, dict(zip(names, sums["products"])))


class SweepPass(Pass):
    """The sweep as the fit runner runs it (:func:`sweep_pass`; **one pass** over X); checkpoint ``"cv-sweep"``."""

    kind = "cv-sweep"

    def __init__(self, X: da.Array, codes: np.ndarray, n_classes: int, matrices: Sequence[RandomColumns], *,
                 median_subsets: Sequence[np.ndarray] = (), precision: str = "auto"):
        super().__init__()
        self.X, self.codes, self.n_classes, self.matrices = X, codes, n_classes, list(matrices)
        self.median_subsets, self.precision = list(median_subsets), precision

    def graph(self, lanes=None):
        return sweep_pass(self.X, self.codes, self.n_classes, self.matrices, median_subsets=self.median_subsets,
                          precision=self.precision, checkpoint=lanes)

    def key(self) -> dict:
        return {"precision": self.precision, "median_subsets": digest(*[np.asarray(s) for s in self.median_subsets]),
                "matrices": [[m.name, m.kind, m.seed, m.n_cols, m.density] for m in self.matrices]}

    def save(self, stats: SweepStats) -> tuple:
        g = stats.gram
        return (g.G, g.r, float(g.s), int(g.n_features), [(m.P, m.Q) for m in g.medians], dict(stats.products))

    def restore(self, state: tuple) -> SweepStats:
        G, r, s, n_features, meds, products = state
        return SweepStats(GramStats(G=G, r=r, s=s, n_features=n_features, medians=[MedianSet(P, Q) for P, Q in meds]), dict(products))
