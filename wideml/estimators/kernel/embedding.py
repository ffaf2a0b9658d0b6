"""What the kernel models share: their declared model state, and the mixin of the kernel classifiers (KPCATrick, KernelLOL)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from wideml.estimators.fitted import FittedState, array, state
from wideml.estimators.kernel.basis import KernelBasis
from wideml.estimators.kernel.products import new_products
from wideml.estimators.kernel.training import TrainingData
from wideml.storage.labels import classes_from_model


def _class_passes(cls) -> int:
    """Passes of a model saved before ``n_fit_passes`` was recorded: the one pass every kernel fit makes."""
    return cls.n_fit_passes


class KernelModelState:
    """The model state every kernel estimator keeps: its ``_fitted`` table, then the KPCA basis and training data.

    Listed before :class:`~wideml.estimators.fitted.FittedState` among an
    estimator's bases (which turns the table and these hooks into
    ``_model_state`` / ``_from_model_state``). The basis (state ``basis`` and
    arrays ``kpca_*``) and the training data (state ``training`` and, unless it
    is a store's path, array ``X_train``) are nested objects:
    :meth:`_save_more` / :meth:`_load_more` keep them.
    """

    #: Passes over X made by ``fit``: the Gram pass (with ``n_landmarks``, the landmark cross-Gram pass).
    n_fit_passes = 1

    _fitted = (
        state("n_features_in_", load=int),
        state("n_fit_passes_", load=int, default=_class_passes),  # absent from models saved before it was recorded
        array("embedding_"),
        array("landmarks_", optional=True),
    )

    def _save_more(self, state_out: dict, arrays: dict) -> None:
        state_out["basis"], basis_arrays = self.basis_.state()
        state_out["training"], training_arrays = self.training_.state()
        arrays.update(basis_arrays)
        arrays.update(training_arrays)

    def _load_more(self, state_in: dict, arrays: dict) -> None:
        """The basis read in memory, the training data by reference (the store's path, or the saved X_train, lazily)."""
        self.basis_ = KernelBasis.from_state(state_in["basis"], arrays)
        self.training_ = TrainingData.from_state(state_in["training"], arrays)


class KernelEmbeddingMixin(KernelModelState, FittedState):
    """What the estimators that map KPCA coordinates linearly (``components_``) and then classify share.

    Subclasses set ``basis_``, ``training_``, ``landmarks_``, ``components_``, ``embedding_``,
    ``classes_``, ``_codes``, ``n_features_in_`` and ``n_fit_passes_`` in ``fit``, and implement
    ``_head()`` returning the fitted classifier on the embedding and ``_fit_head()`` refitting it.
    """

    _fitted = KernelModelState._fitted + (
        array("components_"),
        array("_codes", "codes"),
        array("classes_", load=classes_from_model),  # text classes: zarr reads StringDType, back to <U
    )

    def fit_transform(self, X, y=None) -> np.ndarray:
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

    def _load_more(self, state_in: dict, arrays: dict) -> None:
        super()._load_more(state_in, arrays)
        self._fit_head()


__all__ = ["KernelEmbeddingMixin", "KernelModelState"]
