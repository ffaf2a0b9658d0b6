"""The kernel estimators' one pass: inner products and squared distances against reference rows.

Fitting reads X once (the Gram pass, or with landmarks the n x m landmark
cross-Gram pass); every kernel is an elementwise function of that pass's
products. Mapping new samples reads the new data and the training data once
together (:func:`wideml.passes.crossgram.cross_gram_pass`).
"""

from __future__ import annotations

from dataclasses import dataclass

import dask.array as da
import numpy as np

from wideml.algebra.kernels import gram_sq_distances
from wideml.estimators._kernel_training import TrainingData
from wideml.estimators._passes import FitPasses
from wideml.exceptions import WidemlError
from wideml.passes.crossgram import cross_gram_pass
from wideml.passes.gram import gram_pass
from wideml.runtime import compute
from wideml.runtime.checkpoint import PassCheckpoint


@dataclass
class Products:
    """Inner products and squared distances of samples against reference rows (one pass).

    ``inner`` and ``sq_dist`` are (n_rows, n_ref); ``landmarks`` are the
    reference rows' indices in the training set (None: all of them, so the
    arrays are the full n x n Gram and distance matrices).
    """

    inner: np.ndarray
    sq_dist: np.ndarray
    n_features: int
    landmarks: np.ndarray | None = None

    def reference_block(self) -> "Products":
        """The reference x reference block (what a kernel PCA is fitted on)."""
        if self.landmarks is None:
            return self
        idx = self.landmarks
        return Products(self.inner[idx], self.sq_dist[idx], self.n_features, None)

    def subset(self, rows: np.ndarray) -> "Products":
        """A principal sub-block (full Gram only): e.g. a CV training fold."""
        ix = np.ix_(rows, rows)
        return Products(self.inner[ix], self.sq_dist[ix], self.n_features, None)

    def kernel(self, kernel) -> np.ndarray:
        return kernel.from_products(self.inner, self.sq_dist, self.n_features)


def training_products(X: da.Array, passes: FitPasses, landmarks: np.ndarray | None = None,
                      checkpoint: PassCheckpoint | None = None) -> Products:
    """One pass over the training X: the full Gram (landmarks None) or the n x m landmark cross-Gram.

    Parameters
    ----------
    X : dask.array.Array of shape (n, p)
    passes : FitPasses
        The fit's pass runner: numbers, labels and counts this pass.
    landmarks : ndarray of int of shape (m,), optional
    checkpoint : PassCheckpoint, optional
        Makes the pass resumable (:func:`wideml.estimators._resume.kernel_checkpoint`).

    Returns
    -------
    Products
        (n x n) or (n x m). Passes over X: 1.
    """
    from wideml.estimators import _resume
    from wideml.passes.crossgram import cross_from_state, cross_state

    if landmarks is None:
        stats = passes.run(checkpoint, lambda ck: gram_pass(X, checkpoint=ck), "Gram",
                           to_state=_resume.gram_state, from_state=_resume.gram_from_state)
        return Products(stats.raw_gram(), gram_sq_distances(stats.G), int(X.shape[1]), None)
    cross = passes.run(checkpoint, lambda ck: cross_gram_pass(X, X, ref_rows=landmarks, checkpoint=ck), "landmark cross-Gram",
                       to_state=cross_state, from_state=cross_from_state)
    return Products(cross.raw_cross(), cross.sq_distances(), int(X.shape[1]), np.asarray(landmarks))


def kernel_products(passes: FitPasses, training: TrainingData, landmarks: np.ndarray | None,
                    codes: np.ndarray | None = None) -> Products:
    """:func:`training_products` of ``passes.estimator``'s training data, resumable in a resumable run.

    The checkpoint is :func:`wideml.estimators._resume.kernel_checkpoint`'s
    (``codes``, the labels, are part of its fingerprint). Passes over X: 1.
    """
    from wideml.estimators._resume import kernel_checkpoint

    checkpoint = kernel_checkpoint(passes.estimator, training, landmarks, codes)
    return training_products(training.array(), passes, landmarks, checkpoint)


def new_products(X_new, training: TrainingData, landmarks: np.ndarray | None, name: str = "the model") -> Products:
    """One pass over new data and the training data together: their cross products (m x n_ref)."""
    from wideml.estimators._input import predict_input

    Xn = predict_input(X_new, training.shape[1], name, layout=training.layout)
    (cross,) = compute(cross_gram_pass(Xn, training.array(), ref_rows=landmarks), label="cross-Gram pass")
    return Products(cross.raw_cross(), cross.sq_distances(), int(Xn.shape[1]), None)


def choose_landmarks(n: int, n_landmarks: int, codes: np.ndarray | None, seed) -> np.ndarray:
    """Landmark rows for Nystrom: class-stratified (so every class has some) when labels are given, else uniform."""
    if not 2 <= n_landmarks <= n:
        raise WidemlError(f"n_landmarks={n_landmarks} must lie between 2 and the number of samples {n}; change it.")
    rng = np.random.default_rng(seed)
    if codes is None:
        return np.sort(rng.choice(n, n_landmarks, replace=False))
    counts = np.bincount(codes)
    quota = np.maximum(1, np.floor(counts / n * n_landmarks).astype(int))
    while quota.sum() > n_landmarks:
        quota[np.argmax(quota)] -= 1
    chosen = [rng.choice(np.flatnonzero(codes == c), min(q, counts[c]), replace=False) for c, q in enumerate(quota) if counts[c]]
    chosen = np.concatenate(chosen)
    rest = np.setdiff1d(np.arange(n), chosen)
    extra = rng.choice(rest, n_landmarks - len(chosen), replace=False) if n_landmarks > len(chosen) else np.zeros(0, int)
    return np.sort(np.concatenate([chosen, extra]).astype(np.int64))


__all__ = ["Products", "choose_landmarks", "kernel_products", "new_products", "training_products"]
