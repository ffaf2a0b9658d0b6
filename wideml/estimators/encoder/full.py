"""The full-kernel form of :class:`~wideml.estimators.encoder.estimator.EncoderClassifier` (Section 2): Z = A W.

A is the n x n kernel matrix of the training rows, from one Gram pass (plus the
rank Gram for spearman, and the class means U = W^T X when linear is among the
kernels); each kernel's embedding is A times the class-mean operator W, every
inner fold's a principal sub-block of A times that fold's W. With the linear
kernel selected, new data is embedded as X U^T (the fast form's pass), so
neither ``transform`` nor ``save_model`` reads the training data. With the
euclidean or spearman kernel, embedding new data reads the training data again
(a cross-Gram pass): the estimator keeps a handle on it, and a saved model
names its training store.
"""

from __future__ import annotations

from collections.abc import Sequence

import dask
import dask.array as da
import numpy as np

from wideml.algebra import encoder as alg
from wideml.algebra.centering import class_weights
from wideml.estimators.encoder.data import _group_array
from wideml.estimators.encoder.fit import _baseline, _exact_block_rows, _inner_folds, _lda, _proba
from wideml.runner.fit_runner import FitPasses
from wideml.exceptions import WidemlError
from wideml.passes import encoder as enc
from wideml.passes.crossgram import raw_cross_gram_pass
from wideml.passes.blocks import check_finite
from wideml.passes.gram import CLASS_MEANS, CLASS_MEDIANS, FEATURE_MEAN, gram_pass
from wideml.passes.spec import Pass
from wideml.runtime import compute
from wideml.estimators.encoder.types import Encoder
from wideml.inputs.door import FitInput


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


def _both(*results):
    return results


def _gram_graph(Xd: da.Array, codes: np.ndarray, K: int, group: str | None, rank: bool):
    """The fit's one pass as one graph: the Gram (filling the class means into ``group`` when given), and the rank Gram."""
    graphs = [gram_pass(Xd, codes, K, out_group=group) if group is not None else gram_pass(Xd)]
    if rank:
        graphs.append(enc.rank_gram_block(Xd))
    return dask.delayed(_both, pure=True)(*graphs)


def _gram_local(X: np.ndarray, W: np.ndarray | None, rank: bool) -> tuple:
    """:func:`_gram_graph` on an in-memory X: (X X^T, squared row norms, class means W^T X or None, rank Gram or None)."""
    check_finite(X, 0)
    x = np.asarray(X, dtype=np.float64)
    G = x @ x.T
    sq = np.einsum("ij,ij->i", x, x)
    U = W.T @ x if W is not None else None
    r = None
    if rank:
        R = alg.row_ranks(x)
        a_sum, a_sq = alg.rank_sums(R)
        r = {"gram": R @ R.T, "a_sum": a_sum, "a_sq": a_sq, "b_sum": a_sum, "b_sq": a_sq}
    return G, sq, U, r


def fit_full(est: Encoder, data: FitInput, kernels: tuple[str, ...]) -> None:
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
    Passes over X: 1, run through a :class:`~wideml.runner.fit_runner.FitPasses`
    (directly on an in-memory X): the n x n Gram, plus the rank Gram for
    spearman, and with the linear kernel the class means U = W^T X, all in
    the same pass. U is kept (in memory for in-memory input, else in the
    runner's model group chunked like X) when linear is selected, so the
    embedding of new data and ``save_model`` never read the training data
    again; the euclidean and spearman kernels do (a cross-Gram pass).
    """
    n, p, K = data.n_samples, data.n_features, data.n_classes
    linear, rank = "linear" in kernels, "spearman" in kernels
    if rank and _exact_block_rows(n, p, 0) < n:
        raise WidemlError("form='full' with the spearman kernel ranks all of X at once, which does not fit the memory "
                          "budget; use form='fast' or raise wideml.memory-limit.")
    W = class_weights(data.codes, K)
    passes = FitPasses(est, 1)
    group, arrays, local = None, None, None
    if data.in_memory:
        local = lambda: _gram_local(data.numpy_X, W if linear else None, rank)  # noqa: E731
    elif linear:
        width = data.X.chunks[1][0]
        arrays = {FEATURE_MEAN: ((p,), (width,)), CLASS_MEANS: ((K, p), (K, width)), CLASS_MEDIANS: ((K, p), (K, width))}
        group = passes.model_group(arrays)
    what = "Gram" + (" and class means" if linear else "") + (", rank Gram" if rank else "")
    out = passes.run(Pass(lambda: _gram_graph(data.X, data.codes, K, group, rank), local=local), what)
    passes.record()
    if data.in_memory:
        G, sq, U, r = out
    else:
        G, sq, U = out[0].raw_gram(), out[0].sq_norms(), None
        r = out[1] if rank else None
    A, offsets = {}, {}
    for kern in kernels:
        if kern == "spearman":
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
    est.spearman_mode_ = "exact" if rank else None
    est.sketch_idx_ = None
    est.train_codes_ = data.codes
    est._group = group
    est.class_means_ = None
    if chosen == "linear":  # the inner product: A W = X U^T, so new data needs only the class means
        est.class_means_ = U if group is None else _group_array(group, CLASS_MEANS, arrays)
    elif group is not None:
        est._drop_previous_group()  # class means of a kernel not selected
    est.class_mean_ranks_ = None
    est.rank_sums_ = None
    est._train_X = data.X if chosen != "linear" else None


def transform_full(est: Encoder, Xd: da.Array) -> np.ndarray:
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


__all__ = ["choose_full", "fit_full", "transform_full"]
