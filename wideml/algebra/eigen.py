"""Symmetric eigensolves of small (n x n) matrices, top-k, with rank checks."""

from __future__ import annotations

import numpy as np
import scipy.linalg


def numerical_rank_tol(eigvals: np.ndarray, size: int) -> float:
    """Eigenvalues below this are treated as zero (LAPACK-style: size * eps * largest)."""
    top = float(np.max(np.abs(eigvals))) if eigvals.size else 0.0
    return max(size, 1) * np.finfo(np.float64).eps * top * 10


def top_eigh(S: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Largest ``k`` eigenpairs of a symmetric matrix, in decreasing order.

    Parameters
    ----------
    S : ndarray of shape (m, m)
    k : int, 0 <= k <= m

    Returns
    -------
    values : ndarray of shape (k,)
    vectors : ndarray of shape (m, k)
        Orthonormal; signs fixed so the largest-magnitude entry of each vector is positive.
    """
    m = S.shape[0]
    k = int(min(k, m))
    if k <= 0:
        return np.zeros(0), np.zeros((m, 0))
    if k < m // 2:
        vals, vecs = scipy.linalg.eigh(S, subset_by_index=[m - k, m - 1], check_finite=False)
    else:
        vals, vecs = scipy.linalg.eigh(S, check_finite=False)
        vals, vecs = vals[m - k :], vecs[:, m - k :]
    vals, vecs = vals[::-1], vecs[:, ::-1]
    idx = np.argmax(np.abs(vecs), axis=0)
    signs = np.sign(vecs[idx, np.arange(k)])
    signs[signs == 0] = 1
    return vals, vecs * signs
