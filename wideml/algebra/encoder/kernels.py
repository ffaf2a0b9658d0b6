"""The encoder's kernels from additive statistics (no access to X).

Sample i is embedded as Z(i, k) = kernel(x_i, u_k), with u_k the mean of the
training samples of class k (U = W^T X, W = Y N^-1). Every kernel is a
function of a few *additive* statistics, each a sum over features, so a
streaming pass accumulates them chunk by chunk and this module finishes them:

- ``linear`` (the paper's inner product): Z = X U^T = sum_j X_j U_j^T.
- ``euclidean`` (distance-induced): D(i, k) = ||x_i - u_k|| from ||x_i||^2,
  ||u_k||^2 and X U^T; Z = d_max - D with d_max the largest training distance
  (a constant shift, irrelevant to LDA, stored so new data use the same one).
- ``spearman``: Pearson correlation between the row ranks of x_i and of u_k
  (average ranks for ties), from sum_j r_ij s_kj, the row sums and the row
  sums of squares of the ranks.

It also holds the full-kernel form (the paper's Section 2, Z = A W from an
n x n kernel A) and the stacked class-mean operators W of several training sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wideml.exceptions import WidemlError

#: Built-in kernels, in the order the paper lists them.
KERNELS: tuple[str, ...] = ("linear", "euclidean", "spearman")
#: Other accepted spellings.
ALIASES: dict[str, str] = {"inner": "linear", "inner_product": "linear", "dot": "linear", "euclid": "euclidean",
                           "distance": "euclidean", "rank": "spearman"}


def resolve_kernels(kernels: str | Sequence[str]) -> tuple[str, ...]:
    """Canonical kernel names from a sequence or a comma-separated string.

    Raises
    ------
    WidemlError
        If a name is unknown (the message lists the valid ones) or none is given.
    """
    if isinstance(kernels, str):
        kernels = [k for k in kernels.split(",")]
    names: list[str] = []
    for raw in kernels:
        if not isinstance(raw, str):
            raise WidemlError(f"kernel {raw!r} is not a kernel name; valid kernels are {', '.join(KERNELS)}.")
        key = raw.strip().lower()
        if not key:
            continue
        name = ALIASES.get(key, key)
        if name not in KERNELS:
            raise WidemlError(f"unknown kernel {raw.strip()!r}; valid kernels are {', '.join(KERNELS)}.")
        if name not in names:
            names.append(name)
    if not names:
        raise WidemlError(f"no kernel given; pick one or more of {', '.join(KERNELS)}.")
    return tuple(names)


def stacked_class_weights(codes: np.ndarray, n_classes: int, train_sets: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The class-mean operators W_s = Y_s N_s^-1 of several training sets, side by side.

    Parameters
    ----------
    codes : ndarray of int, shape (n_samples,)
        Class index 0..K-1 of every sample.
    n_classes : int
    train_sets : sequence of S index arrays
        Rows that count as training rows in each set (the full data, or each CV
        fold's training rows).

    Returns
    -------
    W : ndarray of shape (n_samples, S * n_classes)
        Column s*K + k holds 1/n_{s,k} on the training rows of set s in class k.
        Class means of every set are then ``W.T @ X`` (S*K x p).
    counts : ndarray of int64, shape (S, n_classes)
    """
    n = len(codes)
    W = np.zeros((n, len(train_sets) * n_classes))
    counts = np.zeros((len(train_sets), n_classes), dtype=np.int64)
    for s, idx in enumerate(train_sets):
        idx = np.asarray(idx, dtype=np.int64)
        c = np.bincount(codes[idx], minlength=n_classes)
        counts[s] = c
        W[idx, s * n_classes + codes[idx]] = 1.0 / np.maximum(c[codes[idx]], 1)
    return W, counts


# --------------------------------------------------------------------------------------
# kernels from additive statistics
# --------------------------------------------------------------------------------------
def euclidean_distance(x_sq: np.ndarray, cross: np.ndarray, u_sq: np.ndarray) -> np.ndarray:
    """Distances ||x_i - u_k||, shape (n, K), from ||x_i||^2 (n,), x_i . u_k (n, K) and ||u_k||^2 (K,)."""
    d2 = x_sq[:, None] - 2.0 * cross + u_sq[None, :]
    return np.sqrt(np.maximum(d2, 0.0))


def pearson_from_sums(cross: np.ndarray, r_sum: np.ndarray, r_sq: np.ndarray, s_sum: np.ndarray, s_sq: np.ndarray,
                      n_features: int) -> np.ndarray:
    """Pearson correlations between rows r_i and s_k from their sums over features.

    Parameters
    ----------
    cross : ndarray of shape (n, K)
        sum_j r_ij s_kj.
    r_sum, r_sq : ndarray of shape (n,)
        sum_j r_ij and sum_j r_ij^2.
    s_sum, s_sq : ndarray of shape (K,)
    n_features : int

    Returns
    -------
    ndarray of shape (n, K)
        Correlations; 0 where a row is constant.
    """
    p = float(n_features)
    cov = cross - np.outer(r_sum, s_sum) / p
    var_r = np.maximum(r_sq - r_sum**2 / p, 0.0)
    var_s = np.maximum(s_sq - s_sum**2 / p, 0.0)
    denom = np.sqrt(np.outer(var_r, var_s))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(denom > 0, cov / np.where(denom > 0, denom, 1.0), 0.0)
    return np.clip(out, -1.0, 1.0)


@dataclass
class AnchorStats:
    """Additive statistics of rows x_i against K anchors u_k (usually class means).

    Attributes
    ----------
    cross : ndarray of shape (n, K)
        x_i . u_k.
    x_sq : ndarray of shape (n,) or None
        ||x_i||^2 (None when not computed: the linear kernel does not use it).
    u_sq : ndarray of shape (K,)
        ||u_k||^2.
    n_features : int
    rank_cross, r_sum, r_sq, s_sum, s_sq : ndarray or None
        The Spearman sums (see :func:`pearson_from_sums`), when ranks were computed.
    """

    cross: np.ndarray
    x_sq: np.ndarray
    u_sq: np.ndarray
    n_features: int
    rank_cross: np.ndarray | None = None
    r_sum: np.ndarray | None = None
    r_sq: np.ndarray | None = None
    s_sum: np.ndarray | None = None
    s_sq: np.ndarray | None = None

    def rows(self, idx: np.ndarray) -> "AnchorStats":
        """The same statistics restricted to rows ``idx``."""
        pick = lambda a: None if a is None else a[idx]  # noqa: E731
        return AnchorStats(self.cross[idx], pick(self.x_sq), self.u_sq, self.n_features, pick(self.rank_cross),
                           pick(self.r_sum), pick(self.r_sq), self.s_sum, self.s_sq)

    def anchors(self, cols: slice | np.ndarray) -> "AnchorStats":
        """The same statistics restricted to anchor columns ``cols``."""
        pick = lambda a: None if a is None else a[..., cols]  # noqa: E731
        return AnchorStats(self.cross[:, cols], self.x_sq, self.u_sq[cols], self.n_features, pick(self.rank_cross),
                           self.r_sum, self.r_sq, pick(self.s_sum), pick(self.s_sq))


def embed(kernel: str, stats: AnchorStats, offset: float | None = None) -> tuple[np.ndarray, float]:
    """The encoder embedding Z (n x K) of one kernel from the additive statistics.

    Parameters
    ----------
    kernel : {"linear", "euclidean", "spearman"}
    stats : AnchorStats
    offset : float, optional
        The euclidean kernel's d_max; computed from these rows when None (do
        that on the training rows, then pass the stored value for new data).

    Returns
    -------
    Z : ndarray of shape (n, K)
    offset : float
        d_max for "euclidean", 0.0 otherwise.
    """
    if kernel == "linear":
        return stats.cross, 0.0
    if kernel == "euclidean":
        D = euclidean_distance(stats.x_sq, stats.cross, stats.u_sq)
        if offset is None:
            offset = float(D.max()) if D.size else 0.0
        return offset - D, float(offset)
    if kernel == "spearman":
        if stats.rank_cross is None:
            raise ValueError("spearman needs rank statistics")
        return pearson_from_sums(stats.rank_cross, stats.r_sum, stats.r_sq, stats.s_sum, stats.s_sq, stats.n_features), 0.0
    raise WidemlError(f"unknown kernel {kernel!r}; valid kernels are {', '.join(KERNELS)}.")


# --------------------------------------------------------------------------------------
# full-kernel form (Section 2): Z = A W
# --------------------------------------------------------------------------------------
def full_kernel(kernel: str, gram: np.ndarray, sq_rows: np.ndarray, sq_cols: np.ndarray, offset: float | None = None,
                rank_stats: tuple | None = None) -> tuple[np.ndarray, float]:
    """The kernel matrix A(i, j) = kernel(x_i, x_j) between two row sets from their cross-products.

    Parameters
    ----------
    kernel : str
    gram : ndarray of shape (m, n)
        x_i . x_j (or, for "spearman", r_i . r_j of the row ranks).
    sq_rows : ndarray of shape (m,), sq_cols : ndarray of shape (n,)
        Squared norms of the two row sets (unused for "spearman").
    offset : float, optional
        Euclidean d_max; the maximum of this A's distances when None.
    rank_stats : tuple, optional
        For "spearman": (r_sum_rows, r_sq_rows, r_sum_cols, r_sq_cols, n_features).

    Returns
    -------
    A : ndarray of shape (m, n)
    offset : float
    """
    if kernel == "linear":
        return gram, 0.0
    if kernel == "euclidean":
        D = euclidean_distance(sq_rows, gram, sq_cols)
        if offset is None:
            offset = float(D.max()) if D.size else 0.0
        return offset - D, float(offset)
    if kernel == "spearman":
        rs, rq, cs, cq, p = rank_stats
        return pearson_from_sums(gram, rs, rq, cs, cq, p), 0.0
    raise WidemlError(f"unknown kernel {kernel!r}; valid kernels are {', '.join(KERNELS)}.")


__all__ = [
    "ALIASES", "KERNELS", "AnchorStats", "embed", "euclidean_distance", "full_kernel", "pearson_from_sums", "resolve_kernels",
    "stacked_class_weights",
]
