"""What the kernel models share: their model-store state, and the mixin of the kernel classifiers (KPCATrick, KernelLOL)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from wideml.estimators._kernel_basis import KernelBasis
from wideml.estimators._kernel_products import new_products
from wideml.estimators._kernel_training import TrainingData


def kernel_model_state(est) -> tuple[dict, dict]:
    """Model-store state shared by the kernel estimators: KPCA basis, training data, embedding, landmarks, passes."""
    st, arrays = est.basis_.state()
    tst, tarr = est.training_.state()
    arrays.update(tarr)
    arrays["embedding"] = est.embedding_
    if est.landmarks_ is not None:
        arrays["landmarks"] = est.landmarks_
    return {"basis": st, "training": tst, "n_features_in": est.n_features_in_, "n_fit_passes": int(est.n_fit_passes_)}, arrays


def restore_kernel_state(est, state: dict, arrays: dict) -> None:
    """Set what :func:`kernel_model_state` saved back on ``est`` (arrays read in memory, the training data by reference).

    Models saved before ``n_fit_passes`` was recorded made the one pass every
    kernel fit makes (the class's ``n_fit_passes``).
    """
    est.basis_ = KernelBasis.from_state(state["basis"], arrays)
    est.training_ = TrainingData.from_state(state["training"], arrays)
    est.embedding_ = np.asarray(arrays["embedding"][...])
    est.landmarks_ = np.asarray(arrays["landmarks"][...]) if "landmarks" in arrays else None
    est.n_features_in_ = int(state["n_features_in"])
    est.n_fit_passes_ = int(state.get("n_fit_passes", type(est).n_fit_passes))


class KernelEmbeddingMixin:
    """What the estimators that map KPCA coordinates linearly (``components_``) and then classify share.

    Subclasses set ``basis_``, ``training_``, ``landmarks_``, ``components_``, ``embedding_``,
    ``classes_``, ``_codes``, ``n_features_in_`` and ``n_fit_passes_`` in ``fit``, and implement
    ``_head()`` returning the fitted classifier on the embedding and ``_fit_head()`` refitting it.
    """

    #: Passes over X made by ``fit``: the Gram pass (with ``n_landmarks``, the landmark cross-Gram pass).
    n_fit_passes = 1

    def fit_transform(self, X, y) -> np.ndarray:
        """Fit and return the training samples' embedding (n x d); one pass over X."""
        return self.fit(X, y).embedding_

    def transform(self, X) -> np.ndarray:
        """Embedding (m x d) of new samples; one pass over X and the training data together."""
        check_is_fitted(self, "components_")
        return self.basis_.coordinates(new_products(X, self.training_, self.landmarks_, type(self).__name__)) @ self.components_.T

    def predict(self, X) -> np.ndarray:
        """Class labels; one pass over X and the training data together."""
        check_is_fitted(self, "components_")
        return self.classes_[self._head().predict(self.transform(X))]

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (m x n_classes); one pass over X and the training data together."""
        check_is_fitted(self, "components_")
        return self._head().predict_proba(self.transform(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    def _model_state(self):
        state, arrays = kernel_model_state(self)
        arrays.update({"components": self.components_, "codes": self._codes, "classes": self.classes_})
        return state, arrays

    @classmethod
    def _from_model_state(cls, params, state, arrays):
        est = cls(**params)
        restore_kernel_state(est, state, arrays)
        est.components_ = np.asarray(arrays["components"][...])
        est._codes = np.asarray(arrays["codes"][...])
        from wideml.storage.labels import classes_from_model

        est.classes_ = classes_from_model(arrays["classes"])  # text classes: zarr reads StringDType, back to <U
        est._restore_extra(arrays)
        est._fit_head()
        return est

    def _restore_extra(self, arrays) -> None:
        """Hook for subclass-specific arrays saved by ``_model_state``."""


__all__ = ["KernelEmbeddingMixin", "kernel_model_state", "restore_kernel_state"]
