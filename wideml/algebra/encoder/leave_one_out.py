"""Leave-one-out corrections of the encoder's training embedding (no access to X).

The corrected selection score ("loo_cross_entropy") embeds each training row
against its own class mean computed *without* that row. Each correction is a
closed form in the statistics the fit already has (n_c the row's class count):

- linear: x_i . u_c^(-i) = (n_c x_i . u_c - ||x_i||^2) / (n_c - 1);
- euclidean: ||x_i - u_c^(-i)|| = n_c / (n_c - 1) ||x_i - u_c||;
- spearman: the rank correlation with the leave-one-out mean, computed in the rank pass;
- full kernel (Z = A W): A(i, i) dropped from the own-class mean.

Rows of a single-sample class keep their value (there is no leave-one-out mean).
"""

from __future__ import annotations

import numpy as np

from wideml.algebra.encoder.kernels import KERNELS, AnchorStats, embed, euclidean_distance
from wideml.exceptions import WidemlError


def loo_counts(codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """n_c of each row's own class, as float (n,)."""
    return counts[codes].astype(np.float64)


def loo_linear(cross: np.ndarray, x_sq: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """X U^T with each training row's own class mean replaced by its leave-one-out mean.

    x_i . u_c^(-i) = (n_c x_i . u_c - ||x_i||^2) / (n_c - 1). Rows of a
    single-sample class keep their value (there is no leave-one-out mean).
    """
    out = cross.copy()
    rows = np.arange(len(codes))
    nc = loo_counts(codes, counts)
    ok = nc > 1
    out[rows[ok], codes[ok]] = (nc[ok] * cross[rows[ok], codes[ok]] - x_sq[ok]) / (nc[ok] - 1)
    return out


def loo_distance(D: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Distances with the own-class mean left out: ||x_i - u_c^(-i)|| = n_c / (n_c - 1) ||x_i - u_c||."""
    out = D.copy()
    rows = np.arange(len(codes))
    nc = loo_counts(codes, counts)
    ok = nc > 1
    out[rows[ok], codes[ok]] *= nc[ok] / (nc[ok] - 1)
    return out


def loo_embed(kernel: str, stats: AnchorStats, codes: np.ndarray, counts: np.ndarray, offset: float,
              loo_own: np.ndarray | None = None) -> np.ndarray:
    """Leave-one-out training embedding: each row's own-class column uses the mean of the *other* rows of its class.

    Parameters
    ----------
    kernel : str
    stats : AnchorStats
        Statistics of the training rows (in the order of ``codes``).
    codes : ndarray of int, shape (n_train,)
    counts : ndarray of int, shape (K,)
        Training class counts.
    offset : float
        The euclidean d_max of the ordinary embedding.
    loo_own : ndarray of shape (n_train,), optional
        For "spearman": the rank correlation of each row with its leave-one-out
        class mean (computed in the rank pass).

    Returns
    -------
    ndarray of shape (n_train, K)
    """
    if kernel == "linear":
        return loo_linear(stats.cross, stats.x_sq, codes, counts)
    if kernel == "euclidean":
        D = euclidean_distance(stats.x_sq, stats.cross, stats.u_sq)
        return offset - loo_distance(D, codes, counts)
    if kernel == "spearman":
        Z, _ = embed("spearman", stats)
        Z = Z.copy()
        rows = np.arange(len(codes))
        ok = loo_counts(codes, counts) > 1
        Z[rows[ok], codes[ok]] = loo_own[ok]
        return Z
    raise WidemlError(f"unknown kernel {kernel!r}; valid kernels are {', '.join(KERNELS)}.")


def loo_full(Z: np.ndarray, A_diag: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Leave-one-out form of Z = A W on the training rows: drop A(i, i) from the own-class mean.

    The linear case's correction with the kernel's diagonal in place of the
    squared norms (:func:`loo_linear`: A(i, i) = ||x_i||^2 for the inner product).
    """
    return loo_linear(Z, A_diag, codes, counts)


__all__ = ["loo_counts", "loo_distance", "loo_embed", "loo_full", "loo_linear"]
