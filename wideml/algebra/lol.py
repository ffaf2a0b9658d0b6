"""LOL, QOQ, rrLDA and PCA projections from Gram matrices (docs/architecture.md, "One pass, then algebra").

Every projection here is a :class:`Projection`: a p x d matrix A that is never
formed, written instead as

    A = X_c^T B + M_c^T D_m

with X_c the training data (feature-mean centred, n_train x p), B an
n_train x d coefficient matrix, M_c the centred class medians (K x p) and
D_m a K x d coefficient matrix (zero unless robust mean differences are
used). All B columns sum to zero over the training rows and all D_m
columns sum to zero over the classes, so A = X^T B + M^T D_m as well: the
centring constant drops out, and the emit pass can use raw chunks.

The embedding of any sample i (training or not) is then
``G[i, train] @ B + P[i] @ D_m`` where G is the centred Gram and P the
cross-products of the samples with the centred medians — no access to X.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from wideml.algebra.centering import class_center_gram, class_center_rows, class_weights, pool_center_gram, pool_center_rows
from wideml.algebra.eigen import numerical_rank_tol, top_eigh
from wideml.exceptions import WidemlError


@dataclass
class Projection:
    """A p x d projection A = X_c^T B + M_c^T D_m kept in coefficient form.

    Attributes
    ----------
    B : ndarray of shape (n_train, d)
    Dm : ndarray of shape (n_classes, d)
    kinds : list of str
        ``"delta"`` (a mean or median difference) or ``"eigen"`` per column.
    eigenvalues : ndarray of shape (n_eigen,)
        Squared singular values of the eigen columns, decreasing.
    """

    B: np.ndarray
    Dm: np.ndarray
    kinds: list[str]
    eigenvalues: np.ndarray

    @property
    def n_components(self) -> int:
        return self.B.shape[1]

    def embed(self, G_rows: np.ndarray, P_rows: np.ndarray | None = None) -> np.ndarray:
        """Embedding of samples given their centred Gram rows against the training set.

        Parameters
        ----------
        G_rows : ndarray of shape (m, n_train)
        P_rows : ndarray of shape (m, n_classes), optional
            Cross-products with the centred class medians (needed when ``Dm`` is non-zero).

        Returns
        -------
        ndarray of shape (m, d)
        """
        out = G_rows @ self.B
        if np.any(self.Dm):
            out = out + P_rows @ self.Dm
        return out

    def gram(self, G: np.ndarray, P: np.ndarray | None, Q: np.ndarray | None) -> np.ndarray:
        """A^T A (d x d) from the training Gram G, P (n_train x K) and Q (K x K)."""
        AtA = self.B.T @ G @ self.B
        if np.any(self.Dm):
            cross = self.B.T @ P @ self.Dm
            AtA = AtA + cross + cross.T + self.Dm.T @ Q @ self.Dm
        return (AtA + AtA.T) / 2

    def orthonormalized(self, G: np.ndarray, P=None, Q=None) -> "Projection":
        """The same span with orthonormal columns (thin QR done as a Cholesky of A^T A; prefix-stable)."""
        AtA = self.gram(G, P, Q)
        try:
            R = scipy.linalg.cholesky(AtA, lower=False)
        except np.linalg.LinAlgError:
            raise WidemlError(
                "the projection's directions are linearly dependent, so they cannot be orthonormalised; "
                "use orthogonalize=False or fewer components."
            ) from None
        Rinv = scipy.linalg.solve_triangular(R, np.eye(R.shape[0]), lower=False)
        return Projection(self.B @ Rinv, self.Dm @ Rinv, self.kinds, self.eigenvalues)

    def prefix(self, d: int) -> "Projection":
        """The first d columns (nested property: every d <= d_max is a prefix)."""
        return Projection(self.B[:, :d], self.Dm[:, :d], self.kinds[:d], self.eigenvalues)


def class_order(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Classes by decreasing count; ties keep sorted-label order (the paper's reference = most populous)."""
    counts = np.bincount(codes, minlength=n_classes)
    return np.argsort(-counts, kind="stable")


def _eigen_columns(S: np.ndarray, k: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    vals, vecs = top_eigh(S, k)
    tol = numerical_rank_tol(vals if vals.size else np.zeros(1), S.shape[0])
    keep = vals > tol
    if not np.all(keep):
        raise WidemlError(
            f"asked for {k} {what} directions but the data have only {int(np.sum(keep))} non-zero ones here; "
            "lower n_components."
        )
    return vals, vecs / np.sqrt(vals)


def mean_deltas(G: np.ndarray, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Coefficients (n_train x (K-1)) of the unit-normalised class-mean differences mu_(1) - mu_(i)."""
    W = class_weights(codes, n_classes)
    order = class_order(codes, n_classes)
    D = W[:, [order[0]]] - W[:, order[1:]]
    norms = np.sqrt(np.maximum(np.einsum("ij,ij->j", D, G @ D), 0))
    return D / np.where(norms > 0, norms, 1.0)


def median_deltas(Q: np.ndarray, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Coefficients (K x (K-1)) on the centred medians of the unit-normalised median differences."""
    order = class_order(codes, n_classes)
    E = np.eye(n_classes)
    D = E[:, [order[0]]] - E[:, order[1:]]
    norms = np.sqrt(np.maximum(np.einsum("ij,ij->j", D, Q @ D), 0))
    return D / np.where(norms > 0, norms, 1.0)


def _check_components(n_components: int, available: int, method: str, detail: str) -> None:
    if n_components < 1:
        raise WidemlError(f"n_components must be at least 1, got {n_components}.")
    if n_components > available:
        raise WidemlError(
            f"n_components={n_components} is larger than the data allow for {method}: at most {available} "
            f"({detail}); lower n_components."
        )


def pca_projection(G: np.ndarray, n_components: int, n_features: int | None = None) -> Projection:
    """PCA: top eigenvectors of the pooled-mean-centred Gram (labels ignored).

    Parameters
    ----------
    G : ndarray of shape (n_train, n_train)
        Centred Gram of the training samples.
    n_components : int
    n_features : int, optional
        p, which also bounds the rank.
    """
    n = G.shape[0]
    rank = min(n - 1, n_features or n)
    _check_components(n_components, rank, "PCA", f"min(n_samples - 1, n_features) = {rank}")
    S = pool_center_gram(G)
    vals, coef = _eigen_columns(S, n_components, "principal")
    return Projection(pool_center_rows(coef), np.zeros((0, n_components)), ["eigen"] * n_components, vals)


def rrlda_projection(G: np.ndarray, codes: np.ndarray, n_classes: int, n_components: int, n_features: int | None = None) -> Projection:
    """rrLDA / class-centred PCA: top eigenvectors of C^T G C."""
    n = G.shape[0]
    rank = min(n - n_classes, n_features or n)
    _check_components(n_components, rank, "rrLDA", f"min(n_samples - n_classes, n_features) = {rank}")
    S = class_center_gram(G, codes, n_classes)
    vals, coef = _eigen_columns(S, n_components, "class-centred")
    return Projection(class_center_rows(coef, codes, n_classes), np.zeros((n_classes, n_components)), ["eigen"] * n_components, vals)


def _quadratic_columns(G, codes, n_classes, k):
    """QOQ: per-class PCA, pooled and sorted by eigenvalue; top k overall."""
    pool = []
    for c in range(n_classes):
        rows = np.flatnonzero(codes == c)
        if len(rows) < 2:
            raise WidemlError(
                f"class index {c} has only {len(rows)} sample; QOQ estimates a covariance per class and needs "
                "at least 2 samples in every class."
            )
        S = pool_center_gram(G[np.ix_(rows, rows)])
        vals, vecs = top_eigh(S, min(k, len(rows) - 1))
        tol = numerical_rank_tol(vals if vals.size else np.zeros(1), len(rows))
        for j in np.flatnonzero(vals > tol):
            col = np.zeros(G.shape[0])
            col[rows] = pool_center_rows(vecs[:, [j]])[:, 0] / np.sqrt(vals[j])
            pool.append((vals[j], c, j, col))
    if len(pool) < k:
        raise WidemlError(f"asked for {k} per-class directions but the classes have only {len(pool)} non-zero ones; lower n_components.")
    pool.sort(key=lambda t: (-t[0], t[1], t[2]))
    chosen = pool[:k]
    coef = np.stack([t[3] for t in chosen], axis=1) if k else np.zeros((G.shape[0], 0))
    return np.array([t[0] for t in chosen]), coef


def lol_projection(
    G: np.ndarray,
    codes: np.ndarray,
    n_classes: int,
    n_components: int,
    *,
    first_moment: str = "mean",
    second_moment: str = "linear",
    P: np.ndarray | None = None,
    Q: np.ndarray | None = None,
    orthogonalize: bool = False,
    n_features: int | None = None,
) -> Projection:
    """LOL / robust LOL / QOQ: A = [unit class-centroid differences, top second-moment directions].

    Parameters
    ----------
    G : ndarray of shape (n_train, n_train)
        Centred Gram of the training samples.
    codes : ndarray of int, shape (n_train,)
    n_classes : int
    n_components : int
        d. The first min(d, K-1) columns are the centroid differences
        mu_(1) - mu_(i) (reference = most populous class), the rest the top
        d-(K-1) directions of the second moment.
    first_moment : {"mean", "median"}
        Class means, or class medians (robust LOL, the paper's default); medians need P and Q.
    second_moment : {"linear", "quadratic"}
        Class-centred (shared) covariance, or per-class covariances pooled by
        eigenvalue (QOQ).
    P : ndarray of shape (n_train, n_classes), optional
        Training rows' cross-products with the centred class medians.
    Q : ndarray of shape (n_classes, n_classes), optional
        Centred medians' Gram.
    orthogonalize : bool
        Orthonormalise the columns (prefix-stable, so nesting in d is kept).
    n_features : int, optional
        p, which also bounds the rank of the second moment.

    Returns
    -------
    Projection
    """
    n = G.shape[0]
    n_deltas = min(n_components, n_classes - 1)
    n_eigen = n_components - n_deltas
    p = n_features or n
    if second_moment == "linear":
        available = (n_classes - 1) + min(n - n_classes, p)
        detail = f"K-1 = {n_classes - 1} centroid differences + min(n_samples - K, n_features) = {min(n - n_classes, p)} class-centred directions"
    else:
        available = (n_classes - 1) + int(np.sum(np.minimum(np.maximum(np.bincount(codes, minlength=n_classes) - 1, 0), p)))
        detail = "K-1 centroid differences + the per-class directions"
    _check_components(n_components, available, "LOL" if second_moment == "linear" else "QOQ", detail)
    if first_moment == "median":
        if P is None or Q is None:
            raise ValueError("median first moment needs P and Q from the pass")
        Dm = np.zeros((n_classes, n_components))
        Dm[:, :n_deltas] = median_deltas(Q, codes, n_classes)[:, :n_deltas]
        B_delta = np.zeros((n, n_deltas))
    else:
        Dm = np.zeros((n_classes, n_components))
        B_delta = mean_deltas(G, codes, n_classes)[:, :n_deltas]
    if n_eigen == 0:
        vals, B_eig = np.zeros(0), np.zeros((n, 0))
    elif second_moment == "linear":
        S = class_center_gram(G, codes, n_classes)
        vals, coef = _eigen_columns(S, n_eigen, "class-centred")
        B_eig = class_center_rows(coef, codes, n_classes)
    elif second_moment == "quadratic":
        vals, B_eig = _quadratic_columns(G, codes, n_classes, n_eigen)
    else:
        raise WidemlError(f"second_moment={second_moment!r} is not one of 'linear', 'quadratic'.")
    proj = Projection(np.hstack([B_delta, B_eig]), Dm, ["delta"] * n_deltas + ["eigen"] * n_eigen, vals)
    if orthogonalize:
        proj = proj.orthonormalized(G, P, Q)
    return proj
