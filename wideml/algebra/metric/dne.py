"""DNE (Zhang et al., ICML 2007): discriminant neighbourhood embedding (digest §2.3).

W_ij = +1 if j is among the k nearest same-class points of i or i among j's;
-1 likewise for the k nearest other-class points; 0 otherwise. The rows of A
are the eigenvectors of X^T (D - W) X (D = diag(W 1)) with the smallest
eigenvalues, A A^T = I; d defaults to the number of negative eigenvalues (the
DNE paper's "optimal dimensionality").
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from wideml.algebra.metric.neighbors import class_neighbors, pairwise_sq_dist
from wideml.exceptions import WidemlError


def dne_graph(D2: np.ndarray, codes: np.ndarray, k: int) -> np.ndarray:
    """The symmetric +-1 DNE adjacency (n x n) from squared distances (``or`` rule)."""
    n = len(codes)
    same = class_neighbors(D2, codes, k, same=True)
    other = class_neighbors(D2, codes, k, same=False)
    Wp = np.zeros((n, n))
    Wm = np.zeros((n, n))
    rows = np.repeat(np.arange(n), k)
    ok = same.ravel() >= 0  # -1 pads small classes
    Wp[rows[ok], same.ravel()[ok]] = 1.0
    ok = other.ravel() >= 0
    Wm[rows[ok], other.ravel()[ok]] = 1.0
    return np.maximum(Wp, Wp.T) - np.maximum(Wm, Wm.T)


def fit_dne(X: np.ndarray, codes: np.ndarray, *, n_neighbors: int = 3, n_components: int | None = None,
            W: np.ndarray | None = None, target_sq_dist: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Learn the DNE projection.

    Parameters
    ----------
    X : ndarray of shape (n, D)
    codes : ndarray of int, shape (n,)
    n_neighbors : int
        k for both the same-class and the other-class neighbourhoods.
    n_components : int or None
        d; None means the number of negative eigenvalues (at least 1).
    W : ndarray of shape (n, n), optional
        A precomputed +-1 graph.
    target_sq_dist : ndarray of shape (n, n), optional
        Distances to build the graph from (default: Euclidean on X).

    Returns
    -------
    A : ndarray of shape (d, D)
        Orthonormal rows.
    eigenvalues : ndarray of shape (D,)
        All eigenvalues of X^T (D - W) X, increasing.
    """
    X = np.asarray(X, dtype=np.float64)
    n, D = X.shape
    if W is None:
        D2 = pairwise_sq_dist(X) if target_sq_dist is None else np.asarray(target_sq_dist)
        W = dne_graph(D2, codes, n_neighbors)
    Lap = np.diag(W.sum(axis=1)) - W
    S = X.T @ Lap @ X
    S = (S + S.T) / 2
    vals, vecs = scipy.linalg.eigh(S, check_finite=False)
    if n_components is None:
        tol = max(D, 1) * np.finfo(np.float64).eps * float(np.max(np.abs(vals))) * 10
        d = max(1, int(np.sum(vals < -tol)))
    else:
        d = int(n_components)
        if not 1 <= d <= D:
            raise WidemlError(f"DNE n_components={n_components} must be between 1 and the input dimension {D}; lower it.")
    A = vecs[:, :d].T
    idx = np.argmax(np.abs(A), axis=1)
    signs = np.sign(A[np.arange(d), idx])
    signs[signs == 0] = 1
    return A * signs[:, None], vals
