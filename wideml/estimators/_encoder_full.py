"""The full-kernel form of :class:`~wideml.estimators.encoder.EncoderClassifier` (Section 2): Z = A W.

A is the n x n kernel matrix of the training rows, from one Gram pass (plus the
rank Gram for spearman); each kernel's embedding is A times the class-mean
operator W, every inner fold's a principal sub-block of A times that fold's W.
Embedding new data reads the training data again (a cross-Gram pass), so the
estimator keeps a handle on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import dask.array as da
import numpy as np

from wideml.algebra import encoder as alg
from wideml.algebra.centering import class_weights
from wideml.estimators._encoder_fit import _baseline, _exact_block_rows, _inner_folds, _lda, _proba
from wideml.exceptions import WidemlError
from wideml.passes import encoder as enc
from wideml.passes.crossgram import raw_cross_gram_pass
from wideml.passes.gram import gram_pass
from wideml.runtime import compute

if TYPE_CHECKING:
    from wideml.estimators._input import FitInput
    from wideml.estimators.encoder import EncoderClassifier


def choose_full(kernels: tuple[str, ...], A: dict[str, np.ndarray], codes: np.ndarray, K: int, counts: np.ndarray,
                selection: str, baseline: str | None, threshold: float,
                inner: Sequence[tuple[np.ndarray, np.ndarray]] = ()) -> tuple[str, dict, dict, dict]:
    """Full-kernel form: Z = A W per kernel, then the same selection.

    Parameters
    ----------
    kernels : tuple of str
    A : dict of str -> ndarray of shape (n, n)
        Each kernel's matrix between the training rows.
    codes : ndarray of int, shape (n,)
    K : int
        Number of classes.
    counts : ndarray of int, shape (K,)
        Training class counts.
    selection, baseline, threshold :
        The selection score and rule (as for ``EncoderClassifier``).
    inner : sequence of (inner-training, inner-test) positions within the training rows
        Every inner fold's embedding is a principal sub-block of A times that fold's W.

    Returns
    -------
    (kernel, scores, ldas, training embeddings)
    """
    W = class_weights(codes, K)
    scores, ldas, Zs = {}, {}, {}
    for kern in kernels:
        Z = A[kern] @ W
        lda = _lda(Z, codes)
        ldas[kern], Zs[kern] = lda, Z
        if len(kernels) == 1:
            scores[kern] = float("nan")
        elif selection == "cross_entropy":
            scores[kern] = alg.cross_entropy(_proba(lda, Z), codes)
        elif selection == "loo_cross_entropy":
            Zl = alg.loo_full(Z, np.diag(A[kern]), codes, counts)
            scores[kern] = alg.cross_entropy(_proba(_lda(Zl, codes), Zl), codes)
        else:
            total = 0.0
            for tr, te in inner:
                Wi = class_weights(codes[tr], K)
                Zi = A[kern][np.ix_(tr, tr)] @ Wi
                Zt = A[kern][np.ix_(te, tr)] @ Wi
                total += alg.cross_entropy(_proba(_lda(Zi, codes[tr]), Zt), codes[te])
            scores[kern] = total
    chosen = kernels[0] if len(kernels) == 1 else alg.select_kernel(scores, baseline, threshold)
    return chosen, scores, ldas, Zs


def fit_full(est: EncoderClassifier, data: FitInput, kernels: tuple[str, ...]) -> None:
    """Fit ``est`` in the full-kernel form: sets its fitted attributes and keeps the training data's handle.

    Parameters
    ----------
    est : EncoderClassifier
    data : FitInput
        The validated training input.
    kernels : tuple of str
        The resolved kernel names.

    Notes
    -----
    Passes over X: 1 (the n x n Gram, plus the rank Gram for spearman, in the same pass).
    """
    n, p, K = data.n_samples, data.n_features, data.n_classes
    est._drop_previous_group()
    Xd = data.X
    graphs = [gram_pass(Xd)]
    if "spearman" in kernels:
        if _exact_block_rows(n, p, 0) < n:
            raise WidemlError("form='full' with the spearman kernel ranks all of X at once, which does not fit the memory "
                              "budget; use form='fast' or raise wideml.memory-limit.")
        graphs.append(enc.rank_gram_block(Xd))
    results = compute(*graphs, label="EncoderClassifier fit (full kernel): Gram pass")
    G, sq = results[0].raw_gram(), results[0].sq_norms()
    A, offsets = {}, {}
    for kern in kernels:
        rank_stats = None
        if kern == "spearman":
            r = results[1]
            rank_stats = (r["a_sum"], r["a_sq"], r["b_sum"], r["b_sq"], p)
            A[kern], offsets[kern] = alg.full_kernel(kern, r["gram"], sq, sq, rank_stats=rank_stats)
        else:
            A[kern], offsets[kern] = alg.full_kernel(kern, G, sq, sq)
    counts = np.bincount(data.codes, minlength=K)
    inner = (_inner_folds(data.codes, np.arange(n), est.random_state)
             if est.selection == "cv_cross_entropy" and len(kernels) > 1 else ())
    chosen, scores, ldas, Zs = choose_full(kernels, A, data.codes, K, counts, est.selection, _baseline(est),
                                           est.switch_threshold, inner)
    est.kernel_, est.kernel_scores_ = chosen, scores
    est.classifier_ = ldas[chosen]
    est.embedding_ = Zs[chosen]
    est.offset_ = float(offsets[chosen])
    est.spearman_mode_ = "exact" if "spearman" in kernels else None
    est.sketch_idx_ = None
    est.n_fit_passes_ = 1
    est.train_codes_ = data.codes
    est.class_means_ = None
    est.class_mean_ranks_ = None
    est.rank_sums_ = None
    est._group = None
    est._train_X = Xd


def transform_full(est: EncoderClassifier, Xd: da.Array) -> np.ndarray:
    """The full-kernel embedding A W of new data, A the kernel between its rows and the training rows.

    Parameters
    ----------
    est : EncoderClassifier
        A fitted full-kernel encoder that holds its training data.
    Xd : dask array of shape (m, n_features)

    Returns
    -------
    ndarray of shape (m, n_classes)

    Notes
    -----
    Passes: 1 over ``Xd`` and the training data together (their cross-Gram, or rank cross-products).
    """
    if est._train_X is None:
        raise WidemlError("this full-kernel model has no training data attached; refit it or load it from a model saved after training on a store.")
    K = len(est.classes_)
    W = class_weights(est.train_codes_, K)
    if est.kernel_ == "spearman":
        (r,) = compute(enc.rank_gram_block(Xd, est._train_X), label="EncoderClassifier (full kernel): rank cross-products")
        A, _ = alg.full_kernel("spearman", r["gram"], None, None,
                               rank_stats=(r["a_sum"], r["a_sq"], r["b_sum"], r["b_sq"], est.n_features_in_))
    else:
        (r,) = compute(raw_cross_gram_pass(Xd, est._train_X), label="EncoderClassifier (full kernel): cross-Gram pass")
        A, _ = alg.full_kernel(est.kernel_, r["gram"], r["a_sq"], r["b_sq"], offset=est.offset_)
    return A @ W


def full_linear_means(est: EncoderClassifier) -> np.ndarray:
    """The class means U = W^T X of the training data (one pass over it), shape (n_classes, n_features)."""
    W = class_weights(est.train_codes_, len(est.classes_))
    (U,) = compute(da.from_array(W.T) @ est._train_X.astype(np.float64), label="EncoderClassifier: class means")
    return U


__all__ = ["choose_full", "fit_full", "full_linear_means", "transform_full"]
