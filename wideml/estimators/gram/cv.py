"""Cross-validated choice of the embedding dimension from one Gram pass (zero extra passes).

Every fold is scored with the exact solution from the Gram's sub-blocks, so
the model to refit at the chosen dimension is the exact one too:
:meth:`CVReport.best_estimator` returns it (``solver="gram"``), and an
estimator asking for ``solver="randomized"``, whose model no fold scored, is
refused.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold, check_cv

from wideml.estimators.classifier import CLASSIFIERS, make_classifier
from wideml.estimators.gram.projector import GramProjector
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
from wideml.passes.gram import GramPass
from wideml.runner import resume as _resume
from wideml.runner.fit_runner import FitPasses, algebra_threads
from wideml.runner.resume import SavedSteps


@dataclass
class DimensionCV:
    """Cross-validated error against dimension for one method.

    Attributes
    ----------
    method : str
    dims : list of int
    errors : list of float
        Mean misclassification rate over folds, per dimension.
    stds : list of float
        Standard deviation over folds, per dimension.
    fold_errors : list of list of float
        (n_folds, n_dims).
    best_dim : int
        Smallest dimension reaching the lowest mean error.
    best_error : float
    solver : str
        The solver whose model every fold scored ("gram": the exact solution);
        refit with it (:meth:`CVReport.best_estimator`).
    """

    method: str
    dims: list[int]
    errors: list[float]
    stds: list[float]
    fold_errors: list[list[float]]
    best_dim: int
    best_error: float
    solver: str = "gram"


@dataclass
class CVReport:
    """Result of :func:`cross_validate_dims`: one :class:`DimensionCV` per method, and the pass count."""

    results: dict[str, DimensionCV]
    n_folds: int
    classifier: str
    n_passes: int = 1
    chance_error: float = field(default=float("nan"))

    def to_dict(self) -> dict:
        return {
            "n_folds": self.n_folds,
            "classifier": self.classifier,
            "n_passes": self.n_passes,
            "chance_error": self.chance_error,
            "results": {k: asdict(v) for k, v in self.results.items()},
        }

    def table(self) -> str:
        """A plain-text summary: best dimension and error per method, and how to refit the model CV scored."""
        lines = [f"{'method':<10} {'best d':>7} {'error':>8}   ({self.n_folds}-fold CV, {self.classifier.upper()}, {self.n_passes} pass over X)"]
        for name, r in self.results.items():
            lines.append(f"{name:<10} {r.best_dim:>7d} {r.best_error:>8.4f}")
        lines.append(f"{'chance':<10} {'':>7} {self.chance_error:>8.4f}")
        if self.results:
            lines.append("(every fold scored the exact Gram solution: refit at the best d with solver='gram', `--solver gram`)")
        return "\n".join(lines)

    def best_estimator(self, name: str, estimator):
        """An unfitted copy of ``estimator`` set up as the model CV scored for method ``name``: best d, exact Gram solver.

        Parameters
        ----------
        name : str
            A method of this report.
        estimator : GramProjector
            The estimator cross-validated as ``name`` (its other parameters are kept).

        Returns
        -------
        GramProjector
            ``clone(estimator)`` with ``n_components`` = the best dimension and ``solver="gram"``.
        """

        if name not in self.results:
            raise WidemlError(f"method {name!r} is not in this cross-validation report; it has {', '.join(map(repr, self.results))}.")
        result = self.results[name]
        return clone(estimator).set_params(n_components=result.best_dim, solver=result.solver)


def cross_validate_dims(
    estimators,
    X,
    y=None,
    *,
    cv=10,
    classifier: str = "lda",
    dims=None,
    random_state: int | None = 0,
) -> CVReport:
    """Cross-validated error of LDA/QDA on every embedding dimension d <= d_max, from one pass.

    One streaming pass over X yields the centred Gram G (and, for robust LOL,
    the per-fold class medians' cross-products). Each fold's projection is
    then computed from the principal sub-block G[train, train]; every
    sample's embedding is G[:, train] B; and every d <= d_max is a prefix of
    the d_max embedding. So all folds and all dimensions of all methods cost
    **one pass over X in total**, zero beyond it.

    Parameters
    ----------
    estimators : projector or dict of str -> projector
        LOL / PCA / RRLDA instances; each one's ``n_components`` is its d_max.
    X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), optional (taken from the store)
    cv : int or cross-validation splitter, default 10
        An int means stratified, shuffled k-fold with ``random_state``.
    classifier : {"lda", "qda"}
    dims : sequence of int, optional
        Dimensions to evaluate (default 1..d_max).
    random_state : int or None

    Returns
    -------
    CVReport
    """
    if isinstance(estimators, GramProjector):
        estimators = {type(estimators).__name__.lower(): estimators}
    if not isinstance(estimators, dict) or not estimators:
        raise WidemlError("no methods to cross-validate; give a LOL, PCA or RRLDA instance or a dict of them (name -> estimator).")
    check_parameters("cross_validate_dims", {"cv": cv, "classifier": classifier, "dims": dims, "random_state": random_state},
                     CV_DIMS_CONSTRAINTS)
    for name, est in estimators.items():
        if not isinstance(est, GramProjector):
            raise WidemlError(f"method {name!r} is a {type(est).__name__}, not a Gram-based projector (LOL, PCA, RRLDA); "
                              "cross-validate it by refitting per fold (`wideml cv` does so for lfl).")
        est._validate_parameters()
        if est.solver == "randomized":
            raise WidemlError(f"method {name!r} asks for solver='randomized', but cross-validation scores the exact Gram solution of "
                              "every fold, so the refitted model would not be the one scored; use solver='gram' or 'auto'.")
    data = fit_input(X, y)
    n, K = data.n_samples, data.n_classes
    min_count = int(np.bincount(data.codes).min())
    if isinstance(cv, numbers.Integral):
        if cv > min_count:
            raise WidemlError(
                f"cv={cv} folds need at least {cv} samples in every class, but the smallest class has {min_count}; lower cv."
            )
        cv = StratifiedKFold(int(cv), shuffle=True, random_state=random_state)
    cv = check_cv(cv, data.y, classifier=True)
    folds = list(cv.split(np.zeros((n, 1)), data.codes))
    _check_dimensions(estimators, data, folds, dims, classifier)
    robust = any(est._uses_medians() for est in estimators.values())
    precisions = {getattr(est, "precision", "auto") for est in estimators.values()}
    precision = "float64" if "float64" in precisions else ("float32" if precisions == {"float32"} else "auto")
    passes = FitPasses.for_run("cross-validation", "cross_validate_dims", _cv_parameters(estimators, folds), data, 1)
    stats = passes.run(GramPass(data.X, data.codes, K, median_subsets=[tr for tr, _ in folds] if robust else [], precision=precision,
                                kind="cv-gram"),
                       f"one pass for {len(folds)} folds x {len(estimators)} method(s)")
    n_passes = passes.record()
    with algebra_threads(n):
        results = _fold_results(estimators, stats, data, folds, dims, classifier, robust)
    chance = 1.0 - np.bincount(data.codes).max() / n
    return CVReport(results=results, n_folds=len(folds), classifier=classifier, n_passes=n_passes, chance_error=float(chance))


def _cv_parameters(estimators: dict, folds: list) -> dict:
    """What a resumed ``cross_validate_dims`` must share with the interrupted one: its methods and its folds."""
    methods = {name: dict(est.get_params(deep=False), estimator=type(est).__name__) for name, est in estimators.items()}
    for params in methods.values():
        params.pop("workdir", None)
    return {"methods": methods, "folds": _resume.digest(*[np.asarray(te) for _, te in folds])}


def _positive_ints(value) -> bool:
    items = list(value)
    return bool(items) and all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1 for d in items)


#: Constraint table of :func:`cross_validate_dims`'s own arguments.
CV_DIMS_CONSTRAINTS = {
    "cv": CV_FOLDS,
    "classifier": [Options(*CLASSIFIERS)],
    "dims": [Satisfies(_positive_ints, "a non-empty list of positive integers"), NONE],
    "random_state": [SEED, NONE],
}


def _d_max(est, data) -> int:
    return est.n_components if est.n_components is not None else est._default_components(data)


def _check_dimensions(estimators, data, folds, dims, classifier: str = "lda") -> None:
    """Before the pass: each method's d_max fits the smallest training fold (and, for QDA, its smallest class),
    and ``dims`` leaves something to evaluate."""
    n_train = min(len(train) for train, _ in folds)
    if classifier == "qda":
        _check_qda_folds(estimators, data, folds, dims)
    for name, est in estimators.items():
        d_max = _d_max(est, data)
        bound = est._component_bound(n_train, data.n_classes, data.n_features)
        if d_max > bound:
            raise WidemlError(
                f"method {name!r} asks for {d_max} dimensions, but a training fold of {n_train} samples allows at most {bound} "
                f"for {est._method_name()}; lower n_components (--max-dim) or use fewer folds."
            )
        if dims is not None and not any(1 <= int(d) <= d_max for d in dims):
            raise WidemlError(f"dims={list(dims)} has no dimension between 1 and method {name!r}'s d_max = {d_max}; give dims in that range.")


def _check_qda_folds(estimators, data, folds, dims) -> None:
    """QDA fits a d x d covariance per class on each training fold: the smallest class of any fold needs d + 1 samples."""
    smallest, label = None, None
    for train, _ in folds:
        counts = np.bincount(np.asarray(data.codes)[np.asarray(train)], minlength=data.n_classes)
        i = int(np.argmin(counts))
        if smallest is None or counts[i] < smallest:
            smallest, label = int(counts[i]), data.classes[i]
    for name, est in estimators.items():
        d_top = _d_max(est, data) if dims is None else max(int(d) for d in dims)
        if d_top > smallest - 1:
            label = label.item() if hasattr(label, "item") else label
            raise WidemlError(
                f"method {name!r} is scored up to d = {d_top} with QDA, but class {label!r} has only {smallest} samples in a "
                f"training fold, allowing at most d = {max(smallest - 1, 0)}; lower --max-dim (n_components or dims), use "
                "fewer folds, or use --classifier lda."
            )


def _fold_results(estimators, stats, data, folds, dims, classifier, robust) -> dict:
    """Per method: the error of every fold and dimension, from the Gram's sub-blocks (no pass over X)."""
    K = data.n_classes
    results = {}
    for name, est in estimators.items():
        d_max = _d_max(est, data)
        grid = sorted({int(d) for d in (dims if dims is not None else range(1, d_max + 1)) if 1 <= int(d) <= d_max})
        fold_errors = np.zeros((len(folds), len(grid)))
        for f, (train, test) in enumerate(folds):
            tr_codes = data.codes[train]
            if len(np.unique(tr_codes)) < K:
                raise WidemlError(f"fold {f} has no training sample of some class; use stratified folds or fewer folds.")
            P = stats.medians[f].P if (robust and est._uses_medians()) else None
            Q = stats.medians[f].Q if (robust and est._uses_medians()) else None
            proj = est._projection(stats.G[np.ix_(train, train)], tr_codes, K, P[train] if P is not None else None, Q, data.n_features, d_max)
            E = proj.embed(stats.G[:, train], P)
            for j, d in enumerate(grid):
                clf = make_classifier(classifier)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf.fit(E[train, :d], tr_codes)
                    fold_errors[f, j] = float(np.mean(clf.predict(E[test, :d]) != data.codes[test]))
        mean = fold_errors.mean(axis=0)
        best = int(np.flatnonzero(mean <= mean.min() + 1e-12)[0])
        results[name] = DimensionCV(
            method=name, dims=grid, errors=mean.tolist(), stds=fold_errors.std(axis=0).tolist(),
            fold_errors=fold_errors.tolist(), best_dim=grid[best], best_error=float(mean[best]),
        )
    return results


def cross_validate_refit(name: str, make_estimator, store, folds: int, random_state: int, index: int = 0) -> np.ndarray:
    """Misclassification rate per fold of a method refitted on each stratified training fold (e.g. LFL).

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

    Returns
    -------
    ndarray of shape (folds,)

    Notes
    -----
    Each fold makes the method's fit passes over the training rows of X plus
    one prediction pass over the test rows. Inside a resumable run
    (:func:`wideml.runtime.checkpoint.resumable`, which ``wideml cv`` opens)
    each fold's error is saved when the fold is done, so a rerun after an
    interrupt redoes only the folds not finished.
    """
    y = store.y
    split = list(StratifiedKFold(folds, shuffle=True, random_state=random_state).split(np.zeros((store.n_samples, 1)), y))
    params = {"method": name, "estimator": repr(make_estimator(len(split[0][0]))), "folds": folds, "random_state": random_state}
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
