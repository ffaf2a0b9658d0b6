"""The kernel estimators' one pass: inner products and squared distances against reference rows.

Fitting reads X once (the Gram pass, or with landmarks the n x m landmark
cross-Gram pass); every kernel is an elementwise function of that pass's
products. Lazy training X that is not a store's is also copied by that pass,
chunk by chunk, into the model's work group (the model keeps the copy). Mapping new samples reads the new data and the training data once
together (:func:`wideml.passes.crossgram.cross_gram_pass`).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import dask.array as da
import numpy as np

from wideml.algebra.kernels import gram_sq_distances
from wideml.estimators.kernel.training import X_TRAIN, TrainingData
from wideml.runner.fit_runner import FitPasses
from wideml.exceptions import WidemlError
from wideml.inputs.door import predict_input
from wideml.passes.crossgram import CrossGramPass, cross_gram_pass
from wideml.passes.gram import GramPass
from wideml.passes.outputs import write_output
from wideml.runtime import compute


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


def training_products(X: da.Array, passes: FitPasses, landmarks: np.ndarray | None = None, copy_to: str | None = None) -> Products:
    """One pass over the training X: the full Gram (landmarks None) or the n x m landmark cross-Gram.

    Parameters
    ----------
    X : dask.array.Array of shape (n, p)
        Full-height chunks (:func:`wideml.inputs.door.regular_feature_chunks`).
    passes : FitPasses
        The fit's pass runner: numbers, labels and counts this pass, and checkpoints it
        in a resumable fit (only a store's X, which is never copied, has a resumable fit).
    landmarks : ndarray of int of shape (m,), optional
    copy_to : str, optional
        A model group holding an empty array ``X_train`` shaped and chunked like
        X: the pass writes every chunk of X into it as it reads it.

    Returns
    -------
    Products
        (n x n) or (n x m). Passes over X: 1.
    """
    if copy_to is not None:
        X = copying_chunks(X, copy_to)
    if landmarks is None:
        stats = passes.run(GramPass(X), "Gram")
        return Products(stats.raw_gram(), gram_sq_distances(stats.G), int(X.shape[1]), None)
    cross = passes.run(CrossGramPass(X, landmarks), "landmark cross-Gram")
    return Products(cross.raw_cross(), cross.sq_distances(), int(X.shape[1]), np.asarray(landmarks))


def _write_chunk(block: np.ndarray, group: str, block_info=None) -> np.ndarray:
    """Write one full-height chunk of X into ``group``'s ``X_train`` at its feature offset; return it unchanged."""
    write_output(group, X_TRAIN, np.asarray(block), int(block_info[0]["array-location"][1][0]))
    return block


def copying_chunks(X: da.Array, group: str) -> da.Array:
    """X, each of whose chunks is also written into ``group``'s ``X_train`` when the pass reads it (no extra read)."""
    return X.map_blocks(_write_chunk, group, dtype=X.dtype, meta=X._meta)


def kernel_passes(est, training: TrainingData, codes: np.ndarray | None = None, data=None) -> FitPasses:
    """The runner of a kernel fit's one pass, with the resumable session when the fit is resumable.

    Only a fit on a store's own X (``training.path`` set) inside a resumable run
    checkpoints; ``codes`` (labels, or None) are part of its fingerprint.
    ``data`` (the fit's FitInput) lets the runner run a small in-memory X's
    pass in the calling thread (:class:`~wideml.runner.fit_runner.FitPasses`).
    """
    if training.path is None:
        return FitPasses(est, type(est).n_fit_passes, None, data)
    view = SimpleNamespace(X=training.array(), in_memory=False, source={"store": training.path},
                           codes=np.zeros(0, dtype=np.int64) if codes is None else np.asarray(codes))
    return FitPasses.for_fit(est, type(est).n_fit_passes, data, keyed_by=view)


def kernel_products(passes: FitPasses, training: TrainingData, landmarks: np.ndarray | None) -> Products:
    """:func:`training_products` of ``passes.estimator``'s training data: its one pass over X.

    The pass is checkpointed in a resumable fit (``passes.session``). Lazy
    training X that is not a store's (``training.needs_copy``) is copied by
    the same pass into a model group (``passes.model_group``), and
    ``training`` then points at that copy. Passes over X: 1.
    """
    X = training.array()
    group = None
    if training.needs_copy:
        group = passes.model_group({X_TRAIN: (X.shape, (X.shape[0], X.chunks[1][0]), X.dtype)})
    products = training_products(X, passes, landmarks, copy_to=group)
    if group is not None:
        training.keep_copy(passes.settle(group))
    return products


def new_products(X_new, training: TrainingData, landmarks: np.ndarray | None, name: str = "the model") -> Products:
    """One pass over new data and the training data together: their cross products (m x n_ref)."""
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


__all__ = ["Products", "choose_landmarks", "copying_chunks", "kernel_passes", "kernel_products", "new_products", "training_products"]
