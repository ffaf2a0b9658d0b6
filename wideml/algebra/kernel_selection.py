"""Kernel selection from one set of training kernels (paper Sec. 4): alignment, sum, CV folds.

All three selection methods work on base-kernel matrices that are elementwise
functions of the one Gram, so none of them reads X again:

- alignment (Eq. 13): normalise K'_s = K_s / ||K_s||_F, then
  gamma = argmin_{gamma >= 0, b'^T gamma = 1} gamma^T S' gamma with
  S'_st = <K'_s, K'_t>_F and b'_s = <K'_s, Y>_F, Y_ij = 1 (same class) or
  -1/(p-1) (different classes), p the number of classes. Uncentred, as in
  the paper.
- unweighted sum: every weight 1.
- cross-validation: stratified folds; every fold is a principal sub-block of
  each base kernel (the scorer lives with the learner, in ``estimators``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import scipy.optimize

from wideml.exceptions import WidemlError


def ideal_kernel_inner(K: np.ndarray, codes: np.ndarray, n_classes: int) -> float:
    """<K, Y>_F for the ideal kernel Y_ij in {1, -1/(p-1)}, from class block sums (O(n^2)).

    <K, Y> = (p/(p-1)) sum_c 1_c^T K 1_c - (1/(p-1)) 1^T K 1.
    """
    p = n_classes
    if p < 2:
        raise WidemlError("kernel alignment needs at least 2 classes in the training labels; give labelled data from several classes.")
    onehot = np.zeros((K.shape[0], p))
    onehot[np.arange(K.shape[0]), codes] = 1.0
    block = float(np.sum((K @ onehot) * onehot))
    return float(p / (p - 1) * block - K.sum() / (p - 1))


def alignment(K: np.ndarray, codes: np.ndarray, n_classes: int) -> float:
    """Uncentred alignment <K, Y>_F / (||K||_F ||Y||_F) with the ideal kernel Y (Eq. 10)."""
    p = n_classes
    counts = np.bincount(codes, minlength=p).astype(float)
    n = float(len(codes))
    same = float(np.sum(counts ** 2))
    normY = np.sqrt(same + (n * n - same) / (p - 1) ** 2)
    return ideal_kernel_inner(K, codes, p) / (np.linalg.norm(K) * normY)


def alignment_weights(kernels: Sequence[np.ndarray], codes: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Solve the normalised alignment QP (Eq. 13).

    Parameters
    ----------
    kernels : sequence of m ndarrays of shape (n, n)
        Training base kernels (uncentred).
    codes : ndarray of int, shape (n,)
    n_classes : int

    Returns
    -------
    gamma : ndarray of shape (m,)
        Non-negative weights of the *normalised* kernels, with b'^T gamma = 1.
        The selected kernel is sum_s gamma_s K_s / norms_s.
    norms : ndarray of shape (m,)
        Training Frobenius norms ||K_s||_F (test-time values use these).
    """
    m = len(kernels)
    if m == 0:
        raise WidemlError("kernel alignment got no base kernels; pass at least one.")
    S = np.zeros((m, m))
    n = kernels[0].shape[0]
    step = max(1, (1 << 22) // max(n * m, 1))  # rows per block: a slab of <= 4M entries (32 MB) in memory
    for r0 in range(0, n, step):
        slab = np.stack([K[r0 : r0 + step].ravel() for K in kernels])
        S += slab @ slab.T  # Frobenius inner products <K_s, K_t>, by blocks of rows (BLAS, bounded memory)
    norms = np.sqrt(np.maximum(np.diag(S), 0.0))
    if np.any(norms <= 0) or not np.all(np.isfinite(S)):
        raise WidemlError("a base kernel is zero or not finite, so it cannot be normalised; drop it from the grid.")
    S = S / np.outer(norms, norms)
    S = (S + S.T) / 2
    b = np.array([ideal_kernel_inner(K, codes, n_classes) for K in kernels]) / norms
    if not np.any(b > 0):
        raise WidemlError("no base kernel is positively aligned with the labels, so the alignment QP has no solution; widen the sigma grid.")
    # Start at the best single kernel (feasible: gamma = e_s / b_s).
    single = np.where(b > 0, b / np.sqrt(np.diag(S)), -np.inf)
    s0 = int(np.argmax(single))
    x0 = np.zeros(m)
    x0[s0] = 1.0 / b[s0]
    scale = 1.0 / max(float(x0 @ S @ x0), 1e-300)
    res = scipy.optimize.minimize(
        lambda g: scale * float(g @ S @ g),
        x0,
        jac=lambda g: 2 * scale * (S @ g),
        method="SLSQP",
        bounds=[(0.0, None)] * m,
        constraints=[{"type": "eq", "fun": lambda g: float(b @ g) - 1.0, "jac": lambda g: b}],
        options={"maxiter": 500, "ftol": 1e-14},
    )
    gamma = np.maximum(res.x, 0.0)
    if float(b @ gamma) <= 0 or float(gamma @ S @ gamma) > float(x0 @ S @ x0) * (1 + 1e-9):
        gamma = x0  # solver failure: the best single kernel is feasible and never worse than the start
    gamma = gamma / float(b @ gamma)
    gamma[gamma < 1e-10 * gamma.max()] = 0.0
    return gamma, norms


def combined_alignment(gamma: np.ndarray, kernels: Sequence[np.ndarray], norms: np.ndarray, codes, n_classes) -> float:
    """Alignment of sum_s gamma_s K_s / norms_s (to report the QP's result)."""
    K = sum(g / s * Ks for g, s, Ks in zip(gamma, norms, kernels) if g > 0)
    return alignment(K, codes, n_classes)


def stratified_folds(codes: np.ndarray, n_folds: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified (train_idx, test_idx) pairs; each class is dealt round-robin after a seeded shuffle.

    A class with fewer samples than folds is missing from some training folds
    (1-NN then never predicts it there); that is allowed, not an error.
    """
    codes = np.asarray(codes)
    counts = np.bincount(codes)
    if n_folds < 2:
        raise WidemlError(f"cross-validation needs at least 2 folds, got {n_folds}; pass cv >= 2.")
    rng = np.random.default_rng(seed)
    fold_of = np.empty(len(codes), dtype=np.int64)
    start = 0
    for c in np.flatnonzero(counts):
        idx = np.flatnonzero(codes == c)
        idx = idx[rng.permutation(len(idx))]
        fold_of[idx] = (np.arange(len(idx)) + start) % n_folds
        start += len(idx)
    return [(np.flatnonzero(fold_of != f), np.flatnonzero(fold_of == f)) for f in range(n_folds) if np.any(fold_of == f)]


def cv_select(score: Callable[[int, np.ndarray, np.ndarray], float], n_candidates: int,
              folds: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[int, np.ndarray]:
    """Pick the candidate with the best mean fold score (ties: the first, i.e. the smallest sigma).

    Parameters
    ----------
    score : callable (candidate, train_idx, test_idx) -> float
        Accuracy of candidate ``c`` trained on ``train_idx``, tested on ``test_idx``;
        it slices the one precomputed kernel, so CV costs no pass.
    n_candidates : int
    folds : list of (train_idx, test_idx)

    Returns
    -------
    best : int
    scores : ndarray of shape (n_candidates,)
    """
    scores = np.array([np.mean([score(c, tr, te) for tr, te in folds]) for c in range(n_candidates)])
    return int(np.argmax(scores)), scores


__all__ = ["alignment", "alignment_weights", "combined_alignment", "cv_select", "ideal_kernel_inner", "stratified_folds"]
