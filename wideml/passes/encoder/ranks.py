"""The encoder's rank passes: Spearman sums from estimated or exact ranks, and the rank Gram.

Spearman needs each row's ranks across *all* features, which no chunk has.

- :func:`spearman_sketch_pass` estimates every row's ranks from its sampled
  values (one pass, memory O(n m));
- :func:`spearman_exact_block` ranks whole rows of a block of samples (exact;
  one pass per row block, a single block when the rows fit the memory budget);
- :func:`rank_gram_block` forms the exact rank cross-products the full-kernel
  form needs.

The first two need the class means' ranks, so they run after the class-statistics
pass (:mod:`wideml.passes.encoder.class_stats`). The ``*_local`` functions apply
the same chunk tasks to an array already in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import dask
import dask.array as da
import numpy as np

from wideml.algebra.encoder import RankTable, approx_ranks, rank_sums, row_ranks
from wideml.passes.blocks import check_finite, feature_stripes, graph_constant, materialise
from wideml.passes.reduce import Sums, sum_chunk_results
from wideml.passes.spec import Pass, digest
from wideml.passes.encoder.products import class_mean_operator
from wideml.passes.outputs import write_output

#: Name of the p-sized estimated class-mean ranks (K x p) written into a model group.
CLASS_MEAN_RANKS = "class_mean_ranks"

#: Training rows processed together in the leave-one-out rank step (bounds memory per chunk task).
LOO_BATCH = 256


@dataclass
class LooSpec:
    """Leave-one-out pairs: training row ``rows[l]`` against its own class-mean column ``cols[l]`` of size ``counts[l]``."""

    rows: np.ndarray
    cols: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_sets(cls, codes: np.ndarray, n_classes: int, train_sets: Sequence[np.ndarray], counts: np.ndarray) -> "LooSpec":
        rows, cols, cnt = [], [], []
        for s, idx in enumerate(train_sets):
            idx = np.asarray(idx, dtype=np.int64)
            rows.append(idx)
            cols.append(s * n_classes + codes[idx])
            cnt.append(counts[s][codes[idx]])
        return cls(np.concatenate(rows), np.concatenate(cols), np.concatenate(cnt).astype(np.float64))

    def __len__(self) -> int:
        return len(self.rows)


# --------------------------------------------------------------------------------------
# pass 2 (estimated ranks): Spearman sums from each row's sampled values
# --------------------------------------------------------------------------------------
def _loo_rank_sums(x, U, R, loo, u_tables, p):
    """sum_j r_ij s'_ij, sum_j s'_ij, sum_j s'_ij^2 for every leave-one-out pair, in batches."""
    L = len(loo)
    cross, ssum, ssq = np.empty(L), np.empty(L), np.empty(L)
    for a in range(0, L, LOO_BATCH):
        b = min(L, a + LOO_BATCH)
        rows, cols, cnt = loo.rows[a:b], loo.cols[a:b], loo.counts[a:b][:, None]
        u_loo = (cnt * U[cols] - x[rows]) / np.maximum(cnt - 1, 1)
        S = np.empty_like(u_loo)
        for col in np.unique(cols):
            sel = cols == col
            S[sel] = u_tables[col].rank(u_loo[sel], p)
        cross[a:b] = np.einsum("ij,ij->i", R[rows], S)
        ssum[a:b], ssq[a:b] = rank_sums(S)
    return cross, ssum, ssq


def _sketch_rank_chunk(stripe, offset, W, x_tables, u_tables, p, loo, n_write, out_group, keep_ranks=False):
    offset = int(offset)
    block, _ = materialise(stripe)
    x = np.asarray(block).astype(np.float64, copy=False)
    U = np.asarray(W @ x)
    R = approx_ranks(x, x_tables, p)
    S = approx_ranks(U, u_tables, p)
    write_output(out_group, CLASS_MEAN_RANKS, S[:n_write], offset)
    r_sum, r_sq = rank_sums(R)
    s_sum, s_sq = rank_sums(S)
    out = {"rank_cross": R @ S.T, "r_sum": r_sum, "r_sq": r_sq, "s_sum": s_sum, "s_sq": s_sq}
    if loo is not None and len(loo):
        out["loo_cross"], out["loo_sum"], out["loo_sq"] = _loo_rank_sums(x, U, R, loo, u_tables, p)
    if keep_ranks:
        out["S"] = S
    return Sums(out)


def spearman_sketch_pass(
    X: da.Array,
    W: np.ndarray,
    x_tables: Sequence[RankTable],
    u_tables: Sequence[RankTable],
    *,
    loo: LooSpec | None = None,
    n_write: int = 0,
    out_group: str | None = None,
    checkpoint=None,
):
    """Spearman sums with **estimated** ranks, in **one pass** (after :func:`~wideml.passes.encoder.class_stats.class_stats_pass`).

    Row i's rank of a value v is estimated as p F_i(v) + 1/2, with F_i the
    mid-rank CDF of the row's sampled values, linearly interpolated
    (:class:`~wideml.algebra.encoder.RankTable`); likewise for each class mean
    from the class mean's values at the same features. A leave-one-out class
    mean (n_c u_c - x_i) / (n_c - 1) is ranked with its class mean's table
    (it differs from u_c by O(1/n_c)).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    W : ndarray of shape (n_samples, S * K)
    x_tables : sequence of n_samples RankTable
    u_tables : sequence of S * K RankTable
    loo : LooSpec, optional
        Pairs whose leave-one-out rank sums to accumulate too.
    n_write, out_group :
        Write the first ``n_write`` class means' estimated ranks into
        ``out_group``'s ``class_mean_ranks`` (K x p, chunked like X).
    checkpoint : wideml.runtime.checkpoint.PassCheckpoint, optional
        Makes the pass resumable, as for :func:`~wideml.passes.encoder.class_stats.class_stats_pass`.

    Returns
    -------
    dask.delayed.Delayed
        Computes to a dict with ``rank_cross`` (n x SK), ``r_sum``, ``r_sq``
        (n), ``s_sum``, ``s_sq`` (SK) and, with ``loo``, ``loo_cross``,
        ``loo_sum``, ``loo_sq`` (len(loo)).
    """
    # resumable: each lane step reads its own chunk, so what a killed run saved is what it read
    stripes, offsets = feature_stripes(X, direct=checkpoint is not None)
    p = int(X.shape[1])
    W_d = graph_constant(class_mean_operator(W), "class-mean-operator")
    xt, ut = graph_constant(list(x_tables), "row-rank-tables"), graph_constant(list(u_tables), "mean-rank-tables")
    loo_d = graph_constant(loo, "loo-pairs") if loo is not None else None
    args = [(s, int(o), W_d, xt, ut, p, loo_d, n_write, out_group) for s, o in zip(stripes, offsets)]
    return dask.delayed(Sums.finish, pure=True)(sum_chunk_results(_sketch_rank_chunk, args, checkpoint=checkpoint))


# --------------------------------------------------------------------------------------
# pass 2 (exact ranks): whole rows of a block of samples
# --------------------------------------------------------------------------------------
#: Rows ranked together in the exact rank step: about this many bytes of float64 ranks, so the ranks and
#: their temporaries stay in cache and are recycled by the allocator instead of being fresh pages each time.
_RANK_TILE_BYTES = 1 << 21


def _exact_block(rows, S, U, loo, *stripes):
    x = np.asarray(stripes[0]) if len(stripes) == 1 else np.concatenate([np.asarray(s) for s in stripes], axis=1)
    check_finite(x, 0)
    n, p = x.shape
    rank_cross, r_sum, r_sq = np.empty((n, S.shape[0])), np.empty(n), np.empty(n)
    if loo is not None and len(loo):
        L = len(loo)
        cross, ssum, ssq = np.empty(L), np.empty(L), np.empty(L)
        local = loo.rows - rows[0]
    else:
        loo = None
    tile = max(1, _RANK_TILE_BYTES // (8 * max(1, p)))
    for a in range(0, n, tile):
        b = min(n, a + tile)
        R = row_ranks(x[a:b])
        rank_cross[a:b] = R @ S.T
        r_sum[a:b], r_sq[a:b] = rank_sums(R)
        if loo is None:
            continue
        pairs = np.flatnonzero((local >= a) & (local < b))
        for c in range(0, len(pairs), LOO_BATCH):
            sel = pairs[c : c + LOO_BATCH]
            cnt = loo.counts[sel][:, None]
            u_loo = (cnt * U[loo.cols[sel]] - x[local[sel]]) / np.maximum(cnt - 1, 1)
            Sl = row_ranks(u_loo)
            cross[sel] = np.einsum("ij,ij->i", R[local[sel] - a], Sl)
            ssum[sel], ssq[sel] = rank_sums(Sl)
    out = {"rank_cross": rank_cross, "r_sum": r_sum, "r_sq": r_sq}
    if loo is not None:
        out["loo_cross"], out["loo_sum"], out["loo_sq"] = cross, ssum, ssq
    return out


def spearman_exact_block(X: da.Array, rows: slice, S: np.ndarray, *, U: np.ndarray | None = None,
                         loo: LooSpec | None = None):
    """Exact Spearman sums for the samples ``rows``: one pass over X (reads every chunk, keeps those rows).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    rows : slice
        A contiguous block of samples; its whole rows (b x p) and their ranks
        are held in memory by one task.
    S : ndarray of shape (A, n_features)
        Exact ranks of the anchors (class means).
    U : ndarray of shape (A, n_features), optional
        The anchors themselves (needed for ``loo``).
    loo : LooSpec, optional
        Leave-one-out pairs whose rows all lie in ``rows``; ``loo.rows`` are
        global sample indices.

    Returns
    -------
    dask.delayed.Delayed
        Computes to a dict with ``rank_cross`` (b x A), ``r_sum``, ``r_sq`` (b)
        and, with ``loo``, ``loo_cross``, ``loo_sum``, ``loo_sq``.
    """
    start, stop, _ = rows.indices(X.shape[0])
    stripes, _ = feature_stripes(X[start:stop])
    consts = [dask.delayed(np.arange(start, stop)), graph_constant(S, "mean-ranks"), graph_constant(U, "class-means"),
              graph_constant(loo, "loo-pairs")]
    return dask.delayed(_exact_block, pure=True)(*consts, *stripes)


# --------------------------------------------------------------------------------------
# full-kernel form: exact rank cross-products
# --------------------------------------------------------------------------------------
def _rank_gram(na, same, *stripes):
    x = np.concatenate([np.asarray(s) for s in stripes], axis=1).astype(np.float64, copy=False)
    check_finite(x, 0)
    R = row_ranks(x)
    Ra = R[:na]
    Rb = Ra if same else R[na:]
    a_sum, a_sq = rank_sums(Ra)
    b_sum, b_sq = rank_sums(Rb)
    return {"gram": Ra @ Rb.T, "a_sum": a_sum, "a_sq": a_sq, "b_sum": b_sum, "b_sq": b_sq}


def rank_gram_block(X_a: da.Array, X_b: da.Array | None = None):
    """Exact rank cross-products R_a R_b^T (and rank sums) of two row sets held whole in memory (one pass over each).

    With ``X_b`` None, R_b = R_a (the training rank Gram).
    """
    parts = [X_a] if X_b is None else [X_a, X_b.rechunk((X_b.shape[0], X_a.chunks[1]))]
    stacked = da.concatenate(parts, axis=0) if len(parts) > 1 else X_a
    stripes, _ = feature_stripes(stacked)
    return dask.delayed(_rank_gram, pure=True)(int(X_a.shape[0]), X_b is None, *stripes)


# --------------------------------------------------------------------------------------
# in-memory counterparts
# --------------------------------------------------------------------------------------
def spearman_sketch_local(X: np.ndarray, W: np.ndarray, x_tables, u_tables, *, loo: LooSpec | None = None) -> dict:
    """:func:`spearman_sketch_pass` for an in-memory X; also returns the anchors' estimated ranks ``S`` (S*K x p)."""
    return _sketch_rank_chunk(X, 0, class_mean_operator(W), list(x_tables), list(u_tables), X.shape[1], loo, 0, None, True).finish()


def spearman_exact_local(X: np.ndarray, rows: slice, S: np.ndarray, *, U: np.ndarray | None = None,
                         loo: LooSpec | None = None) -> dict:
    """:func:`spearman_exact_block` for an in-memory X."""
    start, stop, _ = rows.indices(X.shape[0])
    return _exact_block(np.arange(start, stop), S, U, loo, X[start:stop])


class RankSketchPass(Pass):
    """The estimated-rank pass as the fit runner runs it (**one pass** over X; directly on an in-memory ``Xmem``).

    Parameters
    ----------
    X : dask.array.Array or None
        The dask view of X (None when ``Xmem`` is given).
    W, x_tables, u_tables, loo, n_write, out_group
        As in :func:`spearman_sketch_pass`.
    sketch : ndarray
        The rows' sampled values the tables come from (its digest keys the checkpoint).
    Xmem : ndarray, optional
        In-memory X: :func:`spearman_sketch_local` runs instead of a graph.
    kind : str, default "encoder-ranks"
        Names the pass's checkpoint (a cross-validation's is ``"encoder-cv-ranks"``).
    """

    def __init__(self, X: da.Array | None, W: np.ndarray, x_tables, u_tables, *, sketch: np.ndarray, loo: LooSpec | None = None,
                 n_write: int = 0, out_group: str | None = None, Xmem: np.ndarray | None = None, kind: str = "encoder-ranks"):
        local = None
        if Xmem is not None:
            local = lambda: spearman_sketch_local(Xmem, W, x_tables, u_tables, loo=loo)  # noqa: E731
        super().__init__(local=local)
        self.X, self.W, self.x_tables, self.u_tables, self.kind = X, W, x_tables, u_tables, kind
        self.sketch, self.loo, self.n_write, self.out_group = sketch, loo, n_write, out_group

    def graph(self, lanes=None):
        return spearman_sketch_pass(self.X, self.W, self.x_tables, self.u_tables, loo=self.loo, n_write=self.n_write,
                                    out_group=self.out_group, checkpoint=lanes)

    def key(self) -> dict:
        return {"stats": digest(self.sketch), "loo": self.loo is not None}


__all__ = [
    "CLASS_MEAN_RANKS", "LOO_BATCH", "LooSpec", "RankSketchPass", "rank_gram_block", "spearman_exact_block", "spearman_exact_local",
    "spearman_sketch_local", "spearman_sketch_pass",
]
