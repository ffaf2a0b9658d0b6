"""Small-matrix algebra of the randomized (sketched) solver.

The passes deliver n x l matrices Y = M Omega and Z = M M^T Q for the centred
operator M (n x p); everything here is n x l or l x l.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from wideml.algebra.centering import class_center_rows, class_weights, pool_center_rows
from wideml.algebra.eigen import numerical_rank_tol, top_eigh
from wideml.algebra.lol import Projection, class_order
from wideml.exceptions import WidemlError


def orthonormal_basis(Y: np.ndarray) -> np.ndarray:
    """Orthonormal basis (n x l) of the columns of Y by thin QR."""
    Q, _ = scipy.linalg.qr(Y, mode="economic", check_finite=False)
    return Q


def ritz_rotation(T: np.ndarray, k: int, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k eigenpairs of the Rayleigh-Ritz matrix T = Q^T M M^T Q (l x l).

    Returns
    -------
    values : ndarray of shape (k,)
        Approximate squared singular values of M, decreasing.
    W : ndarray of shape (l, k)
        Rotation: Q W are the approximate left singular vectors of M, and
        M^T Q W / sqrt(values) the feature-space directions.

    Raises
    ------
    WidemlError
        If fewer than k of the values are numerically non-zero.
    """
    vals, W = top_eigh((T + T.T) / 2, k)
    tol = numerical_rank_tol(vals if vals.size else np.zeros(1), n_samples)
    if np.any(vals <= tol):
        raise WidemlError(
            f"asked for {k} directions but the sketch found only {int(np.sum(vals > tol))} non-zero ones; lower n_components."
        )
    return vals, W


def ritz_directions(Q: np.ndarray, Z: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k Ritz pairs of M M^T in span(Q), from Z = M M^T Q.

    Returns
    -------
    values : ndarray of shape (k,)
        Approximate squared singular values of M, decreasing.
    U : ndarray of shape (n, k)
        Approximate left singular vectors of M (so M^T U / sqrt(values) are
        the feature-space directions).
    """
    vals, W = ritz_rotation(Q.T @ Z, k, Q.shape[0])
    return vals, Q @ W


def centroid_differences(codes: np.ndarray, n_classes: int, centroid_gram: np.ndarray) -> np.ndarray:
    """E (K x (K-1)) with columns (e_(1) - e_(i)) / ||mu_(1) - mu_(i)||, from the centroids' K x K Gram."""
    order = class_order(codes, n_classes)
    I = np.eye(n_classes)
    E = I[:, [order[0]]] - I[:, order[1:]]
    norms = np.sqrt(np.maximum(np.einsum("ij,ij->j", E, centroid_gram @ E), 0))
    return E / np.where(norms > 0, norms, 1.0)


def randomized_projection(
    codes: np.ndarray,
    n_classes: int,
    n_components: int,
    Q: np.ndarray | None,
    Z: np.ndarray | None,
    *,
    centring: str,
    first_moment: str | None,
    centroid_gram: np.ndarray | None = None,
) -> Projection:
    """LOL / rrLDA / PCA projection from a converged sketch.

    Parameters
    ----------
    codes : ndarray of int, shape (n_samples,)
    n_classes : int
    n_components : int
    Q, Z : ndarray of shape (n_samples, l), or None when no eigen columns are needed
    centring : {"class", "pooled"}
        The centring of the sketched operator (class for LOL/rrLDA, pooled for PCA).
    first_moment : {"mean", "median", None}
        Centroid differences to put first (None for PCA / rrLDA).
    centroid_gram : ndarray of shape (K, K), optional
        Gram of the (mean or median) centroids, for unit-normalising the differences.
    """
    n = len(codes)
    n_deltas = min(n_components, n_classes - 1) if first_moment else 0
    n_eigen = n_components - n_deltas
    B = np.zeros((n, 0))
    Dm = np.zeros((n_classes, n_components))
    if n_deltas:
        E = centroid_differences(codes, n_classes, centroid_gram)[:, :n_deltas]
        if first_moment == "median":
            Dm[:, :n_deltas] = E
            B = np.zeros((n, n_deltas))
        else:
            B = class_weights(codes, n_classes) @ E
    vals = np.zeros(0)
    if n_eigen:
        vals, U = ritz_directions(Q, Z, n_eigen)
        center = class_center_rows(U, codes, n_classes) if centring == "class" else pool_center_rows(U)
        B = np.hstack([B, center / np.sqrt(vals)])
    return Projection(B, Dm, ["delta"] * n_deltas + ["eigen"] * n_eigen, vals)


def randomized_coefficients(
    codes: np.ndarray,
    n_classes: int,
    n_components: int,
    T: np.ndarray,
    *,
    first_moment: str | None,
    centroid_gram: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """Loadings in the form A = [C^T E, Z Ws] from the sketch's l x l Rayleigh-Ritz matrix.

    Used when the final pass kept Z = M^T Q (p x l): the eigen columns are
    Z W / sqrt(values) (right singular vectors of M), the first columns the
    unit-normalised centroid differences C^T E.

    Parameters
    ----------
    codes : ndarray of int, shape (n_samples,)
    n_classes, n_components : int
    T : ndarray of shape (l, l)
        Z^T Z = Q^T M M^T Q.
    first_moment : {"mean", "median", None}
    centroid_gram : ndarray of shape (K, K), optional
        Gram of the centroids (any common shift), for unit-normalising the differences.

    Returns
    -------
    E : ndarray of shape (n_classes, n_delta)
    Ws : ndarray of shape (l, n_eigen)
    kinds : list of str
    values : ndarray of shape (n_eigen,)
    """
    n_deltas = min(n_components, n_classes - 1) if first_moment else 0
    n_eigen = n_components - n_deltas
    E = np.zeros((n_classes, 0))
    if n_deltas:
        E = centroid_differences(codes, n_classes, centroid_gram)[:, :n_deltas]
    vals, Ws = np.zeros(0), np.zeros((T.shape[0], 0))
    if n_eigen:
        vals, W = ritz_rotation(T, n_eigen, len(codes))
        Ws = W / np.sqrt(vals)
    return E, Ws, ["delta"] * n_deltas + ["eigen"] * n_eigen, vals
