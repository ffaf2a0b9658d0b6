"""Kernel PCA coordinates for the KPCA trick (digest §1b), on in-memory kernel matrices.

With K the n x n training kernel, H = I - 11^T/n and K~ = H K H = V L V^T
(eigenvalues decreasing, only the r numerically non-zero ones kept):

- training coordinates  F = V L^{1/2}                       (n x r)
- a new point with kernel row k' (against the n training points) maps to
  phi' = L^{-1/2} V^T H (k' - K 1 / n)                       (r,)
  which reproduces F exactly when k' is a training row of K.

Proposition 3: with all non-zero components kept, ||F_i - F_j||^2 =
k(x_i, x_i) + k(x_j, x_j) - 2 k(x_i, x_j) (the feature-space distance).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse.linalg as sla

from wideml.exceptions import WidemlError

#: Relative eigenvalue tolerance: components with lambda <= tol * lambda_max are dropped.
DEFAULT_TOL = 1e-10


class NotPSDWarning(UserWarning):
    """A kernel matrix had negative eigenvalues beyond round-off; they were clipped to zero."""


def center_kernel(K: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Double-centre a kernel matrix, H K H.

    Returns
    -------
    Kc : ndarray of shape (n, n)
    col_means : ndarray of shape (n,)
        K 1 / n (needed to centre test rows).
    grand_mean : float
        1^T K 1 / n^2.
    """
    col_means = K.mean(axis=0)
    row_means = K.mean(axis=1)
    grand = float(col_means.mean())
    Kc = K - col_means[None, :] - row_means[:, None] + grand
    return (Kc + Kc.T) / 2, (col_means + row_means) / 2, grand


def center_cross_kernel(Kx: np.ndarray, col_means: np.ndarray, grand_mean: float) -> np.ndarray:
    """Centre test kernel rows (m x n) with the training statistics: H(k' - K1/n) per row."""
    return Kx - col_means[None, :] - Kx.mean(axis=1, keepdims=True) + grand_mean


def roundoff_tol(eigvals: np.ndarray, n: int, kernel_scale: float = 0.0) -> float:
    """Magnitude below which a negative eigenvalue of a centred n x n kernel counts as round-off.

    Centring subtracts row and column means of K, so its round-off scales with
    ||K|| (bounded by n max|K_ij|, ``kernel_scale``), not with the centred
    spectrum, which can be far smaller (e.g. a wide RBF: K close to 1 1^T).
    """
    top = float(np.max(np.abs(eigvals))) if eigvals.size else 0.0
    return max(n, 1) * np.finfo(np.float64).eps * max(top, kernel_scale) * 100


@dataclass
class KPCAFit:
    """A fitted kernel PCA (all n-sized).

    Attributes
    ----------
    eigenvalues : ndarray of shape (r,)
        Kept eigenvalues of the centred kernel, decreasing, all > 0.
    vectors : ndarray of shape (n, r)
        Their orthonormal eigenvectors (sign: largest-magnitude entry positive).
    col_means : ndarray of shape (n,)
        Column means of the training kernel, K 1 / n.
    grand_mean : float
    n_nonzero : int
        Number of eigenvalues above the tolerance (r <= n_nonzero).
    clipped : float
        Most negative eigenvalue clipped to zero (0.0 if none beyond round-off).
    """

    eigenvalues: np.ndarray
    vectors: np.ndarray
    col_means: np.ndarray
    grand_mean: float
    n_nonzero: int
    clipped: float = 0.0

    @property
    def n_components(self) -> int:
        return int(self.eigenvalues.shape[0])

    def train_coordinates(self) -> np.ndarray:
        """F = V L^{1/2}, shape (n, r)."""
        return self.vectors * np.sqrt(self.eigenvalues)

    def projector(self) -> np.ndarray:
        """V L^{-1/2}, shape (n, r): centred kernel rows times this are the coordinates."""
        return self.vectors / np.sqrt(self.eigenvalues)

    def transform(self, Kx: np.ndarray) -> np.ndarray:
        """Coordinates of new points from their kernel rows against the training set.

        Parameters
        ----------
        Kx : ndarray of shape (m, n)
            k(x'_a, x_i) for m new points and the n training points.

        Returns
        -------
        ndarray of shape (m, r)
        """
        Kx = np.asarray(Kx, dtype=np.float64)
        if Kx.ndim != 2 or Kx.shape[1] != self.vectors.shape[0]:
            raise WidemlError(
                f"kernel rows have shape {Kx.shape}, but the KPCA was fitted on {self.vectors.shape[0]} samples; "
                "give one column per training sample."
            )
        return center_cross_kernel(Kx, self.col_means, self.grand_mean) @ self.projector()


def _smallest_eigenvalue(S: np.ndarray) -> float:
    """Smallest eigenvalue of a symmetric matrix by Lanczos (a full solve would cost a second O(n^3)).

    Only its sign and size matter (the PSD check): a clearly negative eigenvalue
    is well separated and converges fast; when Lanczos stalls near the cluster
    at zero, its best Ritz value is an upper bound that is close enough.
    """

    v0 = np.ones(S.shape[0]) + np.linspace(0.0, 1.0, S.shape[0])  # deterministic start
    try:
        vals = sla.eigsh(S, k=1, which="SA", v0=v0, tol=1e-6, maxiter=300, return_eigenvectors=False)
    except sla.ArpackNoConvergence as exc:
        vals = exc.eigenvalues if len(exc.eigenvalues) else np.zeros(1)
    return float(np.min(vals))


def fit_kpca(K: np.ndarray, n_components: int | None = None, *, tol: float = DEFAULT_TOL, at_most: bool = False) -> KPCAFit:
    """Kernel PCA of a training kernel matrix.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Symmetric kernel matrix (not centred).
    n_components : int or None
        Keep the top r components; None keeps every component with a non-zero
        eigenvalue (the lossless KPCA trick; Proposition 3 holds exactly).
    tol : float
        Eigenvalues <= tol * lambda_max count as zero.
    at_most : bool
        Treat ``n_components`` as an upper bound (keep fewer if fewer are
        non-zero) instead of raising; used when scanning a kernel grid, where
        extreme widths leave few numerically non-zero components.

    Returns
    -------
    KPCAFit

    Raises
    ------
    WidemlError
        If K is not square and finite, or n_components exceeds the number of
        non-zero eigenvalues.

    Warns
    -----
    NotPSDWarning
        If the centred kernel has negative eigenvalues beyond round-off (they are
        clipped to zero, i.e. dropped; the message says by how much).
    """
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise WidemlError(f"the kernel matrix must be square, got shape {K.shape}; pass the n x n training kernel.")
    if not np.isfinite(K).all():
        raise WidemlError("the kernel matrix holds NaN or inf; check the kernel parameters (e.g. a huge polynomial degree) and the data.")
    asym = float(np.max(np.abs(K - K.T))) if K.size else 0.0
    scale = float(np.max(np.abs(K))) if K.size else 0.0
    if asym > 1e-8 * max(scale, 1e-300):
        raise WidemlError(f"the kernel matrix is not symmetric (largest |K - K^T| = {asym:.3g}); pass a symmetric kernel matrix.")
    n = K.shape[0]
    if n < 2:
        raise WidemlError(f"kernel PCA needs at least 2 samples, got {n}; give more training samples.")
    Kc, col_means, grand = center_kernel(K)
    if n_components is not None and 1 <= int(n_components) < n // 3:
        # top r only (much cheaper for large n), plus the smallest eigenvalue for the PSD check
        r0 = int(n_components)
        vals, vecs = scipy.linalg.eigh(Kc, subset_by_index=[n - r0, n - 1], check_finite=False)
        low = _smallest_eigenvalue(Kc)
        vals = np.concatenate([vals[::-1], [low]])
        vecs = np.hstack([vecs[:, ::-1], np.zeros((n, 1))])
    else:
        vals, vecs = scipy.linalg.eigh(Kc, check_finite=False)
        vals, vecs = vals[::-1], vecs[:, ::-1]
    top = max(float(vals[0]), 0.0)
    clipped = 0.0
    noise = roundoff_tol(vals, n, n * float(np.max(np.abs(K))))
    if vals[-1] < -noise:
        clipped = float(vals[-1])
        n_neg = int(np.sum(vals < -noise))
        rel = abs(clipped) / top if top > 0 else np.inf
        warnings.warn(
            f"the centred kernel matrix is not positive semi-definite: {n_neg} eigenvalue(s) below zero beyond round-off, "
            f"the most negative {clipped:.3g} ({rel:.2g} of the largest, {top:.3g}); they were clipped to zero — "
            "check that the kernel is a valid (PSD) kernel.",
            NotPSDWarning,
            stacklevel=2,
        )
    keep = vals > tol * top if top > 0 else np.zeros_like(vals, dtype=bool)
    n_nonzero = int(np.sum(keep))  # with the top-r solve: how many of the top r are non-zero
    if n_nonzero == 0:
        raise WidemlError("the centred kernel matrix is zero (every sample is the same point in feature space); check the data and kernel width.")
    if n_components is None:
        r = n_nonzero
    else:
        r = int(n_components)
        if r < 1:
            raise WidemlError(f"n_components must be at least 1, got {n_components}; pass a positive integer or None.")
        if r > n_nonzero and at_most:
            r = n_nonzero
        elif r > n_nonzero:
            raise WidemlError(
                f"n_components={r} is more than the {n_nonzero} non-zero eigenvalues of the centred kernel "
                f"(n = {n} samples, so at most n - 1 = {n - 1}); lower n_components or pass None for all of them."
            )
    vals, vecs = vals[:r], vecs[:, :r]
    idx = np.argmax(np.abs(vecs), axis=0)
    signs = np.sign(vecs[idx, np.arange(r)])
    signs[signs == 0] = 1
    return KPCAFit(eigenvalues=vals.copy(), vectors=vecs * signs, col_means=col_means, grand_mean=grand,
                   n_nonzero=n_nonzero, clipped=clipped)


__all__ = ["DEFAULT_TOL", "KPCAFit", "NotPSDWarning", "center_cross_kernel", "center_kernel", "fit_kpca", "roundoff_tol"]
