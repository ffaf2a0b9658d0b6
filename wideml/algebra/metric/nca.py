"""The NCA objective (Goldberger et al.) and its gradient, in matrix form (digest §1c).

f(A) = - sum_i sum_{j: y_j = y_i} p_ij,  p_ij = softmax_{j != i}(-||A x_i - A x_j||^2).
With C_ij = p_i p_ij - [y_i = y_j] p_ij and L_C = diag(C 1) + diag(C^T 1) - C - C^T,
df/dA = -2 A X^T L_C X (rows of X are samples).
"""

from __future__ import annotations

import numpy as np

from wideml.algebra.metric.neighbors import pairwise_sq_dist


def nca_probabilities(Z: np.ndarray) -> np.ndarray:
    """p_ij (n x n, zero diagonal) for embedded points Z (n x d)."""
    D2 = pairwise_sq_dist(Z)
    np.fill_diagonal(D2, np.inf)
    logits = -D2
    logits -= logits.max(axis=1, keepdims=True)
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    return P


def nca_coefficients(P: np.ndarray, codes: np.ndarray) -> tuple[float, np.ndarray]:
    """Objective value f and the Laplacian L_C (n x n) such that df/dA = -2 A X^T L_C X."""
    same = codes[:, None] == codes[None, :]
    Psame = np.where(same, P, 0.0)
    p_i = Psame.sum(axis=1)
    C = p_i[:, None] * P - Psame
    LC = np.diag(C.sum(axis=1) + C.sum(axis=0)) - C - C.T
    return -float(p_i.sum()), LC


def nca_loss_grad(A: np.ndarray, X: np.ndarray, codes: np.ndarray) -> tuple[float, np.ndarray]:
    """NCA objective (to minimise) and its gradient with respect to A.

    Parameters
    ----------
    A : ndarray of shape (d, D)
    X : ndarray of shape (n, D)
    codes : ndarray of int, shape (n,)

    Returns
    -------
    f : float
    grad : ndarray of shape (d, D)
    """
    P = nca_probabilities(X @ A.T)
    f, LC = nca_coefficients(P, codes)
    return f, -2.0 * A @ (X.T @ LC @ X)
