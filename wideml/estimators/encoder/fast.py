"""The fast form of :class:`~wideml.estimators.encoder.estimator.EncoderClassifier` (Section 3): fit, and the embedding of new data.

Z = kernel(X, U) with U the class means. The fit accumulates the class
statistics and the X-to-U products in one pass (plus the Spearman rank
pass(es)), selects a kernel and fits its LDA; the class means (and their
ranks) are kept in memory for in-memory input, else written chunked like X
into the model's work group.
"""

from __future__ import annotations

import dask.array as da
import numpy as np

from wideml.algebra import encoder as alg
from wideml.estimators.encoder.data import _group_array, _lazy
from wideml.estimators.encoder.fit import (
    _baseline,
    _choose,
    _class_stats,
    _exact_block_rows,
    _needs_row_norms,
    _set_stats,
    _SetPlan,
    _spearman_fit_passes,
    _spearman_plan,
    rank_passes,
)
from wideml.runner.fit_runner import FitPasses, run_new_data
from wideml.passes import encoder as enc
from wideml.passes.sampling import sampled_features_local, sampled_features_pass
from wideml.passes.spec import Pass
from wideml.runtime import compute
from wideml.estimators.encoder.types import Encoder
from wideml.inputs.door import FitInput


def fit_fast(est: Encoder, data: FitInput, kernels: tuple[str, ...]) -> None:
    """Fit ``est`` in the fast form: sets its fitted attributes and its work group.

    Parameters
    ----------
    est : EncoderClassifier
    data : FitInput
        The validated training input (a dask view of X, or ``numpy_X`` for in-memory input).
    kernels : tuple of str
        The resolved kernel names.

    Notes
    -----
    Passes over X: 1 (class statistics and X-to-U products), +1 for spearman
    (exact in one block, or approximate), +1 per extra row block when exact
    ranks must be split; all run through one
    :class:`~wideml.runner.fit_runner.FitPasses`, which records them in
    ``est.n_fit_passes_``. A store's fit is resumable (the class-statistics and
    estimated-rank passes checkpoint); its p-sized arrays go to the runner's
    model group.
    """
    n, p, K = data.n_samples, data.n_features, data.n_classes
    codes, Xd = data.codes, data.dask_X  # None for in-memory input: its passes run on numpy_X directly
    sets = _SetPlan(codes, [np.arange(n)], est.selection == "cv_cross_entropy" and len(kernels) > 1, est.random_state)
    W, counts = alg.stacked_class_weights(codes, K, sets.sets)
    use_rank = "spearman" in kernels
    plan = _spearman_plan(est.spearman, n, p, W.shape[1]) if use_rank else (None, 0)
    passes = FitPasses.for_fit(est, 1 + rank_passes(plan, n), data)  # resumable when the fit is
    group = None
    if not data.in_memory:
        width = Xd.chunks[1][0]
        arrays = {enc.CLASS_MEANS: ((K, p), (K, width))}
        if use_rank:
            arrays[enc.CLASS_MEAN_RANKS] = ((K, p), (K, width))
        group = passes.model_group(arrays)
    sketch = alg.sketch_features(p, est.sketch_size, est.random_state) if plan[0] == "approx" else None
    keep = data.in_memory or plan[0] == "exact"
    Xmem = data.numpy_X
    need_sq = _needs_row_norms(kernels, est.selection)
    stats = _class_stats(passes, Xd, Xmem, W, sketch=sketch, keep=keep, precision=est.precision_, need_sq=need_sq, n_write=K,
                         out_group=group, what="class statistics and X-to-U products")
    ranks, S_mem = None, None
    loo = None
    if use_rank:
        if est.selection == "loo_cross_entropy" and len(kernels) > 1:
            loo = enc.LooSpec.from_sets(codes, K, sets.sets[:1], counts)
        ranks, S_mem = _spearman_fit_passes(passes, Xd, W, stats, plan, loo, n_write=K, out_group=group, Xmem=Xmem)
    group = passes.settle(group)  # a resumable fit's group, out of the work directory (removed once the fit succeeds)
    passes.record()
    train = _set_stats(stats, ranks, 0, K)
    loo_own = ranks.loo_corr if (ranks is not None and ranks.loo_corr is not None) else None
    chosen, scores, ldas, offsets, Zs = _choose(kernels, train, codes, counts[0], est.selection, _baseline(est),
                                                est.switch_threshold, loo_own, sets.inner_parts(0, stats, ranks, K, codes))
    est.kernel_, est.kernel_scores_ = chosen, scores
    est.classifier_ = ldas[chosen]
    est.embedding_ = Zs[chosen]
    est.offset_ = float(offsets[chosen])
    est.spearman_mode_ = plan[0]
    est.sketch_idx_ = sketch
    est.train_codes_ = codes
    est._group = group
    if group is not None:
        est.class_means_ = _group_array(group, enc.CLASS_MEANS, arrays)
        est.class_mean_ranks_ = _group_array(group, enc.CLASS_MEAN_RANKS, arrays) if use_rank else None
    else:
        est.class_means_ = stats.means[:K]
        est.class_mean_ranks_ = None
        if use_rank:
            est.class_mean_ranks_ = S_mem[:K]
    est.rank_sums_ = (ranks.s_sum[:K], ranks.s_sq[:K]) if ranks is not None else None
    est._train_X = None


def transform_fast(est: Encoder, Xmem: np.ndarray | None, Xd: da.Array | None) -> np.ndarray:
    """The fast-form embedding of new data with the selected kernel.

    Parameters
    ----------
    est : EncoderClassifier
        A fitted fast-form encoder.
    Xmem : ndarray of shape (m, n_features) or None
        New data already in memory (no graph is built for it), else None.
    Xd : dask array of shape (m, n_features) or None
        The dask view of new data when it is not in memory.

    Returns
    -------
    ndarray of shape (m, n_classes)

    Notes
    -----
    Passes over X: 1 (linear, euclidean, exact spearman in one block) or 2
    (approximate spearman: the rows' sampled values, then their ranks).
    """
    m, p = (Xmem if Xmem is not None else Xd).shape
    label = "EncoderClassifier: new data"
    if est.kernel_ in ("linear", "euclidean"):
        U = est.class_means_
        in_memory = Xmem is not None and isinstance(U, np.ndarray)
        out = run_new_data(Pass(lambda: enc.anchor_pass(_lazy(Xd, Xmem), U, precision=est.precision_),
                                local=(lambda: enc.anchor_local(Xmem, U, precision=est.precision_)) if in_memory else None),
                           f"{label} (one pass)")
        stats = alg.AnchorStats(out["cross"], out["x_sq"], out["u_sq"], p)
        return alg.embed(est.kernel_, stats, est.offset_)[0]
    s_sum, s_sq = est.rank_sums_
    S = est.class_mean_ranks_
    Xg = _lazy(Xd, Xmem) if (Xd is not None or not isinstance(S, np.ndarray)) else None
    if est.spearman_mode_ == "approx":
        sample = run_new_data(Pass(lambda: sampled_features_pass(Xg, est.sketch_idx_),
                                   local=(lambda: sampled_features_local(Xmem, est.sketch_idx_)) if Xmem is not None else None),
                              f"{label}: sampled values (pass 1/2)")
        tables = alg.rank_tables(sample)
        in_memory = Xmem is not None and isinstance(S, np.ndarray)
        out = run_new_data(Pass(lambda: enc.anchor_pass(Xg, None, S=S, x_tables=tables),
                                local=(lambda: enc.anchor_local(Xmem, None, S=S, x_tables=tables)) if in_memory else None),
                           f"{label}: estimated ranks (pass 2/2)")
        rank_cross, r_sum, r_sq = out["rank_cross"], out["r_sum"], out["r_sq"]
    else:
        if isinstance(S, da.Array):
            (S,) = compute(S, label="EncoderClassifier: read the class-mean ranks")
        block = max(1, _exact_block_rows(m, p, len(est.classes_)))
        rank_cross, r_sum, r_sq = np.empty((m, len(est.classes_))), np.empty(m), np.empty(m)
        starts = list(range(0, m, block))
        for i, r0 in enumerate(starts):
            r1 = min(m, r0 + block)
            res = run_new_data(Pass(lambda: enc.spearman_exact_block(Xg, slice(r0, r1), S),
                                    local=(lambda: enc.spearman_exact_local(Xmem, slice(r0, r1), S)) if Xmem is not None else None),
                               f"{label}: exact ranks (block {i + 1}/{len(starts)})")
            rank_cross[r0:r1], r_sum[r0:r1], r_sq[r0:r1] = res["rank_cross"], res["r_sum"], res["r_sq"]
    return alg.pearson_from_sums(rank_cross, r_sum, r_sq, s_sum, s_sq, p)


__all__ = ["fit_fast", "transform_fast"]
