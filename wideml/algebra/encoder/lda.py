"""Linear discriminant analysis on the encoder embedding (small dense n x K matrices; no access to X)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.special

#: scikit-learn's default ``tol`` (an absolute singular-value threshold); the encoder does not use it.
#: On the encoder paper's transformed settings the K embedding columns are correlated to 1 - 1e-11, so
#: the within-class singular values after the first are ~1e-6 and this threshold keeps rank 1 (an LDA at
#: chance); the encoder's rank rule is :func:`rank_tol`.
LDA_TOL = 1e-4


def rank_tol(top: float, shape: tuple[int, int], dtype=np.float64) -> float:
    """The singular-value threshold of the encoder's LDA: machine precision relative to the largest one.

    ``eps * max(n, d) * top``, the rule of ``numpy.linalg.pinv`` (``rtol``) and
    MATLAB's ``pinv``, which the encoder paper's ``pseudoLinear`` uses: only
    directions that are zero to rounding are dropped.

    Parameters
    ----------
    top : float
        The largest singular value of the (scaled) matrix.
    shape : (int, int)
        Its shape (n, d).
    dtype : float dtype, default float64
        The precision it was computed in (its machine epsilon is used).

    Returns
    -------
    float
        An absolute threshold: singular values above it count towards the rank.
    """
    return float(np.finfo(np.dtype(dtype)).eps * max(shape) * top)


def sklearn_tol(Z: np.ndarray, codes: np.ndarray) -> float:
    """The ``tol`` that makes scikit-learn's SVD-solver LDA apply :func:`rank_tol` on ``Z``.

    scikit-learn's first threshold is absolute (``S > tol``), on the singular values
    of the class-centred, per-column standardised data times sqrt(1/n); this computes
    that matrix's largest singular value the same way. For the cases
    :func:`lda_svd` leaves to scikit-learn (a class code without rows, no more rows
    than classes). Non-finite or empty input gives scikit-learn's default (it rejects it).
    """
    Z = np.asarray(Z)
    if Z.ndim != 2 or Z.size == 0 or Z.dtype.kind != "f" or not np.isfinite(Z).all():
        return LDA_TOL
    Xc = np.empty_like(Z)
    for c in np.unique(codes):
        rows = codes == c
        Xc[rows] = Z[rows] - Z[rows].mean(axis=0)
    std = Xc.std(axis=0)
    std[std == 0] = 1.0
    top = np.linalg.norm(Xc / std, 2) * np.sqrt(1.0 / len(Z))
    return rank_tol(top, Z.shape, Z.dtype) if top > 0 else LDA_TOL


@dataclass
class LdaFit:
    """The fitted state of scikit-learn's ``LinearDiscriminantAnalysis(solver="svd")`` (empirical priors).

    ``coef`` and ``intercept`` are one row per class, or a single row for two
    classes (class 1 minus class 0), as scikit-learn stores them. ``tol`` is the
    absolute threshold the fit applied (:func:`rank_tol`); scikit-learn given
    ``tol=tol`` computes the same fit.
    """

    priors: np.ndarray
    means: np.ndarray
    xbar: np.ndarray
    scalings: np.ndarray
    explained_variance_ratio: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    max_components: int
    tol: float


def lda_svd(Z: np.ndarray, codes: np.ndarray, n_classes: int, tol: float | None = None) -> LdaFit | None:
    """scikit-learn's SVD-solver LDA on a small dense embedding, at machine-precision rank, without input validation.

    The same algebra as ``LinearDiscriminantAnalysis._solve_svd`` (scikit-learn
    1.9): class means, within-class standardisation with the 1/n factor, the
    SVD of the scaled within-class deviations, then the SVD of the scaled
    class centres. The within-class SVD is taken of the triangular factor R of
    a QR decomposition (same singular values and right vectors, about half the
    time for n >> K), so coefficients agree with scikit-learn's, given the same
    ``tol``, to rounding.

    The rank rule is not scikit-learn's default (an absolute ``tol=1e-4``) but
    :func:`rank_tol`: singular values above eps * max(n, d) times the largest
    count, as in a pseudo-inverse LDA (the encoder paper's ``pseudoLinear``).
    Embedding columns that are nearly collinear, as the linear kernel's are on
    the paper's transformed settings, keep their rank.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
    codes : ndarray of int, shape (n,)
        Class index 0..n_classes-1 of every row.
    n_classes : int
    tol : float, optional
        An absolute singular-value threshold (scikit-learn's ``tol``) instead of
        :func:`rank_tol`; applied, as scikit-learn does, as ``tol`` to the
        within-class and ``tol * S[0]`` to the between-class singular values.

    Returns
    -------
    LdaFit or None
        None when this fast path does not apply (a class without rows, no more
        rows than classes, non-finite Z, a rank-0 within-class scatter, or an
        SVD that fails); the caller then uses scikit-learn itself.
    """
    Z = np.asarray(Z)
    if Z.ndim != 2 or Z.dtype.kind != "f" or n_classes < 2:
        return None
    n, d = Z.shape
    counts = np.bincount(codes, minlength=n_classes)
    if n <= n_classes or len(counts) != n_classes or counts.min() == 0 or not np.isfinite(Z).all():
        return None
    priors = counts.astype(Z.dtype) / float(n)
    # rows grouped by class in their original order, as scikit-learn groups them; row-by-row sums
    # (np.add.reduceat along axis 0) then add in the same order as its np.add.at
    order = np.argsort(codes, kind="stable")
    Zs = Z[order]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    means = np.add.reduceat(Zs, starts, axis=0)
    means /= counts[:, None]
    xbar = priors @ means
    Xc = Zs - np.repeat(means, counts, axis=0)
    std = Xc.std(axis=0)
    std[std == 0] = 1.0
    Xc *= np.sqrt(1.0 / n) / std
    try:
        R = np.linalg.qr(Xc, mode="r")
        _, S, Vt = np.linalg.svd(R, full_matrices=False)
        if tol is None:
            tol = rank_tol(S[0], (n, d), Z.dtype)
        rank = int(np.sum(S > tol))
        if rank == 0:
            return None
        scalings = (Vt[:rank, :] / std).T / S[:rank]
        fac = 1.0 / (n_classes - 1)
        centres = (np.sqrt((n * priors) * fac) * (means - xbar).T).T @ scalings
        _, S, Vt = np.linalg.svd(centres, full_matrices=False)
    except np.linalg.LinAlgError:
        return None
    max_components = min(n_classes - 1, d)
    ratio = (S**2 / np.sum(S**2))[:max_components] if max_components else np.empty(0, dtype=S.dtype)
    rank = int(np.sum(S > tol * S[0]))
    scalings = scalings @ Vt.T[:, :rank]
    coef = (means - xbar) @ scalings
    intercept = -0.5 * np.sum(coef**2, axis=1) + np.log(priors)
    coef = coef @ scalings.T
    intercept -= xbar @ coef.T
    if n_classes == 2:
        coef = (coef[1, :] - coef[0, :]).reshape(1, -1)
        intercept = np.reshape(intercept[1] - intercept[0], (1,))
    return LdaFit(priors, means, xbar, scalings, ratio, coef, intercept, max_components, float(tol))


def lda_proba(coef: np.ndarray, intercept: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Posterior probabilities of a fitted LDA (softmax of the decision values; logistic for two classes)."""

    scores = Z @ coef.T + intercept
    if coef.shape[0] == 1:
        p1 = scipy.special.expit(scores[:, 0])
        return np.stack([1 - p1, p1], axis=1)
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    return scores


__all__ = ["LDA_TOL", "LdaFit", "lda_proba", "lda_svd", "rank_tol", "sklearn_tol"]
