"""LMNN (Weinberger, Blitzer & Saul) as in the paper's §2.2, minimised over L (M = L^T L).

f(L) = sum_{i, j in T(i)} ||L(x_i - x_j)||^2
       + c sum_{i, j in T(i), l: y_l != y_i} [1 + ||L(x_i - x_j)||^2 - ||L(x_i - x_l)||^2]_+

T(i) are the k nearest same-class points of x_i (fixed before learning; by
default Euclidean in the learner's input space). For a fixed set of active
triplets the loss is sum_ab w_ab ||L(x_a - x_b)||^2, so the (sub)gradient is
2 L X^T Lap(W) X with Lap(W) = diag(W 1) + diag(W^T 1) - W - W^T. It is
minimised with L-BFGS (as pylmnn does); O(n^2 (k + d)) per evaluation.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

from wideml.algebra.metric.neighbors import class_neighbors, pairwise_sq_dist
from wideml.exceptions import WidemlError


def target_neighbors(D2: np.ndarray, codes: np.ndarray, k: int) -> np.ndarray:
    """The k nearest same-class neighbours (n x k indices) from squared distances D2."""
    return class_neighbors(D2, codes, k, same=True)


def _triplets(D2: np.ndarray, targets: np.ndarray, codes: np.ndarray):
    """Target distances and the candidate impostor pairs (only pairs that can violate a margin).

    Returns d_t (n x k, -inf where padded), valid (n x k), and for every pair
    (i, l) of different classes with D2[i, l] < max_j d_ij + 1: its indices
    and margins 1 + d_ij - d_il (M x k). Candidates are few once the metric
    separates the classes, so this is O(n^2) for the mask plus O(M k).
    """
    n = targets.shape[0]
    valid = targets >= 0
    tj = np.where(valid, targets, 0)
    d_t = np.where(valid, D2[np.arange(n)[:, None], tj], -np.inf)
    reach = d_t.max(axis=1) + 1.0
    ii, ll = np.nonzero((codes[:, None] != codes[None, :]) & (D2 < reach[:, None]))
    margins = 1.0 + d_t[ii, :] - D2[ii, ll][:, None]
    return d_t, valid, ii, ll, margins


def lmnn_loss_grad(L: np.ndarray, X: np.ndarray, targets: np.ndarray, codes: np.ndarray, c: float = 1.0) -> tuple[float, np.ndarray]:
    """LMNN objective and (sub)gradient with respect to L.

    Parameters
    ----------
    L : ndarray of shape (d, D)
    X : ndarray of shape (n, D)
    targets : ndarray of int, shape (n, k)
        Target neighbours; -1 entries are ignored.
    codes : ndarray of int, shape (n,)
    c : float
        Weight of the hinge (push) term.

    Returns
    -------
    f : float
    grad : ndarray of shape (d, D)
    """
    n, k = targets.shape
    Z = X @ L.T
    D2 = pairwise_sq_dist(Z)
    d_t, valid, ii, ll, margins = _triplets(D2, targets, codes)
    active = margins > 0
    f = float(d_t[valid].sum() + c * margins[active].sum())
    # pair weights: each target pair pulls with 1 + c * (its active triplets); each impostor pair pushes with -c * (its active triplets)
    per_target = np.stack([np.bincount(ii, weights=active[:, t], minlength=n) for t in range(k)], axis=1) if k else np.zeros((n, 0))
    W = np.zeros((n, n))
    rows = np.repeat(np.arange(n), k).reshape(n, k)
    W[rows[valid], targets[valid]] += 1.0 + c * per_target[valid]
    W[ii, ll] -= c * active.sum(axis=1)
    Lap = np.diag(W.sum(axis=1) + W.sum(axis=0)) - W - W.T
    return f, 2.0 * (Z.T @ (Lap @ X))


def fit_lmnn(X: np.ndarray, codes: np.ndarray, *, n_neighbors: int = 3, c: float = 1.0, n_components: int | None = None,
             init: str | np.ndarray = "identity", max_iter: int = 50, tol: float = 1e-7, targets: np.ndarray | None = None,
             target_sq_dist: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """Learn the LMNN map L (M = L^T L).

    Parameters
    ----------
    X : ndarray of shape (n, D)
    codes : ndarray of int, shape (n,)
    n_neighbors : int
        k target neighbours per sample (default 3).
    c : float
        Hinge weight (paper's c; default 1).
    n_components : int or None
        d, the rows of L; None means D.
    init : {"identity", "pca"} or ndarray of shape (d, D)
    max_iter : int
        L-BFGS iterations.
    tol : float
        L-BFGS relative tolerance on the objective.
    targets : ndarray of int, shape (n, k), optional
        Precomputed target neighbours.
    target_sq_dist : ndarray of shape (n, n), optional
        Squared distances to pick target neighbours from (default: Euclidean on X),
        e.g. the input space when X are KPCA coordinates of an unweighted kernel.

    Returns
    -------
    L : ndarray of shape (d, D)
    info : dict
        ``loss``, ``n_iter``, ``n_active`` (active impostor triplets at the end).
    """
    X = np.asarray(X, dtype=np.float64)
    n, D = X.shape
    if c < 0:
        raise WidemlError(f"the LMNN push weight c must be >= 0, got {c}; pass e.g. c=1.0.")
    d = D if n_components is None else int(n_components)
    if not 1 <= d <= D:
        raise WidemlError(f"LMNN n_components={n_components} must be between 1 and the input dimension {D}; lower it.")
    if targets is None:
        D2 = pairwise_sq_dist(X) if target_sq_dist is None else np.asarray(target_sq_dist)
        targets = target_neighbors(D2, codes, n_neighbors)
    if isinstance(init, np.ndarray):
        L0 = np.asarray(init, dtype=np.float64)
    elif init == "identity":
        L0 = np.eye(d, D)
    elif init == "pca":
        Xc = X - X.mean(axis=0)
        _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
        L0 = np.zeros((d, D))
        L0[: min(d, Vt.shape[0])] = Vt[:d]
    else:
        raise WidemlError(f"LMNN init={init!r} is not 'identity', 'pca' or a (d, D) array; pick one.")
    if L0.shape != (d, D):
        raise WidemlError(f"LMNN init has shape {L0.shape}, expected {(d, D)}; pass a (n_components, n_features) array.")

    def fun(flat):
        f, g = lmnn_loss_grad(flat.reshape(d, D), X, targets, codes, c)
        return f, g.ravel()

    res = scipy.optimize.minimize(fun, L0.ravel(), jac=True, method="L-BFGS-B",
                                  options={"maxiter": int(max_iter), "maxfun": 4 * int(max_iter), "ftol": tol, "gtol": 1e-10})
    L = res.x.reshape(d, D)
    f, _ = lmnn_loss_grad(L, X, targets, codes, c)
    Z = X @ L.T
    D2z = pairwise_sq_dist(Z)
    n_active = int(np.sum(_triplets(D2z, targets, codes)[4] > 0))
    return L, {"loss": f, "n_iter": int(res.nit), "n_active": n_active}
