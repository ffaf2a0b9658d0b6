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
        Neighbour indices by increasing distance (ties: lower index first).
    """
    codes = np.asarray(codes)
    n = len(codes)
    counts = np.bincount(codes)
    if k < 1:
        raise WidemlError(f"n_neighbors must be at least 1, got {k}; pass a positive integer.")
    if same:
        smallest = int(np.min(counts[counts > 0]))
        if k > smallest - 1:
            raise WidemlError(
                f"n_neighbors={k} target neighbours need at least {k + 1} samples per class, but the smallest class has "
                f"{smallest}; lower n_neighbors or give more samples."
            )
    else:
        fewest_other = int(np.min(n - counts[codes]))
        if k > fewest_other:
            raise WidemlError(f"n_neighbors={k} other-class neighbours asked, but some sample has only {fewest_other}; lower n_neighbors.")
    mask = codes[:, None] == codes[None, :]
    if same:
        allowed = mask & ~np.eye(n, dtype=bool)
    else:
        allowed = ~mask
    M = np.where(allowed, D2, np.inf)
    idx = np.argsort(M, axis=1, kind="stable")[:, :k]
    return idx
