"""The multi-kernel encoder classifier (Shen, "Fast and Scalable Multi-Kernel Encoder Classifier").

Sample i is embedded as Z(i, k) = kernel(x_i, u_k), u_k the mean of the
training samples of class k ("X-to-U"); an LDA on Z classifies; with several
kernels, the one whose LDA fits the training labels best by cross-entropy is
kept. Kernels: ``linear`` (inner product), ``euclidean`` (distance-induced,
d_max - ||x - u||) and ``spearman`` (rank correlation).

Passes over X
-------------
========================  ======================================================
fit, linear / euclidean   **1** (class means and X U^T accumulate together)
fit, + spearman           **2** (exact ranks when the rows fit the memory
                          budget as one block; else ``spearman="approx"``)
predict / transform       1 (linear, euclidean); spearman: 1 (exact) or 2 (approx)
cross_validate_encoder    1 for all folds (2 with spearman)
form="full" fit           1 (the n x n Gram, plus the rank Gram for spearman)
========================  ======================================================

Kernel selection
----------------
For each kernel an LDA is fitted on the training embedding, and the kernel
is scored by a cross-entropy. ``baseline="linear"`` with
``switch_threshold=0.3`` is the paper's rule: keep the inner product unless
another kernel scores at least 30% lower. ``baseline=None`` takes the plain
arg-min. The final LDA is always fitted on the ordinary training embedding.
No score costs an extra pass. There are three scores:

- ``"cross_entropy"`` (**default**): the paper's score, -sum log T(i, y_i) of
  the LDA posteriors on its own training rows.
- ``"loo_cross_entropy"``: the leave-one-out corrected score of the digest
  (``shared/notes/seed_encoder.md`` §11). Each training row's own-class mean
  excludes the row itself, and the score is the cross-entropy of an LDA fitted
  to that corrected embedding. This targets the optimism that comes from every
  row being part of its own class mean.
- ``"cv_cross_entropy"``: held-out cross-entropy over 5 stratified inner
  folds, whose class means come from the same pass.

The default is the paper's score because it chose best in everything we
measured: the ``selection`` entries of ``benchmarks/results/encoder_real_data.json``
and ``encoder_simulations.json``, each the mean 5-fold error of the selected kernel.

================================  ===============  =================  ================
data                              cross_entropy    loo_cross_entropy  cv_cross_entropy
================================  ===============  =================  ================
Extended Yale B (38 people)       0.8%             0.8%               0.8%
Yale B, 10 / 6 people             2.9% / 3.6%      15.9% / 10.7%      2.9% / 3.6%
Cora                              27.4%            29.2%              29.2%
six simulations (36 cells)        34.4%            37.9%              43.8%
excess over best kernel (points)  +0.7 (max 4.2)   +4.2 (max 27.8)    +10.0 (max 50.3)
================================  ===============  =================  ================

Where Spearman is far better than the inner product (Yale subsets, the two
transformed simulations), the corrected scores often keep the inner product.
On Cora they keep the inner product, which is the choice the paper reports
(linear 29.2%). The paper's score switches to Spearman there, whose error is
lower (27.4%).

Spearman ranks
--------------
Spearman needs every row's ranks across all p features, which no feature
chunk holds. ``spearman="exact"`` ranks whole rows. It is one extra pass when
all rows fit the memory budget (``wideml.memory-limit``), and otherwise one
pass per block of rows that fits. ``spearman="approx"`` estimates each row's
ranks from its values at ``sketch_size`` features sampled with
``random_state``: rank(v) ~ p F(v) + 1/2, with F the row's interpolated
sample CDF. This takes one extra pass with O(n m) memory, and the error shrinks
like 1/sqrt(m). Measured errors of the embedding, |Z_estimated - Z_exact|:

- Extended Yale B (p = 1024, integer pixels with ties; ``encoder_real_data.py``):
  mean 0.016 / 0.008 / 0.004 and max 0.17 / 0.08 / 0.04 for m = 32 / 128 / 512.
  The test error was 1.6% / 1.2% / 0.7%, against 0.7% exact.
- 2 GB store (p = 250 000, continuous; ``encoder_2gb_store.py``): max 2.3e-4 for
  m = 4096.

``"auto"`` picks exact when one block suffices. Either way the rank step
evaluates every entry of X once (a sort per row, or one interpolation per entry),
so it costs far more CPU than the one-pass kernels. On the 2 GB store it takes
about two minutes on 2 shared cores.

CLI
---
The command line builds the estimator from plain keyword arguments, e.g.
``EncoderClassifier(kernels="linear,euclidean,spearman", selection="cross_entropy")``
(``kernels`` may be a comma-separated string), and then calls
``fit(store)`` or ``fit(store.X, store.y)``, ``predict(store)`` /
``predict_proba(store)``, and ``wideml.save_model`` / ``wideml.load_model``.
Cross-validation is ``cross_validate_encoder(store, cv=5, kernels=...)``, which
returns a JSON-serialisable dict. Every user error is a one-sentence
:class:`~wideml.exceptions.WidemlError`.

Modules
-------
This module holds the estimator; its helpers live in
``estimators/_encoder_data.py`` (input validation, running a pass on a graph
or directly on an in-memory array), ``estimators/_encoder_fit.py``
(parameters, the LDA, the Spearman rank passes, kernel selection) and
``estimators/_encoder_cv.py`` (:func:`cross_validate_encoder`, re-exported
here).
"""

from __future__ import annotations

import math

import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.utils.validation import check_is_fitted

from wideml.algebra import encoder as alg
from wideml.estimators import _resume
from wideml.estimators._encoder_cv import cross_validate_encoder
from wideml.estimators._encoder_data import (
    _dask_view,
    _feature_chunk,
    _fit_data,
    _group_array,
    _lazy,
    _memory_input,
    _run,
)
from wideml.passes.chunkmath import PRECISIONS
from wideml.estimators._encoder_fit import (
    ENCODER_CONSTRAINTS,
    FORMS,
    INNER_FOLDS,
    SELECTIONS,
    SPEARMAN_MODES,
    _baseline,
    _choose,
    _choose_full,
    _class_stats,
    _exact_block_rows,
    _inner_folds,
    _needs_row_norms,
    _precision,
    _proba,
    _set_stats,
    _SetPlan,
    _spearman_fit_passes,
    _spearman_plan,
    _validate_params,
)
from wideml.estimators._input import check_feature_layout, predict_input
from wideml.estimators._params import CheckedParams
from wideml.estimators._workdir import new_model_group
from wideml.exceptions import WidemlError
from wideml.passes import encoder as enc
from wideml.runtime import compute


class EncoderClassifier(CheckedParams, ClassifierMixin, TransformerMixin, BaseEstimator):
    """Multi-kernel encoder embedding to the class means, followed by LDA.

    Parameters
    ----------
    kernels : str or sequence of str, default ("linear", "euclidean", "spearman")
        Kernels to compare; a comma-separated string is accepted. One kernel
        ("linear") is the paper's linear encoder.
    selection : {"cross_entropy", "loo_cross_entropy", "cv_cross_entropy"}, default "cross_entropy"
        Score used to pick a kernel: the paper's training cross-entropy, the
        leave-one-out corrected one, or a held-out one over inner folds (see
        the module docstring for why the paper's is the default).
    baseline : str or None, default "linear"
        Kernel kept unless another scores at least ``switch_threshold`` lower;
        None picks the plain arg-min.
    switch_threshold : float, default 0.3
    form : {"fast", "full"}, default "fast"
        "fast": Z = kernel(X, U) with U the class means (Section 3).
        "full": Z = A W from the n x n kernel matrix (Section 2); predicting
        then needs the training data again (a pass over it), so a full-form
        model saved to disk must have been trained on a store.
    spearman : {"auto", "exact", "approx"}, default "auto"
    sketch_size : int, default 4096
        Features sampled per row by the approximate rank estimator (memory
        8 * n_samples * sketch_size bytes; rank error ~ 1/sqrt(sketch_size)).
    precision : {"auto", "float64", "float32"}, default "auto"
        Arithmetic of each chunk's products (auto: float32 for float32 X).
    random_state : int, default 0
        Seed of the sampled features (approximate ranks) and of the inner
        folds (``selection="cv_cross_entropy"``).
    workdir : str, optional
        Where store-backed class means are written until the model is saved.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    kernels_ : tuple of str
    kernel_ : str
        The selected kernel.
    kernel_scores_ : dict of str -> float
        Each kernel's selection score (nan when only one kernel is given).
    classifier_ : LinearDiscriminantAnalysis
        Fitted on the selected kernel's training embedding.
    embedding_ : ndarray of shape (n_samples, n_classes)
        Training embedding of the selected kernel.
    class_means_ : ndarray or dask array of shape (n_classes, n_features)
        U = W^T X; in memory for numpy input, else on disk chunked like X.
    class_mean_ranks_ : array of shape (n_classes, n_features) or None
        Ranks of each class mean across features (spearman only).
    offset_ : float
        The euclidean kernel's d_max (0 for other kernels).
    spearman_mode_ : {"exact", "approx"} or None
    n_fit_passes_ : int
        Passes over X the fit made.
    """

    _parameter_constraints = ENCODER_CONSTRAINTS

    def __init__(self, kernels=("linear", "euclidean", "spearman"), selection="cross_entropy", baseline="linear",
                 switch_threshold=0.3, form="fast", spearman="auto", sketch_size=4096, precision="auto", random_state=0,
                 workdir=None):
        self.kernels = kernels
        self.selection = selection
        self.baseline = baseline
        self.switch_threshold = switch_threshold
        self.form = form
        self.spearman = spearman
        self.sketch_size = sketch_size
        self.precision = precision
        self.random_state = random_state
        self.workdir = workdir

    # -- fit -------------------------------------------------------------------------------
    @_resume.auto_resumable
    def fit(self, X, y=None):
        """Fit the encoder and its LDA.

        Parameters
        ----------
        X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), optional when X is a labelled store

        Returns
        -------
        self

        Notes
        -----
        Passes over X: 1 for linear/euclidean kernels, +1 for spearman (exact
        in one block, or approximate), +1 per extra row block when exact ranks
        must be split; ``form="full"``: 1. Recorded in ``n_fit_passes_``.
        """
        self._validate_parameters()
        kernels = _validate_params(self)
        data = _fit_data(X, y)
        self.kernels_ = kernels
        self.classes_ = data.classes
        self.n_features_in_ = data.n_features
        self.precision_ = _precision(self.precision, (data.X if data.X is not None else data.numpy_X).dtype)
        self.provenance_ = dict(data.source)
        self.feature_layout_ = data.layout
        self.train_counts_ = np.bincount(data.codes, minlength=data.n_classes)
        self.feature_chunk_ = _feature_chunk(data)
        if self.form == "full":
            self._fit_full(data, kernels)
        else:
            self._fit_fast(data, kernels)
        return self

    def _fit_fast(self, data, kernels) -> None:
        n, p, K = data.n_samples, data.n_features, data.n_classes
        codes, Xd = data.codes, data.X
        sets = _SetPlan(codes, [np.arange(n)], self.selection == "cv_cross_entropy" and len(kernels) > 1, self.random_state)
        W, counts = alg.stacked_class_weights(codes, K, sets.sets)
        use_rank = "spearman" in kernels
        plan = _spearman_plan(self.spearman, n, p, W.shape[1]) if use_rank else (None, 0)
        group = None
        session = _resume.begin(self, data) if not data.in_memory else None  # a resumable fit, else None
        if not data.in_memory:
            width = Xd.chunks[1][0]
            arrays = {enc.CLASS_MEANS: ((K, p), (K, width))}
            if use_rank:
                arrays[enc.CLASS_MEAN_RANKS] = ((K, p), (K, width))
            group = _resume.model_group(session, arrays) if session else self._model_group(arrays)
        sketch = alg.sketch_features(p, self.sketch_size, self.random_state) if plan[0] == "approx" else None
        keep = data.in_memory or plan[0] == "exact"
        Xmem = data.numpy_X
        need_sq = _needs_row_norms(kernels, self.selection)
        total = 2 if plan[0] == "approx" else 1
        ck = _resume.pass_checkpoint(session, 1, total, kind="encoder-stats", W=_resume.digest(W), sketch=_resume.digest(sketch))
        stats = _class_stats(Xd, Xmem, W, sketch=sketch, keep=keep, precision=self.precision_, need_sq=need_sq, n_write=K,
                             out_group=group, label="EncoderClassifier fit: class statistics and X-to-U pass", checkpoint=ck)
        passes = 1
        ranks, S_mem = None, None
        loo = None
        if use_rank:
            if self.selection == "loo_cross_entropy" and len(kernels) > 1:
                loo = enc.LooSpec.from_sets(codes, K, sets.sets[:1], counts)
            rank_ck = _resume.pass_checkpoint(session, 2, total, kind="encoder-ranks", stats=_resume.digest(stats.sketch),
                                              loo=loo is not None) if plan[0] == "approx" else None
            ranks, S_mem, extra = _spearman_fit_passes(Xd, W, stats, plan, loo, n_write=K, out_group=group,
                                                       label="EncoderClassifier fit", Xmem=Xmem, checkpoint=rank_ck)
            passes += extra
        train = _set_stats(stats, ranks, 0, K)
        loo_own = ranks.loo_corr if (ranks is not None and ranks.loo_corr is not None) else None
        chosen, scores, ldas, offsets, Zs = _choose(kernels, train, codes, counts[0], self.selection, _baseline(self),
                                                    self.switch_threshold, loo_own, sets.inner_parts(0, stats, ranks, K, codes))
        self.kernel_, self.kernel_scores_ = chosen, scores
        self.classifier_ = ldas[chosen]
        self.embedding_ = Zs[chosen]
        self.offset_ = float(offsets[chosen])
        self.spearman_mode_ = plan[0]
        self.sketch_idx_ = sketch
        self.n_fit_passes_ = passes
        self.train_codes_ = codes
        if session is not None and group is not None:  # out of the work directory (removed once the fit succeeds)
            self._drop_previous_group()
            group = _resume.settle_group(self, group, self.workdir)
        self._group = group
        if group is not None:
            self.class_means_ = _group_array(group, enc.CLASS_MEANS, arrays)
            self.class_mean_ranks_ = _group_array(group, enc.CLASS_MEAN_RANKS, arrays) if use_rank else None
        else:
            self.class_means_ = stats.means[:K]
            self.class_mean_ranks_ = None
            if use_rank:
                self.class_mean_ranks_ = S_mem[:K]
        self.rank_sums_ = (ranks.s_sum[:K], ranks.s_sq[:K]) if ranks is not None else None
        self._train_X = None

    def _model_group(self, arrays: dict) -> str:
        """The zarr group the fit writes its p-sized arrays into.

        A refit with the same arrays (names, shapes, chunks) and ``workdir``
        overwrites the previous fit's group in place (the pass writes every
        chunk); otherwise the previous group is deleted and a new one made.
        """
        import os

        spec = (self.workdir, tuple(sorted(arrays.items())))
        old = getattr(self, "_group", None)
        if old and getattr(self, "_group_spec", None) == spec and os.path.isdir(old):
            return old
        self._drop_previous_group()
        group = new_model_group(self, self.workdir, arrays)
        self._group_spec = spec
        return group

    def _drop_previous_group(self) -> None:
        """A refit replaces the store-backed arrays of the previous fit: delete them now, not at exit."""
        import os
        import shutil

        old = getattr(self, "_group", None)
        if old:
            shutil.rmtree(os.path.dirname(old), ignore_errors=True)
            self._group = None
            self._group_spec = None

    def _fit_full(self, data, kernels) -> None:
        from wideml.passes.gram import gram_pass

        n, p, K = data.n_samples, data.n_features, data.n_classes
        self._drop_previous_group()
        Xd = _dask_view(data)
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
        inner = (_inner_folds(data.codes, np.arange(n), self.random_state)
                 if self.selection == "cv_cross_entropy" and len(kernels) > 1 else ())
        chosen, scores, ldas, Zs = _choose_full(kernels, A, data.codes, K, counts, self.selection, _baseline(self),
                                                self.switch_threshold, inner)
        self.kernel_, self.kernel_scores_ = chosen, scores
        self.classifier_ = ldas[chosen]
        self.embedding_ = Zs[chosen]
        self.offset_ = float(offsets[chosen])
        self.spearman_mode_ = "exact" if "spearman" in kernels else None
        self.sketch_idx_ = None
        self.n_fit_passes_ = 1
        self.train_codes_ = data.codes
        self.class_means_ = None
        self.class_mean_ranks_ = None
        self.rank_sums_ = None
        self._group = None
        self._train_X = Xd

    def fit_transform(self, X, y=None, **fit_params) -> np.ndarray:
        """Fit, then return the training embedding ``embedding_`` (no extra pass)."""
        return self.fit(X, y).embedding_

    # -- embedding of new data ------------------------------------------------------------
    def transform(self, X) -> np.ndarray:
        """Encoder embedding of X with the selected kernel.

        Parameters
        ----------
        X : array-like, dask array, zarr/h5py array or FeatureStore of shape (m, n_features)

        Returns
        -------
        ndarray of shape (m, n_classes)

        Notes
        -----
        Passes over X: 1 (linear, euclidean, exact spearman in one block) or 2
        (approximate spearman: the rows' sampled values, then their ranks).
        ``form="full"`` also reads the training data once.
        """
        check_is_fitted(self, "classifier_")
        check_feature_layout(X, self.n_features_in_, "EncoderClassifier", getattr(self, "feature_layout_", None))
        Xmem = _memory_input(X, self.n_features_in_)
        Xd = predict_input(X, self.n_features_in_, "EncoderClassifier") if Xmem is None else None
        if self.form == "full" and not (self.kernel_ == "linear" and self.class_means_ is not None):
            from wideml.passes.blocks import as_dask_array

            return self._transform_full(Xd if Xmem is None else as_dask_array(Xmem))
        m, p = (Xmem if Xmem is not None else Xd).shape
        label = "EncoderClassifier: new data"
        if self.kernel_ in ("linear", "euclidean"):
            U = self.class_means_
            local = Xmem if isinstance(U, np.ndarray) else None
            out = _run(local, lambda: enc.anchor_local(Xmem, U, precision=self.precision_),
                       lambda: enc.anchor_pass(_lazy(Xd, Xmem), U, precision=self.precision_), f"{label} (one pass)")
            stats = alg.AnchorStats(out["cross"], out["x_sq"], out["u_sq"], p)
            return alg.embed(self.kernel_, stats, self.offset_)[0]
        s_sum, s_sq = self.rank_sums_
        S = self.class_mean_ranks_
        Xg = _lazy(Xd, Xmem) if (Xd is not None or not isinstance(S, np.ndarray)) else None
        if self.spearman_mode_ == "approx":
            sample = _run(Xmem, lambda: enc.sketch_local(Xmem, self.sketch_idx_), lambda: enc.sketch_pass(Xg, self.sketch_idx_),
                          f"{label}: sampled values (pass 1/2)")
            tables = alg.rank_tables(sample)
            local = Xmem if isinstance(S, np.ndarray) else None
            out = _run(local, lambda: enc.anchor_local(Xmem, None, S=S, x_tables=tables),
                       lambda: enc.anchor_pass(Xg, None, S=S, x_tables=tables), f"{label}: estimated ranks (pass 2/2)")
            rank_cross, r_sum, r_sq = out["rank_cross"], out["r_sum"], out["r_sq"]
        else:
            if isinstance(S, da.Array):
                (S,) = compute(S, label="EncoderClassifier: read the class-mean ranks")
            block = max(1, _exact_block_rows(m, p, len(self.classes_)))
            rank_cross, r_sum, r_sq = np.empty((m, len(self.classes_))), np.empty(m), np.empty(m)
            starts = list(range(0, m, block))
            for i, r0 in enumerate(starts):
                r1 = min(m, r0 + block)
                res = _run(Xmem, lambda: enc.spearman_exact_local(Xmem, slice(r0, r1), S),
                           lambda: enc.spearman_exact_block(Xg, slice(r0, r1), S), f"{label}: exact ranks (block {i + 1}/{len(starts)})")
                rank_cross[r0:r1], r_sum[r0:r1], r_sq[r0:r1] = res["rank_cross"], res["r_sum"], res["r_sq"]
        return alg.pearson_from_sums(rank_cross, r_sum, r_sq, s_sum, s_sq, p)

    def _transform_full(self, Xd) -> np.ndarray:
        from wideml.algebra.centering import class_weights

        if self._train_X is None:
            raise WidemlError("this full-kernel model has no training data attached; refit it or load it from a model saved after training on a store.")
        K = len(self.classes_)
        W = class_weights(self.train_codes_, K)
        if self.kernel_ == "spearman":
            (r,) = compute(enc.rank_gram_block(Xd, self._train_X), label="EncoderClassifier (full kernel): rank cross-products")
            A, _ = alg.full_kernel("spearman", r["gram"], None, None,
                                   rank_stats=(r["a_sum"], r["a_sq"], r["b_sum"], r["b_sq"], self.n_features_in_))
        else:
            (r,) = compute(enc.cross_gram_pass(Xd, self._train_X), label="EncoderClassifier (full kernel): cross-Gram pass")
            A, _ = alg.full_kernel(self.kernel_, r["gram"], r["a_sq"], r["b_sq"], offset=self.offset_)
        return A @ W

    # -- classification --------------------------------------------------------------------
    def predict_proba(self, X) -> np.ndarray:
        """Posterior class probabilities from the LDA, shape (m, n_classes); passes as :meth:`transform`."""
        Z = self.transform(X)
        return _proba(self.classifier_, Z)

    def predict(self, X) -> np.ndarray:
        """Predicted labels, shape (m,); passes as :meth:`transform`."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def decision_function(self, X) -> np.ndarray:
        """The LDA's decision values on the embedding; passes as :meth:`transform`."""
        Z = self.transform(X)
        return self.classifier_.decision_function(Z)

    def score(self, X, y=None, sample_weight=None) -> float:
        """Mean accuracy on (X, y); labels absent from training are an error. One pass as :meth:`predict`."""
        check_is_fitted(self, "classifier_")
        if y is None and hasattr(X, "y"):
            y = X.y
        if y is None:
            raise WidemlError("score needs labels: pass y (or a store that holds y).")
        y = np.asarray(y)
        if y.dtype.kind in "OSU" or self.classes_.dtype.kind in "OSU":
            y_cmp, cls_cmp = y.astype(str), self.classes_.astype(str)
        else:
            y_cmp, cls_cmp = y, self.classes_
        unseen = np.setdiff1d(np.unique(y_cmp), cls_cmp)
        if unseen.size:
            raise WidemlError(
                f"y holds class {unseen[0].item() if hasattr(unseen[0], 'item') else unseen[0]!r} that was absent from training (the model knows {', '.join(map(str, cls_cmp))}); "
                "score only on classes the model was fitted on, or refit with samples of that class."
            )
        pred = self.predict(X)
        pred_cmp = pred.astype(str) if y_cmp.dtype.kind in "U" else pred
        return float(np.average(pred_cmp == y_cmp, weights=sample_weight))

    # -- model store -----------------------------------------------------------------------
    def _model_state(self):
        check_is_fitted(self, "classifier_")
        lda = self.classifier_
        state = {
            "n_features_in": int(self.n_features_in_),
            "kernels": list(self.kernels_),
            "kernel": self.kernel_,
            "kernel_scores": {k: (None if math.isnan(v) else float(v)) for k, v in self.kernel_scores_.items()},
            "offset": float(self.offset_),
            "spearman_mode": self.spearman_mode_,
            "precision": self.precision_,
            "n_fit_passes": int(self.n_fit_passes_),
            "lda_classes": np.asarray(lda.classes_).tolist(),
        }
        arrays = {
            "classes": self.classes_,
            "train_counts": self.train_counts_,
            "lda_coef": lda.coef_,
            "lda_intercept": lda.intercept_,
            "embedding": self.embedding_,
        }
        if self.form == "full":
            store = self.provenance_.get("store")
            if self.kernel_ != "linear" and store is None:
                raise WidemlError("a full-kernel encoder predicts from its training data, which was an in-memory array; "
                                  "train it on a store (or use form='fast') to save it.")
            state["train_store"] = store
            arrays["train_codes"] = self.train_codes_
            if self.kernel_ == "linear" and store is None:
                # inner product: A W = X U^T, so the class means suffice
                arrays["class_means"] = self._full_linear_means()
            return state, arrays
        arrays["class_means"] = self._chunked(self.class_means_)
        if self.kernel_ == "spearman":
            arrays["class_mean_ranks"] = self._chunked(self.class_mean_ranks_)
            arrays["rank_sums"] = np.stack(self.rank_sums_)
            if self.sketch_idx_ is not None:
                arrays["sketch_idx"] = self.sketch_idx_
        return state, arrays

    def _chunked(self, A):
        """p-sized in-memory arrays are saved chunked along features like X."""
        if isinstance(A, np.ndarray):
            width = int(getattr(self, "feature_chunk_", None) or A.shape[1])
            return da.from_array(A, chunks=(A.shape[0], width))
        return A

    def _full_linear_means(self):
        from wideml.algebra.centering import class_weights

        W = class_weights(self.train_codes_, len(self.classes_))
        (U,) = compute(da.from_array(W.T) @ self._train_X.astype(np.float64), label="EncoderClassifier: class means")
        return U

    @classmethod
    def _from_model_state(cls, params, state, arrays):
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


__all__ = ["EncoderClassifier", "cross_validate_encoder", "FORMS", "INNER_FOLDS", "PRECISIONS", "SELECTIONS", "SPEARMAN_MODES"]
