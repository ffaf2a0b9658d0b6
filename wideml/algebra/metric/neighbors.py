"""Pairwise squared distances and same/different-class nearest neighbours."""

from __future__ import annotations

import numpy as np

from wideml.exceptions import WidemlError


def pairwise_sq_dist(Z: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between the rows of Z (n x d), shape (n, n), clamped at 0."""
    sq = np.einsum("ij,ij->i", Z, Z)
    D2 = sq[:, None] + sq[None, :] - 2.0 * (Z @ Z.T)
    np.maximum(D2, 0.0, out=D2)
    np.fill_diagonal(D2, 0.0)
    return D2


def class_neighbors(D2: np.ndarray, codes: np.ndarray, k: int, same: bool) -> np.ndarray:
    """The k nearest same-class (``same=True``) or other-class neighbours of every sample.

    Parameters
    ----------
    D2 : ndarray of shape (n, n)
        Squared distances.
    codes : ndarray of int, shape (n,)
    k : int
    same : bool

    Returns
    -------
    ndarray of int, shape (n, k)
        Neighbour indices by increasing distance (ties: lower index first);
        -1 pads the rows of samples with fewer than k candidates (small classes).
    """
    codes = np.asarray(codes)
    n = len(codes)
    if k < 1:
        raise WidemlError(f"n_neighbors must be at least 1, got {k}; pass a positive integer.")
    mask = codes[:, None] == codes[None, :]
    allowed = (mask & ~np.eye(n, dtype=bool)) if same else ~mask
    if not allowed.any():
        what = "same-class" if same else "other-class"
        raise WidemlError(f"no sample has a {what} neighbour (every class has one sample, or there is one class); give more labelled samples.")
    M = np.where(allowed, D2, np.inf)
    kk = min(k, n - 1)
    idx = np.argsort(M, axis=1, kind="stable")[:, :kk]
    idx = np.where(np.isfinite(np.take_along_axis(M, idx, axis=1)), idx, -1)
    if kk < k:
        idx = np.hstack([idx, np.full((n, k - kk), -1)])
    return idx
