"""Kernel-trick KNCA and KDNE (digest §1c): test oracles for the KPCA trick, not for production.

KNCA: with A = U Phi^T (U is d x n), distances are (k_i - k_j)^T U^T U (k_i - k_j)
and the feature-space gradient is V Phi^T with V = -2 U K L_C (Proposition 2);
descent is U <- U - step * V.

KDNE (Proposition 4): U* = argmin_{U (K + eps I) U^T = I} tr(U K (D - W) K U^T), a
generalised eigenproblem whose smallest eigenvectors are the rows of U.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from wideml.algebra.metric.nca import nca_coefficients, nca_probabilities


def knca_loss_grad(U: np.ndarray, K: np.ndarray, codes: np.ndarray) -> tuple[float, np.ndarray]:
    """KNCA objective and V (d x n) such that the feature-space gradient is V Phi^T.

    Parameters
    ----------
    U : ndarray of shape (d, n)
    K : ndarray of shape (n, n)
        Training kernel.
    codes : ndarray of int, shape (n,)
    """
    P = nca_probabilities(K @ U.T)
    f, LC = nca_coefficients(P, codes)
    return f, -2.0 * U @ K @ LC


def knca_gradient_descent(U0: np.ndarray, K: np.ndarray, codes: np.ndarray, step: float, n_iter: int) -> np.ndarray:
    """Plain gradient descent U <- U - step V (the paper's Eq. 16 with the sign fixed)."""
    U = np.array(U0, dtype=np.float64)
    for _ in range(n_iter):
        _, V = knca_loss_grad(U, K, codes)
        U = U - step * V
    return U


def kdne(K: np.ndarray, W: np.ndarray, n_components: int, eps: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    """Kernel-trick DNE: rows of U (d x n) and the d smallest generalised eigenvalues.

    Solves K (D - W) K u = lambda (K + eps * lambda_max(K) I) u.
    """
    Lap = np.diag(W.sum(axis=1)) - W
    lhs = K @ Lap @ K
    lhs = (lhs + lhs.T) / 2
    rhs = K + eps * float(np.max(np.abs(np.linalg.eigvalsh(K)))) * np.eye(K.shape[0])
    vals, vecs = scipy.linalg.eigh(lhs, rhs, check_finite=False)
    return vecs[:, :n_components].T, vals[:n_components]
