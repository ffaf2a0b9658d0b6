"""Centring operators applied to n x n Gram matrices (never to X itself).

With Y the n x K one-hot labels, N = diag(n_k) and W = Y N^-1:
class-centring is C = I - W Y^T (C^T X subtracts from each sample its class
mean), applied on both sides of G as C^T G C; pooled centring is
C0 = I - 1 1^T / n. Both are O(n^2 K) here; no n x n operator is formed.
"""

from __future__ import annotations

import numpy as np


def one_hot(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """One-hot matrix Y of shape (n_samples, n_classes) from class codes 0..K-1."""
    Y = np.zeros((len(codes), n_classes))
    Y[np.arange(len(codes)), codes] = 1.0
    return Y


def class_weights(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """W = Y N^-1, shape (n_samples, n_classes): the class-mean operator (class means = W^T X)."""
    Y = one_hot(codes, n_classes)
    counts = Y.sum(axis=0)
    return Y / np.where(counts > 0, counts, 1.0)


def class_center_rows(M: np.ndarray, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """C^T M: subtract from every row of M (n x q) the mean of its class's rows."""
    W = class_weights(codes, n_classes)
    Y = one_hot(codes, n_classes)
    return M - Y @ (W.T @ M)


def class_center_gram(G: np.ndarray, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Gram of the class-centred data, C^T G C, shape (n, n)."""
    CG = class_center_rows(G, codes, n_classes)
    return class_center_rows(CG.T, codes, n_classes).T


def pool_center_rows(M: np.ndarray) -> np.ndarray:
    """C0 M: subtract the column means of M (n x q)."""
    return M - M.mean(axis=0, keepdims=True)


def pool_center_gram(G: np.ndarray) -> np.ndarray:
    """Gram of the pooled-mean-centred data, C0 G C0, shape (n, n)."""
    return pool_center_rows(pool_center_rows(G).T).T
