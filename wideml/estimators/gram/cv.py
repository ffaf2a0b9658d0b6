"""Cross-validated choice of the embedding dimension from one pass (zero extra passes).

Every fold of LOL, QOQ, PCA and rrLDA is scored with the exact solution from
the Gram's sub-blocks, so the model to refit at the chosen dimension is the
exact one too: :meth:`CVReport.best_estimator` returns it (``solver="gram"``),
and an estimator asking for ``solver="randomized"``, whose model no fold
scored, is refused. LFL and RP join the same pass: their random columns are
label-free and nested in d, so one product X R (X A) of the largest width
serves every fold and d, and LFL's centroid differences per fold come from the
Gram (:mod:`wideml.estimators.gram.cv_methods`). Out-of-fold predictions,
Cohen's kappa and the naming of repeated CV are in
:mod:`wideml.estimators.gram.cv_scores`.

Decisions: an integer ``cv=k`` is stratified k-fold and needs k samples in
every class; with fewer, one sentence names the largest k possible (k = the
smallest class's size), rather than folds some class is missing from. A
method that fails (too many dimensions for a fold, a singular fold, an
embedding that does not vary within any class at some d) is reported in the
result with its message and NaN rows; the others are scored.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
import sklearn
from sklearn.base import clone
from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedKFold, check_cv

from wideml.estimators.class_sizes import fit_classifier
from wideml.estimators.classifier import CLASSIFIERS, make_classifier
from wideml.estimators.gram import cv_methods as methods
from wideml.estimators.gram.cv_scores import describe_cv, fold_rounds, kappas, out_of_fold
from wideml.estimators.params import (
    CV_FOLDS,
    NONE,
    SEED,
    Options,
    Satisfies,
    check_parameters,
)
from wideml.exceptions import WidemlError
from wideml.inputs.door import fit_input
from wideml.passes.chunkmath import resolve_precision
from wideml.passes.cv_sweep import SweepPass
from wideml.runner import resume as _resume
from wideml.runner.fit_runner import FitPasses, algebra_threads
from wideml.runner.resume import SavedSteps


@dataclass
class DimensionCV:
    """Cross-validated error and kappa against dimension for one method.

    Attributes
    ----------
    method : str
    dims : list of int
    errors : list of float
        Mean misclassification rate over all folds (of all rounds), per dimension.
    stds : list of float
        Standard deviation over folds, per dimension.
    fold_errors : list of list of float
        (n_splits, n_dims).
    best_dim : int
        Smallest dimension reaching the lowest mean error (0 when the method failed).
    best_error : float
    solver : str
        The solver whose model every fold scored ("gram": the exact solution;
        "lfl", "rp": their one-pass fit); refit with it (:meth:`CVReport.best_estimator`).
    kappa : list of float
        Cohen's kappa of the out-of-fold predictions per dimension, the mean over rounds.
    kappa_rounds : list of list of float
        (n_rounds, n_dims).
    predictions : ndarray of int, shape (n_rounds, n_dims, n_samples)
        Out-of-fold predicted class codes (index into ``CVReport.classes``); -1 where a round tested no such sample.
    fold_ranks : list of int
        With ``max_dim="rank"``: the numerical rank of each training fold's data, centred as the method
        centres it (pooled; class-centred for rrLDA); the grid stops at their minimum.
    error : str or None
        Why the method failed (its rows are then NaN), else None.
    """

    method: str
    dims: list[int]
    errors: list[float]
    stds: list[float]
    fold_errors: list[list[float]]
    best_dim: int
    best_error: float
    solver: str = "gram"
    kappa: list[float] = field(default_factory=list)
    kappa_rounds: list[list[float]] = field(default_factory=list)
    predictions: np.ndarray | None = None
    fold_ranks: list[int] = field(default_factory=list)
    error: str | None = None


def _json_number(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return _json_number(value)


@dataclass
class CVReport:
    """Result of :func:`cross_validate_dims`: one :class:`DimensionCV` per method, and the pass count.

    Attributes
    ----------
    results : dict of str -> DimensionCV
    n_folds : int
        Folds per round (10 for "10-fold CV repeated 3 times").
    classifier : str
    n_passes : int
    chance_error : float
    n_repeats : int
        Rounds of folds (repetitions of the k-fold CV).
    n_splits : int
        All train/test splits scored (n_folds x n_repeats for a repeated k-fold CV).
    cv_name : str
        E.g. "10-fold CV", "10-fold CV repeated 3 times".
    classes : list
        The class labels the predictions' codes index.
    """

    results: dict[str, DimensionCV]
    n_folds: int
    classifier: str
    n_passes: int = 1
    chance_error: float = field(default=float("nan"))
    n_repeats: int = 1
    n_splits: int = 0
    cv_name: str = ""
    classes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready: NaN as null, out-of-fold predictions as nested lists of class codes (n_rounds x n_dims x n_samples)."""
        results = {}
        for k, v in self.results.items():
            results[k] = {name: _jsonable(value) for name, value in asdict(v).items()}
        return {
            "cv": self.cv_name or f"{self.n_folds}-fold CV",
            "n_folds": self.n_folds,
            "n_repeats": self.n_repeats,
            "n_splits": self.n_splits or self.n_folds,
            "classifier": self.classifier,
            "n_passes": self.n_passes,
            "chance_error": _json_number(self.chance_error),
            "classes": [c.item() if hasattr(c, "item") else c for c in self.classes],
            "results": results,
        }

    def table(self) -> str:
        """A plain-text summary: best dimension, error and kappa per method (or why it failed), and how to refit."""
        name = self.cv_name or f"{self.n_folds}-fold CV"
        lines = [f"{'method':<10} {'best d':>7} {'error':>8} {'kappa':>7}   ({name}, {self.classifier.upper()}, "
                 f"{self.n_passes} pass over X)"]
        for key, r in self.results.items():
            if r.error is not None:
                lines.append(f"{key:<10} {'-':>7} {'-':>8} {'-':>7}   failed: {r.error}")
                continue
            kappa = r.kappa[r.dims.index(r.best_dim)] if r.kappa else float("nan")
            lines.append(f"{key:<10} {r.best_dim:>7d} {r.best_error:>8.4f} {kappa:>7.4f}")
        lines.append(f"{'chance':<10} {'':>7} {self.chance_error:>8.4f} {0.0:>7.4f}")
        if any(r.solver == "gram" and r.error is None for r in self.results.values()):
            lines.append("(every fold scored the exact Gram solution: refit at the best d with solver='gram', `--solver gram`)")
        return "\n".join(lines)

    def best_estimator(self, name: str, estimator):
        """An unfitted copy of ``estimator`` set up as the model CV scored for method ``name``: best d (exact Gram solver).

        Parameters
        ----------
        name : str
            A method of this report.
        estimator : GramProjector, LFL or RP
            The estimator cross-validated as ``name`` (its other parameters are kept).

        Returns
        -------
        estimator
            ``clone(estimator)`` with ``n_components`` = the best dimension (and ``solver="gram"`` for Gram projectors).
        """

        if name not in self.results:
            raise WidemlError(f"method {name!r} is not in this cross-validation report; it has {', '.join(map(repr, self.results))}.")
        result = self.results[name]
        if result.error is not None:
            raise WidemlError(f"method {name!r} failed in this cross-validation ({result.error}); it has no best dimension.")
        params = {"n_components": result.best_dim}
        if "solver" in estimator.get_params(deep=False):
            params["solver"] = result.solver
        return clone(estimator).set_params(**params)


def cross_validate_dims(
    estimators,
    X,
    y=None,
    *,
    cv=10,
    classifier: str = "lda",
    dims=None,
    random_state: int | None = 0,
    max_dim=None,
) -> CVReport:
    """Cross-validated error and kappa of LDA/QDA on every embedding dimension d <= d_max, from one pass.

    One streaming pass over X yields the centred Gram G (and, for robust
    LOL/LFL, the per-fold class medians' cross-products) and, for LFL and RP,
    the product of X with their random matrix of the largest width. Each
    fold's projection is then computed from the principal sub-block
    G[train, train]; every sample's embedding is G[:, train] B (plus the
    random columns); and every d <= d_max is a prefix of the d_max embedding.
    So all folds and all dimensions of all methods cost **one pass over X in
    total**, zero beyond it.

    Parameters
    ----------
    estimators : estimator or dict of str -> estimator
        LOL / PCA / RRLDA / LFL / RP instances; each one's ``n_components`` is its d_max.
    X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), optional (taken from the store)
    cv : int or cross-validation splitter, default 10
        An int k means stratified, shuffled k-fold with ``random_state``; it
        needs k samples in every class (else one sentence names the largest k).
        A ``RepeatedStratifiedKFold(k, n_repeats=r)`` is reported as "k-fold
        CV repeated r times": r rounds, each with its own out-of-fold predictions and kappa.
    classifier : {"lda", "qda"}
    dims : sequence of int, optional
        Dimensions to evaluate (default 1..d_max).
    random_state : int or None
    max_dim : None or "rank", default None
        "rank" caps every method's d_max (its ``n_components``) at the
        smallest numerical rank of the training folds' centred data
        (class-centred for rrLDA, whose directions are class-centred;
        eigenvalues of the centred Gram block above
        10 * lambda_max * n_train * eps, eps of the working precision; see
        :func:`wideml.estimators.gram.cv_methods.training_rank`), and at what
        the method allows on the smallest training fold; an ``n_components``
        above that is capped, not refused. Each method's ``fold_ranks`` holds
        the ranks it was capped by.

    Returns
    -------
    CVReport
        A method that failed carries its message in ``error`` and NaN rows.

    Notes
    -----
    Kappa is ``sklearn.metrics.cohen_kappa_score`` of the true codes and the
    out-of-fold predictions of one round, averaged over rounds.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> X = rng.normal(size=(40, 500))
    >>> X[y == 1, :10] += 2.0                    # the classes differ in 10 of 500 features
    >>> report = wideml.cross_validate_dims({"lol": wideml.LOL(5), "pca": wideml.PCA(5)}, X, y, cv=5)
    >>> report.n_passes                                # every fold, every d <= 5, both methods
    1
    >>> report.results["lol"].dims
    [1, 2, 3, 4, 5]
    >>> report.results["lol"].best_error < report.chance_error
    True
    >>> best = report.best_estimator("lol", wideml.LOL(5))      # unfitted, at the chosen d
    >>> best.n_components == report.results["lol"].best_dim
    True
    """
    if methods.kind_of(estimators):
        estimators = {type(estimators).__name__.lower(): estimators}
    if not isinstance(estimators, dict) or not estimators:
        raise WidemlError("no methods to cross-validate; give a LOL, PCA, RRLDA, LFL or RP instance or a dict of them (name -> estimator).")
    check_parameters("cross_validate_dims", {"cv": cv, "classifier": classifier, "dims": dims, "random_state": random_state,
                                             "max_dim": max_dim}, CV_DIMS_CONSTRAINTS)
    for name, est in estimators.items():
        if not methods.kind_of(est):
            raise WidemlError(f"method {name!r} is a {type(est).__name__}, not one cross-validated from one pass (LOL, PCA, RRLDA, "
                              "LFL, RP); cross-validate it by refitting per fold.")
        est._validate_parameters()
        if getattr(est, "solver", None) == "randomized":
            raise WidemlError(f"method {name!r} asks for solver='randomized', but cross-validation scores the exact Gram solution of "
                              "every fold, so the refitted model would not be the one scored; use solver='gram' or 'auto'.")
    data = fit_input(X, y)
    n, K = data.n_samples, data.n_classes
    splitter = _splitter(cv, data, random_state)
    folds = [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(np.zeros((n, 1)), data.codes)]
    n_train = min(len(train) for train, _ in folds)
    tops = {name: _d_max(est, data, n_train if max_dim == "rank" else None) for name, est in estimators.items()}
    failed = _check_dimensions(estimators, data, folds, dims, classifier, tops, capped=max_dim == "rank")
    live = {name: est for name, est in estimators.items() if name not in failed}
    if not live:
        raise WidemlError(next(iter(failed.values())))
    robust = any(methods.uses_medians(est) for est in live.values())
    precisions = {getattr(est, "precision", "auto") for est in live.values()}
    precision = "float64" if "float64" in precisions else ("float32" if precisions == {"float32"} else "auto")
    matrices = [m for name, est in live.items() if (m := methods.random_columns(name, est, data, tops[name])) is not None]
    passes = FitPasses.for_run("cross-validation", "cross_validate_dims", _cv_parameters(estimators, folds, max_dim), data, 1)
    stats = passes.run(SweepPass(data.X, data.codes, K, matrices, median_subsets=[tr for tr, _ in folds] if robust else [],
                                 precision=precision),
                       f"one pass for {len(folds)} folds x {len(live)} method(s)")
    n_passes = passes.record()
    if not np.any(stats.gram.G):  # the centred Gram is zero: no method has anything to embed
        raise WidemlError(f"all {n} samples are the same (their features do not vary), so no embedding can tell the classes "
                          "apart and there is nothing to cross-validate; give data whose samples differ.")
    rounds = fold_rounds(splitter, folds)
    eps = float(np.finfo(np.dtype(resolve_precision(precision, data.dtype))).eps)
    if not methods.gram_varies_within_classes(stats.gram.G, data.codes, eps):  # no embedding has within-class spread
        raise WidemlError("the samples do not vary within any class beyond rounding (every sample of a class is the same, "
                          "e.g. repeated samples), so no classifier on any embedding has a within-class covariance to "
                          "estimate; give samples that differ within some class.")
    with algebra_threads(n):
        ranks = _fold_ranks(live, stats.gram.G, data, folds, eps) if max_dim == "rank" else {}
        results = {}
        for name, est in estimators.items():
            if name in failed:
                results[name] = _failed(name, est, data, tops[name], dims, failed[name])
                continue
            try:
                results[name] = _method_result(name, est, stats, data, folds, rounds, dims, classifier, robust,
                                               ranks.get(methods.rank_centring(est), []), tops[name], eps)
            except (WidemlError, np.linalg.LinAlgError, ValueError) as exc:
                results[name] = _failed(name, est, data, tops[name], dims, _sentence(exc))
    chance = 1.0 - np.bincount(data.codes).max() / n
    return CVReport(results=results, n_folds=len(rounds[0]) if len(rounds) > 1 else len(folds), classifier=classifier,
                    n_passes=n_passes, chance_error=float(chance), n_repeats=len(rounds) if len(rounds) > 1 else 1,
                    n_splits=len(folds), cv_name=describe_cv(splitter, folds, rounds), classes=list(data.classes))


def _sentence(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if isinstance(exc, WidemlError) else f"{type(exc).__name__}: {text}"


def _splitter(cv, data, random_state):
    """The splitter for ``cv``: an int k is stratified shuffled k-fold, refused in one sentence when a class has fewer than k samples."""
    if isinstance(cv, numbers.Integral):
        counts = np.bincount(data.codes, minlength=data.n_classes)
        i = int(np.argmin(counts))
        label = data.classes[i].item() if hasattr(data.classes[i], "item") else data.classes[i]
        if counts[i] < 2:
            raise WidemlError(f"class {label!r} has a single sample, so no stratified fold can both train and test on it; "
                              "drop that class or add samples to it.")
        if cv > counts[i]:
            raise WidemlError(f"cv={cv} stratified folds need at least {cv} samples in every class, but the smallest class has "
                              f"{counts[i]} (class {label!r}); use cv={counts[i]} or fewer.")
        return StratifiedKFold(int(cv), shuffle=True, random_state=random_state)
    return check_cv(cv, data.y, classifier=True)


def repeated_folds(n_splits: int, n_repeats: int, random_state: int | None = 0):
    """``RepeatedStratifiedKFold(n_splits, n_repeats)`` (reported as "k-fold CV repeated r times"), or k-fold when r = 1."""
    if n_repeats == 1:
        return StratifiedKFold(n_splits, shuffle=True, random_state=random_state)
    return RepeatedStratifiedKFold(n_splits=n_splits, n_repeats=n_repeats, random_state=random_state)


def _cv_parameters(estimators: dict, folds: list, max_dim) -> dict:
    """What a resumed ``cross_validate_dims`` must share with the interrupted one: its methods and its folds."""
    params = {name: dict(est.get_params(deep=False), estimator=type(est).__name__) for name, est in estimators.items()}
    for p in params.values():
        p.pop("workdir", None)
    return {"methods": params, "folds": _resume.digest(*[np.asarray(te) for _, te in folds]), "max_dim": max_dim}


def _positive_ints(value) -> bool:
    items = list(value)
    return bool(items) and all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1 for d in items)


#: Constraint table of :func:`cross_validate_dims`'s own arguments.
CV_DIMS_CONSTRAINTS = {
    "cv": CV_FOLDS,
    "classifier": [Options(*CLASSIFIERS)],
    "dims": [Satisfies(_positive_ints, "a non-empty list of positive integers"), NONE],
    "random_state": [SEED, NONE],
    "max_dim": [Options("rank"), NONE],
}


def _d_max(est, data, n_train: int | None = None) -> int:
    """The method's largest dimension: its ``n_components``; with ``n_train`` (``max_dim="rank"``), capped at what a
    training fold of ``n_train`` samples allows (the folds' rank is at most that; the pass's Gram caps it further)."""
    d_max = methods.default_dim(est, data)
    return d_max if n_train is None else max(1, min(d_max, methods.fold_bound(est, n_train, data)))


def _grid(d_max: int, dims) -> list[int]:
    return sorted({int(d) for d in (dims if dims is not None else range(1, d_max + 1)) if 1 <= int(d) <= d_max})


def _fold_ranks(live: dict, G: np.ndarray, data, folds, eps: float) -> dict[str, list[int]]:
    """{centring: numerical rank of each training fold's data so centred}, for the centrings the live methods use."""
    centrings = {methods.rank_centring(est) for est in live.values()}
    return {c: [methods.training_rank(G, tr, eps, data.codes[tr] if c == "class" else None) for tr, _ in folds]
            for c in sorted(centrings)}


def _check_dimensions(estimators, data, folds, dims, classifier: str = "lda", tops: dict | None = None,
                      capped: bool = False) -> dict[str, str]:
    """Before the pass, per method: its d_max fits the smallest training fold (and, for QDA, its smallest class),
    and ``dims`` leaves something to evaluate. Returns {method: why it cannot be scored}.

    ``tops`` holds each method's d_max (default: its ``n_components``); ``capped`` (``max_dim="rank"``) means they
    were already capped at what a training fold allows."""
    n_train = min(len(train) for train, _ in folds)
    tops = tops or {name: _d_max(est, data) for name, est in estimators.items()}
    failed = {}
    for train, _ in folds:
        if len(np.unique(data.codes[train])) < data.n_classes:
            raise WidemlError("a training fold has no sample of some class; use stratified folds or fewer folds.")
    for name, est in estimators.items():
        d_max = tops[name]
        if methods.kind_of(est) == "gram" and not capped:
            bound = est._component_bound(n_train, data.n_classes, data.n_features)
            if d_max > bound:
                failed[name] = (f"method {name!r} asks for {d_max} dimensions, but a training fold of {n_train} samples allows at "
                                f"most {bound} for {est._method_name()}; lower n_components (--max-dim), use fewer folds, "
                                "or use max_dim='rank' (--max-dim rank).")
                continue
        if methods.kind_of(est) == "rp" and not capped:
            why = methods.rp_dimension_problem(d_max, data.n_features)
            if why:
                failed[name] = f"method {name!r}: {why}"
                continue
        if dims is not None and not any(1 <= int(d) <= d_max for d in dims):
            failed[name] = f"dims={list(dims)} has no dimension between 1 and method {name!r}'s d_max = {d_max}; give dims in that range."
            continue
        if classifier == "qda":
            why = _qda_fold_problem(name, d_max, data, folds, dims)
            if why:
                failed[name] = why
    return failed


def _qda_fold_problem(name, d_max: int, data, folds, dims) -> str | None:
    """QDA fits a d x d covariance per class on each training fold: the smallest class of any fold needs d + 1 samples."""
    smallest, label = None, None
    for train, _ in folds:
        counts = np.bincount(np.asarray(data.codes)[np.asarray(train)], minlength=data.n_classes)
        i = int(np.argmin(counts))
        if smallest is None or counts[i] < smallest:
            smallest, label = int(counts[i]), data.classes[i]
    d_top = d_max if dims is None else max(int(d) for d in dims)
    if d_top > smallest - 1:
        label = label.item() if hasattr(label, "item") else label
        return (f"method {name!r} is scored up to d = {d_top} with QDA, but class {label!r} has only {smallest} samples in a "
                f"training fold, allowing at most d = {max(smallest - 1, 0)}; lower --max-dim (n_components or dims), use "
                "fewer folds, or use --classifier lda.")
    return None


def _failed(name, est, data, d_max: int, dims, why: str) -> DimensionCV:
    grid = _grid(d_max, dims) or [1]
    nan = [float("nan")] * len(grid)
    return DimensionCV(method=name, dims=grid, errors=nan, stds=list(nan), fold_errors=[], best_dim=0, best_error=float("nan"),
                       solver=_solver(est), kappa=list(nan), error=why)


def _solver(est) -> str:
    return {"gram": "gram", "lfl": "lfl", "rp": "rp"}[methods.kind_of(est)]


def _embedding(est, name, stats, data, f, train, d_max, robust):
    """Every sample embedded by the method fitted on training fold ``f``: (n_samples, d_max)."""
    K, tr_codes, G = data.n_classes, data.codes[train], stats.gram.G
    kind = methods.kind_of(est)
    medians = stats.gram.medians[f] if (robust and methods.uses_medians(est)) else None
    if kind == "rp":
        return methods.rp_embedding(stats.products[name], train, d_max)
    if kind == "lfl":
        return methods.lfl_embedding(G, stats.products[name], train, tr_codes, K, d_max, medians)
    P = medians.P if medians is not None else None
    Q = medians.Q if medians is not None else None
    proj = est._projection(G[np.ix_(train, train)], tr_codes, K, P[train] if P is not None else None, Q, data.n_features, d_max)
    return proj.embed(G[:, train], P)


def _method_result(name, est, stats, data, folds, rounds, dims, classifier, robust, ranks, d_max, eps) -> DimensionCV:
    """One method's errors, predictions and kappa at every fold and dimension, from the pass's statistics (no pass over X)."""
    grid = _grid(d_max, dims)
    if ranks:
        cap = min(ranks)
        grid = [d for d in grid if d <= cap]
        if not grid:
            raise WidemlError(f"a training fold's centred data has numerical rank {cap}, below every dimension asked for method "
                              f"{name!r}; give smaller dims or check the data for constant or duplicated samples.")
        d_max = min(d_max, grid[-1])
    fold_errors = np.zeros((len(folds), len(grid)))
    fold_predictions = []
    for f, (train, test) in enumerate(folds):
        E = _embedding(est, name, stats, data, f, train, d_max, robust)
        tr_codes = data.codes[train]
        pred = np.empty((len(test), len(grid)), dtype=np.int64)
        for j, d in enumerate(grid):
            clf = make_classifier(classifier)
            # the embeddings are finite n x d algebra of checked input and the classifier's parameters are its defaults:
            # scikit-learn's per-call input and parameter checks would take ~40% of thousands of small LDA fits
            with warnings.catch_warnings(), sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
                warnings.simplefilter("ignore")
                if not methods.varies_within_classes(E[train, :d], tr_codes, eps):
                    raise WidemlError(f"at d = {d} on training fold {f + 1}, the embedded samples do not vary within any class "
                                      "beyond rounding (e.g. constant features or repeated samples), so the classifier has no "
                                      "within-class covariance to estimate; give samples that differ within some class.")
                try:
                    fit_classifier(clf, E[train, :d], tr_codes)
                except WidemlError as exc:  # a covariance singular otherwise: the method fails with the fold and d named
                    raise WidemlError(f"at d = {d} on training fold {f + 1}, {exc}") from exc
                pred[:, j] = clf.predict(E[test, :d])
            fold_errors[f, j] = float(np.mean(pred[:, j] != data.codes[test]))
        fold_predictions.append(pred)
    oof = out_of_fold(data.n_samples, folds, rounds, fold_predictions)
    kap = kappas(data.codes, oof, data.n_classes)
    mean = fold_errors.mean(axis=0)
    best = int(np.flatnonzero(mean <= mean.min() + 1e-12)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an all-NaN column (kappa undefined) stays NaN
        kappa = np.nanmean(kap, axis=0) if kap.size else np.zeros(0)
    return DimensionCV(
        method=name, dims=grid, errors=mean.tolist(), stds=fold_errors.std(axis=0).tolist(),
        fold_errors=fold_errors.tolist(), best_dim=grid[best], best_error=float(mean[best]), solver=_solver(est),
        kappa=kappa.tolist(), kappa_rounds=kap.tolist(), predictions=oof, fold_ranks=list(ranks),
    )


def cross_validate_refit(name: str, make_estimator, store, folds: int, random_state: int, index: int = 0,
                         n_repeats: int = 1) -> np.ndarray:
    """Misclassification rate per split of a method refitted on each stratified training fold (e.g. a kernel method).

    Parameters
    ----------
    name : str
        The method's name (part of the checkpoint keys).
    make_estimator : callable
        ``make_estimator(n_train)`` -> a classifier to fit on one training fold.
    store : FeatureStore
        Holds X (n_samples, n_features) and labels y.
    folds : int
    random_state : int
    index : int, default 0
        Position of this method among the refitted ones (keeps its checkpoints apart from the others').
    n_repeats : int, default 1
        Rounds of folds: the splits of :func:`repeated_folds` ``(folds, n_repeats, random_state)``, the very
        splits ``cross_validate_dims`` scores with that splitter.

    Returns
    -------
    ndarray of shape (folds * n_repeats,)

    Notes
    -----
    Each split makes the method's fit passes over the training rows of X plus
    one prediction pass over the test rows. Inside a resumable run
    (:func:`wideml.runtime.checkpoint.resumable`, which ``wideml cv`` opens)
    each fold's error is saved when the fold is done, so a rerun after an
    interrupt redoes only the folds not finished.
    """
    y = store.y
    split = list(repeated_folds(folds, n_repeats, random_state).split(np.zeros((store.n_samples, 1)), y))
    params = {"method": name, "estimator": repr(make_estimator(len(split[0][0]))), "folds": folds, "random_state": random_state}
    if n_repeats != 1:
        params["n_repeats"] = n_repeats
    steps = SavedSteps(fit_input(store, None), f"cross_validate_refit:{name}", params, first=1000 * (index + 1), total=len(split))
    errors = []
    for f, (train, test) in enumerate(split):
        train, test = np.sort(train), np.sort(test)

        def run(train=train, test=test):
            est = make_estimator(len(train))
            est.fit(store.X[train], y[train])
            return float(np.mean(est.predict(store.X[test]) != y[test]))

        key = dict(kind="cv-refit", method=name, estimator=params["estimator"], fold=f, test=_resume.digest(test))
        label = f"{name} fold {f + 1}/{len(split)}"
        errors.append(float(steps.run(f, key, run, label=label)))
    return np.asarray(errors)
