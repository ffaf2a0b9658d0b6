"""Cross-validation of the encoder classifier from one pass over X (every fold's class means at once).

Its passes run through the fit runner (:class:`~wideml.runner.fit_runner.FitPasses`)
like a fit's: numbered in their labels, run directly on an in-memory X, and
counted (the result's ``n_passes``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
from sklearn.model_selection import StratifiedKFold, check_cv

from wideml.algebra import encoder as alg
from wideml.runner import resume as _resume
from wideml.estimators.encoder.fit import (
    _baseline,
    _choose,
    _class_stats,
    _needs_row_norms,
    _precision,
    _set_stats,
    _SetPlan,
    _spearman_fit_passes,
    _spearman_plan,
    _validate_params,
    rank_passes,
)
from wideml.runner.fit_runner import FitPasses
from wideml.estimators.encoder.estimator import EncoderClassifier
from wideml.inputs.door import fit_input
from wideml.estimators.params import CV_FOLDS, NONE, SEED, check_parameters
from wideml.exceptions import WidemlError
from wideml.passes import encoder as enc


def cross_validate_encoder(
    X,
    y=None,
    cv=5,
    kernels: str | Sequence[str] = ("linear", "euclidean", "spearman"),
    *,
    selection: str = "cross_entropy",
    baseline: str | None = "linear",
    switch_threshold: float = 0.3,
    spearman: str = "auto",
    sketch_size: int = 4096,
    precision: str = "auto",
    random_state: int | None = 0,
) -> dict:
    """Cross-validated error of the encoder classifier, every fold from the same pass.

    Each fold's class means are sums over its training rows, so one chunk task
    accumulates every fold's class means and X-to-U products at once (a
    stacked class-mean operator, n x folds*K). All folds therefore cost **one
    pass over X** for the linear and euclidean kernels and **two** with
    spearman (exact ranks in one block, or estimated ranks; one pass more per
    extra row block when exact ranks must be split). No n x n Gram is formed.

    Parameters
    ----------
    X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), optional (taken from a labelled store)
    cv : int, splitter or iterable of (train, test), default 5
        An int means stratified shuffled k-fold with ``random_state``.
    kernels, selection, baseline, switch_threshold, spearman, sketch_size, precision :
        As for :class:`EncoderClassifier`.
    random_state : int or None, default 0
        Fold shuffling seed (and the seed of the sampled features).

    Returns
    -------
    dict
        ``fold_errors`` (list, the selected kernel's test error per fold),
        ``mean_error``, ``std_error``, ``selected_kernels`` (per fold),
        ``kernel_scores`` (per fold, kernel -> score), ``kernel_errors``
        (kernel -> per-fold test error of that kernel alone), ``n_folds``,
        ``n_passes``, ``kernels``, ``selection``, ``spearman_mode``.
    """
    check_parameters("cross_validate_encoder", {"cv": cv, "random_state": random_state}, {"cv": CV_FOLDS, "random_state": [SEED, NONE]})
    est = EncoderClassifier(kernels, selection, baseline, switch_threshold, "fast", spearman, sketch_size, precision,
                            random_state if random_state is not None else 0)
    params = est.get_params(deep=False)
    check_parameters("cross_validate_encoder", {k: v for k, v in params.items() if k not in ("form", "workdir")},
                     est._parameter_constraints)
    kernels = _validate_params(est)
    data = fit_input(X, y)
    n, p, K = data.n_samples, data.n_features, data.n_classes
    if isinstance(cv, numbers.Integral):
        min_count = int(np.bincount(data.codes).min())
        if cv > min_count:
            raise WidemlError(f"cv={cv} folds need at least {cv} samples in every class, but the smallest class has {min_count}; lower cv.")
        cv = StratifiedKFold(int(cv), shuffle=True, random_state=random_state)
    cv = check_cv(cv, data.y, classifier=True)
    folds = [(np.asarray(tr), np.asarray(te)) for tr, te in cv.split(np.zeros((n, 1)), data.codes)]
    plan_sets = _SetPlan(data.codes, [tr for tr, _ in folds], selection == "cv_cross_entropy" and len(kernels) > 1,
                         est.random_state)
    W, counts = alg.stacked_class_weights(data.codes, K, plan_sets.sets)
    use_rank = "spearman" in kernels
    plan = _spearman_plan(spearman, n, p, W.shape[1]) if use_rank else (None, 0)
    sketch = alg.sketch_features(p, sketch_size, est.random_state) if plan[0] == "approx" else None
    prec = _precision(precision, data.dtype)
    Xmem = data.numpy_X
    need_sq = _needs_row_norms(kernels, selection)
    # a store's X is resumable inside a resumable run (`wideml cv` opens one); checkpoints numbered from 500:
    # a resumable `wideml cv` session may also hold a fit's passes 1, 2, ...
    passes = FitPasses.for_run("encoder cross-validation", "cross_validate_encoder",
                               dict(params, cv=_resume.digest(*[te for _, te in folds])), data, 1 + rank_passes(plan, n), first=500,
                               resumable=Xmem is None)
    stats = _class_stats(passes, data.dask_X, Xmem, W, sketch=sketch, keep=plan[0] == "exact", precision=prec, need_sq=need_sq,
                         what=f"class statistics and X-to-U products of {len(folds)} folds", kind="encoder-cv-stats")
    ranks = None
    loo = None
    if use_rank:
        if selection == "loo_cross_entropy" and len(kernels) > 1:
            loo = enc.LooSpec.from_sets(data.codes, K, plan_sets.sets[: len(folds)], counts)
        ranks, _ = _spearman_fit_passes(passes, data.dask_X, W, stats, plan, loo, n_write=0, out_group=None, Xmem=Xmem,
                                        kind="encoder-cv-ranks")
    n_passes = passes.record()
    fold_errors, selected, fold_scores = [], [], []
    kernel_errors: dict[str, list[float]] = {k: [] for k in kernels}
    pos = 0
    for s, (tr, te) in enumerate(folds):
        a = _set_stats(stats, ranks, s, K)
        loo_own = None
        if ranks is not None and ranks.loo_corr is not None:
            loo_own = ranks.loo_corr[pos : pos + len(tr)]
        pos += len(tr)
        chosen, scores, ldas, offsets, _ = _choose(kernels, a.rows(tr), data.codes[tr], counts[s], selection,
                                                   _baseline(est), switch_threshold, loo_own,
                                                   plan_sets.inner_parts(s, stats, ranks, K, data.codes))
        test = a.rows(te)
        for kern in kernels:
            Zt = alg.embed(kern, test, offsets[kern])[0]
            kernel_errors[kern].append(float(np.mean(ldas[kern].predict(Zt) != data.codes[te])))
        fold_errors.append(kernel_errors[chosen][-1])
        selected.append(chosen)
        fold_scores.append({k: (None if math.isnan(v) else float(v)) for k, v in scores.items()})
    return {
        "fold_errors": fold_errors,
        "mean_error": float(np.mean(fold_errors)),
        "std_error": float(np.std(fold_errors)),
        "selected_kernels": selected,
        "kernel_scores": fold_scores,
        "kernel_errors": kernel_errors,
        "n_folds": len(folds),
        "n_passes": n_passes,
        "kernels": list(kernels),
        "selection": selection,
        "spearman_mode": plan[0],
    }


__all__ = ["cross_validate_encoder"]
