"""What the encoder's model keeps beyond its ``_fitted`` table (:class:`~wideml.estimators.fitted.FittedState` hooks).

:class:`~wideml.estimators.encoder.estimator.EncoderClassifier` declares its fitted
attributes in a table; its ``_save_more`` / ``_load_more`` hooks call
:func:`save_extra` / :func:`load_extra` for the rest: the fitted LDA (kept as
``lda_coef``, ``lda_intercept`` and ``lda_classes``), a full-kernel model's
training codes and training store (reopened at load, its shape checked), and
the p-sized arrays of an in-memory fit, saved chunked along features like X.
Saving reads no training data: a full-kernel model with the linear kernel
keeps the class means its fit's Gram pass computed.
"""

from __future__ import annotations

import math
from typing import Any

import dask.array as da
import numpy as np
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

from wideml.exceptions import WidemlError
from wideml.estimators.encoder.types import Encoder
from wideml.storage.featurestore import open_store


#: Arrays only a model whose selected kernel is spearman predicts from.
_RANK_ARRAYS = ("class_mean_ranks", "rank_sums", "sketch_idx")
_P_SIZED = ("class_means", "class_mean_ranks")


def scores_to_json(scores: dict) -> dict:
    """Kernel scores for the model state (nan, a single kernel's, as null)."""
    return {k: (None if math.isnan(v) else float(v)) for k, v in scores.items()}


def scores_from_json(scores: dict) -> dict:
    """Kernel scores from the model state (null back to nan)."""
    return {k: (float("nan") if v is None else v) for k, v in scores.items()}


def chunked(est: Encoder, A: Any) -> Any:
    """A p-sized in-memory array chunked along features like X (``feature_chunk_``); dask arrays as they are."""
    if isinstance(A, np.ndarray):
        width = int(getattr(est, "feature_chunk_", None) or A.shape[1])
        return da.from_array(A, chunks=(A.shape[0], width))
    return A


def save_extra(est: Encoder, state: dict, arrays: dict) -> None:
    """Add to a fitted encoder's table-made ``state`` and ``arrays`` what the table cannot express.

    Raises
    ------
    WidemlError
        For a full-kernel model that predicts from its training data (euclidean,
        spearman) when that data was not a store.
    """
    lda = est.classifier_
    state["lda_classes"] = np.asarray(lda.classes_).tolist()
    arrays["lda_coef"] = lda.coef_
    arrays["lda_intercept"] = lda.intercept_
    if est.kernel_ != "spearman":
        for key in _RANK_ARRAYS:
            arrays.pop(key, None)
    for key in _P_SIZED:
        if key in arrays:
            arrays[key] = chunked(est, arrays[key])
    if est.form == "full":
        provenance = getattr(est, "provenance_", None)  # a loaded model has its training store's path instead
        store = provenance.get("store") if provenance is not None else getattr(est, "_train_store", None)
        if est.class_means_ is None and store is None:
            raise WidemlError("a full-kernel encoder predicts from its training data, which was an in-memory array; "
                              "train it on a store (or use form='fast') to save it.")
        state["train_store"] = store
        arrays["train_codes"] = est.train_codes_


def load_extra(est: Encoder, state: dict, arrays: dict) -> None:
    """Restore what :func:`save_extra` saved on an encoder the table has filled.

    Raises
    ------
    WidemlError
        If a full-kernel model's training store has changed shape.
    """
    lda = LinearDiscriminantAnalysis()
    lda.coef_ = np.asarray(arrays["lda_coef"][...])
    lda.intercept_ = np.asarray(arrays["lda_intercept"][...])
    lda.classes_ = np.asarray(state["lda_classes"])
    lda.n_features_in_ = lda.coef_.shape[1]
    est.classifier_ = lda
    est._group = None
    est._train_X = None
    if est.form == "full":
        est.train_codes_ = np.asarray(arrays["train_codes"][...])
        est._train_store = state.get("train_store")
        if est._train_store:
            store = open_store(est._train_store)
            if store.n_features != est.n_features_in_ or store.n_samples != len(est.train_codes_):
                raise WidemlError(f"the training store {est._train_store!r} of this full-kernel model has changed shape; refit the model.")
            est._train_X = store.X


__all__ = ["chunked", "load_extra", "save_extra", "scores_from_json", "scores_to_json"]
