"""Fit helpers of :class:`~wideml.estimators.encoder.estimator.EncoderClassifier`: parameters, LDA, Spearman rank passes, kernel selection.

The pass helpers (:func:`_class_stats`, :func:`_spearman_fit_passes`) run each
pass over X through the fit's :class:`~wideml.runner.fit_runner.FitPasses`
(numbered in its label, run directly on an in-memory X, counted); the fit
computes their number up front (1, plus :func:`rank_passes`).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import zarr
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.validation import check_is_fitted, validate_data

from wideml.algebra import encoder as alg
from wideml.runner.fit_runner import FitPasses, one_blas_thread
from wideml.estimators.params import NONE, PRECISION, SEED, Interval, Options, PathLike, Satisfies
from wideml.exceptions import WidemlError
from wideml.passes import encoder as enc
from wideml.passes.chunkmath import check_precision
from wideml.passes.spec import Pass
from wideml.runtime import memory_limit_bytes

SELECTIONS = ("cross_entropy", "cv_cross_entropy", "loo_cross_entropy")
#: Inner folds of the held-out selection score ("cv_cross_entropy").
INNER_FOLDS = 5
FORMS = ("fast", "full")
SPEARMAN_MODES = ("auto", "exact", "approx")
#: Bytes per element of a row block held by the exact rank step (x, its ranks, temporaries).
_EXACT_BYTES = 8 * 4


def _lda(Z: np.ndarray, codes: np.ndarray) -> LinearDiscriminantAnalysis:
    """scikit-learn's LDA (SVD solver, empirical priors) on the embedding, at machine-precision rank.

    The SVD solver's algebra runs directly on the small embedding
    (:func:`wideml.algebra.encoder.lda_svd`, no input validation) and its
    result is stored in a ``LinearDiscriminantAnalysis`` whose ``tol`` is the
    threshold it applied. The rank rule is relative (singular values above
    eps * max(n, d) times the largest, :func:`~wideml.algebra.encoder.rank_tol`),
    not scikit-learn's absolute default ``tol=1e-4``, which keeps rank 1 of the
    nearly collinear linear embeddings of the paper's transformed settings.
    When the fast path does not apply, scikit-learn fits it with the same rule
    (:func:`~wideml.algebra.encoder.sklearn_tol`); an embedding with no
    within-class spread at all (e.g. Spearman with a single feature) leaves
    the SVD solver nothing to whiten, and the least-squares solver then gives
    the prior-only classifier.
    """
    n_classes = int(codes.max()) + 1 if len(codes) else 0
    with one_blas_thread():
        fit = alg.lda_svd(Z, codes, n_classes)
    if fit is not None:
        return _lda_model(fit, Z.shape[1], n_classes)
    with warnings.catch_warnings(), one_blas_thread():
        warnings.simplefilter("ignore")
        try:
            return LinearDiscriminantAnalysis(tol=alg.sklearn_tol(Z, codes)).fit(Z, codes)
        except (IndexError, np.linalg.LinAlgError):
            return LinearDiscriminantAnalysis(solver="lsqr").fit(Z, codes)


class PrefitLDA(LinearDiscriminantAnalysis):
    """A ``LinearDiscriminantAnalysis`` (SVD solver) whose fitted attributes were computed by wideml.

    scikit-learn's ``transform`` and ``get_feature_names_out`` read private attributes that only its
    own ``fit`` sets; this subclass computes both from public fitted attributes and its own
    ``max_components_`` (the number of discriminant directions kept), so nothing private is set.
    Prediction, probabilities and the decision function are scikit-learn's.

    Attributes
    ----------
    max_components_ : int
        Discriminant directions ``transform`` keeps: ``min(n_classes - 1, n_features)`` (fewer columns come
        out when ``scalings_`` has a lower rank), as scikit-learn's ``fit`` decides it.
    """

    def transform(self, X) -> np.ndarray:
        """Project ``X`` onto the discriminant directions, as scikit-learn's SVD solver does.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, max_components_)
        """
        check_is_fitted(self, "max_components_")
        X = validate_data(self, X, reset=False)
        return ((X - self.xbar_) @ self.scalings_)[:, : self.max_components_]

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of ``transform``'s columns, as scikit-learn's LDA names them.

        Parameters
        ----------
        input_features : ignored

        Returns
        -------
        ndarray of str objects, ``lineardiscriminantanalysis0``, ``lineardiscriminantanalysis1``, ...
        """
        check_is_fitted(self, "max_components_")
        return np.asarray([f"lineardiscriminantanalysis{i}" for i in range(self.max_components_)], dtype=object)


def _lda_model(fit: alg.LdaFit, n_features: int, n_classes: int) -> PrefitLDA:
    """A fitted :class:`PrefitLDA` holding :func:`~wideml.algebra.encoder.lda_svd`'s result."""
    lda = PrefitLDA(tol=fit.tol)
    lda.classes_ = np.arange(n_classes)
    lda.n_features_in_ = int(n_features)
    lda.priors_, lda.means_, lda.xbar_ = fit.priors, fit.means, fit.xbar
    lda.scalings_, lda.explained_variance_ratio_ = fit.scalings, fit.explained_variance_ratio
    lda.coef_, lda.intercept_ = fit.coef, fit.intercept
    lda.max_components_ = int(fit.max_components)
    return lda


def _proba(lda: LinearDiscriminantAnalysis, Z: np.ndarray) -> np.ndarray:
    """The LDA's posterior probabilities; computed directly for finite float input (scikit-learn's formula)."""
    coef = getattr(lda, "coef_", None)
    if (isinstance(Z, np.ndarray) and Z.ndim == 2 and Z.dtype.kind == "f" and coef is not None and coef.ndim == 2
            and Z.shape[1] == coef.shape[1] and (coef.shape[0] == len(lda.classes_) or (coef.shape[0] == 1 and len(lda.classes_) == 2))
            and np.isfinite(Z).all()):
        with one_blas_thread():
            return alg.lda_proba(coef, lda.intercept_, Z)
    with warnings.catch_warnings(), one_blas_thread():
        warnings.simplefilter("ignore")
        return lda.predict_proba(Z)


def _exact_block_rows(n: int, p: int, n_anchors: int) -> int:
    """Rows per exact-rank block that fit the memory budget (0 if not even one row fits)."""
    budget = memory_limit_bytes() - 2 * 8 * n_anchors * p - 8 * 3 * enc.LOO_BATCH * p
    return int(max(0, min(n, budget // (_EXACT_BYTES * p))))


def _spearman_plan(mode: str, n: int, p: int, n_anchors: int) -> tuple[str, int]:
    """Resolve ``spearman`` to ("exact", rows per block) or ("approx", 0)."""
    b = _exact_block_rows(n, p, n_anchors)
    if mode == "approx" or (mode == "auto" and b < n):
        return "approx", 0
    if b < 1:
        raise WidemlError(
            f"one row of X ({p} features) and the {n_anchors} class means' ranks do not fit the memory budget "
            f"({memory_limit_bytes()} bytes); raise wideml.memory-limit or use spearman='approx'."
        )
    return "exact", b


def _pearson_pairs(cross, r_sum, r_sq, s_sum, s_sq, p) -> np.ndarray:
    """Element-wise Pearson correlation of paired rows from their sums."""
    cov = cross - r_sum * s_sum / p
    den = np.sqrt(np.maximum(r_sq - r_sum**2 / p, 0) * np.maximum(s_sq - s_sum**2 / p, 0))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(np.where(den > 0, cov / np.where(den > 0, den, 1), 0.0), -1, 1)


class _RankResult:
    """Spearman sums for all samples against all S*K anchors, and leave-one-out correlations."""

    def __init__(self, rank_cross, r_sum, r_sq, s_sum, s_sq, loo_corr=None):
        self.rank_cross, self.r_sum, self.r_sq, self.s_sum, self.s_sq = rank_cross, r_sum, r_sq, s_sum, s_sq
        self.loo_corr = loo_corr


def rank_passes(plan: tuple[str | None, int], n: int) -> int:
    """Passes over X the Spearman ranks take: 0 without spearman, 1 estimated, one per row block exact."""
    mode, block = plan
    if mode is None:
        return 0
    return 1 if mode == "approx" else -(-n // block)


def _class_stats(passes: FitPasses, Xd, Xmem, W, *, sketch, keep, precision, need_sq, what, n_write=0, out_group=None,
                 kind="encoder-stats") -> enc.ClassStats:
    """The class-statistics pass, run by ``passes`` (directly on an in-memory ``Xmem``; its checkpoint named ``kind``)."""
    return passes.run(enc.ClassStatsPass(Xd, W, Xmem=Xmem, n_write=n_write, out_group=out_group, sketch_idx=sketch, keep_means=keep,
                                         precision=precision, need_sq=need_sq, kind=kind), what)


def _spearman_fit_passes(passes: FitPasses, Xd, W, stats, plan, loo, *, n_write, out_group, Xmem=None,
                         kind="encoder-ranks") -> tuple[_RankResult, np.ndarray | None]:
    """The rank pass(es) after the class-statistics pass, run by ``passes`` (:func:`rank_passes` of them).

    Returns (ranks, class-mean ranks in memory or None). The estimated-rank
    pass is resumable in a resumable fit, its checkpoint named ``kind``.
    """
    mode, block = plan
    n, p = (Xmem if Xmem is not None else Xd).shape
    if mode == "approx":
        x_tables = alg.rank_tables(stats.sketch)
        u_tables = alg.rank_tables(enc.anchor_sample(W, stats.sketch))
        out = passes.run(enc.RankSketchPass(Xd, W, x_tables, u_tables, sketch=stats.sketch, loo=loo, n_write=n_write,
                                            out_group=out_group, Xmem=Xmem, kind=kind),
                         "Spearman ranks (estimated)")
        S_mem = out.get("S")  # in-memory input: the anchors' estimated ranks
    else:
        U = stats.means
        S_mem = alg.row_ranks(U)
        if out_group is not None and n_write:
            zarr.open_array(f"{out_group}/{enc.CLASS_MEAN_RANKS}", mode="r+")[...] = S_mem[:n_write]
        s_sum, s_sq = alg.rank_sums(S_mem)
        out = {"rank_cross": np.empty((n, W.shape[1])), "r_sum": np.empty(n), "r_sq": np.empty(n), "s_sum": s_sum, "s_sq": s_sq}
        if loo is not None:
            for key in ("loo_cross", "loo_sum", "loo_sq"):
                out[key] = np.empty(len(loo))
        starts = list(range(0, n, block))
        for i, r0 in enumerate(starts):
            r1 = min(n, r0 + block)
            sub, where = None, None
            if loo is not None:
                where = np.flatnonzero((loo.rows >= r0) & (loo.rows < r1))
                sub = enc.LooSpec(loo.rows[where], loo.cols[where], loo.counts[where])
            local = None
            if Xmem is not None:
                local = lambda: enc.spearman_exact_local(Xmem, slice(r0, r1), S_mem, U=U, loo=sub)  # noqa: E731
            res = passes.run(Pass(lambda: enc.spearman_exact_block(Xd, slice(r0, r1), S_mem, U=U, loo=sub), local=local),
                             f"Spearman ranks (exact, row block {i + 1}/{len(starts)})")
            for key in ("rank_cross", "r_sum", "r_sq"):
                out[key][r0:r1] = res[key]
            if loo is not None:
                for key in ("loo_cross", "loo_sum", "loo_sq"):
                    out[key][where] = res[key]
    loo_corr = None
    if loo is not None:
        loo_corr = _pearson_pairs(out["loo_cross"], out["r_sum"][loo.rows], out["r_sq"][loo.rows], out["loo_sum"], out["loo_sq"], p)
    return _RankResult(out["rank_cross"], out["r_sum"], out["r_sq"], out["s_sum"], out["s_sq"], loo_corr), S_mem


def _set_stats(stats: enc.ClassStats, ranks: _RankResult | None, s: int, K: int) -> alg.AnchorStats:
    a = stats.anchor_stats(s, K)
    if ranks is not None:
        cols = slice(s * K, (s + 1) * K)
        a.rank_cross, a.r_sum, a.r_sq = ranks.rank_cross[:, cols], ranks.r_sum, ranks.r_sq
        a.s_sum, a.s_sq = ranks.s_sum[cols], ranks.s_sq[cols]
    return a


def _choose(kernels, train: alg.AnchorStats, codes, counts, selection, baseline, threshold, loo_own=None, inner=()):
    """Fit one LDA per kernel on the training rows and select a kernel.

    Parameters
    ----------
    inner : sequence of (AnchorStats of inner-training rows, their codes, AnchorStats of inner-test rows, their codes)
        The inner folds, for ``selection="cv_cross_entropy"``.

    Returns
    -------
    (kernel, scores, ldas, offsets, training embeddings)
    """
    scores, ldas, offsets, Zs = {}, {}, {}, {}
    for kern in kernels:
        Z, off = alg.embed(kern, train)
        lda = _lda(Z, codes)
        ldas[kern], offsets[kern], Zs[kern] = lda, off, Z
        if len(kernels) == 1:
            scores[kern] = float("nan")
        elif selection == "cross_entropy":
            scores[kern] = alg.cross_entropy(_proba(lda, Z), codes)
        elif selection == "loo_cross_entropy":
            Zl = alg.loo_embed(kern, train, codes, counts, off, loo_own)
            scores[kern] = alg.cross_entropy(_proba(_lda(Zl, codes), Zl), codes)
        else:
            total = 0.0
            for tr_stats, tr_codes, te_stats, te_codes in inner:
                Zi, off_i = alg.embed(kern, tr_stats)
                total += alg.cross_entropy(_proba(_lda(Zi, tr_codes), alg.embed(kern, te_stats, off_i)[0]), te_codes)
            scores[kern] = total
    chosen = kernels[0] if len(kernels) == 1 else alg.select_kernel(scores, baseline, threshold)
    return chosen, scores, ldas, offsets, Zs


def _inner_folds(codes: np.ndarray, rows: np.ndarray, random_state) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified inner folds (positions into ``rows``) for the held-out selection score."""
    n_folds = min(INNER_FOLDS, int(np.bincount(codes[rows]).min()))
    if n_folds < 2:
        raise WidemlError("selection='cv_cross_entropy' needs at least 2 training samples in every class; "
                          "use selection='cross_entropy' or add samples.")
    skf = StratifiedKFold(n_folds, shuffle=True, random_state=random_state)
    return [(tr, te) for tr, te in skf.split(np.zeros((len(rows), 1)), codes[rows])]


class _SetPlan:
    """Training-row sets whose class means one pass accumulates: the main fits and their inner folds."""

    def __init__(self, codes, mains: list[np.ndarray], inner_cv: bool, random_state):
        self.sets = [np.asarray(m, dtype=np.int64) for m in mains]
        self.inner: list[list[tuple[int, np.ndarray, np.ndarray]]] = [[] for _ in mains]
        if inner_cv:
            for m, rows in enumerate(list(self.sets)):
                for tr, te in _inner_folds(codes, rows, random_state):
                    self.inner[m].append((len(self.sets), rows[tr], rows[te]))
                    self.sets.append(rows[tr])

    def inner_parts(self, m, stats, ranks, K, codes):
        parts = []
        for s, tr, te in self.inner[m]:
            a = _set_stats(stats, ranks, s, K)
            parts.append((a.rows(tr), codes[tr], a.rows(te), codes[te]))
        return parts


def _kernel_names(value) -> bool:
    alg.resolve_kernels(value)
    return True


def _kernel_name(value) -> bool:
    return isinstance(value, str) and alg.ALIASES.get(value, value) in alg.KERNELS


#: The encoder's constraint table (``EncoderClassifier._parameter_constraints``).
ENCODER_CONSTRAINTS = {
    "kernels": [Satisfies(_kernel_names, f"kernel names among {', '.join(map(repr, alg.KERNELS))} (a list or a comma-separated string)")],
    "selection": [Options(*SELECTIONS)],
    "baseline": [Satisfies(_kernel_name, f"one of {', '.join(map(repr, alg.KERNELS))}"), NONE],
    "switch_threshold": [Interval(0, 1, closed="left")],
    "form": [Options(*FORMS)],
    "spearman": [Options(*SPEARMAN_MODES)],
    "sketch_size": [Interval(16, integer=True)],
    "precision": [PRECISION],
    "random_state": [SEED],
    "workdir": [PathLike(), NONE],
}


def _validate_params(est) -> tuple[str, ...]:
    kernels = alg.resolve_kernels(est.kernels)
    if est.selection not in SELECTIONS:
        raise WidemlError(f"selection={est.selection!r} is not one of {', '.join(map(repr, SELECTIONS))}.")
    if est.form not in FORMS:
        raise WidemlError(f"form={est.form!r} is not one of {', '.join(map(repr, FORMS))}.")
    if est.spearman not in SPEARMAN_MODES:
        raise WidemlError(f"spearman={est.spearman!r} is not one of {', '.join(map(repr, SPEARMAN_MODES))}.")
    check_precision(est.precision)
    if est.baseline is not None and alg.ALIASES.get(str(est.baseline), est.baseline) not in alg.KERNELS:
        raise WidemlError(f"baseline={est.baseline!r} is not a kernel; use one of {', '.join(alg.KERNELS)} or None.")
    t = est.switch_threshold
    if not isinstance(t, numbers.Real) or isinstance(t, bool) or not 0 <= t < 1:
        raise WidemlError(f"switch_threshold={t!r} must be a number in [0, 1), e.g. the paper's 0.3.")
    m = est.sketch_size
    if not isinstance(m, numbers.Integral) or isinstance(m, bool) or m < 16:
        raise WidemlError(f"sketch_size={m!r} must be an integer of at least 16 (sampled features per row).")
    return kernels


def _precision(setting: str, dtype) -> str:
    if setting != "auto":
        return setting
    return "float32" if np.dtype(dtype) == np.float32 else "float64"


def _needs_row_norms(kernels, selection: str) -> bool:
    """Whether fitting uses ||x_i||^2: the euclidean kernel, and the leave-one-out score of the linear one."""
    return "euclidean" in kernels or (selection == "loo_cross_entropy" and len(kernels) > 1)


def _baseline(est) -> str | None:
    return None if est.baseline is None else alg.ALIASES.get(str(est.baseline), str(est.baseline))


__all__: list[str] = []
