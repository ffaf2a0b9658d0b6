"""Saving and loading :class:`~wideml.estimators.encoder.EncoderClassifier` models (the model-group state and arrays).

The generic model I/O (``storage/model.py``) calls the estimator's
``_model_state`` and ``_from_model_state``; they delegate to
:func:`model_state` and :func:`from_model_state`. The p-sized arrays (class
means and their ranks) are saved chunked along features like X; a full-kernel
model names its training store instead, and reopens it on load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import math

import dask.array as da
import numpy as np
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.utils.validation import check_is_fitted

from wideml.estimators._encoder_full import full_linear_means
from wideml.exceptions import WidemlError

if TYPE_CHECKING:
    from wideml.estimators.encoder import EncoderClassifier


def model_state(est: EncoderClassifier) -> tuple[dict, dict]:
    """The JSON state and the arrays of a fitted encoder, as ``Estimator._model_state`` returns them.

    Parameters
    ----------
    est : EncoderClassifier
        A fitted encoder.

    Returns
    -------
    state : dict
        JSON-serialisable fitted state.
    arrays : dict of str -> array-like
        The small arrays, and the p-sized ones (n_classes x n_features) chunked along features like X.

    Notes
    -----
    Passes over X: none, except for a full-kernel linear model trained on an
    in-memory array, whose class means are computed here (one pass over that array).
    """
    check_is_fitted(est, "classifier_")
    lda = est.classifier_
    state = {
        "n_features_in": int(est.n_features_in_),
        "kernels": list(est.kernels_),
        "kernel": est.kernel_,
        "kernel_scores": {k: (None if math.isnan(v) else float(v)) for k, v in est.kernel_scores_.items()},
        "offset": float(est.offset_),
        "spearman_mode": est.spearman_mode_,
        "precision": est.precision_,
        "n_fit_passes": int(est.n_fit_passes_),
        "lda_classes": np.asarray(lda.classes_).tolist(),
    }
    arrays = {
        "classes": est.classes_,
        "train_counts": est.train_counts_,
        "lda_coef": lda.coef_,
        "lda_intercept": lda.intercept_,
        "embedding": est.embedding_,
    }
    if est.form == "full":
        store = est.provenance_.get("store")
        if est.kernel_ != "linear" and store is None:
            raise WidemlError("a full-kernel encoder predicts from its training data, which was an in-memory array; "
                              "train it on a store (or use form='fast') to save it.")
        state["train_store"] = store
        arrays["train_codes"] = est.train_codes_
        if est.kernel_ == "linear" and store is None:
            # inner product: A W = X U^T, so the class means suffice
            arrays["class_means"] = full_linear_means(est)
        return state, arrays
    arrays["class_means"] = chunked(est, est.class_means_)
    if est.kernel_ == "spearman":
        arrays["class_mean_ranks"] = chunked(est, est.class_mean_ranks_)
        arrays["rank_sums"] = np.stack(est.rank_sums_)
        if est.sketch_idx_ is not None:
            arrays["sketch_idx"] = est.sketch_idx_
    return state, arrays


def chunked(est: EncoderClassifier, A: Any) -> Any:
    """p-sized in-memory arrays are saved chunked along features like X (dask arrays as they are)."""
    if isinstance(A, np.ndarray):
        width = int(getattr(est, "feature_chunk_", None) or A.shape[1])
        return da.from_array(A, chunks=(A.shape[0], width))
    return A


def from_model_state(cls: type[EncoderClassifier], params: dict, state: dict, arrays: dict) -> EncoderClassifier:
    """An encoder rebuilt from a model group's parameters, state and arrays, as ``Estimator._from_model_state`` returns it.

    Parameters
    ----------
    cls : type
        ``EncoderClassifier`` (or a subclass).
    params : dict
        Constructor parameters.
    state : dict
        The JSON state written by :func:`model_state`.
    arrays : dict of str -> array-like
        The model group's arrays (zarr arrays: p-sized ones are read lazily as dask arrays).

    Returns
    -------
    EncoderClassifier

    Raises
    ------
    WidemlError
        If a full-kernel model's training store has changed shape.
    """
    est = cls(**params)
    from wideml.storage.labels import classes_from_model

    est.classes_ = classes_from_model(arrays["classes"])  # text classes: zarr reads StringDType, back to <U
    est.n_features_in_ = int(state["n_features_in"])
    est.kernels_ = tuple(state["kernels"])
    est.kernel_ = state["kernel"]
    est.kernel_scores_ = {k: (float("nan") if v is None else v) for k, v in state["kernel_scores"].items()}
    est.offset_ = float(state["offset"])
    est.spearman_mode_ = state["spearman_mode"]
    est.precision_ = state["precision"]
    est.n_fit_passes_ = int(state["n_fit_passes"])
    est.train_counts_ = np.asarray(arrays["train_counts"][...])
    est.embedding_ = np.asarray(arrays["embedding"][...])
    lda = LinearDiscriminantAnalysis()
    lda.coef_ = np.asarray(arrays["lda_coef"][...])
    lda.intercept_ = np.asarray(arrays["lda_intercept"][...])
    lda.classes_ = np.asarray(state["lda_classes"])
    lda.n_features_in_ = lda.coef_.shape[1]
    est.classifier_ = lda
    est.sketch_idx_ = np.asarray(arrays["sketch_idx"][...]) if "sketch_idx" in arrays else None
    est.rank_sums_ = tuple(np.asarray(arrays["rank_sums"][...])) if "rank_sums" in arrays else None
    est.class_means_ = da.from_zarr(arrays["class_means"]) if "class_means" in arrays else None
    est.class_mean_ranks_ = da.from_zarr(arrays["class_mean_ranks"]) if "class_mean_ranks" in arrays else None
    est._group = None
    est._train_X = None
    if est.form == "full":
        est.train_codes_ = np.asarray(arrays["train_codes"][...])
        if state.get("train_store"):
            from wideml.storage.featurestore import open_store

            store = open_store(state["train_store"])
            if store.n_features != est.n_features_in_ or store.n_samples != len(est.train_codes_):
                raise WidemlError(f"the training store {state['train_store']!r} of this full-kernel model has changed shape; refit the model.")
            est._train_X = store.X
    return est


__all__ = ["chunked", "from_model_state", "model_state"]
