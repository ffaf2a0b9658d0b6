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
    valid = targets.ravel() >= 0  # -1 pads samples of classes with fewer than k + 1 members
    rows = np.repeat(np.arange(n), k)[valid]
    cols = targets.ravel()[valid]
    d_ij = D2[rows, cols]
    margins = 1.0 + d_ij[:, None] - D2[rows, :]
    impostor = codes[None, :] != codes[rows][:, None]
    active = impostor & (margins > 0)
    hinge = np.where(active, margins, 0.0)
    f = float(d_ij.sum() + c * hinge.sum())
    W = np.zeros((n, n))
    np.add.at(W, (rows, cols), 1.0 + c * active.sum(axis=1))
    if rows.size:
        uniq, starts = np.unique(rows, return_index=True)  # rows are sorted: sum each sample's triplets
        W[uniq] -= c * np.add.reduceat(active.astype(np.float64), starts, axis=0)
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
    valid = targets.ravel() >= 0
    rows = np.repeat(np.arange(n), targets.shape[1])[valid]
    margins = 1.0 + D2z[rows, targets.ravel()[valid]][:, None] - D2z[rows, :]
    n_active = int(np.sum((codes[None, :] != codes[rows][:, None]) & (margins > 0)))
    return L, {"loss": f, "n_iter": int(res.nit), "n_active": n_active}
