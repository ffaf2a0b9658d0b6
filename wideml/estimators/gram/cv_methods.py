"""Per-fold embeddings of every method :func:`~wideml.estimators.gram.cv.cross_validate_dims` scores, from its one pass.

Each function returns E (n_samples x d_max): every sample embedded by the
model fitted on one training fold, centred like that model's ``transform``
(by the training fold's mean embedding), so its first d columns are the
d-dimensional model's embedding for every d <= d_max.

- Gram projectors (LOL, QOQ, PCA, rrLDA): their projection from G[train, train].
- LFL: X C^T Dm from the Gram (C the training fold's class means: C = M^T X with
  M the n_train x K averaging matrix, so X_c C_c^T = G[:, train] M and the
  centroids' Gram is M^T G[train, train] M; class medians from the pass's
  per-fold medians), then X R from the sweep's label-free product, its first
  d - K + 1 columns (R is nested in its column count).
- RP: X A from the sweep, its first d columns.

Centroid differences have coefficients summing to zero, so shifting X by any
constant feature vector (the Gram's centring) changes X C^T Dm only by a
constant row, which the centring removes.
"""

from __future__ import annotations

import numpy as np

from wideml.algebra.randomized import centroid_differences
from wideml.estimators.gram.lol import RRLDA
from wideml.estimators.gram.projector import GramProjector
from wideml.estimators.lfl import LFL
from wideml.estimators.rp import RP, rp_dimension_problem
from wideml.passes.cv_sweep import RandomColumns
from wideml.passes.keyed_random import lfl_density


def kind_of(est) -> str:
    """"gram", "lfl" or "rp"; anything else is not cross-validated from the one pass."""
    if isinstance(est, GramProjector):
        return "gram"
    if isinstance(est, LFL):
        return "lfl"
    if isinstance(est, RP):
        return "rp"
    return ""


def uses_medians(est) -> bool:
    """Whether the method's centroids are class medians (the pass then collects them per training fold)."""
    if isinstance(est, GramProjector):
        return est._uses_medians()
    return isinstance(est, LFL) and bool(est.robust_first)


def default_dim(est, data) -> int:
    """The method's d_max when its ``n_components`` is None (as its own fit would choose)."""
    if est.n_components is not None:
        return int(est.n_components)
    if isinstance(est, GramProjector):
        return est._default_components(data)
    return data.n_classes


def fold_bound(est, n_train: int, data) -> int:
    """The largest dimension worth scoring on a training fold of ``n_train`` samples (before its rank is known).

    Gram projectors: what the method allows (LOL/PCA: min(n_train - 1, p), rrLDA: min(n_train - K, p)).
    LFL, RP: min(n_train - 1, p), the largest rank the fold's centred data can have.
    """
    if isinstance(est, GramProjector):
        return int(est._component_bound(n_train, data.n_classes, data.n_features))
    return int(min(n_train - 1, data.n_features))


def rank_centring(est) -> str:
    """How the training fold's data are centred for the rank that caps this method: "class" for rrLDA (its directions
    are class-centred), else "pooled"."""
    return "class" if isinstance(est, RRLDA) else "pooled"


def random_columns(name: str, est, data, d_max: int) -> RandomColumns | None:
    """The label-free random matrix the sweep must multiply X by for this method, or None."""
    if isinstance(est, RP):
        return RandomColumns(name, "gaussian", int(est.random_state), int(d_max))
    if isinstance(est, LFL):
        density = lfl_density(data.n_features) if est.density == "auto" else float(est.density)
        return RandomColumns(name, "sparse", int(est.random_state), int(d_max - min(d_max, data.n_classes - 1)), density)
    return None


def _centred(E: np.ndarray, train: np.ndarray) -> np.ndarray:
    return E - E[train].mean(axis=0)


def lfl_embedding(G: np.ndarray, XR: np.ndarray, train: np.ndarray, tr_codes: np.ndarray, n_classes: int, d_max: int,
                  medians=None) -> np.ndarray:
    """LFL fitted on ``train``, all samples embedded: (n_samples, d_max).

    Parameters
    ----------
    G : ndarray (n, n), the centred Gram
    XR : ndarray (n, k_max), raw X R (k_max >= d_max - min(d_max, K - 1))
    train : ndarray of int
    tr_codes : ndarray of int, the training fold's class codes
    n_classes : int
    d_max : int
    medians : MedianSet, optional
        The training fold's class medians (robust LFL): P = X_c M_c^T, Q = M_c M_c^T.
    """
    n_deltas = min(d_max, n_classes - 1)
    if medians is not None:
        XC, CC = medians.P, medians.Q
    else:
        counts = np.bincount(tr_codes, minlength=n_classes)
        M = np.zeros((len(train), n_classes))
        M[np.arange(len(train)), tr_codes] = 1.0 / counts[tr_codes]
        XC = G[:, train] @ M
        CC = M.T @ XC[train]
    Dm = centroid_differences(tr_codes, n_classes, CC)[:, :n_deltas]
    return _centred(np.hstack([XC @ Dm, XR[:, : d_max - n_deltas]]), train)


def rp_embedding(XA: np.ndarray, train: np.ndarray, d_max: int) -> np.ndarray:
    """RP fitted on ``train``, all samples embedded: (n_samples, d_max)."""
    return _centred(XA[:, :d_max], train)


def gram_varies_within_classes(G: np.ndarray, codes: np.ndarray, eps: float) -> bool:
    """Whether the samples vary within their classes beyond rounding, from the Gram (O(n²), no eigensolve).

    The within-class sum of squares, trace(G) - sum_k 1_k^T G 1_k / n_k, is
    compared with the total one, trace(G) - 1^T G 1 / n, by the rule of
    :func:`varies_within_classes` (more than ``10 * n * eps`` of it).
    """
    codes = np.asarray(codes)
    n = len(codes)
    K = int(codes.max()) + 1
    M = np.zeros((n, K))
    M[np.arange(n), codes] = 1.0
    class_sums = np.einsum("ik,ij,jk->k", M, G, M)
    trace = float(np.trace(G))
    total = trace - float(G.sum()) / n
    within = trace - float(np.sum(class_sums / np.maximum(M.sum(axis=0), 1)))
    return total > 0 and within > 10 * n * eps * total


def varies_within_classes(Z: np.ndarray, codes: np.ndarray, eps: float) -> bool:
    """Whether the embedded training samples vary within their classes beyond rounding.

    Parameters
    ----------
    Z : ndarray of shape (m, d)
        A training fold's embedding.
    codes : ndarray of int, shape (m,)
    eps : float
        Machine epsilon of the precision the pass ran in.

    Returns
    -------
    bool
        False when the largest eigenvalue of the within-class scatter is at
        most ``10 * m * eps`` times the largest of the total scatter (the
        rule of :func:`training_rank`): the within-class covariance is then
        rounding error of the Gram (every sample of a class projects to one
        point, e.g. constant features or repeated samples), and a classifier
        fitted on it would divide by noise.
    """
    Z = np.asarray(Z, dtype=np.float64)
    codes = np.asarray(codes)
    total = Z - Z.mean(axis=0)
    means = np.zeros((int(codes.max()) + 1, Z.shape[1]))
    np.add.at(means, codes, Z)
    means /= np.maximum(np.bincount(codes, minlength=len(means)), 1)[:, None]
    within = Z - means[codes]
    top_total = float(np.linalg.eigvalsh(total.T @ total)[-1]) if Z.size else 0.0
    top_within = float(np.linalg.eigvalsh(within.T @ within)[-1]) if Z.size else 0.0
    return top_total > 0 and top_within > 10 * len(Z) * eps * top_total


def training_rank(G: np.ndarray, train: np.ndarray, eps: float, codes: np.ndarray | None = None) -> int:
    """Numerical rank of the training fold's centred data, from the Gram.

    Parameters
    ----------
    G : ndarray of shape (n, n)
        Gram of the (any common) centred samples.
    train : ndarray of int
        The training fold's rows.
    eps : float
        Machine epsilon of the precision the Gram's products ran in.
    codes : ndarray of int, shape (len(train),), optional
        The training samples' classes: the rank of the class-centred data
        (rrLDA's) instead of the pooled-centred data.

    Returns
    -------
    int
        The eigenvalues of H G[train, train] H (H centring over the training
        samples, or within their classes) are the squared singular values of
        the fold's centred data; the rank counts those above
        ``10 * lambda_max * n_train * eps`` (float32 products leave errors of
        about eps * lambda_max in G; the factor 10 is the algebra's own rule,
        :func:`wideml.algebra.eigen.numerical_rank_tol`, so a dimension counted
        here is one the projections find). For data of full numerical rank
        this equals ``numpy.linalg.matrix_rank`` of the centred fold.
    """
    m = len(train)
    if codes is None:
        H = np.eye(m) - 1.0 / max(m, 1)
    else:
        codes = np.asarray(codes)
        same = codes[:, None] == codes[None, :]
        H = np.eye(m) - same / same.sum(axis=1, keepdims=True)
    Gt = H @ G[np.ix_(train, train)] @ H
    lam = np.linalg.eigvalsh((Gt + Gt.T) / 2)
    top = float(lam[-1]) if lam.size else 0.0
    if top <= 0:
        return 0
    return int(np.sum(lam > 10 * top * m * eps))
