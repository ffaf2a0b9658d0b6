"""One pass over new data and a reference (training store or landmarks) together: the m x n cross-Gram.

Kernel methods predict new samples from their kernel values against the
training samples, k(x', x_i), and every kernel here is a function of x' . x_i
and ||x' - x_i||^2. Both arrays are chunked along features; the new array is
re-split to the reference's feature chunks (dask splits each stored chunk of
the new array once, so every chunk of either array is read once), and each
aligned pair of stripes contributes, in float64:

- C_j = (X'_j - 1 m_j^T)(R_j - 1 m_j^T)^T with m_j the reference stripe's
  feature means (centring both by the same vector keeps distances exact and
  avoids cancellation when features carry large offsets);
- r'_j = (X'_j - 1 m_j^T) m_j, r_j = (R_j - 1 m_j^T) m_j and s_j = m_j^T m_j,
  so that the raw products X' R^T = C + r' 1^T + 1 r^T + s are recoverable;
- the squared row norms of both centred stripes.

With ``ref_rows`` only those rows of the reference enter (landmarks for a
Nystrom approximation: the cross-Gram is then m x n_landmarks, and the whole
fit never forms an n x n matrix). Partial sums are added in place into a few sequential lanes' accumulators
(:func:`wideml.passes.reduce.fold_in_lanes`), so memory does not grow with p.

:func:`raw_cross_gram_pass` is the uncentred form (raw products X' R^T and squared row norms, summed in a
tree), which the encoder's full-kernel form uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import dask
import dask.array as da
import numpy as np

from wideml.algebra.kernels import cross_sq_distances
from wideml.exceptions import WidemlError
from wideml.passes.blocks import check_finite, feature_stripes, materialise
from wideml.passes.reduce import Sums, fold_in_lanes, sum_chunk_results
from wideml.passes.spec import Pass, digest


@dataclass
class CrossStats:
    """Products of m new rows with n_ref reference rows from one pass (all float64).

    Attributes
    ----------
    C : ndarray of shape (m, n_ref)
        Products of the rows after subtracting the reference's feature means.
    r_new : ndarray of shape (m,)
    r_ref : ndarray of shape (n_ref,)
    s : float
    sq_new : ndarray of shape (m,)
        Squared norms of the centred new rows.
    sq_ref : ndarray of shape (n_ref,)
        Squared norms of the centred reference rows.
    n_features : int
    """

    C: np.ndarray
    r_new: np.ndarray
    r_ref: np.ndarray
    s: float
    sq_new: np.ndarray
    sq_ref: np.ndarray
    n_features: int

    def raw_cross(self) -> np.ndarray:
        """X' R^T, the raw inner products, shape (m, n_ref)."""
        return self.C + self.r_new[:, None] + self.r_ref[None, :] + self.s

    def sq_distances(self) -> np.ndarray:
        """||x'_a - r_i||^2, shape (m, n_ref), clamped at 0."""
        return cross_sq_distances(self.C, self.sq_new, self.sq_ref)


def _pair_stats(new_block, ref_block, offset, ref_rows):
    new_block = np.asarray(new_block)
    ref_block = np.asarray(ref_block)
    check_finite(new_block, int(offset))
    check_finite(ref_block, int(offset))
    ref = ref_block.astype(np.float64, copy=False)
    if ref_rows is not None:
        ref = ref[ref_rows]
    m = ref.mean(axis=0)
    rc = ref - m
    xc = new_block.astype(np.float64, copy=False) - m
    return Sums({"C": xc @ rc.T, "r_new": xc @ m, "r_ref": rc @ m, "s": float(m @ m), "sq_new": np.einsum("ij,ij->i", xc, xc),
                 "sq_ref": np.einsum("ij,ij->i", rc, rc)})


def _self_pair_stats(stripe, offset, ref_rows):
    """:func:`_pair_stats` of a stripe with itself, read once by this task (results are fresh arrays, not the read buffer)."""
    block, _ = materialise(stripe)
    return _pair_stats(block, block, offset, ref_rows)


def _finish(total: Sums, n_features):
    sums = total.finish()
    return CrossStats(C=sums["C"], r_new=sums["r_new"], r_ref=sums["r_ref"], s=float(sums["s"]), sq_new=sums["sq_new"],
                      sq_ref=sums["sq_ref"], n_features=n_features)


def cross_gram_pass(X_new: da.Array, X_ref: da.Array, ref_rows: np.ndarray | None = None, checkpoint=None):
    """Build the lazy one-pass cross-Gram graph (nothing is computed here).

    Parameters
    ----------
    X_new : dask.array.Array of shape (m, p)
        New samples (e.g. a test store), chunked along features.
    X_ref : dask.array.Array of shape (n, p)
        Reference samples (the training store), chunked along features. If
        ``X_new`` is the same dask array (same graph keys), it is read once.
    ref_rows : ndarray of int, optional
        Use only these reference rows (landmarks, Nystrom); default all.
    checkpoint : wideml.runtime.checkpoint.PassCheckpoint, optional
        Makes the pass resumable: lanes are saved at the checkpoint interval
        and stripes a saved lane holds are not read again.

    Returns
    -------
    dask.delayed.Delayed
        Computes to :class:`CrossStats`. Computing it reads every chunk of
        ``X_new`` and ``X_ref`` once: **one pass** over each.

    Raises
    ------
    WidemlError
        If the two arrays do not have the same number of features.
    """
    if X_new.ndim != 2 or X_ref.ndim != 2:
        raise WidemlError(f"cross-Gram inputs must be 2-D, got shapes {X_new.shape} and {X_ref.shape}; reshape them.")
    if X_new.shape[1] != X_ref.shape[1]:
        raise WidemlError(
            f"the new data have {X_new.shape[1]} features but the training data have {X_ref.shape[1]}; "
            "give new samples with the same features, in the same order."
        )
    if X_ref.numblocks[0] > 1:
        X_ref = X_ref.rechunk({0: -1})
    if X_new.numblocks[0] > 1 or X_new.chunks[1] != X_ref.chunks[1]:
        X_new = X_new.rechunk({0: -1, 1: X_ref.chunks[1]})
    if ref_rows is not None:
        ref_rows = np.asarray(ref_rows, dtype=np.int64)
        if ref_rows.size == 0 or ref_rows.min() < 0 or ref_rows.max() >= X_ref.shape[0]:
            raise WidemlError(f"landmark indices must lie in 0..{X_ref.shape[0] - 1} and not be empty; pass valid row indices.")
    if checkpoint is not None and X_new.name == X_ref.name:  # resumable self-products: each lane step reads its own chunk
        stripes, offsets = feature_stripes(X_ref, direct=True)
        args = [(b, int(o), ref_rows) for b, o in zip(stripes, offsets)]
        total = fold_in_lanes(_self_pair_stats, args, checkpoint=checkpoint)
        return dask.delayed(_finish, pure=True)(total, int(X_ref.shape[1]))
    new_stripes, offsets = feature_stripes(X_new)
    ref_stripes, _ = feature_stripes(X_ref)
    args = [(a, b, int(o), ref_rows) for a, b, o in zip(new_stripes, ref_stripes, offsets)]
    total = fold_in_lanes(_pair_stats, args, checkpoint=checkpoint)
    return dask.delayed(_finish, pure=True)(total, int(X_ref.shape[1]))


def _raw_pair_products(new_block, ref_block, offset):
    a = np.asarray(new_block, dtype=np.float64)
    b = np.asarray(ref_block, dtype=np.float64)
    check_finite(a, int(offset))
    return Sums({"gram": a @ b.T, "a_sq": np.square(a).sum(axis=1), "b_sq": np.square(b).sum(axis=1)})


def raw_cross_gram_pass(X_new: da.Array, X_ref: da.Array):
    """The uncentred cross-products X_new X_ref^T and both sets' squared row norms, in **one pass** over each.

    Unlike :func:`cross_gram_pass`, nothing is centred: each aligned pair of
    stripes adds its raw float64 products, and the partial sums are reduced in
    a bounded tree (:func:`~wideml.passes.reduce.tree_reduce`). The encoder's
    full-kernel form uses it.

    Parameters
    ----------
    X_new : dask.array.Array of shape (m, p)
    X_ref : dask.array.Array of shape (n, p)
        Re-chunked to ``X_new``'s feature chunks when they differ.

    Returns
    -------
    dask.delayed.Delayed
        Computes to a dict with ``gram`` (m x n), ``a_sq`` (m) and ``b_sq`` (n).
    """
    a_stripes, offsets = feature_stripes(X_new)
    b_stripes, _ = feature_stripes(X_ref.rechunk((X_ref.shape[0], X_new.chunks[1])))
    total = sum_chunk_results(_raw_pair_products, [(a, b, int(o)) for a, b, o in zip(a_stripes, b_stripes, offsets)])
    return dask.delayed(Sums.finish, pure=True)(total)


class CrossGramPass(Pass):
    """The landmark cross-Gram of the training X with itself as the fit runner runs it (:func:`cross_gram_pass`; **one pass**).

    Its result is a :class:`CrossStats`; its checkpoint (``"cross"``, keyed by
    the landmarks) holds the lanes' sums and then that result.
    """

    kind = "cross"

    def __init__(self, X: da.Array, ref_rows: np.ndarray | None = None):
        super().__init__()
        self.X, self.ref_rows = X, ref_rows

    def graph(self, lanes=None):
        return cross_gram_pass(self.X, self.X, ref_rows=self.ref_rows, checkpoint=lanes)

    def key(self) -> dict:
        return {"landmarks": None if self.ref_rows is None else digest(np.asarray(self.ref_rows))}

    def save(self, stats: CrossStats) -> tuple:
        return (stats.C, stats.r_new, stats.r_ref, float(stats.s), stats.sq_new, stats.sq_ref, int(stats.n_features))

    def restore(self, state: tuple) -> CrossStats:
        C, r_new, r_ref, s, sq_new, sq_ref, n_features = state
        return CrossStats(C=C, r_new=r_new, r_ref=r_ref, s=float(s), sq_new=sq_new, sq_ref=sq_ref, n_features=int(n_features))


__all__ = ["CrossGramPass", "CrossStats", "cross_gram_pass", "raw_cross_gram_pass"]
