"""New data against a fitted encoder's stored anchors (class means and their estimated ranks), in one pass.

The class means U (K x p) and their ranks S are stored chunked like the
training data; each feature chunk of the new data meets the aligned stripes of
U and S and adds its share of x . u_k, ||x||^2, ||u_k||^2 and the rank sums.
:func:`anchor_local` applies the same chunk task to arrays already in memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import dask
import dask.array as da
import numpy as np

from wideml.algebra.encoder import RankTable, approx_ranks, rank_sums
from wideml.passes.blocks import aligned_blocks, check_finite, feature_stripes, graph_constant
from wideml.passes.reduce import Sums, sum_chunk_results
from wideml.passes.encoder.products import cross_sq, row_sq, working_block


def _anchor_chunk(block, offset, u, s, tables, p, precision):
    offset = int(offset)
    x = working_block(block, precision)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf in x: reported below, by feature index
        if u is not None:
            u = np.asarray(u).astype(x.dtype, copy=False)
            cross, x_sq = cross_sq(x, u)
        else:
            cross, x_sq = None, row_sq(x)
    if not np.all(np.isfinite(x_sq)):
        check_finite(np.asarray(block), offset)
        x_sq = row_sq(x.astype(np.float64))
    out = {"x_sq": x_sq}
    if u is not None:
        out["cross"] = cross.astype(np.float64)
        out["u_sq"] = np.square(u.astype(np.float64)).sum(axis=1)
    if s is not None:
        s = np.asarray(s, dtype=np.float64)
        R = approx_ranks(x.astype(np.float64), tables, p)
        out["rank_cross"] = R @ s.T
        out["r_sum"], out["r_sq"] = rank_sums(R)
    return Sums(out)


def anchor_pass(X: da.Array, U=None, *, S=None, x_tables: Sequence[RankTable] | None = None, precision: str = "float64"):
    """Statistics of new samples against stored anchors, in **one pass** over X.

    Parameters
    ----------
    X : dask.array.Array of shape (m, n_features)
    U : array of shape (K, n_features), optional
        Class means (numpy, zarr or dask); gives ``cross``, ``x_sq``, ``u_sq``.
    S : array of shape (K, n_features), optional
        Estimated class-mean ranks (with ``x_tables``, the new rows' rank
        tables, from the rows' values at the sampled features:
        :func:`wideml.passes.sampling.sampled_features_pass`); gives ``rank_cross``, ``r_sum``, ``r_sq``.
    precision : {"float64", "float32"}

    Returns
    -------
    dask.delayed.Delayed
        Computes to a dict of those sums.
    """
    stripes, offsets = feature_stripes(X)
    us = aligned_blocks(U, X.chunks[1], offsets, axis=1) if U is not None else [None] * len(stripes)
    ss = aligned_blocks(S, X.chunks[1], offsets, axis=1) if S is not None else [None] * len(stripes)
    tables = graph_constant(list(x_tables), "row-rank-tables") if x_tables is not None else None
    p = int(X.shape[1])
    args = [(x, int(o), u, s, tables, p, precision) for x, o, u, s in zip(stripes, offsets, us, ss)]
    return dask.delayed(Sums.finish, pure=True)(sum_chunk_results(_anchor_chunk, args))


def anchor_local(X: np.ndarray, U: np.ndarray | None = None, *, S: np.ndarray | None = None, x_tables=None,
                 precision: str = "float64") -> dict:
    """:func:`anchor_pass` for in-memory X and anchors."""
    return _anchor_chunk(X, 0, U, S, None if x_tables is None else list(x_tables), X.shape[1], precision).finish()


__all__ = ["anchor_local", "anchor_pass"]
