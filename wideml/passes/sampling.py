"""Every row's values at a fixed sample of features, in one pass (the rank estimator's sketch of each row).

The sample is a sorted array of global feature indices; each feature chunk
contributes the columns that fall in it, and chunks holding none of them are
not read.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np

from wideml.passes.blocks import check_finite, feature_stripes, materialise
from wideml.passes.reduce import Sums, tree_reduce


def columns_at(block: np.ndarray, offset: int, feature_idx: np.ndarray) -> np.ndarray:
    """The columns of a feature chunk at the sampled features it holds.

    Parameters
    ----------
    block : ndarray of shape (n_samples, p_j)
        Feature chunk starting at global feature ``offset``.
    offset : int
    feature_idx : ndarray of int64, sorted
        Global indices of the sampled features (any number of them outside the chunk).

    Returns
    -------
    ndarray of shape (n_samples, m_j), float64
        The chunk's values at its m_j sampled features, in index order.
    """
    lo, hi = np.searchsorted(feature_idx, [offset, offset + block.shape[1]])
    return np.asarray(block)[:, feature_idx[lo:hi] - offset].astype(np.float64)


def _sample_chunk(stripe, offset, feature_idx):
    offset = int(offset)
    block, _ = materialise(stripe)
    vals = columns_at(block, offset, feature_idx)
    if not np.all(np.isfinite(vals)):
        check_finite(block, offset)
    return Sums({"pieces": [(offset, vals)]})


def _in_feature_order(total: Sums) -> np.ndarray:
    return np.concatenate([vals for _, vals in sorted(total["pieces"], key=lambda piece: piece[0])], axis=1)


def sampled_features_pass(X: da.Array, feature_idx: np.ndarray):
    """Every row's values at the sampled features, in **one pass** over X (chunks without a sampled feature are not read).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    feature_idx : ndarray of int, sorted
        Global indices of the m sampled features.

    Returns
    -------
    dask.delayed.Delayed
        Computes to an ndarray of shape (n_samples, m), float64.

    Raises
    ------
    wideml.passes.blocks.NonFiniteError
        (when computed) if a sampled value is NaN or inf.
    """
    stripes, offsets = feature_stripes(X)
    idx = np.asarray(feature_idx, dtype=np.int64)
    ends = offsets + np.asarray(X.chunks[1])
    task = dask.delayed(_sample_chunk, pure=True)
    parts = [task(s, int(o), idx) for s, o, e in zip(stripes, offsets, ends) if np.searchsorted(idx, o) < np.searchsorted(idx, e)]
    if not parts:
        return dask.delayed(np.zeros)((X.shape[0], 0))
    return dask.delayed(_in_feature_order, pure=True)(tree_reduce(parts))


def sampled_features_local(X: np.ndarray, feature_idx: np.ndarray) -> np.ndarray:
    """:func:`sampled_features_pass` for an in-memory X of shape (n_samples, n_features) (no graph); (n_samples, m)."""
    return _in_feature_order(_sample_chunk(X, 0, np.asarray(feature_idx, dtype=np.int64)))


__all__ = ["columns_at", "sampled_features_local", "sampled_features_pass"]
