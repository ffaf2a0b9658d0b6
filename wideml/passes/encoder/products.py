"""Chunk products shared by the encoder's passes: class means W^T x, products x U^T and squared row norms.

A feature chunk x (n x p_j) holds every sample, so its class means U_j = W^T x
are chunk-local, and so is its share of every additive kernel statistic
(x_i . u_k, ||x_i||^2, ||u_k||^2). With few anchors a chunk is multiplied in
row tiles, each tile's products and norms computed while it is in cache.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse


def row_sq(x: np.ndarray) -> np.ndarray:
    """Squared row norms (float64 out; accumulated in x's precision, ~10x faster than square-then-sum)."""
    return np.einsum("ij,ij->i", x, x, optimize=True).astype(np.float64, copy=False)


#: Products x_tile U^T of at most this many multiply-adds (rows x features x anchors) stay on a BLAS's
#: small-matrix path (no packing of x); with few anchors a chunk is multiplied in row tiles of that size,
#: each tile still in cache for its squared norms (measured on a 2000 x 4096 float32 chunk: 2 anchors
#: 3.9 -> 2.0 ms, 5 anchors 5.0 -> 2.8 ms for the product and the norms).
_TILE_MNK = 500_000
#: More anchors than this: one product for the whole chunk is faster (it is compute-bound).
_TILE_MAX_ANCHORS = 8
_TILE_MIN_ROWS = 16
_rowdot = getattr(np, "vecdot", None)  # numpy >= 2


def tile_rows(n: int, p: int, anchors: int) -> int:
    """Rows per tile of a product of an n x p chunk with ``anchors`` rows of weights, or 0 for one whole product."""
    rows = _TILE_MNK // max(1, anchors * p)
    if anchors > _TILE_MAX_ANCHORS or rows < _TILE_MIN_ROWS or rows >= n or _rowdot is None:
        return 0
    return rows


def cross_sq(x: np.ndarray, U: np.ndarray, need_sq: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """x U^T (n x A, in x's dtype) and, when ``need_sq``, the squared row norms of x (float64), from one read of x."""
    n, p = x.shape
    A = U.shape[0]
    rows = tile_rows(n, p, A)
    if not rows:
        # float64: OpenBLAS runs (U x^T)^T, with the few anchors as rows, 1.1-1.6x faster than x U^T (float32: slower)
        cross = (U @ x.T).T if np.result_type(x.dtype, U.dtype) == np.float64 else x @ U.T
        return cross, (row_sq(x) if need_sq else None)
    UT = U.T
    cross = np.empty((n, A), dtype=np.result_type(x.dtype, U.dtype))
    sq = np.empty(n, dtype=x.dtype) if need_sq else None
    for a in range(0, n, rows):
        xs = x[a : a + rows]
        np.matmul(xs, UT, out=cross[a : a + rows])
        if need_sq:
            _rowdot(xs, xs, out=sq[a : a + rows])
    return cross, (sq.astype(np.float64) if need_sq else None)


def means_sq(x: np.ndarray, Wt: np.ndarray, need_sq: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Class means U = W^T x (A x p, float64) for a few anchors (dense ``Wt``, A x n) and, when ``need_sq``, the
    squared row norms (float64), from one read of x: each row tile's product and norms while it is in cache."""
    n, p = x.shape
    A = Wt.shape[0]
    rows = tile_rows(n, p, A)
    if not rows:
        return (Wt @ x).astype(np.float64), (row_sq(x) if need_sq else None)
    U = np.zeros((A, p))
    part = np.empty((A, p), dtype=np.result_type(x.dtype, Wt.dtype))
    sq = np.empty(n, dtype=x.dtype) if need_sq else None
    for a in reversed(range(0, n, rows)):  # from the end: the rows just read are still in cache (x U^T then sweeps forward)
        xs = x[a : a + rows]
        np.matmul(Wt[:, a : a + rows], xs, out=part)
        U += part
        if need_sq:
            _rowdot(xs, xs, out=sq[a : a + rows])
    return U, (sq.astype(np.float64) if need_sq else None)


def working_block(block, precision: str) -> np.ndarray:
    """A chunk in the working precision (``"float32"`` or ``"float64"``; no copy when it already is)."""
    x = np.asarray(block)
    dt = np.float32 if precision == "float32" else np.float64
    return x.astype(dt, copy=False)


def class_mean_operator(W: np.ndarray):
    """W^T as a sparse matrix (S*K x n): each sample sits in one class per set, so U = W^T X is a
    sparse-dense product that adds each row once (3x faster than a dense GEMM with K rows)."""

    Wt = np.ascontiguousarray(np.asarray(W, dtype=np.float64).T)
    mask = Wt != 0
    flat = np.flatnonzero(mask)  # row-major order: the canonical CSR layout
    indptr = np.zeros(Wt.shape[0] + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=indptr[1:])
    return scipy.sparse.csr_array((Wt.ravel()[flat], flat % Wt.shape[1], indptr), shape=Wt.shape)


def stats_operator(W: np.ndarray, dtype):
    """The class-mean operator W^T (S*K x n) as the class-statistics chunk task wants it: dense in ``dtype`` for a
    few anchors, whose products run in row tiles (:func:`means_sq`), else sparse (:func:`class_mean_operator`)."""
    dtype = np.dtype(dtype)
    if W.shape[1] <= _TILE_MAX_ANCHORS:
        return np.ascontiguousarray(np.asarray(W, dtype=np.float64).T).astype(dtype, copy=False)
    op = class_mean_operator(W)
    return op.astype(dtype) if op.dtype != dtype else op


def anchor_sample(W: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """Class means at the sampled features, ``W^T sample`` (S*K x m), computed exactly as the passes compute
    them chunk by chunk, so a class mean's value at a sampled feature is bitwise its rank table's knot."""
    return np.asarray(class_mean_operator(W) @ np.asarray(sample, dtype=np.float64))


__all__ = ["anchor_sample", "class_mean_operator", "cross_sq", "means_sq", "row_sq", "stats_operator", "tile_rows", "working_block"]
